/* The work of fmt-sign's subcommands: key creation, signing in place, key ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fmt/out.h"
#include "fmt/report.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "sign.h"

static FILE *sign_records(const sign_opts *o)
{
	/* not on standard output when it carries the signature: a failure record written there too
	 * would fail again on a full device, and the end-of-run check would report it a second time */
	return o->common.quiet || o->sig_on_stdout ? NULL : stdout;
}

void sign_input(const sign_opts *o, const char *file)
{
	fmt_report_input(sign_records(o), file, NULL);
}

int sign_fail(const sign_opts *o, const char *file, const fmt_err *e)
{
	FILE *records = sign_records(o);
	if (!file)
		return fmt_report_failed_all(records, TOOL, o->files, o->n_files, e, o->common.json);
	return fmt_report_failed(records, TOOL, file, file, e, o->common.json);
}

int sign_keygen_fail(const sign_opts *o, const char *path, fmt_err *e)
{
	fmt_err_file(e, path);
	return sign_fail(o, NULL, e);
}

fmt_kind sign_check_output(const char *output, const char *const *inputs, size_t n, fmt_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (inputs[i] && fmt_check_distinct(inputs[i], output, e) != FMT_OK)
			return e->kind;
	return FMT_OK;
}

int sign_print_json(const sign_opts *o, const char *file, json_t *obj)
{
	fmt_err e;
	fmt_err_clear(&e);
	return fmt_json_emit(stdout, obj, &e) == FMT_OK ? 0 : sign_fail(o, file, &e);
}

int sign_json_record(const sign_opts *o)
{
	return o->common.json && !o->common.quiet && !o->sig_on_stdout;
}

int sign_put_record(const sign_opts *o, const char *file, fmt_json_rec *rec)
{
	fmt_err e;
	fmt_err_clear(&e);
	int r = fmt_json_rec_put(stdout, rec);
	return r ? (fmt_json_fail(r, &e), sign_fail(o, file, &e)) : 0;
}

/* rec: the --json record, made before the key file (created_record). */
static int report_created(const sign_opts *o, const char *path, const fmt_hmac_key *key, int rotated,
			  fmt_json_rec *rec)
{
	if (o->common.json)
		return sign_put_record(o, NULL, rec);
	printf("created HMAC key %s in ", key->id);
	fmt_out_escaped(stdout, path, strlen(path));
	printf("\n");
	if (rotated) {
		printf("the previous key is kept in ");
		fmt_out_escaped(stdout, path, strlen(path));
		printf(".old\n");
	}
	return 0;
}

int sign_cmd_keygen(const sign_opts *o)
{
	fmt_err e;
	char *path;
	struct stat st;
	fmt_hmac_key key;
	fmt_err_clear(&e);
	if (fmt_hmac_key_path(&path, &e) != FMT_OK)
		return sign_fail(o, NULL, &e);
	int exists = lstat(path, &st) == 0;
	if (exists && !o->force) {
		fmt_fail(&e, FMT_USAGE, "an HMAC key already exists; --force rotates it and keeps the "
			 "old one as hmac.key.old");
		int code = sign_keygen_fail(o, path, &e);
		free(path);
		return code;
	}
	if (fmt_hmac_key_random(&key, &e) != FMT_OK) {
		int code = sign_keygen_fail(o, path, &e);
		free(path);
		return code;
	}
	fmt_json_rec rec = { 0 };
	fmt_kind k = FMT_OK;
	if (sign_json_record(o)) { /* before the key file: out of memory leaves none */
		unsigned long since = fmt_json_memory_failures();
		json_t *j = json_pack("{s:b, s:s, s:o, s:b}", "ok", 1, "key_id", key.id, "path",
				      fmt_json_string(path, strlen(path)), "rotated", exists);
		k = fmt_json_rec_make(&rec, j, since, &e);
	}
	int code = k != FMT_OK ? sign_fail(o, NULL, &e)
		 : fmt_hmac_key_store(path, o->force, &key, &e) != FMT_OK ? sign_keygen_fail(o, path, &e)
		 : o->common.quiet ? 0 : report_created(o, path, &key, exists, &rec);
	fmt_json_rec_free(&rec);
	fmt_hmac_key_free(&key);
	free(path);
	return code;
}

/* The signature now stored in a signed file or index, as read back from it. */
static char *stored_signature(const char *path, fmt_err *e)
{
	fmt_model m;
	char *sig = NULL;
	if (fmt_model_open(&m, path, NULL, e) != FMT_OK)
		return NULL;
	const char *stored = fmt_model_signature(&m);
	if (stored)
		sig = strdup(stored);
	if (!sig)
		fmt_fail(e, FMT_INTERNAL, "the signature just written cannot be read back");
	fmt_model_free(&m);
	return sig;
}

static int report_signed(const char *path, const fmt_hmac_key *key, const sign_opts *o)
{
	fmt_err e;
	fmt_err_clear(&e);
	if (o->common.quiet)
		return 0;
	char *sig = NULL;
	if (o->common.json || o->common.verbose) {
		sig = stored_signature(path, &e);
		if (!sig)
			return sign_fail(o, path, &e);
	}
	int code = 0;
	if (o->common.json) {
		json_t *obj = json_pack("{s:o, s:b, s:s, s:s}", "file", fmt_json_string(path, strlen(path)), "ok", 1,
					"key_id", key->id, "signature", sig);
		code = sign_print_json(o, path, obj);
	} else {
		printf("signed ");
		fmt_out_escaped(stdout, path, strlen(path));
		printf(" with key %s\n", key->id);
		if (sig)
			printf("signature: %s\n", sig);
	}
	free(sig);
	return code;
}

int sign_cmd_sign(const char *path, const sign_opts *o)
{
	fmt_err e;
	fmt_hmac_key key;
	fmt_err_clear(&e);
	const char *inputs[1] = { o->key.secret_file };
	if (sign_check_output(path, inputs, 1, &e) != FMT_OK)
		return sign_fail(o, path, &e);
	if (fmt_key_from_opts(&o->key, &key, &e) != FMT_OK)
		return sign_fail(o, NULL, &e);
	int threads = o->common.threads > 0 ? o->common.threads : fmt_cpu_count();
	int code;
	fmt_keyset keys = { .hmac = &key };
	if (fmt_sign_any_in_place(path, &keys, threads, &e) != FMT_OK)
		code = sign_fail(o, path, &e);
	else
		code = report_signed(path, &key, o);
	fmt_hmac_key_free(&key);
	return code;
}

int sign_cmd_key_id(const sign_opts *o)
{
	fmt_err e;
	fmt_hmac_key key;
	fmt_err_clear(&e);
	if (fmt_key_from_opts(&o->key, &key, &e) != FMT_OK)
		return sign_fail(o, NULL, &e);
	int code = 0;
	if (o->common.json && !o->common.quiet)
		code = sign_print_json(o, NULL, json_pack("{s:b, s:s}", "ok", 1, "key_id", key.id));
	else if (!o->common.quiet)
		printf("%s\n", key.id);
	fmt_hmac_key_free(&key);
	return code;
}
