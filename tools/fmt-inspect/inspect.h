/* fmt-inspect's reports: each prints one opened model as text or as one JSON line. */
#ifndef INSPECT_H
#define INSPECT_H

#include <stdio.h>
#include "fmt/model.h"
#include "fmt/table.h"

#define TOOL "fmt-inspect"

enum inspect_section {
	SECTION_SUMMARY = 1u << 0,
	SECTION_METADATA = 1u << 1,
	SECTION_TENSORS = 1u << 2,
	SECTION_TREE = 1u << 3,
	SECTION_ALL = SECTION_SUMMARY | SECTION_METADATA | SECTION_TENSORS
};

typedef struct inspect_opts {
	unsigned sections;
	int json;
	int full;              /* do not abbreviate long metadata arrays */
	const char *tensor;    /* --tensor NAME */
	int stats;             /* --stats */
	int quality;           /* --quality (datasets) */
	int schema;            /* --schema (datasets) */
	uint64_t head;         /* --head N (datasets) */
	int head_given;
	int model_sections;    /* --tensors, --metadata or --tree was given */
	int allow_expired;     /* --allow-expired (datasets) */
	struct fmt_decrypt_keys *dk; /* --password-file, --password-env, --identity (loaded) */
	struct fmt_keyset *keys;
} inspect_opts;

#define INSPECT_ARRAY_ITEMS 16

/* Print the report for m; returns 0, or an error kind with e filled (tensor not found, data
 * unreadable for --stats, output failure). */
fmt_kind inspect_report(FILE *out, const fmt_model *m, const inspect_opts *o, fmt_err *e);

/* Print the report for a dataset (facts, schema; --schema, --head, --stats). */
fmt_kind inspect_dataset(FILE *out, fmt_table *t, const inspect_opts *o, fmt_err *e);

/* Print the report for the bundle at path (fmt-shard pack), read from stream when not NULL
 * (standard input, its first bytes read: fmt_bundle_verify_stream); checked as fmt-verify
 * checks it (a failure is returned, nothing printed). out NULL: check only (-q). */
fmt_kind inspect_bundle(FILE *out, const char *path, fmt_source *stream, const inspect_opts *o, fmt_err *e);

/* The parameter tree from dotted tensor names. */
void tree_print_text(FILE *out, const fmt_model *m);
json_t *tree_json(const fmt_model *m);

#endif
