/* libFuzzer target: the GGUF reader on an in-memory source, then decoding of the first tensors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/gguf.h"
#include "fmt/quant.h"

#define MAX_DECODE_ELEMS 65536u

static void decode_some(const fmt_model *m)
{
	static float out[MAX_DECODE_ELEMS];
	for (size_t i = 0; i < m->n_tensors && i < 4; i++) {
		const fmt_tensor *t = &m->tensors[i];
		const uint8_t *bytes;
		uint8_t *to_free;
		fmt_err e;
		fmt_err_clear(&e);
		if (t->nelems > MAX_DECODE_ELEMS || !fmt_dequant_supported(t->dtype))
			continue;
		if (fmt_tensor_load(m, t, &bytes, &to_free, &e) != FMT_OK)
			abort(); /* open promised the bytes are in the file */
		if (fmt_dequant_f32(t->dtype, bytes, t->nelems, out, &e) != FMT_OK)
			abort();
		free(to_free);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_model_open_memory(&m, "fuzz", data, size, &fmt_driver_gguf, &e) == FMT_OK)
		decode_some(&m);
	fmt_model_free(&m);
	return 0;
}
