/* The Arrow IPC inside an .ald (specs/ald.md): the schema block, and the payload (whole, or the
 * chunks of a STREAMING file) decompressed one message at a time and checked against the sizes
 * the file declares. The container's parser (ald.c) and the native layout (ald_native.c)
 * read through it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "compress.h"
#include "ald_internal.h"

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

void fmt_ald_part_close(ald_state *s)
{
	if (s->ipc_open)
		fmt_ipc_close(&s->ipc);
	if (s->ds_open)
		fmt_dstream_free(&s->ds);
	s->ipc_open = s->ds_open = 0;
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
	d->mapped = fmt_ald_payload_source(s);
	if (s->crc_as_read && src == s->payload + off) {
		d->observe = fmt_ald_crc_observe;
		d->observe_ctx = s;
	}
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

/* fmt_source_observer of a part being read while s->read_hash takes the payload's digest. */
static void hash_read(void *ctx, const uint8_t *p, size_t n)
{
	ald_state *s = ctx;
	fmt_err ignored;
	if (fmt_sha256_update(s->read_hash, p, n, &ignored) != FMT_OK)
		s->read_hash_failed = 1;
}

/* Part i's Schema message, which must be the schema block's (its stream just opened). */
static fmt_kind part_schema(ald_state *s, const fmt_schema *want, uint32_t i, fmt_err *e)
{
	size_t pre, head;
	int eos;
	uint64_t body;
	fmt_kind k = part_stream(s, i, &s->ds, &s->plain, e);
	if (s->read_hash) {
		s->ds.on_output = hash_read;
		s->ds.on_output_ctx = s;
	}
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

/* Open part i for reading; on failure nothing stays open (a read after the error starts a part
 * afresh instead of going on in one whose IPC reader was never opened). */
static fmt_kind part_open(ald_state *s, const fmt_schema *want, uint32_t i, fmt_err *e)
{
	fmt_ald_part_close(s);
	s->ds_open = 1;
	s->part = i;
	s->part_rows = 0;
	fmt_kind k = part_schema(s, want, i, e);
	if (k != FMT_OK)
		fmt_ald_part_close(s);
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
		fmt_ald_part_close(s);
	}
	return FMT_OK;
}

/* The rows the open chunk has given (more now, at_end: all of them) against its index entry's. */
static fmt_kind chunk_rows_check(ald_state *s, uint64_t more, int at_end, fmt_err *e)
{
	uint64_t want = s->chunks[s->part].num_rows;
	if (fmt_add_u64(s->part_rows, more, &s->part_rows) || s->part_rows > want)
		return fmt_fail(e, FMT_INVALID_FORMAT, "chunk %u holds more rows than the %llu its index entry says", s->part,
				(unsigned long long)want);
	if (at_end && s->part_rows != want)
		return fmt_fail(e, FMT_INVALID_FORMAT, "chunk %u holds %llu rows, its index entry says %llu", s->part,
				(unsigned long long)s->part_rows, (unsigned long long)want);
	return FMT_OK;
}

/* After chunk i is read: the pages of the chunks read since the last drop leave the resident
 * set a MiB at a time (at the last chunk, all of them). A chunk's own stream drops only the whole
 * pages inside it, none of a small chunk's, and many small chunks held the file (issue 26). From
 * 64 KiB before the last drop's end: the partial page there. */
static void chunks_drop(ald_state *s, uint32_t i)
{
	uint64_t start = s->chunks[i].byte_offset, end = start + s->chunks[i].csize; /* within the payload */
	uint64_t lo = start < s->chunks_undropped ? start : s->chunks_undropped;
	if (end <= lo || (end - lo < ((uint64_t)1 << 20) && i + 1 < s->n_chunks))
		return;
	fmt_source_drop(fmt_ald_payload_source(s), s->payload + lo, (size_t)(end - lo));
	s->chunks_undropped = end > (64u << 10) ? end - (64u << 10) : 0;
}

/* The next batch of a STREAMING payload: chunk after chunk, each checked as it ends. */
fmt_kind fmt_ald_next_streaming(ald_state *s, const fmt_schema *want, fmt_batch *b, int *done, fmt_err *e)
{
	fmt_kind k;
	for (;;) {
		if (!s->ds_open) {
			if (s->next_chunk >= s->n_chunks) {
				*done = 1;
				return FMT_OK;
			}
			if ((k = part_open(s, want, s->next_chunk++, e)) != FMT_OK)
				return k;
		}
		if ((k = part_next(s, b, done, e)) != FMT_OK)
			return k;
		if ((k = chunk_rows_check(s, *done ? 0 : b->n_rows, *done, e)) != FMT_OK || !*done)
			return k;
		chunks_drop(s, s->part);
		fmt_ald_part_close(s);
		*done = 0;
	}
}

/* The digest h has taken (h is finished) against the card's want (hex). */
static fmt_kind digest_check(fmt_sha256 *h, const char *want, fmt_err *e)
{
	uint8_t digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	fmt_kind k = fmt_sha256_final(h, digest, e);
	if (k != FMT_OK)
		return k;
	fmt_hex(digest, FMT_SHA256_LEN, hex);
	if (strcmp(hex, want) != 0)
		return fmt_fail(e, FMT_CHECKSUM, "payload SHA-256 %s differs from the card's %s", hex, want);
	return FMT_OK;
}

fmt_kind fmt_ald_payload_check(ald_state *s, const char *want, fmt_err *e)
{
	int hash = want != NULL;
	fmt_sha256 h;
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
		if (part != PAYLOAD)
			chunks_drop(s, part);
	}
	if (k == FMT_OK && hash)
		k = digest_check(&h, want, e);
	fmt_sha256_free(&h);
	return k;
}

fmt_kind fmt_ald_check_payload_rows(fmt_table *t, ald_state *s, const fmt_verify_opts *o, fmt_err *e)
{
	const json_t *card = json_object_get(s->card, "sha256");
	const char *want = json_is_string(card) ? json_string_value(card) : NULL;
	/* from the start of a plain or STREAMING payload (not the native arrays, nor alimentar's
	 * streaming layout, whose card has no digest): nothing read yet */
	int one_pass = s->payload && want && !(s->flags & FMT_ALD_TRUENO_NATIVE) && !s->upstream_streaming &&
		       !s->ds_open && !s->payload_done && s->next_chunk == 0 && !fmt_schema_unsupported(&t->schema);
	fmt_kind k;
	if (!one_pass) {
		k = fmt_ald_check_digest(s, e);
		return k == FMT_OK && s->payload ? fmt_table_verify_rows(t, o, e) : k;
	}
	fmt_sha256 h;
	if ((k = fmt_sha256_init(&h, e)) != FMT_OK)
		return k;
	s->read_hash = &h;
	s->read_hash_failed = 0;
	k = fmt_table_verify_rows(t, o, e);
	s->read_hash = NULL;
	if (k == FMT_OK && s->read_hash_failed)
		k = fmt_fail(e, FMT_IO, "payload SHA-256: out of memory");
	if (k == FMT_OK) {
		k = digest_check(&h, want, e);
	} else {
		fmt_err d;
		fmt_err_clear(&d);
		if (fmt_ald_check_digest(s, &d) == FMT_CHECKSUM) { /* the payload is not the card's */
			*e = d;
			k = FMT_CHECKSUM;
		}
	}
	fmt_sha256_free(&h);
	return k;
}
