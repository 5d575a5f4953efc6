#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/strbuf.h"

/* Capacity for n more bytes and the NUL, doubling from 256, or when tight by an eighth at least
 * (fmt_sb_reserve_tight); 0 (and oom set) when that cannot be had. */
static int grow_as(fmt_sb *b, size_t n, int tight)
{
	if (b->oom)
		return 0;
	if (n > SIZE_MAX - b->len - 1) {
		b->oom = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256, need = b->len + n + 1;
		if (tight)
			cap = b->cap > SIZE_MAX / 2 || b->cap + b->cap / 8 < need ? need : b->cap + b->cap / 8;
		while (cap < need) {
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
	if (!grow_as(b, n, 0))
		return;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

char *fmt_sb_reserve_slow(fmt_sb *b, size_t n)
{
	return grow_as(b, n, 0) ? b->p + b->len : NULL;
}

char *fmt_sb_reserve_tight(fmt_sb *b, size_t n)
{
	return grow_as(b, n, 1) ? b->p + b->len : NULL;
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

/* ---- the name a user meant ---- */

#define NEAR_MAX 64   /* longer words are not compared */

/* s lower-cased without '_' and '-' into out (NEAR_MAX bytes): its length, or -1 if too long. */
static int near_form(const char *s, char *out)
{
	int n = 0;
	for (; *s; s++) {
		if (*s == '_' || *s == '-')
			continue;
		if (n == NEAR_MAX)
			return -1;
		out[n++] = (char)tolower((unsigned char)*s);
	}
	return n;
}

/* Edits (insert, delete, substitute, swap two neighbours) from a[0..na) to b[0..nb). */
static int edit_distance(const char *a, int na, const char *b, int nb)
{
	int d[NEAR_MAX + 1][NEAR_MAX + 1];
	for (int i = 0; i <= na; i++)
		d[i][0] = i;
	for (int j = 0; j <= nb; j++)
		d[0][j] = j;
	for (int i = 1; i <= na; i++) {
		for (int j = 1; j <= nb; j++) {
			int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[na][nb];
}

void fmt_nearest_init(fmt_nearest *n, const char *typed)
{
	*n = (fmt_nearest){ .typed = typed, .best_distance = 3 };
}

void fmt_nearest_offer(fmt_nearest *n, const char *name)
{
	char a[NEAR_MAX], b[NEAR_MAX];
	int na = near_form(n->typed, a), nb = near_form(name, b);
	n->exact |= strcmp(n->typed, name) == 0;
	if (na <= 0 || nb <= 0 || n->exact)
		return;
	int d = edit_distance(a, na, b, nb), longer = na > nb ? na : nb;
	if (d > (longer >= 6 ? 2 : 1) || d > n->best_distance)
		return;
	if (d == n->best_distance && n->best) {
		n->tied |= strcasecmp(n->best, name) != 0;
		return;
	}
	n->best = name;
	n->best_distance = d;
	n->tied = 0;
}

const char *fmt_nearest_best(const fmt_nearest *n)
{
	return n->tied || n->exact ? NULL : n->best;
}

const char *fmt_not_word(char *buf, size_t size, const char *typed, const char *best)
{
	if (best)
		snprintf(buf, size, "not '%.64s'; did you mean '%s'?", typed, best);
	else
		snprintf(buf, size, "not '%.64s'", typed);
	return buf;
}
