/* Shared between apsim.c (single files), apsim_index.c (sets) and apsim_write.c (writers). */
#ifndef FMT_APSIM_INTERNAL_H
#define FMT_APSIM_INTERNAL_H

#include <jansson.h>
#include "fmt/strbuf.h"
#include "fmt/apsim.h"
#include "fmt/minisign.h"

#define APSIM_NM "'%.200s'"
#define APSIM_MAX_DEPTH 32
#define APSIM_QSCALE "__qscale"

/* A growable string. */


/* One __metadata__ entry as stored. */
typedef struct apsim_kv {
	char *key;
	char *val;
	size_t val_len;
} apsim_kv;

/* What one .apsim file declares. */
typedef struct apsim_file {
	char *path;                  /* for messages (the source's path) */
	int source;                  /* index into m->sources */
	apsim_kv *kv;                /* every __metadata__ entry, in file order */
	size_t n_kv;
	const char *apsi, *units_text, *qtensors_text, *metadata_text, *sha256, *signature;
	uint32_t shard_i, shard_n;
	int has_shard;
	json_t *qtensors;            /* parsed; units and the metadata record are read without a tree */
	const char **extra;          /* unknown keys (pointers into kv) */
	size_t n_extra;
	fmt_unit *unit_list;         /* parsed units */
	size_t n_units;
	fmt_qtensor *q_list;         /* parsed descriptors (names owned) */
	size_t n_q;
	fmt_nameset q_names;         /* q_list[i].name -> i */
	uint64_t header_len, data_len;
	size_t first_tensor, n_tensors; /* this file's tensors in m->tensors */
} apsim_file;

typedef struct apsim_state {
	fmt_apsim_info info;
	int is_set;
	apsim_file *files;           /* one, or the shards in shard order */
	size_t n_files;
	char **shard_names;          /* set: file names in shard order */
	char (*shard_sha)[FMT_SHA256_HEX + 1]; /* set: index shard_sha256 in shard order */
	uint64_t total_size;
	char *index_signature;       /* set */
} apsim_state;

void fmt_apsim_file_free(apsim_file *f);
void fmt_apsim_state_free(apsim_state *st);

/* Open the safetensors file m->sources[source], interpret its __metadata__ (§2-§4) into f
 * and leave its tensors in m (not its metadata). Units are checked against the file's own
 * tensors only for a single file (shard_n == 1); sets check them against the set. */
fmt_kind fmt_apsim_read_file(fmt_model *m, int source, apsim_file *f, fmt_err *e);

/* Copy the file's user metadata (typed) and units into m. */
fmt_kind fmt_apsim_fill_meta_units(fmt_model *m, const apsim_file *f, fmt_err *e);

/* Append the file's descriptors to m->qtensors. */
fmt_kind fmt_apsim_fill_qtensors(fmt_model *m, const apsim_file *f, fmt_err *e);

/* st->info from f (the first shard of a set) and the signature in force. */
fmt_kind fmt_apsim_fill_info(apsim_state *st, const apsim_file *f, const char *signature, fmt_err *e);

/* SHA-256(T || data) of a file, as lowercase hex. */
fmt_kind fmt_apsim_file_digest(fmt_model *m, const apsim_file *f, char hex[FMT_SHA256_HEX + 1], fmt_err *e);

/* The canonical table of §5 from entries (any order; sha256/signature skipped) and tensors
 * in file order with their data_offsets begins. */
fmt_kind fmt_apsim_build_table(const apsim_kv *kv, size_t n_kv, const fmt_tensor *const *tensors,
			   const uint64_t *begins, size_t n_t, char **out, size_t *len, fmt_err *e);

/* Signature check of §6 (key given): sig is the stored value or NULL. */
fmt_kind fmt_apsim_check_signature(const char *sig, const fmt_verify_opts *o, const char *const *shas,
			       size_t n, fmt_err *e);

/* Syntax checks. */
int fmt_apsim_hex64_ok(const char *s, size_t len);
int fmt_apsim_signature_syntax_ok(const char *s, size_t len);
/* A syntactically valid signature value's kind: "hmac-sha256" or "ed25519" (static). */
const char *fmt_apsim_signature_kind(const char *sig);
/* A syntactically valid signature value's kind ("hmac-sha256", "ed25519") and key id. */
void fmt_apsim_signature_parts(const char *sig, const char **kind, size_t *kind_len, const char **id,
			       size_t *id_len);
/* 1 if keys can sign (an HMAC key or an Ed25519 secret key). */
int fmt_apsim_keys_sign(const fmt_keyset *keys);
#define APSIM_ED25519_B64 88        /* Base64 of a 64-byte signature, padded */
/* Nesting depth of JSON text (brackets outside strings) above the limit: 1. */
int fmt_apsim_json_too_deep(const char *s, size_t n, int limit);

/* Every scale of every compressed tensor of m must be finite (InvalidFormat otherwise). */
fmt_kind fmt_apsim_check_scales(const fmt_model *m, fmt_err *e);

/* Describe helpers. */
json_t *fmt_apsim_describe_common(const apsim_state *st);

/* Single-file header: {"__metadata__":{kv sorted},tensors in the given order with offsets}. */
fmt_kind fmt_apsim_header_json(const apsim_kv *kv, size_t n_kv, const fmt_tensor *const *tensors,
			   const uint64_t *begins, size_t n_t, fmt_sb *out, fmt_err *e);

#endif
