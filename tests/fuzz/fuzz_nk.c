/* Fuzz the .nk loader (the input opened with the nk driver: header, records, catalog, QUAN,
 * payload, TCAS, shape propagation), its reports (summary text, JSON), and then nk-run's
 * interpreter on every model the loader accepts that is small enough to run quickly: the
 * loader's checks must make every accepted model safe to run (ASan watches the kernels). The
 * interpreter is the library's .nk runtime (libcommon/nkrt/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/nk.h"
#include "fmt/nkrt.h"
#include "fmt/registry.h"

/* Multiply-adds of one run, roughly: each layer's outputs times its weights. */
static double run_cost(const nk_model *nm)
{
	double cost = 0;
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		double w = 1;
		for (uint32_t p = l->first_pair; p < l->first_pair + l->n_pairs; p++)
			w += nm->weights[p].count;
		cost += (double)nk_shape_count(l->out) * w;
		if (nk_shape_count(l->out) > (1u << 16))
			return 1e18;
	}
	return cost;
}

static void run_model(const nk_model *nm)
{
	if (run_cost(nm) > 2e7 || nm->input_count > (1u << 16))
		return;
	nk_engine en;
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_nk_engine_init(&en, nm, fmt_nk_kernels_get(), &e) != FMT_OK)
		return;
	void *in = calloc(nm->input_count, sizeof(float));
	if (in) {
		if (nm->quantized)
			(void)fmt_nk_run_int8(&en, in);
		else
			(void)fmt_nk_run_float(&en, in);
	}
	free(in);
	fmt_nk_engine_free(&en);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_model_open_memory(&m, "fuzz.nk", data, size, &fmt_driver_nk, &e) != FMT_OK)
		return 0;
	const nk_model *nm = fmt_nk_model_of(&m);
	if (!nm)
		abort();
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		fmt_nk_print_summary(null, nm, m.path);
		fclose(null);
	}
	json_t *j = fmt_nk_describe_json(nm);
	if (!j)
		abort(); /* every number is finite or null, every string valid */
	char *text = json_dumps(j, JSON_COMPACT);
	if (!text)
		abort();
	free(text);
	json_decref(j);
	run_model(nm);
	fmt_model_free(&m);
	return 0;
}
