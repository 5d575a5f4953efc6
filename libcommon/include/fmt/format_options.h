/* The options the registered drivers declare (fmt/drvopt.h), as a tool sees them: each name
 * once, whichever drivers declare it; parsed into those drivers' values; and refused where
 * neither the input's nor the output's driver uses it, never ignored. */
#ifndef FMT_FORMAT_OPTIONS_H
#define FMT_FORMAT_OPTIONS_H

#include <stddef.h>
#include "fmt/drvopt.h"
#include "fmt/registry.h"
#include "fmt/table.h"

/* Who declares an option: model drivers, table drivers (both bits: both kinds). */
enum { FMT_FOPT_MODELS = 1u << 0, FMT_FOPT_TABLES = 1u << 1 };

typedef struct fmt_format_option {
	const fmt_drvopt *opt;  /* the first declaration (value name, help, completion) */
	unsigned kinds;         /* FMT_FOPT_* */
	char owners[96];        /* the drivers declaring it: "csv" or "csv and jsonl" */
} fmt_format_option;

/* Every option of the registered drivers, once by name, in registry order (model drivers,
 * then table drivers; each driver's in its order): at most max into out; returns how many. */
size_t fmt_format_options(fmt_format_option *out, size_t max);

/* Parse arg for the option named name into the values of every driver of kinds (FMT_FOPT_*)
 * that declares it: 0, or -1 with e filled (a bad value: UsageError). An option no such driver
 * declares is taken as not given. */
int fmt_format_option_parse(fmt_drvopt_sets *s, const char *name, unsigned kinds, const char *arg, fmt_err *e);

/* An option of the writer of a known dataset output (-c: .ald and Parquet take different codecs):
 * parsed into out's values when out declares name, else into every table driver's that does, so
 * that fmt_table_options_check names who uses it. 0, or -1 with e filled. */
int fmt_table_option_parse_for(fmt_drvopt_sets *s, const fmt_table_driver *out, const char *name, const char *arg,
			       fmt_err *e);

/* A dataset conversion's given option that neither in reads nor out writes: UsageError
 * naming it and who uses it. */
fmt_kind fmt_table_options_check(const fmt_drvopt_sets *s, const fmt_table_driver *in,
				 const fmt_table_driver *out, fmt_err *e);
/* A model conversion's given option that out does not write: UsageError naming the outputs
 * that take it ("--apr-layout needs .apr output"). */
fmt_kind fmt_model_options_check(const fmt_drvopt_sets *s, const fmt_driver *out, fmt_err *e);

#endif
