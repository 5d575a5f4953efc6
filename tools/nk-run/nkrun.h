/* nk-run's modules: input sources, the reports (run, test, bench). */
#ifndef NKRUN_H
#define NKRUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "fmt/nkrt.h"

typedef struct nk_run_opts {
	int json, quiet, verbose, raw, profile;
	unsigned top;            /* --top K (JSON) */
	uint64_t bench;          /* --bench N: timed runs */
	int quantize_input;
	uint64_t max_work;       /* --max-work: multiply-adds a run may take */
	uint64_t max_values;     /* --max-values: input + output values a run may hold */
	FILE *out;               /* the reports: stdout, nowhere with -q --json (fmt_cli_records) */
} nk_run_opts;

/* One inference on input (float32 or int8 codes) and its report on out. */
fmt_kind nk_report_run(FILE *out, const char *path, const nk_model *nm, nk_engine *en, const void *input,
		       const nk_run_opts *o, fmt_err *e);
/* --bench: warm-up, then o->bench timed runs; latency percentiles, per-layer times with
 * --profile. */
fmt_kind nk_report_bench(FILE *out, const char *path, const nk_model *nm, nk_engine *en, const void *input,
			 const nk_run_opts *o, fmt_err *e);
/* --test: every embedded case (§14); adds to *passed and *failed. */
fmt_kind nk_report_tests(FILE *out, const char *path, const nk_model *nm, nk_engine *en, const nk_run_opts *o,
			 unsigned *passed, unsigned *failed, fmt_err *e);

#endif
