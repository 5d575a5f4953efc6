/* The environment variables that force a code path (the SIMD level of a hot loop, for tests and
 * comparisons), and FMTKIT_PROGRESS_AFTER: one table of their values, read where each is used and
 * checked once at start (fmt_env_check), so a value that is not one of them is refused, never
 * silently ignored. */
#ifndef FMT_ENV_H
#define FMT_ENV_H

#include "fmt/err.h"

typedef enum fmt_env_var {
	FMT_ENV_NK_KERNELS,  /* NK_KERNELS: 0 generic (portable), 1 avx2, 2 avx512 */
	FMT_ENV_QUANT_SIMD,  /* FMTKIT_QUANT_SIMD: 0 portable, 1 avx2, 2 avx512 */
	FMT_ENV_CSV_SCAN,    /* FMTKIT_CSV_SCAN: 0 portable, 1 sse2, 2 avx2, 3 avx512 */
	FMT_ENV_PROGRESS_AFTER, /* FMTKIT_PROGRESS_AFTER: seconds (fmt_env_seconds) */
	FMT_ENV_COUNT
} fmt_env_var;

/* The level var asks for (its value's place in the list above, case ignored); -1 when it is
 * unset or empty, or (refused by fmt_env_check) not one of its values. */
int fmt_env_level(fmt_env_var var);

/* The seconds a FMTKIT_PROGRESS_AFTER-like var holds (a decimal number >= 0); unset when it is
 * unset or empty, or (refused by fmt_env_check) not such a number. */
double fmt_env_seconds(fmt_env_var var, double unset);

/* FMT_USAGE naming the first variable whose value is not one of its values, and those values. */
fmt_kind fmt_env_check(fmt_err *e);

#endif
