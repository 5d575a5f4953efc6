/* Format drivers and the registry that chooses one by content. Tools never switch on formats. */
#ifndef FMT_REGISTRY_H
#define FMT_REGISTRY_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include "fmt/model.h"
#include "fmt/io.h"
#include <jansson.h>

/* Options shared by the writers; a driver ignores what it cannot use. */
struct fmt_hmac_key;

typedef struct fmt_write_opts {
	unsigned sink_flags;          /* FMT_SINK_FORCE */
	uint32_t alignment;           /* GGUF: 0 = default 32 or general.alignment */
	int threads;
	const struct fmt_hmac_key *sign_key; /* Apsi: sign with this key, or NULL */
} fmt_write_opts;

/* What verification checks beyond structure. */
typedef struct fmt_verify_opts {
	const struct fmt_hmac_key *key; /* check the signature with this key (NULL: not asked) */
	int threads;                  /* digests of shards in parallel */
} fmt_verify_opts;

#define FMT_PROBE_BYTES 4096

typedef struct fmt_driver {
	const char *name;             /* "safetensors", "gguf", ... as shown to users */
	const char *extension;        /* ".safetensors": the output extension it answers to */
	/* Confidence 0..100 that head (the first bytes, up to FMT_PROBE_BYTES) is this format. */
	int (*probe)(const uint8_t *head, size_t n, uint64_t file_size);
	/* Parse and validate the structure; build the model without touching tensor data. The
	 * source is already added to m as sources[0]. */
	fmt_kind (*open)(fmt_model *m, fmt_err *e);
	/* Every integrity layer beyond what open checks (digests, signatures); reads data.
	 * NULL when open checks everything. A key given for a format without signatures is
	 * refused by fmt_model_verify, not here. */
	fmt_kind (*verify)(fmt_model *m, const fmt_verify_opts *o, fmt_err *e);
	/* 1 if the format carries signatures (a key makes sense for it). */
	int has_signatures;
	/* Write m to the sink. NULL for read-only formats. */
	fmt_kind (*write)(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);
	/* Write m as a shard set named after prefix (the output path without its extension), each
	 * shard holding at most max_bytes of tensor data (a larger tensor gets a shard of its own).
	 * *paths lists what was written (malloc'd). NULL when the format has no shard sets. */
	fmt_kind (*write_sharded)(const fmt_model *m, const char *prefix, uint64_t max_bytes,
				  const fmt_write_opts *o, char ***paths, size_t *n_paths, fmt_err *e);
	/* Outputs with more tensor data than this are sharded unless the user says otherwise
	 * (Hugging Face's 5 GB for safetensors, Apsi's 4 GB); 0 = only when asked. */
	uint64_t default_shard_bytes;
	void (*close)(fmt_model *m);  /* free format_state; may be NULL */
	/* Format-specific facts for fmt-inspect (digest, signature, shards...), or NULL. */
	json_t *(*describe)(const fmt_model *m);
	/* The format's own text summary, which fmt-inspect shows instead of its generic report
	 * (no option narrowing the report); NULL for the generic one. */
	void (*text_summary)(const fmt_model *m, FILE *out);
	/* The tool that runs the file's embedded tests (fmt-verify --run-tests), or NULL. */
	const char *test_runner;
} fmt_driver;

/* All drivers, NULL-terminated. */
const fmt_driver *const *fmt_drivers(void);
const fmt_driver *fmt_driver_by_name(const char *name);
/* "safetensors, safetensors-index, gguf, ...": every driver's name in registry order. */
void fmt_driver_names(char *buf, size_t n);
const fmt_driver *fmt_driver_by_extension(const char *path);

/* Open path (or "-"): probe the first bytes, choose a driver (or use forced when not NULL),
 * open. On failure m is freed and e says why; an unrecognised file is InvalidFormat. */
fmt_kind fmt_model_open(fmt_model *m, const char *path, const fmt_driver *forced, fmt_err *e);

/* The same for bytes in memory (a copy is taken), named name in messages. */
fmt_kind fmt_model_open_memory(fmt_model *m, const char *name, const void *data, size_t n,
			       const fmt_driver *forced, fmt_err *e);

/* The driver's verify (digests, signatures). A key for a format without signatures is
 * SignatureInvalid: the user asked for a signature that cannot be there. o may be NULL. */
fmt_kind fmt_model_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e);

#endif
