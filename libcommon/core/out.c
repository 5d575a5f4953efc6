#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if it is not valid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

int fmt_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		/* ASCII eight bytes at a time: table strings are mostly ASCII */
		while (n >= 8) {
			uint64_t w;
			memcpy(&w, p, 8);
			if (w & 0x8080808080808080u)
				break;
			p += 8;
			n -= 8;
		}
		if (n == 0)
			break;
		size_t len = utf8_seq_len(p, n);
		if (len == 0)
			return 0;
		p += len;
		n -= len;
	}
	return 1;
}

static void escaped(FILE *f, const char *s, size_t n, int in_quotes)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		size_t len = utf8_seq_len(p, n);
		unsigned c = p[0];
		if (len == 0) {
			fprintf(f, "\\x%02x", c);
			len = 1;
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c == '\\' || (c == '"' && in_quotes)) {
			fputc('\\', f);
			fputc((int)c, f);
		} else if (c < 0x20 || c == 0x7F) {
			fprintf(f, "\\x%02x", c);
		} else if (len == 2 && c == 0xC2 && p[1] < 0xA0) {
			/* C1 control characters (U+0080..U+009F) move terminals too. */
			fprintf(f, "\\u%04x", (unsigned)p[1]);
		} else {
			fwrite(p, 1, len, f);
		}
		p += len;
		n -= len;
	}
}

void fmt_out_escaped(FILE *f, const char *s, size_t n)
{
	escaped(f, s, n, 0);
}

void fmt_out_quoted(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	escaped(f, s, n, 1);
	fputc('"', f);
}

json_t *fmt_json_string(const char *s, size_t n)
{
	if (fmt_utf8_valid(s, n))
		return json_stringn_nocheck(s, n);
	/* Each invalid byte becomes U+FFFD (3 bytes). */
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	char *buf = malloc(n * 3 + 1);
	if (!buf) {
		fmt_json_memory_lost(); /* as when jansson's own allocation fails: the record is short */
		return NULL;
	}
	const unsigned char *p = (const unsigned char *)s;
	size_t out = 0;
	while (n > 0) {
		size_t len = utf8_seq_len(p, n);
		if (len == 0) {
			memcpy(buf + out, "\xEF\xBF\xBD", 3);
			out += 3;
			len = 1;
		} else {
			memcpy(buf + out, p, len);
			out += len;
		}
		p += len;
		n -= len;
	}
	json_t *j = json_stringn_nocheck(buf, out);
	free(buf);
	return j;
}

void fmt_json_put_string(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	while (n > 0) {
		size_t len = utf8_seq_len(p, n);
		unsigned c = p[0];
		const char *esc = c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\n' ? "\\n" : c == '\r' ? "\\r" :
				  c == '\t' ? "\\t" : NULL;
		if (len == 0) {
			fputs("\xEF\xBF\xBD", f); /* as fmt_json_string */
			len = 1;
		} else if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc((int)c, f);
		} else if (esc) {
			fputs(esc, f);
		} else if (c < 0x20) {
			fprintf(f, "\\u%04X", c); /* jansson's */
		} else if (c == 0x7F || (len == 2 && c == 0xC2 && p[1] < 0xA0)) {
			fprintf(f, "\\u%04x", len == 2 ? (unsigned)p[1] : c); /* jo_callback's */
		} else {
			fwrite(p, 1, len, f);
		}
		p += len;
		n -= len;
	}
	fputc('"', f);
}

json_t *fmt_json_double(double v)
{
	if (isnan(v))
		return json_string("nan");
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	return json_real(v);
}

json_t *fmt_json_u64(uint64_t v)
{
	char text[24];
	if (v <= (uint64_t)INT64_MAX)
		return json_integer((json_int_t)v);
	snprintf(text, sizeof text, "%" PRIu64, v);
	return json_string(text);
}

/* JSON allows DEL and the C1 controls (U+0080-U+009F) raw inside strings, and jansson writes
 * them so; a terminal acts on them (U+009B is CSI). They are written as \u escapes, which in
 * JSON text can only be inside strings, where they mean the same. */
typedef struct json_out {
	char *buf;                   /* a growing string */
	size_t len, cap;
	int c2;                      /* a 0xC2 byte is pending */
	int failed;
} json_out;

static void jo_put(json_out *o, const char *p, size_t n)
{
	if (o->failed || n == 0)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *bigger = realloc(o->buf, cap);
		if (!bigger) {
			o->failed = 1;
			return;
		}
		o->buf = bigger;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static int jo_callback(const char *p, size_t n, void *ctx)
{
	json_out *o = ctx;
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (o->c2) {
			o->c2 = 0;
			if (c >= 0x80 && c <= 0x9F) {
				char esc[8];
				snprintf(esc, sizeof esc, "\\u%04x", c);
				jo_put(o, esc, 6);
			} else {
				jo_put(o, "\xC2", 1);
				jo_put(o, (const char *)&p[i], 1);
			}
			run = i + 1;
			continue;
		}
		if (c == 0x7F || c == 0xC2) {
			jo_put(o, p + run, i - run);
			if (c == 0x7F)
				jo_put(o, "\\u007f", 6);
			else
				o->c2 = 1;
			run = i + 1;
		}
	}
	jo_put(o, p + run, n - run);
	return o->failed ? -1 : 0;
}

/* j's text, with nl a newline after it, as a malloc'd string of *len bytes; NULL when out of
 * memory. Growing by doubling: fmt-inspect's record of a model of a million tensors is a string
 * of some 100 MB. */
static char *json_build(const json_t *j, int nl, size_t *len)
{
	json_out o = { 0 };
	int r = json_dump_callback(j, jo_callback, &o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	if (r == 0 && o.c2)
		jo_put(&o, "\xC2", 1);
	if (r == 0 && nl)
		jo_put(&o, "\n", 1);
	if (r != 0 || o.failed || !o.buf) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}

/* The text made whole in memory, then written at once: jansson allocates while it dumps, and a
 * dump straight to f stopped where an allocation failed, half a record written. */
static int json_put(FILE *f, const json_t *j, int nl)
{
	size_t n;
	char *text = json_build(j, nl, &n);
	if (!text) {
		fmt_json_memory_lost(); /* also for a caller that does not look at the result */
		return FMT_JSON_NO_MEMORY;
	}
	int r = fwrite(text, 1, n, f) == n ? 0 : FMT_JSON_WRITE_FAILED;
	free(text);
	return r;
}

int fmt_json_write(FILE *f, const json_t *j)
{
	return json_put(f, j, 0);
}

char *fmt_json_text(const json_t *j)
{
	size_t n;
	return json_build(j, 0, &n);
}

static unsigned long json_alloc_failed; /* how many of jansson's allocations failed */
static __thread unsigned long json_failed_here; /* ... of those, this thread's */

static void json_failure(void)
{
	__atomic_add_fetch(&json_alloc_failed, 1, __ATOMIC_RELAXED);
	json_failed_here++;
}

static void *json_tracked_malloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		json_failure();
	return p;
}

void fmt_json_track_memory(void)
{
	json_set_alloc_funcs(json_tracked_malloc, free);
}

void fmt_json_memory_lost(void)
{
	json_failure();
}

unsigned long fmt_json_memory_mark(void)
{
	return json_failed_here;
}

void fmt_json_memory_forgive(unsigned long mark)
{
	__atomic_sub_fetch(&json_alloc_failed, json_failed_here - mark, __ATOMIC_RELAXED);
	json_failed_here = mark;
}

int fmt_json_memory_failed(void)
{
	return __atomic_load_n(&json_alloc_failed, __ATOMIC_RELAXED) != 0;
}

unsigned long fmt_json_memory_failures(void)
{
	return __atomic_load_n(&json_alloc_failed, __ATOMIC_RELAXED);
}

int fmt_json_set(json_t *obj, const char *key, json_t *value)
{
	size_t n = strlen(key);
	if (fmt_utf8_valid(key, n))
		return json_object_set_new_nocheck(obj, key, value);
	json_t *valid = fmt_json_string(key, n);
	int r = valid ? json_object_set_new_nocheck(obj, json_string_value(valid), value) : (json_decref(value), -1);
	json_decref(valid);
	return r;
}

int fmt_json_line(FILE *f, json_t *obj)
{
	return json_put(f, obj, 1);
}

fmt_kind fmt_json_fail(int r, fmt_err *e)
{
	if (r == FMT_JSON_NO_MEMORY)
		return fmt_fail(e, FMT_IO, "out of memory");
	return fmt_fail(e, FMT_IO, "cannot write to standard output");
}

fmt_kind fmt_json_emit(FILE *f, json_t *obj, fmt_err *e)
{
	int r = obj ? fmt_json_line(f, obj) : FMT_JSON_NO_MEMORY;
	json_decref(obj);
	return r ? fmt_json_fail(r, e) : FMT_OK;
}

fmt_kind fmt_json_rec_make(fmt_json_rec *r, json_t *obj, unsigned long since, fmt_err *e)
{
	r->text = obj ? json_build(obj, 1, &r->len) : NULL;
	json_decref(obj);
	if (r->text && fmt_json_memory_failures() == since)
		return FMT_OK;
	fmt_json_rec_free(r);
	return fmt_json_fail(FMT_JSON_NO_MEMORY, e);
}

int fmt_json_rec_put(FILE *f, fmt_json_rec *r)
{
	int w = !r->text || fwrite(r->text, 1, r->len, f) == r->len ? 0 : FMT_JSON_WRITE_FAILED;
	fmt_json_rec_free(r);
	return w;
}

void fmt_json_rec_free(fmt_json_rec *r)
{
	free(r->text);
	r->text = NULL;
	r->len = 0;
}

void fmt_format_bytes(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, n, "%.1f %s", v, units[u]);
}
