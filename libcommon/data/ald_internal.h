/* The .ald driver's state, shared by its reader (ald.c) and writer (ald_write.c). */
#ifndef FMT_DATA_ALD_INTERNAL_H
#define FMT_DATA_ALD_INTERNAL_H

#include <stdint.h>
#include <jansson.h>
#include "fmt/arrow.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "compress.h"

typedef struct ald_chunk {
	uint64_t row_offset;
	uint32_t num_rows;
	uint64_t byte_offset;      /* from the start of the payload */
	uint32_t csize, usize;
} ald_chunk;

typedef struct ald_state {
	const uint8_t *file;       /* the whole file, mapped */
	uint8_t major, minor, compression, flags;
	uint16_t type, schema_size;
	uint32_t meta_size, payload_size, raw_size, crc_stored;
	uint64_t num_rows;
	json_t *card;
	const char *card_form;     /* "map" or "array" */
	const char *crc_kind;      /* after the CRC check: "ieee" or "alimentar-0.2" */
	uint64_t schema_start, enc_start, payload_start, payload_end, crc_off;
	ald_chunk *chunks;
	uint32_t n_chunks;
	uint64_t chunk_bytes;
	uint8_t enc_mode;
	uint8_t sig_pub[32];
	uint8_t license_id[16], licensee_hash[32], license_flags;
	uint64_t issued_at, expires_at;
	uint16_t seat_limit;
	uint32_t query_limit;
	const uint8_t *terms;
	uint32_t terms_len;
	/* reading */
	uint8_t *plain;            /* the decompressed payload or chunk */
	size_t plain_len;
	fmt_ipc_reader ipc;
	int ipc_open, payload_done;
	uint32_t next_chunk;
	fmt_dstream ds;            /* a plain payload, decompressed one message at a time */
	int ds_open;
	size_t pending;            /* bytes of the message last returned, dropped on the next call */
	struct ald_native *native; /* TRUENO_NATIVE: the array index (ald_native.c) */
	int upstream_streaming;    /* alimentar's separate streaming layout (ald_upstream.c) */
	int chunk_codec;           /* how chunks are compressed when not as the id says; 0: as it says */
} ald_state;

fmt_kind fmt_ald_parse(fmt_table *t, ald_state *s, fmt_err *e);
/* The schema block at s->schema_start (s->schema_size bytes) into t->schema. */
fmt_kind fmt_ald_parse_schema_block(fmt_table *t, ald_state *s, fmt_err *e);
/* alimentar's separate streaming layout (ald_upstream.c, specs/ald.md §11): recognised by its
 * header, parsed into the chunk state the STREAMING reader uses. */
int fmt_ald_is_upstream_streaming(const uint8_t *head, size_t n);
fmt_kind fmt_ald_upstream_parse(fmt_table *t, ald_state *s, fmt_err *e);
fmt_kind fmt_ald_check_crc(ald_state *s, fmt_err *e);
fmt_kind fmt_ald_write(fmt_table *in, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);
json_t *fmt_ald_describe(const fmt_table *t);
/* The next batch of a plain (not STREAMING) payload whose schema is want. */
fmt_kind fmt_ald_next_plain(ald_state *s, const fmt_schema *want, fmt_batch *b, int *done,
			    fmt_err *e);
/* TRUENO_NATIVE (ald_native.c): the array index at *pos (moved to the payload's start), the
 * batches with the arrays' rows in place, the card's digest, the index as JSON, and the writer
 * of the part after the schema block: the index, the arrays and the payload to k, their bytes
 * from the first array on into sha, *payload the payload's size and *rows the row count. */
struct fmt_sha256;
struct fmt_dataset_opts;
fmt_kind fmt_ald_native_parse(fmt_table *t, ald_state *s, uint64_t *pos, fmt_err *e);
fmt_kind fmt_ald_native_next(ald_state *s, fmt_batch *b, int *done, fmt_err *e);
json_t *fmt_ald_native_json(const ald_state *s);
void fmt_ald_native_free(ald_state *s);
fmt_kind fmt_ald_native_check_opts(const struct fmt_dataset_opts *o, fmt_err *e);
fmt_kind fmt_ald_native_body(fmt_table *in, fmt_sink *k, struct fmt_sha256 *sha, uint64_t *payload, uint64_t *rows,
			     fmt_err *e);
fmt_kind fmt_ald_native_check_digest(ald_state *s, const char *want, fmt_err *e);

#endif
