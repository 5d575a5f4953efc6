/* APR model files (specs/apr.md): the seed layout (Part A, `APR\x02`), the aprender layout
 * (Part B, `APR\0`), APR v1 (`APRN`, inspect and verify only) and the aprender-tsp files that
 * share aprender's magic (recognised and refused). Internal to the driver and its tests. */
#ifndef FMT_APR_INTERNAL_H
#define FMT_APR_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include "fmt/xxh3.h"
#include <jansson.h>
#include "fmt/model.h"
#include <pthread.h>
#include "fmt/registry.h"
#include "fmt/thread.h"

#define APR_ALIGN 64u
#define APR_SEED_HEADER 32u
#define APR_SEED_FOOTER 16u
#define APR_AP_HEADER 64u
#define APR_V1_HEADER 32u
#define APR_MAX_DIMS 8
#define APR_MAX_META (64u << 20)     /* metadata JSON above this is refused */

/* Seed flags (A.6). */
#define APR_F_LZ4 0x1u
#define APR_F_ZSTD 0x2u
#define APR_F_SHARDED 0x4u
#define APR_F_QUANTIZED 0x8u
#define APR_F_KNOWN 0xFu

/* Aprender flags (Part B §5). */
#define APR_AF_LZ4 0x0001u
#define APR_AF_ZSTD 0x0002u
#define APR_AF_ENCRYPTED 0x0004u
#define APR_AF_HAS_VOCAB 0x0200u
#define APR_AF_ROW_MAJOR 0x0400u
#define APR_AF_COLUMN_MAJOR 0x0800u

typedef enum apr_layout { APR_SEED, APR_APRENDER, APR_V1 } apr_layout;
typedef enum apr_codec { APR_CODEC_NONE, APR_CODEC_LZ4, APR_CODEC_ZSTD } apr_codec;

/* One file of a seed shard set (or the single file): where its checksum is. */
typedef struct apr_part {
	int src;                       /* index into the model's sources */
	uint64_t checksum;             /* its footer's XXH3-64 */
} apr_part;

/* What one file holds beyond the model: for fmt-inspect and fmt-verify. */
typedef struct apr_state {
	apr_layout layout;
	uint32_t flags;
	uint32_t version_major, version_minor;
	uint64_t metadata_size, index_offset, data_offset;
	uint64_t checksum;             /* seed: the footer's XXH3-64; aprender: footer CRC32 */
	uint32_t header_crc;           /* aprender */
	int has_footer;                /* aprender: 0 when the file has no room for one */
	/* aprender, the whole file after the header one compressed unit (Part B §13): APR_CODEC_LZ4
	 * (lz4_flex size-prepended block) or APR_CODEC_ZSTD, read into memory; else NONE. */
	apr_codec whole_codec;
	uint64_t whole_stored;         /* the compressed unit's bytes in the file */
	int whole_footer;              /* 4 bytes after the unit: the file's CRC32 */
	uint32_t whole_crc_stored, whole_crc;
	uint64_t shard_index, shard_count; /* seed shards (1-based); 0 when not a shard */
	uint64_t tensors_total;        /* seed shards: tensors in the whole set */
	apr_part *parts;               /* seed: every file read, in set order */
	size_t n_parts;
	char *writer;                  /* seed: the "writer" stamp, or NULL */
	/* v1 */
	uint16_t model_type;
	uint8_t v1_compression, v1_flags, v1_quality;
	uint32_t payload_size, uncompressed_size;
	json_t *v1_meta;               /* the MessagePack metadata as JSON, or NULL */
	/* A sequential source (fmt/io.h): the checksum computed as the stream passes, and where the
	 * last tensor ends (the footer follows); checked by verify once every tensor was read. */
	XXH3_state_t *stream_xxh;      /* seed */
	uint32_t stream_crc;           /* aprender */
	uint64_t data_end;
	int as_read;                   /* seed file: XXH3 computed by the reads (verify_as_read) */
	/* Compressed tensors decoded ahead of their reads, on a pool of the model's reader_threads. */
	pthread_mutex_t prefetch_lock;
	fmt_pool *pool;
} apr_state;

/* ---- layouts ---- */

/* Byte 0..3 classification. */
apr_layout apr_layout_of(const uint8_t *head, size_t n);
int fmt_apr_is_tsp(const uint8_t *head, size_t n);

fmt_kind fmt_apr_seed_open(fmt_model *m, apr_state *st, fmt_err *e);
/* Every shard's XXH3-64 (its reads shared by threads threads: fmt_xxh3_read), and with frames
 * every LZ4/zstd frame decoded (bounded memory). */
fmt_kind fmt_apr_seed_verify(fmt_model *m, const apr_state *st, int frames, int threads, fmt_err *e);
/* A single seed file: its XXH3 computed by the reads a conversion makes, in file order. */
fmt_kind fmt_apr_seed_verify_as_read(fmt_model *m, apr_state *st, fmt_err *e);
/* How a seed file is written: compression, the writer stamp, and for a shard its record. */
#define APR_MAX_PACK 16                /* tensors compressed at once, one per thread */
#define APR_PACK_BYTES (512u << 10)    /* ... each of at most this many bytes (larger: one at a time) */

typedef struct apr_seed_opts {
	apr_codec codec;
	int level;
	fmt_pool *pool;                /* compress this many small tensors at once (NULL: one) */
	int stamp;                     /* "writer" key (0 only to reproduce the spec's example) */
	uint64_t shard_index, shard_count, tensors_total; /* shard_count 0: not a shard */
} apr_seed_opts;
fmt_kind fmt_apr_seed_write(const fmt_model *m, fmt_sink *k, const apr_seed_opts *o, fmt_err *e);

/* The seed options the writer options ask for (a pool when compressing on several threads,
 * which the caller destroys). */
fmt_kind fmt_apr_seed_opts_from(const fmt_model *m, const fmt_write_opts *o, apr_seed_opts *so, fmt_err *e);
/* --apr-layout aprender was given (apr_driver.c declares the option; the default is seed). */
int fmt_apr_aprender_asked(const fmt_write_opts *o);

/* Seed shard sets NAME-0000i-of-0000N.apr, through the shared shard-set module. */
#define APR_SHARD_LIMITS (FMT_SHARD_BY_BYTES | FMT_SHARD_BY_TENSORS)
struct fmt_shard_limits;
struct fmt_shard_plan;
fmt_kind fmt_apr_plan_shards(const fmt_model *m, const char *prefix, const struct fmt_shard_limits *l,
			 struct fmt_shard_plan *p, fmt_err *e);
fmt_kind fmt_apr_write_sharded(const fmt_model *m, const char *prefix, const struct fmt_shard_limits *l,
			   const fmt_write_opts *o, char ***paths, size_t *n_paths, fmt_err *e);

fmt_kind fmt_apr_ap_open(fmt_model *m, apr_state *st, fmt_err *e);
fmt_kind fmt_apr_ap_verify(fmt_model *m, const apr_state *st, fmt_err *e);
fmt_kind fmt_apr_ap_write(const fmt_model *m, fmt_sink *k, fmt_err *e);
/* The header CRC of a 64-byte aprender header (Part B §4). */
uint32_t fmt_apr_ap_header_crc(const uint8_t h[APR_AP_HEADER]);

fmt_kind fmt_apr_v1_open(fmt_model *m, apr_state *st, fmt_err *e);
/* The CRC32 trailer; with trusted keys (o->keys) also the Ed25519 signature block (§16.2). */
fmt_kind fmt_apr_v1_verify(fmt_model *m, const apr_state *st, const fmt_verify_opts *o, fmt_err *e);

/* ---- dtype codes ---- */

/* Seed (A.7): ggml ids, the listed subset. FMT_DT_INVALID when not allowed. */
fmt_dtype fmt_apr_seed_dtype(unsigned code);
int fmt_apr_seed_code(fmt_dtype t);      /* -1 when the seed layout cannot hold t */
/* Aprender (§7.3, the canonical reader's table). */
fmt_dtype fmt_apr_ap_dtype(unsigned code);
int fmt_apr_ap_code(fmt_dtype t);        /* -1 when unsafe or impossible (codes 2..9 avoided) */

/* ---- metadata ---- */

/* Parse n bytes of JSON text (an object, no duplicate keys) into m's metadata, translating
 * APR keys to the model's GGUF-style keys (general.architecture, <arch>.block_count, ...). */
fmt_kind fmt_apr_meta_read(fmt_model *m, const char *text, size_t n, apr_layout layout, json_t **raw,
		       fmt_err *e);
/* The metadata JSON text for m in a layout (keys translated back; aprender: §6.2 order and
 * the always-written fields; seed with stamp: "writer":"fmtkit X.Y.Z"). extra, when not NULL,
 * is appended as "key":value JSON text ("shard":{...}). malloc'd. */
fmt_kind fmt_apr_meta_write(const fmt_model *m, apr_layout layout, int stamp, const char *extra, char **text,
			size_t *len, fmt_err *e);

/* ---- compressed segments ---- */

/* Give t (whose bytes are one LZ4 or zstd frame of stored bytes at absolute offset off in
 * source src) a reader that decompresses on demand. */
fmt_kind fmt_apr_attach_frame(fmt_model *m, fmt_tensor *t, int src, uint64_t off, uint64_t stored,
			  apr_codec codec, fmt_err *e);

/* Check that a tensor given a frame reader holds one frame of exactly its raw size, in bounded
 * memory (the tensor is not kept). */
fmt_kind fmt_apr_check_frame(const fmt_model *m, const fmt_tensor *t, fmt_err *e);

/* n bytes at off of s into a new buffer (*out, malloc'd, n + 1 bytes with a NUL after them),
 * grown as the bytes arrive, so that a size claimed by a hostile header costs no more memory
 * than the bytes really there. */
fmt_kind fmt_apr_read_grow(fmt_source *s, uint64_t off, uint64_t n, uint8_t **out, fmt_err *e);

/* For a sequential source: pass the bytes up to end through the observer (the checksum), then
 * read the rest to the end of the stream, hashing all of it but its last hold bytes (the
 * footer), which go to footer (*footer_len of them: fewer when the stream ends sooner). */
fmt_kind fmt_apr_stream_tail(fmt_source *s, uint64_t end, void (*hash)(void *ctx, const uint8_t *p, size_t n),
			     void *ctx, uint8_t *footer, size_t hold, size_t *footer_len, fmt_err *e);

/* A window on a source, read by pread (never mapped, so that the pages of a large file are not
 * charged to the process): get points at n bytes at off, valid until the next get. */
typedef struct fmt_apr_window {
	fmt_source *s;
	uint64_t limit;                /* bytes past this are not handed out */
	uint8_t *buf;
	size_t cap, len;
	uint64_t start;                /* file offset of buf[0] */
} fmt_apr_window;
fmt_kind fmt_apr_window_get(fmt_apr_window *w, uint64_t off, uint64_t n, const uint8_t **p, fmt_err *e);
void fmt_apr_window_free(fmt_apr_window *w);

/* Where encoded bytes go: a sink (or nowhere, counting only), hashed with XXH3 or CRC32. */
typedef struct apr_out {
	fmt_sink *k;                   /* NULL: count only (or into mem) */
	struct fmt_sb *mem;            /* append here instead (compressing ahead), or NULL */
	XXH3_state_t *xxh;             /* NULL: not hashed */
	int crc_on;
	unsigned long crc;
	uint64_t pos;
} apr_out;

fmt_kind fmt_apr_out_write(apr_out *o, const void *p, size_t n, fmt_err *e);
fmt_kind fmt_apr_out_zeros(apr_out *o, uint64_t n, fmt_err *e);
fmt_kind fmt_apr_out_pad(apr_out *o, fmt_err *e);   /* zeros up to a multiple of 64 */

/* Compress all of t's bytes as one frame into o; *stored = bytes written. A zstd frame is
 * compressed in independent jobs of APR_ZSTD_JOB input bytes (apr_zjobs.c), on the threads of
 * pool when given (NULL: this thread): its bytes depend on the job size, never on the number of
 * threads, and memory is two jobs per thread whatever the tensor's size. */
#define APR_ZSTD_JOB (1u << 20)
/* keep: NULL, or where the zstd jobs' contexts and buffers are kept from one tensor to the next
 * (free them with fmt_apr_zjobs_free): made once, not per tensor (201 tensors of a 1 GB model:
 * 158k page faults, a third of the CPU on the 2-core VM). The frames are the same either way. */
typedef struct apr_zjobs apr_zjobs;
fmt_kind fmt_apr_compress_tensor(const fmt_model *m, const fmt_tensor *t, apr_codec codec, int level, fmt_pool *pool,
				 apr_zjobs **keep, apr_out *o, uint64_t *stored, fmt_err *e);
fmt_kind fmt_apr_zstd_frame(const fmt_model *m, const fmt_tensor *t, int level, fmt_pool *pool, apr_zjobs **keep,
			    apr_out *o, fmt_err *e);
void fmt_apr_zjobs_free(apr_zjobs **jobs);

static inline uint64_t apr_align64(uint64_t x)
{
	return (x + 63u) & ~(uint64_t)63u;
}

#endif
