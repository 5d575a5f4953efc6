/* fmt-convert's parts: its option table and options (options.c), the checks between them and
 * the target format (target.c), and main (main.c), which parses, calls and reports. */
#ifndef FMT_CONVERT_TOOL_H
#define FMT_CONVERT_TOOL_H

#include "fmt/cli.h"
#include "fmt/cli_keys.h"
#include "fmt/drvopt.h"
#include "fmt/pipeline.h"

#define TOOL "fmt-convert"
#define MAX_REPEATS 256

typedef struct convert_args {
	fmt_convert_opts o;
	const char *to_name;        /* --to */
	int overflow_given, allow_overflow;
	const char *model_opt;      /* the first option for models only that was given, or NULL */
	const char *dataset_opt;    /* ... for datasets only */
	const char *not_edit_opt;   /* the first option that --in-place cannot take, or NULL */
	const char *sets[MAX_REPEATS], *include[MAX_REPEATS], *exclude[MAX_REPEATS];
	const char *keys[MAX_REPEATS], *unsets[MAX_REPEATS], *overrides[MAX_REPEATS];
	const char *renames[MAX_REPEATS], *where[MAX_REPEATS], *sort[MAX_REPEATS], *dedupe_on[MAX_REPEATS];
	int seed_given;             /* --seed */
	fmt_drvopt_sets drvopts;    /* the drivers' own options, as they parsed them */
	struct {
		const char *inputs;     /* --embed-tests INPUTS */
		const char *labels;     /* --labels FILE */
		float tolerance;        /* --tolerance T */
		int tolerance_given;
		const char *other_opt;  /* the first option --embed-tests cannot take, or NULL */
		const char *calibration; /* --calibration INPUTS (with --dtype int8) */
		const char *other_net_opt; /* the first option but --dtype and the drivers' options */
		int dtype_or_driver;    /* --dtype or a driver's option was given */
	} embed;
	char msg[FMT_ERR_MSG_MAX + 256]; /* a usage error being reported */
	int msg_nomem;                   /* ... that is not one: memory ran out (exit 3) */
} convert_args;

/* The tool: its own options and every registered driver's (under a heading per format), with
 * a ready to take them. */
const fmt_cli_tool *convert_tool(convert_args *a);

/* The long name of option id (the first of its spellings). */
const char *convert_option_name(int id);

/* What the command line says alone, checked and settled (the operands, --overflow, the
 * signing keys): NULL, or a usage error. */
const char *convert_check_line(convert_args *a, const fmt_cli *cli);

/* The common options into the conversion's. */
void convert_take_common(fmt_convert_opts *o, const fmt_common_opts *c);

/* The output's table driver, if it is a dataset, and --sign-key for it: NULL, or a usage error. */
const char *convert_output(convert_args *a, const char *output);
/* The rest that depends on the output: a dataset (o->table_to writes) or a model (o->to set),
 * the options of the other kind refused and those of its driver checked: NULL, or a usage error. */
const char *convert_kind_checks(convert_args *a, const char *output);

/* --in-place FILE: the metadata options, nothing else; the exit status. */
int convert_edit_in_place(convert_args *a, fmt_cli *cli, const fmt_cli_tool *tool);

/* --sign-key: the key, loaded for the conversion (wiped at exit). */
fmt_kind convert_load_sign_key(fmt_convert_opts *o, fmt_err *e);

/* --embed-tests and --calibration (embed.c): --tolerance's value into a (0, or -1 with a usage
 * error); the whole run (the network of INPUT, quantized to int8 with --calibration, its tests
 * embedded with --embed-tests), its exit status. */
int convert_embed_tolerance(convert_args *a, const char *arg, fmt_err *e);
int convert_network(convert_args *a, fmt_cli *cli, const fmt_cli_tool *tool);

#endif
