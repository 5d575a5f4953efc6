/* Overflow of F16, BF16, Q8_0 and Q4_0 (fmt/overflow.h): the exact thresholds, checked against
 * the encoders themselves, saturation, and the retyped tensors that refuse or saturate. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/overflow.h"
#include "fmt/quant.h"
#include "fmt/retype.h"
#include "unit.h"

static float next_up(float f)
{
	return nextafterf(f, INFINITY);
}

TEST(overflow_f16_threshold_is_where_the_encoder_gives_inf)
{
	uint64_t at;
	float x[4] = { 1, 65504.0f, 65519.996f, -65504.0f };
	CHECK(!fmt_overflow_find(FMT_DT_F16, x, 4, &at));
	CHECK((fmt_f32_to_f16(65519.996f) & 0x7FFF) == 0x7BFF);
	x[2] = 65520.0f;
	CHECK((fmt_f32_to_f16(65520.0f) & 0x7FFF) == 0x7C00);
	CHECK(fmt_overflow_find(FMT_DT_F16, x, 4, &at) && at == 2);
	x[2] = 1.0f;
	x[3] = -65520.0f;
	CHECK(fmt_overflow_find(FMT_DT_F16, x, 4, &at) && at == 3);
	/* infinities and NaN in the input are not overflows */
	x[3] = INFINITY;
	x[2] = NAN;
	CHECK(!fmt_overflow_find(FMT_DT_F16, x, 4, &at));
}

TEST(overflow_bf16_threshold_is_where_rne_gives_inf)
{
	uint64_t at;
	float below = fmt_bits_f32(0x7F7F7FFFu), from = fmt_bits_f32(0x7F7F8000u);
	CHECK(fmt_f32_to_bf16(below) == 0x7F7F && fmt_f32_to_bf16(from) == 0x7F80);
	float x[3] = { 1e38f, below, -below };
	CHECK(!fmt_overflow_find(FMT_DT_BF16, x, 3, &at));
	x[1] = -from;
	CHECK(fmt_overflow_find(FMT_DT_BF16, x, 3, &at) && at == 1);
	x[1] = FLT_MAX;
	CHECK(fmt_overflow_find(FMT_DT_BF16, x, 3, &at) && at == 1);
	CHECK(!fmt_overflow_possible(FMT_DT_BF16, FMT_DT_BF16));
	CHECK(!fmt_overflow_possible(FMT_DT_F16, FMT_DT_BF16));
	CHECK(fmt_overflow_possible(FMT_DT_BF16, FMT_DT_F16));
	CHECK(fmt_overflow_possible(FMT_DT_F32, FMT_DT_Q4_0));
	CHECK(!fmt_overflow_possible(FMT_DT_F32, FMT_DT_F32));
}

/* A Q8_0/Q4_0 block overflows exactly when the quantizer writes an infinite F16 scale. */
static int scale_is_inf(fmt_dtype t, const float *x)
{
	uint8_t out[34];
	fmt_err e = { 0 };
	if (t == FMT_DT_Q8_0)
		CHECK(fmt_quantize_q8_0(x, out, 32, &e) == FMT_OK);
	else
		CHECK(fmt_quantize_q4_0(x, out, 32, &e) == FMT_OK);
	return (fmt_rd_u16(out) & 0x7FFF) == 0x7C00;
}

TEST(overflow_q8_0_q4_0_agree_with_the_quantizers)
{
	const struct { fmt_dtype t; float limit; } cases[] = {
		{ FMT_DT_Q8_0, 127.0f * 65520.0f }, { FMT_DT_Q4_0, 8.0f * 65520.0f },
	};
	for (int c = 0; c < 2; c++) {
		float x[64];
		uint64_t at;
		for (int j = 0; j < 64; j++)
			x[j] = (float)(j % 7) - 3.0f;
		/* just below the limit (a few ulps) and at it, positive and negative, in block 1 */
		for (int k = -3; k <= 3; k++) {
			float v = cases[c].limit;
			for (int s = 0; s < (k < 0 ? -k : k); s++)
				v = k < 0 ? nextafterf(v, 0) : next_up(v);
			for (int sign = 1; sign >= -1; sign -= 2) {
				x[40] = (float)sign * v;
				int want = scale_is_inf(cases[c].t, x + 32);
				CHECK(want == (k >= 0));
				CHECK(fmt_overflow_find(cases[c].t, x, 64, &at) == want);
				if (want)
					CHECK_EQ_U64(at, 40);
			}
		}
		/* the element named is the first of largest magnitude, as ggml picks it */
		x[40] = 1e7f;
		x[35] = -1e7f;
		CHECK(fmt_overflow_find(cases[c].t, x, 64, &at) && at == 35);
		x[35] = 0;
		x[40] = 1;
		CHECK(!fmt_overflow_find(cases[c].t, x, 64, &at));
	}
}

TEST(overflow_saturate_clamps_finite_values_only)
{
	float x[6] = { 70000.0f, -1e30f, 65504.0f, 3.0f, INFINITY, -65519.0f };
	CHECK_EQ_U64(fmt_overflow_saturate(FMT_DT_F16, x, 6), 3);
	CHECK(x[0] == 65504.0f && x[1] == -65504.0f && x[2] == 65504.0f && x[3] == 3.0f);
	CHECK(isinf(x[4]) && x[5] == -65504.0f);
	float y[3] = { FLT_MAX, -3.4e38f, 1e38f };
	CHECK_EQ_U64(fmt_overflow_saturate(FMT_DT_BF16, y, 3), 2);
	CHECK(fmt_f32_to_bf16(y[0]) == 0x7F7F && fmt_f32_to_bf16(y[1]) == 0xFF7F && y[2] == 1e38f);
	CHECK_EQ_U64(fmt_overflow_saturate(FMT_DT_Q8_0, y, 3), 0);
	fmt_overflow_mode m;
	CHECK(fmt_overflow_mode_from_name("Widen", &m) && m == FMT_OVERFLOW_WIDEN);
	CHECK(!fmt_overflow_mode_from_name("clip", &m));
	CHECK_STR(fmt_overflow_mode_name(FMT_OVERFLOW_SATURATE), "saturate");
}

/* A 2 x 64 F32 tensor with 1e6 at element 100, retyped to F16. */
static void one_tensor(fmt_model *m, float *v)
{
	fmt_err e = { 0 };
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	fmt_model_init(m);
	for (int i = 0; i < 128; i++)
		v[i] = (float)(i % 9) - 4.0f;
	v[100] = 1e6f;
	t.name = "w";
	t.dtype = FMT_DT_F32;
	t.ndim = 2;
	t.shape[0] = 2;
	t.shape[1] = 64;
	t.nelems = 128;
	t.nbytes = 512;
	t.source = -1;
	t.data = (const uint8_t *)v;
	fmt_model_add_tensor(m, &t, NULL, &e);
}

TEST(overflow_retyped_refuses_or_saturates)
{
	float v[128];
	uint8_t out[256];
	fmt_model in, o1, o2;
	fmt_err e = { 0 };
	int found = 0;
	uint64_t elem = 0;
	float value = 0;
	one_tensor(&in, v);
	fmt_model_init(&o1);
	CHECK(fmt_model_add_retyped(&o1, &in, &in.tensors[0], "w", FMT_DT_F16, NULL, &e) == FMT_OK);
	CHECK(fmt_tensor_read(&o1, &o1.tensors[0], 0, out, 256, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "tensor 'w': element 100 is 1000000, beyond what F16 holds (largest finite value 65504; see --overflow)");
	fmt_model_init(&o2);
	CHECK(fmt_model_add_retyped_mode(&o2, &in, &in.tensors[0], "w", FMT_DT_F16, FMT_OVERFLOW_SATURATE, NULL, &e) == FMT_OK);
	CHECK(fmt_tensor_read(&o2, &o2.tensors[0], 0, out, 256, &e) == FMT_OK);
	CHECK(fmt_rd_u16(out + 200) == 0x7BFF && fmt_rd_u16(out + 198) == fmt_f32_to_f16(v[99]));
	CHECK(fmt_tensor_find_overflow(&in, &in.tensors[0], FMT_DT_F16, &found, &elem, &value, &e) == FMT_OK);
	CHECK(found && elem == 100 && value == 1e6f);
	CHECK(fmt_tensor_find_overflow(&in, &in.tensors[0], FMT_DT_Q8_0, &found, &elem, &value, &e) == FMT_OK);
	CHECK(!found);
	CHECK(fmt_tensor_find_overflow(&in, &in.tensors[0], FMT_DT_Q4_0, &found, &elem, &value, &e) == FMT_OK);
	CHECK(found && elem == 100);
	/* Q4_0 overflow stays refused even with saturate: the planner widens such tensors first */
	fmt_model_free(&o1);
	fmt_model_init(&o1);
	CHECK(fmt_model_add_retyped_mode(&o1, &in, &in.tensors[0], "w", FMT_DT_Q4_0, FMT_OVERFLOW_SATURATE, NULL, &e) == FMT_OK);
	CHECK(fmt_tensor_read(&o1, &o1.tensors[0], 0, out, 72, &e) == FMT_INVALID_FORMAT);
	fmt_model_free(&o1);
	fmt_model_free(&o2);
	in.tensors[0].data = NULL;
	fmt_model_free(&in);
}
