/* Apsi checkpoints (specs/apsim.md): the single-file driver. An .apsim is a safetensors file;
 * open validates it with the safetensors reader, then every rule of §2-§4 on its __metadata__;
 * verify recomputes SHA-256(T || data) (§5) and, with a key, the HMAC signature (§6).
 *
 * Reader policy (where the spec leaves room):
 *  - The header padding after the JSON object must be spaces (0x20): safetensors allows any
 *    JSON white space there, but other white space is the one single-byte change the digest
 *    could not see, so an .apsim refuses it.
 *  - format must be "apsi-model" (InvalidFormat); a version other than "1" is Unsupported.
 *  - shard is optional in a single file (absent = 1/1); "i/N" is decimal without sign or
 *    leading zeros, 1 <= i <= N.
 *  - signature: "hmac-sha256:<id>:<64 lowercase hex>", id 1..64 characters of [A-Za-z0-9._-].
 *  - qtensor descriptors hold exactly the six members of §4; a per-channel axis requires
 *    scale_shape[axis] == shape[axis] and 1 elsewhere.
 *  - Units of a single file must name a tensor of the file (not a __qscale of a compressed
 *    tensor); in a shard of a set they must name a tensor of the set (checked by the index).
 *  - User metadata: strings, integers (i64), reals (f64), booleans and arrays of one such
 *    kind (integers mixed with reals become f64) are typed values; null, objects and other
 *    arrays become their compact JSON text (a string).
 *  - verify also reads every scales tensor and refuses NaN/Inf scales (InvalidFormat) once
 *    the digest matched. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/json_text.h"
#include "fmt/out.h"
#include "fmt/qtensor.h"
#include "fmt/safetensors.h"
#include "fmt/meter.h"
#include "apsim_internal.h"
#include "fmt/tree_budget.h"

#define NM APSIM_NM


/* ---- syntax ---- */

int fmt_apsim_hex64_ok(const char *s, size_t len)
{
	if (len != FMT_SHA256_HEX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int key_id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '_' || c == '-';
}

/* "ed25519:<16 uppercase hex>:<Base64 of 64 bytes>" (§6.1). */
static int ed25519_syntax_ok(const char *s, size_t len)
{
	static const char prefix[] = "ed25519:";
	size_t pl = sizeof prefix - 1;
	uint8_t sig[FMT_MS_SIG];
	if (len != pl + 16 + 1 + APSIM_ED25519_B64 || memcmp(s, prefix, pl) != 0 || s[pl + 16] != ':')
		return 0;
	for (size_t i = pl; i < pl + 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
			return 0;
	return fmt_unbase64(s + pl + 17, APSIM_ED25519_B64, sig, sizeof sig) == 0;
}

int fmt_apsim_signature_syntax_ok(const char *s, size_t len)
{
	static const char prefix[] = "hmac-sha256:";
	size_t pl = sizeof prefix - 1;
	if (len > 8 && memcmp(s, "ed25519:", 8) == 0)
		return ed25519_syntax_ok(s, len);
	if (len < pl + 2 + FMT_SHA256_HEX || memcmp(s, prefix, pl) != 0)
		return 0;
	size_t id_len = len - pl - 1 - FMT_SHA256_HEX;
	if (id_len < 1 || id_len > 64 || s[pl + id_len] != ':')
		return 0;
	for (size_t i = 0; i < id_len; i++)
		if (!key_id_char(s[pl + i]))
			return 0;
	return fmt_apsim_hex64_ok(s + pl + id_len + 1, FMT_SHA256_HEX);
}

const char *fmt_apsim_signature_kind(const char *sig)
{
	return strncmp(sig, "ed25519:", 8) == 0 ? "ed25519" : "hmac-sha256";
}

void fmt_apsim_signature_parts(const char *sig, const char **kind, size_t *kind_len, const char **id,
			       size_t *id_len)
{
	const char *colon = strchr(sig, ':'), *last = strrchr(sig, ':');
	*kind = sig;
	*kind_len = (size_t)(colon - sig);
	*id = colon + 1;
	*id_len = (size_t)(last - colon - 1);
}

int fmt_apsim_json_too_deep(const char *s, size_t n, int limit)
{
	int depth = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '"') {
			i = fmt_json_string_end(s, n, i, 0, NULL);
		} else if (c == '[' || c == '{') {
			if (++depth > limit)
				return 1;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 0;
}

/* "i/N": decimal, no sign, no leading zeros, 1 <= i <= N < 2^32. */
static int parse_shard(const char *s, uint32_t *i_out, uint32_t *n_out)
{
	uint64_t v[2] = { 0, 0 };
	const char *p = s;
	for (int part = 0; part < 2; part++) {
		if (*p < '1' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9') {
			v[part] = v[part] * 10 + (uint64_t)(*p - '0');
			if (v[part] > UINT32_MAX)
				return 0;
			p++;
		}
		if (part == 0 && *p++ != '/')
			return 0;
	}
	if (*p != '\0' || v[0] > v[1])
		return 0;
	*i_out = (uint32_t)v[0];
	*n_out = (uint32_t)v[1];
	return 1;
}

/* ---- the canonical table (§5) ---- */

static int cmp_kv_ptr(const void *a, const void *b)
{
	const apsim_kv *x = *(const apsim_kv *const *)a, *y = *(const apsim_kv *const *)b;
	return strcmp(x->key, y->key);
}

static void sb_len_str(fmt_sb *b, const char *s, size_t n)
{
	fmt_sb_u64(b, n);
	fmt_sb_put(b, ":", 1);
	fmt_sb_put(b, s, n);
}

fmt_kind fmt_apsim_build_table(const apsim_kv *kv, size_t n_kv, const fmt_tensor *const *tensors,
			   const uint64_t *begins, size_t n_t, char **out, size_t *len, fmt_err *e)
{
	const apsim_kv **sorted = malloc((n_kv ? n_kv : 1) * sizeof *sorted);
	if (!sorted)
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < n_kv; i++)
		if (strcmp(kv[i].key, "sha256") != 0 && strcmp(kv[i].key, "signature") != 0)
			sorted[n++] = &kv[i];
	qsort(sorted, n, sizeof *sorted, cmp_kv_ptr);
	fmt_sb b = { 0 };
	fmt_sb_puts(&b, "APSI-TABLE/1\n");
	for (size_t i = 0; i < n; i++) {
		fmt_sb_puts(&b, "M ");
		sb_len_str(&b, sorted[i]->key, strlen(sorted[i]->key));
		fmt_sb_put(&b, " ", 1);
		sb_len_str(&b, sorted[i]->val, sorted[i]->val_len);
		fmt_sb_put(&b, "\n", 1);
	}
	free(sorted);
	for (size_t i = 0; i < n_t; i++) {
		const fmt_tensor *t = tensors[i];
		fmt_sb_puts(&b, "T ");
		sb_len_str(&b, t->name, strlen(t->name));
		fmt_sb_put(&b, " ", 1);
		fmt_sb_puts(&b, fmt_dtype_name(t->dtype));
		fmt_sb_puts(&b, " [");
		for (int d = 0; d < t->ndim; d++) {
			if (d)
				fmt_sb_put(&b, ",", 1);
			fmt_sb_u64(&b, t->shape[d]);
		}
		fmt_sb_puts(&b, "] ");
		fmt_sb_u64(&b, begins[i]);
		fmt_sb_put(&b, " ", 1);
		fmt_sb_u64(&b, begins[i] + t->nbytes);
		fmt_sb_put(&b, "\n", 1);
	}
	fmt_sb_puts(&b, "END\n");
	if (b.oom) {
		free(b.p);
		return fmt_fail(e, FMT_IO, "out of memory building the canonical table");
	}
	*out = b.p;
	*len = b.len;
	return FMT_OK;
}

/* The tensors of f in file order and their data_offsets begins. */
static fmt_kind file_tensors(const fmt_model *m, const apsim_file *f, const fmt_tensor ***ts,
			     uint64_t **begins, fmt_err *e)
{
	size_t n = f->n_tensors;
	*ts = malloc((n ? n : 1) * sizeof **ts);
	*begins = malloc((n ? n : 1) * sizeof **begins);
	if (!*ts || !*begins) {
		free(*ts);
		free(*begins);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	/* The safetensors reader appends a file's tensors in data-offset order. */
	for (size_t i = 0; i < n; i++) {
		(*ts)[i] = &m->tensors[f->first_tensor + i];
		(*begins)[i] = (*ts)[i]->file_offset;
	}
	return FMT_OK;
}

static fmt_kind file_table(const fmt_model *m, const apsim_file *f, char **table, size_t *len, fmt_err *e)
{
	const fmt_tensor **ts;
	uint64_t *begins;
	fmt_kind k = file_tensors(m, f, &ts, &begins, e);
	if (k != FMT_OK)
		return k;
	k = fmt_apsim_build_table(f->kv, f->n_kv, ts, begins, f->n_tensors, table, len, e);
	free(ts);
	free(begins);
	return k;
}

fmt_kind fmt_apsim_file_digest(fmt_model *m, const apsim_file *f, char hex[FMT_SHA256_HEX + 1], fmt_err *e)
{
	char *table = NULL;
	size_t len = 0;
	fmt_kind k = file_table(m, f, &table, &len, e);
	if (k != FMT_OK)
		return k;
	fmt_sha256 h;
	uint8_t digest[FMT_SHA256_LEN];
	k = fmt_sha256_init(&h, e);
	if (k == FMT_OK) {
		fmt_meter_planned(len); /* the data was announced before the digests began */
		k = fmt_sha256_update(&h, table, len, e);
		if (k == FMT_OK)
			k = fmt_sha256_source(&h, &m->sources[f->source], 8 + f->header_len, f->data_len, e);
		if (k == FMT_OK)
			k = fmt_sha256_final(&h, digest, e);
		fmt_sha256_free(&h);
	}
	free(table);
	if (k == FMT_OK)
		fmt_hex(digest, FMT_SHA256_LEN, hex);
	return k;
}

/* ---- signatures (§6) ---- */

static fmt_kind signed_input(const char *const *shas, size_t n, fmt_sb *b, fmt_err *e)
{
	fmt_sb_puts(b, "APSI-SIG/1\ncount ");
	fmt_sb_u64(b, n);
	fmt_sb_put(b, "\n", 1);
	for (size_t i = 0; i < n; i++) {
		fmt_sb_u64(b, i + 1);
		fmt_sb_put(b, " ", 1);
		fmt_sb_puts(b, shas[i]);
		fmt_sb_put(b, "\n", 1);
	}
	if (b->oom) {
		free(b->p);
		b->p = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

static fmt_kind signature_mac(const fmt_hmac_key *key, const char *const *shas, size_t n,
			      uint8_t mac[FMT_SHA256_LEN], fmt_err *e)
{
	fmt_sb b = { 0 };
	fmt_kind k = signed_input(shas, n, &b, e);
	if (k != FMT_OK)
		return k;
	fmt_hmac_sha256(key->bytes, key->len, b.p, b.len, mac);
	free(b.p);
	return FMT_OK;
}

static fmt_kind hmac_signature(const fmt_hmac_key *key, const char *const *shard_sha256, size_t n,
			       char out[FMT_APSIM_SIG_MAX], fmt_err *e)
{
	uint8_t mac[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	if (!key_id_char(key->id[0]) || strlen(key->id) > 16)
		return fmt_fail(e, FMT_INTERNAL, "signing key without a valid id");
	fmt_kind k = signature_mac(key, shard_sha256, n, mac, e);
	if (k != FMT_OK)
		return k;
	fmt_hex(mac, FMT_SHA256_LEN, hex);
	snprintf(out, FMT_APSIM_SIG_MAX, "hmac-sha256:%s:%s", key->id, hex);
	return FMT_OK;
}

static fmt_kind ed25519_signature(const fmt_ms_secret *sec, const char *const *shas, size_t n,
				  char out[FMT_APSIM_SIG_MAX], fmt_err *e)
{
	fmt_sb b = { 0 };
	uint8_t sig[FMT_MS_SIG];
	char id[FMT_MS_KEY_ID_HEX], b64[APSIM_ED25519_B64 + 1];
	fmt_kind k = signed_input(shas, n, &b, e);
	if (k != FMT_OK)
		return k;
	k = fmt_ed25519_sign(sec, b.p, b.len, sig, e);
	free(b.p);
	if (k != FMT_OK)
		return k;
	fmt_ms_key_id(sec->keynum, id);
	fmt_base64(sig, sizeof sig, b64, sizeof b64);
	snprintf(out, FMT_APSIM_SIG_MAX, "ed25519:%s:%s", id, b64);
	return FMT_OK;
}

fmt_kind fmt_apsim_signature(const fmt_keyset *keys, const char *const *shard_sha256, size_t n,
			     char out[FMT_APSIM_SIG_MAX], fmt_err *e)
{
	if (keys && keys->hmac)
		return hmac_signature(keys->hmac, shard_sha256, n, out, e);
	if (keys && keys->ed25519_secret)
		return ed25519_signature(keys->ed25519_secret, shard_sha256, n, out, e);
	return fmt_fail(e, FMT_INTERNAL, "signing without a key");
}

int fmt_apsim_keys_sign(const fmt_keyset *keys)
{
	return keys && (keys->hmac || keys->ed25519_secret);
}

static fmt_kind check_hmac(const char *sig, const fmt_hmac_key *key, const char *const *shas, size_t n, fmt_err *e)
{
	static const char prefix[] = "hmac-sha256:";
	const char *id = sig + sizeof prefix - 1;
	const char *colon = strrchr(sig, ':');
	size_t id_len = (size_t)(colon - id);
	if (strlen(key->id) != id_len || memcmp(id, key->id, id_len) != 0)
		return fmt_fail(e, FMT_SIGNATURE, "signed with key '%.*s', but the key given is '%s'", (int)id_len,
				id, key->id);
	uint8_t stored[FMT_SHA256_LEN], mac[FMT_SHA256_LEN];
	if (fmt_unhex(colon + 1, FMT_SHA256_HEX, stored, FMT_SHA256_LEN) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "signature is not 64 lowercase hex digits");
	fmt_kind k = signature_mac(key, shas, n, mac, e);
	if (k != FMT_OK)
		return k;
	if (!fmt_ct_equal(stored, mac, FMT_SHA256_LEN))
		return fmt_fail(e, FMT_SIGNATURE,
				"signature does not match (key '%s'): changed after signing, or signed with another key",
				key->id);
	return FMT_OK;
}

/* The key id of an ed25519 value back to minisign's 8 id bytes (little-endian). */
static void keynum_of(const char *hex16, uint8_t keynum[FMT_MS_KEYNUM])
{
	unsigned long long v = strtoull(hex16, NULL, 16);
	for (int i = 0; i < FMT_MS_KEYNUM; i++, v >>= 8)
		keynum[i] = (uint8_t)v;
}

static fmt_kind check_ed25519(const char *sig, const fmt_keyset *keys, const char *const *shas, size_t n,
			      fmt_err *e)
{
	char id[17];
	uint8_t keynum[FMT_MS_KEYNUM], raw[FMT_MS_SIG];
	memcpy(id, sig + 8, 16);
	id[16] = '\0';
	keynum_of(id, keynum);
	const fmt_ms_public *pub = fmt_trust_find_id(keys->trusted, keys->n_trusted, keynum);
	if (!pub)
		return fmt_fail(e, FMT_SIGNATURE, "signed by Ed25519 key %s, which is not a trusted key", id);
	if (fmt_unbase64(sig + 25, APSIM_ED25519_B64, raw, sizeof raw) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "ed25519 signature is not the Base64 of 64 bytes");
	fmt_sb b = { 0 };
	fmt_kind k = signed_input(shas, n, &b, e);
	if (k != FMT_OK)
		return k;
	int good = fmt_ed25519_verify(pub->pk, b.p, b.len, raw);
	free(b.p);
	if (!good)
		return fmt_fail(e, FMT_SIGNATURE, "bad Ed25519 signature by trusted key %s: changed after signing", id);
	return FMT_OK;
}

fmt_kind fmt_apsim_check_signature(const char *sig, const fmt_verify_opts *o, const char *const *shas,
				   size_t n, fmt_err *e)
{
	const fmt_keyset *keys = &o->keys;
	if (!sig) {
		if (o->signed_elsewhere && !keys->hmac)
			return FMT_OK;
		return fmt_fail(e, FMT_SIGNATURE, "not signed (a key was given, but there is no signature)");
	}
	int ed = strncmp(sig, "ed25519:", 8) == 0;
	fmt_kind k;
	if (ed && !keys->n_trusted)
		k = fmt_fail(e, FMT_SIGNATURE, "the signature is of kind ed25519 (key %.16s): check it with -p, -P "
			     "or --trusted-keys, not an HMAC key", sig + 8);
	else if (!ed && !keys->hmac)
		k = fmt_fail(e, FMT_SIGNATURE, "the signature is of kind hmac-sha256: check it with an HMAC key "
			     "(--hmac-key, --secret-file...), not an Ed25519 public key");
	else
		k = ed ? check_ed25519(sig, keys, shas, n, e) : check_hmac(sig, keys->hmac, shas, n, e);
	if (k == FMT_OK && o->signer) {
		const char *kind, *id;
		size_t kind_len, id_len;
		fmt_apsim_signature_parts(sig, &kind, &kind_len, &id, &id_len);
		o->signer->kind = fmt_apsim_signature_kind(sig);
		snprintf(o->signer->key_id, sizeof o->signer->key_id, "%.*s", (int)id_len, id);
	}
	return k;
}

/* ---- reading one file ---- */

void fmt_apsim_file_free(apsim_file *f)
{
	for (size_t i = 0; i < f->n_kv; i++) {
		free(f->kv[i].key);
		free(f->kv[i].val);
	}
	free(f->kv);
	json_decref(f->qtensors);
	free(f->extra);
	for (size_t i = 0; i < f->n_units; i++)
		free(f->unit_list[i].tensor);
	free(f->unit_list);
	fmt_nameset_free(&f->q_names);
	for (size_t i = 0; i < f->n_q; i++) {
		free(f->q_list[i].name);
		free(f->q_list[i].scales);
	}
	free(f->q_list);
	free(f->path);
	memset(f, 0, sizeof *f);
}

void fmt_apsim_state_free(apsim_state *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_files; i++)
		fmt_apsim_file_free(&st->files[i]);
	free(st->files);
	if (st->shard_names)
		for (size_t i = 0; i < st->n_files; i++)
			free(st->shard_names[i]);
	free(st->shard_names);
	free(st->shard_sha);
	free(st->index_signature);
	free(st->info.apsi);
	free(st->info.signature);
	free(st);
}

/* Move the metadata entries the safetensors reader appended into f. */
static fmt_kind take_meta(fmt_model *m, size_t from, apsim_file *f, fmt_err *e)
{
	size_t n = m->n_meta - from;
	f->kv = calloc(n ? n : 1, sizeof *f->kv);
	if (!f->kv) {
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		fmt_meta *x = &m->meta[from + i];
		f->kv[i].key = x->key;
		f->kv[i].val = x->val.v.str.ptr;
		f->kv[i].val_len = x->val.v.str.len;
	}
	f->n_kv = n;
	m->n_meta = from;
	return FMT_OK;
}

static fmt_kind read_layout(fmt_model *m, apsim_file *f, fmt_err *e)
{
	fmt_source *s = &m->sources[f->source];
	uint8_t raw[8];
	fmt_kind k = fmt_source_read(s, 0, raw, sizeof raw, e);
	if (k != FMT_OK)
		return k;
	f->header_len = fmt_rd_u64(raw); /* checked by the safetensors reader */
	f->data_len = s->size - 8 - f->header_len;
	char *h = malloc((size_t)f->header_len + 1);
	if (!h)
		return fmt_fail(e, FMT_IO, "out of memory");
	k = fmt_source_read(s, 8, h, (size_t)f->header_len, e);
	for (size_t i = (size_t)f->header_len; k == FMT_OK && i > 0; i--) {
		char c = h[i - 1];
		if (c == '}')
			break;
		if (c != ' ')
			k = fmt_fail(e, FMT_INVALID_FORMAT,
				     "header padding byte %zu is 0x%02x (an .apsim header is padded with spaces only)",
				     i - 1, (unsigned)(unsigned char)c);
	}
	free(h);
	return k;
}

static const char *const KNOWN_KEYS[] = { "format", "version", "apsi", "units", "qtensors",
					  "metadata", "sha256", "shard", "signature" };
#define N_KNOWN (sizeof KNOWN_KEYS / sizeof KNOWN_KEYS[0])

static fmt_kind interpret_keys(apsim_file *f, fmt_err *e)
{
	const apsim_kv *known[N_KNOWN] = { 0 };
	f->extra = calloc(f->n_kv ? f->n_kv : 1, sizeof *f->extra);
	if (!f->extra)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < f->n_kv; i++) {
		size_t j = 0;
		while (j < N_KNOWN && strcmp(f->kv[i].key, KNOWN_KEYS[j]) != 0)
			j++;
		if (j < N_KNOWN)
			known[j] = &f->kv[i];
		else
			f->extra[f->n_extra++] = f->kv[i].key;
	}
	if (!known[0])
		return fmt_fail(e, FMT_INVALID_FORMAT, "not an Apsi checkpoint: __metadata__ has no 'format' key");
	if (strcmp(known[0]->val, "apsi-model") != 0 || known[0]->val_len != 10)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not an Apsi checkpoint: __metadata__ format is '%.100s', expected 'apsi-model'",
				known[0]->val);
	for (size_t j = 1; j < 7; j++)
		if (!known[j])
			return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ lacks the required key '%s'", KNOWN_KEYS[j]);
	if (strcmp(known[1]->val, "1") != 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "Apsi version '%.100s' is not supported (expected '1')", known[1]->val);
	f->apsi = known[2]->val;
	f->units_text = known[3]->val;
	f->qtensors_text = known[4]->val;
	f->metadata_text = known[5]->val;
	f->sha256 = known[6]->val;
	if (!fmt_apsim_hex64_ok(known[6]->val, known[6]->val_len))
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ sha256 '%.100s' is not 64 lowercase hex digits",
				known[6]->val);
	f->shard_i = f->shard_n = 1;
	if (known[7]) {
		f->has_shard = 1;
		if (!parse_shard(known[7]->val, &f->shard_i, &f->shard_n))
			return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ shard '%.100s' is not 'i/N' with 1 <= i <= N",
					known[7]->val);
	}
	if (known[8]) {
		f->signature = known[8]->val;
		if (!fmt_apsim_signature_syntax_ok(known[8]->val, known[8]->val_len))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"__metadata__ signature '%.200s' is not 'hmac-sha256:<key-id>:<64 lowercase hex>' or 'ed25519:<key-id>:<base64>'",
					known[8]->val);
	}
	return FMT_OK;
}

/* ---- the user's metadata record, checked without building it ----
 * The record is any JSON object; verification needs only that it is one (valid, nested at
 * most APSIM_MAX_DEPTH deep, no duplicate members). A JSON tree of a 24 MB array of zeros
 * takes over a gigabyte, so the record is checked by this walker, which allocates only the
 * keys of the object it is in, and its members are made typed values one at a time
 * (apsim_fill_meta_units): flat arrays of numbers or booleans packed, small values through
 * jansson, anything else kept as its JSON text. */

typedef struct jwalk {
	const char *s, *end;
	const char *at;               /* where the first error is */
	const char *why;
} jwalk;

static int jw_fail(jwalk *w, const char *p, const char *why)
{
	w->at = p;
	w->why = why;
	return 0;
}

static const char *jw_ws(const char *p, const char *end)
{
	return p + fmt_json_skip_ws(p, (size_t)(end - p), 0);
}

/* p at '"': past the closing quote. A string with escapes is checked by jansson (surrogates,
 * \u0000); *escaped says so. */
static int jw_string(jwalk *w, const char **pp, int *escaped)
{
	size_t n = (size_t)(w->end - *pp);
	int esc = 0;
	size_t end = fmt_json_string_end(*pp, n, 0, 1, &esc);
	const char *p = *pp + end;
	if (end == n)
		return jw_fail(w, *pp, "unterminated string");
	if (*p != '"')
		return jw_fail(w, p, "control character in a string");
	p++;
	if (esc) {
		json_error_t je;
		json_t *j = fmt_json_loadb(*pp, (size_t)(p - *pp), JSON_DECODE_ANY, &je);
		if (!j)
			return jw_fail(w, *pp, fmt_json_nomem(&je) ? "out of memory" : "invalid escape in a string");
		json_decref(j);
	}
	if (escaped)
		*escaped = esc;
	*pp = p;
	return 1;
}

/* A JSON number as jansson takes it: integers must fit int64, reals must be finite. */
static int jw_number(jwalk *w, const char **pp)
{
	const char *p = *pp, *end = w->end;
	int real = 0;
	if (p < end && *p == '-')
		p++;
	if (p >= end || *p < '0' || *p > '9')
		return jw_fail(w, *pp, "invalid token");
	if (*p == '0')
		p++;
	else
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	if (p < end && *p == '.') {
		real = 1;
		if (++p >= end || *p < '0' || *p > '9')
			return jw_fail(w, p, "invalid number");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = 1;
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return jw_fail(w, p, "invalid number");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	char small[64], *tok = small;
	size_t len = (size_t)(p - *pp);
	if (len >= sizeof small && !(tok = malloc(len + 1)))
		return jw_fail(w, *pp, "out of memory");
	memcpy(tok, *pp, len);
	tok[len] = '\0';
	errno = 0;
	int bad = 0;
	if (real) {
		double d = strtod(tok, NULL);
		bad = errno == ERANGE && (d > 1 || d < -1); /* overflow; underflow is accepted, as jansson does */
	} else {
		(void)strtoll(tok, NULL, 10);
		bad = errno == ERANGE;
	}
	if (tok != small)
		free(tok);
	if (bad)
		return jw_fail(w, *pp, real ? "real number overflow" : "too big integer");
	*pp = p;
	return 1;
}

typedef struct jkey {
	const char *p;
	size_t n;
	char *decoded;                /* for keys with escapes */
} jkey;

static int cmp_jkey(const void *pa, const void *pb)
{
	const jkey *a = pa, *b = pb;
	const char *x = a->decoded ? a->decoded : a->p, *y = b->decoded ? b->decoded : b->p;
	size_t nx = a->decoded ? strlen(a->decoded) : a->n, ny = b->decoded ? strlen(b->decoded) : b->n;
	return fmt_bytes_cmp(x, nx, y, ny);
}

static int jw_value(jwalk *w, const char **pp, int depth);

static int jw_object_keys_unique(jwalk *w, jkey *keys, size_t n)
{
	qsort(keys, n, sizeof *keys, cmp_jkey);
	for (size_t i = 1; i < n; i++)
		if (cmp_jkey(&keys[i - 1], &keys[i]) == 0)
			return jw_fail(w, keys[i].p, "duplicate object key");
	return 1;
}

static int jw_object(jwalk *w, const char **pp, int depth)
{
	const char *p = jw_ws(*pp + 1, w->end);
	jkey *keys = NULL;
	size_t n = 0, cap = 0;
	int ok = 1;
	if (p < w->end && *p == '}') {
		*pp = p + 1;
		return 1;
	}
	while (ok) {
		if (p >= w->end || *p != '"') {
			ok = jw_fail(w, p, "string or '}' expected");
			break;
		}
		const char *k0 = p;
		int esc = 0;
		if (!(ok = jw_string(w, &p, &esc)))
			break;
		if (n == cap) {
			jkey *bigger = realloc(keys, (cap = cap ? cap * 2 : 8) * sizeof *keys);
			if (!bigger) {
				ok = jw_fail(w, k0, "out of memory");
				break;
			}
			keys = bigger;
		}
		keys[n] = (jkey){ k0 + 1, (size_t)(p - k0) - 2, NULL };
		if (esc) {
			json_t *j = fmt_json_loadb(k0, (size_t)(p - k0), JSON_DECODE_ANY, NULL);
			keys[n].decoded = j ? strdup(json_string_value(j)) : NULL;
			json_decref(j);
			if (!keys[n].decoded) {
				ok = jw_fail(w, k0, "out of memory");
				break;
			}
		}
		n++;
		p = jw_ws(p, w->end);
		if (p >= w->end || *p != ':') {
			ok = jw_fail(w, p, "':' expected");
			break;
		}
		p = jw_ws(p + 1, w->end);
		if (!(ok = jw_value(w, &p, depth)))
			break;
		p = jw_ws(p, w->end);
		if (p < w->end && *p == ',') {
			p = jw_ws(p + 1, w->end);
			continue;
		}
		if (p < w->end && *p == '}') {
			p++;
			break;
		}
		ok = jw_fail(w, p, "',' or '}' expected");
	}
	if (ok)
		ok = jw_object_keys_unique(w, keys, n);
	for (size_t i = 0; i < n; i++)
		free(keys[i].decoded);
	free(keys);
	*pp = p;
	return ok;
}

static int jw_array(jwalk *w, const char **pp, int depth)
{
	const char *p = jw_ws(*pp + 1, w->end);
	if (p < w->end && *p == ']') {
		*pp = p + 1;
		return 1;
	}
	for (;;) {
		if (!jw_value(w, &p, depth))
			return 0;
		p = jw_ws(p, w->end);
		if (p < w->end && *p == ',') {
			p = jw_ws(p + 1, w->end);
			continue;
		}
		if (p < w->end && *p == ']') {
			*pp = p + 1;
			return 1;
		}
		return jw_fail(w, p, "',' or ']' expected");
	}
}

static int jw_literal(jwalk *w, const char **pp, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(w->end - *pp) < n || memcmp(*pp, word, n) != 0)
		return jw_fail(w, *pp, "invalid token");
	*pp += n;
	return 1;
}

static int jw_value(jwalk *w, const char **pp, int depth)
{
	const char *p = *pp;
	if (p >= w->end)
		return jw_fail(w, p, "unexpected end of input");
	switch (*p) {
	case '{':
	case '[':
		if (depth + 1 > APSIM_MAX_DEPTH)
			return jw_fail(w, p, "nested too deep");
		return *p == '{' ? jw_object(w, pp, depth + 1) : jw_array(w, pp, depth + 1);
	case '"': return jw_string(w, pp, NULL);
	case 't': return jw_literal(w, pp, "true");
	case 'f': return jw_literal(w, pp, "false");
	case 'n': return jw_literal(w, pp, "null");
	default: return jw_number(w, pp);
	}
}

static fmt_kind check_object_text(const char *key, const char *text, fmt_err *e)
{
	size_t n = strlen(text);
	jwalk w = { text, text + n, NULL, NULL };
	const char *p = jw_ws(text, w.end);
	if (fmt_apsim_json_too_deep(text, n, APSIM_MAX_DEPTH)) /* first, as before the walker */
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s: JSON nested deeper than %d levels", key,
				APSIM_MAX_DEPTH);
	if (p >= w.end || *p != '{')
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s is not a JSON object", key);
	int ok = jw_value(&w, &p, 0);
	if (ok && jw_ws(p, w.end) != w.end)
		ok = jw_fail(&w, jw_ws(p, w.end), "end of file expected");
	if (ok)
		return FMT_OK;
	if (strcmp(w.why, "nested too deep") == 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s: JSON nested deeper than %d levels", key,
				APSIM_MAX_DEPTH);
	if (strcmp(w.why, "out of memory") == 0)
		return fmt_fail(e, FMT_IO, "out of memory reading __metadata__ %s", key);
	return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s is not valid JSON at byte %zu: %s", key,
			(size_t)(w.at - text), w.why);
}

static fmt_kind check_metadata_text(const char *text, fmt_err *e)
{
	return check_object_text("metadata", text, e);
}

/* A member's key (at p, already checked), decoded; p moves past it. */
static char *walk_key(jwalk *w, const char **p)
{
	const char *k0 = *p;
	int esc = 0;
	if (!jw_string(w, p, &esc))
		return NULL;
	if (!esc)
		return strndup(k0 + 1, (size_t)(*p - k0) - 2);
	json_t *j = fmt_json_loadb(k0, (size_t)(*p - k0), JSON_DECODE_ANY, NULL);
	char *key = j ? strdup(json_string_value(j)) : NULL;
	json_decref(j);
	return key;
}

/* [d0,...,d6], each an integer from -128 to 127 (the text is checked JSON). */
static int walk_dims(const char *v, const char *end, int8_t dims[FMT_UNIT_DIMS])
{
	const char *p = jw_ws(v, end);
	if (p >= end || *p != '[')
		return 0;
	for (int i = 0; i < FMT_UNIT_DIMS; i++) {
		p = jw_ws(p + 1, end);
		const char *t = p;
		if (p < end && *p == '-')
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return 0;
		long x = strtol(t, (char **)&p, 10);
		if (x < -128 || x > 127 || (p < end && (*p == '.' || *p == 'e' || *p == 'E')))
			return 0;
		dims[i] = (int8_t)x;
		p = jw_ws(p, end);
		if (p >= end || *p != (i + 1 < FMT_UNIT_DIMS ? ',' : ']'))
			return 0;
	}
	return 1;
}

/* units without a JSON tree (a hostile units object of a million entries would take twenty
 * times its text): checked by the walker, then each member read in place. */
static fmt_kind parse_units_text(apsim_file *f, fmt_err *e)
{
	fmt_kind k = check_object_text("units", f->units_text, e);
	if (k != FMT_OK)
		return k;
	jwalk w = { f->units_text, f->units_text + strlen(f->units_text), NULL, NULL };
	const char *p = jw_ws(jw_ws(w.s, w.end) + 1, w.end);
	size_t cap = 0;
	while (p < w.end && *p == '"') {
		char *name = walk_key(&w, &p);
		if (!name)
			return fmt_fail(e, FMT_IO, "out of memory");
		const char *v = p = jw_ws(jw_ws(p, w.end) + 1, w.end);
		if (!jw_value(&w, &p, 1)) {
			free(name);
			return fmt_fail(e, FMT_INTERNAL, "units no longer parse");
		}
		if (f->n_units == cap) {
			fmt_unit *bigger = realloc(f->unit_list, (cap = cap ? cap * 2 : 16) * sizeof *bigger);
			if (!bigger) {
				free(name);
				return fmt_fail(e, FMT_IO, "out of memory");
			}
			f->unit_list = bigger;
		}
		fmt_unit *u = &f->unit_list[f->n_units];
		if (!walk_dims(v, p, u->dims)) {
			k = fmt_fail(e, FMT_INVALID_FORMAT,
				     "units " NM ": expected an array of 7 integers from -128 to 127 (m, kg, s, A, K, mol, cd)",
				     name);
			free(name);
			return k;
		}
		u->tensor = name;
		f->n_units++;
		p = jw_ws(p, w.end);
		if (p < w.end && *p == ',')
			p = jw_ws(p + 1, w.end);
	}
	return FMT_OK;
}

static fmt_kind parse_object(const char *key, const char *text, json_t **out, fmt_err *e)
{
	size_t n = strlen(text);
	if (fmt_apsim_json_too_deep(text, n, APSIM_MAX_DEPTH))
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s: JSON nested deeper than %d levels", key,
				APSIM_MAX_DEPTH);
	json_error_t je;
	json_t *j = fmt_json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	if (!j && fmt_json_nomem(&je))
		return fmt_fail(e, FMT_IO, "out of memory reading __metadata__ %s", key);
	if (!j)
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s is not valid JSON at byte %d: %s", key,
				je.position, je.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ %s is not a JSON object", key);
	}
	*out = j;
	return FMT_OK;
}

/* 7 integers in int8 range. */
static int parse_dims(const json_t *a, int8_t dims[FMT_UNIT_DIMS])
{
	if (!json_is_array(a) || json_array_size(a) != FMT_UNIT_DIMS)
		return 0;
	for (size_t i = 0; i < FMT_UNIT_DIMS; i++) {
		const json_t *v = json_array_get(a, i);
		if (!json_is_integer(v) || json_integer_value(v) < -128 || json_integer_value(v) > 127)
			return 0;
		dims[i] = (int8_t)json_integer_value(v);
	}
	return 1;
}

static const fmt_tensor *find_in_file(const fmt_model *m, const apsim_file *f, const char *name)
{
	const fmt_tensor *t = fmt_model_find_tensor(m, name);
	size_t at = t ? (size_t)(t - m->tensors) : 0;
	if (!t || (at >= f->first_tensor && at - f->first_tensor < f->n_tensors))
		return t;
	/* the name is another shard's too (which the set's check refuses): this file's, if any */
	for (size_t i = 0; i < f->n_tensors; i++)
		if (strcmp(m->tensors[f->first_tensor + i].name, name) == 0)
			return &m->tensors[f->first_tensor + i];
	return NULL;
}

static fmt_kind parse_dim_list(const char *q, const char *what, const json_t *a, int *nd, uint64_t *out,
			       fmt_err *e)
{
	if (!json_is_array(a))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": %s is not an array", q, what);
	size_t n = json_array_size(a);
	if (n > FMT_MAX_DIMS)
		return fmt_fail(e, FMT_UNSUPPORTED, "qtensor " NM ": %s has %zu dimensions (at most %d)", q, what, n,
				FMT_MAX_DIMS);
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(a, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": %s[%zu] is not a non-negative integer", q,
					what, i);
		out[i] = (uint64_t)json_integer_value(v);
	}
	*nd = (int)n;
	return FMT_OK;
}

static const char *const Q_MEMBERS[] = { "axis", "format", "packing", "scale_shape", "shape", "unit" };

static fmt_kind parse_descriptor(const char *name, const json_t *d, fmt_qtensor *q, fmt_err *e)
{
	const char *member;
	json_t *v;
	if (!json_is_object(d))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": descriptor is not an object", name);
	json_object_foreach((json_t *)d, member, v) {
		size_t j = 0;
		while (j < 6 && strcmp(member, Q_MEMBERS[j]) != 0)
			j++;
		if (j == 6)
			return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": unknown member '%.100s'", name, member);
	}
	for (size_t j = 0; j < 6; j++)
		if (!json_object_get(d, Q_MEMBERS[j]))
			return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": missing '%s'", name, Q_MEMBERS[j]);
	const json_t *fmt = json_object_get(d, "format"), *packing = json_object_get(d, "packing");
	if (!json_is_string(fmt) || !fmt_qformat_from_name(json_string_value(fmt), &q->format))
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": format is not one of int8, int4, fp8, fp6, fp4, bf16",
				name);
	if (!json_is_string(packing) || strcmp(json_string_value(packing), fmt_qformat_packing(q->format)) != 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": packing must be '%s' for %s", name,
				fmt_qformat_packing(q->format), fmt_qformat_name(q->format));
	fmt_kind k = parse_dim_list(name, "shape", json_object_get(d, "shape"), &q->ndim, q->shape, e);
	int snd = 0;
	if (k == FMT_OK)
		k = parse_dim_list(name, "scale_shape", json_object_get(d, "scale_shape"), &snd, q->scale_shape, e);
	if (k != FMT_OK)
		return k;
	if (q->format == FMT_Q_BF16 ? snd != 0 : snd != q->ndim)
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": scale_shape has rank %d, expected %d", name, snd,
				q->format == FMT_Q_BF16 ? 0 : q->ndim);
	const json_t *axis = json_object_get(d, "axis"), *unit = json_object_get(d, "unit");
	if (json_is_null(axis))
		q->axis = -1;
	else if (json_is_integer(axis) && json_integer_value(axis) >= 0 && json_integer_value(axis) < q->ndim)
		q->axis = (int)json_integer_value(axis);
	else
		return fmt_fail(e, FMT_INVALID_FORMAT, "qtensor " NM ": axis is neither null nor a dimension index", name);
	if (!json_is_null(unit)) {
		if (!parse_dims(unit, q->unit))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"qtensor " NM ": unit is neither null nor 7 integers from -128 to 127", name);
		q->has_unit = 1;
	}
	return FMT_OK;
}

static fmt_kind parse_qtensors(const fmt_model *m, apsim_file *f, fmt_err *e)
{
	size_t n = json_object_size(f->qtensors);
	f->q_list = calloc(n ? n : 1, sizeof *f->q_list);
	if (!f->q_list)
		return fmt_fail(e, FMT_IO, "out of memory");
	const char *name;
	json_t *d;
	json_object_foreach(f->qtensors, name, d) {
		fmt_qtensor q;
		memset(&q, 0, sizeof q);
		q.name = (char *)name;
		fmt_kind k = parse_descriptor(name, d, &q, e);
		if (k != FMT_OK)
			return k;
		char *sname = malloc(strlen(name) + sizeof APSIM_QSCALE);
		if (!sname)
			return fmt_fail(e, FMT_IO, "out of memory");
		strcpy(sname, name);
		strcat(sname, APSIM_QSCALE);
		q.scales = q.format == FMT_Q_BF16 ? NULL : sname;
		k = fmt_qtensor_check(&q, find_in_file(m, f, name), find_in_file(m, f, sname), e);
		if (k != FMT_OK || q.format == FMT_Q_BF16)
			free(sname);
		if (k != FMT_OK)
			return k;
		if (!(q.name = strdup(name)) || fmt_nameset_add(&f->q_names, q.name) < 0) {
			free(q.name);
			free(q.scales);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		f->q_list[f->n_q++] = q;
	}
	return FMT_OK;
}

/* NAME__qscale of a compressed tensor NAME listed in f. */
static int is_scales_of_qtensor(const apsim_file *f, const char *name)
{
	size_t n = strlen(name), sl = sizeof APSIM_QSCALE - 1;
	if (n <= sl || strcmp(name + n - sl, APSIM_QSCALE) != 0)
		return 0;
	return fmt_nameset_find_prefix(&f->q_names, name, n - sl) >= 0;
}

static fmt_kind check_unit_names(const fmt_model *m, const apsim_file *f, fmt_err *e)
{
	for (size_t i = 0; i < f->n_units; i++) {
		const char *name = f->unit_list[i].tensor;
		if (!find_in_file(m, f, name))
			return fmt_fail(e, FMT_INVALID_FORMAT, "units " NM ": no tensor of that name in the file", name);
		if (is_scales_of_qtensor(f, name))
			return fmt_fail(e, FMT_INVALID_FORMAT, "units " NM ": names the scales of a compressed tensor (use its logical name)",
					name);
	}
	return FMT_OK;
}

fmt_kind fmt_apsim_read_file(fmt_model *m, int source, apsim_file *f, fmt_err *e)
{
	memset(f, 0, sizeof *f);
	f->source = source;
	f->path = strdup(m->sources[source].path ? m->sources[source].path : "");
	if (!f->path)
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t meta0 = m->n_meta, t0 = m->n_tensors;
	fmt_kind k = fmt_st_open_source(m, source, 1, e);
	fmt_kind k2 = take_meta(m, meta0, f, e);
	if (k == FMT_OK)
		k = k2;
	if (k != FMT_OK)
		return k;
	f->first_tensor = t0;
	f->n_tensors = m->n_tensors - t0;
	k = read_layout(m, f, e);
	if (k == FMT_OK)
		k = interpret_keys(f, e);
	if (k == FMT_OK)
		k = parse_units_text(f, e);
	if (k == FMT_OK)
		k = parse_object("qtensors", f->qtensors_text, &f->qtensors, e);
	if (k == FMT_OK)
		k = check_metadata_text(f->metadata_text, e);
	if (k == FMT_OK)
		k = parse_qtensors(m, f, e);
	if (k == FMT_OK && f->shard_n == 1)
		k = check_unit_names(m, f, e);
	return k;
}

/* ---- user metadata as typed values ---- */

/* Bytes of record text per file that may become jansson trees (a tree costs tens of times its
 * text); past it, arrays and objects that are not flat numbers stay JSON text. */
#define META_TREE_BUDGET ((size_t)1 << 20)

/* A flat array of numbers (I64, or F64 when any is real, as array_from_json types it) or of
 * booleans, packed without a tree; 0 when the array holds anything else. */
static int packed_array(const char *v, size_t n, fmt_value *out, fmt_kind *k, fmt_err *e)
{
	jwalk w = { v, v + n, NULL, NULL };
	uint64_t count = 0;
	int reals = 0, bools = 0, numbers = 0;
	const char *p = jw_ws(v + 1, w.end);
	while (p < w.end && *p != ']') {
		const char *t = p;
		if (*p == 't' || *p == 'f') {
			bools = 1;
			if (!jw_literal(&w, &p, *p == 't' ? "true" : "false"))
				return 0;
		} else if (*p == '-' || (*p >= '0' && *p <= '9')) {
			numbers = 1;
			if (!jw_number(&w, &p))
				return 0;
			for (; t < p && !reals; t++)
				reals = *t == '.' || *t == 'e' || *t == 'E';
		} else {
			return 0;
		}
		count++;
		p = jw_ws(p, w.end);
		if (p < w.end && *p == ',')
			p = jw_ws(p + 1, w.end);
	}
	if (bools && numbers)
		return 0;
	fmt_vtype elem = bools ? FMT_V_BOOL : reals ? FMT_V_F64 : FMT_V_I64;
	size_t each = fmt_vtype_size(elem);
	uint8_t *bytes = malloc(count ? (size_t)count * each : 1);
	if (!bytes) {
		*k = fmt_fail(e, FMT_IO, "out of memory for %llu metadata array items", (unsigned long long)count);
		return 1;
	}
	p = jw_ws(v + 1, w.end);
	for (uint64_t i = 0; i < count; i++) {
		char *stop;
		uint8_t *dst = bytes + i * each;
		if (elem == FMT_V_BOOL) {
			*dst = *p == 't';
			stop = (char *)p + (*p == 't' ? 4 : 5);
		} else if (elem == FMT_V_I64) {
			fmt_wr_u64(dst, (uint64_t)strtoll(p, &stop, 10));
		} else {
			double d = strtod(p, &stop);
			uint64_t bits;
			memcpy(&bits, &d, sizeof bits);
			fmt_wr_u64(dst, bits);
		}
		p = jw_ws(stop, w.end);
		if (p < w.end && *p == ',')
			p = jw_ws(p + 1, w.end);
	}
	*k = fmt_value_packed(out, elem, count, bytes, e);
	free(bytes);
	return 1;
}

/* One member's value (already checked) as a typed value. */
static fmt_kind member_value(const char *v, size_t n, size_t *budget, fmt_value *out, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	if (*v == '[' && packed_array(v, n, out, &k, e))
		return k;
	int tree = *v == '[' || *v == '{';
	if (tree && n > *budget) {
		*out = fmt_value_str(v, n);
		return out->v.str.ptr ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	if (tree)
		*budget -= n;
	json_error_t je;
	json_t *j = fmt_json_loadb(v, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!j && fmt_json_nomem(&je))
		return fmt_fail_nomem(e, "__metadata__ metadata");
	if (!j) /* the walker and jansson disagree: report it as the file's fault, not a crash */
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ metadata is not valid JSON: %s", je.text);
	k = fmt_value_from_json(j, 1, out, e);
	json_decref(j);
	return k;
}

/* The record's members in file order, each made a typed value on its own. */
static fmt_kind fill_user_metadata(fmt_model *m, const char *text, fmt_err *e)
{
	jwalk w = { text, text + strlen(text), NULL, NULL };
	size_t budget = META_TREE_BUDGET;
	const char *p = jw_ws(jw_ws(text, w.end) + 1, w.end);
	fmt_kind k = FMT_OK;
	while (k == FMT_OK && p < w.end && *p == '"') {
		const char *k0 = p, *v0;
		int esc = 0;
		char *key = NULL;
		if (!jw_string(&w, &p, &esc))
			return fmt_fail(e, FMT_INTERNAL, "metadata key no longer parses");
		if (esc) {
			json_t *j = fmt_json_loadb(k0, (size_t)(p - k0), JSON_DECODE_ANY, NULL);
			key = j ? strdup(json_string_value(j)) : NULL;
			json_decref(j);
		} else {
			key = strndup(k0 + 1, (size_t)(p - k0) - 2);
		}
		if (!key)
			return fmt_fail(e, FMT_IO, "out of memory");
		p = v0 = jw_ws(jw_ws(p, w.end) + 1, w.end); /* past ':' */
		fmt_value val;
		if (!jw_value(&w, &p, 1))
			k = fmt_fail(e, FMT_INTERNAL, "metadata value no longer parses");
		else if ((k = member_value(v0, (size_t)(p - v0), &budget, &val, e)) == FMT_OK) {
			k = fmt_model_add_meta(m, key, &val, e);
			fmt_value_free(&val);
		}
		free(key);
		p = jw_ws(p, w.end);
		if (p < w.end && *p == ',')
			p = jw_ws(p + 1, w.end);
	}
	return k;
}

fmt_kind fmt_apsim_fill_meta_units(fmt_model *m, const apsim_file *f, fmt_err *e)
{
	fmt_kind k = fill_user_metadata(m, f->metadata_text, e);
	if (k != FMT_OK)
		return k;
	for (size_t i = 0; i < f->n_units && k == FMT_OK; i++)
		k = fmt_model_add_unit(m, f->unit_list[i].tensor, f->unit_list[i].dims, e);
	return k;
}

fmt_kind fmt_apsim_fill_qtensors(fmt_model *m, const apsim_file *f, fmt_err *e)
{
	for (size_t i = 0; i < f->n_q; i++) {
		fmt_kind k = fmt_model_add_qtensor(m, &f->q_list[i], e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* ---- info ---- */

fmt_kind fmt_apsim_fill_info(apsim_state *st, const apsim_file *f, const char *signature, fmt_err *e)
{
	fmt_apsim_info *in = &st->info;
	in->apsi = strdup(f->apsi);
	in->signature = signature ? strdup(signature) : NULL;
	if (!in->apsi || (signature && !in->signature))
		return fmt_fail(e, FMT_IO, "out of memory");
	in->n_shards = st->n_files;
	if (st->is_set) {
		in->sha256[0] = '\0';
		in->shard_i = 1;
		in->shard_n = (uint32_t)st->n_files;
	} else {
		memcpy(in->sha256, f->sha256, FMT_SHA256_HEX + 1);
		in->shard_i = f->shard_i;
		in->shard_n = f->shard_n;
	}
	return FMT_OK;
}

const fmt_apsim_info *fmt_apsim_info_of(const fmt_model *m)
{
	if (!m || (m->driver != &fmt_driver_apsim && m->driver != &fmt_driver_apsim_index) || !m->format_state)
		return NULL;
	return &((const apsim_state *)m->format_state)->info;
}

const char *fmt_apsim_signature_of(const fmt_model *m)
{
	const fmt_apsim_info *info = fmt_apsim_info_of(m);
	return info ? info->signature : NULL;
}

fmt_kind fmt_apsim_table(const fmt_model *m, char **table, size_t *len, fmt_err *e)
{
	const apsim_state *st = m->driver == &fmt_driver_apsim ? m->format_state : NULL;
	if (!st || st->n_files != 1)
		return fmt_fail(e, FMT_USAGE, "the canonical table belongs to a single .apsim file");
	return file_table(m, &st->files[0], table, len, e);
}

/* ---- driver ---- */

#define FORMAT_KEY "\"format\":\"apsi-model\""
#define FORMAT_KEY_LEN (sizeof FORMAT_KEY - 1)

/* 95 if the header bytes seen (span of them, a JSON object) hold the Apsi format key. */
static int ap_probe_header(const uint8_t *header, size_t span)
{
	size_t i = fmt_json_skip_ws((const char *)header, span, 0);
	if (i >= span || header[i] != '{')
		return 0;
	return memmem(header, span, FORMAT_KEY, FORMAT_KEY_LEN) ? 95 : 0;
}

static int ap_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	if (n < 10)
		return 0;
	uint64_t len = fmt_rd_u64(head);
	if (len < 2 || len > FMT_ST_HEADER_MAX)
		return 0;
	return ap_probe_header(head + 8, len < n - 8 ? (size_t)len : n - 8);
}

/* A header longer than the head that begins as JSON: its format key may lie further, in the
 * 8 + len first bytes (len at most FMT_ST_HEADER_MAX). */
static size_t ap_probe_wants_source(const uint8_t *head, size_t n)
{
	if (n < 10)
		return 0;
	uint64_t len = fmt_rd_u64(head);
	size_t i = fmt_json_skip_ws((const char *)head + 8, n - 8, 0);
	return len > n - 8 && len <= FMT_ST_HEADER_MAX && i < n - 8 && head[8 + i] == '{' ? 8 + (size_t)len : 0;
}

/* The format key past the first FMT_PROBE_BYTES: the whole header is searched, read a piece at
 * a time, each piece searched with the end of the one before (a key may straddle two). Read,
 * not mapped: a mapping taken here stayed for the whole run, and every later read of the file
 * was a copy out of it, a page fault a page (a safetensors model whose header passed 4 KiB, as
 * most do: 0.45 s more CPU for its 995 MB zstd .apr write). */
#define PROBE_PIECE (64u << 10)

static int ap_probe_source(fmt_source *s)
{
	uint8_t len_bytes[8];
	fmt_err e;
	if (s->size <= FMT_PROBE_BYTES || fmt_source_read(s, 0, len_bytes, 8, &e) != FMT_OK)
		return 0;
	uint64_t len = fmt_rd_u64(len_bytes);
	if (len <= FMT_PROBE_BYTES - 8 || len > FMT_ST_HEADER_MAX || len > s->size - 8)
		return 0;
	uint8_t *buf = malloc(FORMAT_KEY_LEN - 1 + PROBE_PIECE);
	if (!buf)
		return 0;
	int score = 0, object = 0;
	size_t kept = 0;   /* bytes of the piece before, at the start of buf */
	for (uint64_t at = 0; at < len && score == 0;) {
		size_t n = len - at < PROBE_PIECE ? (size_t)(len - at) : PROBE_PIECE;
		if (fmt_source_read(s, 8 + at, buf + kept, n, &e) != FMT_OK)
			break;
		if (!object) {   /* the first byte that is not white space must open the object */
			size_t i = fmt_json_skip_ws((const char *)buf, kept + n, 0);
			if (i < kept + n && buf[i] != '{')
				break;
			object = i < kept + n;
		}
		if (object && memmem(buf, kept + n, FORMAT_KEY, FORMAT_KEY_LEN))
			score = 95;
		at += n;
		size_t tail = kept + n < FORMAT_KEY_LEN - 1 ? kept + n : FORMAT_KEY_LEN - 1;
		memmove(buf, buf + kept + n - tail, tail);
		kept = tail;
	}
	free(buf);
	return score;
}

static fmt_kind ap_open(fmt_model *m, fmt_err *e)
{
	m->version = 1;
	apsim_state *st = calloc(1, sizeof *st);
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	m->format_state = st;
	st->files = calloc(1, sizeof *st->files);
	if (!st->files)
		return fmt_fail(e, FMT_IO, "out of memory");
	st->n_files = 1;
	apsim_file *f = &st->files[0];
	fmt_kind k = fmt_apsim_read_file(m, 0, f, e);
	if (k == FMT_OK)
		k = fmt_apsim_fill_meta_units(m, f, e);
	if (k == FMT_OK)
		k = fmt_apsim_fill_qtensors(m, f, e);
	if (k == FMT_OK)
		k = fmt_apsim_fill_info(st, f, f->signature, e);
	return k;
}

static void ap_close(fmt_model *m)
{
	fmt_apsim_state_free(m->format_state);
	m->format_state = NULL;
}

static fmt_kind check_scales(const fmt_model *m, fmt_err *e)
{
	for (size_t i = 0; i < m->n_qtensors; i++) {
		const fmt_qtensor *q = &m->qtensors[i];
		if (q->format == FMT_Q_BF16)
			continue;
		char *sname = malloc(strlen(q->name) + sizeof APSIM_QSCALE);
		if (!sname)
			return fmt_fail(e, FMT_IO, "out of memory");
		strcpy(sname, q->name);
		strcat(sname, APSIM_QSCALE);
		const fmt_tensor *t = fmt_model_find_tensor(m, sname);
		free(sname);
		if (!t)
			continue;
		uint8_t buf[4096];
		for (uint64_t off = 0; off < t->nbytes; off += sizeof buf) {
			size_t n = (size_t)(t->nbytes - off < sizeof buf ? t->nbytes - off : sizeof buf);
			fmt_kind k = fmt_tensor_read(m, t, off, buf, n, e);
			if (k != FMT_OK)
				return k;
			for (size_t j = 0; j + 4 <= n; j += 4) {
				uint32_t bits = fmt_rd_u32(buf + j);
				if ((bits & 0x7F800000u) == 0x7F800000u)
					return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": scale %llu is %s (scales must be finite)",
							t->name, (unsigned long long)((off + j) / 4),
							bits & 0x007FFFFFu ? "NaN" : "infinite");
			}
		}
	}
	return FMT_OK;
}

fmt_kind fmt_apsim_check_scales(const fmt_model *m, fmt_err *e)
{
	return check_scales(m, e);
}

static fmt_kind ap_verify(fmt_model *m, const fmt_verify_opts *o, fmt_err *e)
{
	apsim_state *st = m->format_state;
	const apsim_file *f = &st->files[0];
	char hex[FMT_SHA256_HEX + 1];
	fmt_meter_planned(f->data_len);
	fmt_kind k = fmt_apsim_file_digest(m, f, hex, e);
	if (k != FMT_OK)
		return k;
	if (strcmp(hex, f->sha256) != 0)
		return fmt_fail(e, FMT_CHECKSUM, "sha256 mismatch: file says %s, data gives %s", f->sha256, hex);
	if (o && o->signer && f->signature && fmt_keyset_empty(&o->keys))
		o->signer->unchecked = fmt_apsim_signature_kind(f->signature);
	if (o && !fmt_keyset_empty(&o->keys)) {
		const char *shas[1] = { f->sha256 };
		k = fmt_apsim_check_signature(f->signature, o, shas, 1, e);
		if (k != FMT_OK)
			return k;
	}
	return check_scales(m, e);
}

json_t *fmt_apsim_describe_common(const apsim_state *st)
{
	const apsim_file *f = &st->files[0];
	const char *sig = st->is_set ? st->index_signature : f->signature;
	json_t *o = json_object();
	json_t *extra = json_array();
	if (!o || !extra) {
		json_decref(o);
		json_decref(extra);
		return NULL;
	}
	for (size_t i = 0; i < f->n_extra; i++)
		json_array_append_new(extra, json_string(f->extra[i]));
	char shard[32];
	snprintf(shard, sizeof shard, "%u/%u", (unsigned)f->shard_i, (unsigned)f->shard_n);
	json_object_set_new(o, "sha256", st->is_set ? json_null() : json_string(f->sha256));
	json_object_set_new(o, "apsi", json_string(f->apsi));
	json_object_set_new(o, "shard", st->is_set ? json_null() : json_string(shard));
	json_object_set_new(o, "signed", json_boolean(sig != NULL));
	if (sig) {
		const char *kind, *id;
		size_t kind_len, id_len;
		fmt_apsim_signature_parts(sig, &kind, &kind_len, &id, &id_len);
		json_object_set_new(o, "signature_kind", json_stringn(kind, kind_len));
		json_object_set_new(o, "key_id", json_stringn(id, id_len));
	} else {
		json_object_set_new(o, "signature_kind", json_null());
		json_object_set_new(o, "key_id", json_null());
	}
	json_t *units = json_object();
	for (size_t i = 0; units && i < f->n_units; i++) {
		json_t *dims = json_array();
		for (int d = 0; dims && d < FMT_UNIT_DIMS; d++)
			json_array_append_new(dims, json_integer(f->unit_list[i].dims[d]));
		fmt_json_set(units, f->unit_list[i].tensor, dims);
	}
	json_object_set_new(o, "units", units);
	json_t *q = json_object();
	for (size_t i = 0; i < st->n_files && q; i++)
		json_object_update(q, st->files[i].qtensors);
	json_object_set_new(o, "qtensors", q ? q : json_null());
	json_object_set_new(o, "extra_keys", extra);
	return o;
}

static json_t *ap_describe(const fmt_model *m)
{
	return m->format_state ? fmt_apsim_describe_common(m->format_state) : NULL;
}

const fmt_driver fmt_driver_apsim = {
	.name = "apsim",
	.extension = ".apsim",
	.title = ".apsim",
	.probe = ap_probe,
	.probe_source = ap_probe_source,
	.probe_wants_source = ap_probe_wants_source,
	.open = ap_open,
	.verify = ap_verify,
	.caps = FMT_CAP_TYPED_META | FMT_CAP_ENCODED | FMT_CAP_UNITS | FMT_CAP_SIGNATURES | FMT_CAP_ED25519 | FMT_CAP_ED25519_SIGN,
	.set_driver = &fmt_driver_apsim_index,
	.write = fmt_apsim_write,
	.plan_shards = fmt_apsim_plan_shards,
	.write_sharded = fmt_apsim_write_sharded,
	.shard_limits = FMT_APSIM_SHARD_LIMITS,
	.default_shard_bytes = 4000000000ull,   /* Apsi's shard="4GB" */
	.sign_in_place = fmt_apsim_sign_file_in_place,
	.signature = fmt_apsim_signature_of,
	.close = ap_close,
	.describe = ap_describe,
};
