/* Model metadata written as JSON text, for the formats that store it so (APR, .apsim): one
 * writer, with what differs between the formats given as its style. */
#ifndef FMT_META_JSON_H
#define FMT_META_JSON_H

#include "fmt/model.h"
#include "fmt/strbuf.h"

typedef enum fmt_real_spelling {
	/* serde_json's (ryu's) layout of the shortest text that reads back, F32 values as f32:
	 * 10000.0, 1.5, 0.00001, 1e-6, 1e16 */
	FMT_REAL_SERDE,
	/* printf's %.Pg with the fewest digits P that read back as the double, ".0" added when
	 * that looks like an integer: 3.0, 0.1, 1e-06 */
	FMT_REAL_PRINTF,
} fmt_real_spelling;

typedef struct fmt_meta_json_style {
	const char *readers;          /* who cannot hold integers above 2^63-1: "APR readers" */
	int max_levels;               /* arrays nested deeper than this are refused */
	int key_shown;                /* at most this many bytes of a key in a message */
	fmt_real_spelling reals;
} fmt_meta_json_style;

/* The value is a string holding JSON text (checked by the caller): put it as it is. */
#define FMT_META_JSON_RAW 1u

/* "key":value appended to b, after a comma unless *first (which it clears). UnsupportedVersion
 * for what JSON or the format's readers cannot hold: a key or string that is not valid UTF-8,
 * a string with a NUL byte, an unsigned integer above 2^63-1, NaN or an infinity, arrays
 * nested deeper than s->max_levels. */
fmt_kind fmt_meta_json_member(fmt_sb *b, int *first, const char *key, const fmt_value *v, unsigned flags,
			      const fmt_meta_json_style *s, fmt_err *e);

#endif
