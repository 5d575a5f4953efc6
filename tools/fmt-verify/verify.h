/* fmt-verify's reports. */
#ifndef VERIFY_H
#define VERIFY_H

#include "fmt/bundle.h"
#include "fmt/cli.h"
#include "fmt/model.h"
#include "fmt/progress.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "fmt/minisign.h"
#include <stdio.h>

#define TOOL "fmt-verify"

/* The signatures one file's check covered. */
typedef struct verify_sigs {
	int detached;                   /* FILE.minisig verified */
	int detached_unchecked;         /* FILE.minisig there, no Ed25519 key given */
	char detached_id[FMT_MS_KEY_ID_HEX];
	fmt_signer signer;              /* what the driver checked inside the file */
} verify_sigs;

/* What --run-tests found in one file. */
typedef struct verify_tests {
	int ran;                  /* the runner reported on the file (its format has tests) */
	unsigned run, passed, failed;
	json_t *failures;         /* per failing case: case, name, reason, max_error, tolerance,
				   * argmax, expected_argmax */
} verify_tests;

/* FILE.minisig, when it exists, with the trusted keys (v->detached set when it verified);
 * FMT_OK without doing anything when there is none. Without trusted keys it is only noted
 * (v->detached_unchecked), not read. */
fmt_kind verify_detached(const char *path, const fmt_keyset *keys, verify_sigs *v, fmt_err *e);
/* A set trusted through its index's FILE.minisig alone (no embedded Ed25519 signature checked):
 * every other file of the set needs its own FILE.minisig by a trusted key. */
fmt_kind verify_set_detached(const fmt_model *m, const char *path, const fmt_keyset *keys, verify_sigs *v,
			     fmt_err *e);
/* 1 when there is something to report; then the report as a JSON array (a checked signature
 * {"kind","key_id","trusted":true}, one no key could check {"kind","checked":false}) and as text
 * (every unchecked kind in the same words: "signed (not checked: no key given)"). */
int sigs_any(const verify_sigs *v);
json_t *sigs_json(const verify_sigs *v);
void sigs_text(const verify_sigs *v, FILE *out);

/* The progress line over the digests of one input (stderr a terminal, no -q/--no-progress);
 * progress_end erases it, before anything is reported. */
void progress_begin(fmt_progress *p, const fmt_common_opts *o);

/* A model; t (or NULL) what --run-tests found. */
void report_ok(const fmt_model *m, const verify_sigs *v, const verify_tests *t, const fmt_common_opts *o);
/* A dataset: format, rows and the checksum kind its driver names. */
void report_table_ok(const fmt_table *t, const verify_sigs *v, const fmt_common_opts *o);
/* The failure record of path: fmt_json_failure with failed_file, where e was found. */
json_t *failure_json(const char *path, const fmt_err *e);
void report_failure(const char *path, const fmt_err *e, const verify_tests *t, const fmt_common_opts *o);
/* A bundle; v: its own FILE.minisig. */
void report_bundle_ok(const char *path, const fmt_bundle_info *b, const verify_sigs *v, const fmt_common_opts *o);

/* A bundle: the manifest and member digests; with a key also the signatures inside (v: the
 * bundle's own FILE.minisig, checked already). stream: standard input, read from it (else
 * NULL: path is opened). */
fmt_kind verify_bundle(const char *path, fmt_source *stream, const fmt_verify_opts *vo, const verify_sigs *v,
		       const fmt_common_opts *o);

/* --run-tests: the embedded tests of m (read from path), run in process by its format's
 * runtime, counted into t; FMT_OK for formats without tests, TestFailed when a case fails or
 * there is none. max_work (0: the runtime's default) bounds the multiply-adds of one run. */
fmt_kind run_embedded_tests(const fmt_model *m, const char *path, uint64_t max_work, verify_tests *t, fmt_err *e);
/* t as the "tests" member of the JSON report. */
json_t *tests_json(const verify_tests *t);
void verify_tests_free(verify_tests *t);

#endif
