/* Shared between the GGUF driver's files (gguf_read.c, gguf_write.c, gguf_split.c,
 * gguf_preset.c); not a public interface. */
#ifndef FMT_GGUF_INTERNAL_H
#define FMT_GGUF_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include "fmt/gguf.h"

/* --tensor-type's PATTERN (llama-quantize's ECMAScript regular expression, lower-cased) as a
 * POSIX extended expression for regcomp, into out[0..cap) (gguf_pattern.c): 0, or -1 with *why
 * saying what has no POSIX form. */
int fmt_gguf_pattern_to_ere(const char *in, char *out, size_t cap, const char **why);

/* Bytes of one value of a scalar type, 0 for STRING/ARRAY/unknown. */
size_t fmt_gguf_scalar_size(uint32_t type);

/* What parsing one file found. */
typedef struct gguf_file_info {
	uint32_t version;
	uint32_t alignment;
	uint64_t data_start;
	uint64_t infos_start, infos_end; /* where the tensor infos are */
} gguf_file_info;

/* Parse the GGUF file tensor_dst->sources[src]: metadata is appended to meta_dst, tensors to
 * tensor_dst (source = src, absolute offsets). Reads only the header region. */
fmt_kind fmt_gguf_parse_file(fmt_model *meta_dst, fmt_model *tensor_dst, int src, gguf_file_info *info,
			 fmt_err *e);

/* After the first file of m is parsed: when its name and split.* keys say it is shard 1 of a
 * set, open and check the other shards and merge them into m. */
fmt_kind fmt_gguf_open_split_set(fmt_model *m, fmt_gguf_info *st, fmt_err *e);

/* Write header, metadata (meta[0..n_meta)), infos and data of tensors[0..n_tensors) (whose
 * bytes come from src) to k. align_request 0 = general.alignment or 32. */
fmt_kind fmt_gguf_write_file(const fmt_model *src, const fmt_meta *meta, size_t n_meta,
			 const fmt_tensor *tensors, size_t n_tensors, uint32_t align_request,
			 fmt_sink *k, fmt_err *e);

struct fmt_sb;
/* Check metadata as the writer does (keys, values, duplicates; general.alignment a UINT32
 * power of two) and say the alignment it asks for (32 without the key). */
fmt_kind fmt_gguf_check_meta(const fmt_meta *meta, size_t n_meta, uint32_t *align, fmt_err *e);
/* Append the key-value pairs meta[0..n_meta) as the writer writes them to mem. */
/* The bytes fmt_gguf_write_file would write for these keys and tensors (the header counted by a
 * pass that writes nothing, each tensor padded to the alignment). */
fmt_kind fmt_gguf_file_bytes(const fmt_meta *meta, size_t n_meta, const fmt_tensor *tensors, size_t n_tensors,
			     uint32_t align_request, uint64_t *bytes, fmt_err *e);
fmt_kind fmt_gguf_put_meta(struct fmt_sb *mem, const fmt_meta *meta, size_t n_meta, uint32_t align, fmt_err *e);

/* --prune-layers L0,L1,...'s parse (gguf_prune.c): FMT_DRVOPT_GIVEN, or -1 with e set. */
int fmt_gguf_parse_prune(fmt_gguf_quant_opts *o, const char *arg, fmt_err *e);
/* Which tensors of m --prune-layers leaves out (dropped[i] = 1) and the new names of those it
 * renumbers (names[i], malloc'd; NULL: the same name), visiting m->tensors[order[0..n)] in
 * llama.cpp's loader's order. */
fmt_kind fmt_gguf_prune_names(const fmt_model *m, const fmt_gguf_quant_opts *o, const size_t *order,
			      char **names, unsigned char *dropped, fmt_err *e);

/* <arch>.block_count set (u32, moved last) to the layers m's tensors number after
 * --prune-layers: the highest "blk.N." + 1 (llama-quantize's next free number). */
fmt_kind fmt_gguf_prune_block_count(fmt_model *m, fmt_err *e);
/* --keep-split (gguf_split.c): each tensor's input shard (from 1) into entries[i].shard;
 * UsageError when m is not a GGUF split set of 2 shards or more. */
fmt_kind fmt_gguf_keep_split(const fmt_model *m, fmt_mix_entry *entries, fmt_err *e);

/* The driver's edit_meta (gguf_edit.c). */
fmt_kind fmt_gguf_edit_meta(const fmt_model *m, const fmt_meta *meta, size_t n_meta, int *data_moved, fmt_err *e);

#endif
