/* fmt-verify's reports. */
#ifndef VERIFY_H
#define VERIFY_H

#include "fmt/bundle.h"
#include "fmt/cli.h"
#include "fmt/model.h"
#include "fmt/progress.h"
#include "fmt/registry.h"
#include "fmt/table.h"

#define TOOL "fmt-verify"

/* The progress line over the digests of one input (stderr a terminal, no -q/--no-progress);
 * progress_end erases it, before anything is reported. */
void progress_begin(fmt_progress *p, const fmt_common_opts *o);

void report_ok(const fmt_model *m, const fmt_common_opts *o);
/* A dataset: format, rows and the checksum kind its driver names. */
void report_table_ok(const fmt_table *t, const fmt_common_opts *o);
void report_failure(const char *path, const fmt_err *e, const fmt_common_opts *o);
void report_bundle_ok(const char *path, const fmt_bundle_info *b, const fmt_common_opts *o);

/* A bundle: the manifest and member digests; with vo->key also the set's signature. */
fmt_kind verify_bundle(const char *path, const fmt_verify_opts *vo, const fmt_common_opts *o);

#endif
