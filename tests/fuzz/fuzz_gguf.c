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
	fmt_source s;
	fmt_err e;
	fmt_model_init(&m);
	memset(&s, 0, sizeof s);
	s.fd = -1;
	s.size = size;
	s.path = strdup("fuzz");
	s.buf = malloc(size ? size : 1);
	if (!s.path || !s.buf) {
		free(s.path);
		free(s.buf);
		return 0;
	}
	if (size)
		memcpy(s.buf, data, size);
	if (fmt_model_add_source(&m, &s, NULL, &e) != FMT_OK) {
		fmt_source_close(&s);
		return 0;
	}
	m.driver = &fmt_driver_gguf;
	if (fmt_driver_gguf.open(&m, &e) == FMT_OK)
		decode_some(&m);
	fmt_model_free(&m);
	return 0;
}
