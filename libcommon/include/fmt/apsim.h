/* Apsi checkpoints (specs/apsim.md): safetensors files with units, compressed tensors, a
 * SHA-256 over the canonical table and data, HMAC signatures, and sharded sets. */
#ifndef FMT_APSIM_H
#define FMT_APSIM_H

#include "fmt/crypto.h"
#include "fmt/model.h"
#include "fmt/registry.h"

#define FMT_APSI_WRITER "fmtkit 0.1.0"   /* the `apsi` key this project writes */

/* Single files (name "apsim", extension ".apsim"; probed as safetensors whose __metadata__
 * format is "apsi-model", so it outranks the plain safetensors driver) and sharded sets
 * (name "apsim-index", extension ".apsim.index.json"). open validates structure and every
 * key of §2-§4 (not the digest); verify checks the digest of every file, the index rules of
 * §7, and with o->key the signature (§6). The model's metadata is the user record of the
 * `metadata` key (typed: strings, integers as i64/u64, reals as f64, booleans; nested values
 * as their compact JSON text); units and qtensors fill m->units and m->qtensors. */
extern const fmt_driver fmt_driver_apsim;
extern const fmt_driver fmt_driver_apsim_index;

/* What the file(s) declare (for inspect and the signing tool). */
typedef struct fmt_apsim_info {
	char sha256[FMT_SHA256_HEX + 1];   /* of a single file; "" for a set */
	char *apsi;                         /* writer name and version */
	uint32_t shard_i, shard_n;          /* 1/1 for a single file */
	char *signature;                    /* as stored, or NULL when unsigned */
	size_t n_shards;                    /* 1, or the set's shard count */
} fmt_apsim_info;
const fmt_apsim_info *fmt_apsim_info_of(const fmt_model *m);

/* The canonical table T of §5 for the tensors of m in file order and the given __metadata__
 * entries except sha256/signature (malloc'd, not NUL-terminated). */
fmt_kind fmt_apsim_table(const fmt_model *m, char **table, size_t *len, fmt_err *e);

/* Signed input S of §6 from the shard digests (hex, in shard order) and the signature value
 * for it: "hmac-sha256:<key-id>:<hex>" with keys->hmac, else "ed25519:<key-id>:<base64>" with
 * keys->ed25519_secret (§6.1). */
#define FMT_APSIM_SIG_MAX 128
fmt_kind fmt_apsim_signature(const fmt_keyset *keys, const char *const *shard_sha256, size_t n,
			     char out[FMT_APSIM_SIG_MAX], fmt_err *e);

/* Write m as one .apsim (driver write; o->keys.hmac signs it). Tensors are ordered as the
 * safetensors writer orders them; the digest is computed over the bytes as they stream. */
fmt_kind fmt_apsim_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e);

/* The driver's plan_shards and write_sharded: NAME-0000i-of-0000N.apsim shards plus
 * NAME.apsim.index.json (prefix is the path without ".apsim"), tensors in the safetensors
 * writer's order, cut by data bytes and/or tensor count with a compressed tensor's codes and
 * scales kept together (they count as two tensors). A model that fits in one shard is still a
 * set of one. o->sign_key signs the index. Every file appears at the commit, or none. */
#define FMT_APSIM_SHARD_LIMITS (FMT_SHARD_BY_BYTES | FMT_SHARD_BY_TENSORS)
fmt_kind fmt_apsim_plan_shards(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
			       fmt_shard_plan *p, fmt_err *e);
fmt_kind fmt_apsim_write_sharded(const fmt_model *m, const char *prefix, const fmt_shard_limits *l,
				 const fmt_write_opts *o, char ***out_paths, size_t *n_out, fmt_err *e);
/* Sign an existing file or set in place, atomically (fmt-sign sign): a single file is
 * rewritten with the signature key (data unchanged, header re-padded); an index gets its
 * metadata.signature. The digests are verified first. The sign_in_place of fmt_driver_apsim
 * and of fmt_driver_apsim_index: fmt_sign_in_place calls the one that found the file. */
fmt_kind fmt_apsim_sign_file_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);
fmt_kind fmt_apsim_sign_set_in_place(const char *path, const fmt_keyset *keys, int threads, fmt_err *e);

/* The signature an Apsi model carries (the drivers' signature hook), NULL when unsigned. */
const char *fmt_apsim_signature_of(const fmt_model *m);

/* An index file (§7) parsed from its text, without touching the shards: the keys of
 * metadata.shard_sha256 (plain file names, 64 lowercase hex each) in the JSON's order,
 * weight_map (every file named must have a shard_sha256 entry), total_size and the signature
 * (syntax checked) or NULL. Nesting is limited to 32 levels and duplicate members are
 * refused. Syntax errors are InvalidFormat, cross-reference errors SchemaMismatch. */
typedef struct fmt_apsim_index {
	char **files;
	char (*sha256)[FMT_SHA256_HEX + 1];
	size_t n_files;
	char **tensors;          /* weight_map keys, in the JSON's order */
	char **tensor_files;     /* and their files */
	size_t n_tensors;
	uint64_t total_size;
	char *signature;
} fmt_apsim_index;

fmt_kind fmt_apsim_index_parse(const char *json, size_t len, fmt_apsim_index *ix, fmt_err *e);
void fmt_apsim_index_free(fmt_apsim_index *ix);

#endif
