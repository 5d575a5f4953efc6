/* fmt/convert.h: decoding every plain dtype to float32, block types through fmt/quant.h,
 * and encoding float32 as F32/F16/BF16/F64. */
#include <math.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/half.h"
#include "unit.h"

/* Decode from an odd address, to prove no aligned access is assumed. */
static fmt_kind decode_unaligned(fmt_dtype t, const uint8_t *bytes, size_t nbytes, uint64_t n,
				 float *out)
{
	static uint8_t buf[1 + 65536];
	fmt_err e;
	fmt_err_clear(&e);
	memcpy(buf + 1, bytes, nbytes);
	return fmt_decode_f32(t, buf + 1, n, out, &e);
}

TEST(convert_decode_integers)
{
	float out[8];
	static const uint8_t b[] = { 0, 1, 2, 255 };
	CHECK(decode_unaligned(FMT_DT_BOOL, b, 4, 4, out) == FMT_OK);
	CHECK(out[0] == 0 && out[1] == 1 && out[2] == 1 && out[3] == 1);
	CHECK(decode_unaligned(FMT_DT_U8, b, 4, 4, out) == FMT_OK);
	CHECK(out[2] == 2 && out[3] == 255);
	CHECK(decode_unaligned(FMT_DT_I8, b, 4, 4, out) == FMT_OK);
	CHECK(out[3] == -1);
	static const uint8_t i16[] = { 0x00, 0x80, 0xFF, 0x7F, 0xFE, 0xFF };
	CHECK(decode_unaligned(FMT_DT_I16, i16, 6, 3, out) == FMT_OK);
	CHECK(out[0] == -32768 && out[1] == 32767 && out[2] == -2);
	CHECK(decode_unaligned(FMT_DT_U16, i16, 6, 3, out) == FMT_OK);
	CHECK(out[0] == 32768 && out[1] == 32767 && out[2] == 65534);
	static const uint8_t i32[] = { 0, 0, 0, 0x80, 0xFF, 0xFF, 0xFF, 0xFF };
	CHECK(decode_unaligned(FMT_DT_I32, i32, 8, 2, out) == FMT_OK);
	CHECK(out[0] == -2147483648.0f && out[1] == -1);
	CHECK(decode_unaligned(FMT_DT_U32, i32, 8, 2, out) == FMT_OK);
	CHECK(out[0] == 2147483648.0f && out[1] == 4294967296.0f);   /* rounded */
	uint8_t i64[16];
	fmt_wr_u64(i64, (1ull << 53) + 1);               /* not a float: rounds to 2^53 */
	fmt_wr_u64(i64 + 8, (uint64_t)-3);
	CHECK(decode_unaligned(FMT_DT_I64, i64, 16, 2, out) == FMT_OK);
	CHECK(out[0] == 0x1p53f && out[1] == -3);
	CHECK(decode_unaligned(FMT_DT_U64, i64, 16, 2, out) == FMT_OK);
	CHECK(out[1] == 0x1p64f);
}

TEST(convert_decode_floats)
{
	float out[8];
	uint8_t f32[8];
	fmt_wr_u32(f32, 0x3DCCCCCD);
	fmt_wr_u32(f32 + 4, 0xFFC00001);
	CHECK(decode_unaligned(FMT_DT_F32, f32, 8, 2, out) == FMT_OK);
	CHECK_EQ_U64(fmt_f32_bits(out[0]), 0x3DCCCCCD);
	CHECK_EQ_U64(fmt_f32_bits(out[1]), 0xFFC00001);
	uint8_t f64[32];
	double d[4] = { 0.1, 1e300, -1e-300, 3.0 };
	for (int i = 0; i < 4; i++)
		fmt_wr_u64(f64 + 8 * i, fmt_f64_bits(d[i]));
	CHECK(decode_unaligned(FMT_DT_F64, f64, 32, 4, out) == FMT_OK);
	CHECK(out[0] == 0.1f && isinf(out[1]) && out[1] > 0 && out[2] == 0 && signbit(out[2]) && out[3] == 3);
	static const uint8_t f16[] = { 0x00, 0x3C, 0x01, 0x00, 0x00, 0xFC, 0x01, 0x7C };
	CHECK(decode_unaligned(FMT_DT_F16, f16, 8, 4, out) == FMT_OK);
	CHECK(out[0] == 1 && out[1] == 0x1p-24f && isinf(out[2]) && out[2] < 0);
	CHECK_EQ_U64(fmt_f32_bits(out[3]), 0x7F802000);         /* signalling NaN payload kept */
	static const uint8_t bf16[] = { 0x80, 0x3F, 0xC0, 0xFF };
	CHECK(decode_unaligned(FMT_DT_BF16, bf16, 4, 2, out) == FMT_OK);
	CHECK(out[0] == 1);
	CHECK_EQ_U64(fmt_f32_bits(out[1]), 0xFFC00000);
}

/* Long F16 rows go through the staged row path: compare with the scalar widening. */
TEST(convert_decode_f16_long_unaligned)
{
	enum { N = 4099 };
	static uint8_t bytes[2 * N];
	static float out[N];
	for (uint32_t i = 0; i < N; i++)
		fmt_wr_u16(bytes + 2 * i, (uint16_t)(i * 16 + 7));
	CHECK(decode_unaligned(FMT_DT_F16, bytes, sizeof bytes, N, out) == FMT_OK);
	uint32_t bad = 0;
	for (uint32_t i = 0; i < N; i++)
		bad += fmt_f32_bits(out[i]) != fmt_f32_bits(fmt_f16_to_f32((uint16_t)(i * 16 + 7)));
	CHECK_EQ_U64(bad, 0);
}

/* E4M3fn decoded by value: (-1)^s * 2^(e-7) * (1 + m/8), subnormals 2^-6 * m/8. */
static float e4m3_by_value(unsigned b)
{
	int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
	double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
	return (float)(s ? -v : v);
}

TEST(convert_decode_fp8)
{
	uint8_t all[256];
	float out[256];
	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	CHECK(decode_unaligned(FMT_DT_F8_E4M3, all, 256, 256, out) == FMT_OK);
	for (unsigned b = 0; b < 256; b++) {
		if ((b & 0x7F) == 0x7F) {
			CHECK(isnan(out[b]));
			CHECK(!!signbit(out[b]) == !!(b & 0x80));
		} else {
			CHECK_EQ_U64(fmt_f32_bits(out[b]), fmt_f32_bits(e4m3_by_value(b)));
		}
	}
	CHECK(out[0x7E] == 448 && out[0x38] == 1 && out[0xB8] == -1 && out[0x01] == 0x1p-9f);
	CHECK(out[0x08] == 0x1p-6f && fmt_f32_bits(out[0x80]) == 0x80000000);
	CHECK(decode_unaligned(FMT_DT_F8_E5M2, all, 256, 256, out) == FMT_OK);
	for (unsigned b = 0; b < 256; b++)
		CHECK_EQ_U64(fmt_f32_bits(out[b]), fmt_f32_bits(fmt_f16_to_f32((uint16_t)(b << 8))));
	CHECK(out[0x3C] == 1 && out[0x7B] == 57344 && isinf(out[0x7C]) && isnan(out[0x7E]));
	CHECK(out[0x01] == 0x1p-16f);
}

TEST(convert_decode_blocks_and_unsupported)
{
	/* one Q8_0 block: d = 0.5, qs = -16..15 */
	uint8_t q8[34];
	float out[32];
	fmt_err e;
	fmt_wr_u16(q8, 0x3800);
	for (int i = 0; i < 32; i++)
		q8[2 + i] = (uint8_t)(int8_t)(i - 16);
	fmt_err_clear(&e);
	CHECK(fmt_decode_f32(FMT_DT_Q8_0, q8, 32, out, &e) == FMT_OK);
	for (int i = 0; i < 32; i++)
		CHECK(out[i] == (float)(i - 16) * 0.5f);
	CHECK(fmt_decode_supported(FMT_DT_Q8_0));
	static const fmt_dtype unsupported[] = {
		FMT_DT_C64, FMT_DT_F8_E4M3FNUZ, FMT_DT_F8_E5M2FNUZ, FMT_DT_F8_E8M0, FMT_DT_F6_E2M3,
		FMT_DT_F6_E3M2, FMT_DT_F4, FMT_DT_INVALID,
	};
	uint8_t zeros[64] = { 0 };
	for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
		fmt_err_clear(&e);
		CHECK(fmt_decode_f32(unsupported[i], zeros, 1, out, &e) == FMT_UNSUPPORTED);
		CHECK(strstr(e.msg, fmt_dtype_name(unsupported[i])) != NULL);
		CHECK(!fmt_decode_supported(unsupported[i]));
	}
	fmt_err_clear(&e);
	CHECK(fmt_decode_f32(FMT_DT_C64, zeros, 1, out, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "cannot decode C64 data");
}

TEST(convert_encode)
{
	static const float src[5] = { 1.0f, 0.1f, -65520.0f, 1e-8f, 3.0f };
	static uint8_t buf[1 + 5 * 8];
	float back[5];
	fmt_err e;
	float nan_src[1];
	uint32_t nan_bits = 0x7FA00001;
	memcpy(nan_src, &nan_bits, 4);

	fmt_err_clear(&e);
	CHECK(fmt_encode_from_f32(FMT_DT_F16, src, 5, buf + 1, &e) == FMT_OK);
	CHECK_EQ_U64(fmt_rd_u16(buf + 1), 0x3C00);
	CHECK_EQ_U64(fmt_rd_u16(buf + 3), 0x2E66);
	CHECK_EQ_U64(fmt_rd_u16(buf + 5), 0xFC00);
	CHECK_EQ_U64(fmt_rd_u16(buf + 7), 0x0000);
	CHECK(fmt_encode_from_f32(FMT_DT_F16, nan_src, 1, buf + 1, &e) == FMT_OK);
	CHECK_EQ_U64(fmt_rd_u16(buf + 1), 0x7E00);

	CHECK(fmt_encode_from_f32(FMT_DT_BF16, src, 5, buf + 1, &e) == FMT_OK);
	CHECK_EQ_U64(fmt_rd_u16(buf + 1), 0x3F80);
	CHECK_EQ_U64(fmt_rd_u16(buf + 3), 0x3DCD);
	CHECK(fmt_decode_f32(FMT_DT_BF16, buf + 1, 5, back, &e) == FMT_OK);
	CHECK(back[0] == 1 && back[4] == 3);

	CHECK(fmt_encode_from_f32(FMT_DT_F32, src, 5, buf + 1, &e) == FMT_OK);
	CHECK(fmt_decode_f32(FMT_DT_F32, buf + 1, 5, back, &e) == FMT_OK);
	CHECK_MEM(back, src, sizeof back);
	CHECK(fmt_encode_from_f32(FMT_DT_F64, src, 5, buf + 1, &e) == FMT_OK);
	CHECK(fmt_decode_f32(FMT_DT_F64, buf + 1, 5, back, &e) == FMT_OK);
	CHECK_MEM(back, src, sizeof back);
	uint64_t one;
	double d1 = 1.0;
	memcpy(&one, &d1, 8);
	CHECK_EQ_U64(fmt_rd_u64(buf + 1), one);

	CHECK(fmt_encode_from_f32(FMT_DT_Q8_0, src, 5, buf, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "cannot encode Q8_0 data");
	CHECK(fmt_encode_supported(FMT_DT_BF16) && !fmt_encode_supported(FMT_DT_I8));
}
