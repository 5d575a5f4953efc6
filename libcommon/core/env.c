/* The environment variables that force a code path, and FMTKIT_PROGRESS_AFTER (fmt/env.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/env.h"

#define NAMES_MAX 5

typedef struct env_name {
	const char *name;
	int level;
} env_name;

static const struct {
	const char *var;
	env_name names[NAMES_MAX]; /* up to the first NULL name; none: a decimal number of seconds >= 0 */
} vars[FMT_ENV_COUNT] = {
	/* "portable", as the other two call the plain C code */
	[FMT_ENV_NK_KERNELS] = { "NK_KERNELS", { { "generic", 0 }, { "portable", 0 }, { "avx2", 1 }, { "avx512", 2 } } },
	[FMT_ENV_QUANT_SIMD] = { "FMTKIT_QUANT_SIMD", { { "portable", 0 }, { "avx2", 1 }, { "avx512", 2 } } },
	[FMT_ENV_CSV_SCAN] = { "FMTKIT_CSV_SCAN", { { "portable", 0 }, { "sse2", 1 }, { "avx2", 2 }, { "avx512", 3 } } },
	[FMT_ENV_PROGRESS_AFTER] = { "FMTKIT_PROGRESS_AFTER", { { NULL, 0 } } },
};

static int takes_seconds(fmt_env_var var)
{
	return vars[var].names[0].name == NULL;
}

/* The length of the run of decimal digits at s. */
static size_t digits(const char *s)
{
	size_t n = 0;
	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

/* 1 when v is all a decimal number as fmtkit(7) has it: digits, an optional fraction, an
 * optional exponent (0, 2.5, .5, 1e3); no sign, space, hex, nan or inf, which strtod takes. */
static int is_decimal(const char *v)
{
	size_t whole = digits(v), frac = 0;
	v += whole;
	if (*v == '.')
		frac = digits(++v), v += frac;
	if (whole + frac == 0)
		return 0;
	if (*v == 'e' || *v == 'E') {
		v += v[1] == '+' || v[1] == '-' ? 2 : 1;
		size_t exp = digits(v);
		if (exp == 0)
			return 0;
		v += exp;
	}
	return *v == '\0';
}

/* 1 with *out: a finite decimal number >= 0; 0: unset or empty; -1: anything else. */
static int seconds_of(fmt_env_var var, double *out)
{
	const char *v = getenv(vars[var].var);
	if (!v || !*v)
		return 0;
	double d = is_decimal(v) ? strtod(v, NULL) : NAN;
	if (!isfinite(d))
		return -1;
	*out = d;
	return 1;
}

double fmt_env_seconds(fmt_env_var var, double unset)
{
	double d;
	return seconds_of(var, &d) == 1 ? d : unset;
}

/* -1: unset or empty; -2: not one of its names. */
static int level_of(fmt_env_var var)
{
	const char *v = getenv(vars[var].var);
	if (!v || !*v)
		return -1;
	if (takes_seconds(var)) {
		double d;
		return seconds_of(var, &d) < 0 ? -2 : -1;
	}
	for (int i = 0; i < NAMES_MAX && vars[var].names[i].name; i++)
		if (strcasecmp(v, vars[var].names[i].name) == 0)
			return vars[var].names[i].level;
	return -2;
}

int fmt_env_level(fmt_env_var var)
{
	int level = level_of(var);
	return level < 0 ? -1 : level;
}

fmt_kind fmt_env_check(fmt_err *e)
{
	for (int var = 0; var < FMT_ENV_COUNT; var++) {
		if (level_of((fmt_env_var)var) != -2)
			continue;
		if (takes_seconds((fmt_env_var)var))
			return fmt_fail(e, FMT_USAGE, "%s='%.64s' in the environment: unknown value (expected a decimal "
					"number of seconds >= 0, such as 0 or 2.5)", vars[var].var, getenv(vars[var].var));
		char names[128] = "";
		int n = 0;
		while (n < NAMES_MAX && vars[var].names[n].name)
			n++;
		for (int i = 0; i < n; i++) {
			size_t used = strlen(names);
			snprintf(names + used, sizeof names - used, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
				 vars[var].names[i].name);
		}
		return fmt_fail(e, FMT_USAGE, "%s='%.64s' in the environment: unknown value (expected %s; case ignored)",
				vars[var].var, getenv(vars[var].var), names);
	}
	return FMT_OK;
}
