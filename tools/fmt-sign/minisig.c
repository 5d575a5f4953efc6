/* fmt-sign's Ed25519 side: minisign key pairs, X25519 key pairs, detached .minisig signatures. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "fmt/cli_keys.h"
#include "fmt/io.h"
#include "fmt/out.h"
#include "fmt/progress.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "fmt/thread.h"
#include "sign.h"

/* o's path, or the default file name in the key directory (malloc'd either way). */
static fmt_kind key_path(const char *given, const char *name, char **out, fmt_err *e)
{
	if (given) {
		*out = strdup(given);
		return *out ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	return fmt_key_file_path(name, out, e);
}

fmt_pass_opts sign_pass_opts(const sign_opts *o)
{
	return fmt_cli_pass_opts(o->passphrase_file, o->passphrase_env, &o->common);
}

/* The passphrase: --passphrase-file, --passphrase-env or the terminal (twice when confirm). */
static fmt_kind passphrase(const sign_opts *o, int confirm, fmt_hmac_key *pw, fmt_err *e)
{
	fmt_pass_opts po = sign_pass_opts(o);
	return fmt_passphrase(&po, confirm, pw, e);
}

/* kind: as JSON names it, lowercase as fmt-verify's and sign --embed's ("ed25519"); title: as
 * the text line does ("Ed25519"). */
static fmt_kind keys_record(const sign_opts *o, const char *kind, const char *id, const char *pub, const char *sec,
			    fmt_json_rec *rec, fmt_err *e)
{
	if (!sign_json_record(o))
		return FMT_OK;
	unsigned long since = fmt_json_memory_failures();
	json_t *obj = json_pack("{s:b, s:s, s:s, s:o, s:o}", "ok", 1, "kind", kind, "key_id", id,
				"public_key", fmt_json_string(pub, strlen(pub)), "secret_key", fmt_json_string(sec, strlen(sec)));
	return fmt_json_rec_make(rec, obj, since, e);
}

/* The keys made, reported: rec is their JSON record (keys_record, made before the files). */
static int report_keys(const sign_opts *o, const char *title, const char *id, const char *pub, const char *sec,
		       fmt_json_rec *rec)
{
	if (o->common.quiet)
		return 0;
	if (o->common.json)
		return sign_put_record(o, NULL, rec);
	printf("created %s key %s\npublic key: ", title, id);
	fmt_out_escaped(stdout, pub, strlen(pub));
	printf("\nsecret key: ");
	fmt_out_escaped(stdout, sec, strlen(sec));
	printf("\n");
	return 0;
}

/* Both files or neither (fmt_key_pair_create). */
static fmt_kind write_pair(const sign_opts *o, const char *pub_path, const char *pub, size_t pub_len,
			   const char *sec_path, const uint8_t *sec, size_t sec_len, fmt_err *e)
{
	const char *failed = NULL;
	fmt_kind k = fmt_key_pair_create(pub_path, pub, pub_len, sec_path, sec, sec_len, o->force,
					 &failed, e);
	if (k != FMT_OK && failed)
		fmt_err_file(e, failed);
	return k;
}

static int keygen_x25519(const sign_opts *o, char *pub_path, char *sec_path)
{
	fmt_err e;
	fmt_x25519_pair pair;
	fmt_json_rec rec = { 0 };
	char *pub = NULL, id[FMT_MS_KEY_ID_HEX];
	uint8_t *sec = NULL;
	size_t pub_len, sec_len;
	fmt_err_clear(&e);
	fmt_kind k = fmt_x25519_keygen(&pair, &e);
	if (k == FMT_OK)
		k = fmt_x25519_public_text(&pair, &pub, &pub_len, &e);
	fmt_pass_opts po = sign_pass_opts(o);
	if (k == FMT_OK)
		k = o->no_passphrase ? fmt_x25519_secret_text(&pair, &sec, &sec_len, &e)
				     : fmt_x25519_secret_seal(&pair, &po, &sec, &sec_len, &e);
	if (k == FMT_OK) { /* the record before the files: out of memory leaves none */
		fmt_x25519_key_id(pair.pk, id);
		k = keys_record(o, "x25519", id, pub_path, sec_path, &rec, &e);
	}
	if (k == FMT_OK)
		k = write_pair(o, pub_path, pub, pub_len, sec_path, sec, sec_len, &e);
	int code = k == FMT_OK ? report_keys(o, "X25519", id, pub_path, sec_path, &rec) : sign_fail(o, NULL, &e);
	fmt_json_rec_free(&rec);
	free(pub);
	if (sec)
		sodium_free(sec);
	fmt_x25519_free(&pair);
	return code;
}

static int keygen_ed25519(const sign_opts *o, char *pub_path, char *sec_path)
{
	fmt_err e;
	fmt_ms_public pub;
	fmt_ms_secret sec;
	fmt_hmac_key pw = { 0 };
	fmt_json_rec rec = { 0 };
	char *pub_text = NULL, id[FMT_MS_KEY_ID_HEX];
	uint8_t *sec_text = NULL;
	size_t pub_len, sec_len;
	fmt_err_clear(&e);
	fmt_kind k = fmt_ms_keygen(&pub, &sec, &e);
	if (k == FMT_OK && !o->no_passphrase)
		k = passphrase(o, 1, &pw, &e);
	if (k == FMT_OK)
		k = fmt_ms_public_text(&pub, &pub_text, &pub_len, &e);
	void (*notice)(const char *) = k == FMT_OK && !o->no_passphrase ? sign_pass_opts(o).notice : NULL;
	if (notice)
		notice(FMT_PASS_DERIVING);
	if (k == FMT_OK)
		k = fmt_ms_secret_text(&sec, o->no_passphrase ? NULL : pw.bytes, pw.len, &sec_text,
				       &sec_len, &e);
	if (notice)
		notice(NULL);
	if (k == FMT_OK) { /* the record before the files: out of memory leaves none */
		fmt_ms_key_id(pub.keynum, id);
		k = keys_record(o, "ed25519", id, pub_path, sec_path, &rec, &e);
	}
	if (k == FMT_OK)
		k = write_pair(o, pub_path, pub_text, pub_len, sec_path, sec_text, sec_len, &e);
	int code = k == FMT_OK ? report_keys(o, "Ed25519", id, pub_path, sec_path, &rec) : sign_fail(o, NULL, &e);
	fmt_json_rec_free(&rec);
	free(pub_text);
	if (sec_text)
		sodium_free(sec_text);
	fmt_hmac_key_free(&pw);
	fmt_ms_secret_free(&sec);
	return code;
}

/* Before the keys are made: two different files (-p and -s, also through another spelling or
 * a hard link), neither of them the passphrase file. */
static fmt_kind check_pair_paths(const sign_opts *o, const char *pub_path, const char *sec_path, fmt_err *e)
{
	const char *inputs[1] = { o->passphrase_file };
	if (fmt_same_path(pub_path, sec_path)) {
		return fmt_fail_file(e, FMT_USAGE, sec_path, "-s and -p %s name the same file; a key pair is two files",
				     pub_path);
	}
	if (sign_check_output(sec_path, inputs, 1, e) != FMT_OK || sign_check_output(pub_path, inputs, 1, e) != FMT_OK)
		return e->kind;
	return FMT_OK;
}

int sign_cmd_keygen_keypair(const sign_opts *o)
{
	fmt_err e;
	char *pub_path = NULL, *sec_path = NULL;
	fmt_err_clear(&e);
	const char *base = o->x25519 ? "x25519" : "ed25519";
	char pub_name[16], sec_name[16];
	snprintf(pub_name, sizeof pub_name, "%s.pub", base);
	snprintf(sec_name, sizeof sec_name, "%s.key", base);
	if (key_path(o->pubkey, pub_name, &pub_path, &e) != FMT_OK ||
	    key_path(o->seckey, sec_name, &sec_path, &e) != FMT_OK) {
		free(pub_path);
		return sign_fail(o, NULL, &e);
	}
	int code = check_pair_paths(o, pub_path, sec_path, &e) != FMT_OK ? sign_fail(o, NULL, &e)
		   : o->x25519 ? keygen_x25519(o, pub_path, sec_path) : keygen_ed25519(o, pub_path, sec_path);
	free(pub_path);
	free(sec_path);
	return code;
}

/* Load the secret key o names (the default one otherwise), asking for its passphrase if it
 * has one. */
static fmt_kind load_secret(const sign_opts *o, fmt_ms_secret *sec, fmt_err *e)
{
	fmt_pass_opts po = sign_pass_opts(o);
	return fmt_ms_secret_load(o->seckey, &po, sec, e);
}

int sign_cmd_key_id_ed25519(const sign_opts *o)
{
	fmt_err e;
	fmt_ms_public pub;
	char id[FMT_MS_KEY_ID_HEX];
	fmt_err_clear(&e);
	if (o->pubkey) {
		if (fmt_ms_public_load(o->pubkey, &pub, &e) != FMT_OK)
			return sign_fail(o, NULL, &e);
		fmt_ms_key_id(pub.keynum, id);
	} else if (o->pubkey_b64) {
		if (fmt_ms_public_parse(o->pubkey_b64, strlen(o->pubkey_b64), 1, &pub, &e) != FMT_OK)
			return sign_fail(o, NULL, &e);
		fmt_ms_key_id(pub.keynum, id);
	} else {
		fmt_ms_secret sec;
		if (load_secret(o, &sec, &e) != FMT_OK)
			return sign_fail(o, NULL, &e);
		fmt_ms_key_id(sec.keynum, id);
		fmt_ms_secret_free(&sec);
	}
	if (o->common.quiet)
		return 0;
	if (o->common.json)
		printf("{\"ok\":true,\"key_id\":\"%s\"}\n", id);
	else
		printf("%s\n", id);
	return 0;
}

/* "FILE.minisig", or -x's path. */
static char *sig_path_for(const char *file, const sign_opts *o)
{
	if (o->sigfile)
		return strdup(o->sigfile);
	size_t n = strlen(file) + sizeof ".minisig";
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s.minisig", file);
	return p;
}

/* minisign's default trusted comment: the time and the file's base name (control characters
 * replaced, a trusted comment is one line). */
static char *default_trusted_comment(const char *file)
{
	const char *base = fmt_base_name(file);
	size_t n = strlen(base) + 64;
	char *tc = malloc(n);
	if (!tc)
		return NULL;
	int head = snprintf(tc, n, "timestamp:%lld\tfile:", (long long)time(NULL));
	char *p = tc + head;
	for (const char *s = base; *s; s++)
		*p++ = (*s == '\n' || *s == '\r') ? '?' : *s;
	strcpy(p, "\thashed");
	return tc;
}

static fmt_kind sign_one(const char *file, const fmt_ms_secret *sec, const sign_opts *o,
			 const char *sig_path, fmt_err *e)
{
	uint8_t hash[FMT_MS_HASH];
	char *text = NULL, *tc = NULL;
	size_t len;
	fmt_sink sink;
	fmt_kind k = fmt_ms_hash_file(file, hash, e);
	if (k != FMT_OK) {
		fmt_err_file(e, file);
		return k;
	}
	tc = o->trusted_comment ? strdup(o->trusted_comment) : default_trusted_comment(file);
	if (!tc)
		return fmt_fail(e, FMT_IO, "out of memory");
	k = fmt_ms_sign(sec, hash, tc, &text, &len, e);
	free(tc);
	if (k == FMT_OK)
		k = fmt_sink_open(&sink, sig_path, FMT_SINK_FORCE, e);
	if (k == FMT_OK) {
		k = fmt_sink_write(&sink, text, len, e);
		if (k == FMT_OK)
			k = fmt_sink_commit(&sink, e);
		else
			fmt_sink_abort(&sink);
	}
	free(text);
	return k;
}

/* The JSON record of a signed file: detached (sig_path) or embedded. */
static json_t *signed_json(const char *file, const char *sig_path, const char *id)
{
	return sig_path ? json_pack("{s:o, s:b, s:o, s:s}", "file", fmt_json_string(file, strlen(file)), "ok", 1,
				    "signature", fmt_json_string(sig_path, strlen(sig_path)), "key_id", id)
			: json_pack("{s:o, s:b, s:s, s:s}", "file", fmt_json_string(file, strlen(file)), "ok", 1,
				    "kind", "ed25519", "key_id", id);
}

/* One signed file reported: "signed FILE with key ID: SIGFILE" (detached) or "... with Ed25519 key
 * ID (embedded)", or its JSON record (rec, made before the signature was written); 0 or the I/O
 * exit status. */
static int report_signed_file(const char *file, const char *sig_path, const char *id, const sign_opts *o,
			      fmt_json_rec *rec)
{
	if (o->common.quiet || o->sig_on_stdout)
		return 0;
	if (o->common.json)
		return sign_put_record(o, file, rec);
	printf("signed ");
	fmt_out_escaped(stdout, file, strlen(file));
	if (sig_path) {
		printf(" with key %s: ", id);
		fmt_out_escaped(stdout, sig_path, strlen(sig_path));
		printf("\n");
	} else {
		printf(" with Ed25519 key %s (embedded)\n", id);
	}
	return 0;
}

/* What sign reads besides its FILEs: the secret key (the default one when -s is not given) and
 * the passphrase file; *key_file is malloc'd (NULL when no key path can be found). */
static void secret_inputs(const sign_opts *o, char **key_file, const char *inputs[2])
{
	fmt_err e;
	if (key_path(o->seckey, "ed25519.key", key_file, &e) != FMT_OK)
		*key_file = NULL;
	inputs[0] = *key_file;
	inputs[1] = o->passphrase_file;
}

/* Before anything is written: no output (FILE.minisig, -x, or FILE itself with --embed) may be
 * a file the command reads (a FILE operand that is not the output itself, the key, the
 * passphrase file). */
static fmt_kind check_sign_outputs(char **files, int n, const sign_opts *o, int embed, fmt_err *e)
{
	char *key_file = NULL;
	const char *inputs[2];
	secret_inputs(o, &key_file, inputs);
	fmt_kind k = FMT_OK;
	for (int i = 0; k == FMT_OK && i < n; i++) {
		char *out = embed ? files[i] : sig_path_for(files[i], o);
		if (!out) {
			k = fmt_fail(e, FMT_IO, "out of memory");
			break;
		}
		k = sign_check_output(out, inputs, 2, e);
		for (int j = 0; k == FMT_OK && !embed && j < n; j++)
			k = sign_check_output(out, (const char *const *)&files[j], 1, e);
		if (!embed)
			free(out);
	}
	free(key_file);
	return k;
}

/* sign -s (FILE.minisig for each FILE) and sign --embed (inside each FILE, in place). */
static int sign_files(char **files, int n, const sign_opts *o, int embed)
{
	fmt_err e;
	fmt_ms_secret sec;
	char id[FMT_MS_KEY_ID_HEX];
	fmt_err_clear(&e);
	if (check_sign_outputs(files, n, o, embed, &e) != FMT_OK)
		return sign_fail(o, NULL, &e);
	if (load_secret(o, &sec, &e) != FMT_OK)
		return sign_fail(o, NULL, &e);
	fmt_ms_key_id(sec.keynum, id);
	fmt_keyset keys = { .ed25519_secret = &sec };
	int threads = o->common.threads > 0 ? o->common.threads : fmt_cpu_count();
	int worst = 0;
	for (int i = 0; i < n; i++) {
		fmt_json_rec rec = { 0 };
		fmt_err_clear(&e);
		sign_input(o, files[i]);
		char *sig_path = embed ? NULL : sig_path_for(files[i], o);
		fmt_kind k = embed || sig_path ? FMT_OK : fmt_fail(&e, FMT_IO, "out of memory");
		if (k == FMT_OK && sign_json_record(o)) { /* before the signature is written: out of memory leaves none */
			unsigned long since = fmt_json_memory_failures();
			k = fmt_json_rec_make(&rec, signed_json(files[i], sig_path, id), since, &e);
		}
		if (k == FMT_OK)
			k = embed ? fmt_sign_any_in_place(files[i], &keys, threads, &e) : sign_one(files[i], &sec, o, sig_path, &e);
		int code = k != FMT_OK ? sign_fail(o, files[i], &e) : report_signed_file(files[i], sig_path, id, o, &rec);
		worst = code > worst ? code : worst;
		fmt_json_rec_free(&rec);
		free(sig_path);
	}
	fmt_ms_secret_free(&sec);
	return worst;
}

int sign_cmd_sign_minisig(char **files, int n, const sign_opts *o)
{
	return sign_files(files, n, o, 0);
}

int sign_cmd_sign_embed(char **files, int n, const sign_opts *o)
{
	return sign_files(files, n, o, 1);
}

/* No FILE.minisig: the file's embedded Ed25519 signature, checked as fmt-verify checks it (the
 * whole file verified, the signature by one of the n keys); a file without one, or that
 * cannot be read as a format that has one, is not signed (SignatureInvalid). */
static fmt_kind verify_embedded(const char *file, const fmt_ms_public *keys, size_t n, const sign_opts *o,
				fmt_signer *signer, fmt_err *e)
{
	fmt_model m;
	fmt_table t;
	int is_table = 0;
	memset(signer, 0, sizeof *signer);
	fmt_verify_opts vo = { .threads = o->common.threads > 0 ? o->common.threads : fmt_cpu_count(),
			       .keys = { .trusted = keys, .n_trusted = n }, .signer = signer };
	fmt_kind k = fmt_open_any(file, NULL, &m, &t, &is_table, e);
	if (k == FMT_IO)   /* the file itself cannot be opened or read: IoError, as fmt-verify says */
		return k;
	if (k != FMT_OK) {
		char why[FMT_ERR_MSG_MAX];
		snprintf(why, sizeof why, "%s", e->msg);
		return fmt_fail(e, FMT_SIGNATURE, "not signed: no %s.minisig beside it, and no embedded signature "
				"can be read (%s)", file, why);
	}
	k = is_table ? fmt_table_verify(&t, &vo, e) : fmt_model_verify(&m, &vo, e);
	if (is_table)
		fmt_table_free(&t);
	else
		fmt_model_free(&m);
	if (k == FMT_OK && !(signer->kind && strcmp(signer->kind, "ed25519") == 0))
		k = fmt_fail(e, FMT_SIGNATURE, "not signed: no %s.minisig beside it and no embedded Ed25519 signature",
			     file);
	return k;
}

/* After FILE.minisig verified: the embedded signature of a file that carries one must verify
 * too (signer->kind set then), as fmt-verify checks both; a file that cannot be read as a
 * format, or carries none, is signed by FILE.minisig alone. A bad embedded signature is named
 * as such: FILE.minisig was good. */
static fmt_kind verify_embedded_too(const char *file, const fmt_ms_public *keys, size_t n, const sign_opts *o,
				    fmt_signer *signer, fmt_err *e)
{
	fmt_model m;
	fmt_table t;
	fmt_err none;
	int is_table = 0;
	fmt_verify_opts vo = { .threads = o->common.threads > 0 ? o->common.threads : fmt_cpu_count(),
			       .keys = { .trusted = keys, .n_trusted = n }, .signed_elsewhere = 1, .signer = signer };
	if (fmt_open_any(file, NULL, &m, &t, &is_table, &none) != FMT_OK)
		return FMT_OK;
	fmt_kind k = is_table ? fmt_table_verify(&t, &vo, e) : fmt_model_verify(&m, &vo, e);
	if (is_table)
		fmt_table_free(&t);
	else
		fmt_model_free(&m);
	if (k == FMT_SIGNATURE)
		fmt_err_prefix(e, "the embedded signature (the .minisig is good)");
	return k;
}

/* FILE.minisig (or -x) when there is one, then the embedded signature if the file carries one;
 * else the embedded signature alone. signer->kind is set when an embedded one was checked,
 * *detached when FILE.minisig (-x) was. */
static fmt_kind verify_one(const char *file, const fmt_ms_public *keys, size_t n, const sign_opts *o,
			   fmt_ms_sig *sig, size_t *which, fmt_signer *signer, int *detached, fmt_err *e)
{
	char *sig_path = sig_path_for(file, o), *text = NULL;
	size_t len;
	struct stat st;
	memset(signer, 0, sizeof *signer);
	*detached = 0;
	if (!sig_path)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (!o->sigfile && lstat(sig_path, &st) != 0 && errno == ENOENT) {
		free(sig_path);
		return verify_embedded(file, keys, n, o, signer, e);
	}
	/* -x names its file; FILE.minisig is found beside FILE: a regular file only. */
	fmt_kind k = fmt_read_small(sig_path, o->sigfile ? FMT_SMALL_NAMED : 0, FMT_MS_FILE_MAX, &text, &len, e);
	if (k == FMT_OK) {
		k = fmt_ms_sig_parse(text, len, sig, e);
		if (k != FMT_OK)
			fmt_err_file(e, sig_path);
	}
	free(text);
	free(sig_path);
	if (k == FMT_OK)
		k = fmt_ms_verify_file(sig, keys, n, file, which, e);
	if (k == FMT_OK) {
		*detached = 1;
		k = verify_embedded_too(file, keys, n, o, signer, e);
	}
	return k;
}

/* The trusted comment as minisign prints it (tabs kept), other control bytes escaped. */
static void print_trusted(const char *s, size_t n)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '\t')
			continue;
		fmt_out_escaped(stdout, s + start, i - start);
		if (i < n)
			putchar('\t');
		start = i + 1;
	}
}

/* An embedded signature verified: "Embedded Ed25519 signature verified (key ID)", or the JSON
 * object {"file", "ok": true, "key_id", "embedded": true}; 0 or the I/O exit status. */
static int report_embedded(const char *file, const char *id, const sign_opts *o)
{
	if (!o->common.json) {
		printf("Embedded Ed25519 signature verified (key %s)\n", id);
		return 0;
	}
	json_t *obj = json_pack("{s:o, s:b, s:s, s:b}", "file", fmt_json_string(file, strlen(file)), "ok", 1, "key_id", id,
				"embedded", 1);
	return sign_print_json(o, file, obj);
}

int sign_cmd_verify(char **files, int n, const sign_opts *o)
{
	fmt_err e;
	fmt_trust_list trust;
	fmt_trust_opts to = { o->pubkey, o->pubkey_b64, o->trusted_dir };
	fmt_err_clear(&e);
	if (fmt_trust_load(&to, 1, &trust, &e) != FMT_OK) {
		fmt_trust_free(&trust);
		return sign_fail(o, NULL, &e);
	}
	const fmt_ms_public *keys = trust.keys;
	size_t n_keys = trust.n;
	fmt_ms_sig *sig = malloc(sizeof *sig);
	if (!sig) {
		fmt_trust_free(&trust);
		fmt_fail(&e, FMT_IO, "out of memory");
		return sign_fail(o, NULL, &e);
	}
	int worst = 0;
	for (int i = 0; i < n; i++) {
		size_t which = 0;
		char id[FMT_MS_KEY_ID_HEX];
		fmt_signer signer;
		int detached;
		fmt_err_clear(&e);
		sign_input(o, files[i]);
		if (verify_one(files[i], keys, n_keys, o, sig, &which, &signer, &detached, &e) != FMT_OK) {
			int code = sign_fail(o, files[i], &e);
			worst = code > worst ? code : worst;
			continue;
		}
		if (o->common.quiet)
			continue;
		const char *embedded_id = signer.kind && strcmp(signer.kind, "ed25519") == 0 ? signer.key_id : NULL;
		if (!detached) {
			int code = report_embedded(files[i], signer.key_id, o);
			worst = code > worst ? code : worst;
			continue;
		}
		fmt_ms_key_id(sig->keynum, id);
		if (o->common.json) {
			json_t *obj = json_pack("{s:o, s:b, s:s, s:b, s:o}", "file",
						fmt_json_string(files[i], strlen(files[i])), "ok", 1, "key_id", id,
						"prehashed", sig->prehashed, "trusted_comment",
						fmt_json_string(sig->trusted, sig->trusted_len));
			if (obj && embedded_id)
				json_object_set_new(obj, "embedded_key_id", json_string(embedded_id));
			int code = sign_print_json(o, files[i], obj);
			worst = code > worst ? code : worst;
		} else {
			printf("Signature and comment signature verified\nTrusted comment: ");
			print_trusted(sig->trusted, sig->trusted_len);
			printf("\n");
			if (embedded_id)
				report_embedded(files[i], embedded_id, o);
		}
	}
	free(sig);
	fmt_trust_free(&trust);
	return worst;
}
