/* JSON text followed without a parser, for readers that look at strings and brackets before or
 * beside jansson (splitting a large header into members, measuring nesting, finding signs). */
#ifndef FMT_JSON_TEXT_H
#define FMT_JSON_TEXT_H

#include <stddef.h>

/* JSON white space: space, tab, CR, LF. */
int fmt_json_ws(int c);

/* The index of the first byte at or after i in s[0..n) that is not JSON white space (n when
 * none is). */
size_t fmt_json_skip_ws(const char *s, size_t n, size_t i);

/* s[i] is '"': the index of the byte that ends the string: its closing quote; with
 * stop_at_control, an earlier raw control character (below 0x20); n when it runs off the end.
 * A backslash steps over the byte after it, unchecked (jansson checks escapes); *escaped, when
 * not NULL, says whether a backslash came before the end. */
size_t fmt_json_string_end(const char *s, size_t n, size_t i, int stop_at_control, int *escaped);

#endif
