/* A growing string for text the writers build byte for byte (JSON headers, canonical tables).
 * An allocation failure sets oom and later calls do nothing: check oom once at the end. */
#ifndef FMT_STRBUF_H
#define FMT_STRBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fmt_sb {
	char *p;          /* NUL-terminated once anything was put */
	size_t len, cap;
	int oom;
} fmt_sb;

void fmt_sb_put(fmt_sb *b, const char *s, size_t n);
/* Room for n more bytes (and the NUL): where they go, or NULL when out of memory. Write at
 * most n there, then fmt_sb_commit the count. */
char *fmt_sb_reserve_slow(fmt_sb *b, size_t n);
static inline char *fmt_sb_reserve(fmt_sb *b, size_t n)
{
	return !b->oom && b->cap - b->len > n ? b->p + b->len : fmt_sb_reserve_slow(b, n);
}
/* fmt_sb_reserve for a buffer held among many (a wide table's columns): when it must grow, by an
 * eighth at least rather than doubling, so that what they hold is near what they use. */
char *fmt_sb_reserve_tight(fmt_sb *b, size_t n);
static inline void fmt_sb_commit(fmt_sb *b, size_t n)
{
	b->len += n;
	b->p[b->len] = '\0';
}
/* memcpy(at, s, n) with short pieces without a call: two overlapping words, the first and the
 * last. */
static inline void fmt_copy_short(char *at, const char *s, size_t n)
{
	if (n >= 8 && n <= 16) {
		memcpy(at, s, 8);
		memcpy(at + n - 8, s + n - 8, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(at, s, 4);
		memcpy(at + n - 4, s + n - 4, 4);
	} else if (n < 4) {
		for (size_t i = 0; i < n; i++)
			at[i] = s[i];
	} else {
		memcpy(at, s, n);
	}
}
/* fmt_sb_put with the common case (room left) inline, for writers that append per cell. */
static inline void fmt_sb_add(fmt_sb *b, const char *s, size_t n)
{
	if (b->cap - b->len > n && !b->oom) {
		fmt_copy_short(b->p + b->len, s, n);
		b->len += n;
		b->p[b->len] = '\0';
		return;
	}
	fmt_sb_put(b, s, n);
}
void fmt_sb_puts(fmt_sb *b, const char *s);
/* "00" "01" ... "99": two decimal digits per lookup */
extern const char fmt_digit_pairs[201];
void fmt_sb_u64(fmt_sb *b, uint64_t v);
void fmt_sb_i64(fmt_sb *b, int64_t v);
/* The number of decimal digits of v (1 for 0). */
static inline int fmt_digit_count(uint64_t v)
{
	static const uint64_t pow10[] = { 1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u,
					  100000000u, 1000000000u, 10000000000u, 100000000000u,
					  1000000000000u, 10000000000000u, 100000000000000u,
					  1000000000000000u, 10000000000000000u, 100000000000000000u,
					  1000000000000000000u, 10000000000000000000u };
	/* floor(log10 2^bits) from the bit length, then one comparison (v | 1: 0 has a digit;
	 * the powers of ten above 1 are even, so the others compare the same) */
	int n = ((64 - __builtin_clzll(v | 1)) * 1233) >> 12;
	return n + (n < 20 && (v | 1) >= pow10[n]);
}
/* v < 10^8 as exactly eight digits at p: two four-digit halves, so the divisions of one do not
 * wait for the other's */
static inline void fmt_put_8_digits(char *p, uint32_t v)
{
	uint32_t hi = v / 10000, lo = v % 10000;
	memcpy(p, fmt_digit_pairs + 2 * (hi / 100), 2);
	memcpy(p + 2, fmt_digit_pairs + 2 * (hi % 100), 2);
	memcpy(p + 4, fmt_digit_pairs + 2 * (lo / 100), 2);
	memcpy(p + 6, fmt_digit_pairs + 2 * (lo % 100), 2);
}
/* v < 10^n as exactly n digits at p (leading zeros when v has fewer), n <= 20; returns p + n. */
static inline char *fmt_put_digits(char *p, uint64_t v, int n)
{
	int i = n;
	while (i >= 8) {
		i -= 8;
		fmt_put_8_digits(p + i, (uint32_t)(v % 100000000u));
		v /= 100000000u;
	}
	uint32_t w = (uint32_t)v; /* the leading i < 8 digits */
	while (i >= 2) {
		i -= 2;
		memcpy(p + i, fmt_digit_pairs + 2 * (w % 100), 2);
		w /= 100;
	}
	if (i)
		p[0] = (char)('0' + w);
	return p + n;
}
/* v in decimal into buf (at least 21 bytes), NUL-terminated; returns the length. */
size_t fmt_u64_text(uint64_t v, char *buf);
size_t fmt_i64_text(int64_t v, char *buf);
/* s as a JSON string exactly as serde_json writes it. */
void fmt_sb_json_str(fmt_sb *b, const char *s, size_t n);
void fmt_sb_free(fmt_sb *b);

/* words[0..n) as "a, b and c" into buf (size bytes, cut short if it must): last is what goes
 * before the last word (" and ", " or "). */
void fmt_join_words(const char *const *words, size_t n, const char *last, char *buf, size_t size);
/* The same with sep between the others ("a,b,c": sep and last ","). */
void fmt_join_sep(const char *const *words, size_t n, const char *sep, const char *last, char *buf, size_t size);

/* The word a user most likely meant by one that is not a name ("did you mean 'keygen'?"):
 * offer every name, then ask. A name is near when it is the same with letter case, '_' and '-'
 * ignored (q4km: Q4_K_M), or a letter added, dropped, changed or two swapped away (in the same
 * comparison; two for words of six letters or more). The nearest wins; NULL when none is near,
 * two different names are as near, or typed is one of them. typed and the names must outlive
 * the fmt_nearest. */
typedef struct fmt_nearest {
	const char *typed;
	const char *best;
	int best_distance, tied;
	int exact;            /* typed is one of the names: no typo */
} fmt_nearest;
void fmt_nearest_init(fmt_nearest *n, const char *typed);
void fmt_nearest_offer(fmt_nearest *n, const char *name);
const char *fmt_nearest_best(const fmt_nearest *n);
/* "not 'typed'", or "not 'typed'; did you mean 'best'?" (best NULL: the first), into buf: the
 * end of a message listing what a word may be. Returns buf. */
const char *fmt_not_word(char *buf, size_t size, const char *typed, const char *best);

/* 1 when s ends with suffix (a file name with its extension). */
int fmt_ends_with(const char *s, const char *suffix);
/* The same in any letter case (an output's extension: DATA.CSV is CSV). */
int fmt_ends_with_nocase(const char *s, const char *suffix);

/* memcmp order, the shorter first on a common prefix (Parquet's byte-array order, sort keys,
 * JSON object keys); <0, 0, >0. */
static inline int fmt_bytes_cmp(const void *a, size_t na, const void *b, size_t nb)
{
	const unsigned char *x = a, *y = b;
	size_t n = na < nb ? na : nb;
	if (n && x[0] != y[0]) /* mostly so: no call */
		return x[0] < y[0] ? -1 : 1;
	int cmp = n ? memcmp(x, y, n) : 0;
	return cmp ? cmp : na < nb ? -1 : na > nb;
}

#endif
