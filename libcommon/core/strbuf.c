#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/strbuf.h"

/* Capacity for n more bytes and the NUL; 0 (and oom set) when that cannot be had. */
static int grow(fmt_sb *b, size_t n)
{
	if (b->oom)
		return 0;
	if (n > SIZE_MAX - b->len - 1) {
		b->oom = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1) {
			if (cap > SIZE_MAX / 2) {
				b->oom = 1;
				return 0;
			}
			cap *= 2;
		}
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	return 1;
}

void fmt_sb_put(fmt_sb *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

char *fmt_sb_reserve_slow(fmt_sb *b, size_t n)
{
	return grow(b, n) ? b->p + b->len : NULL;
}

void fmt_sb_puts(fmt_sb *b, const char *s)
{
	fmt_sb_put(b, s, strlen(s));
}

const char fmt_digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				  "8081828384858687888990919293949596979899";

size_t fmt_u64_text(uint64_t v, char *buf)
{
	int n = fmt_digit_count(v);
	*fmt_put_digits(buf, v, n) = '\0';
	return (size_t)n;
}

size_t fmt_i64_text(int64_t v, char *buf)
{
	if (v >= 0)
		return fmt_u64_text((uint64_t)v, buf);
	buf[0] = '-';
	return 1 + fmt_u64_text(0 - (uint64_t)v, buf + 1);
}

void fmt_sb_u64(fmt_sb *b, uint64_t v)
{
	char tmp[24];
	fmt_sb_put(b, tmp, fmt_u64_text(v, tmp));
}

void fmt_sb_i64(fmt_sb *b, int64_t v)
{
	char tmp[24];
	fmt_sb_put(b, tmp, fmt_i64_text(v, tmp));
}

/* serde_json's string escaping (specs/safetensors.md §6.3): the short escapes it knows, \u00xx
 * (lower-case hex) for other controls, everything else raw. */
void fmt_sb_json_str(fmt_sb *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	fmt_sb_put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[7];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			if (c < 0x20) {
				memcpy(u, "\\u00", 4);
				u[4] = hex[c >> 4];
				u[5] = hex[c & 15];
				u[6] = '\0';
				esc = u;
			}
		}
		if (!esc)
			continue;
		fmt_sb_put(b, s + run, i - run);
		fmt_sb_puts(b, esc);
		run = i + 1;
	}
	fmt_sb_put(b, s + run, n - run);
	fmt_sb_put(b, "\"", 1);
}

void fmt_sb_free(fmt_sb *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

void fmt_join_sep(const char *const *words, size_t n, const char *sep, const char *last, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i == 0 ? "" : i + 1 == n ? last : sep,
					 words[i]);
}

void fmt_join_words(const char *const *words, size_t n, const char *last, char *buf, size_t size)
{
	fmt_join_sep(words, n, ", ", last, buf, size);
}

int fmt_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int fmt_ends_with_nocase(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}
