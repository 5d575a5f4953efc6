/* What every tool's command line shares: common options, sizes, the version line. */
#ifndef FMT_CLI_H
#define FMT_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "fmt/err.h"

#include "fmt/version.h"

typedef struct fmt_common_opts {
	int json;
	int quiet;
	int verbose;
	int no_progress;
	int threads;   /* 0 = number of cores */
} fmt_common_opts;

/* Long-option ids for the options every tool has (use in a tool's own option table). */
enum {
	FMT_OPT_VERSION = 0x1000,
	FMT_OPT_NO_PROGRESS,
	FMT_OPT_HMAC_KEY,
	FMT_OPT_SECRET_FILE,
	FMT_OPT_SECRET_ENV,
	FMT_OPT_SECRET_PROMPT,
	FMT_OPT_FIRST_TOOL_OPTION = 0x1100
};

/* The options every tool has (CONVENTIONS.md), to start a tool's getopt_long table. */
#define FMT_COMMON_LONG_OPTIONS                                                     \
	{ "json", no_argument, NULL, 'j' },                                         \
	{ "quiet", no_argument, NULL, 'q' },                                        \
	{ "verbose", no_argument, NULL, 'v' },                                      \
	{ "no-progress", no_argument, NULL, FMT_OPT_NO_PROGRESS },                  \
	{ "help", no_argument, NULL, 'h' },                                         \
	{ "version", no_argument, NULL, FMT_OPT_VERSION }

/* The key options (fmt/crypto.h fmt_key_opts), to put in a tool's getopt_long table. */
#define FMT_KEY_LONG_OPTIONS                                                        \
	{ "hmac-key", no_argument, NULL, FMT_OPT_HMAC_KEY },                        \
	{ "secret-file", required_argument, NULL, FMT_OPT_SECRET_FILE },            \
	{ "key-secret-file", required_argument, NULL, FMT_OPT_SECRET_FILE },        \
	{ "secret-env", required_argument, NULL, FMT_OPT_SECRET_ENV },              \
	{ "secret-prompt", no_argument, NULL, FMT_OPT_SECRET_PROMPT }

/* fmt_cli_key_option (fmt/crypto.h) handles these. */

/* Handle a common option (getopt_long's return value c with optarg); returns 1 if it was one,
 * 0 if not, -1 on a bad value (message in e). --version and --help are the tool's own. */
int fmt_cli_common(int c, const char *arg, fmt_common_opts *o, fmt_err *e);

/* "TOOL fmtkit X.Y.Z\n" on f (stdout for --version). */
void fmt_cli_version(FILE *f, const char *tool);

/* Sizes: "4GB" (decimal), "2GiB" (binary), "123" (bytes), also KB/MB/TB, KiB/MiB/TiB, "B". */
fmt_kind fmt_parse_size(const char *s, uint64_t *out, fmt_err *e);

/* A whole number 0..max. */
fmt_kind fmt_parse_u64(const char *s, uint64_t max, uint64_t *out, fmt_err *e);

int fmt_cpu_count(void);

#endif
