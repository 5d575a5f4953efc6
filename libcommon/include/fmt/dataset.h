/* Options of dataset conversions (fmt-convert's dataset flags), the .ald container's facts,
 * and the dataset card (specs/ald.md, decisions table). */
#ifndef FMT_DATASET_H
#define FMT_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fmt/err.h"
#include "fmt/table.h"

/* .ald payload compression ids (specs/ald.md §2.3). */
enum { FMT_ALD_NONE = 0, FMT_ALD_ZSTD = 1, FMT_ALD_ZSTD_MAX = 2, FMT_ALD_LZ4 = 3 };

/* .ald flag bits (§2.2). */
enum { FMT_ALD_ENCRYPTED = 0x01, FMT_ALD_SIGNED = 0x02, FMT_ALD_STREAMING = 0x04,
       FMT_ALD_LICENSED = 0x08, FMT_ALD_TRUENO_NATIVE = 0x10 };

typedef struct fmt_dataset_opts {
	/* reading text (CSV) */
	char delimiter;            /* 0: ',' */
	int no_header;             /* name columns column_1, column_2, ... */
	const char *null_value;    /* a field equal to this is null (empty fields always are) */
	const json_t *schema;      /* {"column": "type"}: types to use instead of inferring them */
	uint64_t batch_rows;       /* rows per batch produced by text readers; 0: 65536 */
	/* writing .ald */
	int compression;           /* FMT_ALD_*; default zstd */
	uint16_t dataset_type;     /* 0: tabular */
	const json_t *card;        /* the dataset card (JSON object), or NULL */
	uint64_t chunk_rows;       /* > 0: STREAMING with chunks of this many rows */
	int trueno_native;         /* TRUENO_NATIVE: numeric columns as aligned raw arrays */
	int compat_alimentar;      /* upstream's metadata array and CRC variant */
} fmt_dataset_opts;

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
/* Decode a map or upstream's 7/8-element array into a JSON object; *form = "map" or "array". */
fmt_kind fmt_card_decode(const uint8_t *data, size_t len, json_t **card, const char **form, fmt_err *e);
/* Check a card given by the user (--card FILE): known keys, right kinds, no sha256. */
fmt_kind fmt_card_check(const json_t *card, fmt_err *e);

#endif
