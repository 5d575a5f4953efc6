/* fmt-convert --dtype int8 --calibration: the float network run over the calibration inputs
 * for the range of every quantized operation's output, the int8 file written from them
 * (fmt_nk_write_int8), then both networks run over the same inputs for their agreement. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nkrt_internal.h"

static int op_layer(const nk_layer *l)
{
	return l->kind == NK_DENSE || l->kind == NK_CONV2D || l->kind == NK_DEPTHWISE;
}

/* v is finite (checked first): plain comparisons, not fminf/fmaxf's library calls. */
static void widen(nk_range *r, const float *v, uint64_t n)
{
	float lo = r->lo, hi = r->hi;
	for (uint64_t i = 0; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	r->lo = lo;
	r->hi = hi;
}

static uint64_t first_nonfinite_f32(const float *v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (!isfinite(v[i]))
			return i;
	return n;
}

/* One calibration input through the float network in the calibration arithmetic, layer by
 * layer, each quantized operation's output widening its range; then the network's output as
 * the runtime computes it (what the int8 network is measured against) into y. */
static fmt_kind calibrate_one(nk_engine *en, const float *x, size_t index, nk_range *ranges, float *y, fmt_err *e)
{
	const nk_model *nm = en->nm;
	float *cur = en->buf[0], *next = en->buf[1];
	memcpy(cur, x, nm->input_count * sizeof(float));
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		uint64_t n = nk_shape_count(l->out);
		fmt_nk_calib_layer(en, i, cur, next);
		uint64_t bad = first_nonfinite_f32(next, n);
		if (bad < n)
			return fmt_fail(e, FMT_INVALID_FORMAT, "calibration input %zu: layer %u (%s) gives a value that is "
					"not finite (%g at %llu)", index, i, fmt_nk_kind_name(l->kind), (double)next[bad],
					(unsigned long long)bad);
		if (op_layer(l))
			widen(&ranges[l->first_pair], next, n);
		float *t = cur;
		cur = next;
		next = t;
	}
	memcpy(y, fmt_nk_run_float(en, x), nm->output_count * sizeof(float));
	return FMT_OK;
}

/* The float network over every input: the input range, each op's output range, the outputs. */
static fmt_kind calibrate(const nk_model *nm, const nk_embed_set *cal, nk_range *input, nk_range *ranges,
			  float *outputs, fmt_err *e)
{
	nk_engine en;
	float *x = malloc(nm->input_count * sizeof *x);
	fmt_kind k = x ? fmt_nk_engine_init(&en, nm, fmt_nk_kernels_get(), e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		free(x);
		return k;
	}
	*input = (nk_range){ INFINITY, -INFINITY };
	for (uint32_t p = 0; p < nm->n_weights; p++)
		ranges[p] = (nk_range){ INFINITY, -INFINITY };
	for (size_t c = 0; k == FMT_OK && c < cal->n; c++) {
		nk_values v = { .v = (double *)cal->cases[c].values, .n = cal->cases[c].n };
		k = fmt_nk_values_to_input(&v, nm, 0, x, e);
		if (k == FMT_OK) {
			widen(input, x, nm->input_count);
			k = calibrate_one(&en, x, c, ranges, outputs + c * nm->output_count, e);
		}
	}
	fmt_nk_engine_free(&en);
	free(x);
	return k;
}

/* The int8 network over the same inputs, against the float outputs. */
static fmt_kind agreement(const nk_model *nf, const nk_model *nq, const nk_embed_set *cal, const float *outputs,
			  nk_quant_report *r, fmt_err *e)
{
	nk_engine en;
	int8_t *x = malloc(nq->input_count);
	fmt_kind k = x ? fmt_nk_engine_init(&en, nq, fmt_nk_kernels_get(), e) : fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		free(x);
		return k;
	}
	for (size_t c = 0; k == FMT_OK && c < cal->n; c++) {
		nk_values v = { .v = (double *)cal->cases[c].values, .n = cal->cases[c].n };
		if ((k = fmt_nk_values_to_input(&v, nq, 1, x, e)) != FMT_OK)
			break;
		const int8_t *y = fmt_nk_run(&en, x);
		const float *want = outputs + c * nf->output_count;
		r->argmax_agree += fmt_nk_argmax(nq, y, nq->output_count) == fmt_nk_argmax(nf, want, nf->output_count);
		for (uint64_t i = 0; i < nq->output_count; i++) {
			double err = fabs((double)((float)(y[i] - en.out_zp) * en.out_scale) - (double)want[i]);
			if (err > r->max_abs_error) {
				r->max_abs_error = err;
				r->worst_input = c;
			}
		}
	}
	fmt_nk_engine_free(&en);
	free(x);
	return k;
}

static fmt_kind check_inputs(const nk_model *nm, const nk_embed_set *cal, fmt_err *e)
{
	if (cal->n < 1 || cal->n > NK_MAX_CALIBRATION)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%zu calibration inputs: the calibration takes 1 to %d", cal->n,
				NK_MAX_CALIBRATION);
	for (size_t c = 0; c < cal->n; c++) {
		if (cal->cases[c].n != nm->input_count)
			return fmt_fail(e, FMT_INVALID_FORMAT, "calibration input %zu has %zu values, the network takes %llu",
					c, cal->cases[c].n, (unsigned long long)nm->input_count);
		size_t bad = fmt_nk_first_nonfinite(cal->cases[c].values, cal->cases[c].n);
		if (bad < cal->cases[c].n)
			return fmt_fail(e, FMT_INVALID_FORMAT, "calibration input %zu: value %zu (%g) is not a finite "
					"float32", c, bad, cal->cases[c].values[bad]);
	}
	return FMT_OK;
}

static fmt_kind quantize_checked(const nk_model *nm, const nk_embed_set *cal, uint8_t **out, size_t *out_size,
				 nk_quant_report *r, fmt_err *e)
{
	nk_range input, *ranges = malloc((nm->n_weights ? nm->n_weights : 1) * sizeof *ranges);
	float *outputs = malloc(cal->n * nm->output_count * sizeof *outputs);
	nk_model nq;
	fmt_kind k = ranges && outputs ? calibrate(nm, cal, &input, ranges, outputs, e)
				       : fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK)
		k = fmt_nk_write_int8(nm, input, ranges, out, out_size, e);
	if (k == FMT_OK)
		k = fmt_nk_parse_own(&nq, *out, *out_size, "the int8 file", e);
	if (k == FMT_OK) {
		r->ops = nq.n_quant;
		k = agreement(nm, &nq, cal, outputs, r, e);
		fmt_nk_free(&nq);
	}
	free(ranges);
	free(outputs);
	return k;
}

fmt_kind fmt_nk_quantize(const void *data, size_t size, const nk_embed_set *cal, uint8_t **out, size_t *out_size,
			 nk_quant_report *r, fmt_err *e)
{
	nk_model nm;
	*out = NULL;
	*out_size = 0;
	memset(r, 0, sizeof *r);
	r->inputs = cal->n;
	fmt_kind k = fmt_nk_parse(&nm, data, size, e);
	if (k != FMT_OK)
		return k;
	if ((k = fmt_nk_int8_check(&nm, e)) == FMT_OK && (k = check_inputs(&nm, cal, e)) == FMT_OK &&
	    (k = fmt_nk_check_work(&nm, NK_DEFAULT_MAX_WORK, e)) == FMT_OK)
		k = quantize_checked(&nm, cal, out, out_size, r, e);
	fmt_nk_free(&nm);
	if (k != FMT_OK) {
		free(*out);
		*out = NULL;
		*out_size = 0;
	}
	return k;
}
