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
static inline void fmt_sb_commit(fmt_sb *b, size_t n)
{
	b->len += n;
	b->p[b->len] = '\0';
}
/* fmt_sb_put with the common case (room left) inline, for writers that append per cell. */
static inline void fmt_sb_add(fmt_sb *b, const char *s, size_t n)
{
	if (b->cap - b->len > n && !b->oom) {
		char *at = b->p + b->len;
		/* short pieces without a call: two overlapping words, the first and the last */
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
		b->len += n;
		b->p[b->len] = '\0';
		return;
	}
	fmt_sb_put(b, s, n);
}
void fmt_sb_puts(fmt_sb *b, const char *s);
void fmt_sb_u64(fmt_sb *b, uint64_t v);
void fmt_sb_i64(fmt_sb *b, int64_t v);
/* "00" "01" ... "99": two decimal digits per lookup */
extern const char fmt_digit_pairs[201];
/* v in decimal into buf (at least 21 bytes), NUL-terminated; returns the length. */
size_t fmt_u64_text(uint64_t v, char *buf);
size_t fmt_i64_text(int64_t v, char *buf);
/* s as a JSON string exactly as serde_json writes it. */
void fmt_sb_json_str(fmt_sb *b, const char *s, size_t n);
void fmt_sb_free(fmt_sb *b);

/* 1 when s ends with suffix (a file name with its extension). */
int fmt_ends_with(const char *s, const char *suffix);

#endif
