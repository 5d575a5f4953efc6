/* Options of reading datasets, the .ald container's facts,
 * and the dataset card (specs/ald.md, decisions table). */
#ifndef FMT_DATASET_H
#define FMT_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fmt/crypto.h"
#include "fmt/err.h"
#include "fmt/table.h"

/* .ald payload compression ids (specs/ald.md §2.3). */
enum { FMT_ALD_NONE = 0, FMT_ALD_ZSTD = 1, FMT_ALD_ZSTD_MAX = 2, FMT_ALD_LZ4 = 3 };

/* A licence to add (specs/ald.md §7 and the decisions table): the fixed fields and the terms,
 * signed by the seller (fmt_keyset.ed25519_secret) as seller_sig. */
typedef struct fmt_license_req {
	const char *licensee;      /* its SHA-256 is stored, not the text */
	uint64_t expires_at;       /* Unix seconds; 0 = never */
	uint16_t seats;            /* 0 = unlimited */
	const char *terms_json;    /* a JSON object as compact text ("{}" when none) */
	uint64_t now;              /* issued_at */
} fmt_license_req;

/* License flag bits (§7). */
enum { FMT_LIC_SEATS = 0x01, FMT_LIC_EXPIRATION = 0x02, FMT_LIC_QUERIES = 0x04 };

/* Add or replace the licence of the dataset at path in place, atomically, through its driver's
 * license_in_place; a format without licences is UsageError. */
fmt_kind fmt_license_any_in_place(const char *path, const fmt_license_req *l, const fmt_keyset *keys,
				  fmt_err *e);

/* "2027-01-01" (midnight UTC) or "2027-01-01T12:00:00Z" to Unix seconds; -1 when malformed. */
int fmt_parse_utc_date(const char *s, uint64_t *out);
/* Unix seconds as "2027-01-01T00:00:00Z" (21 bytes with the NUL). */
void fmt_format_utc(uint64_t t, char out[32]);

/* .ald flag bits (§2.2). */
enum { FMT_ALD_ENCRYPTED = 0x01, FMT_ALD_SIGNED = 0x02, FMT_ALD_STREAMING = 0x04,
       FMT_ALD_LICENSED = 0x08, FMT_ALD_TRUENO_NATIVE = 0x10 };

/* The options of reading a dataset: the values of the options table drivers declare
 * (fmt/drvopt.h: --delimiter, --schema, ...; each driver takes its own), and the batch size. */
typedef struct fmt_dataset_opts {
	const fmt_drvopt_sets *options; /* NULL: every driver's defaults */
	uint64_t batch_rows;       /* rows per batch produced by text readers; 0: 65536 */
	int threads;               /* -T: threads a reader may parse on; 0 or 1: the calling one */
	uint64_t sample_bytes;     /* not 0: the caller reads the table once, start to end, and starts
				    * again without this when a read fails while fmt_table.types_sampled
				    * is set: a reader that infers types may infer them from the rows in
				    * the first sample_bytes bytes and check them as it reads the rest */
} fmt_dataset_opts;

/* The sample a conversion lets a reader type the columns from: about 20,000 rows of 100 bytes,
 * DuckDB's sample. */
#define FMT_TYPE_SAMPLE_BYTES (2u << 20)

/* Dataset type names ("image_classification") and ids (§2.1). */
const char *fmt_ald_type_name(uint16_t id);    /* NULL when unknown */
int fmt_ald_type_by_name(const char *name);    /* -1 when unknown */
/* "tabular, time_series, ...": every name, for help and messages. */
void fmt_ald_type_names(char *buf, size_t n);

/* "none", "zstd", "zstd-max", "lz4" <-> ids; -1 when unknown. */
int fmt_ald_compression_by_name(const char *name);
const char *fmt_ald_compression_name(int id);

/* CRC-32 variants: the standard one (zlib) and upstream alimentar 0.2's (two table entries
 * differ, specs/ald.md §8). */
uint32_t fmt_crc32_ieee(uint32_t crc, const void *data, size_t n);
uint32_t fmt_crc32_alimentar(uint32_t crc, const void *data, size_t n);

/* The dataset card. Encode a JSON object (keys of the decisions table; sha256_hex filled in,
 * NULL to leave it out) as a MessagePack map, or as upstream's positional array (compat). A
 * key or value of the wrong kind is UsageError naming it. */
fmt_kind fmt_card_encode(const json_t *card, const char *sha256_hex, int compat, uint8_t **out,
			 size_t *len, fmt_err *e);
/* The keys of card that upstream's positional array has no place for, which the compat
 * encoding leaves out (sources, columns, compliance, query_*, keys the card table does not
 * know...; not sha256, the writer's, nor a key whose value is null or an empty array or
 * object: nothing of it is lost), quoted, into buf ("\"sources\", \"columns\" and
 * \"compliance\"", the first FMT_CARD_DROPPED_NAMED and "N more" past them; cut to size);
 * returns how many there are. */
#define FMT_CARD_DROPPED_NAMED 6
size_t fmt_card_array_dropped(const json_t *card, char *buf, size_t size);
/* Decode a map or upstream's 7/8-element array into a JSON object; *form = "map" or "array".
 * A NaN or infinite float is the string "nan", "inf" or "-inf" there (fmtkit(7)); *nonfinite is
 * then (to free) how many the card has and the JSON pointers of the first
 * FMT_CARD_NONFINITE_MAX, as JSON: {"count":2,"at":["/compliance/score","/tags/1"]}; else NULL. */
#define FMT_CARD_NONFINITE_MAX 32
fmt_kind fmt_card_decode(const uint8_t *data, size_t len, json_t **card, const char **form, char **nonfinite,
			 fmt_err *e);
/* The schema metadata key that carries an .ald card (JSON, without its sha256) through formats
 * with key/value metadata (Parquet): the .ald reader sets it, the .ald writer takes it when no
 * --card is given. */
#define FMT_ALD_CARD_KEY "ald:card"
/* The dataset type of an .ald that is not tabular, by name ("text_corpus"), carried the same way:
 * the .ald writer takes it when no --type is given. */
#define FMT_ALD_TYPE_KEY "ald:dataset_type"
/* Set beside it when the card holds a NaN or infinite float, which its JSON has only as a
 * string: fmt_card_decode's *nonfinite (where they are, so that a string "nan" of the card is
 * told from a float). The .ald writer then refuses to take the card (a float would come back a
 * string), naming them. */
#define FMT_ALD_CARD_NONFINITE_KEY "ald:card_nonfinite"
/* Check a card given by the user (--card FILE): known keys, right kinds, no sha256. */
fmt_kind fmt_card_check(const json_t *card, fmt_err *e);
/* The same for the card an input carries (FMT_ALD_CARD_KEY) into a new .ald: a wrong one is the
 * input's fault, InvalidFormat "the input's card: ...". A key the card table does not know is
 * kept as it is (upstream's reader ignores such keys), and so is an unknown key of a "sources"
 * or "columns" item; the keys it knows must have their kinds. */
fmt_kind fmt_card_check_carried(const json_t *card, fmt_err *e);
/* The same for the card of a file as read (fmt-verify; fmt-inspect warns): InvalidFormat
 * "the card: ...", its sha256 allowed. */
fmt_kind fmt_card_check_stored(const json_t *card, fmt_err *e);

#endif
