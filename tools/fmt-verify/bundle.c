/* Bundles (fmt-shard pack): the manifest and every member's digest, read without extracting.
 * A signature can only be checked against the set's own digests, inside its files: with a key,
 * the bundle is unpacked into a private temporary directory, the set verified there, and the
 * directory removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/bundle.h"
#include "fmt/registry.h"
#include "verify.h"

static void remove_unpacked(const char *dir, const fmt_bundle_info *b)
{
	for (size_t i = 0; i < b->n_members; i++) {
		char *path;
		if (asprintf(&path, "%s/%s", dir, b->members[i].name) >= 0) {
			unlink(path);
			free(path);
		}
	}
	rmdir(dir);
}

/* Verify the set inside an already checked bundle with the key of vo. */
static fmt_kind verify_inside(const char *path, const fmt_bundle_info *b, const fmt_verify_opts *vo, fmt_err *e)
{
	const char *entry = fmt_bundle_entry(b);
	if (!entry)
		return fmt_fail(e, FMT_INVALID_FORMAT, "bundle of '%s' has no member that opens the set",
				b->format ? b->format : "?");
	const char *tmp = getenv("TMPDIR");
	char dir[4096], *set = NULL;
	snprintf(dir, sizeof dir, "%s/fmt-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return fmt_fail(e, FMT_IO, "cannot create a temporary directory to check the signature");
	rmdir(dir); /* fmt_bundle_unpack creates it, and removes it again on failure */
	fmt_bundle_info unpacked = { 0 };
	fmt_kind k = fmt_bundle_unpack(path, dir, 0, &unpacked, e);
	if (k == FMT_OK) {
		fmt_model m;
		k = asprintf(&set, "%s/%s", dir, entry) < 0 ? fmt_fail(e, FMT_IO, "out of memory")
							   : fmt_model_open(&m, set, NULL, e);
		if (k == FMT_OK) {
			k = fmt_model_verify(&m, vo, e);
			fmt_model_free(&m);
		}
		free(set);
		if (k != FMT_OK) {
			/* Name the member, not the temporary directory. */
			snprintf(e->file, sizeof e->file, "%s (member %s)", path, entry);
		}
		remove_unpacked(dir, &unpacked);
	}
	fmt_bundle_info_free(&unpacked);
	return k;
}

fmt_kind verify_bundle(const char *path, const fmt_verify_opts *vo, const fmt_common_opts *o)
{
	fmt_bundle_info b = { 0 };
	fmt_err e;
	fmt_err_clear(&e);
	fmt_progress pr;
	progress_begin(&pr, o);
	fmt_kind k = fmt_bundle_verify(path, &b, &e);
	if (k == FMT_OK && !fmt_keyset_empty(&vo->keys))
		k = verify_inside(path, &b, vo, &e);
	fmt_progress_end(&pr);
	if (k == FMT_OK && !o->quiet)
		report_bundle_ok(path, &b, o);
	if (k != FMT_OK)
		report_failure(path, &e, o);
	fmt_bundle_info_free(&b);
	return k;
}
