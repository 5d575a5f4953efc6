/* fmt-shard: split and merge shard sets, pack and unpack bundles. */
#ifndef SHARD_H
#define SHARD_H

#include <stdint.h>
#include <stdio.h>
#include "fmt/cli.h"
#include "fmt/crypto.h"
#include "fmt/err.h"
#include "fmt/model.h"

#define TOOL "fmt-shard"

typedef struct shard_opts {
	uint64_t max_size;           /* --max-size, bytes (0: not given) */
	uint64_t max_tensors;        /* --max-tensors (0: not given) */
	int no_tensor_first_split;   /* GGUF: shard 1 holds only metadata */
	int no_verify;               /* skip the digest check of an .apsim input */
	int dry_run, force;
	const char *output;          /* -o: PREFIX (split), OUTPUT (merge, pack) */
	const char *dir;             /* -C DIR (unpack) */
	fmt_key_opts keys;           /* unpack: verify the set's signature with this key */
	fmt_common_opts common;
} shard_opts;

/* Which writer family a model belongs to. */
typedef enum shard_family { FAMILY_NONE, FAMILY_SAFETENSORS, FAMILY_APSIM, FAMILY_GGUF } shard_family;
shard_family shard_family_of(const fmt_model *m);
const char *shard_family_name(shard_family f);

/* One planned shard: count tensors, their indices in m->tensors in members. */
typedef struct shard_group {
	size_t *members;             /* points into the plan's shared array */
	size_t count;
	uint64_t bytes;              /* tensor data bytes */
	char *path;
} shard_group;

typedef struct shard_plan {
	shard_family family;
	shard_group *groups;
	size_t n_groups;
	size_t *members;             /* every tensor index once, shard by shard */
	char *index;                 /* index file (safetensors, apsim), or NULL */
} shard_plan;

/* The shards the family's writer will produce for these limits (0 = default / none). */
fmt_kind plan_split(const fmt_model *m, shard_family f, const char *prefix, uint64_t max_bytes,
		    uint64_t max_tensors, int no_tensor_first_split, shard_plan *p, fmt_err *e);
void plan_free(shard_plan *p);
/* PREFIX from the input path: without its extension(s) and any -0000i-of-0000N suffix. */
char *default_prefix(const char *input);

/* The subcommands; each returns the error kind with e filled on failure. */
fmt_kind cmd_split(const char *input, const shard_opts *o, fmt_err *e);
fmt_kind cmd_merge(const char *input, const shard_opts *o, fmt_err *e);
fmt_kind cmd_pack(const char *input, const shard_opts *o, fmt_err *e);
fmt_kind cmd_unpack(const char *input, const shard_opts *o, fmt_err *e);

#endif
