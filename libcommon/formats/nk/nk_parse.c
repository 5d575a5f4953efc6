/* netkit .nk reader (specs/nk.md): header, layer records, catalogs, QUAN, payload, TCAS; then
 * every layer's geometry decoded and checked, its weight/bias pairs counted against the layer,
 * shapes propagated. Everything is read from the caller's bytes with bounds checks; tensors
 * point into them.
 *
 * Reader policy where the spec leaves room (all InvalidFormat unless noted):
 *  - non-zero bytes in the 0-3 alignment pad before the payload (upstream then reads the
 *    payload unaligned; writers never produce it);
 *  - weights_bytes must be a multiple of 4 (the bias region is read in place as f32 / i32);
 *    the weight tensors fill weights_bytes but for at most 3 tail bytes, the bias tensors fill
 *    biases_bytes exactly;
 *  - a catalog entry's dims must multiply to its num_elements; float models use dtype 1
 *    everywhere, int8 models dtype 2 (weights) and 3 (biases);
 *  - input_rank 1..4 with the first input_rank dims multiplying to what the network reads;
 *  - what upstream leaves undefined (§18) is refused: channel mismatches (also BN's), zero
 *    strides or kernels, kernels larger than the padded input, tap ids >= 4, a PAFPN whose taps
 *    are missing or of the wrong size, spatial layers after flatten, a UIB residual whose
 *    shapes differ (even kernels);
 *  - int8 models: layer kinds other than those of §12.1, asymmetric padding, more than 2048
 *    output channels are Unsupported; an op whose output_scale is not > 0 is InvalidFormat;
 *  - activations above 2^26 elements are refused (the arena is planned from these shapes). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/nk.h"

#define MAX_ACTIVATION (1u << 26) /* 64 Mi values: 56x56x960 is 3 Mi */

static const uint32_t record_size[15] = { 0, 16, 24, 16, 4, 16, 12, 24, 16, 24, 16, 16, 20, 12, 28 };

float fmt_nk_rd_f32(const uint8_t *p)
{
	return fmt_bits_f32(fmt_rd_u32(p));
}

static int32_t rd_i32(const uint8_t *p)
{
	return (int32_t)fmt_rd_u32(p);
}

const char *fmt_nk_kind_name(unsigned kind)
{
	static const char *const names[15] = {
		"?", "dense", "conv2d", "max_pool2d", "flatten", "avg_pool2d", "batch_norm2d",
		"depthwise_conv2d", "convnextv2_block", "mobilenetv4_uib", "resnet_basic_block",
		"layernorm2d", "yolox_decoupled_head", "feature_tap", "yolox_pafpn_multiscale"
	};
	return kind < 15 ? names[kind] : "?";
}

const char *fmt_nk_act_name(unsigned act)
{
	static const char *const names[7] = { "none", "relu", "sigmoid", "tanh", "leaky_relu", "relu6",
					      "softmax" };
	return act < 7 ? names[act] : "none";
}

const char *fmt_nk_dtype_name(unsigned dtype)
{
	return dtype == NK_F32 ? "float32" : dtype == NK_I8 ? "int8" : dtype == NK_I32 ? "int32" : "?";
}

void fmt_nk_free(nk_model *nm)
{
	if (!nm)
		return;
	for (uint32_t i = 0; nm->quant && i < nm->n_quant; i++)
		free(nm->quant[i].scales);
	free(nm->quant);
	free(nm->layers);
	free(nm->weights);
	free(nm->biases);
	free(nm->pairs);
	free(nm->cases);
	memset(nm, 0, sizeof *nm);
}

/* ---- the container ---- */

static fmt_kind need(const nk_model *nm, uint64_t off, uint64_t n, const char *what, fmt_err *e)
{
	uint64_t end;
	if (fmt_add_u64(off, n, &end) || end > nm->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %s needs bytes %llu..%llu but the file has %llu",
				what, (unsigned long long)off, (unsigned long long)off + n,
				(unsigned long long)nm->size);
	return FMT_OK;
}

static fmt_kind parse_header(nk_model *nm, fmt_err *e)
{
	const uint8_t *h = nm->base;
	if (nm->size < 4 || memcmp(h, "NKIT", 4) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not a .nk file (magic is not NKIT)");
	if (nm->size < NK_HEADER_BYTES)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated header (%llu of 48 bytes)",
				(unsigned long long)nm->size);
	nm->version = fmt_rd_u32(h + 4);
	if (nm->version < 3 || nm->version > 4)
		return fmt_fail(e, FMT_UNSUPPORTED, "version %u (this build reads 3 and 4)", nm->version);
	nm->network = h[8];
	nm->input_rank = h[9];
	nm->flags = fmt_rd_u16(h + 10);
	for (int i = 0; i < 4; i++)
		nm->input_shape[i] = fmt_rd_u32(h + 12 + 4 * i);
	nm->n_layers = fmt_rd_u32(h + 28);
	nm->n_weights = fmt_rd_u32(h + 32);
	nm->n_biases = fmt_rd_u32(h + 36);
	nm->weights_bytes = fmt_rd_u32(h + 40);
	nm->biases_bytes = fmt_rd_u32(h + 44);
	if (nm->network != NK_MLP && nm->network != NK_CNN)
		return fmt_fail(e, FMT_UNSUPPORTED, "network kind %u (1 = MLP and 2 = CNN are known)", nm->network);
	if (nm->n_layers == 0 || nm->n_layers > NK_MAX_LAYERS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "num_layers %u (1..%u)", nm->n_layers, NK_MAX_LAYERS);
	if (nm->n_weights > NK_MAX_TENSORS || nm->n_biases > NK_MAX_TENSORS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "catalog of %u weight and %u bias tensors (at most %u each)",
				nm->n_weights, nm->n_biases, NK_MAX_TENSORS);
	if (nm->n_weights != nm->n_biases)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%u weight tensors but %u bias tensors (they come in pairs)",
				nm->n_weights, nm->n_biases);
	nm->quantized = (nm->flags & NK_FLAG_QUANT) != 0;
	if (nm->quantized && nm->version < 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "version 3 file with the QUAN flag (int8 needs version 4)");
	if (nm->input_rank < 1 || nm->input_rank > 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "input_rank %u (1..4)", nm->input_rank);
	return FMT_OK;
}

/* The input shape the network reads, checked against the first input_rank dims. */
static fmt_kind input_shape(nk_model *nm, fmt_err *e)
{
	const uint32_t *s = nm->input_shape;
	uint64_t declared = 1;
	for (unsigned i = 0; i < nm->input_rank; i++)
		if (fmt_mul_u64(declared, s[i], &declared))
			declared = UINT64_MAX; /* cannot equal what a network reads */
	if (nm->network == NK_MLP)
		nm->input = (nk_shape){ s[0], 1, s[1], 1 };
	else
		nm->input = (nk_shape){ s[0], s[1], s[2], 0 };
	uint64_t used = nk_shape_count(nm->input);
	if (used == 0 || used > MAX_ACTIVATION)
		return fmt_fail(e, FMT_INVALID_FORMAT, "input shape [%u, %u, %u, %u] holds %llu values (1..%u)",
				s[0], s[1], s[2], s[3], (unsigned long long)used, MAX_ACTIVATION);
	if (declared != used)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"input_rank %u and input shape [%u, %u, %u, %u] give %llu values but a%s reads %llu",
				nm->input_rank, s[0], s[1], s[2], s[3], (unsigned long long)declared,
				nm->network == NK_MLP ? "n MLP" : " CNN", (unsigned long long)used);
	nm->input_count = used;
	return FMT_OK;
}

/* Raw record fields; geometry is decoded in the graph pass (depthwise needs its weights). */
static fmt_kind parse_layers(nk_model *nm, uint64_t *off, fmt_err *e)
{
	nm->layers = calloc(nm->n_layers, sizeof *nm->layers);
	if (!nm->layers)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		nk_layer *l = &nm->layers[i];
		fmt_kind k = need(nm, *off, 4, "layer record", e);
		if (k != FMT_OK)
			return fmt_err_prefix(e, "layer %u", i), k;
		const uint8_t *r = nm->base + *off;
		l->kind = r[0];
		if (l->kind < 1 || l->kind > 14)
			return fmt_fail(e, FMT_INVALID_FORMAT, "layer %u: unknown layer kind %u at offset %llu", i,
					l->kind, (unsigned long long)*off);
		if ((k = need(nm, *off, record_size[l->kind], "layer record", e)) != FMT_OK)
			return fmt_err_prefix(e, "layer %u (%s)", i, fmt_nk_kind_name(l->kind)), k;
		l->record_offset = (uint32_t)*off;
		*off += record_size[l->kind];
	}
	return FMT_OK;
}

static fmt_kind parse_catalog(nk_model *nm, nk_tensor *t, uint32_t n, const char *which, uint64_t *off,
			      fmt_err *e)
{
	for (uint32_t i = 0; i < n; i++, *off += 24) {
		fmt_kind k = need(nm, *off, 24, "tensor catalog", e);
		if (k != FMT_OK)
			return fmt_err_prefix(e, "%s tensor %u", which, i), k;
		const uint8_t *d = nm->base + *off;
		t[i].rank = d[0];
		t[i].dtype = d[1];
		for (int j = 0; j < 4; j++)
			t[i].dims[j] = fmt_rd_u32(d + 4 + 4 * j);
		t[i].count = fmt_rd_u32(d + 20);
		if (t[i].rank < 1 || t[i].rank > 4)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s tensor %u: rank %u (1..4)", which, i, t[i].rank);
		if (t[i].dtype < NK_F32 || t[i].dtype > NK_I32)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s tensor %u: dtype %u (1 float32, 2 int8, 3 int32)",
					which, i, t[i].dtype);
		uint64_t product = 1;
		for (unsigned j = 0; j < t[i].rank; j++)
			if (fmt_mul_u64(product, t[i].dims[j], &product))
				product = UINT64_MAX;
		if (product != t[i].count)
			return fmt_fail(e, FMT_INVALID_FORMAT, "%s tensor %u: dims multiply to %llu but num_elements is %u",
					which, i, (unsigned long long)product, t[i].count);
		t[i].bytes = (uint64_t)t[i].count * (t[i].dtype == NK_I8 ? 1 : 4);
	}
	return FMT_OK;
}

static fmt_kind check_dtypes(const nk_model *nm, fmt_err *e)
{
	for (uint32_t i = 0; i < nm->n_weights; i++) {
		unsigned want = nm->quantized ? NK_I8 : NK_F32;
		if (nm->weights[i].dtype != want)
			return fmt_fail(e, FMT_INVALID_FORMAT, "weight tensor %u: dtype %s in a%s model (%s expected)", i,
					fmt_nk_dtype_name(nm->weights[i].dtype), nm->quantized ? "n int8" : " float",
					fmt_nk_dtype_name(want));
	}
	for (uint32_t i = 0; i < nm->n_biases; i++) {
		unsigned want = nm->quantized ? NK_I32 : NK_F32;
		if (nm->biases[i].dtype != want)
			return fmt_fail(e, FMT_INVALID_FORMAT, "bias tensor %u: dtype %s in a%s model (%s expected)", i,
					fmt_nk_dtype_name(nm->biases[i].dtype), nm->quantized ? "n int8" : " float",
					fmt_nk_dtype_name(want));
	}
	return FMT_OK;
}

static fmt_kind parse_quan(nk_model *nm, uint64_t *off, fmt_err *e)
{
	fmt_kind k = need(nm, *off, 8, "QUAN block", e);
	if (k != FMT_OK)
		return k;
	const uint8_t *q = nm->base + *off;
	if (memcmp(q, "QUAN", 4) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "QUAN block expected at offset %llu", (unsigned long long)*off);
	nm->quan_offset = *off;
	nm->n_quant = fmt_rd_u16(q + 4);
	nm->qflags = fmt_rd_u16(q + 6);
	if (nm->n_quant < 1 || nm->n_quant > 100 || nm->n_quant != nm->n_weights)
		return fmt_fail(e, FMT_INVALID_FORMAT, "QUAN holds %u records (1..100, one per weight tensor: %u)",
				nm->n_quant, nm->n_weights);
	*off += 8;
	if ((k = need(nm, *off, (uint64_t)nm->n_quant * 32, "QUAN records", e)) != FMT_OK)
		return k;
	nm->quant = calloc(nm->n_quant, sizeof *nm->quant);
	if (!nm->quant)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < nm->n_quant; i++, *off += 32) {
		const uint8_t *r = nm->base + *off;
		nk_quant *u = &nm->quant[i];
		u->in_scale = fmt_nk_rd_f32(r);
		u->in_zp = rd_i32(r + 4);
		u->w_scale = fmt_nk_rd_f32(r + 8);
		u->w_zp = rd_i32(r + 12);
		u->b_scale = fmt_nk_rd_f32(r + 16);
		u->b_zp = rd_i32(r + 20);
		u->out_scale = fmt_nk_rd_f32(r + 24);
		u->out_zp = rd_i32(r + 28);
	}
	if (!(nm->qflags & 1))
		return FMT_OK;
	for (uint32_t i = 0; i < nm->n_quant; i++) {
		if ((k = need(nm, *off, 4, "per-channel scale count", e)) != FMT_OK)
			return fmt_err_prefix(e, "QUAN record %u", i), k;
		uint32_t n = fmt_rd_u32(nm->base + *off);
		*off += 4;
		if ((k = need(nm, *off, (uint64_t)n * 4, "per-channel scales", e)) != FMT_OK)
			return fmt_err_prefix(e, "QUAN record %u", i), k;
		if (n) {
			nk_quant *u = &nm->quant[i];
			if (!(u->scales = malloc((size_t)n * sizeof(float))))
				return fmt_fail(e, FMT_IO, "out of memory");
			for (uint32_t j = 0; j < n; j++)
				u->scales[j] = fmt_nk_rd_f32(nm->base + *off + 4 * j);
			u->n_scales = n;
		}
		*off += (uint64_t)n * 4;
	}
	return FMT_OK;
}

/* Payload placement (§2, §7): tensors point into the file. */
static fmt_kind place_payload(nk_model *nm, fmt_err *e)
{
	uint64_t pad_end = (nm->meta_end + 3) & ~(uint64_t)3; /* meta_end < file size < 2^63 */
	fmt_kind k = need(nm, nm->meta_end, pad_end - nm->meta_end, "alignment padding", e);
	if (k != FMT_OK)
		return k;
	for (uint64_t i = nm->meta_end; i < pad_end; i++)
		if (nm->base[i])
			return fmt_fail(e, FMT_INVALID_FORMAT, "non-zero byte in the alignment padding at offset %llu",
					(unsigned long long)i);
	nm->payload_offset = pad_end;
	if (nm->weights_bytes % 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "weights_bytes %u is not a multiple of 4 (the bias region must be aligned)",
				nm->weights_bytes);
	uint64_t end = nm->payload_offset + nm->weights_bytes + nm->biases_bytes;
	if (end > nm->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: payload ends at %llu but the file has %llu bytes",
				(unsigned long long)end, (unsigned long long)nm->size);
	if (!(nm->flags & NK_FLAG_TESTS) && end != nm->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu byte%s after the payload (file size must be %llu without tests)",
				(unsigned long long)(nm->size - end), nm->size - end == 1 ? "" : "s", (unsigned long long)end);
	nm->tcas_offset = end;
	uint64_t at = nm->payload_offset;
	for (uint32_t i = 0; i < nm->n_weights; i++) {
		nm->weights[i].offset = at;
		nm->weights[i].data = nm->base + at;
		at += nm->weights[i].bytes;
	}
	uint64_t used = at - nm->payload_offset;
	if (used > nm->weights_bytes || nm->weights_bytes - used > 3)
		return fmt_fail(e, FMT_INVALID_FORMAT, "weight tensors hold %llu bytes but weights_bytes is %u",
				(unsigned long long)used, nm->weights_bytes);
	at = nm->payload_offset + nm->weights_bytes;
	for (uint32_t i = 0; i < nm->n_biases; i++) {
		nm->biases[i].offset = at;
		nm->biases[i].data = nm->base + at;
		at += nm->biases[i].bytes;
	}
	used = at - nm->payload_offset - nm->weights_bytes;
	if (used != nm->biases_bytes)
		return fmt_fail(e, FMT_INVALID_FORMAT, "bias tensors hold %llu bytes but biases_bytes is %u",
				(unsigned long long)used, nm->biases_bytes);
	return FMT_OK;
}

static fmt_kind parse_tcas(nk_model *nm, fmt_err *e)
{
	uint64_t off = nm->tcas_offset;
	fmt_kind k = need(nm, off, 12, "TCAS block", e);
	if (k != FMT_OK)
		return k;
	if (memcmp(nm->base + off, "TCAS", 4) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TCAS block expected at offset %llu", (unsigned long long)off);
	nm->n_cases = fmt_rd_u32(nm->base + off + 4);
	nm->tolerance = fmt_nk_rd_f32(nm->base + off + 8);
	if (nm->n_cases < 1 || nm->n_cases > NK_MAX_CASES)
		return fmt_fail(e, FMT_INVALID_FORMAT, "TCAS case count %u (1..%u)", nm->n_cases, NK_MAX_CASES);
	off += 12;
	if (!(nm->cases = calloc(nm->n_cases, sizeof *nm->cases)))
		return fmt_fail(e, FMT_IO, "out of memory");
	uint64_t in_size = (nm->flags & NK_FLAG_INT8_TESTS) ? 1 : 4;
	for (uint32_t i = 0; i < nm->n_cases; i++) {
		nk_case *c = &nm->cases[i];
		c->offset = off;
		if ((k = need(nm, off, 1, "case name length", e)) != FMT_OK)
			return fmt_err_prefix(e, "TCAS case %u", i), k;
		c->name_len = nm->base[off];
		if (c->name_len < 1 || c->name_len > 127)
			return fmt_fail(e, FMT_INVALID_FORMAT, "TCAS case %u: name length %u (1..127)", i, c->name_len);
		uint64_t padded = (1 + c->name_len + 3) & ~(uint64_t)3;
		if ((k = need(nm, off, padded + 8, "case name", e)) != FMT_OK)
			return fmt_err_prefix(e, "TCAS case %u", i), k;
		memcpy(c->name, nm->base + off + 1, c->name_len);
		off += padded;
		c->label = rd_i32(nm->base + off);
		c->n_in = fmt_rd_u32(nm->base + off + 4);
		off += 8;
		if (c->n_in < 1 || c->n_in > NK_MAX_CASE_VALUES)
			return fmt_fail(e, FMT_INVALID_FORMAT, "TCAS case %u: input count %u (1..%u)", i, c->n_in,
					NK_MAX_CASE_VALUES);
		if ((k = need(nm, off, c->n_in * in_size + 4, "case inputs", e)) != FMT_OK)
			return fmt_err_prefix(e, "TCAS case %u", i), k;
		c->in = nm->base + off;
		off += c->n_in * in_size;
		c->n_out = fmt_rd_u32(nm->base + off);
		off += 4;
		if (c->n_out < 1 || c->n_out > NK_MAX_CASE_VALUES)
			return fmt_fail(e, FMT_INVALID_FORMAT, "TCAS case %u: output count %u (1..%u)", i, c->n_out,
					NK_MAX_CASE_VALUES);
		if ((k = need(nm, off, (uint64_t)c->n_out * 4, "case expected outputs", e)) != FMT_OK)
			return fmt_err_prefix(e, "TCAS case %u", i), k;
		c->expected = nm->base + off;
		off += (uint64_t)c->n_out * 4;
	}
	return FMT_OK;
}

/* ---- the graph: geometry, pairs, shapes ---- */

typedef struct graph {
	nk_model *nm;
	uint32_t layer;          /* index for messages */
	uint32_t next_pair;
	nk_shape cur;
	int have_tap[NK_MAX_TAPS];
	nk_shape taps[NK_MAX_TAPS];
	fmt_err *e;
} graph;

#define GFAIL(g, ...) graph_fail((g), FMT_INVALID_FORMAT, __VA_ARGS__)

__attribute__((format(printf, 3, 4)))
static fmt_kind graph_fail(graph *g, fmt_kind kind, const char *format, ...)
{
	char msg[FMT_ERR_MSG_MAX - 64];
	va_list ap;
	va_start(ap, format);
	vsnprintf(msg, sizeof msg, format, ap);
	va_end(ap);
	return fmt_fail(g->e, kind, "layer %u (%s): %s", g->layer, fmt_nk_kind_name(g->nm->layers[g->layer].kind), msg);
}

/* The next pair must hold wcount weights and bcount biases. */
static fmt_kind take_pair(graph *g, const char *role, uint64_t wcount, uint64_t bcount)
{
	nk_model *nm = g->nm;
	if (g->next_pair >= nm->n_weights)
		return GFAIL(g, "needs weight/bias pair %u%s%s but the catalog holds %u", g->next_pair,
			     *role ? " for " : "", role, nm->n_weights);
	uint32_t p = g->next_pair++;
	nm->pairs[p].layer = g->layer;
	snprintf(nm->pairs[p].role, sizeof nm->pairs[p].role, "%s", role);
	if (nm->weights[p].count != wcount || nm->biases[p].count != bcount)
		return GFAIL(g, "size mismatch in pair %u%s%s: %u weights and %u biases, expected %llu and %llu", p,
			     *role ? " (" : "", *role ? role : "", nm->weights[p].count, nm->biases[p].count,
			     (unsigned long long)wcount, (unsigned long long)bcount);
	return FMT_OK;
}

static int mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
	return fmt_mul_u64(a, b, out) || fmt_mul_u64(*out, c, out);
}

/* floor((n + p0 + p1 - k) / s) + 1, or a message. */
static fmt_kind out_dim(graph *g, const char *axis, uint32_t n, uint32_t k, uint32_t s, uint32_t p0, uint32_t p1,
			uint32_t *out)
{
	if (k == 0)
		return GFAIL(g, "zero %s kernel size", axis);
	if (s == 0)
		return GFAIL(g, "zero stride");
	uint64_t padded = (uint64_t)n + p0 + p1;
	if (padded < k)
		return GFAIL(g, "kernel %s %u is larger than the padded input (%u + %u + %u)", axis, k, n, p0, p1);
	*out = (uint32_t)((padded - k) / s + 1);
	return FMT_OK;
}

static fmt_kind need_spatial(graph *g)
{
	if (g->cur.flat)
		return GFAIL(g, "needs an H x W x C input but gets a vector of %u values", g->cur.c);
	return FMT_OK;
}

static fmt_kind need_channels(graph *g, const char *field, uint32_t ch)
{
	if (ch != g->cur.c)
		return GFAIL(g, "%s %u does not match the %u input channels", field, ch, g->cur.c);
	return FMT_OK;
}

/* An H x W x C input whose channels are field's value. */
static fmt_kind need_input(graph *g, const char *field, uint32_t ch)
{
	fmt_kind k = need_spatial(g);
	return k == FMT_OK ? need_channels(g, field, ch) : k;
}

/* The head settings of a decoupled head or of the PAFPN's heads. */
static fmt_kind check_head(graph *g, const nk_layer *l)
{
	if (l->hidden == 0 || l->classes == 0 || l->convs > NK_MAX_HEAD_CONVS)
		return GFAIL(g, "hidden %u, classes %u, convs %u (hidden and classes > 0, convs <= %u)", l->hidden,
			     l->classes, l->convs, NK_MAX_HEAD_CONVS);
	return FMT_OK;
}

static fmt_kind set_output(graph *g, nk_shape s)
{
	uint64_t n = nk_shape_count(s);
	if (n == 0 || n > MAX_ACTIVATION)
		return GFAIL(g, "output of %llu values (1..%u)", (unsigned long long)n, MAX_ACTIVATION);
	g->cur = s;
	return FMT_OK;
}

static fmt_kind spatial_out(graph *g, uint32_t kh, uint32_t kw, uint32_t s, uint32_t pt, uint32_t pl,
			    uint32_t pb, uint32_t pr, uint32_t c)
{
	nk_shape o = { 0, 0, c, 0 };
	fmt_kind k = out_dim(g, "height", g->cur.h, kh, s, pt, pb, &o.h);
	if (k == FMT_OK)
		k = out_dim(g, "width", g->cur.w, kw, s, pl, pr, &o.w);
	return k == FMT_OK ? set_output(g, o) : k;
}

static fmt_kind layer_dense(graph *g, nk_layer *l, const uint8_t *b)
{
	l->units = fmt_rd_u32(b);
	l->act = b[4];
	l->alpha = fmt_nk_rd_f32(b + 8);
	if (g->nm->network == NK_CNN && !g->cur.flat)
		return GFAIL(g, "a dense layer must follow flatten or another dense layer");
	if (l->units == 0)
		return GFAIL(g, "zero units");
	uint64_t w;
	if (fmt_mul_u64(l->units, g->cur.c, &w))
		return GFAIL(g, "too many weights");
	fmt_kind k = take_pair(g, "", w, l->units);
	return k == FMT_OK ? set_output(g, (nk_shape){ g->cur.h, 1, l->units, 1 }) : k;
}

static fmt_kind layer_conv(graph *g, nk_layer *l, const uint8_t *b)
{
	l->kh = l->kw = fmt_rd_u32(b);
	l->stride = fmt_rd_u32(b + 4);
	l->units = fmt_rd_u32(b + 8);
	l->act = b[12];
	l->pad_t = b[13];
	l->pad_l = b[14];
	l->raw_byte15 = b[15];
	l->pad_b = l->pad_t + (b[15] & 15u);
	l->pad_r = l->pad_l + (b[15] >> 4);
	l->alpha = fmt_nk_rd_f32(b + 16);
	fmt_kind k = need_spatial(g);
	if (k != FMT_OK)
		return k;
	if (l->kh == 0 || l->units == 0)
		return GFAIL(g, "zero kernel size or filters");
	uint32_t p = g->next_pair;
	if (p < g->nm->n_weights) {
		/* I is derived from the weight count (§9); it must be the running channel count. */
		uint64_t kko;
		if (mul3(l->kh, l->kh, l->units, &kko))
			return GFAIL(g, "kernel %u x %u x %u filters overflows", l->kh, l->kh, l->units);
		uint32_t count = g->nm->weights[p].count;
		if (count % kko || count / kko != g->cur.c)
			return GFAIL(g, "weight tensor %u holds %u values, not %u x %u x %u filters x %u input channels",
				     p, count, l->kh, l->kh, l->units, g->cur.c);
	}
	uint64_t w;
	if (mul3((uint64_t)l->kh * l->kh, l->units, g->cur.c, &w))
		return GFAIL(g, "too many weights");
	if ((k = take_pair(g, "", w, l->units)) != FMT_OK)
		return k;
	return spatial_out(g, l->kh, l->kw, l->stride, l->pad_t, l->pad_l, l->pad_b, l->pad_r, l->units);
}

/* The overloaded kw byte of a depthwise record (§4.3), decoded with the weight count E. */
static void decode_depthwise(nk_layer *l, uint64_t E)
{
	uint32_t kh = l->kh, b = l->raw_byte15, ch = l->units;
	uint32_t nib_b = l->pad_t + (b & 15u), nib_r = l->pad_l + ((b >> 4) & 15u);
	l->pad_b = l->pad_t;
	l->pad_r = l->pad_l;
	if (E > 0 && ch > 0 && E % ch == 0) {
		uint64_t A = E / ch, kk = (uint64_t)kh * kh;
		if (b == kh && kk == A) {
			l->kw = kh;
			return;
		}
		if (kk == A) {
			l->kw = kh;
			l->pad_b = nib_b;
			l->pad_r = nib_r;
			return;
		}
		uint32_t w = b ? b : kh;
		if ((uint64_t)kh * w == A) {
			l->kw = w;
			return;
		}
		if (kh && A % kh == 0 && A / kh != kh && (uint64_t)kh * b != A && (nib_b != l->pad_t || nib_r != l->pad_l)) {
			l->kw = (uint32_t)(A / kh);
			l->pad_b = nib_b;
			l->pad_r = nib_r;
			return;
		}
	}
	if (b == kh) {
		l->kw = kh;
	} else if ((b >> 4) & 15u) {
		l->kw = kh;
		l->pad_b = nib_b;
		l->pad_r = nib_r;
	} else if ((b & 15u) && b < kh) {
		l->kw = b;
	} else if (b & 15u) {
		l->kw = kh;
		l->pad_b = nib_b;
		l->pad_r = nib_r;
	} else {
		l->kw = b ? b : kh;
	}
}

static fmt_kind layer_depthwise(graph *g, nk_layer *l, const uint8_t *b)
{
	l->kh = fmt_rd_u32(b);
	l->stride = fmt_rd_u32(b + 4);
	l->units = fmt_rd_u32(b + 8);
	l->act = b[12];
	l->pad_t = b[13];
	l->pad_l = b[14];
	l->raw_byte15 = b[15];
	l->alpha = fmt_nk_rd_f32(b + 16);
	fmt_kind k = need_spatial(g);
	if (k != FMT_OK)
		return k;
	uint64_t E = g->next_pair < g->nm->n_weights ? g->nm->weights[g->next_pair].count : 0;
	decode_depthwise(l, E);
	if (l->kh == 0 || l->kw == 0)
		return GFAIL(g, "zero kernel size");
	if ((k = need_channels(g, "channels", l->units)) != FMT_OK)
		return k;
	uint64_t w;
	if (mul3(l->kh, l->kw, l->units, &w))
		return GFAIL(g, "too many weights");
	if ((k = take_pair(g, "", w, l->units)) != FMT_OK)
		return k;
	return spatial_out(g, l->kh, l->kw, l->stride, l->pad_t, l->pad_l, l->pad_b, l->pad_r, l->units);
}

static fmt_kind layer_pool(graph *g, nk_layer *l, const uint8_t *b)
{
	l->kh = fmt_rd_u32(b);
	l->stride = fmt_rd_u32(b + 4);
	l->pad_t = b[8];
	l->pad_l = b[9];
	l->pool_meta = fmt_rd_u16(b + 10);
	l->kw = (l->pool_meta & 0xff) ? (l->pool_meta & 0xffu) : l->kh;
	l->pad_b = l->pad_t + ((l->pool_meta >> 8) & 15u);
	l->pad_r = l->pad_l + ((l->pool_meta >> 12) & 15u);
	fmt_kind k = need_spatial(g);
	return k == FMT_OK ? spatial_out(g, l->kh, l->kw, l->stride, l->pad_t, l->pad_l, l->pad_b, l->pad_r, g->cur.c)
			   : k;
}

/* Per-channel layers: BN (scale/shift), LN (gamma/beta), tap (none). */
static fmt_kind layer_channelwise(graph *g, nk_layer *l, const uint8_t *b)
{
	l->units = fmt_rd_u32(b);
	if (l->kind == NK_LAYERNORM)
		l->eps = fmt_nk_rd_f32(b + 8);
	fmt_kind k = need_channels(g, "channels", l->units);
	if (k != FMT_OK)
		return k;
	if (l->kind == NK_FEATURE_TAP) {
		l->tap_id = b[4];
		if ((k = need_spatial(g)) != FMT_OK)
			return k;
		if (l->tap_id >= NK_MAX_TAPS)
			return GFAIL(g, "tap id %u (0..%u)", l->tap_id, NK_MAX_TAPS - 1);
		g->have_tap[l->tap_id] = 1;
		g->taps[l->tap_id] = g->cur;
		return FMT_OK;
	}
	return take_pair(g, "", l->units, l->units);
}

static fmt_kind layer_convnext(graph *g, nk_layer *l, const uint8_t *b)
{
	l->units = fmt_rd_u32(b);
	l->eps = fmt_nk_rd_f32(b + 8);
	fmt_kind k = need_input(g, "channels", l->units);
	if (k != FMT_OK)
		return k;
	uint64_t c = l->units;
	if ((k = take_pair(g, "dwconv", c * 49, c)) != FMT_OK || (k = take_pair(g, "norm", c, c)) != FMT_OK ||
	    (k = take_pair(g, "pwconv1", 4 * c * c, 4 * c)) != FMT_OK ||
	    (k = take_pair(g, "grn", 4 * c, 4 * c)) != FMT_OK || (k = take_pair(g, "pwconv2", 4 * c * c, c)) != FMT_OK)
		return k;
	return FMT_OK;
}

uint32_t fmt_nk_make_divisible8(float v)
{
	long r = (long)(v + 4.0f) / 8 * 8;
	if (r < 8)
		r = 8;
	if ((float)r < (float)(long)(0.9f * v))
		r += 8;
	return (uint32_t)r;
}

static fmt_kind uib_dw(graph *g, const char *role, uint32_t k, uint32_t stride, uint32_t c, int with_bn)
{
	fmt_kind r = take_pair(g, role, (uint64_t)c * k * k, c);
	char bn[24];
	snprintf(bn, sizeof bn, "%s_bn", role);
	if (r == FMT_OK && with_bn)
		r = take_pair(g, bn, c, c);
	uint32_t p = (k - 1) / 2;
	return r == FMT_OK ? spatial_out(g, k, k, stride, p, p, p, p, c) : r;
}

static fmt_kind uib_pw(graph *g, const char *role, uint32_t in, uint32_t out, int with_bn)
{
	fmt_kind r = take_pair(g, role, (uint64_t)in * out, out);
	char bn[24];
	snprintf(bn, sizeof bn, "%s_bn", role);
	if (r == FMT_OK && with_bn)
		r = take_pair(g, bn, out, out);
	return r == FMT_OK ? set_output(g, (nk_shape){ g->cur.h, g->cur.w, out, 0 }) : r;
}

static fmt_kind layer_uib(graph *g, nk_layer *l, const uint8_t *b)
{
	l->in_ch = fmt_rd_u32(b);
	l->out_ch = fmt_rd_u32(b + 4);
	l->start_dw = b[8];
	l->middle_dw = b[9];
	l->uib_stride = b[10];
	l->middle_down = b[11];
	l->expand_ratio = fmt_nk_rd_f32(b + 12);
	l->stride = l->uib_stride;
	fmt_kind k = need_input(g, "in_channels", l->in_ch);
	if (k != FMT_OK)
		return k;
	float v = (float)l->in_ch * l->expand_ratio;
	if (!(v > 0.0f) || !(v < 1e8f))
		return GFAIL(g, "expand ratio %g", (double)l->expand_ratio);
	if (l->out_ch == 0 || l->uib_stride == 0)
		return GFAIL(g, "zero out_channels or stride");
	l->expanded = fmt_nk_make_divisible8(v);
	int bn = !g->nm->quantized;
	nk_shape in = g->cur;
	l->start_stride = (l->start_dw == 0 || (l->middle_down && l->middle_dw > 0)) ? 1 : l->uib_stride;
	l->middle_stride = l->middle_down ? l->uib_stride : 1;
	if (l->start_dw && (k = uib_dw(g, "start_dw", l->start_dw, l->start_stride, l->in_ch, bn)) != FMT_OK)
		return k;
	l->uib_start = g->cur;
	if ((k = uib_pw(g, "expand", l->in_ch, l->expanded, bn)) != FMT_OK)
		return k;
	if (l->middle_dw && (k = uib_dw(g, "middle_dw", l->middle_dw, l->middle_stride, l->expanded, bn)) != FMT_OK)
		return k;
	if ((k = uib_pw(g, "project", l->expanded, l->out_ch, bn)) != FMT_OK)
		return k;
	if (l->uib_stride == 1 && l->in_ch == l->out_ch && (g->cur.h != in.h || g->cur.w != in.w))
		return GFAIL(g, "residual add of %ux%u to %ux%u (even depthwise kernel)", g->cur.h, g->cur.w, in.h, in.w);
	return FMT_OK;
}

static fmt_kind layer_resnet(graph *g, nk_layer *l, const uint8_t *b)
{
	l->in_ch = fmt_rd_u32(b);
	l->out_ch = fmt_rd_u32(b + 4);
	l->stride = b[8];
	fmt_kind k = need_input(g, "in_channels", l->in_ch);
	if (k != FMT_OK)
		return k;
	if (l->out_ch == 0)
		return GFAIL(g, "zero out_channels");
	uint64_t i = l->in_ch, o = l->out_ch;
	if ((k = take_pair(g, "conv1", o * 9 * i, o)) != FMT_OK || (k = take_pair(g, "bn1", o, o)) != FMT_OK ||
	    (k = take_pair(g, "conv2", o * 9 * o, o)) != FMT_OK || (k = take_pair(g, "bn2", o, o)) != FMT_OK)
		return k;
	if ((l->stride != 1 || i != o) &&
	    ((k = take_pair(g, "downsample", o * i, o)) != FMT_OK || (k = take_pair(g, "downsample_bn", o, o)) != FMT_OK))
		return k;
	return spatial_out(g, 3, 3, l->stride, 1, 1, 1, 1, l->out_ch);
}

/* The pairs of a decoupled head (§9), named under prefix. */
static fmt_kind head_pairs(graph *g, const char *prefix, uint64_t in, uint64_t hid, uint64_t nc, uint32_t convs)
{
	char role[24];
	fmt_kind k;
	snprintf(role, sizeof role, "%sstem", prefix);
	if ((k = take_pair(g, role, hid * in, hid)) != FMT_OK)
		return k;
	for (int branch = 0; branch < 2; branch++)
		for (uint32_t i = 0; i < convs; i++) {
			snprintf(role, sizeof role, "%s%s_conv%u", prefix, branch ? "reg" : "cls", i);
			if ((k = take_pair(g, role, hid * 9 * hid, hid)) != FMT_OK)
				return k;
		}
	snprintf(role, sizeof role, "%scls_pred", prefix);
	if ((k = take_pair(g, role, nc * hid, nc)) != FMT_OK)
		return k;
	snprintf(role, sizeof role, "%sreg_pred", prefix);
	if ((k = take_pair(g, role, 4 * hid, 4)) != FMT_OK)
		return k;
	snprintf(role, sizeof role, "%sobj_pred", prefix);
	return take_pair(g, role, hid, 1);
}

static fmt_kind layer_head(graph *g, nk_layer *l, const uint8_t *b)
{
	l->in_ch = fmt_rd_u32(b);
	l->hidden = fmt_rd_u32(b + 4);
	l->classes = fmt_rd_u32(b + 8);
	l->convs = b[12];
	fmt_kind k = need_input(g, "in_channels", l->in_ch);
	if (k != FMT_OK)
		return k;
	if ((k = check_head(g, l)) != FMT_OK)
		return k;
	if ((k = head_pairs(g, "", l->in_ch, l->hidden, l->classes, l->convs)) != FMT_OK)
		return k;
	return set_output(g, (nk_shape){ g->cur.h, g->cur.w, 5 + l->classes, 0 });
}

static fmt_kind check_tap(graph *g, unsigned id, uint32_t h, uint32_t w, uint32_t c)
{
	if (!g->have_tap[id])
		return GFAIL(g, "needs feature tap %u, which no earlier layer stores", id);
	nk_shape t = g->taps[id];
	if (t.h != h || t.w != w || t.c != c)
		return GFAIL(g, "tap %u is %ux%ux%u, expected %ux%ux%u", id, t.h, t.w, t.c, h, w, c);
	return FMT_OK;
}

static fmt_kind layer_pafpn(graph *g, nk_layer *l, const uint8_t *b)
{
	l->c3 = fmt_rd_u32(b);
	l->c4 = fmt_rd_u32(b + 4);
	l->c5 = fmt_rd_u32(b + 8);
	l->hidden = fmt_rd_u32(b + 12);
	l->classes = fmt_rd_u32(b + 16);
	l->convs = b[20];
	fmt_kind k = need_input(g, "c5_channels", l->c5);
	if (k != FMT_OK)
		return k;
	if ((k = check_head(g, l)) != FMT_OK)
		return k;
	uint32_t h5 = g->cur.h, w5 = g->cur.w;
	if (h5 > 0x3fffffff || w5 > 0x3fffffff)
		return GFAIL(g, "input too large");
	if ((k = check_tap(g, 0, 4 * h5, 4 * w5, l->c3)) != FMT_OK || (k = check_tap(g, 1, 2 * h5, 2 * w5, l->c4)) != FMT_OK)
		return k;
	uint64_t H = l->hidden;
	static const char *const dw_roles[4][2] = { { "td_p4_dw", "td_p4_pw" }, { "td_p3_dw", "td_p3_pw" },
						     { "bu_n4_dw", "bu_n4_pw" }, { "bu_n5_dw", "bu_n5_pw" } };
	if ((k = take_pair(g, "lat3", H * l->c3, H)) != FMT_OK || (k = take_pair(g, "lat4", H * l->c4, H)) != FMT_OK ||
	    (k = take_pair(g, "lat5", H * l->c5, H)) != FMT_OK)
		return k;
	for (int i = 0; i < 4; i++)
		if ((k = take_pair(g, dw_roles[i][0], H * 9, H)) != FMT_OK ||
		    (k = take_pair(g, dw_roles[i][1], H * H, H)) != FMT_OK)
			return k;
	for (int i = 0; i < 3; i++) {
		char prefix[8];
		snprintf(prefix, sizeof prefix, "head%d.", i);
		if ((k = head_pairs(g, prefix, H, H, l->classes, l->convs)) != FMT_OK)
			return k;
	}
	uint64_t n = 21ull * h5 * w5 * (5 + (uint64_t)l->classes);
	if (n > MAX_ACTIVATION)
		return GFAIL(g, "output of %llu values (at most %u)", (unsigned long long)n, MAX_ACTIVATION);
	return set_output(g, (nk_shape){ 1, 1, (uint32_t)n, 2 });
}

static fmt_kind check_int8_layer(graph *g, const nk_layer *l)
{
	switch (l->kind) {
	case NK_CONV2D: case NK_DEPTHWISE: case NK_MAXPOOL: case NK_AVGPOOL: case NK_FLATTEN: case NK_DENSE:
	case NK_UIB:
		break;
	default:
		return graph_fail(g, FMT_UNSUPPORTED, "layer kind not supported in int8 models");
	}
	if ((l->kind == NK_CONV2D || l->kind == NK_DEPTHWISE || l->kind == NK_MAXPOOL || l->kind == NK_AVGPOOL) &&
	    (l->pad_b != l->pad_t || l->pad_r != l->pad_l))
		return graph_fail(g, FMT_UNSUPPORTED, "asymmetric padding is not supported in int8 models");
	for (uint32_t p = l->first_pair; p < l->first_pair + l->n_pairs; p++) {
		const nk_quant *q = &g->nm->quant[p];
		uint32_t channels = g->nm->biases[p].count;
		if (channels > NK_MAX_QUANT_CHANNELS && l->kind != NK_DENSE)
			return graph_fail(g, FMT_UNSUPPORTED, "%u output channels (int8 convolutions have at most %u)",
					  channels, NK_MAX_QUANT_CHANNELS);
		if (!(q->out_scale > 0.0f) || !isfinite(q->out_scale) || !isfinite(q->in_scale) ||
		    !isfinite(q->w_scale))
			return GFAIL(g, "QUAN record %u: output scale %g (must be a finite value > 0)", p,
				     (double)q->out_scale);
		if (q->out_zp < -128 || q->out_zp > 127 || q->in_zp < -128 || q->in_zp > 127 || q->w_zp < -128 ||
		    q->w_zp > 127)
			return GFAIL(g, "QUAN record %u: zero point outside -128..127", p);
	}
	return FMT_OK;
}

static fmt_kind build_graph(nk_model *nm, fmt_err *e)
{
	graph g = { .nm = nm, .cur = nm->input, .e = e };
	if (!(nm->pairs = calloc(nm->n_weights ? nm->n_weights : 1, sizeof *nm->pairs)))
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		nk_layer *l = &nm->layers[i];
		const uint8_t *b = nm->base + l->record_offset + 4;
		g.layer = i;
		l->in = g.cur;
		l->first_pair = g.next_pair;
		fmt_kind k;
		if (nm->network == NK_MLP && l->kind != NK_DENSE)
			return GFAIL(&g, "an MLP holds dense layers only");
		switch (l->kind) {
		case NK_DENSE: k = layer_dense(&g, l, b); break;
		case NK_CONV2D: k = layer_conv(&g, l, b); break;
		case NK_DEPTHWISE: k = layer_depthwise(&g, l, b); break;
		case NK_MAXPOOL: case NK_AVGPOOL: k = layer_pool(&g, l, b); break;
		case NK_FLATTEN: k = set_output(&g, (nk_shape){ 1, 1, (uint32_t)nk_shape_count(g.cur), 1 }); break;
		case NK_BATCHNORM: case NK_LAYERNORM: case NK_FEATURE_TAP: k = layer_channelwise(&g, l, b); break;
		case NK_CONVNEXT: k = layer_convnext(&g, l, b); break;
		case NK_UIB: k = layer_uib(&g, l, b); break;
		case NK_RESNET: k = layer_resnet(&g, l, b); break;
		case NK_YOLOX_HEAD: k = layer_head(&g, l, b); break;
		default: k = layer_pafpn(&g, l, b); break;
		}
		if (k != FMT_OK)
			return k;
		l->n_pairs = g.next_pair - l->first_pair;
		l->out = g.cur;
		if (nm->quantized && (k = check_int8_layer(&g, l)) != FMT_OK)
			return k;
	}
	if (g.next_pair != nm->n_weights)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the layers use %u weight/bias pairs but the catalog holds %u",
				g.next_pair, nm->n_weights);
	nm->output = g.cur;
	nm->output_count = nk_shape_count(g.cur);
	fmt_nk_count_work(nm);
	return FMT_OK;
}

fmt_kind fmt_nk_parse(nk_model *nm, const void *data, uint64_t size, fmt_err *e)
{
	memset(nm, 0, sizeof *nm);
	nm->base = data;
	nm->size = size;
	if ((uintptr_t)data % 4)
		return fmt_fail(e, FMT_INTERNAL, ".nk bytes must be 4-byte aligned in memory");
	uint64_t off = NK_HEADER_BYTES;
	fmt_kind k = parse_header(nm, e);
	if (k == FMT_OK)
		k = input_shape(nm, e);
	if (k == FMT_OK)
		k = parse_layers(nm, &off, e);
	if (k == FMT_OK) {
		nm->weights = calloc(nm->n_weights + 1, sizeof *nm->weights);
		nm->biases = calloc(nm->n_biases + 1, sizeof *nm->biases);
		if (!nm->weights || !nm->biases)
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	nm->catalog_offset = off;
	if (k == FMT_OK)
		k = parse_catalog(nm, nm->weights, nm->n_weights, "weight", &off, e);
	if (k == FMT_OK)
		k = parse_catalog(nm, nm->biases, nm->n_biases, "bias", &off, e);
	if (k == FMT_OK)
		k = check_dtypes(nm, e);
	if (k == FMT_OK && nm->quantized)
		k = parse_quan(nm, &off, e);
	nm->meta_end = off;
	if (k == FMT_OK)
		k = place_payload(nm, e);
	if (k == FMT_OK && (nm->flags & NK_FLAG_TESTS))
		k = parse_tcas(nm, e);
	if (k == FMT_OK)
		k = build_graph(nm, e);
	if (k != FMT_OK)
		fmt_nk_free(nm);
	return k;
}

fmt_kind fmt_nk_parse_own(nk_model *nm, const void *data, uint64_t size, const char *what, fmt_err *e)
{
	fmt_kind k = fmt_nk_parse(nm, data, size, e);
	if (k == FMT_OK || k == FMT_IO)
		return k;
	char why[sizeof e->msg];
	snprintf(why, sizeof why, "%s", e->msg);   /* e->msg is written again */
	return fmt_fail(e, FMT_INTERNAL, "%s does not parse: %s", what, why);
}
