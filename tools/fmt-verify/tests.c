/* --run-tests: a file's embedded regression tests, run in process by its format's runtime
 * (fmt_model_run_tests: the .nk runtime for .nk files), counted into fmt-verify's report with
 * the failing cases; the messages name the driver's test runner (nk-run), which shows each
 * case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"
#include "verify.h"

/* A case's record: what a failing one says, as nk-run --test's line says it. */
static void count_case(void *ctx, const fmt_test_case *c)
{
	verify_tests *t = ctx;
	t->run++;
	if (c->pass) {
		t->passed++;
		return;
	}
	t->failed++;
	json_t *f = json_pack("{s:I,s:o,s:s,s:o,s:o,s:I,s:I}", "case", (json_int_t)c->index, "name",
			      fmt_json_string(c->name, c->name_len), "reason", c->reason, "max_error",
			      fmt_json_double(c->max_error), "tolerance",
			      fmt_json_double(c->tolerance), "argmax",
			      (json_int_t)c->argmax, "expected_argmax", (json_int_t)c->expected_argmax);
	if (f)
		json_array_append_new(t->failures, f);
}

/* TestFailed naming each failing case and what differed. */
static fmt_kind fail_cases(const verify_tests *t, const char *runner, const char *path, fmt_err *e)
{
	char list[FMT_ERR_MSG_MAX] = "";
	size_t used = 0;
	for (size_t i = 0; i < json_array_size(t->failures) && used < sizeof list; i++) {
		json_t *f = json_array_get(t->failures, i);
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *reason = json_string_value(json_object_get(f, "reason"));
		int n = snprintf(list + used, sizeof list - used, "%s%s: %s", i ? "; " : "", name ? name : "?",
				 reason ? reason : "?");
		used += n > 0 ? (size_t)n : 0;
	}
	return fmt_fail(e, FMT_TEST_FAILED, "embedded tests failed: %u of %u case%s (%s); %s --test %s shows each case",
			t->failed, t->run, t->run == 1 ? "" : "s", list, runner, path);
}

fmt_kind run_embedded_tests(const fmt_model *m, const char *path, uint64_t max_work, verify_tests *t, fmt_err *e)
{
	const char *runner = m->driver->test_runner;
	if (!runner)
		return FMT_OK;
	if (!(t->failures = json_array()))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_model_run_tests(m, max_work, count_case, t, e);
	t->ran = k == FMT_OK || k == FMT_TEST_FAILED;
	if (k == FMT_TEST_FAILED && t->failed)
		return fail_cases(t, runner, path, e);
	if (k != FMT_OK && k != FMT_TEST_FAILED) {
		char why[FMT_ERR_MSG_MAX];
		memcpy(why, e->msg, sizeof why);
		return fmt_fail(e, k, "%s could not run the embedded tests: %s", runner, why);
	}
	return k;
}

json_t *tests_json(const verify_tests *t)
{
	return json_pack("{s:I,s:I,s:I,s:O}", "run", (json_int_t)t->run, "passed", (json_int_t)t->passed, "failed",
			 (json_int_t)t->failed, "failures", t->failures);
}

void verify_tests_free(verify_tests *t)
{
	json_decref(t->failures);
	memset(t, 0, sizeof *t);
}
