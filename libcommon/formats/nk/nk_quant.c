/* A float .nk network as a version 4 int8 one (specs/nk.md §6, §7, §12), with the arithmetic of
 * upstream's quantizer as its int8 files show it (mnist_cnn_dw_int8.nk):
 *   weights symmetric per output channel: scale = max|w| / 127 (1 for an all-zero row), codes
 *     round-half-even(w / scale) clamped to -128..127, in float32;
 *   activations asymmetric per tensor from the calibration range [lo, hi] widened to hold 0:
 *     scale = (hi - lo) / 255, zero point = -128 - round-half-even(lo / scale); a softmax dense
 *     outputs logits at scale 1, zero point 0;
 *   biases int32: round-half-even(b / (input scale x channel scale)), in float32;
 *   the record's weight_scale the largest channel scale, bias_scale input scale x the first.
 * Layer records and catalog dims are the float file's; tests are not carried over. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/nk.h"

#define QUAN_RECORD 32

/* One quantized operation's parameters (a QUAN record and its channel scales). */
typedef struct qop {
	float in_scale, out_scale, w_scale, b_scale;
	int32_t in_zp, out_zp;
	uint32_t channels;
	float *scales;
} qop;

static int op_kind(unsigned kind)
{
	return kind == NK_DENSE || kind == NK_CONV2D || kind == NK_DEPTHWISE;
}

static const char *int8_layer_problem(const nk_model *nm, uint32_t i)
{
	const nk_layer *l = &nm->layers[i];
	int last = i + 1 == nm->n_layers;
	if (nm->network == NK_MLP)
		return l->act == NK_ACT_NONE || l->act == NK_ACT_RELU || (l->act == NK_ACT_SOFTMAX && last)
			       ? NULL
			       : "an int8 MLP layer is linear or relu (softmax: the last)";
	switch (l->kind) {
	case NK_DENSE:
		if (l->act == NK_ACT_SOFTMAX)
			return last ? NULL : "softmax is int8 on the last dense layer only";
		/* fall through */
	case NK_CONV2D:
	case NK_DEPTHWISE:
		if (l->act != NK_ACT_NONE && l->act != NK_ACT_RELU && l->act != NK_ACT_RELU6)
			return "int8 activations are relu and relu6 (softmax: the last dense)";
		if (l->kind != NK_DENSE && l->units > NK_MAX_QUANT_CHANNELS)
			return "more than 2048 output channels";
		break;
	case NK_MAXPOOL:
	case NK_AVGPOOL:
	case NK_FLATTEN:
		break;
	default:
		return "no int8 form (int8 networks hold conv2d, depthwise_conv2d, pools, flatten and dense)";
	}
	if (l->pad_b != l->pad_t || l->pad_r != l->pad_l)
		return "asymmetric padding has no int8 form";
	return NULL;
}

fmt_kind fmt_nk_int8_check(const nk_model *nm, fmt_err *e)
{
	if (nm->quantized)
		return fmt_fail(e, FMT_UNSUPPORTED, "the network is int8 already (version %u)", nm->version);
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const char *why = int8_layer_problem(nm, i);
		if (why)
			return fmt_fail(e, FMT_UNSUPPORTED, "layer %u (%s, %s): %s", i, fmt_nk_kind_name(nm->layers[i].kind),
					fmt_nk_act_name(nm->layers[i].act), why);
	}
	return FMT_OK;
}

/* Scale and zero point of values seen in [lo, hi]. */
static void activation_params(nk_range r, float *scale, int32_t *zp)
{
	double lo = r.lo < 0 ? r.lo : 0, hi = r.hi > 0 ? r.hi : 0;
	*scale = hi > lo ? (float)((hi - lo) / 255.0) : 1.0f;
	double z = -128.0 - nearbyint(lo / (double)*scale);
	*zp = (int32_t)(z < -128 ? -128 : z > 127 ? 127 : z);
}

static int8_t weight_code(float w, float scale)
{
	float q = nearbyintf(w / scale);
	return (int8_t)(q < -128.0f ? -128 : q > 127.0f ? 127 : q);
}

/* Pair p's channel scales into op (allocated) and its codes into codes. */
static fmt_kind quantize_weights(const nk_tensor *w, uint32_t channels, qop *op, int8_t *codes, fmt_err *e)
{
	uint32_t row = w->count / channels;
	const uint8_t *src = w->data;
	if (!(op->scales = malloc(channels * sizeof *op->scales)))
		return fmt_fail(e, FMT_IO, "out of memory");
	op->channels = channels;
	op->w_scale = 0;
	for (uint32_t c = 0; c < channels; c++) {
		float amax = 0;
		for (uint32_t j = 0; j < row; j++)
			amax = fmaxf(amax, fabsf(fmt_nk_rd_f32(src + 4ull * ((uint64_t)c * row + j))));
		float s = amax > 0 ? amax / 127.0f : 1.0f;
		op->scales[c] = s;
		op->w_scale = fmaxf(op->w_scale, s);
		for (uint32_t j = 0; j < row; j++) {
			uint64_t at = (uint64_t)c * row + j;
			codes[at] = weight_code(fmt_nk_rd_f32(src + 4 * at), s);
		}
	}
	return FMT_OK;
}

static fmt_kind quantize_biases(const nk_tensor *b, const qop *op, uint32_t pair, int32_t *out, fmt_err *e)
{
	for (uint32_t c = 0; c < b->count; c++) {
		float es = op->in_scale * op->scales[c];
		if (!(es > 0))
			es = 1.0f;
		float q = nearbyintf(fmt_nk_rd_f32((const uint8_t *)b->data + 4ull * c) / es);
		if (!(q >= -2147483648.0f && q < 2147483648.0f))
			return fmt_fail(e, FMT_INVALID_FORMAT, "weight tensor %u: bias %u at scale %g does not fit int32",
					pair, c, (double)es);
		out[c] = (int32_t)q;
	}
	return FMT_OK;
}

/* Every op's parameters, chained: an op's input is the network input or the previous op's
 * output (pools and flatten keep them). */
static void chain_params(const nk_model *nm, nk_range input, const nk_range *outputs, qop *ops)
{
	float scale;
	int32_t zp;
	activation_params(input, &scale, &zp);
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		if (!op_kind(l->kind))
			continue;
		qop *op = &ops[l->first_pair];
		op->in_scale = scale;
		op->in_zp = zp;
		if (l->act == NK_ACT_SOFTMAX) {
			op->out_scale = 1.0f;
			op->out_zp = 0;
		} else {
			activation_params(outputs[l->first_pair], &op->out_scale, &op->out_zp);
		}
		scale = op->out_scale;
		zp = op->out_zp;
	}
}

static void wr_f32(uint8_t *p, float v)
{
	fmt_wr_u32(p, fmt_f32_bits(v));
}

/* The QUAN block (§6) at p; returns its end. */
static uint8_t *put_quan(const qop *ops, uint32_t n, uint8_t *p)
{
	memcpy(p, "QUAN", 4);
	fmt_wr_u16(p + 4, (uint16_t)n);
	fmt_wr_u16(p + 6, 1);  /* per-channel weight scales follow */
	p += 8;
	for (uint32_t k = 0; k < n; k++, p += QUAN_RECORD) {
		const qop *op = &ops[k];
		wr_f32(p, op->in_scale);
		fmt_wr_u32(p + 4, (uint32_t)op->in_zp);
		wr_f32(p + 8, op->w_scale);
		fmt_wr_u32(p + 12, 0);
		wr_f32(p + 16, op->in_scale * op->scales[0]);
		fmt_wr_u32(p + 20, 0);
		wr_f32(p + 24, op->out_scale);
		fmt_wr_u32(p + 28, (uint32_t)op->out_zp);
	}
	for (uint32_t k = 0; k < n; k++) {
		fmt_wr_u32(p, ops[k].channels);
		p += 4;
		for (uint32_t c = 0; c < ops[k].channels; c++, p += 4)
			wr_f32(p, ops[k].scales[c]);
	}
	return p;
}

/* Output channels of pair p: the owning layer's units (filters, channels). */
static uint32_t pair_channels(const nk_model *nm, uint32_t p)
{
	return nm->layers[nm->pairs[p].layer].units;
}

/* Sizes: the QUAN block, the int8 weights with their tail pad, the int32 biases. */
static fmt_kind measure(const nk_model *nm, uint64_t *quan, uint64_t *wbytes, uint64_t *bbytes, fmt_err *e)
{
	*quan = 8 + (uint64_t)QUAN_RECORD * nm->n_weights;
	*wbytes = *bbytes = 0;
	for (uint32_t p = 0; p < nm->n_weights; p++) {
		*quan += 4 + 4ull * pair_channels(nm, p);
		*wbytes += nm->weights[p].count;
		*bbytes += 4ull * nm->biases[p].count;
	}
	fmt_align_up_u64(*wbytes, 4, wbytes);
	if (*wbytes > UINT32_MAX || *bbytes > UINT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "the int8 payload does not fit a .nk file's 32-bit sizes");
	return FMT_OK;
}

/* Header, records and catalogs of the float file, made int8: version 4, the quant flag, the
 * new payload sizes, weight dtype int8 and bias dtype int32. */
static uint8_t *put_meta(const nk_model *nm, uint64_t wbytes, uint64_t bbytes, uint8_t *b)
{
	uint64_t meta = nm->catalog_offset + 48ull * nm->n_weights;
	memcpy(b, nm->base, (size_t)meta);
	fmt_wr_u32(b + 4, 4);
	fmt_wr_u16(b + 10, NK_FLAG_QUANT);
	fmt_wr_u32(b + 40, (uint32_t)wbytes);
	fmt_wr_u32(b + 44, (uint32_t)bbytes);
	for (uint32_t p = 0; p < 2 * nm->n_weights; p++)
		b[nm->catalog_offset + 24ull * p + 1] = p < nm->n_weights ? NK_I8 : NK_I32;
	return b + meta;
}

static fmt_kind quantize_pairs(const nk_model *nm, qop *ops, int8_t *codes, int32_t *biases, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	for (uint32_t p = 0; k == FMT_OK && p < nm->n_weights; p++) {
		k = quantize_weights(&nm->weights[p], pair_channels(nm, p), &ops[p], codes, e);
		if (k == FMT_OK)
			k = quantize_biases(&nm->biases[p], &ops[p], p, biases, e);
		codes += nm->weights[p].count;
		biases += nm->biases[p].count;
	}
	return k;
}

fmt_kind fmt_nk_write_int8(const nk_model *nm, nk_range input, const nk_range *outputs, uint8_t **out, size_t *n,
			   fmt_err *e)
{
	uint64_t quan, wbytes, bbytes;
	*out = NULL;
	*n = 0;
	fmt_kind k = fmt_nk_int8_check(nm, e);
	if (k == FMT_OK && nm->n_weights == 0)
		k = fmt_fail(e, FMT_UNSUPPORTED, "the network has no weights to quantize");
	if (k == FMT_OK)
		k = measure(nm, &quan, &wbytes, &bbytes, e);
	if (k != FMT_OK)
		return k;
	uint64_t meta_end = nm->catalog_offset + 48ull * nm->n_weights + quan, payload = meta_end;
	fmt_align_up_u64(meta_end, 4, &payload);
	qop *ops = calloc(nm->n_weights, sizeof *ops);
	uint8_t *b = calloc(1, (size_t)(payload + wbytes + bbytes));
	int32_t *biases = malloc(bbytes ? (size_t)bbytes : 1);
	if (!ops || !b || !biases)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK) {
		chain_params(nm, input, outputs, ops);
		k = quantize_pairs(nm, ops, (int8_t *)(b + payload), biases, e);
	}
	if (k == FMT_OK) {
		put_quan(ops, nm->n_weights, put_meta(nm, wbytes, bbytes, b));
		for (uint64_t i = 0; i < bbytes / 4; i++)
			fmt_wr_u32(b + payload + wbytes + 4 * i, (uint32_t)biases[i]);
	}
	for (uint32_t p = 0; ops && p < nm->n_weights; p++)
		free(ops[p].scales);
	free(ops);
	free(biases);
	if (k != FMT_OK) {
		free(b);
		return k;
	}
	*out = b;
	*n = (size_t)(payload + wbytes + bbytes);
	return FMT_OK;
}
