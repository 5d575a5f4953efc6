/* The chunk callback of the fuzz targets that read every tensor with fmt_tensor_each_chunk: it
 * touches the first and last byte of each chunk (into the volatile byte ctx points to), so that
 * reading them cannot be optimized away and ASan sees both ends. */
#ifndef FUZZ_TOUCH_CHUNK_H
#define FUZZ_TOUCH_CHUNK_H
#include <stdint.h>
#include "fmt/err.h"

static fmt_kind touch_chunk(void *ctx, const uint8_t *bytes, size_t n, fmt_err *e)
{
	(void)e;
	if (n)
		*(volatile uint8_t *)ctx ^= bytes[0] ^ bytes[n - 1];
	return FMT_OK;
}

#endif
