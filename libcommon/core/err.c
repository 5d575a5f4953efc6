#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "fmt/err.h"

void fmt_err_clear(fmt_err *e)
{
	e->kind = FMT_OK;
	e->file[0] = '\0';
	e->msg[0] = '\0';
}

/* A new record: kind, the file (none when NULL) and the message; nothing of the one before. */
static fmt_kind __attribute__((format(printf, 4, 0))) fail_v(fmt_err *e, fmt_kind kind, const char *file,
								const char *format, va_list ap)
{
	e->kind = kind;
	e->file[0] = '\0';
	if (file)
		snprintf(e->file, sizeof e->file, "%s", file);
	vsnprintf(e->msg, sizeof e->msg, format, ap);
	return kind;
}

fmt_kind (fmt_fail)(fmt_err *e, fmt_kind kind, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	fail_v(e, kind, NULL, format, ap);
	va_end(ap);
	return kind;
}

fmt_kind (fmt_fail_file)(fmt_err *e, fmt_kind kind, const char *file, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	fail_v(e, kind, file, format, ap);
	va_end(ap);
	return kind;
}

void fmt_err_file(fmt_err *e, const char *file)
{
	if (e->file[0] == '\0' && file)
		snprintf(e->file, sizeof e->file, "%s", file);
}

void fmt_err_prefix(fmt_err *e, const char *format, ...)
{
	char old[FMT_ERR_MSG_MAX];
	va_list ap;
	memcpy(old, e->msg, sizeof old);
	va_start(ap, format);
	int n = vsnprintf(e->msg, sizeof e->msg, format, ap);
	va_end(ap);
	size_t used = n < 0 ? 0 : (size_t)n;
	if (used + 2 < sizeof e->msg) {
		memcpy(e->msg + used, ": ", 3);
		used += 2;
		size_t room = sizeof e->msg - used - 1, len = strnlen(old, room);
		memcpy(e->msg + used, old, len);
		e->msg[used + len] = '\0';
	}
}

const char *fmt_kind_name(fmt_kind kind)
{
	switch (kind) {
	case FMT_OK: return "Ok";
	case FMT_NEGATIVE: return "Negative";
	case FMT_USAGE: return "UsageError";
	case FMT_IO: return "IoError";
	case FMT_INVALID_FORMAT: return "InvalidFormat";
	case FMT_UNSUPPORTED: return "UnsupportedVersion";
	case FMT_CHECKSUM: return "ChecksumMismatch";
	case FMT_SIGNATURE: return "SignatureInvalid";
	case FMT_DECRYPTION: return "DecryptionFailed";
	case FMT_SCHEMA: return "SchemaMismatch";
	case FMT_LICENSE: return "LicenseExpired";
	case FMT_TEST_FAILED: return "TestFailed";
	case FMT_INTERNAL: return "InternalError";
	}
	return "InternalError";
}

int fmt_kind_exit(fmt_kind kind)
{
	return (int)kind;
}
