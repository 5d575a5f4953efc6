/* The .nk writer: a float network (nk_spec) as upstream's writer lays it out: header, layer
 * records, weight then bias catalogs, payloads (specs/nk.md §2-§5, §9). Version 3, no tests
 * section (flags 0). */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/nk.h"

static const uint32_t record_bytes[] = {
	[NK_DENSE] = 16, [NK_CONV2D] = 24, [NK_MAXPOOL] = 16, [NK_FLATTEN] = 4, [NK_AVGPOOL] = 16,
	[NK_BATCHNORM] = 12, [NK_DEPTHWISE] = 24, [NK_CONVNEXT] = 16, [NK_UIB] = 24, [NK_RESNET] = 16,
	[NK_LAYERNORM] = 16,
};

nk_spec_tensor fmt_nk_spec_tensor(uint8_t rank, const uint32_t dims[4])
{
	nk_spec_tensor t = { .rank = rank };
	uint64_t count = 1;
	for (int d = 0; d < rank && d < 4; d++) {
		t.dims[d] = dims[d];
		if (fmt_mul_u64(count, dims[d], &count) || count > UINT32_MAX)
			return t;
	}
	t.count = (uint32_t)count;
	t.data = calloc(count ? count : 1, sizeof(float));
	return t;
}

fmt_kind fmt_nk_spec_add_layer(nk_spec *s, const nk_spec_layer *l, fmt_err *e)
{
	if (s->n_layers == s->cap_layers) {
		uint32_t cap = s->cap_layers ? 2 * s->cap_layers : 8;
		nk_spec_layer *p = realloc(s->layers, cap * sizeof *p);
		if (!p)
			return fmt_fail(e, FMT_IO, "out of memory");
		s->layers = p;
		s->cap_layers = cap;
	}
	nk_spec_layer *nl = &s->layers[s->n_layers++];
	*nl = *l;
	nl->first_pair = s->n_pairs;
	nl->n_pairs = 0;
	return FMT_OK;
}

fmt_kind fmt_nk_spec_add_pair(nk_spec *s, nk_spec_tensor *w, nk_spec_tensor *b, fmt_err *e)
{
	if (!w->data || !b->data || !s->n_layers) {
		free(w->data);
		free(b->data);
		w->data = b->data = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	if (s->n_pairs == s->cap_pairs) {
		uint32_t cap = s->cap_pairs ? 2 * s->cap_pairs : 8;
		nk_spec_tensor *pw = realloc(s->weights, cap * sizeof *pw);
		if (pw)
			s->weights = pw;
		nk_spec_tensor *pb = pw ? realloc(s->biases, cap * sizeof *pb) : NULL;
		if (!pb) {
			free(w->data);
			free(b->data);
			w->data = b->data = NULL;
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		s->biases = pb;
		s->cap_pairs = cap;
	}
	s->weights[s->n_pairs] = *w;
	s->biases[s->n_pairs] = *b;
	s->n_pairs++;
	s->layers[s->n_layers - 1].n_pairs++;
	w->data = b->data = NULL;
	return FMT_OK;
}

void fmt_nk_spec_remove_layer(nk_spec *s, uint32_t index)
{
	nk_spec_layer *l = &s->layers[index];
	uint32_t first = l->first_pair, n = l->n_pairs;
	for (uint32_t i = first; i < first + n; i++) {
		free(s->weights[i].data);
		free(s->biases[i].data);
	}
	memmove(&s->weights[first], &s->weights[first + n], (s->n_pairs - first - n) * sizeof *s->weights);
	memmove(&s->biases[first], &s->biases[first + n], (s->n_pairs - first - n) * sizeof *s->biases);
	s->n_pairs -= n;
	memmove(l, l + 1, (s->n_layers - index - 1) * sizeof *l);
	s->n_layers--;
	for (uint32_t i = index; i < s->n_layers; i++)
		s->layers[i].first_pair -= n;
}

void fmt_nk_spec_free(nk_spec *s)
{
	for (uint32_t i = 0; i < s->n_pairs; i++) {
		free(s->weights[i].data);
		free(s->biases[i].data);
	}
	free(s->weights);
	free(s->biases);
	free(s->layers);
	memset(s, 0, sizeof *s);
}

static void wr_f32(uint8_t *p, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	fmt_wr_u32(p, u);
}

static int u8_field(uint32_t v, uint8_t *out)
{
	*out = (uint8_t)v;
	return v > 255;
}

/* The bottom/right pads as the nibble pair of conv's pad_extra (§4.2). */
static int pad_nibbles(const nk_spec_layer *l, uint8_t *out)
{
	if (l->pad_b < l->pad_t || l->pad_r < l->pad_l || l->pad_b - l->pad_t > 15 || l->pad_r - l->pad_l > 15)
		return 1;
	*out = (uint8_t)(((l->pad_r - l->pad_l) << 4) | (l->pad_b - l->pad_t));
	return 0;
}

/* Conv2d and depthwise share a record; depthwise's byte 15 is the kernel width, or the pad
 * nibbles when the pads are asymmetric (§4.3). */
static int conv_record(const nk_spec_layer *l, uint8_t *b)
{
	uint8_t act_pad[4] = { l->act, 0, 0, 0 };
	int bad = u8_field(l->pad_t, &act_pad[1]) | u8_field(l->pad_l, &act_pad[2]);
	int symmetric = l->pad_b == l->pad_t && l->pad_r == l->pad_l;
	if (l->kind == NK_DEPTHWISE && symmetric)
		bad |= u8_field(l->kw, &act_pad[3]);
	else
		bad |= pad_nibbles(l, &act_pad[3]);
	fmt_wr_u32(b + 4, l->kh);
	fmt_wr_u32(b + 8, l->stride);
	fmt_wr_u32(b + 12, l->units);
	memcpy(b + 16, act_pad, 4);
	wr_f32(b + 20, l->alpha);
	return bad;
}

static int pool_record(const nk_spec_layer *l, uint8_t *b)
{
	int bad = l->pad_b < l->pad_t || l->pad_r < l->pad_l || l->pad_b - l->pad_t > 15 ||
		  l->pad_r - l->pad_l > 15 || (l->kw != l->kh && l->kw > 255);
	uint32_t meta = (l->kw != l->kh ? l->kw : 0) | ((l->pad_b - l->pad_t) << 8) | ((l->pad_r - l->pad_l) << 12);
	fmt_wr_u32(b + 4, l->kh);
	fmt_wr_u32(b + 8, l->stride);
	bad |= u8_field(l->pad_t, &b[12]) | u8_field(l->pad_l, &b[13]);
	fmt_wr_u16(b + 14, (uint16_t)meta);
	return bad;
}

/* The record of l at b (record_bytes[kind] zeroed bytes): 1 when a field does not fit. */
static int layer_record(const nk_spec_layer *l, uint8_t *b)
{
	b[0] = l->kind;
	switch (l->kind) {
	case NK_DENSE:
		fmt_wr_u32(b + 4, l->units);
		b[8] = l->act;
		wr_f32(b + 12, l->alpha);
		return 0;
	case NK_CONV2D:
	case NK_DEPTHWISE:
		return conv_record(l, b);
	case NK_MAXPOOL:
	case NK_AVGPOOL:
		return pool_record(l, b);
	case NK_BATCHNORM:
		fmt_wr_u32(b + 4, l->units);
		return 0;
	case NK_CONVNEXT:
	case NK_LAYERNORM:
		fmt_wr_u32(b + 4, l->units);
		wr_f32(b + 12, l->eps);
		return 0;
	case NK_UIB:
		fmt_wr_u32(b + 4, l->in_ch);
		fmt_wr_u32(b + 8, l->out_ch);
		b[12] = l->start_dw;
		b[13] = l->middle_dw;
		b[14] = l->uib_stride;
		b[15] = l->middle_down;
		wr_f32(b + 16, l->expand_ratio);
		return 0;
	case NK_RESNET:
		fmt_wr_u32(b + 4, l->in_ch);
		fmt_wr_u32(b + 8, l->out_ch);
		return u8_field(l->stride, &b[12]);
	default:
		return 0;
	}
}

static void catalog_entry(const nk_spec_tensor *t, uint8_t *b)
{
	b[0] = t->rank;
	b[1] = NK_F32;
	for (int d = 0; d < 4; d++)
		fmt_wr_u32(b + 4 + 4 * d, d < t->rank ? t->dims[d] : 0);
	fmt_wr_u32(b + 20, t->count);
}

/* The sizes of the parts; InvalidFormat past the format's limits. */
static fmt_kind measure(const nk_spec *s, uint64_t *records, uint64_t *wbytes, uint64_t *bbytes, fmt_err *e)
{
	if (s->n_layers == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the network has no layers");
	if (s->n_layers > NK_MAX_LAYERS)
		return fmt_fail(e, FMT_UNSUPPORTED, "%u layers: a .nk file holds at most %u", s->n_layers,
				NK_MAX_LAYERS);
	if (s->n_pairs > NK_MAX_TENSORS)
		return fmt_fail(e, FMT_UNSUPPORTED, "%u weight tensors: a .nk file holds at most %u", s->n_pairs,
				NK_MAX_TENSORS);
	*records = *wbytes = *bbytes = 0;
	for (uint32_t i = 0; i < s->n_layers; i++) {
		unsigned kind = s->layers[i].kind;
		if (kind >= sizeof record_bytes / sizeof *record_bytes || !record_bytes[kind])
			return fmt_fail(e, FMT_INTERNAL, "layer %u: kind %u has no writer", i, kind);
		*records += record_bytes[kind];
	}
	for (uint32_t i = 0; i < s->n_pairs; i++) {
		*wbytes += 4ull * s->weights[i].count;
		*bbytes += 4ull * s->biases[i].count;
	}
	if (*wbytes > UINT32_MAX || *bbytes > UINT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "%llu bytes of weights: a .nk payload holds at most 4 GiB",
				(unsigned long long)*wbytes);
	return FMT_OK;
}

static void write_header(const nk_spec *s, uint64_t wbytes, uint64_t bbytes, uint8_t *b)
{
	memcpy(b, "NKIT", 4);
	fmt_wr_u32(b + 4, 3);
	b[8] = s->network;
	b[9] = s->network == NK_MLP ? 2 : 3;
	for (int d = 0; d < (s->network == NK_MLP ? 2 : 3); d++)
		fmt_wr_u32(b + 12 + 4 * d, s->input_shape[d]);
	fmt_wr_u32(b + 28, s->n_layers);
	fmt_wr_u32(b + 32, s->n_pairs);
	fmt_wr_u32(b + 36, s->n_pairs);
	fmt_wr_u32(b + 40, (uint32_t)wbytes);
	fmt_wr_u32(b + 44, (uint32_t)bbytes);
}

static uint8_t *write_payload(const nk_spec_tensor *t, uint32_t n, uint8_t *p)
{
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < t[i].count; j++, p += 4)
			wr_f32(p, t[i].data[j]);
	return p;
}

fmt_kind fmt_nk_write_bytes(const nk_spec *s, uint8_t **out, size_t *n, fmt_err *e)
{
	uint64_t records = 0, wbytes = 0, bbytes = 0;
	fmt_kind k = measure(s, &records, &wbytes, &bbytes, e);
	if (k != FMT_OK)
		return k;
	uint64_t meta_end = NK_HEADER_BYTES + records + 48ull * s->n_pairs, payload = meta_end;
	fmt_align_up_u64(meta_end, 4, &payload);
	uint64_t total = payload + wbytes + bbytes;
	uint8_t *b = calloc(1, total);
	if (!b)
		return fmt_fail(e, FMT_IO, "out of memory");
	write_header(s, wbytes, bbytes, b);
	uint8_t *p = b + NK_HEADER_BYTES;
	for (uint32_t i = 0; i < s->n_layers; p += record_bytes[s->layers[i].kind], i++)
		if (layer_record(&s->layers[i], p)) {
			free(b);
			return fmt_fail(e, FMT_UNSUPPORTED, "layer %u (%s): a pad, kernel or stride does not fit its "
					".nk field (pads up to 255, bottom/right at most 15 more than top/left)", i,
					fmt_nk_kind_name(s->layers[i].kind));
		}
	for (uint32_t i = 0; i < s->n_pairs; i++, p += 24)
		catalog_entry(&s->weights[i], p);
	for (uint32_t i = 0; i < s->n_pairs; i++, p += 24)
		catalog_entry(&s->biases[i], p);
	p = write_payload(s->weights, s->n_pairs, b + payload);
	write_payload(s->biases, s->n_pairs, p);
	*out = b;
	*n = (size_t)total;
	return FMT_OK;
}
