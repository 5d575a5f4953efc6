/* libFuzzer target: APR read from a stream (fmt_source_open_sequential's path: `cat x.apr |
 * fmt-convert - out`, `fmt-inspect -`, `fmt-verify -`). The input is fed as a pipe would feed
 * it (fmt_source_stream_memory: short reads, only the head kept for re-reading), then used as
 * the tools use a stream:
 *   - as fmt-convert does: open, every tensor read once in fmt_model_read_order through
 *     fmt_tensor_each_chunk, then the final verify (the checksum is known at the end), also
 *     after a failed read (the converter asks whether the file is damaged);
 *   - as fmt-inspect and fmt-verify do: open, describe, verify (frames decoded, no reads).
 * Each runs with a 64-byte head (forced to the APR driver: probing reads 4096 bytes), so that
 * small inputs are read front to back, and with the real head through the probe, as the tools
 * open a pipe. The front-to-back runs see the input with its checksums made right first (the
 * aprender header CRC and footer CRC32, the seed footer's size and XXH3-64), so that mutations
 * reach the metadata, the index and the data with the checks passing too; the real-head run
 * sees it as it is. An internal error (kind 70) is a finding. The seed streams of the corpus
 * come from scripts/gen/apr-stream-seeds. With FUZZ_TRACE set, each step's
 * outcome is printed (to see which inputs get how far). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "fmt/xxh3.h"
#include <zlib.h>
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/registry.h"
#include "touch_chunk.h"

extern const fmt_driver fmt_driver_apr;

static void step(const char *what, fmt_kind k, const fmt_err *e)
{
	static int trace = -1;
	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL;
	if (trace)
		fprintf(stderr, "  %-8s %d %s\n", what, (int)k, k == FMT_OK ? "" : e->msg);
	if (k == FMT_INTERNAL)
		abort();
}

static int open_stream(fmt_model *m, const uint8_t *data, size_t size, size_t head, size_t chunk)
{
	fmt_source src;
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_source_stream_memory(&src, "-", data, size, head, chunk, &e) != FMT_OK)
		return 0;
	fmt_kind k = fmt_model_open_source(m, &src, "-", head < FMT_PROBE_BYTES ? &fmt_driver_apr : NULL, &e);
	step(k == FMT_OK && fmt_model_sequential(m) ? "open seq" : "open", k, &e);
	return k == FMT_OK;
}

/* fmt-convert - OUT */
static void convert(const uint8_t *data, size_t size, size_t head, size_t chunk)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	size_t *order = NULL;
	int moved;
	volatile uint8_t sink = 0;
	if (!open_stream(&m, data, size, head, chunk))
		return;
	fmt_kind k = fmt_model_read_order(&m, &order, &moved, &e);
	step("order", k, &e);
	for (size_t i = 0; k == FMT_OK && i < m.n_tensors; i++) {
		k = fmt_tensor_each_chunk(&m, &m.tensors[order[i]], touch_chunk, (void *)&sink, &e);
		step("read", k, &e);
	}
	free(order);
	fmt_verify_opts vo = { .threads = 1, .reads_follow = 1 };
	k = fmt_model_verify(&m, &vo, &e);
	step("verify", k, &e);
	fmt_model_free(&m);
}

/* fmt-inspect -, fmt-verify - */
static void inspect_verify(const uint8_t *data, size_t size, size_t head, size_t chunk)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	if (!open_stream(&m, data, size, head, chunk))
		return;
	json_decref(m.driver->describe ? m.driver->describe(&m) : NULL);
	fmt_verify_opts vo = { .threads = 1 };
	fmt_kind k = fmt_model_verify(&m, &vo, &e);
	step("verify", k, &e);
	fmt_model_free(&m);
}

static uint32_t crc(uint32_t c, const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(c, p, (uInt)n);
}

/* A copy of the input with the checksums its layout has made right. */
static uint8_t *with_checksums(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1);
	if (!p)
		return NULL;
	memcpy(p, data, size);
	if (size >= 68 && memcmp(p, "APR\0", 4) == 0) {
		fmt_wr_u32(p + 40, crc(crc(0, p, 40), p + 44, 20));
		fmt_wr_u32(p + size - 4, crc(0, p, size - 4));
	} else if (size >= 48 && memcmp(p, "APR\x02", 4) == 0) {
		fmt_wr_u64(p + size - 8, size);
		fmt_wr_u64(p + size - 16, XXH3_64bits(p, size - 16));
	}
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed = with_checksums(data, size);
	if (fixed) {
		convert(fixed, size, 64, 509);
		inspect_verify(fixed, size, 64, 4096);
		free(fixed);
	}
	convert(data, size, FMT_SOURCE_HEAD, 65536);
	return 0;
}
