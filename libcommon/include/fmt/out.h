/* Output: escaping of untrusted strings, JSON text and JSON Lines, human sizes. These write
 * to the stream they are given; the messages of CONVENTIONS.md are the CLI layer's
 * (fmt/report.h). */
#ifndef FMT_OUT_H
#define FMT_OUT_H

#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "fmt/err.h"

/* Write s (n bytes from a file) to f with control characters as \n, \t, \xHH and invalid UTF-8
 * bytes as \xHH, so that metadata cannot move the cursor or forge lines. */
void fmt_out_escaped(FILE *f, const char *s, size_t n);
/* s in double quotes, escaped as above and its own quotes as \": a value cannot end early and
 * pose as another ("a", b (str) = "c"). */
void fmt_out_quoted(FILE *f, const char *s, size_t n);

/* 1 if s[0..n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int fmt_utf8_valid(const char *s, size_t n);

/* A JSON string for untrusted bytes: valid UTF-8 as is, otherwise with invalid bytes replaced
 * by U+FFFD. Returns NULL on allocation failure. */
json_t *fmt_json_string(const char *s, size_t n);
/* s (n bytes) as the JSON string fmt_json_text(fmt_json_string(s, n)) writes, byte for byte,
 * without allocating (a message written when memory ran out): valid UTF-8 as it is, each
 * invalid byte as U+FFFD, control characters, DEL and the C1 controls escaped. */
void fmt_json_put_string(FILE *f, const char *s, size_t n);
/* obj[key] = value (its reference taken), key as fmt_json_string makes it: jansson refuses a key
 * (and json_string a value) of invalid UTF-8, returning -1 or NULL that a report's setters
 * dropped, so a name from a file went missing from the JSON. 0, or -1 out of memory. */
int fmt_json_set(json_t *obj, const char *key, json_t *value);

/* An unsigned 64-bit number: a JSON integer up to 2^63-1, above that a decimal string (JSON
 * readers and jansson hold integers as signed 64-bit or as doubles, which would lose it). */
json_t *fmt_json_u64(uint64_t v);
/* A floating-point number: a JSON real when finite, else the string "nan", "inf" or "-inf"
 * (JSON has no such numbers; fmtkit(7), OUTPUT). */
json_t *fmt_json_double(double v);

/* The failures of fmt_json_line and fmt_json_write (0 when none). */
#define FMT_JSON_WRITE_FAILED (-1) /* the write to f failed */
#define FMT_JSON_NO_MEMORY (-2)    /* nothing was written: out of memory making the text */
/* One compact JSON object and a newline (JSON Lines): made whole in memory first, then written,
 * so that a record is on f whole or not at all. 0 or one of the failures above; out of memory
 * also tells fmt_json_memory_failed (a caller that drops the result still exits 3). */
int fmt_json_line(FILE *f, json_t *obj);
/* Compact JSON (member order kept), with DEL and the C1 controls written as \u escapes so that
 * no control byte reaches a terminal: to f (whole or not at all, as fmt_json_line), or as a
 * malloc'd string (NULL when out of memory). */
int fmt_json_write(FILE *f, const json_t *j);
char *fmt_json_text(const json_t *j);
/* The error of such a failure r, for a record on standard output: IoError "out of memory", or
 * "cannot write to standard output". Returns FMT_IO. */
fmt_kind fmt_json_fail(int r, fmt_err *e);
/* obj (its reference taken; NULL: it could not be made) as fmt_json_line writes it: FMT_OK, or
 * the error of fmt_json_fail (NULL counts as out of memory). */
fmt_kind fmt_json_emit(FILE *f, json_t *obj, fmt_err *e);
/* A record about an output, made before that output is put in place and written after: out of
 * memory making it then leaves no output behind (CONVENTIONS.md, Safety). */
typedef struct fmt_json_rec {
	char *text;                  /* the line, newline included; NULL: none */
	size_t len;
} fmt_json_rec;
/* obj (its reference taken; NULL: it could not be made) as the line fmt_json_line writes, into
 * *r: FMT_OK, or IoError "out of memory" (nothing in *r) when it could not be made whole: obj
 * NULL, its text not made, or an allocation of jansson's failed since `since`
 * (fmt_json_memory_failures() before obj was built: a member it dropped). */
fmt_kind fmt_json_rec_make(fmt_json_rec *r, json_t *obj, unsigned long since, fmt_err *e);
/* Write the line made (nothing when none) and free it: 0, or FMT_JSON_WRITE_FAILED. */
int fmt_json_rec_put(FILE *f, fmt_json_rec *r);
void fmt_json_rec_free(fmt_json_rec *r);

/* jansson's setters drop what they could not allocate (json_array_append_new, json_object_set_new
 * return -1, which nobody could act on at every call): a record built out of memory printed
 * incomplete, and the tool exited 0 (fmt-inspect --json of a 100,000-column schema under
 * ulimit -v listed 50,301 columns). fmt_json_track_memory routes jansson's allocations through a
 * malloc that remembers a failure; fmt_json_memory_failed says whether one failed since the start
 * (the CLI layer turns that into an error and exit 3 at the end of a run that would exit 0). */
void fmt_json_track_memory(void);
int fmt_json_memory_failed(void);
/* A value of a JSON record could not be made for want of memory outside jansson (a buffer it was
 * to be built from), and the record goes on without it: fmt_json_memory_failed says so, as
 * when jansson's allocation failed. */
void fmt_json_memory_lost(void);
/* How many of those failures there were so far (fmt_json_loadb compares it across a parse). */
unsigned long fmt_json_memory_failures(void);
/* For a text that is whole whatever failed while it was made (a message object, written by hand
 * when jansson could not make it): fmt_json_memory_mark before, fmt_json_memory_forgive(mark)
 * after takes back this thread's failures since, so they do not make a run that succeeded exit 3
 * ("out of memory building a report") after its output is in place. */
unsigned long fmt_json_memory_mark(void);
void fmt_json_memory_forgive(unsigned long mark);

/* Human sizes: 1536 -> "1.5 KiB". */
void fmt_format_bytes(char *buf, size_t n, uint64_t bytes);

#endif
