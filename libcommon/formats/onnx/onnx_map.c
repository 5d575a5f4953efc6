/* An ONNX graph as a .nk network, mapped as upstream's converter (onnx_convert.py) maps it:
 * NCHW input -> NHWC [H, W, C] (rank 4) or an MLP [batch, features] (rank 2); Gemm and MatMul
 * (+ an Add of an initializer) -> dense; Conv -> conv2d, depthwise, or a grouped conv expanded
 * into a conv2d; pools; BatchNormalization folded to scale and shift in float64; the activation
 * an op's only consumer applies fused into its record; Flatten/Reshape -> flatten; layout-only
 * ops skipped. A residual Add that closes a ResNet basic block, a MobileNetV4 UIB or a
 * ConvNeXt V2 block becomes that block (onnx_fuse.c) unless --no-fuse. Anything else is
 * Unsupported naming the op and the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_map.h"

#define MAX_MAPPED_NODES 4096   /* a .nk network has at most 100 layers */
#define MAX_EXPANDED_FLOATS (1ull << 28)

const char *fmt_onnx_node_label(const FmtOnnx__NodeProto *n)
{
	return n->name && *n->name ? n->name : "(unnamed)";
}

fmt_kind fmt_onnx_unsupported(mapper *m, const FmtOnnx__NodeProto *n, const char *why)
{
	return fmt_fail(m->e, FMT_UNSUPPORTED, "%s node '%s': %s", n->op_type, fmt_onnx_node_label(n), why);
}

static const FmtOnnx__AttributeProto *attr(const FmtOnnx__NodeProto *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
			return n->attribute[i];
	return NULL;
}

int64_t fmt_onnx_attr_int(const FmtOnnx__NodeProto *n, const char *name, int64_t def)
{
	const FmtOnnx__AttributeProto *a = attr(n, name);
	return a && a->has_i ? a->i : def;
}

float fmt_onnx_attr_float(const FmtOnnx__NodeProto *n, const char *name, float def)
{
	const FmtOnnx__AttributeProto *a = attr(n, name);
	return a && a->has_f ? a->f : def;
}

/* The ints attribute name: its count (0 when absent) and values. */
size_t fmt_onnx_attr_ints(const FmtOnnx__NodeProto *n, const char *name, const int64_t **v)
{
	const FmtOnnx__AttributeProto *a = attr(n, name);
	*v = a ? a->ints : NULL;
	return a ? a->n_ints : 0;
}

static const char *attr_string(const FmtOnnx__NodeProto *n, const char *name, char *buf, size_t size)
{
	const FmtOnnx__AttributeProto *a = attr(n, name);
	if (!a || !a->has_s)
		return NULL;
	size_t len = a->s.len < size - 1 ? a->s.len : size - 1;
	memcpy(buf, a->s.data, len);
	buf[len] = '\0';
	return buf;
}

/* ---- the graph's wiring ---- */

/* Each name of names[0..n) (NULL ones skipped) into set, first[] set to node for a new one,
 * count[] (when given) counting every occurrence. */
static int index_names(fmt_nameset *set, char *const *names, size_t n, int node, int *first, int *count)
{
	for (size_t j = 0; j < n; j++) {
		if (!names[j])
			continue;
		int r = fmt_nameset_add(set, names[j]);
		if (r < 0)
			return -1;
		long at = r ? (long)set->used - 1 : fmt_nameset_find(set, names[j]);
		if (r)
			first[at] = node;
		if (count)
			count[at]++;
	}
	return 0;
}

static size_t count_names(const mapper *m, int outputs)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n_nodes; i++)
		n += outputs ? m->nodes[i]->n_output : m->nodes[i]->n_input;
	return n;
}

fmt_kind fmt_onnx_index_wiring(mapper *m)
{
	onnx_wiring *w = &m->wires;
	size_t n_out = count_names(m, 1), n_in = count_names(m, 0);
	w->producer = calloc(n_out ? n_out : 1, sizeof *w->producer);
	w->first_reader = calloc(n_in ? n_in : 1, sizeof *w->first_reader);
	w->readers = calloc(n_in ? n_in : 1, sizeof *w->readers);
	int ok = w->producer && w->first_reader && w->readers;
	for (size_t i = 0; ok && i < m->n_nodes; i++) {
		const FmtOnnx__NodeProto *n = m->nodes[i];
		ok = index_names(&w->outputs, n->output, n->n_output, (int)i, w->producer, NULL) == 0 &&
		     index_names(&w->inputs, n->input, n->n_input, (int)i, w->first_reader, w->readers) == 0;
	}
	return ok ? FMT_OK : fmt_fail(m->e, FMT_IO, "out of memory");
}

void fmt_onnx_wiring_free(onnx_wiring *w)
{
	fmt_nameset_free(&w->outputs);
	fmt_nameset_free(&w->inputs);
	free(w->producer);
	free(w->first_reader);
	free(w->readers);
	memset(w, 0, sizeof *w);
}

/* The first node that outputs tensor, or -1. */
int fmt_onnx_producer(const mapper *m, const char *tensor)
{
	long at = tensor ? fmt_nameset_find(&m->wires.outputs, tensor) : -1;
	return at >= 0 ? m->wires.producer[at] : -1;
}

/* How many inputs of all nodes read tensor, and the first such node. */
int fmt_onnx_consumers(const mapper *m, const char *tensor, int *first)
{
	long at = tensor ? fmt_nameset_find(&m->wires.inputs, tensor) : -1;
	*first = at >= 0 ? m->wires.first_reader[at] : -1;
	return at >= 0 ? m->wires.readers[at] : 0;
}

/* An initializer by name, through Identity nodes (exporters alias equal tensors). */
const onnx_init *fmt_onnx_init_of(const mapper *m, const char *name)
{
	for (int depth = 0; name && depth < 16; depth++) {
		const onnx_init *in = fmt_onnx_init_find(m->g, name);
		if (in)
			return in;
		int p = fmt_onnx_producer(m, name);
		if (p < 0 || strcmp(m->nodes[p]->op_type, "Identity") != 0 || m->nodes[p]->n_input < 1)
			return NULL;
		name = m->nodes[p]->input[0];
	}
	return NULL;
}

const char *fmt_onnx_input(const FmtOnnx__NodeProto *n, size_t i)
{
	return i < n->n_input && n->input[i] && *n->input[i] ? n->input[i] : NULL;
}

/* ---- activations ---- */

/* Clip(0, 6) from its min/max inputs (opset 11+) or attributes (older). */
static int clip_is_relu6(const mapper *m, const FmtOnnx__NodeProto *n)
{
	const onnx_init *lo = fmt_onnx_init_of(m, fmt_onnx_input(n, 1)), *hi = fmt_onnx_init_of(m, fmt_onnx_input(n, 2));
	if (lo && hi)
		return lo->f32 && hi->f32 && lo->count >= 1 && hi->count >= 1 && lo->f32[0] == 0.0f && hi->f32[0] == 6.0f;
	return n->n_input == 1 && attr(n, "min") && attr(n, "max") && fmt_onnx_attr_float(n, "min", 1) == 0.0f &&
	       fmt_onnx_attr_float(n, "max", 0) == 6.0f;
}

/* The .nk activation code of an activation node, or -1 for other ops (and Clips other than
 * ReLU6, which no .nk activation is). */
int fmt_onnx_activation(const mapper *m, const FmtOnnx__NodeProto *n, float *alpha)
{
	*alpha = 0.01f;
	const char *op = n->op_type;
	if (strcmp(op, "Relu") == 0)
		return NK_ACT_RELU;
	if (strcmp(op, "Sigmoid") == 0)
		return NK_ACT_SIGMOID;
	if (strcmp(op, "Tanh") == 0)
		return NK_ACT_TANH;
	if (strcmp(op, "Softmax") == 0)
		return NK_ACT_SOFTMAX;
	if (strcmp(op, "LeakyRelu") == 0) {
		*alpha = fmt_onnx_attr_float(n, "alpha", 0.01f);
		return NK_ACT_LEAKY;
	}
	if (strcmp(op, "Clip") == 0 && clip_is_relu6(m, n))
		return NK_ACT_RELU6;
	return -1;
}

static int is_activation_op(const char *op)
{
	static const char *const ops[] = { "Relu", "Sigmoid", "Tanh", "Softmax", "LeakyRelu", "Clip", NULL };
	for (int i = 0; ops[i]; i++)
		if (strcmp(op, ops[i]) == 0)
			return 1;
	return 0;
}

/* The activation applied to the output of tensor when its only reader is an activation node
 * (marked consumed); NK_ACT_NONE otherwise. */
static uint8_t take_activation(mapper *m, const char *tensor, float *alpha)
{
	int reader;
	*alpha = 0.01f;
	if (fmt_onnx_consumers(m, tensor, &reader) != 1 || m->consumed[reader])
		return NK_ACT_NONE;
	int act = fmt_onnx_activation(m, m->nodes[reader], alpha);
	if (act < 0)
		return NK_ACT_NONE;
	m->consumed[reader] = 1;
	m->last_output = m->nodes[reader]->n_output ? m->nodes[reader]->output[0] : NULL;
	return (uint8_t)act;
}

/* ---- layers ---- */

static fmt_kind add_layer(mapper *m, const nk_spec_layer *l)
{
	return fmt_nk_spec_add_layer(m->s, l, m->e);
}

static fmt_kind add_pair(mapper *m, nk_spec_tensor *w, nk_spec_tensor *b)
{
	return fmt_nk_spec_add_pair(m->s, w, b, m->e);
}

/* A bias of count values from an initializer (any shape of that many values) or zeros. */
fmt_kind fmt_onnx_bias(mapper *m, const FmtOnnx__NodeProto *n, const onnx_init *in, uint32_t count,
		       nk_spec_tensor *out)
{
	uint32_t dims[4] = { count };
	*out = fmt_nk_spec_tensor(1, dims);
	if (!out->data)
		return fmt_fail(m->e, FMT_IO, "out of memory");
	if (!in)
		return FMT_OK;
	if (!in->f32 || in->count != count) {
		free(out->data);
		out->data = NULL;
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "%s node '%s': bias '%s' has %llu values, not %u",
				n->op_type, fmt_onnx_node_label(n), in->name, (unsigned long long)in->count, count);
	}
	memcpy(out->data, in->f32, count * sizeof(float));
	return FMT_OK;
}

/* The float weight input i of n, of rank rank. */
const onnx_init *fmt_onnx_weight(mapper *m, const FmtOnnx__NodeProto *n, size_t i, int rank)
{
	const onnx_init *w = fmt_onnx_init_of(m, fmt_onnx_input(n, i));
	if (!w || !w->f32 || w->rank != rank || w->count > UINT32_MAX)
		return NULL;
	for (int d = 0; d < rank; d++)
		if (!w->dims[d])
			return NULL;
	return w;
}

static uint32_t out_dim(uint32_t n, uint32_t k, uint32_t s, uint32_t p0, uint32_t p1)
{
	uint64_t padded = (uint64_t)n + p0 + p1;
	return padded < k || !s ? 0 : (uint32_t)((padded - k) / s + 1);
}

/* Spatial fields shared by Conv and the pools: stride (one value for both axes), pads,
 * dilations 1 and no auto_pad. */
typedef struct geometry {
	uint32_t kh, kw, stride, pt, pl, pb, pr;
} geometry;

static fmt_kind take_geometry(mapper *m, const FmtOnnx__NodeProto *n, uint32_t kh, uint32_t kw, uint32_t def_stride,
			      geometry *gm)
{
	const int64_t *v;
	char pad_mode[32];
	size_t nv = fmt_onnx_attr_ints(n, "strides", &v);
	gm->kh = kh;
	gm->kw = kw;
	gm->stride = nv ? (uint32_t)v[0] : def_stride;
	if (nv && (v[0] < 1 || v[0] > 255 || (nv > 1 && v[1] != v[0])))
		return fmt_onnx_unsupported(m, n, "strides must be one value from 1 to 255 for both axes in a .nk layer");
	nv = fmt_onnx_attr_ints(n, "dilations", &v);
	for (size_t i = 0; i < nv; i++)
		if (v[i] != 1)
			return fmt_onnx_unsupported(m, n, "dilations other than 1 have no .nk form");
	const char *mode = attr_string(n, "auto_pad", pad_mode, sizeof pad_mode);
	if (mode && strcmp(mode, "NOTSET") != 0 && strcmp(mode, "VALID") != 0)
		return fmt_onnx_unsupported(m, n, "auto_pad SAME_* is not converted: give explicit pads");
	nv = fmt_onnx_attr_ints(n, "pads", &v);
	uint32_t p[4] = { 0 };
	for (size_t i = 0; i < nv && i < 4; i++) {
		if (v[i] < 0 || v[i] > 255)
			return fmt_onnx_unsupported(m, n, "pads must be from 0 to 255");
		p[i] = (uint32_t)v[i];
	}
	if (nv == 2 || nv == 3) {   /* upstream: two values are top and left, repeated */
		p[2] = p[0];
		p[3] = p[1];
	}
	gm->pt = p[0];
	gm->pl = p[1];
	gm->pb = p[2];
	gm->pr = p[3];
	return FMT_OK;
}

static fmt_kind need_spatial(mapper *m, const FmtOnnx__NodeProto *n)
{
	if (m->s->network != NK_CNN)
		return fmt_onnx_unsupported(m, n, "a spatial op in an MLP (a rank-2 input)");
	if (m->flat)
		return fmt_onnx_unsupported(m, n, "a spatial op after the tensor was flattened");
	return FMT_OK;
}

static fmt_kind move_spatial(mapper *m, const FmtOnnx__NodeProto *n, const geometry *gm)
{
	uint32_t h = out_dim(m->h, gm->kh, gm->stride, gm->pt, gm->pb), w = out_dim(m->w, gm->kw, gm->stride, gm->pl, gm->pr);
	if (!h || !w)
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "%s node '%s': a %ux%u window does not fit the %ux%u input",
				n->op_type, fmt_onnx_node_label(n), gm->kh, gm->kw, m->h, m->w);
	m->h = h;
	m->w = w;
	return FMT_OK;
}

/* ONNX [O, I, kh, kw] -> .nk [O, kh, kw, I], placing group g's I inputs at g * I of in_c. */
static nk_spec_tensor conv_weight(const onnx_init *w, uint32_t in_c, uint32_t groups)
{
	uint32_t o_n = (uint32_t)w->dims[0], i_n = (uint32_t)w->dims[1], kh = (uint32_t)w->dims[2], kw = (uint32_t)w->dims[3];
	uint32_t dims[4] = { o_n, kh, kw, in_c };
	nk_spec_tensor t = fmt_nk_spec_tensor(4, dims);
	uint32_t out_per_group = o_n / groups;
	for (uint32_t o = 0; t.data && o < o_n; o++)
		for (uint32_t i = 0; i < i_n; i++)
			for (uint32_t y = 0; y < kh; y++)
				for (uint32_t x = 0; x < kw; x++) {
					uint32_t col = (o / out_per_group) * i_n + i;
					t.data[(((uint64_t)o * kh + y) * kw + x) * in_c + col] =
						w->f32[(((uint64_t)o * i_n + i) * kh + y) * kw + x];
				}
	return t;
}

fmt_kind fmt_onnx_conv_pair(mapper *m, const FmtOnnx__NodeProto *n, const onnx_init *w, int depthwise,
			    uint32_t in_c, uint32_t groups)
{
	nk_spec_tensor wt, bt;
	uint32_t o_n = (uint32_t)w->dims[0];
	if (depthwise) {
		uint32_t dims[4] = { o_n, (uint32_t)w->dims[2], (uint32_t)w->dims[3] };
		wt = fmt_nk_spec_tensor(3, dims);
		if (wt.data)
			memcpy(wt.data, w->f32, w->count * sizeof(float));
	} else {
		wt = conv_weight(w, in_c, groups);
	}
	fmt_kind k = fmt_onnx_bias(m, n, fmt_onnx_init_of(m, fmt_onnx_input(n, 2)), o_n, &bt);
	if (k != FMT_OK) {
		free(wt.data);
		return k;
	}
	return add_pair(m, &wt, &bt);
}

static fmt_kind map_conv(mapper *m, const FmtOnnx__NodeProto *n)
{
	fmt_kind k = need_spatial(m, n);
	const onnx_init *w = fmt_onnx_weight(m, n, 1, 4);
	if (k != FMT_OK)
		return k;
	if (!w)
		return fmt_onnx_unsupported(m, n, "the weight must be a 4-D float initializer");
	int64_t groups = fmt_onnx_attr_int(n, "group", 1);
	uint32_t o_n = (uint32_t)w->dims[0], kh = (uint32_t)w->dims[2], kw = (uint32_t)w->dims[3];
	if (groups < 1 || w->dims[1] * (uint64_t)groups != m->c || o_n % groups)
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "Conv node '%s': weight %llux%llu with group %lld does not "
				"fit %u input channels", fmt_onnx_node_label(n), (unsigned long long)w->dims[0],
				(unsigned long long)w->dims[1], (long long)groups, m->c);
	int depthwise = groups > 1 && groups == m->c && o_n == m->c;
	if (!depthwise && kh != kw)
		return fmt_onnx_unsupported(m, n, "a conv2d kernel is square in a .nk file");
	if (!depthwise && groups > 1 && (uint64_t)o_n * kh * kw * m->c > MAX_EXPANDED_FLOATS)
		return fmt_onnx_unsupported(m, n, "expanding this grouped conv would take more than 1 GiB of weights");
	geometry gm;
	if ((k = take_geometry(m, n, kh, kw, 1, &gm)) != FMT_OK)
		return k;
	nk_spec_layer l = { .kind = depthwise ? NK_DEPTHWISE : NK_CONV2D, .kh = kh, .kw = kw, .stride = gm.stride,
			    .pad_t = gm.pt, .pad_l = gm.pl, .pad_b = gm.pb, .pad_r = gm.pr, .units = o_n };
	m->last_output = n->output[0];
	l.act = take_activation(m, n->output[0], &l.alpha);
	uint32_t in_c = m->c;
	if ((k = move_spatial(m, n, &gm)) != FMT_OK || (k = add_layer(m, &l)) != FMT_OK)
		return k;
	m->c = o_n;
	return fmt_onnx_conv_pair(m, n, w, depthwise, in_c, (uint32_t)groups);
}

static fmt_kind map_pool(mapper *m, const FmtOnnx__NodeProto *n, int max, int global)
{
	fmt_kind k = need_spatial(m, n);
	if (k != FMT_OK)
		return k;
	if (fmt_onnx_attr_int(n, "ceil_mode", 0) != 0)
		return fmt_onnx_unsupported(m, n, "ceil_mode has no .nk form");
	if (n->n_output > 1)
		return fmt_onnx_unsupported(m, n, "the indices output has no .nk form");
	geometry gm = { .kh = m->h, .kw = m->w, .stride = 1 };
	if (!global) {
		const int64_t *ks;
		size_t nk = fmt_onnx_attr_ints(n, "kernel_shape", &ks);
		uint32_t kh = nk ? (uint32_t)ks[0] : 2, kw = nk > 1 ? (uint32_t)ks[1] : kh;
		if (nk && (ks[0] < 1 || (nk > 1 && ks[1] < 1) || ks[0] > UINT32_MAX || (nk > 1 && ks[1] > 255)))
			return fmt_onnx_unsupported(m, n, "kernel_shape out of range");
		if ((k = take_geometry(m, n, kh, kw, kh, &gm)) != FMT_OK)
			return k;
		if (!max && fmt_onnx_attr_int(n, "count_include_pad", 0) && (gm.pt | gm.pl | gm.pb | gm.pr))
			return fmt_onnx_unsupported(m, n, "count_include_pad: a .nk average leaves padding out");
	}
	if (gm.kw != gm.kh && gm.kw > 255)
		return fmt_onnx_unsupported(m, n, "a pool width over 255 differing from its height has no .nk form");
	nk_spec_layer l = { .kind = max ? NK_MAXPOOL : NK_AVGPOOL, .kh = gm.kh, .kw = gm.kw, .stride = gm.stride,
			    .pad_t = gm.pt, .pad_l = gm.pl, .pad_b = gm.pb, .pad_r = gm.pr };
	m->last_output = n->output[0];
	if ((k = move_spatial(m, n, &gm)) != FMT_OK)
		return k;
	return add_layer(m, &l);
}

/* scale = gamma / sqrt(var + eps), shift = beta - mean * scale, in float64 as upstream, each
 * rounded to float32 (the shift from the rounded scale). */
fmt_kind fmt_onnx_fold_bn(mapper *m, const FmtOnnx__NodeProto *n, uint32_t channels, nk_spec_tensor *scale,
			  nk_spec_tensor *shift)
{
	const onnx_init *p[4];
	for (int i = 0; i < 4; i++) {
		p[i] = fmt_onnx_init_of(m, fmt_onnx_input(n, (size_t)i + 1));
		if (!p[i] || !p[i]->f32 || p[i]->count != channels)
			return fmt_fail(m->e, FMT_INVALID_FORMAT, "BatchNormalization node '%s': its parameters must be "
					"float initializers of %u values", fmt_onnx_node_label(n), channels);
	}
	double eps = (double)fmt_onnx_attr_float(n, "epsilon", 1e-5f);
	uint32_t dims[4] = { channels };
	*scale = fmt_nk_spec_tensor(1, dims);
	*shift = fmt_nk_spec_tensor(1, dims);
	if (!scale->data || !shift->data) {
		free(scale->data);
		free(shift->data);
		return fmt_fail(m->e, FMT_IO, "out of memory");
	}
	for (uint32_t c = 0; c < channels; c++) {
		double inv_std = 1.0 / sqrt((double)p[3]->f32[c] + eps);
		scale->data[c] = (float)((double)p[0]->f32[c] * inv_std);
		shift->data[c] = (float)((double)p[1]->f32[c] - (double)p[2]->f32[c] * (double)scale->data[c]);
	}
	return FMT_OK;
}

/* Conv, BatchNormalization, activation: a batch norm layer has no activation field, so the
 * scale and shift go into the conv (w * scale, b * scale + shift, as the packager's fold) and
 * the activation onto it. */
static fmt_kind fold_into_conv(mapper *m, const FmtOnnx__NodeProto *n, int reads_conv, uint8_t act, float alpha,
			       nk_spec_tensor *scale, nk_spec_tensor *shift)
{
	nk_spec_layer *conv = m->s->n_layers ? &m->s->layers[m->s->n_layers - 1] : NULL;
	fmt_kind k = FMT_OK;
	if (!reads_conv || !conv || (conv->kind != NK_CONV2D && conv->kind != NK_DEPTHWISE) || conv->act != NK_ACT_NONE ||
	    conv->units != scale->count) {
		k = fmt_onnx_unsupported(m, n, "an activation after a batch norm needs the Conv the batch norm reads "
					 "right before it (to fold into)");
	} else {
		fmt_nk_fold_scale(&m->s->weights[conv->first_pair], &m->s->biases[conv->first_pair], conv->units,
				  scale->data, shift->data);
		conv->act = act;
		conv->alpha = alpha;
	}
	free(scale->data);
	free(shift->data);
	return k;
}

static fmt_kind map_batch_norm(mapper *m, const FmtOnnx__NodeProto *n)
{
	fmt_kind k = need_spatial(m, n);
	if (k != FMT_OK)
		return k;
	nk_spec_tensor scale, shift;
	if ((k = fmt_onnx_fold_bn(m, n, m->c, &scale, &shift)) != FMT_OK)
		return k;
	float alpha;
	const char *in = fmt_onnx_input(n, 0), *prev_out = m->last_output;
	uint8_t act = take_activation(m, n->output[0], &alpha);
	if (act != NK_ACT_NONE)
		return fold_into_conv(m, n, in && prev_out && strcmp(in, prev_out) == 0, act, alpha, &scale, &shift);
	nk_spec_layer l = { .kind = NK_BATCHNORM, .units = m->c };
	m->last_output = n->output[0];
	if ((k = add_layer(m, &l)) != FMT_OK) {
		free(scale.data);
		free(shift.data);
		return k;
	}
	return add_pair(m, &scale, &shift);
}

/* Flatten, and Reshape of a spatial tensor: the .nk flatten copies NHWC; an NCHW flatten (no
 * Transpose to NHWC before it) has the next dense's columns reordered to match. */
static fmt_kind map_flatten(mapper *m, const FmtOnnx__NodeProto *n)
{
	if (m->s->network != NK_CNN || m->flat)
		return FMT_OK;
	if (strcmp(n->op_type, "Flatten") == 0 && fmt_onnx_attr_int(n, "axis", 1) != 1)
		return fmt_onnx_unsupported(m, n, "a flatten keeps the batch axis (axis 1) only");
	nk_spec_layer l = { .kind = NK_FLATTEN };
	m->permute = !m->nhwc && m->c > 1 && (uint64_t)m->h * m->w > 1;
	m->ph = m->h;
	m->pw = m->w;
	m->pc = m->c;
	m->flat = 1;
	m->features = m->h * m->w * m->c;
	m->last_output = n->output[0];
	return add_layer(m, &l);
}

/* Columns in NCHW flatten order moved to the NHWC order of a .nk flatten. */
static void permute_columns(const mapper *m, nk_spec_tensor *w, uint32_t units)
{
	uint32_t in = m->ph * m->pw * m->pc;
	float *row = malloc(in * sizeof(float));
	for (uint32_t o = 0; row && o < units; o++) {
		float *r = w->data + (uint64_t)o * in;
		for (uint32_t c = 0; c < m->pc; c++)
			for (uint32_t yx = 0; yx < m->ph * m->pw; yx++)
				row[yx * m->pc + c] = r[c * m->ph * m->pw + yx];
		memcpy(r, row, in * sizeof(float));
	}
	free(row);
}

/* Gemm (B maybe transposed) and MatMul (B is [in, out]) as [out, in]. */
static fmt_kind dense_weight(mapper *m, const FmtOnnx__NodeProto *n, int transposed, nk_spec_tensor *out, uint32_t *units)
{
	const onnx_init *w = fmt_onnx_weight(m, n, 1, 2);
	if (!w)
		return fmt_onnx_unsupported(m, n, "the weight must be a 2-D float initializer");
	uint32_t rows = (uint32_t)w->dims[0], cols = (uint32_t)w->dims[1];
	uint32_t in = transposed ? cols : rows;
	*units = transposed ? rows : cols;
	uint32_t have = m->s->network == NK_MLP || m->flat ? m->features : 0;
	if (in != have)
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "%s node '%s': weight takes %u inputs, the tensor has %u%s",
				n->op_type, fmt_onnx_node_label(n), in, have, have ? "" : " (not flattened)");
	uint32_t dims[4] = { *units, in };
	*out = fmt_nk_spec_tensor(2, dims);
	if (!out->data)
		return fmt_fail(m->e, FMT_IO, "out of memory");
	for (uint32_t o = 0; o < *units; o++)
		for (uint32_t i = 0; i < in; i++)
			out->data[(uint64_t)o * in + i] = transposed ? w->f32[(uint64_t)o * in + i] : w->f32[(uint64_t)i * *units + o];
	return FMT_OK;
}

/* The Add after a MatMul that adds an initializer: its bias (marked consumed), or NULL. */
static const onnx_init *matmul_bias(mapper *m, const FmtOnnx__NodeProto *n)
{
	int reader;
	if (fmt_onnx_consumers(m, n->output[0], &reader) != 1 || strcmp(m->nodes[reader]->op_type, "Add") != 0)
		return NULL;
	const FmtOnnx__NodeProto *add = m->nodes[reader];
	const char *other = fmt_onnx_input(add, 0) && strcmp(add->input[0], n->output[0]) == 0 ? fmt_onnx_input(add, 1) :
			    fmt_onnx_input(add, 0);
	const onnx_init *b = fmt_onnx_init_of(m, other);
	if (!b || !add->n_output)
		return NULL;
	m->consumed[reader] = 1;
	m->bias_output = add->output[0];
	return b;
}

static fmt_kind map_dense(mapper *m, const FmtOnnx__NodeProto *n, int gemm)
{
	if (gemm && (fmt_onnx_attr_int(n, "transA", 0) || fmt_onnx_attr_float(n, "alpha", 1) != 1.0f ||
		     fmt_onnx_attr_float(n, "beta", 1) != 1.0f))
		return fmt_onnx_unsupported(m, n, "transA, alpha and beta other than 0, 1 and 1 have no .nk form");
	nk_spec_tensor wt, bt;
	uint32_t units = 0;
	fmt_kind k = dense_weight(m, n, gemm && fmt_onnx_attr_int(n, "transB", 0), &wt, &units);
	if (k != FMT_OK)
		return k;
	if (m->permute)
		permute_columns(m, &wt, units);
	m->permute = 0;
	m->bias_output = n->output[0];
	const onnx_init *b = gemm ? fmt_onnx_init_of(m, fmt_onnx_input(n, 2)) : matmul_bias(m, n);
	if (gemm && fmt_onnx_input(n, 2) && !b) {
		free(wt.data);
		return fmt_onnx_unsupported(m, n, "the bias C must be an initializer");
	}
	if ((k = fmt_onnx_bias(m, n, b, units, &bt)) != FMT_OK) {
		free(wt.data);
		return k;
	}
	nk_spec_layer l = { .kind = NK_DENSE, .units = units };
	m->last_output = m->bias_output;
	l.act = take_activation(m, m->bias_output, &l.alpha);
	m->features = units;
	if ((k = add_layer(m, &l)) != FMT_OK) {
		free(wt.data);
		free(bt.data);
		return k;
	}
	return add_pair(m, &wt, &bt);
}

static int is_layout_only(const char *op)
{
	static const char *const ops[] = { "Identity", "Dropout", "Squeeze", "Unsqueeze", "Constant", NULL };
	for (int i = 0; ops[i]; i++)
		if (strcmp(op, ops[i]) == 0)
			return 1;
	return 0;
}

static fmt_kind map_transpose(mapper *m, const FmtOnnx__NodeProto *n)
{
	const int64_t *perm;
	size_t np = fmt_onnx_attr_ints(n, "perm", &perm);
	if (np == 4)
		m->nhwc = perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1;
	return FMT_OK;
}

static fmt_kind map_node(mapper *m, size_t i)
{
	const FmtOnnx__NodeProto *n = m->nodes[i];
	const char *op = n->op_type;
	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0)
		return fmt_onnx_unsupported(m, n, "ops of other domains have no .nk form");
	if (!n->n_output || !n->output[0])
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "%s node '%s' has no output", op, fmt_onnx_node_label(n));
	if (strcmp(op, "Squeeze") == 0 && m->s->network == NK_CNN && !m->flat && (uint64_t)m->h * m->w == 1)
		return map_flatten(m, n);   /* [N, C, 1, 1] -> [N, C]: after a global pool */
	if (is_layout_only(op))
		return FMT_OK;
	if (strcmp(op, "Transpose") == 0)
		return map_transpose(m, n);
	if (strcmp(op, "Flatten") == 0 || strcmp(op, "Reshape") == 0)
		return map_flatten(m, n);
	if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0)
		return map_dense(m, n, op[0] == 'G');
	if (strcmp(op, "Conv") == 0)
		return map_conv(m, n);
	if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0)
		return map_pool(m, n, op[0] == 'M', 0);
	if (strcmp(op, "GlobalMaxPool") == 0 || strcmp(op, "GlobalAveragePool") == 0)
		return map_pool(m, n, op[6] == 'M', 1);
	if (strcmp(op, "BatchNormalization") == 0)
		return map_batch_norm(m, n);
	float alpha;
	if (strcmp(op, "Clip") == 0 && fmt_onnx_activation(m, n, &alpha) < 0)
		return fmt_onnx_unsupported(m, n, "only Clip(0, 6) (ReLU6) has a .nk form");
	if (is_activation_op(op))
		return fmt_onnx_unsupported(m, n, "an activation applies to the output of a Gemm, MatMul or Conv it "
					    "alone reads (a .nk activation is a field of that layer)");
	if (strcmp(op, "Add") == 0)
		return fmt_onnx_unsupported(m, n, m->o->no_fuse ? "a residual Add is converted only as part of a "
					    "fused block (without --no-fuse)" : "this Add closes no ResNet basic block, "
					    "MobileNetV4 UIB or ConvNeXt V2 block");
	return fmt_onnx_unsupported(m, n, "this op has no .nk form");
}

static fmt_kind take_input(mapper *m)
{
	const onnx_graph *g = m->g;
	if (!g->g->n_input)
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "the ONNX graph has no inputs");
	if (g->input_rank == 2) {
		m->s->network = NK_MLP;
		m->s->input_shape[0] = g->input_dims[0] ? (uint32_t)g->input_dims[0] : 1;
		m->s->input_shape[1] = m->features = (uint32_t)g->input_dims[1];
		return m->features && g->input_dims[1] <= UINT32_MAX && g->input_dims[0] <= UINT32_MAX ? FMT_OK :
			fmt_fail(m->e, FMT_UNSUPPORTED, "the input's feature count is not fixed");
	}
	if (g->input_rank != 3 && g->input_rank != 4)
		return fmt_fail(m->e, FMT_UNSUPPORTED, "an input of rank %d (a .nk network takes [N, F] or [N, C, H, W])",
				g->input_rank);
	const uint64_t *d = g->input_rank == 4 ? g->input_dims + 1 : g->input_dims;
	uint64_t c = g->input_rank == 4 ? d[0] : d[2], h = g->input_rank == 4 ? d[1] : d[0], w = g->input_rank == 4 ? d[2] : d[1];
	if (!c || !h || !w || c > 65535 || h > 65535 || w > 65535)
		return fmt_fail(m->e, FMT_UNSUPPORTED, "the input's channels, height and width must be fixed (1 to 65535)");
	m->s->network = NK_CNN;
	m->s->input_shape[0] = m->h = (uint32_t)h;
	m->s->input_shape[1] = m->w = (uint32_t)w;
	m->s->input_shape[2] = m->c = (uint32_t)c;
	return FMT_OK;
}

fmt_kind fmt_onnx_to_nk(const onnx_graph *g, const nk_write_opts *o, nk_spec *out, fmt_err *e)
{
	mapper m = { .g = g, .o = o, .s = out, .e = e, .nodes = g->g->node, .n_nodes = g->g->n_node };
	memset(out, 0, sizeof *out);
	if (m.n_nodes > MAX_MAPPED_NODES)
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu nodes: a .nk network has at most %d layers", m.n_nodes,
				NK_MAX_LAYERS);
	m.consumed = calloc(m.n_nodes ? m.n_nodes : 1, 1);
	m.block_at = calloc(m.n_nodes ? m.n_nodes : 1, sizeof *m.block_at);
	fmt_kind k = m.consumed && m.block_at ? fmt_onnx_index_wiring(&m) : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = take_input(&m);
	if (k == FMT_OK && !o->no_fuse && out->network == NK_CNN)
		k = fmt_onnx_find_blocks(&m);
	for (size_t i = 0; k == FMT_OK && i < m.n_nodes; i++) {
		if (m.block_at[i].kind)
			k = fmt_onnx_emit_block(&m, &m.block_at[i]);
		else if (!m.consumed[i])
			k = map_node(&m, i);
		m.consumed[i] = 1;
	}
	if (k == FMT_OK && out->n_layers == 0)
		k = fmt_fail(e, FMT_UNSUPPORTED, "the graph has no op that makes a .nk layer");
	if (k == FMT_OK && !o->no_optimize)
		k = fmt_nk_optimize(out, e);
	for (size_t i = 0; i < m.n_nodes && m.block_at; i++)
		fmt_onnx_block_free(&m.block_at[i]);
	free(m.block_at);
	free(m.consumed);
	fmt_onnx_wiring_free(&m.wires);
	if (k != FMT_OK)
		fmt_nk_spec_free(out);
	return k;
}
