/* pack / unpack: tar bundles of a set with a manifest of digests (libcommon/bundle/bundle.c). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/bundle.h"
#include "fmt/io.h"
#include "fmt/out.h"
#include "fmt/progress.h"
#include "fmt/registry.h"
#include "shard.h"

static json_t *members_json(const fmt_bundle_info *b)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < b->n_members; i++) {
		const fmt_bundle_member *mb = &b->members[i];
		json_array_append_new(a, json_pack("{s:o,s:o,s:s}", "name", fmt_json_string(mb->name, strlen(mb->name)),
						   "size", fmt_json_u64(mb->size), "sha256", mb->sha256));
	}
	return a;
}

static void print_summary(const fmt_bundle_info *b, const char *bundle)
{
	fmt_out_escaped(stdout, bundle, strlen(bundle));
	printf(": %zu file%s, %" PRIu64 " bytes (", b->n_members, b->n_members == 1 ? "" : "s", b->total_bytes);
	fmt_out_escaped(stdout, b->format, strlen(b->format)); /* the manifest's text */
	fputs(b->zstd ? ", zstd" : "", stdout);
	fmt_bundle_sigs_text(b, stdout);
	fputs(")\n", stdout);
}

/* JSON: {"bundle", key: where, "format", "zstd", "bytes", "members":[{"name","size","sha256"}],
 * "signatures" (when the bundle holds any: fmt_bundle_sigs_json)}.
 * Text: pack prints the bundle's line; unpack one line per file written (then, with -v or when
 * the bundle holds signatures, the bundle's line, which names them). -v adds each member's
 * size and digest. */
static void report(const fmt_bundle_info *b, const char *bundle, const char *key, const char *where,
		   const char *dir, const shard_opts *o)
{
	if (o->common.quiet)
		return;
	if (o->common.json) {
		json_t *j = json_pack("{s:o,s:o,s:o,s:b,s:o,s:o}", "bundle", fmt_json_string(bundle, strlen(bundle)),
				      key, fmt_json_string(where, strlen(where)), "format",
				      fmt_json_string(b->format, strlen(b->format)), "zstd", b->zstd,
				      "bytes", fmt_json_u64(b->total_bytes), "members", members_json(b));
		if (j && b->n_sigs)
			json_object_set_new(j, "signatures", fmt_bundle_sigs_json(b));
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	if (!dir)
		print_summary(b, bundle);
	for (size_t i = 0; i < b->n_members && (dir || o->common.verbose); i++) {
		fputs(dir ? "" : "  ", stdout);
		if (dir && strcmp(dir, ".") != 0) {
			fmt_out_escaped(stdout, dir, strlen(dir));
			if (dir[0] && dir[strlen(dir) - 1] != '/')
				fputc('/', stdout);
		}
		fmt_out_escaped(stdout, b->members[i].name, strlen(b->members[i].name));
		if (o->common.verbose)
			printf("  %" PRIu64 " bytes  sha256 %s", b->members[i].size, b->members[i].sha256);
		fputc('\n', stdout);
	}
	if (dir && (o->common.verbose || b->n_sigs))
		print_summary(b, bundle);
}

/* The progress line over the bytes hashed (pack hashes every file twice, unpack once). */
static void progress_begin(fmt_progress *p, const shard_opts *o)
{
	fmt_progress_start(p, stderr, TOOL, 0, fmt_progress_wanted(stderr, o->common.quiet, o->common.no_progress));
	fmt_progress_follow_meter(p);
}

fmt_kind cmd_pack(const char *input, const shard_opts *o, fmt_err *e)
{
	fmt_bundle_info b;
	fmt_progress pr;
	progress_begin(&pr, o);
	fmt_kind k = fmt_bundle_pack(input, o->output, o->force ? FMT_SINK_FORCE : 0, &b, e);
	fmt_progress_end(&pr);
	if (k != FMT_OK)
		return k;
	if (strcmp(o->output, "-") != 0)
		report(&b, o->output, "set", input, NULL, o);
	fmt_bundle_info_free(&b);
	return FMT_OK;
}

/* A member must not replace a file the options name (a key file, -p PUBKEY): the CLI layer's
 * check of what is written; nor land where keys are trusted from (--trusted-keys DIR, the
 * per-user key directory). */
static fmt_kind unpack_guard(void *ctx, const char *dest, fmt_err *e)
{
	const shard_opts *o = ctx;
	fmt_kind k = fmt_cli_check_output(o->cli, dest, dest, e);
	return k == FMT_OK ? fmt_trust_guard_dest(&o->trust, dest, e) : k;
}

fmt_kind cmd_unpack(const char *input, const shard_opts *o, fmt_err *e)
{
	fmt_bundle_info b;
	const char *dir = o->dir ? o->dir : ".";
	fmt_check_keys ck;
	fmt_verify_opts vo = { .threads = o->common.threads };
	fmt_kind k = fmt_check_keys_load(&o->keys, &o->trust, &ck, &vo.keys, e);
	if (k == FMT_OK) {
		fmt_progress pr;
		progress_begin(&pr, o);
		k = fmt_bundle_unpack(input, dir, o->force ? FMT_SINK_FORCE : 0, &vo, unpack_guard, (void *)o, &b, e);
		fmt_progress_end(&pr);
	}
	fmt_check_keys_free(&ck);
	if (k != FMT_OK)
		return k;
	report(&b, input, "dir", dir, dir, o);
	fmt_bundle_info_free(&b);
	return FMT_OK;
}
