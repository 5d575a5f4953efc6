/* fmt-inspect for tar bundles (fmt-shard pack): the manifest (the set's format, the packer's
 * version) and each member: its name, size, SHA-256 and the format its first bytes are. The
 * bundle is read as fmt-verify reads it (fmt_bundle_verify: every rule of fmt/bundle.h, every
 * member hashed against the manifest as it streams by, nothing extracted), so a bundle that
 * fails a check is reported as failed, not listed. */
#include <inttypes.h>
#include <string.h>
#include "fmt/bundle.h"
#include "fmt/out.h"
#include "fmt/strbuf.h"
#include "inspect.h"

/* The options that narrow a model's or a dataset's report name nothing in a bundle. */
static fmt_kind refuse_narrowing(const inspect_opts *o, fmt_err *e)
{
	if (!o->model_sections && !o->tensor && !o->stats && !o->schema && !o->head_given && !o->quality)
		return FMT_OK;
	return fmt_fail(e, FMT_USAGE, "--tensors, --metadata, --tree, --tensor, --stats, --schema, --head and "
			"--quality are for a model file or a dataset, not a bundle (fmt-shard unpack extracts its "
			"members)");
}

static json_t *members_json(const fmt_bundle_info *b)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < b->n_members; i++) {
		const fmt_bundle_member *mb = &b->members[i];
		json_array_append_new(a, json_pack("{s:o,s:o,s:o,s:s}", "name", fmt_json_string(mb->name, strlen(mb->name)),
						   "bytes", fmt_json_u64(mb->size), "format",
						   mb->format ? json_string(mb->format) : json_null(), "sha256",
						   mb->sha256));
	}
	return a;
}

/* Keys as fmt-verify's record of a bundle ("format":"bundle", "contains", "files", "bytes",
 * "zstd", "signatures"), then the manifest's "fmtkit" and the members. */
static fmt_kind report_json(FILE *out, const char *path, const fmt_bundle_info *b, fmt_err *e)
{
	const char *contains = b->format ? b->format : "";
	json_t *r = json_pack("{s:o,s:s,s:o,s:b,s:o,s:I,s:o,s:o}", "file", fmt_json_string(path, strlen(path)),
			      "format", "bundle", "contains", fmt_json_string(contains, strlen(contains)), "zstd",
			      b->zstd, "fmtkit", b->fmtkit ? fmt_json_string(b->fmtkit, strlen(b->fmtkit)) : json_null(),
			      "files", (json_int_t)b->n_members, "bytes", fmt_json_u64(b->total_bytes), "members",
			      members_json(b));
	if (r && b->n_sigs)
		json_object_set_new(r, "signatures", fmt_bundle_sigs_json(b));
	if (!r)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_json_line(out, r);
	json_decref(r);
	return FMT_OK;
}

static void print_text(FILE *out, const char *s)
{
	fmt_out_escaped(out, s, strlen(s));
}

/* "NAME  BYTES  FORMAT  SHA256", one member a line, in the manifest's (name) order. */
static void members_text(FILE *out, const fmt_bundle_info *b)
{
	int name_w = 4, bytes_w = 5, format_w = 6;
	for (size_t i = 0; i < b->n_members; i++) {
		const fmt_bundle_member *mb = &b->members[i];
		int w = (int)strlen(mb->name), d = fmt_digit_count(mb->size), f = mb->format ? (int)strlen(mb->format) : 1;
		name_w = w > name_w ? w : name_w;
		bytes_w = d > bytes_w ? d : bytes_w;
		format_w = f > format_w ? f : format_w;
	}
	fprintf(out, "  %-*s  %*s  %-*s  SHA256\n", name_w, "NAME", bytes_w, "BYTES", format_w, "FORMAT");
	for (size_t i = 0; i < b->n_members; i++) {
		const fmt_bundle_member *mb = &b->members[i];
		fputs("  ", out);
		print_text(out, mb->name); /* a safe name (checked): printable, valid UTF-8 */
		fprintf(out, "%*s  %*" PRIu64 "  %-*s  %s\n", name_w - (int)strlen(mb->name), "", bytes_w, mb->size,
			format_w, mb->format ? mb->format : "-", mb->sha256);
	}
}

static void report_text(FILE *out, const char *path, const fmt_bundle_info *b)
{
	fputs("file:       ", out);
	print_text(out, path);
	fprintf(out, "\nformat:     bundle (tar%s)\ncontains:   ", b->zstd ? ", zstd" : "");
	print_text(out, b->format ? b->format : "?"); /* the manifest's text */
	if (b->fmtkit) {
		fputs("\npacked by:  fmtkit ", out);
		print_text(out, b->fmtkit);
	}
	fprintf(out, "\nmembers:    %zu, %" PRIu64 " bytes", b->n_members, b->total_bytes);
	fmt_bundle_sigs_text(b, out);
	fputc('\n', out);
	members_text(out, b);
}

fmt_kind inspect_bundle(FILE *out, const char *path, fmt_source *stream, const inspect_opts *o, fmt_err *e)
{
	fmt_bundle_info b = { 0 };
	fmt_kind k = refuse_narrowing(o, e);
	if (k == FMT_OK)
		k = stream ? fmt_bundle_verify_stream(stream, &b, e) : fmt_bundle_verify(path, &b, e);
	if (k == FMT_OK && out && o->json)
		k = report_json(out, path, &b, e);
	else if (k == FMT_OK && out)
		report_text(out, path, &b);
	fmt_bundle_info_free(&b);
	return k;
}
