/* Stored elements <-> float32. Plain types are decoded here; ggml blocks by fmt/quant.h. */
#include <string.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/half.h"
#include "fmt/quant.h"

/* Row conversions want aligned uint16_t arrays; the stored bytes may sit at any address. */
enum { STAGE_ELEMS = 1024 };

/* OCP FP8 E4M3 "fn": bias 7, no infinities, S.1111.111 the only NaN. */
static float f8_e4m3_to_f32(uint8_t b)
{
	uint32_t sign = (uint32_t)(b & 0x80) << 24;
	uint32_t exp = (b >> 3) & 0xF, mant = b & 7;
	if (exp == 0xF && mant == 7)
		return fmt_bits_f32(sign | 0x7FC00000);
	if (exp == 0)
		return fmt_bits_f32(sign | fmt_f32_bits((float)mant * 0x1p-9f));
	return fmt_bits_f32(sign | ((exp + 120) << 23) | (mant << 20));
}

/* OCP FP8 E5M2 is the top byte of a binary16. */
static float f8_e5m2_to_f32(uint8_t b)
{
	return fmt_f16_to_f32((uint16_t)(b << 8));
}

static void decode_16bit(const uint8_t *src, uint64_t nelems, float *dst, int bf16)
{
	uint16_t stage[STAGE_ELEMS];
	while (nelems > 0) {
		size_t n = nelems < STAGE_ELEMS ? (size_t)nelems : STAGE_ELEMS;
		for (size_t i = 0; i < n; i++)
			stage[i] = fmt_rd_u16(src + 2 * i);
		if (bf16)
			fmt_bf16_to_f32_row(stage, dst, n);
		else
			fmt_f16_to_f32_row(stage, dst, n);
		src += 2 * n;
		dst += n;
		nelems -= n;
	}
}

/* One loop per element type: EXPR turns the element at byte pointer p into a float. */
#define DECODE_EACH(size, EXPR)                                     \
	do {                                                        \
		for (uint64_t i = 0; i < nelems; i++) {             \
			const uint8_t *p = src + (size) * i;        \
			dst[i] = (float)(EXPR);                     \
		}                                                   \
	} while (0)

static int decode_plain(fmt_dtype t, const uint8_t *src, uint64_t nelems, float *dst)
{
	switch (t) {
	case FMT_DT_F32: DECODE_EACH(4, fmt_bits_f32(fmt_rd_u32(p))); return 1;
	case FMT_DT_F16: decode_16bit(src, nelems, dst, 0); return 1;
	case FMT_DT_BF16: decode_16bit(src, nelems, dst, 1); return 1;
	case FMT_DT_F64: DECODE_EACH(8, fmt_bits_f64(fmt_rd_u64(p))); return 1;
	case FMT_DT_BOOL: DECODE_EACH(1, *p != 0); return 1;
	case FMT_DT_U8: DECODE_EACH(1, *p); return 1;
	case FMT_DT_I8: DECODE_EACH(1, (int8_t)*p); return 1;
	case FMT_DT_U16: DECODE_EACH(2, fmt_rd_u16(p)); return 1;
	case FMT_DT_I16: DECODE_EACH(2, (int16_t)fmt_rd_u16(p)); return 1;
	case FMT_DT_U32: DECODE_EACH(4, fmt_rd_u32(p)); return 1;
	case FMT_DT_I32: DECODE_EACH(4, (int32_t)fmt_rd_u32(p)); return 1;
	case FMT_DT_U64: DECODE_EACH(8, fmt_rd_u64(p)); return 1;
	case FMT_DT_I64: DECODE_EACH(8, (int64_t)fmt_rd_u64(p)); return 1;
	case FMT_DT_F8_E4M3: DECODE_EACH(1, f8_e4m3_to_f32(*p)); return 1;
	case FMT_DT_F8_E5M2: DECODE_EACH(1, f8_e5m2_to_f32(*p)); return 1;
	default: return 0;
	}
}

static int is_block_type(fmt_dtype t)
{
	return t > FMT_DT_INVALID && t < FMT_DT_COUNT && fmt_dtype_get(t)->block_elems > 1;
}

static int is_plain_decodable(fmt_dtype t)
{
	switch (t) {
	case FMT_DT_F32: case FMT_DT_F16: case FMT_DT_BF16: case FMT_DT_F64: case FMT_DT_BOOL:
	case FMT_DT_U8: case FMT_DT_I8: case FMT_DT_U16: case FMT_DT_I16: case FMT_DT_U32:
	case FMT_DT_I32: case FMT_DT_U64: case FMT_DT_I64: case FMT_DT_F8_E4M3: case FMT_DT_F8_E5M2:
		return 1;
	default:
		return 0;
	}
}

int fmt_decode_supported(fmt_dtype t)
{
	return is_plain_decodable(t) || (is_block_type(t) && fmt_dequant_supported(t));
}

fmt_kind fmt_decode_f32(fmt_dtype t, const uint8_t *src, uint64_t nelems, float *dst, fmt_err *e)
{
	if (decode_plain(t, src, nelems, dst))
		return FMT_OK;
	if (is_block_type(t))
		return fmt_dequant_f32(t, src, nelems, dst, e);
	return fmt_fail(e, FMT_UNSUPPORTED, "cannot decode %s data", fmt_dtype_name(t));
}

static void encode_16bit(const float *src, uint64_t nelems, uint8_t *dst, int bf16)
{
	uint16_t stage[STAGE_ELEMS];
	while (nelems > 0) {
		size_t n = nelems < STAGE_ELEMS ? (size_t)nelems : STAGE_ELEMS;
		if (bf16)
			fmt_f32_to_bf16_row(src, stage, n);
		else
			fmt_f32_to_f16_row(src, stage, n);
		for (size_t i = 0; i < n; i++)
			fmt_wr_u16(dst + 2 * i, stage[i]);
		src += n;
		dst += 2 * n;
		nelems -= n;
	}
}

int fmt_encode_supported(fmt_dtype t)
{
	return t == FMT_DT_F32 || t == FMT_DT_F16 || t == FMT_DT_BF16 || t == FMT_DT_F64;
}

fmt_kind fmt_encode_from_f32(fmt_dtype t, const float *src, uint64_t nelems, uint8_t *dst,
			     fmt_err *e)
{
	switch (t) {
	case FMT_DT_F32:
		for (uint64_t i = 0; i < nelems; i++)
			fmt_wr_u32(dst + 4 * i, fmt_f32_bits(src[i]));
		return FMT_OK;
	case FMT_DT_F64:
		for (uint64_t i = 0; i < nelems; i++)
			fmt_wr_u64(dst + 8 * i, fmt_f64_bits((double)src[i]));
		return FMT_OK;
	case FMT_DT_F16:
		encode_16bit(src, nelems, dst, 0);
		return FMT_OK;
	case FMT_DT_BF16:
		encode_16bit(src, nelems, dst, 1);
		return FMT_OK;
	default:
		return fmt_fail(e, FMT_UNSUPPORTED, "cannot encode %s data", fmt_dtype_name(t));
	}
}
