/* libFuzzer target: the APR aprender-layout reader (specs/apr.md Part B), APR v1 and the
 * aprender-tsp recogniser. The header CRC and the footer CRC32 of an `APR\0` input are made
 * right before opening (and a v1 input's trailer), so that mutations reach the metadata and the
 * index; then every check runs and the first small tensors are read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "fmt/checked.h"
#include "fmt/registry.h"

extern const fmt_driver fmt_driver_apr;

static uint32_t crc(const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(0, p, (uInt)n);
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
	if (size >= 68 && memcmp(copy, "APR\0", 4) == 0 && copy[4] != 1) {
		uint32_t c = crc(copy, 40);
		c = (uint32_t)crc32(c, copy + 44, 20);
		fmt_wr_u32(copy + 40, c);
		fmt_wr_u32(copy + size - 4, crc(copy, size - 4));
	} else if (size >= 36 && memcmp(copy, "APRN", 4) == 0) {
		fmt_wr_u32(copy + size - 4, crc(copy, size - 4));
	}
	if (fmt_model_open_memory(&m, "fuzz.apr", copy, size, &fmt_driver_apr, &e) == FMT_OK) {
		fmt_model_verify(&m, NULL, &e);
		for (size_t i = 0; i < m.n_tensors && i < 4; i++) {
			const uint8_t *bytes;
			uint8_t *to_free = NULL;
			if (m.tensors[i].nbytes <= (1u << 20) &&
			    fmt_tensor_load(&m, &m.tensors[i], &bytes, &to_free, &e) == FMT_OK && m.tensors[i].nbytes)
				(void)bytes[m.tensors[i].nbytes - 1];
			free(to_free);
		}
		fmt_model_free(&m);
	}
	free(copy);
	return 0;
}
