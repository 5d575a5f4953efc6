/* The .ald container (specs/ald.md): header, MessagePack card, Arrow IPC schema block, the
 * STREAMING chunk index, encryption/signature/licence blocks (parsed and reported), payload
 * (none, zstd 3/19, LZ4 frame), CRC-32 trailer in either variant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "compress.h"
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

fmt_kind fmt_ald_parse_schema_block(fmt_table *t, ald_state *s, fmt_err *e)
{
	fmt_ipc_reader r;
	fmt_kind k = fmt_ipc_open(&r, s->file + s->schema_start, s->schema_size, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "schema block");
		return k;
	}
	for (size_t i = 0; i < r.schema.n_fields && k == FMT_OK; i++)
		k = fmt_schema_add_field(&t->schema, &r.schema.fields[i], e);
	fmt_ipc_close(&r);
	return k;
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
	if ((k = fmt_card_decode(d + HEADER, s->meta_size, &s->card, &s->card_form, e)) != FMT_OK)
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

fmt_kind fmt_ald_check_crc(ald_state *s, fmt_err *e)
{
	if (s->crc_kind)
		return FMT_OK;
	uint32_t ieee = fmt_crc32_ieee(0, s->file, s->crc_off);
	if (ieee == s->crc_stored) {
		s->crc_kind = "ieee";
		return FMT_OK;
	}
	uint32_t ali = fmt_crc32_alimentar(0, s->file, s->crc_off);
	if (ali == s->crc_stored) {
		s->crc_kind = "alimentar-0.2";
		return FMT_OK;
	}
	return fmt_fail(e, FMT_CHECKSUM, "CRC-32 mismatch: stored %08x, computed %08x (standard) and %08x (alimentar 0.2)",
			s->crc_stored, ieee, ali);
}

static fmt_kind ald_open(fmt_table *t, fmt_err *e)
{
	ald_state *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	return fmt_ald_parse(t, s, e);
}

static void part_close(ald_state *s)
{
	if (s->ipc_open)
		fmt_ipc_close(&s->ipc);
	if (s->ds_open)
		fmt_dstream_free(&s->ds);
	s->ipc_open = s->ds_open = 0;
}

static void ald_close(fmt_table *t)
{
	ald_state *s = t->format_state;
	if (!s)
		return;
	part_close(s);
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

/* The part being read or checked: the whole payload (PAYLOAD), or chunk i of a STREAMING file. */
#define PAYLOAD UINT32_MAX

/* Part i as a decompressing window limited to the size the file declares for it (the header's
 * uncompressed_size, the chunk's uncompressed_size). A raw LZ4 block chunk cannot be
 * decompressed in pieces: it is decompressed whole into *whole (at most its declared size; what
 * *whole held is freed), then windowed. */
static fmt_kind part_stream(ald_state *s, uint32_t i, fmt_dstream *d, uint8_t **whole, fmt_err *e)
{
	uint64_t off = 0, len = s->payload_len, declared = s->raw_size;
	int id = s->compression;
	memset(d, 0, sizeof *d); /* freeable whatever fails */
	if (i != PAYLOAD) {
		off = s->chunks[i].byte_offset;
		len = s->chunks[i].csize;
		declared = s->chunks[i].usize;
	}
	const uint8_t *src = s->payload + off;
	free(*whole);
	*whole = NULL;
	if (i != PAYLOAD && s->chunk_codec == FMT_LZ4_SIZE_PREFIXED_BLOCK) {
		size_t n;
		fmt_kind k = fmt_unlz4_block(src, (size_t)len, (size_t)declared, whole, &n, e);
		if (k != FMT_OK)
			return k;
		if (n != declared)
			return fmt_fail(e, FMT_INVALID_FORMAT, "chunk %u decompresses to %zu bytes, the index says %llu", i,
					n, (unsigned long long)declared);
		id = FMT_ALD_NONE;
		src = *whole;
		len = n;
	}
	fmt_kind k = fmt_dstream_init(d, id, src, (size_t)len, declared, e);
	if (i == PAYLOAD)
		snprintf(d->what, sizeof d->what, "payload");
	else
		snprintf(d->what, sizeof d->what, "chunk %u", i);
	return k;
}

/* After part i's last byte: what it decompressed to against what the file declares. */
static fmt_kind part_size_check(const ald_state *s, uint32_t i, const fmt_dstream *d, fmt_err *e)
{
	if (d->produced == d->limit)
		return FMT_OK;
	if (i == PAYLOAD)
		return fmt_fail(e, FMT_INVALID_FORMAT, "payload decompresses to %llu bytes, the header's uncompressed_size "
				"says %u", (unsigned long long)d->produced, s->raw_size);
	return fmt_fail(e, FMT_INVALID_FORMAT, "chunk %u decompresses to %llu bytes, the index says %u", i,
			(unsigned long long)d->produced, s->chunks[i].usize);
}

/* The framing of the next message in the window: its metadata at [*pre, *head), or *eos. */
static fmt_kind message_head(ald_state *s, size_t *pre, size_t *head, int *eos, fmt_err *e)
{
	size_t need = 8;
	for (;;) {
		fmt_kind k = fmt_dstream_fill(&s->ds, need, e);
		if (k != FMT_OK)
			return k;
		size_t avail = fmt_dstream_avail(&s->ds);
		if ((k = fmt_ipc_message_head(fmt_dstream_data(&s->ds), avail, pre, head, eos, e)) != FMT_OK)
			return k;
		if (*eos || *head <= avail)
			return FMT_OK;
		if (s->ds.done)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: the payload ends inside a message");
		need = *head;
	}
}

static fmt_kind pull(void *ctx, uint8_t *dst, uint64_t n, fmt_err *e)
{
	return fmt_dstream_read(ctx, dst, n, e);
}

/* Open part i for reading: its Schema message, which must be the schema block's. */
static fmt_kind part_open(ald_state *s, const fmt_schema *want, uint32_t i, fmt_err *e)
{
	size_t pre, head;
	int eos;
	uint64_t body;
	part_close(s);
	s->ds_open = 1;
	s->part = i;
	fmt_kind k = part_stream(s, i, &s->ds, &s->plain, e);
	if (k == FMT_OK)
		k = message_head(s, &pre, &head, &eos, e);
	if (k == FMT_OK && eos)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: the payload has no Schema message");
	if (k != FMT_OK)
		return k;
	const uint8_t *meta = fmt_dstream_data(&s->ds) + pre;
	if ((k = fmt_ipc_open_message(&s->ipc, meta, head - pre, &body, e)) != FMT_OK)
		return k;
	s->ipc_open = 1;
	fmt_dstream_consume(&s->ds, head);
	if ((k = fmt_dstream_read(&s->ds, NULL, body, e)) != FMT_OK)
		return k;
	if ((k = fmt_schema_expect(want, &s->ipc.schema, e)) != FMT_OK)
		fmt_err_prefix(e, "payload schema differs from the schema block");
	return k;
}

/* The next batch of the open part; at its end (*end) the part's size is checked. */
static fmt_kind part_next(ald_state *s, fmt_batch *b, int *end, fmt_err *e)
{
	size_t pre, head;
	fmt_kind k = message_head(s, &pre, &head, end, e);
	if (k != FMT_OK)
		return k;
	if (*end) {
		if ((k = fmt_dstream_drain(&s->ds, e)) != FMT_OK)
			return k;
		return part_size_check(s, s->part, &s->ds, e);
	}
	const uint8_t *meta = fmt_dstream_data(&s->ds) + pre;
	fmt_dstream_consume(&s->ds, head); /* meta stays valid: it is copied before the body is pulled */
	return fmt_ipc_next_message(&s->ipc, meta, head - pre, pull, &s->ds, b, e);
}

/* A plain (not STREAMING) payload: decompressed message by message, so memory holds what one
 * batch's rows use. */
fmt_kind fmt_ald_next_plain(ald_state *s, const fmt_schema *want, fmt_batch *b, int *done,
			    fmt_err *e)
{
	fmt_kind k;
	if (s->payload_done) {
		*done = 1;
		return FMT_OK;
	}
	if (!s->ds_open && (k = part_open(s, want, PAYLOAD, e)) != FMT_OK)
		return k;
	if ((k = part_next(s, b, done, e)) != FMT_OK)
		return k;
	if (*done) {
		s->payload_done = 1;
		part_close(s);
	}
	return FMT_OK;
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
	for (;;) {
		if (!s->ds_open) {
			if (s->next_chunk >= s->n_chunks) {
				*done = 1;
				return FMT_OK;
			}
			if ((k = part_open(s, &t->schema, s->next_chunk++, e)) != FMT_OK)
				return k;
		}
		if ((k = part_next(s, b, done, e)) != FMT_OK || !*done)
			return k;
		part_close(s);
		*done = 0;
	}
}

/* Every part decompressed (at most what the file declares for it) and its size checked, as the
 * readers do; the card's sha256 against the whole, when the card has one. */
fmt_kind fmt_ald_check_digest(ald_state *s, fmt_err *e)
{
	const json_t *want = json_object_get(s->card, "sha256");
	if (!s->payload)
		return FMT_OK;
	if (s->flags & FMT_ALD_TRUENO_NATIVE)
		return json_is_string(want) ? fmt_ald_native_check_digest(s, json_string_value(want), e) : FMT_OK;
	/* upstream's streaming card has no digest and its LZ4 chunks are not frames: sizes only */
	int hash = json_is_string(want) && !s->upstream_streaming;
	fmt_sha256 h;
	uint8_t digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	fmt_kind k = fmt_sha256_init(&h, e);
	uint32_t parts = (s->flags & FMT_ALD_STREAMING) ? s->n_chunks : 1;
	for (uint32_t i = 0; k == FMT_OK && i < parts; i++) {
		uint32_t part = (s->flags & FMT_ALD_STREAMING) ? i : PAYLOAD;
		fmt_dstream ds;
		uint8_t *whole = NULL;
		k = part_stream(s, part, &ds, &whole, e);
		while (k == FMT_OK && (k = fmt_dstream_fill(&ds, 1u << 20, e)) == FMT_OK && fmt_dstream_avail(&ds)) {
			if (hash)
				k = fmt_sha256_update(&h, fmt_dstream_data(&ds), fmt_dstream_avail(&ds), e);
			fmt_dstream_consume(&ds, fmt_dstream_avail(&ds));
		}
		if (k == FMT_OK)
			k = part_size_check(s, part, &ds, e);
		fmt_dstream_free(&ds);
		free(whole);
	}
	if (k == FMT_OK)
		k = fmt_sha256_final(&h, digest, e);
	fmt_sha256_free(&h);
	if (k != FMT_OK || !hash)
		return k;
	fmt_hex(digest, FMT_SHA256_LEN, hex);
	if (strcmp(hex, json_string_value(want)) != 0)
		return fmt_fail(e, FMT_CHECKSUM, "payload SHA-256 %s differs from the card's %s", hex,
				json_string_value(want));
	return FMT_OK;
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
	{ "type", "NAME", "dataset type (default tabular)", FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS,
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
	.write = fmt_ald_write,
	.close = ald_close,
	.describe = fmt_ald_describe,
	.secret = ald_secret,
	.decrypt = ald_decrypt,
	.rows_gate = fmt_ald_rows_gate,
	.encrypts = 1,
	.caps = FMT_CAP_ED25519 | FMT_CAP_ED25519_SIGN,
	.sign_in_place = fmt_ald_sign_in_place,
	.license_in_place = fmt_ald_license_in_place,
	.options = &ald_options,
};
