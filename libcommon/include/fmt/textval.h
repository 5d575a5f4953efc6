/* Parsing text values (CSV fields, JSON strings) for type inference and conversion. Part of
 * the table model (libcommon/table). */
#ifndef FMT_TEXTVAL_H
#define FMT_TEXTVAL_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/table.h"

int fmt_tv_bool(const char *s, size_t n, int *v);
int fmt_tv_int64(const char *s, size_t n, int64_t *v);
/* [+]digits up to 2^64-1. */
int fmt_tv_uint64(const char *s, size_t n, uint64_t *v);
int fmt_tv_float(const char *s, size_t n, double *v);
/* For a float16 or float32 column (t): d, the float64 fmt_tv_float read from s[0..n), made safe
 * to narrow to t in one rounding. Narrowing d would round twice when d is exactly halfway
 * between two adjacent values of t (or between t's largest and the overflow threshold) while the
 * decimal text is not: then the float64 next to d on the text's side (strtod rounded up and down
 * tells which), so that the narrowing rounds as the decimal does. Otherwise (also for any other
 * t, a non-finite d, a decimal that is the halfway point exactly: ties to even) d itself. */
double fmt_tv_float_narrowable(const char *s, size_t n, double d, fmt_ctype t);
/* The text of a float that JSON has no number for, as a JSON string holds it: NaN, inf and -inf
 * (what fmt_shortest_* writes, so what the JSON writers put in a string) and JavaScript's
 * Infinity and -Infinity. 1 with *v set when s is one of them. */
int fmt_tv_nonfinite(const char *s, size_t n, double *v);

/* YYYY-MM-DD (a day the month has: February 29 in leap years only) as days since 1970-01-01: a
 * date32 value, for the CSV reader and --where alike. Years outside 0000 to 9999 as ISO 8601
 * expands them and the writers print them: 10000-01-01, -0001-12-31 (at least 4 digits after
 * the '-'; no '+'; no leading zero in a year of more than 4 digits). 1 when it is one. */
int fmt_tv_date(const char *s, size_t n, int32_t *days);

/* A timestamp as read from text. */
typedef struct fmt_tv_time {
	int64_t secs;          /* since the epoch: UTC when zoned, else of the wall clock as if UTC */
	uint32_t nanos;
	int digits;            /* fraction digits written */
	int zoned;             /* Z or an offset was written */
} fmt_tv_time;
/* A date as fmt_tv_date reads it, 'T' (or 't', or a space as DuckDB and PostgreSQL write it),
 * hh:mm:ss, an optional fraction of up to 9 digits, then an optional zone: Z, +hh:mm, +hhmm or +hh (or -). RFC 3339
 * and what the writers (fmtkit's zone-less timestamps, DuckDB) write. 1 when it is one. */
int fmt_tv_timestamp(const char *s, size_t n, fmt_tv_time *t);
/* s as a value of the TIMESTAMP field f: a zone written exactly when f has one (a zone-less
 * value in a zoned column, or the reverse, would need a guess), in f's unit. 1 when it fits. */
int fmt_tv_timestamp_as(const char *s, size_t n, const fmt_field *f, int64_t *out);
/* The time unit that keeps digits fraction digits. */
fmt_time_unit fmt_tv_unit_for_digits(int digits);
/* secs/nanos in unit; 0 on overflow. */
int fmt_tv_to_unit(int64_t secs, uint32_t nanos, fmt_time_unit unit, int64_t *out);

/* What a column's values allow so far (bit set = every value seen so far parses as it). */
enum { TV_BOOL = 1, TV_INT = 2, TV_FLOAT = 4, TV_TIME = 8, TV_UINT = 16 };
typedef struct fmt_tv_infer {
	unsigned can;          /* TV_* still possible */
	int seen, nulls;       /* values and nulls seen */
	int digits;            /* most fraction digits of a timestamp */
	int zoned, unzoned;    /* timestamps with and without a zone seen */
	int real;              /* a number that is not an integer literal seen (TV_FLOAT needs one) */
} fmt_tv_infer;

void fmt_tv_infer_init(fmt_tv_infer *t);
void fmt_tv_infer_add(fmt_tv_infer *t, const char *s, size_t n);
/* Into t, the inference of the values that follow t's (later, as one pass over both would
 * have seen them: the same answer, whatever the split). */
void fmt_tv_infer_merge(fmt_tv_infer *t, const fmt_tv_infer *later);
/* The inferred field type: bool, int64, uint64 (every value an integer, none negative, one
 * above int64), float64 (numbers, one of them written with a fraction or an exponent: each is
 * then read as a float, as 0.1 is), timestamp (zoned: UTC, or zone-less: every value alike),
 * else utf8, which keeps every value as written: integers that no integer type holds are
 * never rounded to a float. */
void fmt_tv_infer_field(const fmt_tv_infer *t, fmt_field *f);

#endif
