/* The embedded regression tests of a .nk file (specs/nk.md §14), checked with the runtime:
 * what nk-run --test prints and fmt-verify --run-tests counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/registry.h"
#include "nkrt_internal.h"

const void *fmt_nk_run(nk_engine *en, const void *input)
{
	return en->nm->quantized ? (const void *)fmt_nk_run_int8(en, input) : (const void *)fmt_nk_run_float(en, input);
}

double fmt_nk_value_at(const nk_model *nm, const void *out, uint64_t i)
{
	return nm->quantized ? (double)((const int8_t *)out)[i] : (double)((const float *)out)[i];
}

int fmt_nk_ranks_above(double a, double b)
{
	return isnan(a) ? !isnan(b) : a > b;
}

uint64_t fmt_nk_argmax(const nk_model *nm, const void *out, uint64_t n)
{
	uint64_t best = 0;
	for (uint64_t i = 1; i < n; i++)
		if (fmt_nk_ranks_above(fmt_nk_value_at(nm, out, i), fmt_nk_value_at(nm, out, best)))
			best = i;
	return best;
}

/* Case c on en; in: scratch for the model's input. */
static void check_case(const nk_model *nm, nk_engine *en, const nk_case *c, void *in, fmt_test_case *r)
{
	int int8_inputs = (nm->flags & NK_FLAG_INT8_TESTS) != 0;
	if (c->n_in != nm->input_count) {
		r->reason = "input count differs from the model's";
		return;
	}
	if (c->n_out != nm->output_count) {
		r->reason = "output count differs from the model's";
		return;
	}
	if (nm->quantized != int8_inputs) {
		r->reason = nm->quantized ? "an int8 model needs int8 test inputs (flag 0x0004)"
					  : "int8 test inputs for a float model";
		return;
	}
	if (nm->quantized)
		memcpy(in, c->in, c->n_in);
	else
		for (uint32_t i = 0; i < c->n_in; i++)
			((float *)in)[i] = fmt_nk_rd_f32(c->in + 4 * i);
	const void *y = fmt_nk_run(en, in);
	uint64_t best_expected = 0;
	int finite = 1;
	for (uint32_t i = 0; i < c->n_out; i++) {
		double want = fmt_nk_rd_f32(c->expected + 4 * i);
		double got = nm->quantized ? ((double)((const int8_t *)y)[i] - en->out_zp) * en->out_scale
					   : fmt_nk_value_at(nm, y, i);
		double err = fabs(got - want);
		if (!isnan(r->max_error) && !(err <= r->max_error))
			r->max_error = err; /* a NaN error stays: the case's error is NaN */
		if (isnan(err))
			finite = 0;
		if (want > fmt_nk_rd_f32(c->expected + 4 * best_expected))
			best_expected = i;
	}
	r->argmax = fmt_nk_argmax(nm, y, nm->output_count);
	r->expected_argmax = c->label >= 0 ? (uint64_t)c->label : best_expected;
	if (nm->quantized) {
		r->pass = r->argmax == r->expected_argmax;
		r->reason = r->pass ? NULL : "argmax differs";
	} else if (!finite || !(r->max_error <= nm->tolerance)) { /* a NaN tolerance holds no error (§14) */
		r->reason = "error above the tolerance";
	} else if (c->label >= 0 && r->argmax != (uint64_t)c->label) {
		r->reason = "argmax differs from the label";
	} else {
		r->pass = 1;
	}
}

fmt_kind fmt_nk_test_suite(const nk_model *nm, nk_engine *en, fmt_test_case_fn each, void *ctx, unsigned *passed,
			   unsigned *failed, fmt_err *e)
{
	if (!(nm->flags & NK_FLAG_TESTS)) {
		(*failed)++;
		return fmt_fail(e, FMT_TEST_FAILED, "no embedded tests (no TCAS block)");
	}
	void *in = malloc(nm->input_count * sizeof(float));
	if (!in)
		return fmt_fail(e, FMT_IO, "out of memory");
	unsigned bad = 0;
	for (uint32_t i = 0; i < nm->n_cases; i++) {
		const nk_case *c = &nm->cases[i];
		fmt_test_case r = { .index = i, .name = c->name, .name_len = c->name_len, .tolerance = nm->tolerance,
				    .label = c->label, .argmax_only = nm->quantized };
		check_case(nm, en, c, in, &r);
		if (each)
			each(ctx, &r);
		if (r.pass)
			(*passed)++;
		else
			(*failed)++, bad++;
	}
	free(in);
	if (bad)
		return fmt_fail(e, FMT_TEST_FAILED, "%u of %u embedded test cases failed", bad, nm->n_cases);
	return FMT_OK;
}

fmt_kind fmt_nk_model_tests(const fmt_model *m, uint64_t max_work, fmt_test_case_fn each, void *ctx, fmt_err *e)
{
	const nk_model *nm = fmt_nk_model_of(m);
	if (!nm)
		return fmt_fail(e, FMT_INTERNAL, "not a parsed .nk model");
	fmt_kind k = fmt_nk_check_work(nm, max_work ? max_work : NK_DEFAULT_MAX_WORK, e);
	if (k != FMT_OK)
		return k;
	nk_engine en;
	/* a network that cannot be planned counts as a failed suite (§14), as nk-run --test says */
	if ((k = fmt_nk_engine_init(&en, nm, fmt_nk_kernels_get(), e)) != FMT_OK) {
		if (k == FMT_IO) /* out of memory: not the model's failure */
			return k;
		char why[FMT_ERR_MSG_MAX];
		memcpy(why, e->msg, sizeof why);
		return fmt_fail(e, FMT_TEST_FAILED, "%s", why);
	}
	unsigned passed = 0, failed = 0;
	k = fmt_nk_test_suite(nm, &en, each, ctx, &passed, &failed, e);
	fmt_nk_engine_free(&en);
	return k;
}
