/* fmt-verify's reports: the ok line or object, and the failure line and objects. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/registry.h"
#include "verify.h"

void report_ok(const fmt_model *m, const verify_sigs *v, const verify_tests *t, const fmt_common_opts *o)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < m->n_sources; i++)
		bytes += m->sources[i].size;
	if (o->json) {
		json_t *j = json_pack("{s:o,s:b,s:s,s:I,s:I,s:I}", "file",
				      fmt_json_string(m->path, strlen(m->path)), "ok", 1, "format",
				      m->driver->name, "files", (json_int_t)m->n_sources, "tensors",
				      (json_int_t)m->n_tensors, "bytes", (json_int_t)bytes);
		if (sigs_any(v))
			json_object_set_new(j, "signatures", sigs_json(v));
		if (t && t->ran)
			json_object_set_new(j, "tests", tests_json(t));
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	fmt_out_escaped(stdout, m->path, strlen(m->path));
	printf(": ok (%s, %zu tensor%s, %zu file%s, %" PRIu64 " bytes", m->driver->name, m->n_tensors,
	       m->n_tensors == 1 ? "" : "s", m->n_sources, m->n_sources == 1 ? "" : "s", bytes);
	sigs_text(v, stdout);
	if (t && t->ran)
		printf(", %u embedded test case%s passed", t->passed, t->passed == 1 ? "" : "s");
	printf(")\n");
}

void report_table_ok(const fmt_table *t, const verify_sigs *v, const fmt_common_opts *o)
{
	json_t *facts = t->driver->verify_facts ? t->driver->verify_facts(t) : NULL;
	const char *crc = json_string_value(json_object_get(facts, "crc"));
	json_t *auth = json_object_get(facts, "payload_authenticated");
	json_t *lic = json_object_get(facts, "license");
	const char *lic_status = json_string_value(json_object_get(lic, "seller_signature"));
	const char *lic_seller = json_string_value(json_object_get(lic, "seller_key_id"));
	const char *lic_expires = json_string_value(json_object_get(lic, "expires"));
	int lic_trusted = lic_status && lic_seller && strcmp(lic_status, "trusted") == 0;
	if (o->json) {
		json_t *j = json_pack("{s:o,s:b,s:s}", "file", fmt_json_string(t->path, strlen(t->path)), "ok", 1,
				      "format", t->driver->name);
		if (t->n_rows != FMT_ROWS_UNKNOWN)
			json_object_set_new(j, "rows", fmt_json_u64(t->n_rows));
		if (crc)
			json_object_set_new(j, "crc", json_string(crc));
		if (auth)
			json_object_set_new(j, "payload_authenticated", json_incref(auth));
		if (sigs_any(v))
			json_object_set_new(j, "signatures", sigs_json(v));
		if (lic)
			json_object_set_new(j, "license", json_pack("{s:o,s:o,s:o,s:b}", "expires", lic_expires ?
					    json_string(lic_expires) : json_null(), "seller_key_id", lic_seller ?
					    json_string(lic_seller) : json_null(), "seller_signature",
					    lic_status ? json_string(lic_status) : json_null(), "verified", lic_trusted));
		fmt_json_line(stdout, j);
		json_decref(j);
	} else {
		fmt_out_escaped(stdout, t->path, strlen(t->path));
		printf(": ok (%s", t->driver->name);
		if (t->n_rows != FMT_ROWS_UNKNOWN)
			printf(", %" PRIu64 " row%s", t->n_rows, t->n_rows == 1 ? "" : "s");
		if (crc)
			printf(", CRC-32 %s", crc);
		if (auth)
			printf(json_is_true(auth) ? ", encrypted payload authenticated"
						  : ", encrypted payload not checked: no password or identity");
		sigs_text(v, stdout);
		if (lic) {
			printf(", licence %s%s", lic_expires ? "until " : "without expiry", lic_expires ? lic_expires : "");
			if (lic_trusted)
				printf(" by seller key %s (trusted)", lic_seller);
			else if (lic_seller)
				printf(" unverified (seller key %s: signature valid, key not checked: no trusted key "
				       "given)", lic_seller);
			else
				printf(" unverified (no seller signature)");
		}
		printf(")\n");
	}
	json_decref(facts);
}

json_t *failure_json(const char *path, const fmt_err *e)
{
	json_t *j = fmt_json_failure(path, e);
	const char *where = e->file[0] ? e->file : path;
	if (j)
		json_object_set_new(j, "failed_file", fmt_json_string(where, strlen(where)));
	return j;
}

void report_failure(const char *path, const fmt_err *e, const verify_tests *t, const fmt_common_opts *o)
{
	json_t *j = o->json && !o->quiet ? failure_json(path, e) : NULL;
	if (j) {
		if (t && t->ran)
			json_object_set_new(j, "tests", tests_json(t));
		fmt_json_line(stdout, j);
		json_decref(j);
	}
	fmt_report_error(stderr, TOOL, path, e, o->json);
}

void report_bundle_ok(const char *path, const fmt_bundle_info *b, const verify_sigs *v, const fmt_common_opts *o)
{
	if (o->json) {
		const char *contains = b->format ? b->format : "";
		json_t *j = json_pack("{s:o,s:b,s:s,s:o,s:I,s:o,s:b}", "file", fmt_json_string(path, strlen(path)),
				      "ok", 1, "format", "bundle", "contains", fmt_json_string(contains, strlen(contains)),
				      "files", (json_int_t)b->n_members, "bytes", fmt_json_u64(b->total_bytes),
				      "zstd", b->zstd);
		if (j && (b->n_sigs || sigs_any(v))) {
			json_t *sigs = sigs_json(v), *inside = fmt_bundle_sigs_json(b);
			json_array_extend(sigs, inside);
			json_decref(inside);
			json_object_set_new(j, "signatures", sigs);
		}
		fmt_json_line(stdout, j);
		json_decref(j);
		return;
	}
	fmt_out_escaped(stdout, path, strlen(path));
	fputs(": ok (bundle of ", stdout); /* the manifest's format is the file's text: escaped */
	fmt_out_escaped(stdout, b->format ? b->format : "?", strlen(b->format ? b->format : "?"));
	printf(", %zu file%s, %" PRIu64 " bytes%s", b->n_members, b->n_members == 1 ? "" : "s", b->total_bytes,
	       b->zstd ? ", zstd" : "");
	sigs_text(v, stdout);
	fmt_bundle_sigs_text(b, stdout);
	fputs(")\n", stdout);
}


void progress_begin(fmt_progress *p, const fmt_common_opts *o)
{
	fmt_progress_start(p, stderr, TOOL, 0, fmt_progress_wanted(stderr, o->quiet, o->no_progress));
	fmt_progress_follow_meter(p);
}
