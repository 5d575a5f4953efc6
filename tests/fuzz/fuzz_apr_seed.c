/* libFuzzer target: the APR seed-layout reader (specs/apr.md Part A). The footer's total size
 * and XXH3-64 are made right before opening, so that mutations reach the index, the metadata
 * and the LZ4/zstd frames instead of stopping at the checksum; then every check runs and the
 * first small tensors are read (decompressed). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/xxh3.h"
#include "fmt/checked.h"
#include "fmt/registry.h"

extern const fmt_driver fmt_driver_apr;

#define MAX_READ (1u << 20)

static void read_some(const fmt_model *m)
{
	for (size_t i = 0; i < m->n_tensors && i < 4; i++) {
		const fmt_tensor *t = &m->tensors[i];
		const uint8_t *bytes;
		uint8_t *to_free = NULL;
		fmt_err e;
		fmt_err_clear(&e);
		if (t->nbytes > MAX_READ)
			continue;
		if (fmt_tensor_load(m, t, &bytes, &to_free, &e) == FMT_OK && t->nbytes && !t->reader)
			(void)bytes[t->nbytes - 1];
		free(to_free);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (size >= 48) {
		fmt_wr_u64(copy + size - 8, size);
		fmt_wr_u64(copy + size - 16, XXH3_64bits(copy, size - 16));
	}
	if (fmt_model_open_memory(&m, "fuzz.apr", copy, size, &fmt_driver_apr, &e) == FMT_OK) {
		fmt_model_verify(&m, NULL, &e);
		read_some(&m);
		fmt_model_free(&m);
	}
	free(copy);
	return 0;
}
