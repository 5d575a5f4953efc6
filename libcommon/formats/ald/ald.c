/* The .ald table driver (specs/ald.md): its table and hooks over the container (ald_read.c),
 * the payload's Arrow IPC (ald_payload.c), the native layout, encryption, signature, licence and
 * writer in the files beside this one, none of which calls back here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "ald_internal.h"

static fmt_kind ald_open(fmt_table *t, fmt_err *e)
{
	ald_state *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	return fmt_ald_parse(t, s, e);
}

static void ald_close(fmt_table *t)
{
	ald_state *s = t->format_state;
	if (!s)
		return;
	fmt_ald_part_close(s);
	free(s->plain);
	if (s->decrypted) {
		fmt_wipe(s->decrypted, s->payload_len);
		free(s->decrypted);
	}
	free(s->chunks);
	fmt_ald_native_free(s);
	json_decref(s->card);
	free(s);
	t->format_state = NULL;
}

static fmt_kind ald_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	ald_state *s = t->format_state;
	fmt_kind k;
	*done = 0;
	if ((s->flags & FMT_ALD_ENCRYPTED) && (k = fmt_ald_decrypt(s, t->keys, e)) != FMT_OK)
		return k;
	const fmt_field *u = fmt_schema_unsupported(&t->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	if (s->flags & FMT_ALD_TRUENO_NATIVE)
		return fmt_ald_native_next(s, b, done, e);
	if (!(s->flags & FMT_ALD_STREAMING))
		return fmt_ald_next_plain(s, &t->schema, b, done, e);
	return fmt_ald_next_streaming(s, &t->schema, b, done, e);
}

/* The CRC before anything else; with o (fmt-verify: every layer) also the card's digest of
 * the payload, which needs the payload decompressed (conversions skip it: they read it next). */
static fmt_kind ald_verify(fmt_table *t, const struct fmt_verify_opts *o, fmt_err *e)
{
	ald_state *s = t->format_state;
	fmt_kind k = fmt_ald_check_crc(s, e);
	if (k == FMT_OK && o) {
		/* the signature check sees the signature keys only, not the decryption ones */
		fmt_verify_opts sig = *o;
		sig.keys.password = NULL;
		sig.keys.x25519 = NULL;
		k = fmt_ald_check_signature(s, &sig, e);
	}
	if (k == FMT_OK && o)
		k = fmt_ald_check_license(s, o, t->path, e);
	/* fmt-verify authenticates an encrypted payload when it has the key, then checks its digest */
	const fmt_keyset *ks = o && (o->keys.password || o->keys.x25519) ? &o->keys : t->keys;
	if (k == FMT_OK && o && (s->flags & FMT_ALD_ENCRYPTED) && ks && (ks->password || ks->x25519))
		k = fmt_ald_decrypt(s, ks, e);
	if (k == FMT_OK && o)
		k = fmt_ald_check_digest(s, e);
	return k;
}

static void hex_id(const uint8_t *b, size_t n, char *out)
{
	fmt_hex(b, n, out);
}

static json_t *flags_json(uint8_t flags)
{
	static const char *names[] = { "encrypted", "signed", "streaming", "licensed", "trueno_native" };
	json_t *a = json_array();
	for (int i = 0; i < 5; i++)
		if (flags & (1u << i))
			json_array_append_new(a, json_string(names[i]));
	for (int i = 5; i < 8; i++)
		if (flags & (1u << i))
			json_array_append_new(a, json_integer(1 << i));
	return a;
}

json_t *fmt_ald_describe(const fmt_table *t)
{
	const ald_state *s = t->format_state;
	json_t *o = json_object(), *h = json_object();
	char ver[16];
	const char *type = fmt_ald_type_name(s->type);
	snprintf(ver, sizeof ver, "%u.%u", s->major, s->minor);
	json_object_set_new(h, "version", json_string(ver));
	json_object_set_new(h, "dataset_type", type ? json_string(type) : json_integer(s->type));
	json_object_set_new(h, "dataset_type_id", json_integer(s->type));
	json_object_set_new(h, "metadata_size", json_integer(s->meta_size));
	json_object_set_new(h, "payload_size", json_integer(s->payload_size));
	json_object_set_new(h, "uncompressed_size", json_integer(s->raw_size));
	json_object_set_new(h, "compression", json_string(fmt_ald_compression_name(s->compression)));
	json_object_set_new(h, "flags", flags_json(s->flags));
	json_object_set_new(h, "schema_size", json_integer(s->schema_size));
	json_object_set_new(h, "num_rows", fmt_json_u64(s->num_rows));
	json_object_set_new(o, "header", h);
	json_object_set_new(o, "card", json_deep_copy(s->card));
	json_object_set_new(o, "card_form", json_string(s->card_form));
	json_object_set_new(o, "crc", s->crc_kind && !s->upstream_streaming ? json_string(s->crc_kind) : json_null());
	json_object_set_new(o, "layout", json_string(s->upstream_streaming ? "alimentar-streaming" : "standard"));
	if (s->flags & FMT_ALD_STREAMING) {
		json_t *chunks = json_array();
		for (uint32_t i = 0; i < s->n_chunks; i++) {
			json_t *c = json_object();
			json_object_set_new(c, "row_offset", fmt_json_u64(s->chunks[i].row_offset));
			json_object_set_new(c, "num_rows", json_integer(s->chunks[i].num_rows));
			json_object_set_new(c, "compressed_size", json_integer(s->chunks[i].csize));
			json_object_set_new(c, "uncompressed_size", json_integer(s->chunks[i].usize));
			json_array_append_new(chunks, c);
		}
		json_object_set_new(o, "chunks", chunks);
	}
	if (s->flags & FMT_ALD_TRUENO_NATIVE)
		json_object_set_new(o, "arrays", fmt_ald_native_json(s));
	if (s->flags & FMT_ALD_ENCRYPTED) {
		json_object_set_new(o, "encryption", json_string(s->enc_mode == 0 ? "password" : s->enc_mode == 1
									  ? "recipient" : "unknown mode"));
		json_object_set_new(o, "payload_authenticated", json_boolean(s->payload != NULL));
	}
	if (s->flags & FMT_ALD_SIGNED) {
		char pub[65];
		hex_id(s->sig_pub, 32, pub);
		json_object_set_new(o, "signature_public_key", json_string(pub));
		json_object_set_new(o, "signature_public_key_base64", fmt_ald_signer_b64(s));
	}
	if (s->flags & FMT_ALD_LICENSED)
		json_object_set_new(o, "license", fmt_ald_license_json(s));
	return o;
}

static int ald_secret(const fmt_table *t)
{
	return fmt_ald_secret_needed(t->format_state);
}

static fmt_kind ald_decrypt(fmt_table *t, fmt_err *e)
{
	return fmt_ald_decrypt(t->format_state, t->keys, e);
}

const fmt_table_driver fmt_table_driver_ald = {
	.name = "ald",
	.extension = ".ald",
	.probe = fmt_ald_probe,
	.open = ald_open,
	.next = ald_next,
	.verify = ald_verify,
	.write = fmt_ald_write,
	.close = ald_close,
	.describe = fmt_ald_describe,
	.secret = ald_secret,
	.decrypt = ald_decrypt,
	.rows_gate = fmt_ald_rows_gate,
	.encrypts = 1,
	.caps = FMT_CAP_ED25519 | FMT_CAP_ED25519_SIGN,
	.writes_opts = FMT_DOPT_COMPRESSION | FMT_DOPT_TYPE | FMT_DOPT_CARD | FMT_DOPT_CHUNK_ROWS | FMT_DOPT_TRUENO |
		       FMT_DOPT_COMPAT,
	.sign_in_place = fmt_ald_sign_in_place,
	.license_in_place = fmt_ald_license_in_place,
};

/* The in-place rewrites sit below this file: they reopen the file with the driver they are given. */
fmt_kind fmt_ald_sign_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e)
{
	return fmt_ald_sign_with(&fmt_table_driver_ald, path, keys, threads, e);
}

fmt_kind fmt_ald_license_in_place(const char *path, const struct fmt_license_req *l, const fmt_keyset *keys,
				  fmt_err *e)
{
	return fmt_ald_license_with(&fmt_table_driver_ald, path, l, keys, e);
}
