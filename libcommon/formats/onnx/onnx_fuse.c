/* Residual blocks found where an Add joins a branch back to its input (upstream's onnx_fuse.py):
 * a ResNet basic block (conv3x3 [BN] Relu conv3x3 [BN] + input or a 1x1 projection, Relu), a
 * MobileNetV4 UIB ([dw] 1x1 [BN] Relu [dw [BN] Relu] 1x1 [BN] + input) and a ConvNeXt V2 block
 * (dw7x7, LayerNormalization, 1x1, GELU, GRN, 1x1 + input). Their nodes are consumed and the
 * block is emitted where the Add was. A missing BatchNormalization is an identity one. */
#include <stdlib.h>
#include <string.h>
#include "onnx_map.h"

typedef struct conv_bn {
	int conv, bn;            /* node indices; bn -1 when none */
	const onnx_init *w;
	const char *input;
} conv_bn;

static const FmtOnnx__NodeProto *producer_node(const mapper *m, const char *t, int *index)
{
	*index = fmt_onnx_producer(m, t);
	return *index >= 0 ? m->nodes[*index] : NULL;
}

static int is_op(const FmtOnnx__NodeProto *n, const char *op)
{
	return n && strcmp(n->op_type, op) == 0;
}

/* The conv (and batch norm after it) that make tensor t. */
static int chain(mapper *m, const char *t, conv_bn *c)
{
	int i;
	const FmtOnnx__NodeProto *n = producer_node(m, t, &i);
	c->bn = -1;
	if (is_op(n, "BatchNormalization")) {
		c->bn = i;
		n = producer_node(m, fmt_onnx_input(n, 0), &i);
	}
	if (!is_op(n, "Conv"))
		return 0;
	c->conv = i;
	c->w = fmt_onnx_weight(m, n, 1, 4);
	c->input = fmt_onnx_input(n, 0);
	return c->w && c->input;
}

static int64_t group_of(const mapper *m, const conv_bn *c)
{
	return fmt_onnx_attr_int(m->nodes[c->conv], "group", 1);
}

static int is_depthwise(const mapper *m, const conv_bn *c)
{
	return c->w->dims[1] == 1 && group_of(m, c) == (int64_t)c->w->dims[0] && c->w->dims[0] > 1;
}

/* Kernel k x k, stride, pads p on every side, no dilation. */
static int geometry_is(const mapper *m, const conv_bn *c, uint64_t k, int64_t stride, int64_t pad)
{
	const FmtOnnx__NodeProto *n = m->nodes[c->conv];
	const int64_t *v;
	if (c->w->dims[2] != k || c->w->dims[3] != k)
		return 0;
	size_t nv = fmt_onnx_attr_ints(n, "strides", &v);
	for (size_t i = 0; i < nv; i++)
		if (v[i] != stride)
			return 0;
	if (!nv && stride != 1)
		return 0;
	nv = fmt_onnx_attr_ints(n, "pads", &v);
	for (size_t i = 0; i < nv; i++)
		if (v[i] != pad)
			return 0;
	if (!nv && pad != 0)
		return 0;
	nv = fmt_onnx_attr_ints(n, "dilations", &v);
	for (size_t i = 0; i < nv; i++)
		if (v[i] != 1)
			return 0;
	return 1;
}

static int64_t stride_of(const mapper *m, const conv_bn *c)
{
	const int64_t *v;
	return fmt_onnx_attr_ints(m->nodes[c->conv], "strides", &v) ? v[0] : 1;
}

/* The tensor under the one Relu that makes t (index of the Relu in *relu), or NULL. */
static const char *under_relu(const mapper *m, const char *t, int *relu)
{
	const FmtOnnx__NodeProto *n = producer_node(m, t, relu);
	return is_op(n, "Relu") ? fmt_onnx_input(n, 0) : NULL;
}

/* ---- the pairs of a block ---- */

static nk_spec_tensor conv_tensor(const onnx_init *w, int depthwise)
{
	uint32_t o = (uint32_t)w->dims[0], i = (uint32_t)w->dims[1], kh = (uint32_t)w->dims[2], kw = (uint32_t)w->dims[3];
	uint32_t dw_dims[4] = { o, kh, kw }, dims[4] = { o, kh, kw, i };
	nk_spec_tensor t = fmt_nk_spec_tensor(depthwise ? 3 : 4, depthwise ? dw_dims : dims);
	for (uint32_t a = 0; t.data && a < o; a++)
		for (uint32_t c = 0; c < i; c++)
			for (uint32_t yx = 0; yx < kh * kw; yx++)
				t.data[((uint64_t)a * kh * kw + yx) * i + c] = w->f32[((uint64_t)a * i + c) * kh * kw + yx];
	return t;
}

static fmt_kind put_pair(mapper *m, onnx_block *b, nk_spec_tensor w, nk_spec_tensor bias)
{
	if (!w.data || !bias.data || b->n_pairs >= ONNX_BLOCK_PAIRS) {
		free(w.data);
		free(bias.data);
		return fmt_fail(m->e, FMT_IO, "out of memory");
	}
	b->w[b->n_pairs] = w;
	b->b[b->n_pairs++] = bias;
	return FMT_OK;
}

/* A conv's pair and its batch norm's (an identity one when there is none). */
static fmt_kind put_conv_bn(mapper *m, onnx_block *b, const conv_bn *c, int depthwise)
{
	uint32_t o = (uint32_t)c->w->dims[0], dims[4] = { o };
	const FmtOnnx__NodeProto *conv = m->nodes[c->conv];
	nk_spec_tensor bias;
	fmt_kind k = fmt_onnx_bias(m, conv, fmt_onnx_init_of(m, fmt_onnx_input(conv, 2)), o, &bias);
	if (k == FMT_OK)
		k = put_pair(m, b, conv_tensor(c->w, depthwise), bias);
	nk_spec_tensor scale, shift;
	if (k == FMT_OK && c->bn >= 0)
		k = fmt_onnx_fold_bn(m, m->nodes[c->bn], o, &scale, &shift);
	if (k == FMT_OK && c->bn < 0) {
		scale = fmt_nk_spec_tensor(1, dims);
		shift = fmt_nk_spec_tensor(1, dims);
		for (uint32_t i = 0; scale.data && i < o; i++)
			scale.data[i] = 1.0f;
	}
	return k == FMT_OK ? put_pair(m, b, scale, shift) : k;
}

static void consume(mapper *m, const conv_bn *c)
{
	m->consumed[c->conv] = 1;
	if (c->bn >= 0)
		m->consumed[c->bn] = 1;
}

/* The only reader of the Add's output is a Relu: its index, or -1. */
static int relu_after(const mapper *m, const FmtOnnx__NodeProto *add)
{
	int reader;
	if (!add->n_output || fmt_onnx_consumers(m, add->output[0], &reader) != 1)
		return -1;
	return is_op(m->nodes[reader], "Relu") ? reader : -1;
}

/* ---- ResNet basic block ---- */

static int match_resnet(mapper *m, int add_i, const char *main, const char *skip, onnx_block *b)
{
	conv_bn c1, c2, sc = { .conv = -1 };
	int relu1, relu2 = relu_after(m, m->nodes[add_i]);
	const char *mid;
	if (relu2 < 0 || !chain(m, main, &c2) || !(mid = under_relu(m, c2.input, &relu1)) || !chain(m, mid, &c1))
		return 0;
	int64_t stride = stride_of(m, &c1);
	int identity = strcmp(skip, c1.input) == 0;
	if (!identity && (!chain(m, skip, &sc) || strcmp(sc.input, c1.input) != 0 || !geometry_is(m, &sc, 1, stride, 0)))
		return 0;
	uint32_t in_c = (uint32_t)c1.w->dims[1], out_c = (uint32_t)c1.w->dims[0];
	if (group_of(m, &c1) != 1 || group_of(m, &c2) != 1 || !geometry_is(m, &c1, 3, stride, 1) ||
	    !geometry_is(m, &c2, 3, 1, 1) || c2.w->dims[0] != out_c || c2.w->dims[1] != out_c || stride < 1 ||
	    stride > 255 || identity != (stride == 1 && in_c == out_c))
		return 0;
	b->kind = NK_RESNET;
	b->in_c = in_c;
	b->out_c = out_c;
	b->layer = (nk_spec_layer){ .kind = NK_RESNET, .in_ch = in_c, .out_ch = out_c, .stride = (uint32_t)stride };
	if (put_conv_bn(m, b, &c1, 0) != FMT_OK || put_conv_bn(m, b, &c2, 0) != FMT_OK ||
	    (!identity && put_conv_bn(m, b, &sc, 0) != FMT_OK))
		return -1;
	consume(m, &c1);
	consume(m, &c2);
	if (!identity)
		consume(m, &sc);
	m->consumed[relu1] = m->consumed[relu2] = 1;
	return 1;
}

/* ---- MobileNetV4 UIB (the residual form) ---- */

static int dw_stage_ok(const mapper *m, const conv_bn *c)
{
	uint64_t k = c->w->dims[2];
	return is_depthwise(m, c) && k % 2 == 1 && k <= 255 && geometry_is(m, c, k, 1, (int64_t)(k - 1) / 2);
}

static int match_uib(mapper *m, const char *main, const char *skip, onnx_block *b)
{
	conv_bn proj, mid = { .conv = -1 }, exp, start = { .conv = -1 };
	int relu_mid = -1, relu_exp;
	const char *t;
	if (!chain(m, main, &proj) || !(t = under_relu(m, proj.input, &relu_exp)) || !chain(m, t, &exp))
		return 0;
	if (is_depthwise(m, &exp)) {
		mid = exp;
		relu_mid = relu_exp;
		if (!dw_stage_ok(m, &mid) || !(t = under_relu(m, mid.input, &relu_exp)) || !chain(m, t, &exp))
			return 0;
	}
	if (strcmp(exp.input, skip) != 0 && (!chain(m, exp.input, &start) || !dw_stage_ok(m, &start) ||
					     strcmp(start.input, skip) != 0))
		return 0;
	uint32_t in_c = (uint32_t)exp.w->dims[1], e_c = (uint32_t)exp.w->dims[0], out_c = (uint32_t)proj.w->dims[0];
	float ratio = (float)e_c / (float)in_c;
	if (group_of(m, &exp) != 1 || group_of(m, &proj) != 1 || !geometry_is(m, &exp, 1, 1, 0) ||
	    !geometry_is(m, &proj, 1, 1, 0) || proj.w->dims[1] != e_c || out_c != in_c ||
	    (mid.conv >= 0 && mid.w->dims[0] != e_c) || fmt_nk_make_divisible8((float)in_c * ratio) != e_c)
		return 0;
	b->kind = NK_UIB;
	b->in_c = in_c;
	b->out_c = out_c;
	b->layer = (nk_spec_layer){ .kind = NK_UIB, .in_ch = in_c, .out_ch = out_c, .uib_stride = 1,
				    .start_dw = start.conv >= 0 ? (uint8_t)start.w->dims[2] : 0,
				    .middle_dw = mid.conv >= 0 ? (uint8_t)mid.w->dims[2] : 0,
				    .middle_down = mid.conv >= 0 ? 0 : 1, .expand_ratio = ratio };
	if ((start.conv >= 0 && put_conv_bn(m, b, &start, 1) != FMT_OK) || put_conv_bn(m, b, &exp, 0) != FMT_OK ||
	    (mid.conv >= 0 && put_conv_bn(m, b, &mid, 1) != FMT_OK) || put_conv_bn(m, b, &proj, 0) != FMT_OK)
		return -1;
	consume(m, &proj);
	consume(m, &exp);
	if (mid.conv >= 0)
		consume(m, &mid);
	if (start.conv >= 0)
		consume(m, &start);
	m->consumed[relu_exp] = 1;
	if (relu_mid >= 0)
		m->consumed[relu_mid] = 1;
	return 1;
}

/* ---- ConvNeXt V2 block ---- */

static const char *through_layout(const mapper *m, const char *t)
{
	for (int depth = 0; t && depth < 64; depth++) {
		int i;
		const FmtOnnx__NodeProto *n = producer_node(m, t, &i);
		if (!n || !(is_op(n, "Transpose") || is_op(n, "Identity") || is_op(n, "Squeeze") || is_op(n, "Unsqueeze")))
			return t;
		t = fmt_onnx_input(n, 0);
	}
	return t;
}

static const FmtOnnx__NodeProto *made_by(const mapper *m, const char *t, const char *op)
{
	int i;
	const FmtOnnx__NodeProto *n = producer_node(m, through_layout(m, t), &i);
	return is_op(n, op) ? n : NULL;
}

/* GRN: Add(x, Add(beta, Mul(Mul(gamma, ...), ...))) feeding the projection. */
static int grn_params(const mapper *m, const FmtOnnx__NodeProto *add2, const onnx_init **gamma, const onnx_init **beta)
{
	const FmtOnnx__NodeProto *add1 = NULL, *mul2 = NULL, *mul1 = NULL;
	for (size_t i = 0; i < add2->n_input && !add1; i++)
		add1 = made_by(m, add2->input[i], "Add");
	const char *mul2_t = NULL;
	*beta = *gamma = NULL;
	for (size_t i = 0; add1 && i < add1->n_input; i++) {
		const onnx_init *in = fmt_onnx_init_of(m, add1->input[i]);
		if (in)
			*beta = in;
		else
			mul2_t = add1->input[i];
	}
	if (!*beta || !mul2_t || !(mul2 = made_by(m, mul2_t, "Mul")))
		return 0;
	for (size_t i = 0; i < mul2->n_input && !mul1; i++)
		mul1 = made_by(m, mul2->input[i], "Mul");
	for (size_t i = 0; mul1 && i < mul1->n_input; i++) {
		const onnx_init *in = fmt_onnx_init_of(m, mul1->input[i]);
		if (in)
			*gamma = in;
	}
	return *gamma != NULL;
}

/* The nodes tensor is computed from, back to the graph input and initializers. */
static void ancestors(const mapper *m, const char *tensor, unsigned char *seen)
{
	size_t cap = 64, n = 0;
	const char **stack = malloc(cap * sizeof *stack);
	if (!stack)
		return;
	stack[n++] = tensor;
	const char *input = m->g->g->input[0]->name;
	while (n) {
		const char *t = stack[--n];
		if (!t || (input && strcmp(t, input) == 0) || fmt_onnx_init_of(m, t))
			continue;
		int i = fmt_onnx_producer(m, t);
		if (i < 0 || seen[i])
			continue;
		seen[i] = 1;
		for (size_t j = 0; j < m->nodes[i]->n_input; j++) {
			if (n == cap) {
				const char **more = realloc(stack, 2 * cap * sizeof *stack);
				if (!more)
					break;
				stack = more;
				cap *= 2;
			}
			stack[n++] = m->nodes[i]->input[j];
		}
	}
	free(stack);
}

static fmt_kind put_vector(mapper *m, onnx_block *b, const onnx_init *w, const onnx_init *bias, uint32_t n)
{
	uint32_t dims[4] = { n };
	nk_spec_tensor wt = fmt_nk_spec_tensor(1, dims), bt = fmt_nk_spec_tensor(1, dims);
	if (wt.data && bt.data && w->f32 && bias->f32 && w->count == n && bias->count == n) {
		memcpy(wt.data, w->f32, n * sizeof(float));
		memcpy(bt.data, bias->f32, n * sizeof(float));
	} else if (wt.data && bt.data) {
		free(wt.data);
		free(bt.data);
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "a ConvNeXt V2 block's norm parameters are not %u floats", n);
	}
	return put_pair(m, b, wt, bt);
}

/* A 1x1 conv's pair with its weight as [O, I]. */
static fmt_kind put_pointwise(mapper *m, onnx_block *b, const conv_bn *c)
{
	fmt_kind k = put_conv_bn(m, b, c, 0);
	if (k != FMT_OK)
		return k;
	nk_spec_tensor *w = &b->w[b->n_pairs - 2];
	w->rank = 2;
	w->dims[1] = w->dims[3];
	w->dims[2] = w->dims[3] = 0;
	free(b->w[b->n_pairs - 1].data);   /* no batch norm in this block */
	free(b->b[b->n_pairs - 1].data);
	b->n_pairs--;
	return FMT_OK;
}

static int match_convnext(mapper *m, int add_i, const char *main, const char *skip, onnx_block *b)
{
	conv_bn fc2, fc1, dw;
	if (!chain(m, main, &fc2) || fc2.bn >= 0 || chain(m, skip, &dw))
		return 0;
	uint32_t c = (uint32_t)fc2.w->dims[0];
	const FmtOnnx__NodeProto *add2 = made_by(m, fc2.input, "Add"), *ln;
	const onnx_init *gamma, *beta;
	if (!add2 || !geometry_is(m, &fc2, 1, 1, 0) || fc2.w->dims[1] != 4ull * c || !grn_params(m, add2, &gamma, &beta))
		return 0;
	const char *t = through_layout(m, fmt_onnx_input(add2, 0));
	int i;
	const FmtOnnx__NodeProto *n = producer_node(m, t, &i);
	for (int depth = 0; n && depth < 64 && (is_op(n, "Mul") || is_op(n, "Add") || is_op(n, "Div") || is_op(n, "Erf"));
	     depth++)
		n = producer_node(m, t = through_layout(m, fmt_onnx_input(n, 0)), &i);
	if (!chain(m, t, &fc1) || fc1.bn >= 0 || !geometry_is(m, &fc1, 1, 1, 0) || fc1.w->dims[0] != 4ull * c ||
	    fc1.w->dims[1] != c || !(ln = made_by(m, fc1.input, "LayerNormalization")))
		return 0;
	const onnx_init *ln_w = fmt_onnx_init_of(m, fmt_onnx_input(ln, 1)), *ln_b = fmt_onnx_init_of(m, fmt_onnx_input(ln, 2));
	if (!ln_w || !ln_b || !chain(m, through_layout(m, fmt_onnx_input(ln, 0)), &dw) || dw.bn >= 0 ||
	    strcmp(through_layout(m, dw.input), through_layout(m, skip)) != 0 || group_of(m, &dw) != c ||
	    dw.w->dims[0] != c || !geometry_is(m, &dw, 7, 1, 3) || gamma->count != 4ull * c || beta->count != 4ull * c)
		return 0;
	b->kind = NK_CONVNEXT;
	b->in_c = b->out_c = c;
	b->layer = (nk_spec_layer){ .kind = NK_CONVNEXT, .units = c, .eps = fmt_onnx_attr_float(ln, "epsilon", 1e-5f) };
	/* the bias first, as put_conv_bn asks: put_pair owns the weight only once both exist */
	const FmtOnnx__NodeProto *dwn = m->nodes[dw.conv];
	nk_spec_tensor dwb;
	if (fmt_onnx_bias(m, dwn, fmt_onnx_init_of(m, fmt_onnx_input(dwn, 2)), c, &dwb) != FMT_OK)
		return -1;
	uint32_t dw_dims[4] = { c, 7, 7 };
	nk_spec_tensor dwt = fmt_nk_spec_tensor(3, dw_dims);
	if (dwt.data)
		memcpy(dwt.data, dw.w->f32, dw.w->count * sizeof(float));
	if (put_pair(m, b, dwt, dwb) != FMT_OK || put_vector(m, b, ln_w, ln_b, c) != FMT_OK ||
	    put_pointwise(m, b, &fc1) != FMT_OK || put_vector(m, b, gamma, beta, 4 * c) != FMT_OK ||
	    put_pointwise(m, b, &fc2) != FMT_OK)
		return -1;
	unsigned char *main_seen = calloc(m->n_nodes, 1), *entry_seen = calloc(m->n_nodes, 1);
	if (!main_seen || !entry_seen) {
		free(main_seen);
		free(entry_seen);
		fmt_fail(m->e, FMT_IO, "out of memory");
		return -1;
	}
	ancestors(m, main, main_seen);
	ancestors(m, through_layout(m, skip), entry_seen);
	for (size_t j = 0; j < m->n_nodes; j++)
		if (main_seen[j] && !entry_seen[j])
			m->consumed[j] = 1;
	free(main_seen);
	free(entry_seen);
	(void)add_i;
	return 1;
}

void fmt_onnx_block_free(onnx_block *b)
{
	for (int i = 0; i < b->n_pairs; i++) {
		free(b->w[i].data);
		free(b->b[i].data);
	}
	b->n_pairs = 0;
}

static int try_add(mapper *m, int add_i)
{
	const FmtOnnx__NodeProto *add = m->nodes[add_i];
	if (add->n_input != 2 || !fmt_onnx_input(add, 0) || !fmt_onnx_input(add, 1) || !add->n_output ||
	    fmt_onnx_init_of(m, add->input[0]) || fmt_onnx_init_of(m, add->input[1]))
		return 0;
	onnx_block *b = &m->block_at[add_i];
	for (int side = 0; side < 2; side++) {
		const char *main = add->input[side], *skip = add->input[1 - side];
		int r = match_convnext(m, add_i, main, skip, b);
		if (!r) {
			fmt_onnx_block_free(b);
			r = match_resnet(m, add_i, main, skip, b);
		}
		if (!r) {
			fmt_onnx_block_free(b);
			r = match_uib(m, main, skip, b);
		}
		if (r) {
			b->add = add;
			if (r < 0)
				return -1;
			return 1;
		}
		fmt_onnx_block_free(b);
		memset(b, 0, sizeof *b);
	}
	return 0;
}

fmt_kind fmt_onnx_find_blocks(mapper *m)
{
	for (size_t i = 0; i < m->n_nodes; i++)
		if (!m->consumed[i] && is_op(m->nodes[i], "Add") && try_add(m, (int)i) < 0)
			return m->e->kind;
	return FMT_OK;
}

static uint32_t block_dim(uint32_t n, uint32_t k, uint32_t s)
{
	uint32_t p = (k - 1) / 2;
	return (n + 2 * p - k) / s + 1;
}

fmt_kind fmt_onnx_emit_block(mapper *m, onnx_block *b)
{
	if (m->flat || m->c != b->in_c)
		return fmt_fail(m->e, FMT_INVALID_FORMAT, "Add node '%s': the block it closes takes %u channels, the "
				"tensor has %u", fmt_onnx_node_label(b->add), b->in_c, m->flat ? 0 : m->c);
	fmt_kind k = fmt_nk_spec_add_layer(m->s, &b->layer, m->e);
	for (int i = 0; k == FMT_OK && i < b->n_pairs; i++)
		k = fmt_nk_spec_add_pair(m->s, &b->w[i], &b->b[i], m->e);
	if (b->kind == NK_RESNET && b->layer.stride > 1) {
		m->h = block_dim(m->h, 3, b->layer.stride);
		m->w = block_dim(m->w, 3, b->layer.stride);
	}
	m->c = b->out_c;
	return k;
}
