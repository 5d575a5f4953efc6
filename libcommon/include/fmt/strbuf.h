/* A growing string for text the writers build byte for byte (JSON headers, canonical tables).
 * An allocation failure sets oom and later calls do nothing: check oom once at the end. */
#ifndef FMT_STRBUF_H
#define FMT_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct fmt_sb {
	char *p;          /* NUL-terminated once anything was put */
	size_t len, cap;
	int oom;
} fmt_sb;

void fmt_sb_put(fmt_sb *b, const char *s, size_t n);
void fmt_sb_puts(fmt_sb *b, const char *s);
void fmt_sb_u64(fmt_sb *b, uint64_t v);
void fmt_sb_i64(fmt_sb *b, int64_t v);
/* s as a JSON string exactly as serde_json writes it. */
void fmt_sb_json_str(fmt_sb *b, const char *s, size_t n);
void fmt_sb_free(fmt_sb *b);

#endif
