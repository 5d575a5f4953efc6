/* The .ald driver's state and the functions its files share. From the top down, each file calling
 * only those below it: ald.c (the container's parser, the driver table and hooks); ald_sign.c,
 * ald_licence.c and ald_write.c; ald_rewrite.c (CRC trailer, signature block, in-place
 * rewrites); ald_check.c (CRC and digest checks); ald_native.c and ald_upstream.c (two layouts);
 * ald_payload.c (the Arrow IPC inside); ald_crypt.c, ald_meta.c (names, CRC variants, card) and
 * compress.c. */
#ifndef FMT_ALD_INTERNAL_H
#define FMT_ALD_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include <jansson.h>
#include "fmt/arrow.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "compress.h"
#include "fmt/encrypt.h"

/* The values of the .ald writing options (fmt-convert --type, --card, ...; declared in ald.c). */
typedef struct ald_opts {
	int compression;           /* FMT_ALD_* (when compression_set) */
	int compression_set;       /* else zstd, or none for TRUENO_NATIVE's raw arrays */
	uint16_t dataset_type;     /* 0: tabular */
	const char *card_file;     /* the dataset card (JSON object) ... */
	json_t *card;              /* ... as loaded before the input is opened, or NULL */
	uint64_t chunk_rows;       /* > 0: STREAMING with chunks of this many rows */
	int trueno_native;         /* TRUENO_NATIVE: numeric columns as aligned raw arrays */
	int compat_alimentar;      /* upstream's metadata array and CRC variant */
} ald_opts;

/* The .ald options of a write (o may be NULL), compression resolved. */
void fmt_ald_opts_of(const struct fmt_write_opts *o, ald_opts *out);

typedef struct ald_chunk {
	uint64_t row_offset;
	uint32_t num_rows;
	uint64_t byte_offset;      /* from the start of the payload */
	uint32_t csize, usize;
} ald_chunk;

typedef struct ald_state {
	const uint8_t *file;       /* the whole file, mapped */
	const fmt_source *source;  /* the table's: passes over the mapping drop what they read */
	uint8_t major, minor, compression, flags;
	uint16_t type, schema_size;
	uint32_t meta_size, payload_size, raw_size, crc_stored;
	uint64_t num_rows;
	json_t *card;
	const char *card_form;     /* "map" or "array" */
	char *card_nonfinite;      /* where its NaN and infinite floats are (fmt_card_decode), or NULL */
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
	const uint8_t *payload;    /* the stored payload, decrypted (NULL until then) */
	uint64_t payload_len;
	uint8_t *decrypted;        /* owned: the decrypted payload when held in memory, or NULL */
	fmt_source dec;            /* or a spill file (fmt_spill_open) holding it, mapped; zeroed if not */
	char lic_seller[FMT_MS_KEY_ID_HEX]; /* the seller's key id when seller_sig verified */
	const char *lic_status;    /* seller_sig: "trusted", "not checked", "absent"; NULL before */
	const uint8_t *terms;
	uint32_t terms_len;
	/* reading: the part open (the payload, or a chunk), decompressed one message at a time */
	uint8_t *plain;            /* a raw LZ4 block chunk, decompressed whole */
	fmt_ipc_reader ipc;
	int ipc_open, payload_done;
	uint32_t next_chunk, part;
	uint64_t chunks_undropped; /* of the payload: from there on, chunks read keep their pages */
	uint64_t rows_read, part_rows; /* rows given so far: of the payload, of the open chunk */
	fmt_dstream ds;
	int ds_open;
	fmt_batch_slicer slicer;   /* a record batch over FMT_SLICE_OVER, handed on in slices */
	struct ald_native *native; /* TRUENO_NATIVE: the array index (ald_native.c) */
	int upstream_streaming;    /* alimentar's separate streaming layout (ald_upstream.c) */
	int chunk_codec;           /* how chunks are compressed when not as the id says; 0: as it says */
	struct fmt_sha256 *read_hash; /* or NULL: the parts being read are hashed as they decompress */
	int read_hash_failed;
	/* verify_as_read: the standard CRC-32 of [0, crc_pos), made as the payload is read;
	 * crc_lost when a read did not follow on (the whole file is then checked at the end) */
	int crc_as_read, crc_lost;
	uint32_t crc_run;
	uint64_t crc_pos;
} ald_state;

/* Encryption (ald_crypt.c): the header and cipher of a payload being written. */
typedef struct ald_enc {
	uint8_t header[45];        /* the encryption header (§5.1) */
	size_t header_len;
	fmt_gcm gcm;
	uint8_t *buf;
} ald_enc;

/* *on = 1 when ks has a password or an X25519 recipient: then c is ready (header made). */
fmt_kind fmt_ald_enc_begin(ald_enc *c, const fmt_keyset *ks, int *on, fmt_err *e);
fmt_kind fmt_ald_enc_write(ald_enc *c, fmt_sink *k, const uint8_t *p, size_t n, fmt_err *e);
fmt_kind fmt_ald_enc_end(ald_enc *c, fmt_sink *k, fmt_err *e);  /* writes the tag */
void fmt_ald_enc_free(ald_enc *c);
/* Decrypt the payload with ks (tag checked) into s->payload; DecryptionFailed without a key. */
fmt_kind fmt_ald_decrypt(ald_state *s, const fmt_keyset *ks, fmt_err *e);
/* FMT_SECRET_*: what reading the rows still needs. */
int fmt_ald_secret_needed(const ald_state *s);
/* The source whose mapping holds s->payload (its pages are dropped as they are passed): the spill
 * file of a decrypted payload, else the file. */
static inline const fmt_source *fmt_ald_payload_source(const ald_state *s)
{
	return s->dec.path ? &s->dec : s->source;
}

/* ---- ald_rewrite.c ---- */

/* The trailer: the CRC-32 (standard, or alimentar's with upstream) of everything k holds, read
 * back from the file, appended to it. tail, when not NULL, is the standard CRC-32 of what k's
 * tap saw (fmt_sink_tap): unless a write bypassed the tap, only the bytes before it are read
 * back, and the two CRCs combined. */
fmt_kind fmt_ald_sink_append_crc(fmt_sink *k, int upstream, const uint32_t *tail, fmt_err *e);
/* A tap (fmt_sink_tap) keeping the standard CRC-32 of what is appended in *(uint32_t *)ctx. */
void fmt_ald_crc_tap(void *ctx, const void *p, size_t n);

/* 1 when the file's CRC is alimentar 0.2's variant (rewrites keep the variant they found). */
static inline int fmt_ald_crc_is_upstream(const ald_state *s)
{
	return s->crc_kind && strcmp(s->crc_kind, "alimentar-0.2") == 0;
}

/* The in-place rewrites (signing, licensing): body writes everything before the trailer into a
 * temporary file beside path, the CRC in the variant s had follows, and the file replaces path;
 * on any error the temporary file is removed and path is left as it was. */
typedef fmt_kind (*fmt_ald_body_fn)(const ald_state *s, fmt_sink *k, const void *ctx, fmt_err *e);
fmt_kind fmt_ald_rewrite_in_place(const char *path, const ald_state *s, fmt_ald_body_fn body, const void *ctx,
				  fmt_err *e);
/* Reopen path with d (the .ald driver: the code above passes it down), verify it as fmt-verify
 * does without keys (nothing it refuses is signed or licensed; with licence_replaced the old
 * licence is not checked, also when expired), then check (NULL: none) whether it may be
 * rewritten, and rewrite it in place with body; ctx goes to both. */
typedef fmt_kind (*fmt_ald_check_fn)(const ald_state *s, const void *ctx, fmt_err *e);
fmt_kind fmt_ald_rewrite_checked(const fmt_table_driver *d, const char *path, int licence_replaced,
				 fmt_ald_check_fn check, fmt_ald_body_fn body, const void *ctx, fmt_err *e);
/* Sign the k->written bytes written so far (the file up to the payload end) and append the
 * 96-byte block (§6). */
struct fmt_ed25519_secret;
fmt_kind fmt_ald_append_signature(fmt_sink *k, const struct fmt_ed25519_secret *sec, fmt_err *e);

/* The driver's sign_in_place and license_in_place (ald.c): fmt_ald_sign_with and
 * fmt_ald_license_with with the driver itself. */
fmt_kind fmt_ald_sign_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);
fmt_kind fmt_ald_license_in_place(const char *path, const struct fmt_license_req *l, const fmt_keyset *keys,
				  fmt_err *e);

/* Licences (ald_licence.c): fmt-sign license (path reopened with d), and fmt-verify's seller_sig
 * and expiry checks. */
fmt_kind fmt_ald_license_with(const fmt_table_driver *d, const char *path, const struct fmt_license_req *l,
			      const fmt_keyset *keys, fmt_err *e);
/* The seller's signature (must verify when present; required with trusted keys, in a signed file
 * or one with path.minisig beside it; by a trusted key when keys are given), then the expiry. */
fmt_kind fmt_ald_check_license(ald_state *s, const struct fmt_verify_opts *o, const char *path, fmt_err *e);
/* 1 when the licence states an expiry (EXPIRATION_ENFORCED, expires_at) that has passed. */
int fmt_ald_licence_expired(const ald_state *s);
/* The table driver's rows_gate: an expired licence stops reading rows unless t->allow_expired. */
fmt_kind fmt_ald_rows_gate(fmt_table *t, fmt_err *e);
json_t *fmt_ald_license_json(const ald_state *s);

/* ---- ald.c: the container ---- */
fmt_kind fmt_ald_parse(fmt_table *t, ald_state *s, fmt_err *e);
/* alimentar's separate streaming layout (ald_upstream.c, specs/ald.md §11): recognised by its
 * header, parsed into the chunk state the STREAMING reader uses. */
int fmt_ald_is_upstream_streaming(const uint8_t *head, size_t n);
fmt_kind fmt_ald_upstream_parse(fmt_table *t, ald_state *s, fmt_err *e);
/* ---- ald_check.c ---- */
fmt_kind fmt_ald_check_crc(ald_state *s, fmt_err *e);
/* The CRC made by the reads of the payload instead (one pass over the file, not two): the
 * bytes before the payload now; UnsupportedVersion for an encrypted or TRUENO_NATIVE payload
 * and alimentar's streaming layout (check them first). fmt_ald_crc_as_read_end at the payload's
 * end checks the rest and the CRC as fmt_ald_check_crc does. */
fmt_kind fmt_ald_crc_as_read(ald_state *s, fmt_err *e);
fmt_kind fmt_ald_crc_as_read_end(ald_state *s, fmt_err *e);
/* What part_stream sets as a payload window's observer while the CRC is made as it is read. */
void fmt_ald_crc_observe(void *ctx, const uint8_t *p, size_t n);
/* Every part of the payload decompressed and its size checked against the header or chunk
 * index, and the card's sha256 against it (skipped while it is encrypted). */
fmt_kind fmt_ald_check_digest(ald_state *s, fmt_err *e);
fmt_kind fmt_ald_write(fmt_table *in, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);
json_t *fmt_ald_describe(const fmt_table *t);

/* ---- ald_payload.c: the Arrow IPC inside ---- */
/* The schema block at s->schema_start (s->schema_size bytes) into t->schema. */
fmt_kind fmt_ald_parse_schema_block(fmt_table *t, ald_state *s, fmt_err *e);
/* The next batch of a plain (not STREAMING) payload whose schema is want. */
fmt_kind fmt_ald_next_plain(ald_state *s, const fmt_schema *want, fmt_batch *b, int *done,
			    fmt_err *e);
/* The next batch of a STREAMING payload, chunk after chunk. */
fmt_kind fmt_ald_next_streaming(ald_state *s, const fmt_schema *want, fmt_batch *b, int *done, fmt_err *e);
/* Close the part being read (the payload or a chunk). */
void fmt_ald_part_close(ald_state *s);
/* Every part decompressed and its size checked; its SHA-256 against want (hex) unless NULL. */
fmt_kind fmt_ald_payload_check(ald_state *s, const char *want, fmt_err *e);
/* fmt-verify's last two checks of a readable payload: the card's digest (fmt_ald_check_digest)
 * and every row (fmt_table_verify_rows). One decompression serves both when the rows are read
 * from the payload's start and the card has a digest of it: the digest is taken as the rows
 * decompress. A row no reader takes in a payload that is not the card's is told as the digest's
 * mismatch, as the two checks one after the other would tell it. */
fmt_kind fmt_ald_check_payload_rows(fmt_table *t, ald_state *s, const struct fmt_verify_opts *o, fmt_err *e);
/* TRUENO_NATIVE (ald_native.c): the array index at *pos (moved to the payload's start), the
 * batches with the arrays' rows in place, the card's digest, the index as JSON, and the writer
 * of the part after the schema block: the index, the arrays and the payload to k, their bytes
 * from the first array on into sha, *payload the payload's size and *rows the row count. */
struct fmt_sha256;
fmt_kind fmt_ald_native_parse(fmt_table *t, ald_state *s, uint64_t *pos, fmt_err *e);
fmt_kind fmt_ald_native_next(ald_state *s, fmt_batch *b, int *done, fmt_err *e);
json_t *fmt_ald_native_json(const ald_state *s);
void fmt_ald_native_free(ald_state *s);
fmt_kind fmt_ald_native_check_opts(const ald_opts *o, fmt_err *e);
fmt_kind fmt_ald_native_body(fmt_table *in, fmt_sink *k, struct fmt_sha256 *sha, uint64_t *payload, uint64_t *rows,
			     fmt_err *e);
fmt_kind fmt_ald_native_check_digest(ald_state *s, const char *want, fmt_err *e);

/* ald_sign.c: the signature block (§6). */
/* With trusted keys: the block present, its key trusted, its signature good. */
fmt_kind fmt_ald_check_signature(const ald_state *s, const fmt_verify_opts *o, fmt_err *e);
/* fmt-sign sign --embed: path reopened with d, signed in place. */
fmt_kind fmt_ald_sign_with(const fmt_table_driver *d, const char *path, const fmt_keyset *keys, int threads,
			   fmt_err *e);
/* The embedded public key in standard Base64, as fmt-verify names an untrusted one. */
json_t *fmt_ald_signer_b64(const ald_state *s);

#endif
