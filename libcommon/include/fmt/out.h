/* Output: escaping of untrusted strings, JSON Lines, and the error line/object of
 * CONVENTIONS.md. These write to the stream they are given (fmt_report_failed: errors to stderr). */
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

/* 1 if s[0..n) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
int fmt_utf8_valid(const char *s, size_t n);

/* A JSON string for untrusted bytes: valid UTF-8 as is, otherwise with invalid bytes replaced
 * by U+FFFD. Returns NULL on allocation failure. */
json_t *fmt_json_string(const char *s, size_t n);

/* An unsigned 64-bit number: a JSON integer up to 2^63-1, above that a decimal string (JSON
 * readers and jansson hold integers as signed 64-bit or as doubles, which would lose it). */
json_t *fmt_json_u64(uint64_t v);


/* One compact JSON object and a newline (JSON Lines); returns 0 or -1 on write failure. */
int fmt_json_line(FILE *f, json_t *obj);
/* Compact JSON (member order kept), with DEL and the C1 controls written as \u escapes so that
 * no control byte reaches a terminal: to f (0, or -1 on a write error), or as a malloc'd
 * string (NULL when out of memory). */
int fmt_json_write(FILE *f, const json_t *j);
char *fmt_json_text(const json_t *j);

/* The messages of CONVENTIONS.md on stderr. As text: "TOOL: error: FILE: message",
 * "TOOL: warning: message". With --json every line a tool writes on stderr is one JSON object
 * instead (and nothing else), so that `2>&1 | jq` works:
 *   {"tool","level":"error","file","error","exit","message"}   (file null when none)
 *   {"tool","level":"warning","file":null,"message"}
 *   {"tool","level":"info","file":null,"message"}               (--verbose notes)
 * The option runner switches JSON on for the whole process as soon as the command line holds
 * -j/--json (fmt_cli_parse), so that even a usage error is an object; a report's own json
 * argument switches it on for that report too. */
void fmt_report_set_json(int on);

void fmt_report_error(FILE *f, const char *tool, const char *file, const fmt_err *e, int json);
/* A command-line mistake: "TOOL: error: MSG" and "Try 'TOOL --help'." on f (with JSON the
 * error object, kind UsageError, exit 2, file null); returns FMT_USAGE. */
int fmt_report_usage(FILE *f, const char *tool, const char *msg);
void fmt_report_warning(FILE *f, const char *tool, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
/* A --verbose note: "TOOL: message". */
void fmt_report_info(FILE *f, const char *tool, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/* The stdout record of an input that failed (CONVENTIONS):
 * {"file","ok":false,"exit","error","message"}, file null when NULL; a tool may add members.
 * NULL when out of memory. */
json_t *fmt_json_failure(const char *file, const fmt_err *e);
/* An input that failed: the error on stderr (naming where, or e->file when set), and with
 * json the failure record of input on out (none when out is NULL: standard output carries
 * data, or -q). Returns e's exit status. */
int fmt_report_failed(FILE *out, const char *tool, const char *input, const char *where, const fmt_err *e,
		      int json);
/* An error before any of the n inputs was opened (a key that cannot be read): the error once
 * on stderr, then with json each input's failure record on out (one with file null when
 * there are none). Returns e's exit status. */
int fmt_report_failed_all(FILE *out, const char *tool, char *const *inputs, int n, const fmt_err *e, int json);

/* Human sizes: 1536 -> "1.5 KiB". */
void fmt_format_bytes(char *buf, size_t n, uint64_t bytes);

#endif
