/* Upstream's packager optimizations of a float network (nk_optimize.py), in its order and float
 * arithmetic: passes repeated until none applies, on networks without composite blocks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/nk.h"

static int is_composite(unsigned kind)
{
	return kind == NK_UIB || kind == NK_RESNET || kind == NK_CONVNEXT;
}

/* numpy's allclose(v, target) with its default tolerances (rtol 1e-5, atol 1e-8). */
static int all_close(const float *v, uint32_t n, double target)
{
	for (uint32_t i = 0; i < n; i++)
		if (!(fabs((double)v[i] - target) <= 1e-8 + 1e-5 * fabs(target)))
			return 0;
	return 1;
}

static int remove_identity_batch_norm(nk_spec *s)
{
	int changed = 0;
	for (uint32_t i = 0; i < s->n_layers;) {
		const nk_spec_layer *l = &s->layers[i];
		const nk_spec_tensor *w = l->kind == NK_BATCHNORM ? &s->weights[l->first_pair] : NULL;
		const nk_spec_tensor *b = w ? &s->biases[l->first_pair] : NULL;
		if (w && all_close(w->data, w->count, 1.0) && all_close(b->data, b->count, 0.0)) {
			fmt_nk_spec_remove_layer(s, i);
			changed = 1;
		} else {
			i++;
		}
	}
	return changed;
}

void fmt_nk_fold_scale(nk_spec_tensor *w, nk_spec_tensor *b, uint32_t out, const float *scale, const float *shift)
{
	uint32_t per_out = w->count / out;
	for (uint32_t o = 0; o < out; o++) {
		for (uint32_t j = 0; j < per_out; j++)
			w->data[(uint64_t)o * per_out + j] *= scale[o];
		float scaled = b->data[o] * scale[o];
		b->data[o] = scaled + shift[o];
	}
}

/* A batch norm after a conv2d with no activation of its own, folded into it. */
static int fold_conv_batch_norm(nk_spec *s)
{
	int changed = 0;
	for (uint32_t i = 0; i + 1 < s->n_layers;) {
		nk_spec_layer *conv = &s->layers[i], *bn = &s->layers[i + 1];
		if (conv->kind != NK_CONV2D || bn->kind != NK_BATCHNORM || conv->units != bn->units ||
		    conv->act != NK_ACT_NONE) {
			i++;
			continue;
		}
		fmt_nk_fold_scale(&s->weights[conv->first_pair], &s->biases[conv->first_pair], conv->units,
				  s->weights[bn->first_pair].data, s->biases[bn->first_pair].data);
		fmt_nk_spec_remove_layer(s, i + 1);
		changed = 1;
	}
	return changed;
}

/* The h x w x c shape entering each layer of a CNN (count of them: n_layers). */
static void shapes_in(const nk_spec *s, uint32_t (*shape)[3])
{
	uint32_t h = s->input_shape[0], w = s->input_shape[1], c = s->input_shape[2];
	for (uint32_t i = 0; i < s->n_layers; i++) {
		const nk_spec_layer *l = &s->layers[i];
		shape[i][0] = h;
		shape[i][1] = w;
		shape[i][2] = c;
		if (l->kind == NK_CONV2D || l->kind == NK_DEPTHWISE || l->kind == NK_MAXPOOL || l->kind == NK_AVGPOOL) {
			if (l->stride) {
				h = (h + l->pad_t + l->pad_b - l->kh) / l->stride + 1;
				w = (w + l->pad_l + l->pad_r - l->kw) / l->stride + 1;
			}
			if (l->kind == NK_CONV2D)
				c = l->units;
		}
	}
}

/* batch_norm2d, flatten, dense: the dense takes the scale and shift of the channel each of its
 * inputs comes from: b += W . shift[ch], then W[:, col] *= scale[ch]. */
static int fold_batch_norm_into_dense(nk_spec *s)
{
	if (s->network != NK_CNN || s->n_layers < 3)
		return 0;
	uint32_t (*shape)[3] = malloc(s->n_layers * sizeof *shape);
	if (!shape)
		return 0;
	shapes_in(s, shape);
	int changed = 0;
	for (uint32_t i = 0; i + 2 < s->n_layers; i++) {
		nk_spec_layer *bn = &s->layers[i], *dense = &s->layers[i + 2];
		if (bn->kind != NK_BATCHNORM || s->layers[i + 1].kind != NK_FLATTEN || dense->kind != NK_DENSE)
			continue;
		uint32_t c = shape[i][2];
		nk_spec_tensor *w = &s->weights[dense->first_pair], *b = &s->biases[dense->first_pair];
		uint32_t in = dense->units ? w->count / dense->units : 0;
		if ((uint64_t)shape[i][0] * shape[i][1] * c != in || c != bn->units)
			continue;
		const float *scale = s->weights[bn->first_pair].data, *shift = s->biases[bn->first_pair].data;
		for (uint32_t o = 0; o < dense->units; o++) {
			float acc = 0;
			for (uint32_t col = 0; col < in; col++)
				acc += w->data[(uint64_t)o * in + col] * shift[col % c];
			b->data[o] = b->data[o] + acc;
			for (uint32_t col = 0; col < in; col++)
				w->data[(uint64_t)o * in + col] *= scale[col % c];
		}
		fmt_nk_spec_remove_layer(s, i);
		changed = 1;
		break;   /* the shapes moved: the next round recomputes them */
	}
	free(shape);
	return changed;
}

/* dense (no activation) then dense: W = W2 W1, b = W2 b1 + b2, the second's fields. */
static int merge_linear_dense(nk_spec *s)
{
	for (uint32_t i = 0; i + 1 < s->n_layers; i++) {
		nk_spec_layer *first = &s->layers[i], *second = &s->layers[i + 1];
		if (first->kind != NK_DENSE || second->kind != NK_DENSE || first->act != NK_ACT_NONE)
			continue;
		const nk_spec_tensor *w1 = &s->weights[first->first_pair], *b1 = &s->biases[first->first_pair];
		const nk_spec_tensor *w2 = &s->weights[second->first_pair], *b2 = &s->biases[second->first_pair];
		uint32_t mid = first->units, out = second->units, in = mid ? w1->count / mid : 0;
		uint32_t dims[4] = { out, in };
		nk_spec_tensor w = fmt_nk_spec_tensor(2, dims), b = fmt_nk_spec_tensor(1, dims);
		if (!w.data || !b.data) {
			free(w.data);
			free(b.data);
			return 0;
		}
		for (uint32_t o = 0; o < out; o++) {
			for (uint32_t j = 0; j < in; j++) {
				float acc = 0;
				for (uint32_t m = 0; m < mid; m++)
					acc += w2->data[(uint64_t)o * mid + m] * w1->data[(uint64_t)m * in + j];
				w.data[(uint64_t)o * in + j] = acc;
			}
			float acc = 0;
			for (uint32_t m = 0; m < mid; m++)
				acc += w2->data[(uint64_t)o * mid + m] * b1->data[m];
			b.data[o] = acc + b2->data[o];
		}
		uint32_t p = first->first_pair;
		free(s->weights[p].data);
		free(s->biases[p].data);
		s->weights[p] = w;
		s->biases[p] = b;
		nk_spec_layer merged = *second;
		merged.first_pair = p;
		merged.n_pairs = 1;
		fmt_nk_spec_remove_layer(s, i + 1);
		s->layers[i] = merged;
		return 1;
	}
	return 0;
}

fmt_kind fmt_nk_optimize(nk_spec *s, fmt_err *e)
{
	(void)e;
	for (uint32_t i = 0; i < s->n_layers; i++)
		if (is_composite(s->layers[i].kind))
			return FMT_OK;
	for (;;) {
		int changed = remove_identity_batch_norm(s);
		changed |= fold_conv_batch_norm(s);
		changed |= fold_batch_norm_into_dense(s);
		changed |= merge_linear_dense(s);
		if (!changed)
			return FMT_OK;
	}
}
