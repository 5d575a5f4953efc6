/* The .ald container (specs/ald.md): header, MessagePack card, Arrow IPC schema block, the
 * STREAMING chunk index, encryption/signature/licence blocks (parsed and reported), payload
 * (none, zstd 3/19, LZ4 frame), CRC-32 trailer in either variant; the driver's table and hooks.
 * The files beside this one (the payload's Arrow IPC, the native and upstream layouts,
 * encryption, checks, signature, licence, writer) never call back here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "ald_internal.h"

#define HEADER 32
#define CHUNK_ENTRY 28
#define SIG_BLOCK 96
#define LICENSE_MIN 75
#define MAX_CHUNKS (1u << 24)

static const uint8_t magic[4] = { 'A', 'L', 'D', 'F' };

static fmt_kind bad(fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "%s", what);
}

static int probe(const uint8_t *head, size_t n, uint64_t size)
{
	(void)size;
	return n >= 4 && memcmp(head, magic, 4) == 0 ? 100 : 0;
}

static fmt_kind parse_chunk_index(ald_state *s, const uint8_t *d, uint64_t *pos, fmt_err *e)
{
	uint64_t at = *pos, bytes, end, rows = 0, bytes_used = 0;
	if (s->crc_off - at < 4)
		return bad(e, "chunk index runs past the end of the file");
	s->n_chunks = fmt_rd_u32(d + at);
	if (s->n_chunks > MAX_CHUNKS)
		return bad(e, "chunk index has more than 2^24 chunks");
	if (fmt_mul_u64(s->n_chunks, CHUNK_ENTRY, &bytes) || fmt_add_u64(at + 4, bytes, &end) || end > s->crc_off)
		return bad(e, "chunk index runs past the end of the file");
	s->chunks = calloc(s->n_chunks ? s->n_chunks : 1, sizeof *s->chunks);
	if (!s->chunks)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint32_t i = 0; i < s->n_chunks; i++) {
		const uint8_t *p = d + at + 4 + (uint64_t)CHUNK_ENTRY * i;
		ald_chunk *c = &s->chunks[i];
		c->row_offset = fmt_rd_u64(p);
		c->num_rows = fmt_rd_u32(p + 8);
		c->byte_offset = fmt_rd_u64(p + 12);
		c->csize = fmt_rd_u32(p + 20);
		c->usize = fmt_rd_u32(p + 24);
		if (c->row_offset != rows || c->byte_offset != bytes_used)
			return fmt_fail(e, FMT_INVALID_FORMAT, "chunk %u: row or byte offset out of sequence", i);
		rows += c->num_rows;
		bytes_used += c->csize;
	}
	if (rows != s->num_rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "chunk index holds %llu rows, the header says %llu",
				(unsigned long long)rows, (unsigned long long)s->num_rows);
	s->chunk_bytes = bytes_used;
	*pos = end;
	return FMT_OK;
}

static fmt_kind parse_trailer(ald_state *s, const uint8_t *d, fmt_err *e)
{
	uint64_t at = s->payload_end;
	if (s->flags & FMT_ALD_SIGNED) {
		if (s->crc_off - at < SIG_BLOCK)
			return bad(e, "signature block runs past the CRC");
		memcpy(s->sig_pub, d + at + 64, 32);
		at += SIG_BLOCK;
	}
	if (s->flags & FMT_ALD_LICENSED) {
		const uint8_t *l = d + at;
		if (s->crc_off - at < LICENSE_MIN)
			return bad(e, "licence block shorter than 75 bytes");
		uint32_t n = fmt_rd_u32(l + 71);
		if (n > s->crc_off - at - LICENSE_MIN)
			return bad(e, "licence terms run past the CRC");
		memcpy(s->license_id, l, 16);
		memcpy(s->licensee_hash, l + 16, 32);
		s->issued_at = fmt_rd_u64(l + 48);
		s->expires_at = fmt_rd_u64(l + 56);
		s->license_flags = l[64];
		s->seat_limit = fmt_rd_u16(l + 65);
		s->query_limit = fmt_rd_u32(l + 67);
		s->terms = l + 75;
		s->terms_len = n;
		at += LICENSE_MIN + (uint64_t)n;
	}
	/* Every byte is accounted for: bytes after the last block are covered by no signature
	 * (upstream ignores them; a flag cleared would leave a block there unnoticed). */
	if (at != s->crc_off)
		return fmt_fail(e, FMT_INVALID_FORMAT, "%llu byte%s after the %s, before the CRC, that no block "
				"accounts for", (unsigned long long)(s->crc_off - at), s->crc_off - at == 1 ? "" : "s",
				(s->flags & FMT_ALD_LICENSED) ? "licence terms" : (s->flags & FMT_ALD_SIGNED)
				? "signature block" : "payload");
	return FMT_OK;
}

fmt_kind fmt_ald_parse(fmt_table *t, ald_state *s, fmt_err *e)
{
	const uint8_t *d;
	uint64_t size = t->source.size, pos;
	if (size < HEADER + 4)
		return bad(e, "shorter than the 32-byte header and the CRC");
	fmt_kind k = fmt_source_view(&t->source, 0, size, &d, e);
	if (k != FMT_OK)
		return k;
	s->file = d;
	s->source = &t->source;
	if (memcmp(d, magic, 4) != 0)
		return bad(e, "bad magic (not ALDF)");
	if (fmt_ald_is_upstream_streaming(d, size))
		return fmt_ald_upstream_parse(t, s, e);
	s->major = d[4];
	s->minor = d[5];
	s->type = fmt_rd_u16(d + 6);
	s->meta_size = fmt_rd_u32(d + 8);
	s->payload_size = fmt_rd_u32(d + 12);
	s->raw_size = fmt_rd_u32(d + 16);
	s->compression = d[20];
	s->flags = d[21];
	s->schema_size = fmt_rd_u16(d + 22);
	s->num_rows = fmt_rd_u64(d + 24);
	s->crc_off = size - 4;
	s->crc_stored = fmt_rd_u32(d + s->crc_off);
	if (s->major > 1)
		return fmt_fail(e, FMT_UNSUPPORTED, "format version %u.%u (1.x is supported)", s->major, s->minor);
	if (s->compression > 3)
		return fmt_fail(e, FMT_UNSUPPORTED, "compression id %u (0-3 are defined)", s->compression);
	if ((uint64_t)HEADER + s->meta_size > s->crc_off)
		return bad(e, "metadata runs past the end of the file");
	if ((k = fmt_card_decode(d + HEADER, s->meta_size, &s->card, &s->card_form, &s->card_nonfinite, e)) != FMT_OK)
		return k;
	s->schema_start = HEADER + (uint64_t)s->meta_size;
	if (s->schema_start + s->schema_size > s->crc_off)
		return bad(e, "schema block runs past the end of the file");
	if ((k = fmt_ald_parse_schema_block(t, s, e)) != FMT_OK)
		return k;
	pos = s->schema_start + s->schema_size;
	if ((s->flags & FMT_ALD_STREAMING) && (k = parse_chunk_index(s, d, &pos, e)) != FMT_OK)
		return k;
	if ((s->flags & FMT_ALD_TRUENO_NATIVE) && (k = fmt_ald_native_parse(t, s, &pos, e)) != FMT_OK)
		return k;
	if (s->flags & FMT_ALD_ENCRYPTED) {
		if (pos >= s->crc_off)
			return bad(e, "encryption header runs past the end of the file");
		s->enc_mode = d[pos];
		uint64_t n = s->enc_mode == 0 ? 29 : 45;
		if (s->crc_off - pos < n)
			return bad(e, "encryption header runs past the end of the file");
		s->enc_start = pos;
		pos += n;
	}
	s->payload_start = pos;
	if (s->payload_size > s->crc_off - pos)
		return bad(e, "payload runs past the CRC");
	s->payload_end = pos + s->payload_size;
	if (!(s->flags & FMT_ALD_ENCRYPTED)) {
		s->payload = d + pos;
		s->payload_len = s->payload_size;
	}
	if ((s->flags & FMT_ALD_STREAMING) && !(s->flags & FMT_ALD_ENCRYPTED) && s->chunk_bytes != s->payload_size)
		return bad(e, "chunk sizes do not add up to the payload size");
	if ((k = parse_trailer(s, d, e)) != FMT_OK)
		return k;
	t->n_rows = s->num_rows;
	return FMT_OK;
}

/* The card (but its digest, which is of this file's payload) as the schema's FMT_ALD_CARD_KEY
 * metadata, so that a format with key/value metadata (Parquet) carries it, and .ald takes it
 * back. */
static fmt_kind card_as_meta(fmt_table *t, const ald_state *s, fmt_err *e)
{
	if (!s->card || !json_is_object(s->card))
		return FMT_OK;
	json_t *c = json_deep_copy(s->card);
	if (c)
		json_object_del(c, "sha256");
	char *text = c && json_object_size(c) ? json_dumps(c, JSON_COMPACT) : NULL;
	json_decref(c);
	if (!text)
		return FMT_OK;
	fmt_kind k = fmt_schema_add_meta(&t->schema, FMT_ALD_CARD_KEY, text, e);
	free(text);
	if (k == FMT_OK && s->card_nonfinite)
		k = fmt_schema_add_meta(&t->schema, FMT_ALD_CARD_NONFINITE_KEY, s->card_nonfinite, e);
	return k;
}

/* A dataset type other than tabular, by name, as the schema's FMT_ALD_TYPE_KEY metadata (as
 * the card: a new .ald takes it back). A type fmtkit has no name for is not carried. */
static fmt_kind type_as_meta(fmt_table *t, const ald_state *s, fmt_err *e)
{
	const char *name = fmt_ald_type_name(s->type);
	return s->type == 1 || !name ? FMT_OK : fmt_schema_add_meta(&t->schema, FMT_ALD_TYPE_KEY, name, e);
}

static fmt_kind ald_open(fmt_table *t, fmt_err *e)
{
	ald_state *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	fmt_kind k = fmt_ald_parse(t, s, e);
	if (k == FMT_OK)
		k = card_as_meta(t, s, e);
	return k == FMT_OK ? type_as_meta(t, s, e) : k;
}

static void ald_close(fmt_table *t)
{
	ald_state *s = t->format_state;
	if (!s)
		return;
	fmt_batch_slicer_free(&s->slicer);
	fmt_ald_part_close(s);
	free(s->plain);
	if (s->decrypted) {
		fmt_wipe(s->decrypted, s->payload_len);
		free(s->decrypted);
	}
	fmt_spill_close(&s->dec);
	free(s->chunks);
	fmt_ald_native_free(s);
	json_decref(s->card);
	free(s->card_nonfinite);
	free(s);
	t->format_state = NULL;
}

/* The rows the payload has given (more now, at_end: all of them) against the header's count,
 * which fmt-inspect and fmt-shard take as the table's. */
static fmt_kind payload_rows_check(ald_state *s, uint64_t more, int at_end, fmt_err *e)
{
	if (fmt_add_u64(s->rows_read, more, &s->rows_read) || s->rows_read > s->num_rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the payload holds more rows than the %llu the header says",
				(unsigned long long)s->num_rows);
	if (at_end && s->rows_read != s->num_rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the payload holds %llu rows, the header says %llu",
				(unsigned long long)s->rows_read, (unsigned long long)s->num_rows);
	return FMT_OK;
}

/* Where the buffers of the batch read last lie that are read from a file: a body kept in a
 * temporary file (fmt_ipc_next_message), else the file's mapping (the native layout's arrays). */
static const fmt_source *batch_source(const ald_state *s)
{
	return s->ipc_open && s->ipc.spilled ? &s->ipc.spill : s->source;
}

static fmt_kind ald_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	ald_state *s = t->format_state;
	int sliced;
	*done = 0;
	fmt_kind k = fmt_batch_slicer_next(&s->slicer, &t->schema, batch_source(s), b, &sliced, e);
	if (k != FMT_OK || sliced)
		return k;
	if ((s->flags & FMT_ALD_ENCRYPTED) && (k = fmt_ald_decrypt(s, t->keys, e)) != FMT_OK)
		return k;
	const fmt_field *u = fmt_schema_unsupported(&t->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	if (s->flags & FMT_ALD_TRUENO_NATIVE) {
		k = fmt_ald_native_next(s, b, done, e);
	} else {
		if (!(s->flags & FMT_ALD_STREAMING))
			k = fmt_ald_next_plain(s, &t->schema, b, done, e);
		else
			k = fmt_ald_next_streaming(s, &t->schema, b, done, e);
		if (k == FMT_OK)
			k = payload_rows_check(s, *done ? 0 : b->n_rows, *done, e);
		if (k == FMT_OK && *done && s->crc_as_read)
			k = fmt_ald_crc_as_read_end(s, e);
	}
	/* a big record batch goes on in slices; one in the spill file never whole (the next read unmaps it) */
	if (k != FMT_OK || *done)
		return k;
	if (s->ipc_open && s->ipc.spilled)
		return fmt_batch_slicer_take_out_of(&s->slicer, &t->schema, batch_source(s), b, e);
	return fmt_batch_slicer_take(&s->slicer, &t->schema, batch_source(s), b, e);
}

/* The CRC before anything else; with o (fmt-verify: every layer) also the card's digest of
 * the payload, which needs the payload decompressed, and its rows (conversions skip both: they
 * read the payload next). */
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
	if (k == FMT_OK && o && !o->licence_replaced)
		k = fmt_ald_check_license(s, o, t->path, e);
	/* a card whose known keys have the wrong kinds (a number for "version"): upstream's reader
	 * refuses it, and no .ald is written with it (fmt-inspect shows it with a warning) */
	if (k == FMT_OK && o && s->card)
		k = fmt_card_check_stored(s->card, e);
	/* fmt-verify authenticates an encrypted payload when it has the key, then checks its digest */
	const fmt_keyset *ks = o && (o->keys.password || o->keys.x25519) ? &o->keys : t->keys;
	if (k == FMT_OK && o && (s->flags & FMT_ALD_ENCRYPTED) && ks && (ks->password || ks->x25519))
		k = fmt_ald_decrypt(s, ks, e);
	/* a payload whose digest is right may still hold what no reader takes (a string that is not
	 * UTF-8, offsets out of order): every row read as the tools read it, when it can be here */
	if (k == FMT_OK && o)
		k = fmt_ald_check_payload_rows(t, s, o, e);
	return k;
}

static fmt_kind ald_verify_as_read(fmt_table *t, fmt_err *e)
{
	return fmt_ald_crc_as_read(t->format_state, e);
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

/* What fmt-verify refuses in the card, as describe's "warnings" (fmt-inspect shows them). */
static void card_warning(json_t *o, const json_t *card)
{
	fmt_err e;
	fmt_err_clear(&e);
	if (!card || fmt_card_check_stored(card, &e) == FMT_OK)
		return;
	json_t *w = json_array();
	json_array_append_new(w, fmt_json_string(e.msg, strlen(e.msg)));
	json_object_set_new(o, "warnings", w);
}

/* The checksum kind fmt-verify checks over the payload (null: none, as upstream's streaming
 * layout has). */
static json_t *crc_json(const ald_state *s)
{
	return s->crc_kind && !s->upstream_streaming ? json_string(s->crc_kind) : json_null();
}

/* describe's members fmt-verify reports, without its per-chunk and per-array detail. */
static json_t *ald_verify_facts(const fmt_table *t)
{
	const ald_state *s = t->format_state;
	json_t *o = json_object();
	json_object_set_new(o, "crc", crc_json(s));
	if (s->flags & FMT_ALD_ENCRYPTED)
		json_object_set_new(o, "payload_authenticated", json_boolean(s->payload != NULL));
	if (s->flags & FMT_ALD_LICENSED)
		json_object_set_new(o, "license", fmt_ald_license_json(s));
	return o;
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
	card_warning(o, s->card);
	json_object_set_new(o, "crc", crc_json(s));
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

/* ---- the .ald writing options ---- */

static const fmt_drvopts ald_options;

void fmt_ald_opts_of(const fmt_write_opts *o, ald_opts *out)
{
	const ald_opts *given = fmt_drvopt_values(o ? o->options : NULL, &ald_options);
	*out = given ? *given : (ald_opts){ 0 };
	if (!out->compression_set)
		out->compression = out->trueno_native ? FMT_ALD_NONE : FMT_ALD_ZSTD;
}

static int parse_compression(void *v, const char *arg, fmt_err *e)
{
	ald_opts *o = v;
	int id = fmt_ald_compression_by_name(arg);
	if (id < 0)
		return fmt_fail(e, FMT_USAGE, "--compression takes none, zstd, zstd-max or lz4 for a dataset"), -1;
	o->compression = id;
	o->compression_set = 1;
	return id == FMT_ALD_NONE ? FMT_DRVOPT_NEUTRAL : FMT_DRVOPT_GIVEN; /* none: what every format does */
}

static int parse_type(void *v, const char *arg, fmt_err *e)
{
	int id = fmt_ald_type_by_name(arg);
	if (id < 0) {
		char names[512];
		fmt_ald_type_names(names, sizeof names);
		return fmt_fail(e, FMT_USAGE, "--type takes one of: %s", names), -1;
	}
	((ald_opts *)v)->dataset_type = (uint16_t)id;
	return FMT_DRVOPT_GIVEN;
}

/* "tabular time_series ...": --type's values. */
static void type_words(char *buf, size_t n)
{
	fmt_ald_type_names(buf, n);
	char *to = buf;
	for (const char *p = buf; *p; p++)
		if (!(*p == ',' && p[1] == ' '))
			*to++ = *p;
	*to = '\0';
}

static int parse_card(void *v, const char *arg, fmt_err *e)
{
	(void)e;
	((ald_opts *)v)->card_file = arg;
	return FMT_DRVOPT_GIVEN;
}

static int parse_chunk_rows(void *v, const char *arg, fmt_err *e)
{
	char *end = NULL;
	unsigned long long n = *arg && *arg != '-' && *arg != '+' ? strtoull(arg, &end, 10) : 0;
	if (n == 0 || *end || n > UINT32_MAX)
		return fmt_fail(e, FMT_USAGE, "--chunk-rows takes a row count from 1 to 4294967295"), -1;
	((ald_opts *)v)->chunk_rows = n;
	return FMT_DRVOPT_GIVEN;
}

static int parse_trueno(void *v, const char *arg, fmt_err *e)
{
	(void)arg, (void)e;
	((ald_opts *)v)->trueno_native = 1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_compat(void *v, const char *arg, fmt_err *e)
{
	if (strcmp(arg, "alimentar") != 0)
		return fmt_fail(e, FMT_USAGE, "--compat takes alimentar"), -1;
	((ald_opts *)v)->compat_alimentar = 1;
	return FMT_DRVOPT_GIVEN;
}

static fmt_kind load_card(void *v, fmt_err *e)
{
	ald_opts *o = v;
	fmt_kind k = o->card_file ? fmt_drvopt_load_json(o->card_file, "--card", &o->card, e) : FMT_OK;
	if (k == FMT_OK && o->card && (k = fmt_card_check(o->card, e)) != FMT_OK)
		fmt_err_file(e, o->card_file);
	return k;
}

static void free_card(void *v)
{
	ald_opts *o = v;
	json_decref(o->card);
	o->card = NULL;
}

static const fmt_drvopt ald_option_list[] = {
	{ "compression", "CODEC", "payload compression: none, zstd (default), zstd-max, lz4", FMT_DRVOPT_WRITE,
	  FMT_DRVOPT_WORDS, "none zstd zstd-max lz4", .parse = parse_compression },
	{ "type", "NAME", "dataset type (default: the input's, else tabular)", FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS,
	  .words_from = type_words, .parse = parse_type },
	{ "card", "FILE", "dataset card (JSON: name, version, license, tags, ...)", FMT_DRVOPT_WRITE,
	  FMT_DRVOPT_FILE, "*.json", .parse = parse_card },
	{ "chunk-rows", "N", "STREAMING: independently compressed chunks of N rows", FMT_DRVOPT_WRITE,
	  .parse = parse_chunk_rows },
	{ "trueno-native", NULL, "TRUENO_NATIVE: numeric columns as aligned raw arrays", FMT_DRVOPT_WRITE,
	  .parse = parse_trueno },
	{ "compat", "NAME", "as alimentar 0.2 writes it (metadata array, its CRC)", FMT_DRVOPT_WRITE,
	  FMT_DRVOPT_WORDS, "alimentar", .parse = parse_compat },
	{ .name = NULL }
};

static const fmt_drvopts ald_options = {
	.list = ald_option_list, .size = sizeof(ald_opts), .load = load_card, .free = free_card,
};

const fmt_table_driver fmt_table_driver_ald = {
	.name = "ald",
	.extension = ".ald",
	.probe = probe,
	.open = ald_open,
	.next = ald_next,
	.verify = ald_verify,
	.verify_as_read = ald_verify_as_read,
	.write = fmt_ald_write,
	.close = ald_close,
	.describe = fmt_ald_describe,
	.verify_facts = ald_verify_facts,
	.secret = ald_secret,
	.decrypt = ald_decrypt,
	.rows_gate = fmt_ald_rows_gate,
	.encrypts = 1,
	.caps = FMT_CAP_ED25519 | FMT_CAP_ED25519_SIGN,
	.sign_in_place = fmt_ald_sign_in_place,
	.license_in_place = fmt_ald_license_in_place,
	.options = &ald_options,
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
