/* Parsing text values (CSV fields, JSON strings) for type inference and conversion. Internal
 * to libcommon/data. */
#ifndef FMT_DATA_TEXTVAL_H
#define FMT_DATA_TEXTVAL_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/table.h"

int fmt_tv_bool(const char *s, size_t n, int *v);
int fmt_tv_int64(const char *s, size_t n, int64_t *v);
int fmt_tv_float(const char *s, size_t n, double *v);
/* RFC 3339 with an offset (Z or +hh:mm): seconds since the epoch in UTC, nanoseconds, and how
 * many fraction digits were written. 1 when it is one. */
int fmt_tv_rfc3339(const char *s, size_t n, int64_t *secs, uint32_t *nanos, int *digits);
/* The time unit that keeps digits fraction digits. */
fmt_time_unit fmt_tv_unit_for_digits(int digits);
/* secs/nanos in unit; 0 on overflow. */
int fmt_tv_to_unit(int64_t secs, uint32_t nanos, fmt_time_unit unit, int64_t *out);

/* What a column's values allow so far (bit set = every value seen so far parses as it). */
enum { TV_BOOL = 1, TV_INT = 2, TV_FLOAT = 4, TV_TIME = 8 };
typedef struct fmt_tv_infer {
	unsigned can;          /* TV_* still possible */
	int seen, nulls;       /* values and nulls seen */
	int digits;            /* most fraction digits of a timestamp */
} fmt_tv_infer;

void fmt_tv_infer_init(fmt_tv_infer *t);
void fmt_tv_infer_add(fmt_tv_infer *t, const char *s, size_t n);
/* The inferred field type (utf8 when nothing narrower fits every value). */
void fmt_tv_infer_field(const fmt_tv_infer *t, fmt_field *f);

#endif
