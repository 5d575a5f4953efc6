/* Retyped tensors: same bytes as a direct conversion, for any chunking and thread count. */
#include <math.h>
#include <stdlib.h>
#include "fmt/convert.h"
#include "fmt/quant.h"
#include "fmt/retype.h"
#include "unit.h"

#define ROWS 300
#define COLS 1024  /* 307200 elements: several tasks and a partial last one */

static float *make_values(void)
{
	float *v = malloc(sizeof(float) * ROWS * COLS);
	uint32_t s = 12345;
	for (size_t i = 0; i < (size_t)ROWS * COLS; i++) {
		s = s * 1664525u + 1013904223u;
		v[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 8.0f;
	}
	return v;
}

static void make_model(fmt_model *m, float *values)
{
	fmt_err e = { 0 };
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	fmt_model_init(m);
	t.name = "w";
	t.dtype = FMT_DT_F32;
	t.ndim = 2;
	t.shape[0] = ROWS;
	t.shape[1] = COLS;
	t.nelems = (uint64_t)ROWS * COLS;
	t.nbytes = t.nelems * 4;
	t.source = -1;
	t.data = (const uint8_t *)values;
	fmt_model_add_tensor(m, &t, NULL, &e);
}

static void check_retype(fmt_dtype to, size_t out_bytes, uint8_t *expected)
{
	float *values = make_values();
	fmt_model in, out;
	fmt_err e = { 0 };
	make_model(&in, values);
	for (int threads = 1; threads <= 3; threads++) {
		fmt_pool *pool;
		CHECK(fmt_pool_create(&pool, threads, &e) == FMT_OK);
		fmt_model_init(&out);
		CHECK(fmt_model_add_retyped(&out, &in, &in.tensors[0], "w", to, pool, &e) == FMT_OK);
		CHECK_EQ_U64(out.tensors[0].nbytes, out_bytes);
		uint8_t *got = malloc(out_bytes);
		/* read in uneven pieces that respect chunk_align */
		uint64_t align = out.tensors[0].chunk_align, off = 0;
		while (off < out_bytes) {
			uint64_t n = align * (uint64_t)(1 + (off / align) % 7);
			if (off + n > out_bytes)
				n = out_bytes - off;
			CHECK(fmt_tensor_read(&out, &out.tensors[0], off, got + off, (size_t)n, &e) == FMT_OK);
			off += n;
		}
		CHECK(memcmp(got, expected, out_bytes) == 0);
		free(got);
		fmt_model_free(&out);
		fmt_pool_destroy(pool);
	}
	in.tensors[0].data = NULL;
	fmt_model_free(&in);
	free(values);
}

TEST(retype_f32_to_f16_matches_direct)
{
	float *v = make_values();
	size_t n = (size_t)ROWS * COLS;
	uint8_t *want = malloc(n * 2);
	fmt_err e = { 0 };
	CHECK(fmt_encode_from_f32(FMT_DT_F16, v, n, want, &e) == FMT_OK);
	check_retype(FMT_DT_F16, n * 2, want);
	free(want);
	free(v);
}

TEST(retype_f32_to_q4_0_matches_direct)
{
	float *v = make_values();
	size_t n = (size_t)ROWS * COLS, bytes = n / 32 * 18;
	uint8_t *want = malloc(bytes);
	fmt_err e = { 0 };
	CHECK(fmt_quantize_q4_0(v, want, n, &e) == FMT_OK);
	check_retype(FMT_DT_Q4_0, bytes, want);
	free(want);
	free(v);
}

TEST(retype_refuses_bad_rows_and_impossible_types)
{
	float v[40] = { 0 };
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	fmt_model_init(&in);
	fmt_model_init(&out);
	t.name = "odd";
	t.dtype = FMT_DT_F32;
	t.ndim = 2;
	t.shape[0] = 2;
	t.shape[1] = 20;
	t.nelems = 40;
	t.nbytes = 160;
	t.source = -1;
	t.data = (const uint8_t *)v;
	fmt_model_add_tensor(&in, &t, NULL, &e);
	CHECK(fmt_model_add_retyped(&out, &in, &in.tensors[0], "odd", FMT_DT_Q8_0, NULL, &e) == FMT_INVALID_FORMAT);
	CHECK(fmt_model_add_retyped(&out, &in, &in.tensors[0], "odd", FMT_DT_IQ2_XS, NULL, &e) == FMT_UNSUPPORTED);
	CHECK(fmt_model_add_retyped(&out, &in, &in.tensors[0], "odd", FMT_DT_BF16, NULL, &e) == FMT_OK);
	in.tensors[0].data = NULL;
	fmt_model_free(&in);
	fmt_model_free(&out);
}

TEST(retype_nan_into_quantizer_fails_with_position)
{
	float v[64];
	for (int i = 0; i < 64; i++)
		v[i] = (float)i;
	v[40] = NAN;
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	fmt_model_init(&in);
	fmt_model_init(&out);
	t.name = "n";
	t.dtype = FMT_DT_F32;
	t.ndim = 1;
	t.shape[0] = 64;
	t.nelems = 64;
	t.nbytes = 256;
	t.source = -1;
	t.data = (const uint8_t *)v;
	fmt_model_add_tensor(&in, &t, NULL, &e);
	CHECK(fmt_model_add_retyped(&out, &in, &in.tensors[0], "n", FMT_DT_Q8_0, NULL, &e) == FMT_OK);
	uint8_t buf[68];
	CHECK(fmt_tensor_read(&out, &out.tensors[0], 0, buf, sizeof buf, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "tensor 'n'") != NULL);
	in.tensors[0].data = NULL;
	fmt_model_free(&in);
	fmt_model_free(&out);
}
