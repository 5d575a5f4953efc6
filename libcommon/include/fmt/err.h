/* Error kinds, exit codes and the error record every libcommon call fills. */
#ifndef FMT_ERR_H
#define FMT_ERR_H

#include <stddef.h>

/* The value of each kind is the process exit status (CONVENTIONS.md). */
typedef enum fmt_kind {
	FMT_OK = 0,
	FMT_NEGATIVE = 1,
	FMT_USAGE = 2,
	FMT_IO = 3,
	FMT_INVALID_FORMAT = 4,
	FMT_UNSUPPORTED = 5,
	FMT_CHECKSUM = 6,
	FMT_SIGNATURE = 7,
	FMT_DECRYPTION = 8,
	FMT_SCHEMA = 9,
	FMT_LICENSE = 10,
	FMT_TEST_FAILED = 11,
	FMT_INTERNAL = 70
} fmt_kind;

#define FMT_ERR_FILE_MAX 1024
#define FMT_ERR_MSG_MAX 1024

/* kind + the file it concerns (may be a shard, not the argument) + what is wrong. */
typedef struct fmt_err {
	fmt_kind kind;
	char file[FMT_ERR_FILE_MAX];
	char msg[FMT_ERR_MSG_MAX];
} fmt_err;

void fmt_err_clear(fmt_err *e);

/* A new error: fill e (kind and printf-style message) and return kind. Nothing of what e held
 * before is kept: its file is cleared (fmt_err_file names it afterwards), so that a record used
 * again after one failure does not name the first failure's file. */
fmt_kind fmt_fail(fmt_err *e, fmt_kind kind, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, about file (none when NULL). */
fmt_kind fmt_fail_file(fmt_err *e, fmt_kind kind, const char *file, const char *format, ...)
	__attribute__((format(printf, 4, 5)));
#ifdef __clang_analyzer__
/* The analyzer does not follow a call into another file: without this it takes the paths on
 * which fmt_fail returned FMT_OK, and reports what they would do. */
#define fmt_fail(e, kind, ...) (fmt_fail((e), (kind), __VA_ARGS__), (kind))
#define fmt_fail_file(e, kind, file, ...) (fmt_fail_file((e), (kind), (file), __VA_ARGS__), (kind))
#endif

/* Set the file an error concerns, unless a deeper call already named one (adds to the error
 * that is there: call it after fmt_fail, which starts a new one). */
void fmt_err_file(fmt_err *e, const char *file);

/* Prefix the existing message with context: "context: old message". */
void fmt_err_prefix(fmt_err *e, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* "InvalidFormat", "ChecksumMismatch", ... as in CONVENTIONS.md. */
const char *fmt_kind_name(fmt_kind kind);

/* The exit status for a kind (the highest over several files is what a tool returns). */
int fmt_kind_exit(fmt_kind kind);

#endif
