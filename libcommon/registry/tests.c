/* Embedded regression tests, run in process: the formats whose files carry them, each with
 * its runtime's suite (a driver cannot name a runtime, which sits above the drivers). */
#include "fmt/nkrt.h"
#include "fmt/registry.h"

extern const fmt_driver fmt_driver_nk;

typedef fmt_kind (*suite_fn)(const fmt_model *m, uint64_t max_work, fmt_test_case_fn each, void *ctx,
			     fmt_err *e);

static const struct {
	const fmt_driver *driver;
	suite_fn run;
} runners[] = {
	{ &fmt_driver_nk, fmt_nk_model_tests },
};

fmt_kind fmt_model_run_tests(const fmt_model *m, uint64_t max_work, fmt_test_case_fn each, void *ctx, fmt_err *e)
{
	for (size_t i = 0; i < sizeof runners / sizeof runners[0]; i++)
		if (m->driver == runners[i].driver)
			return runners[i].run(m, max_work, each, ctx, e);
	return fmt_fail(e, FMT_UNSUPPORTED, "%s files carry no embedded tests", m->driver->name);
}
