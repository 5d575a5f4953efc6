/* Bundles (fmt-shard pack): the manifest and every member's digest, read without extracting.
 * A signature can only be checked against the set's own digests, inside its files: with a key,
 * the bundle is extracted into a private temporary directory (fmt_bundle_check_signed), the
 * set verified there, every member required to be covered by that signature, and the
 * directory removed, also when a signal stops the check. */
#include <stdio.h>
#include "fmt/bundle.h"
#include "fmt/registry.h"
#include "verify.h"

fmt_kind verify_bundle(const char *path, fmt_source *stream, const fmt_verify_opts *vo, const verify_sigs *v,
		       const fmt_common_opts *o)
{
	fmt_bundle_info b = { 0 };
	fmt_err e;
	fmt_err_clear(&e);
	fmt_progress pr;
	progress_begin(&pr, o);
	fmt_kind k;
	if (fmt_keyset_empty(&vo->keys))
		k = stream ? fmt_bundle_verify_stream(stream, &b, &e) : fmt_bundle_verify(path, &b, &e);
	else
		k = stream ? fmt_bundle_check_signed_stream(stream, vo, &b, &e)
			   : fmt_bundle_check_signed(path, vo, &b, &e);
	fmt_progress_end(&pr);
	if (k == FMT_OK && !o->quiet)
		report_bundle_ok(path, &b, v, o);
	if (k != FMT_OK)
		report_failure(path, &e, NULL, o);
	fmt_bundle_info_free(&b);
	return k;
}
