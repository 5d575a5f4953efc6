/* The one memory budget for trees built from a file's bytes: jansson's json_t, msgpack-c's
 * objects and what is made of them cost tens of bytes per value where the file spends one or
 * two, so a small file could otherwise take gigabytes before any check runs.
 *
 * The rule (fmtkit(7), SAFETY): a document of n bytes whose tree costs `cost` bytes per value may
 * hold at most (FMT_TREE_BASE_BYTES + FMT_TREE_BYTES_PER_BYTE x n) / cost values. The values are
 * counted in the raw bytes, without allocating, before the tree is built. The tree so stays within
 * half of the project's memory rule, 64 MiB + 16 x the file's size (tests/cli/hardening.bats); the
 * other half is for the file's own bytes and the rest of the work. */
#ifndef FMT_TREE_BUDGET_H
#define FMT_TREE_BUDGET_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fmt/err.h"

#define FMT_TREE_BASE_BYTES ((uint64_t)32 << 20)
#define FMT_TREE_BYTES_PER_BYTE 8

/* Bytes per counted value (measured with glibc malloc, with room to spare): a jansson tree
 * (about 45 per array item); a jansson tree whose values are then copied into fmt_values (about
 * 120, APR metadata); MessagePack unpacked by msgpack-c and then made a jansson tree (about 85,
 * .ald cards and APR v1 metadata). */
#define FMT_TREE_COST_JSON 64u
/* ...and a container counts as more than one value: an empty jansson object takes about 230
 * bytes (its hash table), an empty array about 130. */
#define FMT_TREE_OBJECT_VALUES 4u
#define FMT_TREE_ARRAY_VALUES 2u
#define FMT_TREE_COST_JSON_TYPED 128u
#define FMT_TREE_COST_MSGPACK 128u

/* The most values a document of n bytes may hold at `cost` bytes each. */
uint64_t fmt_tree_max_values(size_t n, unsigned cost);

/* FMT_OK, or InvalidFormat "WHAT holds more than MAX values, the most N bytes may (fmtkit(7),
 * SAFETY)" when values is above fmt_tree_max_values(n, cost). */
fmt_kind fmt_tree_check(const char *what, uint64_t values, size_t n, unsigned cost, fmt_err *e);

/* An upper bound on the values (object keys included) of the JSON text s[0..n), well formed or
 * not: one, plus one for each ',' and ':' outside strings, FMT_TREE_OBJECT_VALUES for each '{'
 * and FMT_TREE_ARRAY_VALUES for each '['. No allocation. */
uint64_t fmt_json_values(const char *s, size_t n);

/* fmt_tree_check of s[0..n) as JSON text, before json_loadb. */
fmt_kind fmt_json_budget(const char *what, const char *s, size_t n, unsigned cost, fmt_err *e);

/* Whether json_loadb failed because memory ran out (not a syntax error): jansson says
 * json_error_out_of_memory, or leaves the text empty when an append or insert failed, or (a
 * string it could not copy, which it reports as a syntax error) one of its allocations failed
 * since fmt_json_track_memory (fmt/out.h). */
int fmt_json_nomem(const json_error_t *je);

/* json_loadb, except when one of jansson's allocations failed during the parse (tracked, see
 * fmt_json_track_memory): jansson's lexer drops the bytes it cannot store, so that a parse can
 * succeed with a string short of a byte, or fail as a syntax error; then NULL, errno ENOMEM, and
 * je's text empty (fmt_json_nomem says so). je may be NULL. */
json_t *fmt_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *je);

/* IO "out of memory reading WHAT" (an allocation failure is never reported as a malformed file). */
fmt_kind fmt_fail_nomem(fmt_err *e, const char *what);

#endif
