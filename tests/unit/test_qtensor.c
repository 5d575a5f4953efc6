/* Compressed tensors (specs/apsim.md §4): OCP minifloats, the quantizer and dequantizer, the
 * packings, and the lossless GGUF Q8_0/Q4_0 round trips on the golden inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/half.h"
#include "fmt/qtensor.h"
#include "fmt/quant.h"
#include "helpers.h"
#include "unit.h"

static uint8_t *qt_read_all(const fmt_model *m, const fmt_tensor *t, fmt_kind *k)
{
	fmt_err e = { 0 };
	uint8_t *buf = malloc(t->nbytes ? t->nbytes : 1);
	*k = fmt_tensor_read(m, t, 0, buf, (size_t)t->nbytes, &e);
	if (*k != FMT_OK && getenv("QT_DEBUG"))
		fprintf(stderr, "read %s: %s\n", t->name, e.msg);
	return buf;
}

/* ---- minifloats ---- */

TEST(minifloat_e2m1_values)
{
	static const float v[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };
	for (unsigned c = 0; c < 8; c++) {
		CHECK(fmt_minifloat_decode(FMT_Q_FP4, c) == v[c]);
		CHECK(fmt_minifloat_decode(FMT_Q_FP4, c | 8) == -v[c]);
		CHECK(fmt_minifloat_encode(FMT_Q_FP4, v[c]) == c);
	}
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, 2.5f) == 4);   /* tie 2|3 -> even mantissa (2) */
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, 3.5f) == 6);   /* tie 3|4 -> 4 */
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, 5.0f) == 6);   /* tie 4|6 -> 4 (mantissa 0) */
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, 0.25f) == 0);  /* tie 0|0.5 -> 0 */
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, 0.75f) == 2);  /* tie 0.5|1 -> 1 */
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, 100.0f) == 7);
	CHECK(fmt_minifloat_encode(FMT_Q_FP4, -100.0f) == 15);
}

TEST(minifloat_e4m3_matches_decoder_and_round_trips)
{
	for (unsigned c = 0; c < 256; c++) {
		uint8_t b = (uint8_t)c;
		float ref;
		fmt_err e = { 0 };
		CHECK(fmt_decode_f32(FMT_DT_F8_E4M3, &b, 1, &ref, &e) == FMT_OK);
		float v = fmt_minifloat_decode(FMT_Q_FP8, c);
		if ((c & 0x7F) == 0x7F) {
			CHECK(isnan(v) && isnan(ref));
			continue;
		}
		CHECK(v == ref && signbit(v) == signbit(ref));
		CHECK(fmt_minifloat_encode(FMT_Q_FP8, v) == c);
	}
	CHECK(fmt_minifloat_decode(FMT_Q_FP8, 0x7E) == 448.0f);
	CHECK(fmt_minifloat_decode(FMT_Q_FP8, 0x01) == ldexpf(1, -9));
	CHECK(fmt_minifloat_encode(FMT_Q_FP8, 1000.0f) == 0x7E);
	CHECK(fmt_minifloat_encode(FMT_Q_FP8, -464.0f) == 0xFE);   /* tie 448|480: saturates */
	/* Midpoints between neighbours round to the even code. */
	for (unsigned c = 0; c < 0x7E; c++) {
		float a = fmt_minifloat_decode(FMT_Q_FP8, c), b = fmt_minifloat_decode(FMT_Q_FP8, c + 1);
		unsigned even = c % 2 == 0 ? c : c + 1;
		CHECK(fmt_minifloat_encode(FMT_Q_FP8, (a + b) / 2) == even);
	}
}

TEST(minifloat_e3m2_values)
{
	CHECK(fmt_minifloat_decode(FMT_Q_FP6, 0x1F) == 28.0f);
	CHECK(fmt_minifloat_decode(FMT_Q_FP6, 0x01) == 0.0625f);
	CHECK(fmt_minifloat_decode(FMT_Q_FP6, 0x04) == 0.25f);
	CHECK(fmt_minifloat_decode(FMT_Q_FP6, 0x3F) == -28.0f);
	for (unsigned c = 0; c < 64; c++)
		CHECK(fmt_minifloat_encode(FMT_Q_FP6, fmt_minifloat_decode(FMT_Q_FP6, c)) == c);
	for (unsigned c = 0; c < 0x1F; c++) {
		float a = fmt_minifloat_decode(FMT_Q_FP6, c), b = fmt_minifloat_decode(FMT_Q_FP6, c + 1);
		CHECK(fmt_minifloat_encode(FMT_Q_FP6, (a + b) / 2) == (c % 2 == 0 ? c : c + 1));
	}
	CHECK(fmt_minifloat_encode(FMT_Q_FP6, 1e9f) == 0x1F);
}

/* ---- quantizer ---- */

TEST(qtensor_int8_worked_example)
{
	/* The §8 codes come from the logical values {2, -1, 0, 0.25} per row. */
	static const float x[4] = { 2.0f, -1.0f, 0.0f, 0.25f };
	static const uint64_t s22[2] = { 2, 2 };
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&out);
	unit_add_tensor(&in, "layers.0.q", FMT_DT_F32, 2, s22, x, 16);
	fmt_qtensor q;
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_INT8, &q, &e) == FMT_OK);
	CHECK(q.axis == 0 && q.scale_shape[0] == 2 && q.scale_shape[1] == 1);
	CHECK(fmt_model_add_quantized(&out, &in, &in.tensors[0], &q, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(out.n_tensors, 2);
	CHECK_EQ_U64(out.n_qtensors, 1);
	fmt_kind k;
	uint8_t *codes = qt_read_all(&out, &out.tensors[0], &k);
	CHECK(k == FMT_OK);
	static const uint8_t want_codes[4] = { 0x7f, 0xc0, 0x00, 0x7f };
	CHECK_MEM(codes, want_codes, 4);
	uint8_t *sc = qt_read_all(&out, &out.tensors[1], &k);
	static const uint8_t want_sc[8] = { 0x04, 0x02, 0x81, 0x3c, 0x04, 0x02, 0x01, 0x3b };
	CHECK(k == FMT_OK);
	CHECK_MEM(sc, want_sc, 8);
	CHECK_STR(out.tensors[1].name, "layers.0.q__qscale");
	free(codes);
	free(sc);
	fmt_model_free(&out);
	fmt_model_free(&in);
}

static float lcg_float(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return ((float)(*s >> 8) / 16777216.0f - 0.5f) * 8.0f;
}

/* Quantize, read in odd chunk sizes with 1 and 4 threads (same bytes), dequantize, bound the
 * error by half a step of the format at the block's scale. */
static void round_trip(fmt_qformat f, int nd, const uint64_t *shape, double rel_tol)
{
	uint64_t n = 1;
	for (int d = 0; d < nd; d++)
		n *= shape[d];
	float *x = malloc(n * sizeof *x);
	uint32_t seed = 12345u + (uint32_t)f;
	for (uint64_t i = 0; i < n; i++)
		x[i] = lcg_float(&seed);
	if (n > 40)
		for (uint64_t i = 0; i < 32; i++)
			x[i] = 0.0f; /* a zero block */
	fmt_model in, a, b, dq;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&a);
	fmt_model_init(&b);
	fmt_model_init(&dq);
	unit_add_tensor(&in, "t", FMT_DT_F32, nd, shape, x, n * 4);
	fmt_qtensor q;
	fmt_pool *pool = NULL;
	CHECK(fmt_pool_create(&pool, 4, &e) == FMT_OK);
	CHECK(fmt_qtensor_plan(&in.tensors[0], f, &q, &e) == FMT_OK);
	CHECK(fmt_model_add_quantized(&a, &in, &in.tensors[0], &q, NULL, &e) == FMT_OK);
	CHECK(fmt_model_add_quantized(&b, &in, &in.tensors[0], &q, pool, &e) == FMT_OK);
	for (size_t t = 0; t < a.n_tensors; t++) {
		fmt_kind k;
		uint8_t *whole = qt_read_all(&a, &a.tensors[t], &k);
		CHECK(k == FMT_OK);
		uint8_t *pieces = malloc(a.tensors[t].nbytes + 1);
		uint64_t align = b.tensors[t].chunk_align ? b.tensors[t].chunk_align : 1, step = align * 7;
		for (uint64_t off = 0; off < b.tensors[t].nbytes; off += step) {
			uint64_t len = b.tensors[t].nbytes - off < step ? b.tensors[t].nbytes - off : step;
			CHECK(fmt_tensor_read(&b, &b.tensors[t], off, pieces + off, (size_t)len, &e) == FMT_OK);
		}
		CHECK_MEM(whole, pieces, (size_t)a.tensors[t].nbytes);
		free(whole);
		free(pieces);
	}
	CHECK(fmt_model_add_dequantized(&dq, &a, &q, pool, &e) == FMT_OK);
	fmt_kind k;
	float *y = (float *)qt_read_all(&dq, &dq.tensors[0], &k);
	CHECK(k == FMT_OK);
	double maxabs = 0, maxerr = 0;
	for (uint64_t i = 0; i < n; i++) {
		maxabs = fabs(x[i]) > maxabs ? fabs(x[i]) : maxabs;
		double err = fabs((double)y[i] - x[i]);
		maxerr = err > maxerr ? err : maxerr;
		if (n > 40 && i < 32)
			CHECK(y[i] == 0.0f);
	}
	if (maxerr > rel_tol * maxabs) {
		char m[128];
		snprintf(m, sizeof m, "%s: max error %g above %g", fmt_qformat_name(f), maxerr, rel_tol * maxabs);
		unit_fail(__FILE__, __LINE__, m);
	}
	free(y);
	free(x);
	fmt_pool_destroy(pool);
	fmt_model_free(&dq);
	fmt_model_free(&a);
	fmt_model_free(&b);
	fmt_model_free(&in);
}

TEST(qtensor_round_trips_every_format)
{
	static const uint64_t s2[2] = { 37, 96 }, odd[2] = { 5, 33 }, flat[1] = { 4000 };
	round_trip(FMT_Q_INT8, 2, s2, 0.5 / 127 + 1e-6);
	round_trip(FMT_Q_INT4, 2, s2, 0.5 / 7 + 1e-6);
	round_trip(FMT_Q_INT4, 2, odd, 0.5 / 7 + 1e-6);
	round_trip(FMT_Q_FP8, 2, s2, 1.0 / 16 + 1e-6);
	round_trip(FMT_Q_FP6, 2, s2, 1.0 / 8 + 1e-6);
	round_trip(FMT_Q_FP4, 2, s2, 0.25 + 1e-6);
	round_trip(FMT_Q_BF16, 2, s2, 1.0 / 256);
	round_trip(FMT_Q_FP4, 1, flat, 0.25 + 1e-6);
	round_trip(FMT_Q_FP6, 1, flat, 1.0 / 8 + 1e-6);
}

TEST(qtensor_int4_row_packing)
{
	/* Rows of 3: codes [2,2], the last byte of each row has a zero high nibble. */
	static const float x[6] = { 7, -7, 1, -1, 0, 1 };
	static const uint64_t s23[2] = { 2, 3 };
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&out);
	unit_add_tensor(&in, "p", FMT_DT_F32, 2, s23, x, 24);
	fmt_qtensor q;
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_INT4, &q, &e) == FMT_OK);
	CHECK(q.scale_shape[0] == 2 && q.scale_shape[1] == 1 && q.axis == -1);
	CHECK(fmt_model_add_quantized(&out, &in, &in.tensors[0], &q, NULL, &e) == FMT_OK);
	CHECK(out.tensors[0].shape[1] == 2 && out.tensors[0].dtype == FMT_DT_U8);
	fmt_kind k;
	uint8_t *c = qt_read_all(&out, &out.tensors[0], &k);
	/* row 0 scale 1: 7, -7 (0x9), 1 ; row 1 scale 1/7: -7, 0, 7 */
	static const uint8_t want[4] = { 0x97, 0x01, 0x09, 0x07 };
	CHECK(k == FMT_OK);
	CHECK_MEM(c, want, 4);
	free(c);
	fmt_model_free(&out);
	fmt_model_free(&in);
}

TEST(qtensor_fp6_packing)
{
	/* One block, max 28 -> scale 1: codes of 28, -28, 0.0625, 1 = 0x1F, 0x3F, 0x01, 0x0C. */
	static const float x[4] = { 28, -28, 0.0625f, 1 };
	static const uint64_t s4[1] = { 4 };
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&out);
	unit_add_tensor(&in, "p", FMT_DT_F32, 1, s4, x, 16);
	fmt_qtensor q;
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_FP6, &q, &e) == FMT_OK);
	CHECK(fmt_model_add_quantized(&out, &in, &in.tensors[0], &q, NULL, &e) == FMT_OK);
	fmt_kind k;
	uint8_t *c = qt_read_all(&out, &out.tensors[0], &k);
	uint32_t v = 0x1Fu | 0x3Fu << 6 | 0x01u << 12 | 0x0Cu << 18;
	uint8_t want[3] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16) };
	CHECK(k == FMT_OK && out.tensors[0].nbytes == 3);
	CHECK_MEM(c, want, 3);
	free(c);
	fmt_model_free(&out);
	fmt_model_free(&in);
	/* fp6 needs a multiple of 4 elements, fp4 an even count. */
	static const uint64_t s3[1] = { 3 };
	fmt_model_init(&in);
	unit_add_tensor(&in, "odd", FMT_DT_F32, 1, s3, x, 12);
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_FP6, &q, &e) == FMT_USAGE && strstr(e.msg, "'odd'"));
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_FP4, &q, &e) == FMT_USAGE);
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_INT4, &q, &e) == FMT_OK);
	fmt_model_free(&in);
}

TEST(qtensor_nan_refused)
{
	float x[64];
	for (int i = 0; i < 64; i++)
		x[i] = (float)i;
	x[40] = NAN;
	static const uint64_t s[1] = { 64 };
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&out);
	unit_add_tensor(&in, "w", FMT_DT_F32, 1, s, x, 256);
	fmt_qtensor q;
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_INT8, &q, &e) == FMT_OK);
	CHECK(fmt_model_add_quantized(&out, &in, &in.tensors[0], &q, NULL, &e) == FMT_OK);
	fmt_kind k;
	free(qt_read_all(&out, &out.tensors[0], &k));
	CHECK(k == FMT_INVALID_FORMAT);
	fmt_model_free(&out);
	fmt_model_free(&in);
}

TEST(qtensor_check_rules)
{
	fmt_qtensor q;
	fmt_err e = { 0 };
	memset(&q, 0, sizeof q);
	q.name = (char *)"w";
	q.format = FMT_Q_INT8;
	q.axis = -1;
	q.ndim = 2;
	q.shape[0] = 4;
	q.shape[1] = 64;
	q.scale_shape[0] = 4;
	q.scale_shape[1] = 3;
	fmt_tensor codes, scales;
	memset(&codes, 0, sizeof codes);
	memset(&scales, 0, sizeof scales);
	codes.dtype = FMT_DT_I8;
	codes.ndim = 2;
	codes.shape[0] = 4;
	codes.shape[1] = 64;
	scales.dtype = FMT_DT_F32;
	scales.ndim = 2;
	scales.shape[0] = 4;
	scales.shape[1] = 3;
	CHECK(fmt_qtensor_check(&q, &codes, &scales, &e) == FMT_INVALID_FORMAT && strstr(e.msg, "divide"));
	q.scale_shape[1] = scales.shape[1] = 2;
	CHECK(fmt_qtensor_check(&q, &codes, &scales, &e) == FMT_OK);
	CHECK(fmt_qtensor_check(&q, &codes, NULL, &e) == FMT_INVALID_FORMAT && strstr(e.msg, "w__qscale"));
	codes.dtype = FMT_DT_U8;
	CHECK(fmt_qtensor_check(&q, &codes, &scales, &e) == FMT_INVALID_FORMAT);
	q.format = FMT_Q_INT4;
	CHECK(fmt_qtensor_check(&q, &codes, &scales, &e) == FMT_INVALID_FORMAT && strstr(e.msg, "ceil"));
	codes.shape[1] = 32;
	CHECK(fmt_qtensor_check(&q, &codes, &scales, &e) == FMT_OK);
	fmt_dtype gt;
	CHECK(fmt_qtensor_ggml_compatible(&q, &gt) && gt == FMT_DT_Q4_0);
	q.axis = 1;
	CHECK(fmt_qtensor_check(&q, &codes, &scales, &e) == FMT_INVALID_FORMAT);
}

/* ---- GGUF ---- */

/* ggml bytes -> int8/int4 codes and scales -> ggml bytes, identical; the decoded values equal
 * ggml's dequantization. shape [rows, len / rows / block bytes * 32]. */
static void ggml_round_trip(fmt_dtype type, const uint8_t *src, size_t len, uint64_t rows)
{
	uint64_t bb = type == FMT_DT_Q8_0 ? 34 : 18, blocks = len / bb;
	const uint64_t shape[2] = { rows, blocks / rows * 32 };
	fmt_model in, mid, back, dq;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&mid);
	fmt_model_init(&back);
	fmt_model_init(&dq);
	unit_add_tensor(&in, "blk.0.w", type, 2, shape, src, len);
	CHECK(fmt_model_add_from_ggml(&mid, &in, &in.tensors[0], NULL, &e) == FMT_OK);
	CHECK_EQ_U64(mid.n_tensors, 2);
	CHECK_EQ_U64(mid.n_qtensors, 1);
	const fmt_qtensor *q = &mid.qtensors[0];
	CHECK(q->format == (type == FMT_DT_Q8_0 ? FMT_Q_INT8 : FMT_Q_INT4));
	CHECK(q->scale_shape[0] == rows && q->scale_shape[1] == blocks / rows && q->axis == -1);
	CHECK(fmt_model_add_to_ggml(&back, &mid, q, NULL, &e) == FMT_OK);
	fmt_kind k;
	uint8_t *out = qt_read_all(&back, &back.tensors[0], &k);
	CHECK(k == FMT_OK && back.tensors[0].nbytes == len && back.tensors[0].dtype == type);
	CHECK_MEM(out, src, len);
	free(out);
	/* Decoded values: decode(code) x scale == ggml's dequantization, bit for bit. */
	CHECK(fmt_model_add_dequantized(&dq, &mid, q, NULL, &e) == FMT_OK);
	float *y = (float *)qt_read_all(&dq, &dq.tensors[0], &k), *ref = malloc(blocks * 32 * sizeof *ref);
	CHECK(k == FMT_OK);
	CHECK(fmt_dequant_f32(type, src, blocks * 32, ref, &e) == FMT_OK);
	CHECK_MEM(y, ref, blocks * 32 * sizeof *ref);
	free(y);
	free(ref);
	fmt_model_free(&dq);
	fmt_model_free(&back);
	fmt_model_free(&mid);
	fmt_model_free(&in);
}

TEST(qtensor_ggml_lossless_golden)
{
	size_t n_in = 0, n8 = 0, n4 = 0;
	uint8_t *in = unit_read_golden("quant_input.f32", &n_in);
	uint8_t *g8 = unit_read_golden("quant_input.q8_0", &n8), *g4 = unit_read_golden("quant_input.q4_0", &n4);
	CHECK(in && g8 && g4 && n_in == 8192 && n8 == 2176 && n4 == 1152);
	if (in && g8 && g4 && n_in == 8192 && n8 == 2176 && n4 == 1152) {
		float x[2048];
		uint8_t q8[2176], q4[1152];
		fmt_err e = { 0 };
		memcpy(x, in, sizeof x);
		CHECK(fmt_quantize_q8_0(x, q8, 2048, &e) == FMT_OK);
		CHECK(fmt_quantize_q4_0(x, q4, 2048, &e) == FMT_OK);
		CHECK_MEM(q8, g8, sizeof q8);
		CHECK_MEM(q4, g4, sizeof q4);
		ggml_round_trip(FMT_DT_Q8_0, q8, sizeof q8, 4);
		/* Q4_0 blocks 9 and 17 of the golden input have d = -Inf in fp16 (values beyond the
		 * fp16 range): no finite scale exists, so those blocks are refused... */
		fmt_model in_m, mid;
		static const uint64_t shape[2] = { 4, 512 };
		fmt_model_init(&in_m);
		fmt_model_init(&mid);
		unit_add_tensor(&in_m, "blk.0.w", FMT_DT_Q4_0, 2, shape, q4, sizeof q4);
		CHECK(fmt_model_add_from_ggml(&mid, &in_m, &in_m.tensors[0], NULL, &e) == FMT_OK);
		uint8_t sc[64 * 4];
		CHECK(fmt_tensor_read(&mid, &mid.tensors[1], 0, sc, sizeof sc, &e) == FMT_INVALID_FORMAT);
		CHECK(strstr(e.msg, "'blk.0.w'") && strstr(e.msg, "block 9"));
		fmt_model_free(&mid);
		fmt_model_free(&in_m);
		/* ...and the other 62 round-trip exactly. */
		uint8_t finite[62 * 18];
		size_t nf = 0;
		for (int b = 0; b < 64; b++)
			if ((fmt_rd_u16(q4 + 18 * b) & 0x7C00) != 0x7C00)
				memcpy(finite + 18 * nf++, q4 + 18 * b, 18);
		CHECK_EQ_U64(nf, 62);
		ggml_round_trip(FMT_DT_Q4_0, finite, sizeof finite, 2);
		/* Q4_0 nibble 0 (code -8) survives. */
		finite[2] = 0x00;
		ggml_round_trip(FMT_DT_Q4_0, finite, sizeof finite, 2);
	}
	free(in);
	free(g8);
	free(g4);
}

TEST(qtensor_to_ggml_needs_fp16_scales)
{
	static int8_t codes[64];
	static float scales[2] = { 0.5f, 0.1f }; /* 0.1 is not an fp16 value */
	static const uint64_t cs[1] = { 64 }, ss[1] = { 2 };
	fmt_model in, out;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&out);
	unit_add_tensor(&in, "w", FMT_DT_I8, 1, cs, codes, 64);
	unit_add_tensor(&in, "w__qscale", FMT_DT_F32, 1, ss, scales, 8);
	fmt_qtensor q;
	memset(&q, 0, sizeof q);
	q.name = (char *)"w";
	q.format = FMT_Q_INT8;
	q.axis = -1;
	q.ndim = 1;
	q.shape[0] = 64;
	q.scale_shape[0] = 2;
	CHECK(fmt_model_add_to_ggml(&out, &in, &q, NULL, &e) == FMT_OK);
	fmt_kind k;
	free(qt_read_all(&out, &out.tensors[0], &k));
	CHECK(k == FMT_INVALID_FORMAT);
	fmt_model_free(&out);
	fmt_model_free(&in);
}
