/* The template of the per-driver fuzz targets: the GNUmakefile builds fuzz_driver_NAME from this
 * file for every driver line of libcommon/formats/registry.c, with -DFUZZ_DRIVER=fmt_driver_NAME.
 * The input is opened forced to the driver and probed; what opens is verified and every tensor
 * read; a driver that writes must write it, and what it wrote must open again with the same
 * tensors. An internal error (kind 70) anywhere is a finding. Set drivers look for the files an
 * index names in a directory that does not exist, so runs never depend on the current one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/minisign.h"
#include "fmt/registry.h"

#ifndef FUZZ_DRIVER
#error "build with -DFUZZ_DRIVER=fmt_driver_NAME"
#endif

extern const fmt_driver FUZZ_DRIVER;

#define NAME "/nonexistent-fmtkit-fuzz/input"

static void no_internal(fmt_kind k)
{
	if (k == FMT_INTERNAL)
		abort();
}

static fmt_kind touch_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	(void)e;
	if (n)
		*(volatile uint8_t *)ctx ^= bytes[0] ^ bytes[n - 1];
	return FMT_OK;
}

/* Every tensor's bytes in bounded chunks, as the tools stream them: a tensor may declare far more
 * decoded bytes than the input holds (a compressed frame), which must fail, not be allocated. */
static void read_all(const fmt_model *m)
{
	fmt_err e;
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		no_internal(fmt_tensor_each_chunk(m, &m->tensors[i], touch_chunk, (void *)&sink, &e));
}

/* Write m with the driver into a file in /dev/shm (or /tmp) and open it again. */
static void write_and_reopen(const fmt_driver *d, const fmt_model *m)
{
	static char path[128];
	fmt_sink k;
	fmt_err e;
	fmt_model back;
	if (!path[0])
		snprintf(path, sizeof path, "%s/fmtkit-fuzz-%ld%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
			 (long)getpid(), d->extension ? d->extension : "");
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1 };
	if (fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) != FMT_OK)
		return;
	fmt_kind r = d->write(m, &k, &o, &e);
	no_internal(r);
	if (r != FMT_OK) {
		fmt_sink_abort(&k);
		return;
	}
	if (fmt_sink_commit(&k, &e) != FMT_OK)
		return;
	if (fmt_model_open(&back, path, d, &e) != FMT_OK || back.n_tensors != m->n_tensors)
		abort(); /* the driver wrote what it cannot read */
	for (size_t i = 0; i < m->n_tensors; i++)
		if (!fmt_model_find_tensor(&back, m->tensors[i].name))
			abort();
	fmt_model_free(&back);
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const fmt_driver *d = &FUZZ_DRIVER;
	for (int forced = 1; forced >= 0; forced--) {
		fmt_model m;
		fmt_err e;
		fmt_kind k = fmt_model_open_memory(&m, NAME, data, size, forced ? d : NULL, &e);
		no_internal(k);
		if (k != FMT_OK)
			continue;
		no_internal(fmt_model_verify(&m, NULL, &e));
		/* with a trusted Ed25519 key: the embedded signature paths (.apsim, APR v1) */
		static const fmt_ms_public trusted = { .keynum = { 1, 2, 3, 4, 5, 6, 7, 8 } };
		fmt_verify_opts keyed = { .threads = 1, .keys = { .trusted = &trusted, .n_trusted = 1 } };
		no_internal(fmt_model_verify(&m, &keyed, &e));
		read_all(&m);
		if (forced && d->write)
			write_and_reopen(d, &m);
		fmt_model_free(&m);
	}
	return 0;
}
