/* libFuzzer target: the importance-matrix reader (--imatrix: GGUF imatrix and legacy .dat). */
#include <stdint.h>
#include <stdlib.h>
#include "fmt/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_gguf_imatrix im;
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_gguf_imatrix_parse(&im, "fuzz", data, size, &e) == FMT_OK) {
		for (size_t i = 0; i < im.n; i++)
			if (!im.entries[i].name || (im.entries[i].n && !im.entries[i].values))
				abort();
		fmt_gguf_imatrix_free(&im);
	}
	return 0;
}
