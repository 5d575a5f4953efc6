/* fmt-sign license: a licence block (specs/ald.md §7) with the seller's signed terms, written
 * into a dataset in place, atomically. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fmt/dataset.h"
#include "fmt/io.h"
#include "fmt/out.h"
#include "fmt/report.h"
#include "sign.h"

#define TERMS_FILE_MAX (64u * 1024u)

/* --terms FILE: one JSON object, as compact text in its own key order (malloc'd). */
static fmt_kind load_terms(const char *path, char **out, fmt_err *e)
{
	char *text;
	size_t n;
	json_error_t je;
	if (!path) {
		*out = strdup("{}");
		return *out ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	fmt_kind k = fmt_read_file(path, TERMS_FILE_MAX, &text, &n, e);
	if (k != FMT_OK)
		return k;
	json_t *j = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!json_is_object(j)) {
		json_decref(j);
		return fmt_fail_file(e, FMT_USAGE, path, "--terms: not a JSON object (line %d: %s)", je.line,
				     j ? "an object is expected" : je.text);
	}
	*out = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	return *out ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

int sign_cmd_license(char **files, int n, const sign_opts *o)
{
	fmt_err e;
	fmt_ms_secret sec;
	char *terms = NULL, id[FMT_MS_KEY_ID_HEX], when[32];
	fmt_pass_opts po = sign_pass_opts(o);
	fmt_err_clear(&e);
	const char *inputs[3] = { o->seckey, o->passphrase_file, o->terms_file };
	for (int i = 0; i < n; i++)
		if (sign_check_output(files[i], inputs, 3, &e) != FMT_OK)
			return sign_fail(o, files[i], &e);
	if (load_terms(o->terms_file, &terms, &e) != FMT_OK)
		return sign_fail(o, NULL, &e);
	if (fmt_ms_secret_load(o->seckey, &po, &sec, &e) != FMT_OK) {
		free(terms);
		return sign_fail(o, NULL, &e);
	}
	fmt_ms_key_id(sec.keynum, id);
	fmt_keyset keys = { .ed25519_secret = &sec };
	fmt_license_req l = { .licensee = o->licensee, .expires_at = o->expires_at, .seats = o->seats,
			      .terms_json = terms, .now = (uint64_t)time(NULL) };
	if (l.expires_at && l.expires_at <= l.now && !o->common.quiet) {
		fmt_format_utc(l.expires_at, when);
		fmt_report_warning(stderr, TOOL, "the expiry date %s is in the past: the licence is expired already",
				   when);
	}
	int worst = 0;
	for (int i = 0; i < n; i++) {
		fmt_err_clear(&e);
		sign_input(o, files[i]);
		if (fmt_license_any_in_place(files[i], &l, &keys, &e) != FMT_OK) {
			int code = sign_fail(o, files[i], &e);
			worst = code > worst ? code : worst;
			continue;
		}
		if (o->common.quiet)
			continue;
		if (o->common.json) {
			json_t *obj = json_pack("{s:o, s:b, s:s, s:I, s:i}", "file", fmt_json_string(files[i], strlen(files[i])), "ok", 1,
						"seller_key_id", id, "expires_at", (json_int_t)l.expires_at, "seat_limit",
						(int)l.seats);
			int code = sign_print_json(o, files[i], obj);
			worst = code > worst ? code : worst;
			continue;
		}
		printf("licensed ");
		fmt_out_escaped(stdout, files[i], strlen(files[i]));
		if (l.expires_at) {
			fmt_format_utc(l.expires_at, when);
			printf(" until %s", when);
		}
		printf(", signed by seller key %s\n", id);
	}
	fmt_ms_secret_free(&sec);
	free(terms);
	return worst;
}
