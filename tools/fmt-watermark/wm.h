/* fmt-watermark: buyer watermarks in model tensors (fmtkit-ss/2 and /1, man/fmtkit-watermark.7) and
 * dataset float columns (fmtkit-wm/1, specs/watermark.md). main.c parses; embed.c marks through
 * the conversion pipeline (fmt/pipeline.h); scan.c reads votes, fmtkit-ss sums, lattice counts
 * and entropy statistics; report.c prints and signs. */
#ifndef WM_H
#define WM_H

#include <pthread.h>
#include <stdio.h>
#include "fmt/cli.h"
#include "fmt/crypto.h"
#include "fmt/encrypt.h"
#include "fmt/model.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "fmt/watermark.h"
#include "fmt/watermark_ss.h"

#define TOOL "fmt-watermark"

/* Where the reports' JSON records go: stdout, or nowhere with -q (fmt_cli_records). */
extern FILE *wm_records;
#define WM_MAX_SELECT 256

typedef struct wm_opts {
	fmt_common_opts common;
	const char *key_file;          /* --key */
	const char *buyer;             /* --buyer */
	double density;                /* --density */
	int strength;                  /* --strength-bits */
	const char *columns[WM_MAX_SELECT]; /* --columns (comma lists, repeatable) */
	size_t n_columns;
	const char *tensors[WM_MAX_SELECT]; /* --tensors GLOB */
	size_t n_tensors;
	const char *registry;          /* --registry FILE */
	const char *sign_key;          /* --sign-key SECKEY */
	const char *passphrase_file, *passphrase_env;
	const char *evidence;          /* -o EVIDENCE.json */
	int scheme;                    /* --scheme: WM_SCHEME_* */
	double ss_strength;            /* --strength (fmtkit-ss) */
	int qim_params;                /* --density or --strength-bits given */
	const fmt_ss_params *ss;       /* embed with fmtkit-ss/2 or /1: its key, code word, strength */
	const uint8_t *ss_key;         /* extract, prove: the fmtkit-ss/1 stream key */
	const uint8_t *ss2_key;        /* extract, prove: the fmtkit-ss/2 stream key */
	const char *to_name;           /* embed --to FORMAT */
	const char *compression;       /* embed -c CODEC, as given */
	int dry_run;                   /* embed --dry-run */
	const char *schema;            /* embed --schema FILE.json */
	const char *card;              /* embed: --card FILE, an .ald OUT's card */
	int allow_expired;             /* --allow-expired: read an .ald whose licence expired */
	fmt_decrypt_opts decrypt;      /* --password-file, --password-env, --identity */
	struct fmt_decrypt_keys *dk;   /* extract, prove, detect, entropy: what they loaded (main) */
	fmt_keyset *keys;
	/* embed: OUT's format (exactly one set) and its compression (wm_embed_target) */
	const fmt_driver *to;
	const fmt_table_driver *table_to;
	fmt_codec codec;
	int codec_level;
	fmt_drvopt_sets drvopts;       /* a dataset OUT's -c and --schema, as its drivers parsed them */
	int force;
	int threads;
	const char *input;             /* what a failure record names (the subcommand's file) */
	FILE *records;                 /* where a failure record goes with -j: stdout, or NULL when
					* stdout carries embed's output */
} wm_opts;

/* --scheme: auto (embed: fmtkit-ss/2 for models, fmtkit-wm/1 for datasets; extract and prove
 * on a model: all three, read in one pass), ss (embed: fmtkit-ss/2; extract and prove: fmtkit-ss/2
 * and fmtkit-ss/1), ss1 (fmtkit-ss/1 only), qim (fmtkit-wm/1), alimentar. */
enum { WM_SCHEME_AUTO, WM_SCHEME_SS, WM_SCHEME_QIM, WM_SCHEME_ALIMENTAR, WM_SCHEME_SS1 };

/* What is known about one tensor or column. */
typedef struct wm_column {
	char *name;
	int is_tensor;
	char dtype[16];
	int width;                     /* 4, 8; 0: not a float32/float64 */
	int integer;                   /* a dataset integer column (entropy only) */
	fmt_wm_dist dist;              /* embed */
	fmt_wm_votes votes;            /* extract, prove */
	fmt_wm_lattice lattice;        /* detect */
	fmt_wm_entropy *entropy;       /* entropy (allocated) */
	fmt_wm_alim_col *alim;         /* --scheme alimentar (allocated) */
	fmt_ss_acc *ss;                /* fmtkit-ss/1 sums (allocated), of the ranges merged so far */
	fmt_ss_acc **ss_pending;       /* ranges read but not merged yet (merged in range order,
					* so the sums do not depend on -T) */
	fmt_ss2_acc *ss2;              /* fmtkit-ss/2 evidence (allocated), merged like ss */
	fmt_ss2_acc **ss2_pending;
	size_t ss_first, ss_next, ss_ranges; /* the column's first range, next to merge, count */
	uint64_t nelems;
	/* embed: dist of each piece of a tensor (values [first, first + n)), added in tensor order
	 * at the end (embed.c says why) */
	struct wm_piece { uint64_t first, n; fmt_wm_dist d; } *pieces;
	size_t n_pieces, cap_pieces;
	pthread_mutex_t lock;
} wm_column;

typedef struct wm_result {
	wm_column **cols;
	size_t n_cols;
	char **left_alone;             /* F16/BF16 tensors (embed lists them) */
	size_t n_left;
	int is_table;
	int has_ss, has_qim;           /* extract, prove: which schemes' statistics were gathered */
	int has_ss2;
	const char *format;            /* driver name of the input */
	const char *out_format;        /* embed: driver name of the output */
	char sha256[FMT_SHA256_HEX + 1]; /* prove: the file's SHA-256 */
	fmt_json_rec embed_rec;        /* embed -j: its record, made before OUT is in place */
	int summed;                    /* embed: each column's pieces summed into its dist */
} wm_result;

void wm_result_free(wm_result *r);

/* keyfile.c */
fmt_kind wm_key_load(const char *path, fmt_wm_key **key, uint8_t raw[FMT_WM_KEY_LEN], fmt_err *e);

/* embed.c: OUT's format from --to or OUT's name, and -c checked against it (UsageError). */
fmt_kind wm_embed_target(wm_opts *o, const char *output, fmt_err *e);
/* Mark IN into OUT (with --dry-run: read and mark IN, write nothing). With -j (not -q, not
 * --dry-run) r->embed_rec is the record, made before OUT is put in place (out of memory making
 * it leaves no OUT). */
fmt_kind wm_embed(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		  const uint8_t hash[32], wm_result *r, fmt_err *e);

/* scan.c: one pass (two for entropy) over FILE's selected values. */
typedef enum { WM_SCAN_VOTES, WM_SCAN_LATTICE, WM_SCAN_ENTROPY, WM_SCAN_ALIMENTAR } wm_scan_kind;
fmt_kind wm_scan(const char *path, wm_scan_kind kind, const wm_opts *o, const fmt_wm_params *prm,
		 wm_result *r, fmt_err *e);

/* Selection by --tensors / --columns. */
int wm_tensor_wanted(const wm_opts *o, const char *name);
int wm_column_wanted(const wm_opts *o, const char *name);
/* The width of a model dtype that carries marks (4 for F32, 8 for F64) or 0. */
int wm_dtype_width(fmt_dtype t);
int wm_ctype_width(fmt_ctype t);
fmt_kind wm_add_column(wm_result *r, const char *name, int is_tensor, const char *dtype, int width,
		       fmt_err *e);

/* registry.c; and the time now as 2026-12-01T12:00:00Z */
void wm_utc_now(char out[32]);
/* embed --registry: opened, locked and its line composed before OUT is written; appended
 * once OUT is in place. */
typedef struct wm_registry {
	const char *path;
	int fd;                        /* -1 when not open */
	int created;                   /* this embed made the file: removed unless a line was added */
	off_t size;                    /* before the line */
	char *line;
} wm_registry;
/* A regular file only (not a symbolic link, directory, FIFO or device), created 0600 when
 * missing, locked (another embed holding it: IoError, no wait), room for the line reserved. */
fmt_kind wm_registry_open(wm_registry *r, const char *path, const char *buyer, const uint8_t hash[32],
			  uint64_t payload, const char *output, fmt_err *e);
/* Append the line and fsync; on failure the registry is cut back to what it was. */
fmt_kind wm_registry_commit(wm_registry *r, fmt_err *e);
/* Unlock and close (removing a registry this embed created and did not write to). */
void wm_registry_close(wm_registry *r);
/* The buyer whose hash starts with the 48 bits of payload, or NULL (malloc'd). */
fmt_kind wm_registry_lookup(const char *path, uint64_t payload, char **buyer, fmt_err *e);

/* report.c: embed's JSON record (NULL out of memory), its columns' pieces summed. */
json_t *wm_embed_json(const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		      const uint8_t hash[32], const wm_result *r);
/* Each returns the exit status. embed's JSON record is r->embed_rec when made (wm_embed). */
int wm_report_embed(FILE *f, const char *input, const char *output, const wm_opts *o, const fmt_wm_params *prm,
		    const uint8_t hash[32], wm_result *r);
int wm_report_extract(const char *path, const wm_opts *o, const wm_result *r);
int wm_report_alimentar(const char *path, const wm_opts *o, const uint8_t raw[32], const wm_result *r);
int wm_report_prove(const char *path, const wm_opts *o, const fmt_wm_params *prm, const uint8_t hash[32],
		    const wm_result *r);
int wm_report_detect(const char *path, const wm_opts *o, const wm_result *r);
int wm_report_entropy(const char *path, const wm_opts *o, const wm_result *r);
int wm_fail(const wm_opts *o, const char *file, const fmt_err *e);

#endif
