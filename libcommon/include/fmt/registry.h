/* Format drivers and the registry that chooses one by content. Tools never switch on formats. */
#ifndef FMT_REGISTRY_H
#define FMT_REGISTRY_H

#include <stdint.h>
#include <stddef.h>
#include "fmt/model.h"
#include "fmt/io.h"

/* Options shared by the writers; a driver ignores what it cannot use. */
typedef struct fmt_write_opts {
	unsigned sink_flags;          /* FMT_SINK_FORCE */
	uint32_t alignment;           /* GGUF: 0 = default 32 or general.alignment */
	int threads;
} fmt_write_opts;

#define FMT_PROBE_BYTES 4096

typedef struct fmt_driver {
	const char *name;             /* "safetensors", "gguf", ... as shown to users */
	const char *extension;        /* ".safetensors": the output extension it answers to */
	/* Confidence 0..100 that head (the first bytes, up to FMT_PROBE_BYTES) is this format. */
	int (*probe)(const uint8_t *head, size_t n, uint64_t file_size);
	/* Parse and validate the structure; build the model without touching tensor data. The
	 * source is already added to m as sources[0]. */
	fmt_kind (*open)(fmt_model *m, fmt_err *e);
	/* Every integrity layer beyond what open checks (digests, shard sets); may read data.
	 * NULL when open checks everything. */
	fmt_kind (*verify)(fmt_model *m, fmt_err *e);
	/* Write m to the sink. NULL for read-only formats. */
	fmt_kind (*write)(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);
	void (*close)(fmt_model *m);  /* free format_state; may be NULL */
} fmt_driver;

/* All drivers, NULL-terminated. */
const fmt_driver *const *fmt_drivers(void);
const fmt_driver *fmt_driver_by_name(const char *name);
const fmt_driver *fmt_driver_by_extension(const char *path);

/* Open path (or "-"): probe the first bytes, choose a driver (or use forced when not NULL),
 * open. On failure m is freed and e says why; an unrecognised file is InvalidFormat. */
fmt_kind fmt_model_open(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e);

/* open + driver verify. */
fmt_kind fmt_model_verify(fmt_model *m, fmt_err *e);

#endif
