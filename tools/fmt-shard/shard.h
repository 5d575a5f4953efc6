/* fmt-shard: split and merge shard sets, pack and unpack bundles. */
#ifndef SHARD_H
#define SHARD_H

#include <stdint.h>
#include <stdio.h>
#include "fmt/cli.h"
#include "fmt/crypto.h"
#include "fmt/drvopt.h"
#include "fmt/minisign.h"
#include "fmt/err.h"
#include "fmt/model.h"
#include "fmt/registry.h"
#include "fmt/shardset.h"
#include "fmt/table.h"

#define TOOL "fmt-shard"

typedef struct shard_opts {
	uint64_t max_size;           /* --max-size, bytes (0: not given) */
	uint64_t max_tensors;        /* --max-tensors (0: not given) */
	int no_tensor_first_split;   /* GGUF: shard 1 holds only metadata */
	int no_verify;               /* skip the digest check of an .apsim input */
	int dry_run, force;
	int list;                    /* split --list: print the output names only */
	const char *output;          /* -o: PREFIX (split), OUTPUT (merge, pack) */
	const char *dir;             /* -C DIR (unpack) */
	fmt_key_opts keys;           /* unpack: verify the set's signature with this key */
	fmt_trust_opts trust;        /* unpack: ... or with these Ed25519 keys (-p, -P, --trusted-keys) */
	fmt_common_opts common;
	/* datasets */
	double fractions[16];        /* split --fractions, n_fractions of them */
	size_t n_fractions;
	uint64_t seed;               /* split --seed */
	int seed_given;
	const char *stratify;        /* split --stratify COLUMN */
	uint64_t rows_per_shard;     /* split --rows N (0: not given) */
	int allow_expired;           /* --allow-expired: read an .ald whose licence expired */
	const char *writer_option;   /* the first of --card FILE and --compression CODEC given, for the
				      * writer; datasets only */
	const char *compression;     /* -c CODEC: parsed into drvopts once the output's format is known */
	fmt_drvopt_sets *drvopts;    /* the drivers' options (--card parsed and loaded) */
	const char **inputs;         /* merge/concat: every operand */
	size_t n_inputs;
	const struct fmt_cli *cli;   /* the files the options name (unpack: what it must not replace) */
} shard_opts;

/* The driver that writes sets of m's format (m's own driver or its file driver); a usage
 * error naming the format when it has none. */
fmt_kind set_writer_of(const fmt_model *m, const fmt_driver **w, fmt_err *e);
/* The limits for o (the driver's default size when none is given); UsageError for a limit the
 * driver does not honour. */
fmt_kind split_limits(const fmt_driver *w, const shard_opts *o, fmt_shard_limits *l, fmt_err *e);
/* For --help, from the drivers: "safetensors 5GB, gguf 128 tensors, ..." (each format with
 * shard sets and the limit split uses when none is given), and " (GGUF)" (the formats that can
 * keep the first shard for metadata). */
void split_defaults_text(char *buf, size_t n);
void empty_first_text(char *buf, size_t n);
/* PREFIX from the input path: without its format's extension (any registered one, else the
 * last) and any -0000i-of-0000N suffix. */
char *default_prefix(const char *input);

/* The subcommands; each returns the error kind with e filled on failure. */
fmt_kind cmd_split(const char *input, const shard_opts *o, fmt_err *e);
fmt_kind cmd_merge(const char *input, const shard_opts *o, fmt_err *e);
fmt_kind cmd_pack(const char *input, const shard_opts *o, fmt_err *e);
fmt_kind cmd_unpack(const char *input, const shard_opts *o, fmt_err *e);

/* Datasets (tables.c). The input opened as whatever it is (t open when *is_table). */
fmt_kind open_table_input(const char *input, fmt_table *t, int *is_table, fmt_err *e);
/* split of an open table t (freed by the caller). */
fmt_kind split_table(const char *input, fmt_table *t, const shard_opts *o, fmt_err *e);
/* merge/concat of o->inputs, the first (input) open as t. */
fmt_kind merge_tables(const char *input, fmt_table *t, const shard_opts *o, fmt_err *e);

#endif
