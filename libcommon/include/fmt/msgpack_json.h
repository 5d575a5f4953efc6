/* MessagePack values (msgpack-c objects) as jansson values: the one converter of the formats
 * that keep metadata as MessagePack and show it as JSON (.ald cards, APR v1 metadata), and the
 * one walk over the raw bytes that comes before msgpack-c. Where they differ, opts says which
 * rule holds, so that each keeps its output and messages byte for byte. */
#ifndef FMT_MSGPACK_JSON_H
#define FMT_MSGPACK_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <msgpack.h>
#include "fmt/err.h"

enum {
	/* A float NaN or ±Inf as "nan", "inf", "-inf" (fmt_json_double), not a failure (jansson
	 * holds no NaN). */
	FMT_MPJ_NONFINITE_TEXT = 1,
	/* A positive integer over INT64_MAX as a JSON real, not as its decimal string
	 * (fmt_json_u64). */
	FMT_MPJ_BIG_AS_REAL = 2,
	/* Strings and binaries as their bytes are, not with invalid UTF-8 as U+FFFD
	 * (fmt_json_string). */
	FMT_MPJ_RAW_STRINGS = 4,
	/* A map key of 256 bytes or more, or holding a NUL, fails; otherwise a key is cut at its
	 * first NUL. */
	FMT_MPJ_STRICT_KEYS = 8,
};

typedef struct fmt_mp_json_opts {
	int max_depth;       /* containers nested deeper than this fail */
	unsigned flags;      /* FMT_MPJ_* */
} fmt_mp_json_opts;

/* The deepest nesting fmt_mp_check walks (its max_depth at most this). */
#define FMT_MP_CHECK_DEPTH_MAX 32

/* A format's rules for fmt_mp_check. */
typedef struct fmt_mp_check_opts {
	const char *what;    /* the messages' start: "v1 metadata" */
	int max_depth;       /* a container with items at this depth fails: values below it nest deeper */
	int whole;           /* the value must end at p + n (else bytes may follow) */
} fmt_mp_check_opts;

/* Every MessagePack array, map, string, binary and extension of the value at p[0..n) declares
 * no more than the bytes left can hold (an entry takes at least one byte), before msgpack-c
 * sees it: msgpack-c allocates by the declared counts before it reads the items. FMT_OK with
 * *values, the values counted for the tree budget (fmt/tree_budget.h: maps and arrays as
 * FMT_TREE_OBJECT_VALUES and FMT_TREE_ARRAY_VALUES), or InvalidFormat naming the first claim
 * that does not fit. */
fmt_kind fmt_mp_check(const uint8_t *p, size_t n, const fmt_mp_check_opts *o, uint64_t *values, fmt_err *e);

/* o as a new JSON value, or NULL: a map key that is not a string, nesting past max_depth, a
 * value the flags refuse (or an extension), or memory ran out (errno ENOMEM then: set errno
 * to 0 before the call to tell). */
json_t *fmt_mp_to_json(const msgpack_object *o, const fmt_mp_json_opts *opts);

#endif
