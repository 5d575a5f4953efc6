/* .ald licences (specs/ald.md §7 and the decisions table). The block's fixed 71 bytes, then its
 * custom terms, which the project writes as one line of JSON:
 *
 *   {"fmtkit_licence":1,"terms":TERMS,"seller_key":"KEY","seller_sig":"SIG"}
 *
 * TERMS is the seller's JSON object, KEY the seller's Ed25519 public key as minisign's -P line
 * (base64 of "Ed" || key id || key), SIG the base64 Ed25519 signature (RFC 8032) of
 *
 *   "fmtkit-ald-licence-v1" NUL || the 71 fixed bytes || the terms up to and including KEY's
 *   closing quote || SHA-256 of the file's bytes [0, payload_end) || the 64-byte signature of the
 *   §6 block
 *
 * so the licence is bound to its fields, its terms and this file's signed bytes. fmt-sign
 * license signs the file (§6) with the seller's key when it is unsigned or already signed by
 * that key: the licence flag changes the header the signature covers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/minisign.h"
#include "fmt/out.h"
#include "ald_internal.h"
#include "fmt/tree_budget.h"

#define SIG_BLOCK 96
#define FIXED 71
#define FLAGS_AT 21
#define DOMAIN "fmtkit-ald-licence-v1"
#define HEAD "{\"fmtkit_licence\":1,\"terms\":"
#define KEY_FIELD ",\"seller_key\":\""
#define SIG_FIELD ",\"seller_sig\":\""
#define KEY_B64 56                 /* base64 of 42 bytes */
#define SIG_B64 88                 /* base64 of 64 bytes */
#define SUFFIX_LEN (sizeof SIG_FIELD - 1 + SIG_B64 + 2)
#define TERMS_MAX (64u * 1024u)

int fmt_parse_utc_date(const char *s, uint64_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	const char *end = strptime(s, "%Y-%m-%d", &tm);
	if (end && *end == 'T')
		end = strptime(end + 1, "%H:%M:%SZ", &tm);
	if (!end || *end || tm.tm_year < 70)
		return -1;
	/* strptime takes any day up to 31 and timegm moves an impossible date on (2027-02-30 to
	 * March 2): a date is valid only when it comes back as given. */
	struct tm given = tm;
	time_t t = timegm(&tm);
	if (t < 0 || tm.tm_year != given.tm_year || tm.tm_mon != given.tm_mon || tm.tm_mday != given.tm_mday ||
	    tm.tm_hour != given.tm_hour || tm.tm_min != given.tm_min || tm.tm_sec != given.tm_sec)
		return -1;
	*out = (uint64_t)t;
	return 0;
}

void fmt_format_utc(uint64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t > (uint64_t)253402300799u || !gmtime_r(&tt, &tm))
		snprintf(out, 32, "%llu", (unsigned long long)t);
	else
		strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* SHA-256 of the file's first n bytes with the header's flags byte replaced by flags. */
static fmt_kind signed_bytes_digest(const uint8_t *file, uint64_t n, uint8_t flags, uint8_t out[32],
				    fmt_err *e)
{
	fmt_sha256 h;
	fmt_kind k = fmt_sha256_init(&h, e);
	if (k == FMT_OK)
		k = fmt_sha256_update(&h, file, FLAGS_AT, e);
	if (k == FMT_OK)
		k = fmt_sha256_update(&h, &flags, 1, e);
	if (k == FMT_OK)
		k = fmt_sha256_update(&h, file + FLAGS_AT + 1, (size_t)(n - FLAGS_AT - 1), e);
	if (k == FMT_OK)
		k = fmt_sha256_final(&h, out, e);
	fmt_sha256_free(&h);
	return k;
}

/* The seller's message (see the top of the file); malloc'd. */
static fmt_kind seller_message(const uint8_t fixed[FIXED], const char *prefix, size_t prefix_len,
			       const uint8_t digest[32], const uint8_t *file_sig, uint8_t **msg, size_t *len,
			       fmt_err *e)
{
	size_t n = sizeof DOMAIN + FIXED + prefix_len + 32 + (file_sig ? 64 : 0);
	uint8_t *m = malloc(n), *p = m;
	if (!m)
		return fmt_fail(e, FMT_IO, "out of memory");
	memcpy(p, DOMAIN, sizeof DOMAIN); /* with its NUL */
	p += sizeof DOMAIN;
	memcpy(p, fixed, FIXED);
	p += FIXED;
	memcpy(p, prefix, prefix_len);
	p += prefix_len;
	memcpy(p, digest, 32);
	p += 32;
	if (file_sig)
		memcpy(p, file_sig, 64);
	*msg = m;
	*len = n;
	return FMT_OK;
}

static fmt_kind build_fixed(const fmt_license_req *l, uint8_t fixed[FIXED], fmt_err *e)
{
	fmt_kind k = fmt_random(fixed, 16, e);
	if (k != FMT_OK)
		return k;
	fixed[6] = (uint8_t)((fixed[6] & 0x0F) | 0x40); /* UUID version 4 */
	fixed[8] = (uint8_t)((fixed[8] & 0x3F) | 0x80); /* RFC 4122 variant */
	if ((k = fmt_sha256_buf(l->licensee, strlen(l->licensee), fixed + 16, e)) != FMT_OK)
		return k;
	fmt_wr_u64(fixed + 48, l->now);
	fmt_wr_u64(fixed + 56, l->expires_at);
	fixed[64] = (uint8_t)((l->expires_at ? FMT_LIC_EXPIRATION : 0) | (l->seats ? FMT_LIC_SEATS : 0));
	fmt_wr_u16(fixed + 65, l->seats);
	fmt_wr_u32(fixed + 67, 0);
	return FMT_OK;
}

/* The licence block for the file whose signed bytes have digest and whose §6 signature is
 * file_sig (NULL when unsigned): fixed fields, length, terms with seller_sig; malloc'd. */
static fmt_kind build_block(const fmt_license_req *l, const fmt_ms_secret *sec, const uint8_t digest[32],
			    const uint8_t *file_sig, uint8_t **out, size_t *out_len, fmt_err *e)
{
	uint8_t fixed[FIXED], key[2 + FMT_MS_KEYNUM + FMT_MS_PK], sig[FMT_MS_SIG], *msg = NULL;
	char key_b64[KEY_B64 + 1], sig_b64[SIG_B64 + 1];
	size_t msg_len, terms_len = strlen(l->terms_json);
	if (terms_len > TERMS_MAX)
		return fmt_fail(e, FMT_USAGE, "the terms are %zu bytes; at most %u", terms_len, TERMS_MAX);
	fmt_kind k = build_fixed(l, fixed, e);
	if (k != FMT_OK)
		return k;
	key[0] = 'E';
	key[1] = 'd';
	memcpy(key + 2, sec->keynum, FMT_MS_KEYNUM);
	memcpy(key + 2 + FMT_MS_KEYNUM, fmt_ms_secret_pk(sec), FMT_MS_PK);
	fmt_base64(key, sizeof key, key_b64, sizeof key_b64);
	size_t prefix_len = strlen(HEAD) + terms_len + strlen(KEY_FIELD) + KEY_B64 + 1;
	size_t total = prefix_len + SUFFIX_LEN;
	uint8_t *b = malloc(FIXED + 4 + total + 1);
	if (!b)
		return fmt_fail(e, FMT_IO, "out of memory");
	char *terms = (char *)b + FIXED + 4;
	snprintf(terms, prefix_len + 1, "%s%s%s%s\"", HEAD, l->terms_json, KEY_FIELD, key_b64);
	k = seller_message(fixed, terms, prefix_len, digest, file_sig, &msg, &msg_len, e);
	if (k == FMT_OK)
		k = fmt_ed25519_sign(sec, msg, msg_len, sig, e);
	free(msg);
	if (k != FMT_OK) {
		free(b);
		return k;
	}
	fmt_base64(sig, sizeof sig, sig_b64, sizeof sig_b64);
	snprintf(terms + prefix_len, SUFFIX_LEN + 1, "%s%s\"}", SIG_FIELD, sig_b64);
	memcpy(b, fixed, FIXED);
	fmt_wr_u32(b + FIXED, (uint32_t)total);
	*out = b;
	*out_len = FIXED + 4 + total;
	return FMT_OK;
}

typedef struct licence_job {
	const fmt_license_req *l;
	const fmt_ms_secret *sec;       /* the seller's key */
} licence_job;

/* The licensed copy of s into k: the header with SIGNED and LICENSED, the payload, the §6 block
 * (made by the seller, or kept), the new licence; fmt_ald_rewrite_in_place adds the CRC. */
static fmt_kind write_licensed(const ald_state *s, fmt_sink *k, const void *job, fmt_err *e)
{
	const fmt_license_req *l = ((const licence_job *)job)->l;
	const fmt_ms_secret *sec = ((const licence_job *)job)->sec;
	int keep_sig = (s->flags & FMT_ALD_SIGNED) && memcmp(s->sig_pub, fmt_ms_secret_pk(sec), 32) != 0;
	uint8_t flags = (uint8_t)(s->flags | FMT_ALD_SIGNED | FMT_ALD_LICENSED), digest[32], file_sig[64];
	uint8_t *block = NULL;
	size_t block_len = 0;
	if (keep_sig && !(s->flags & FMT_ALD_LICENSED)) {
		char b64[45];
		fmt_base64(s->sig_pub, 32, b64, sizeof b64);
		return fmt_fail(e, FMT_USAGE, "signed by another key (%s): the licence flag would change the header "
				"that signature covers; license it with that key, or before it is signed", b64);
	}
	fmt_kind r = signed_bytes_digest(s->file, s->payload_end, flags, digest, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, s->file, FLAGS_AT, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, &flags, 1, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, s->file + FLAGS_AT + 1, (size_t)(s->payload_end - FLAGS_AT - 1), e);
	if (r == FMT_OK && keep_sig)
		r = fmt_sink_write(k, s->file + s->payload_end, SIG_BLOCK, e);
	else if (r == FMT_OK)
		r = fmt_ald_append_signature(k, sec, e);
	if (r == FMT_OK)
		r = fmt_sink_pwrite(k, 0, "", 0, e); /* flushes, for the read-back */
	if (r == FMT_OK && pread(k->fd, file_sig, 64, (off_t)s->payload_end) != 64)
		r = fmt_fail(e, FMT_IO, "cannot read back the signature block");
	if (r == FMT_OK)
		r = build_block(l, sec, digest, file_sig, &block, &block_len, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, block, block_len, e);
	free(block);
	return r;
}

fmt_kind fmt_ald_license_with(const fmt_table_driver *d, const char *path, const fmt_license_req *l,
			      const fmt_keyset *keys, fmt_err *e)
{
	if (!keys || !keys->ed25519_secret)
		return fmt_fail(e, FMT_USAGE, "a licence is signed by the seller: give --sign-key SECKEY (Ed25519)");
	/* An old licence may have expired: renewing it is what this is for. */
	return fmt_ald_rewrite_checked(d, path, 1, NULL, write_licensed, &(licence_job){ l, keys->ed25519_secret }, e);
}

/* seller_sig of the licence, when its terms are the project's JSON; *present = 0 otherwise. */
static fmt_kind check_seller(ald_state *s, const fmt_verify_opts *o, fmt_err *e)
{
	const char *terms = (const char *)s->terms;
	size_t n = s->terms_len, prefix_len;
	uint8_t key[2 + FMT_MS_KEYNUM + FMT_MS_PK], sig[FMT_MS_SIG], digest[32], *msg;
	size_t msg_len;
	s->lic_status = "absent";
	/* upstream's opaque terms carry no seller_sig: checked when present (decisions table), and
	 * reported as absent otherwise (fmt-verify's line says "no seller signature") */
	if (n < strlen(HEAD) || memcmp(terms, HEAD, strlen(HEAD)) != 0)
		return FMT_OK;
	json_error_t je;
	json_t *j = fmt_json_loadb(terms, n, JSON_REJECT_DUPLICATES, &je);
	const char *key_s = json_string_value(json_object_get(j, "seller_key"));
	const char *sig_s = json_string_value(json_object_get(j, "seller_sig"));
	int shaped = j && json_is_object(json_object_get(j, "terms")) && json_object_size(j) == 4 && key_s && sig_s &&
		     n > SUFFIX_LEN && strlen(sig_s) == SIG_B64 && strlen(key_s) == KEY_B64 &&
		     memcmp(terms + n - SUFFIX_LEN, SIG_FIELD, strlen(SIG_FIELD)) == 0 &&
		     memcmp(terms + n - SUFFIX_LEN - KEY_B64 - 1, key_s, KEY_B64) == 0 &&
		     fmt_unbase64(key_s, KEY_B64, key, sizeof key) == 0 && key[0] == 'E' && key[1] == 'd' &&
		     fmt_unbase64(sig_s, SIG_B64, sig, sizeof sig) == 0;
	json_decref(j);
	if (!shaped)
		return fmt_fail(e, FMT_INVALID_FORMAT, "licence terms: not the fmtkit licence JSON "
				"({\"fmtkit_licence\":1,\"terms\":{...},\"seller_key\":...,\"seller_sig\":...})");
	prefix_len = n - SUFFIX_LEN;
	const uint8_t *pk = key + 2 + FMT_MS_KEYNUM;
	fmt_ms_key_id(key + 2, s->lic_seller);
	fmt_kind k = fmt_sha256_buf(s->file, (size_t)s->payload_end, digest, e);
	if (k == FMT_OK)
		k = seller_message(s->terms - 75, terms, prefix_len, digest,
				   (s->flags & FMT_ALD_SIGNED) ? s->file + s->payload_end : NULL, &msg, &msg_len, e);
	if (k != FMT_OK)
		return k;
	int good = fmt_ed25519_verify(pk, msg, msg_len, sig);
	free(msg);
	if (!good)
		return fmt_fail(e, FMT_SIGNATURE, "licence: seller_sig by key %s does not verify (the licence or the "
				"file was changed after licensing)", s->lic_seller);
	const fmt_ms_public *t = o->keys.n_trusted ? fmt_trust_find_pk(o->keys.trusted, o->keys.n_trusted, pk) : NULL;
	if (o->keys.n_trusted && (!t || memcmp(t->keynum, key + 2, FMT_MS_KEYNUM) != 0))
		return fmt_fail(e, FMT_SIGNATURE, "licence signed by seller key %s, which is not a trusted key",
				s->lic_seller);
	s->lic_status = t ? "trusted" : "not checked";
	return FMT_OK;
}

/* Why the licence must carry a seller signature (see fmt_ald_check_license), or NULL. */
static const char *seller_required(const ald_state *s, const fmt_verify_opts *o, const char *path)
{
	struct stat st;
	char minisig[4096];
	if (o->keys.n_trusted)
		return "when trusted keys are given";
	if (s->flags & FMT_ALD_SIGNED)
		return "in a signed file";
	if (path && strcmp(path, "-") != 0 && (size_t)snprintf(minisig, sizeof minisig, "%s.minisig", path) <
	    sizeof minisig && stat(minisig, &st) == 0)
		return "in a file signed by its .minisig";
	return NULL;
}

int fmt_ald_licence_expired(const ald_state *s)
{
	return (s->flags & FMT_ALD_LICENSED) && (s->license_flags & FMT_LIC_EXPIRATION) && s->expires_at &&
	       (uint64_t)time(NULL) > s->expires_at;
}

fmt_kind fmt_ald_check_license(ald_state *s, const fmt_verify_opts *o, const char *path, fmt_err *e)
{
	char when[32];
	if (!(s->flags & FMT_ALD_LICENSED))
		return FMT_OK;
	fmt_kind k = check_seller(s, o, e);
	if (k != FMT_OK)
		return k;
	const char *why = strcmp(s->lic_status, "absent") == 0 ? seller_required(s, o, path) : NULL;
	if (why)
		return fmt_fail(e, FMT_SIGNATURE, "the licence carries no seller signature, which it must %s: the "
				".ald signature does not cover the licence block, so nothing vouches for its expiry, "
				"limits and terms", why);
	if (fmt_ald_licence_expired(s)) {
		fmt_format_utc(s->expires_at, when);
		return fmt_fail(e, FMT_LICENSE, "the licence expired on %s", when);
	}
	return FMT_OK;
}

fmt_kind fmt_ald_rows_gate(fmt_table *t, fmt_err *e)
{
	const ald_state *s = t->format_state;
	char when[32];
	if (!fmt_ald_licence_expired(s))
		return FMT_OK;
	fmt_format_utc(s->expires_at, when);
	if (!t->allow_expired)
		return fmt_fail(e, FMT_LICENSE, "the licence expired on %s: its rows are not read (--allow-expired "
				"reads them anyway)", when);
	snprintf(t->rows_note, sizeof t->rows_note, "the licence expired on %s; its rows are read anyway "
		 "(--allow-expired)", when);
	return FMT_OK;
}

json_t *fmt_ald_license_json(const ald_state *s)
{
	char id[33], uuid[40], hash[65], when[32];
	fmt_hex(s->license_id, 16, id);
	snprintf(uuid, sizeof uuid, "%.8s-%.4s-%.4s-%.4s-%.12s", id, id + 8, id + 12, id + 16, id + 20);
	fmt_hex(s->licensee_hash, 32, hash);
	json_t *l = json_object();
	json_object_set_new(l, "license_id", json_string(uuid));
	json_object_set_new(l, "licensee_sha256", json_string(hash));
	json_object_set_new(l, "issued_at", fmt_json_u64(s->issued_at));
	fmt_format_utc(s->issued_at, when);
	json_object_set_new(l, "issued", json_string(when));
	json_object_set_new(l, "expires_at", fmt_json_u64(s->expires_at));
	if (s->expires_at) {
		fmt_format_utc(s->expires_at, when);
		json_object_set_new(l, "expires", json_string(when));
	}
	if (fmt_ald_licence_expired(s))
		json_object_set_new(l, "expired", json_true());
	json_object_set_new(l, "flags", json_integer(s->license_flags));
	json_object_set_new(l, "seat_limit", json_integer(s->seat_limit));
	json_object_set_new(l, "query_limit", fmt_json_u64(s->query_limit));
	json_t *j = NULL;
	if (s->terms_len >= strlen(HEAD) && memcmp(s->terms, HEAD, strlen(HEAD)) == 0)
		j = fmt_json_loadb((const char *)s->terms, s->terms_len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(json_object_get(j, "terms")) && json_is_string(json_object_get(j, "seller_key"))) {
		uint8_t key[2 + FMT_MS_KEYNUM + FMT_MS_PK];
		char kid[FMT_MS_KEY_ID_HEX];
		json_object_set(l, "terms", json_object_get(j, "terms"));
		if (fmt_unbase64(json_string_value(json_object_get(j, "seller_key")), KEY_B64, key, sizeof key) == 0) {
			fmt_ms_key_id(key + 2, kid);
			json_object_set_new(l, "seller_key_id", json_string(kid));
		}
		json_object_set(l, "seller_key", json_object_get(j, "seller_key"));
	} else {
		json_object_set_new(l, "terms", fmt_json_string((const char *)s->terms, s->terms_len));
	}
	json_decref(j);
	if (s->lic_status)
		json_object_set_new(l, "seller_signature", json_string(s->lic_status));
	return l;
}
