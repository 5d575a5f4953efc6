/* The pipeline for datasets: open the input as a table (CSV, JSON Lines, Arrow IPC, .ald),
 * check its integrity layers, and stream its batches into the output's table driver. */
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/format_options.h"
#include "fmt/io.h"
#include "fmt/out.h"
#include "pipeline_internal.h"

static fmt_kind convert_table(const char *input, const char *output, const fmt_convert_opts *o,
			      const fmt_keyset *write_keys, fmt_decrypt_keys *dk, fmt_keyset *read_keys, fmt_err *e);

static void print_schema(FILE *f, const fmt_schema *s)
{
	for (size_t i = 0; i < s->n_fields; i++) {
		char type[256];
		fmt_field_type_name(&s->fields[i], type, sizeof type);
		fprintf(f, "  ");
		fmt_out_escaped(f, s->fields[i].name, strlen(s->fields[i].name));
		fprintf(f, "  %s%s\n", type, s->fields[i].nullable ? "" : "  not null");
	}
}

static json_t *record(const char *input, const char *output, const fmt_table *t, const fmt_convert_opts *o,
		      int dry_run)
{
	json_t *r = json_object();
	json_object_set_new(r, "input", fmt_json_string(input, strlen(input)));
	json_object_set_new(r, "output", fmt_json_string(output, strlen(output)));
	json_object_set_new(r, "from", json_string(t->driver->name));
	json_object_set_new(r, "to", json_string(o->table_to->name));
	json_object_set_new(r, "dry_run", json_boolean(dry_run));
	json_object_set_new(r, "schema", fmt_schema_json(&t->schema));
	if (t->n_rows != FMT_ROWS_UNKNOWN)
		json_object_set_new(r, "rows", fmt_json_u64(t->n_rows));
	return r;
}

/* The --json record of a conversion, made before its output is put in place (written once it
 * is): out of memory making it leaves no output. */
static fmt_kind make_record(fmt_json_rec *rec, const char *input, const char *output, const fmt_table *t,
			    const fmt_convert_opts *o, fmt_err *e)
{
	unsigned long since = fmt_json_memory_failures();
	return fmt_json_rec_make(rec, record(input, output, t, o, 0), since, e);
}

static void report(const char *input, const char *output, const fmt_table *t, const fmt_convert_opts *o,
		   int dry_run)
{
	if (o->json) {
		json_t *r = record(input, output, t, o, dry_run);
		fmt_json_line(o->out, r);
		json_decref(r);
		return;
	}
	FILE *f = dry_run ? o->out : o->err;
	fprintf(f, "%s (%s) -> %s (%s)", input, t->driver->name, output, o->table_to->name);
	if (t->n_rows != FMT_ROWS_UNKNOWN)
		fprintf(f, ", %llu row%s", (unsigned long long)t->n_rows, t->n_rows == 1 ? "" : "s");
	fprintf(f, "\n");
	print_schema(f, &t->schema);
}

/* The output's encryption key (--encrypt-password-file/-env, --encrypt-to) into ks. */
static fmt_kind encryption_key(const fmt_convert_opts *o, fmt_password *pw, fmt_x25519_pair *to, fmt_keyset *ks,
			       fmt_err *e)
{
	int n = (o->encrypt_password_file != NULL) + (o->encrypt_password_env != NULL) + (o->encrypt_to != NULL);
	fmt_kind k = FMT_OK;
	if (n == 0)
		return FMT_OK;
	if (n > 1)
		return fmt_fail(e, FMT_USAGE, "give one of --encrypt-password-file, --encrypt-password-env and --encrypt-to");
	if (!o->table_to->encrypts)
		return fmt_fail(e, FMT_USAGE, "%s output cannot be encrypted (.ald can)", o->table_to->name);
	if (o->encrypt_password_file)
		k = fmt_password_from_file(o->encrypt_password_file, pw, e);
	else if (o->encrypt_password_env)
		k = fmt_password_from_env(o->encrypt_password_env, pw, e);
	else
		k = fmt_x25519_public_load(o->encrypt_to, to->pk, e);
	if (k == FMT_OK && o->encrypt_to)
		ks->x25519 = to;
	else if (k == FMT_OK)
		ks->password = pw;
	return k;
}

/* A dataset option that neither the input's driver reads nor the output's writes is refused,
 * not ignored; so is a key to decrypt an input that is not encrypted. */
static fmt_kind check_options_used(const fmt_table *t, const fmt_convert_opts *o, fmt_err *e)
{
	const fmt_decrypt_opts *d = &o->decrypt;
	const char *key = d->password_file ? "password-file" : d->password_env ? "password-env"
			: d->identity ? "identity" : NULL;
	if (key && fmt_table_secret(t) == FMT_SECRET_NONE)
		return fmt_fail(e, FMT_USAGE, "--%s has no use: the input is not encrypted", key);
	return fmt_table_options_check(o->options, t->driver, o->table_to, e);
}

fmt_kind fmt_pipeline_dataset(const char *input, const char *output, const fmt_convert_opts *o, fmt_err *e)
{
	fmt_password enc_pw = { 0 };
	fmt_x25519_pair enc_to = { 0 };
	fmt_keyset write_keys = { 0 }, read_keys = { 0 };
	fmt_decrypt_keys dk = { 0 };
	fmt_kind r = encryption_key(o, &enc_pw, &enc_to, &write_keys, e);
	write_keys.ed25519_secret = o->sign_secret;
	if (r == FMT_OK)
		r = fmt_decrypt_keys_load(&o->decrypt, &dk, &read_keys, e);
	if (r == FMT_OK)
		r = convert_table(input, output, o, &write_keys, &dk, &read_keys, e);
	fmt_password_free(&enc_pw);
	fmt_decrypt_keys_free(&dk);
	return r;
}

/* Whether t is checked by the reads of its rows (one pass over it, not two) instead of before:
 * into a file, which is renamed into place only once the check has passed (standard output
 * would hold rows by then), with nothing between the reader and the writer (a hook, a wrapper
 * that may stop reading early) and nothing to decrypt first; when its driver can. */
static int verify_as_read(fmt_table *t, const char *output, const fmt_convert_opts *o)
{
	fmt_err ignored;
	if (o->no_verify || o->dry_run || strcmp(output, "-") == 0 || o->table_hook || fmt_rowops_any(&o->rows) ||
	    o->n_include || o->n_exclude || o->n_renames || fmt_table_secret(t) != FMT_SECRET_NONE)
		return 0;
	return fmt_table_verify_as_read(t, &ignored) == FMT_OK;
}

/* A failure of a table checked as it is read may come from damage (a flipped byte misreads as
 * a malformed batch): the check then, whose failure is reported as it was when it came first. */
static fmt_kind damage_first(fmt_table *t, fmt_kind k, fmt_err *e)
{
	fmt_err check;
	fmt_err_clear(&check);
	if (fmt_table_verify(t, NULL, &check) == FMT_OK)
		return k;
	*e = check;
	return check.kind;
}

/* What the writer leaves out of the output (fmt_write_opts.warning), said once the output is in
 * place: not for a conversion that failed or is started again (sampled types). */
#define WRITE_WARNINGS_MAX 4
typedef struct write_warnings {
	char msg[WRITE_WARNINGS_MAX][FMT_ERR_MSG_MAX];
	size_t n;
} write_warnings;

static void keep_warning(void *ctx, const char *msg)
{
	write_warnings *w = ctx;
	if (w->n < WRITE_WARNINGS_MAX)
		snprintf(w->msg[w->n++], sizeof w->msg[0], "%s", msg);
}

static void say_warnings(const write_warnings *w, const char *output, const fmt_convert_opts *o)
{
	for (size_t i = 0; i < w->n && !o->quiet; i++)
		fmt_pipeline_warn(o, "%s: %s", output, w->msg[i]);
}

/* One conversion; sample: the reader may type the columns from the first rows (*sampled then
 * says whether it did). */
static fmt_kind convert_once(const char *input, const char *output, const fmt_convert_opts *o,
			     const fmt_keyset *write_keys, fmt_decrypt_keys *dk, fmt_keyset *read_keys, int sample,
			     int *sampled, fmt_err *e)
{
	fmt_dataset_opts d = { .options = o->options, .threads = o->threads,
			       .sample_bytes = sample ? FMT_TYPE_SAMPLE_BYTES : 0 };
	fmt_table t;
	fmt_kind k = fmt_check_distinct(input, output, e);
	if (k == FMT_OK && !o->dry_run) /* before the input is read (a CSV's types, a file's check) */
		k = fmt_sink_may_create(output, o->force ? FMT_SINK_FORCE : 0, e);
	if (k == FMT_OK && o->options)
		k = fmt_drvopt_load(o->options, e);
	if (k == FMT_OK)
		k = fmt_table_open_opts(&t, input, o->table_from, &d, e);
	if (k != FMT_OK) {
		fmt_drvopt_unload(o->options);
		return k;
	}
	int as_read = verify_as_read(&t, output, o);
	if (!o->no_verify && !as_read)
		k = fmt_table_verify(&t, NULL, e);
	if (k == FMT_OK) /* after the check: a damaged file is reported as damaged */
		k = check_options_used(&t, o, e);
	t.allow_expired = o->allow_expired;
	if (k == FMT_OK)
		k = fmt_table_rows_gate(&t, e);
	if (k == FMT_OK && t.rows_note[0] && !o->quiet)
		fmt_pipeline_warn(o, "%s: %s", input, t.rows_note);
	if (k == FMT_OK && !o->dry_run)
		k = fmt_table_unlock(&t, dk, read_keys, 1, e);
	if (k == FMT_OK) /* the rows first: --where and --sort may name a column the output leaves out */
		k = fmt_table_rowops(&t, &o->rows, e);
	if (k == FMT_OK)
		k = fmt_table_select(&t, o->include, o->n_include, o->exclude, o->n_exclude, e);
	if (k == FMT_OK)
		k = fmt_table_rename(&t, o->renames, o->n_renames, e);
	const fmt_field *u = fmt_schema_unsupported(&t.schema);
	if (k == FMT_OK && u)
		k = fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert", u->name,
			     u->type_name);
	for (size_t i = 0; k == FMT_OK && o->table_to->can_hold && i < t.schema.n_fields; i++) {
		char type[256];
		fmt_field_type_name(&t.schema.fields[i], type, sizeof type);
		if (!o->table_to->can_hold(&t.schema.fields[i]))
			k = fmt_fail(e, FMT_UNSUPPORTED, "column '%s': %s cannot hold %s", t.schema.fields[i].name,
				     o->table_to->name, type);
	}
	if (k == FMT_OK && o->table_hook)
		k = o->table_hook(&t, o->hook_ctx, e);
	if (k == FMT_OK && o->dry_run) {
		report(input, output, &t, o, 1);
	} else if (k == FMT_OK) {
		fmt_sink sink;
		write_warnings warnings = { .n = 0 };
		fmt_write_opts wo = { .sink_flags = (o->force ? FMT_SINK_FORCE : 0) |
						    (o->table_to->writes_text ? FMT_SINK_TEXT : 0), .threads = o->threads,
				      .keys = *write_keys, .options = o->options,
				      .before_commit = o->commit_hook, .commit_ctx = o->hook_ctx,
				      .warning = keep_warning, .warning_ctx = &warnings };
		/* with --json the report goes to o->out: not when that holds the data (as for models) */
		int json_record = o->json && strcmp(output, "-") != 0;
		fmt_json_rec rec = { 0 };
		k = fmt_sink_open(&sink, output, wo.sink_flags, e);
		if (k == FMT_OK) {
			k = o->table_to->write(&t, &sink, &wo, e);
			if (k == FMT_OK && as_read) /* made by the reads: what they did not reach */
				k = fmt_table_verify(&t, NULL, e);
			if (k == FMT_OK)
				k = fmt_write_gate(&wo, e);
			if (k == FMT_OK && json_record)
				k = make_record(&rec, input, output, &t, o, e);
			if (k == FMT_OK)
				k = fmt_sink_commit(&sink, e);
			else
				fmt_sink_abort(&sink);
			if (k == FMT_OK)
				say_warnings(&warnings, output, o);
		}
		if (k == FMT_OK && json_record) /* a failed write is the end of the run's (fmt_cli_finish) */
			fmt_json_rec_put(o->out, &rec);
		else if (k == FMT_OK && o->verbose && !o->json)
			report(input, output, &t, o, 0);
		fmt_json_rec_free(&rec);
	}
	if (k != FMT_OK && as_read)
		k = damage_first(&t, k, e);
	if (k != FMT_OK && !e->file[0])
		fmt_err_file(e, input);
	*sampled = t.types_sampled;
	fmt_table_free(&t);
	fmt_drvopt_unload(o->options);
	return k;
}

/* Whether the reader may type the columns from the first rows and check the others as it reads
 * them (one pass over a CSV instead of two): the output is a file, renamed into place only once
 * every row is read, nothing stands between the reader and the writer, and the input can be
 * opened again: when a read fails, the conversion starts again with every row typed first, so
 * that its output or its error is the one of two passes. */
static int may_sample_types(const char *input, const char *output, const fmt_convert_opts *o)
{
	return !o->dry_run && strcmp(output, "-") != 0 && strcmp(input, "-") != 0 && !o->table_hook &&
	       !fmt_rowops_any(&o->rows) && !o->n_include && !o->n_exclude && !o->n_renames;
}

static fmt_kind convert_table(const char *input, const char *output, const fmt_convert_opts *o,
			      const fmt_keyset *write_keys, fmt_decrypt_keys *dk, fmt_keyset *read_keys, fmt_err *e)
{
	int sampled = 0;
	fmt_kind k = convert_once(input, output, o, write_keys, dk, read_keys, may_sample_types(input, output, o),
				  &sampled, e);
	if (k != FMT_OK && sampled) {
		fmt_err_clear(e);
		k = convert_once(input, output, o, write_keys, dk, read_keys, 0, &sampled, e);
	}
	return k;
}
