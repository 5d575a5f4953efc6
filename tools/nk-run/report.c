/* nk-run's reports: one run (upstream's two lines, JSON, raw), the embedded tests (§14) and
 * the benchmark. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/shortest.h"
#include "nkrun.h"

static void print_shape(FILE *f, nk_shape s)
{
	if (s.flat == 2)
		fprintf(f, "[%u]", s.c);
	else if (s.flat)
		fprintf(f, "[%u, %u]", s.h, s.c);
	else
		fprintf(f, "[%u, %u, %u]", s.h, s.w, s.c);
}

/* A float with prec digits, as %.*f (fixed) or %.*g, NaN and the infinities as the project's
 * text writes them (fmt_shortest_f64: "NaN", "inf", "-inf"; printf says "-nan" for a NaN with
 * its sign bit set). */
static void print_float(FILE *f, double v, int prec, int fixed)
{
	char text[FMT_SHORTEST_MAX];
	if (isfinite(v)) {
		fprintf(f, fixed ? "%.*f" : "%.*g", prec, v);
		return;
	}
	fmt_shortest_f64(v, text);
	fputs(text, f);
}

static void print_values(FILE *f, const nk_model *nm, const void *v, uint64_t n)
{
	fputc('[', f);
	for (uint64_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		if (nm->quantized)
			fprintf(f, "%d", ((const int8_t *)v)[i]);
		else
			print_float(f, (double)((const float *)v)[i], 4, 1);
	}
	fputc(']', f);
}

static json_t *json_values(const nk_model *nm, const void *v, uint64_t n)
{
	json_t *a = json_array();
	for (uint64_t i = 0; i < n; i++)
		json_array_append_new(a, nm->quantized ? json_integer(((const int8_t *)v)[i])
						       : fmt_json_double(((const float *)v)[i]));
	return a;
}

typedef struct ranked {
	double v;
	uint64_t i;
} ranked;

/* Higher values first (NaN first of all, fmt_nk_ranks_above), ties by lower index. */
static int cmp_ranked(const void *pa, const void *pb)
{
	const ranked *a = pa, *b = pb;
	if (fmt_nk_ranks_above(a->v, b->v))
		return -1;
	if (fmt_nk_ranks_above(b->v, a->v))
		return 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* The K largest outputs in the order of argmax: NaN above every number, ties by lower index
 * (the first entry is the argmax). NULL when out of memory. */
static json_t *json_top(const nk_model *nm, const void *v, uint64_t n, unsigned k)
{
	ranked *r = malloc((n ? n : 1) * sizeof *r);
	json_t *a = r ? json_array() : NULL;
	for (uint64_t i = 0; a && i < n; i++)
		r[i] = (ranked){ fmt_nk_value_at(nm, v, i), i };
	if (a)
		qsort(r, n, sizeof *r, cmp_ranked);
	for (uint64_t i = 0; a && i < k && i < n; i++)
		json_array_append_new(a, json_pack("{s:I,s:o}", "index", (json_int_t)r[i].i, "value",
						   fmt_json_double(r[i].v)));
	free(r);
	return a;
}

static fmt_kind write_raw(FILE *out, const nk_model *nm, const void *v, fmt_err *e)
{
	size_t n = (size_t)nm->output_count;
	if (nm->quantized)
		return fwrite(v, 1, n, out) == n ? FMT_OK : fmt_fail(e, FMT_IO, "cannot write to standard output");
	for (size_t i = 0; i < n; i++) {
		uint8_t b[4];
		uint32_t u;
		memcpy(&u, (const float *)v + i, 4);
		for (int j = 0; j < 4; j++)
			b[j] = (uint8_t)(u >> (8 * j));
		if (fwrite(b, 1, 4, out) != 4)
			return fmt_fail(e, FMT_IO, "cannot write to standard output");
	}
	return FMT_OK;
}

/* ---- bench and profile ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* What n timed runs after min(n, 10) warm-up runs measured. */
typedef struct bench {
	uint64_t n, warm;
	double min, med, p99, ips;
	double *layer_sum;       /* per layer, when profiling */
	uint64_t *layer_min;
} bench;

static void bench_free(bench *b)
{
	free(b->layer_sum);
	free(b->layer_min);
}

static fmt_kind measure(nk_engine *en, const void *input, uint64_t n, bench *b, fmt_err *e)
{
	uint32_t layers = en->nm->n_layers;
	uint64_t *t = malloc(n * sizeof *t);
	*b = (bench){ .n = n, .warm = n < 10 ? n : 10, .layer_sum = calloc(layers, sizeof *b->layer_sum),
		      .layer_min = malloc(layers * sizeof *b->layer_min) };
	if (!t || !b->layer_sum || !b->layer_min) {
		free(t);
		bench_free(b);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	for (uint64_t i = 0; i < b->warm; i++)
		fmt_nk_run(en, input);
	uint64_t start = fmt_nk_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = fmt_nk_now_ns();
		fmt_nk_run(en, input);
		t[i] = fmt_nk_now_ns() - t0;
		for (uint32_t l = 0; en->layer_ns && l < layers; l++) {
			b->layer_sum[l] += (double)en->layer_ns[l];
			if (i == 0 || en->layer_ns[l] < b->layer_min[l])
				b->layer_min[l] = en->layer_ns[l];
		}
	}
	double total_s = (double)(fmt_nk_now_ns() - start) / 1e9;
	qsort(t, n, sizeof *t, cmp_u64);
	b->min = (double)t[0] / 1e6;
	b->med = (double)t[(n - 1) / 2] / 1e6;
	uint64_t p99i = (uint64_t)ceil(0.99 * (double)n) - 1;
	b->p99 = (double)t[p99i < n ? p99i : n - 1] / 1e6;
	b->ips = (double)n / total_s;
	free(t);
	return FMT_OK;
}

/* The measures as JSON members of j (and with --profile, "layers"). */
static void bench_json(json_t *j, const nk_model *nm, const nk_engine *en, const bench *b)
{
	json_object_set_new(j, "runs", json_integer((json_int_t)b->n));
	json_object_set_new(j, "kernels", json_string(fmt_nk_kernels_name(en->k)));
	json_object_set_new(j, "min_ms", json_real(b->min));
	json_object_set_new(j, "median_ms", json_real(b->med));
	json_object_set_new(j, "p99_ms", json_real(b->p99));
	json_object_set_new(j, "inferences_per_second", fmt_json_double(b->ips));
	json_object_set_new(j, "arena_bytes", json_integer((json_int_t)en->arena_bytes));
	if (!en->layer_ns)
		return;
	json_t *layers = json_array();
	for (uint32_t l = 0; l < nm->n_layers; l++)
		json_array_append_new(layers, json_pack("{s:I,s:s,s:f,s:f,s:o}", "index", (json_int_t)l, "kind",
							fmt_nk_kind_name(nm->layers[l].kind), "min_ms",
							(double)b->layer_min[l] / 1e6, "mean_ms",
							b->layer_sum[l] / (double)b->n / 1e6, "output_shape",
							fmt_nk_shape_json(nm->layers[l].out)));
	json_object_set_new(j, "layers", layers);
}

static void bench_text(FILE *out, const char *path, const nk_model *nm, const nk_engine *en, const bench *b)
{
	fputs("model:      ", out);
	fmt_out_escaped(out, path, strlen(path));
	fprintf(out, "\nruns:       %llu (after %llu warm-up), kernels %s, arena %zu bytes\n",
		(unsigned long long)b->n, (unsigned long long)b->warm, fmt_nk_kernels_name(en->k), en->arena_bytes);
	fprintf(out, "latency:    min %.4f ms, median %.4f ms, p99 %.4f ms\n", b->min, b->med, b->p99);
	fprintf(out, "throughput: %.1f inferences/s\n", b->ips);
	if (!en->layer_ns)
		return;
	fprintf(out, "layers:     (min and mean time per run)\n");
	for (uint32_t l = 0; l < nm->n_layers; l++) {
		fprintf(out, "  [%u] %-24s %9.4f ms %9.4f ms  ", l, fmt_nk_kind_name(nm->layers[l].kind),
			(double)b->layer_min[l] / 1e6, b->layer_sum[l] / (double)b->n / 1e6);
		print_shape(out, nm->layers[l].out);
		fputc('\n', out);
	}
}

fmt_kind nk_report_run(FILE *out, const char *path, const nk_model *nm, nk_engine *en, const void *input,
		       const nk_run_opts *o, fmt_err *e)
{
	uint64_t t0 = fmt_nk_now_ns();
	const void *y = fmt_nk_run(en, input);
	double ms = (double)(fmt_nk_now_ns() - t0) / 1e6;
	if (o->raw)
		return write_raw(out, nm, y, e);
	if (o->json) {
		json_t *j = json_pack("{s:o,s:s,s:o,s:o,s:o,s:I,s:f}", "file", fmt_json_string(path, strlen(path)), "dtype",
				      nm->quantized ? "int8" : "float32", "input_shape", fmt_nk_shape_json(nm->input),
				      "shape", fmt_nk_shape_json(nm->output), "values", json_values(nm, y, nm->output_count),
				      "argmax", (json_int_t)fmt_nk_argmax(nm, y, nm->output_count), "time_ms", ms);
		if (nm->quantized) {
			json_object_set_new(j, "scale", fmt_json_double(en->out_scale));
			json_object_set_new(j, "zero_point", json_integer(en->out_zp));
		}
		if (o->top)
			json_object_set_new(j, "top", json_top(nm, y, nm->output_count, o->top));
		if (o->profile) {
			bench b;
			fmt_kind k = measure(en, input, 1, &b, e);
			if (k != FMT_OK) {
				json_decref(j);
				return k;
			}
			json_t *p = json_object();
			bench_json(p, nm, en, &b);
			json_object_set_new(j, "profile", p);
			bench_free(&b);
		}
		return fmt_json_emit(out, j, e);
	}
	if (o->verbose) {
		fmt_nk_print_summary(out, nm, path);
		fputc('\n', out);
	}
	fputs("Input: shape=", out);
	print_shape(out, nm->input);
	fputs(" values=", out);
	print_values(out, nm, input, nm->input_count);
	fputs("\nOutput: shape=", out);
	print_shape(out, nm->output);
	fputs(" values=", out);
	print_values(out, nm, y, nm->output_count);
	fputc('\n', out);
	if (!o->profile)
		return FMT_OK;
	bench b;
	fmt_kind k = measure(en, input, 1, &b, e);
	if (k == FMT_OK) {
		bench_text(out, path, nm, en, &b);
		bench_free(&b);
	}
	return k;
}

/* ---- tests ---- */

typedef struct case_printer {
	FILE *out;
	const char *path;
	const nk_run_opts *o;
} case_printer;

static void print_case(void *ctx, const fmt_test_case *r)
{
	const case_printer *p = ctx;
	FILE *out = p->out;
	if (p->o->json) {
		json_t *j = json_pack("{s:o,s:I,s:o,s:b,s:o,s:o,s:I,s:I,s:i}", "file", fmt_json_string(p->path, strlen(p->path)),
				      "case", (json_int_t)r->index, "name", fmt_json_string(r->name, r->name_len), "pass",
				      r->pass, "max_error", fmt_json_double(r->max_error), "tolerance", fmt_json_double(r->tolerance),
				      "argmax", (json_int_t)r->argmax, "expected_argmax", (json_int_t)r->expected_argmax,
				      "label", r->label);
		if (!r->pass)
			json_object_set_new(j, "reason", json_string(r->reason));
		fmt_json_line(out, j);
		json_decref(j);
		return;
	}
	if (p->o->quiet)
		return;
	fputs(r->pass ? "PASS " : "FAIL ", out);
	fmt_out_escaped(out, r->name, r->name_len);
	if (!r->pass)
		fprintf(out, ": %s", r->reason);
	fputs(" (max error ", out);
	print_float(out, r->max_error, 3, 0);
	fputs(", tolerance ", out);
	print_float(out, r->tolerance, 3, 0);
	fprintf(out, ", argmax %llu", (unsigned long long)r->argmax);
	if (r->argmax_only || r->label >= 0)
		fprintf(out, ", expected %llu", (unsigned long long)r->expected_argmax);
	fputs(")\n", out);
}

fmt_kind nk_report_tests(FILE *out, const char *path, const nk_model *nm, nk_engine *en, const nk_run_opts *o,
			 unsigned *passed, unsigned *failed, fmt_err *e)
{
	if ((nm->flags & NK_FLAG_TESTS) && !o->json && !o->quiet) {
		fmt_out_escaped(out, path, strlen(path));
		fprintf(out, ": %u case%s, tolerance ", nm->n_cases, nm->n_cases == 1 ? "" : "s");
		print_float(out, (double)nm->tolerance, 6, 0);
		fprintf(out, "%s\n", nm->quantized ? " (int8: argmax only)" : "");
	}
	case_printer p = { out, path, o };
	return fmt_nk_test_suite(nm, en, print_case, &p, passed, failed, e);
}

fmt_kind nk_report_bench(FILE *out, const char *path, const nk_model *nm, nk_engine *en, const void *input,
			 const nk_run_opts *o, fmt_err *e)
{
	bench b;
	fmt_kind k = measure(en, input, o->bench, &b, e);
	if (k != FMT_OK)
		return k;
	if (o->json) {
		json_t *j = json_pack("{s:o}", "file", fmt_json_string(path, strlen(path)));
		bench_json(j, nm, en, &b);
		int bad = fmt_json_line(out, j);
		if (bad)
			k = fmt_json_fail(bad, e);
		json_decref(j);
	} else {
		bench_text(out, path, nm, en, &b);
	}
	bench_free(&b);
	return k;
}
