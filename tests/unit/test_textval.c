/* Text values of CSV and JSON Lines (libcommon/table/textval.c): uint64 text, timestamps with and
 * without a zone, and what type inference makes of a column. */
#include <math.h>
#include <string.h>
#include "fmt/textval.h"
#include "unit.h"

static int u64_of(const char *s, uint64_t *v)
{
	return fmt_tv_uint64(s, strlen(s), v);
}

TEST(textval_uint64)
{
	uint64_t v = 0;
	CHECK(u64_of("18446744073709551615", &v) && v == UINT64_MAX);
	CHECK(u64_of("+0", &v) && v == 0);
	CHECK(u64_of("00000000000000000001", &v) && v == 1);
	CHECK(!u64_of("18446744073709551616", &v));
	CHECK(!u64_of("99999999999999999999", &v));
	CHECK(!u64_of("-1", &v));
	CHECK(!u64_of("", &v));
	CHECK(!u64_of("+", &v));
	CHECK(!u64_of("1.0", &v));
	CHECK(!u64_of("000000000000000000001", &v)); /* 21 characters */
}

static int nonfinite_of(const char *s, double *v)
{
	return fmt_tv_nonfinite(s, strlen(s), v);
}

TEST(textval_nonfinite)
{
	double v = 0;
	CHECK(nonfinite_of("NaN", &v) && isnan(v) && !signbit(v));
	CHECK(nonfinite_of("inf", &v) && isinf(v) && v > 0);
	CHECK(nonfinite_of("-inf", &v) && isinf(v) && v < 0);
	CHECK(nonfinite_of("Infinity", &v) && isinf(v) && v > 0);
	CHECK(nonfinite_of("-Infinity", &v) && isinf(v) && v < 0);
	CHECK(!nonfinite_of("nan", &v));
	CHECK(!nonfinite_of("+inf", &v));
	CHECK(!nonfinite_of("in", &v));
	CHECK(!nonfinite_of("NaN ", &v));
	CHECK(!nonfinite_of("1.5", &v));
	CHECK(!fmt_tv_nonfinite("NaNx", 4, &v) && fmt_tv_nonfinite("NaNx", 3, &v));
}

static int ts_of(const char *s, fmt_tv_time *t)
{
	return fmt_tv_timestamp(s, strlen(s), t);
}

TEST(textval_timestamps)
{
	fmt_tv_time t;
	CHECK(ts_of("1966-10-31T14:13:20", &t) && !t.zoned && t.secs == -100000000 && t.digits == 0);
	CHECK(ts_of("2000-01-01 00:02:03.456789", &t) && !t.zoned && t.secs == 946684923 && t.nanos == 456789000 &&
	      t.digits == 6);
	CHECK(ts_of("2000-01-01T00:00:00Z", &t) && t.zoned && t.secs == 946684800);
	CHECK(ts_of("2000-01-01T05:30:00+05:30", &t) && t.zoned && t.secs == 946684800);
	CHECK(ts_of("2000-01-01T05:30:00+0530", &t) && t.zoned && t.secs == 946684800);
	CHECK(ts_of("1999-12-31T22:00:00-02", &t) && t.zoned && t.secs == 946684800);
	CHECK(ts_of("2000-01-01T00:00:00.123456789z", &t) && t.nanos == 123456789 && t.digits == 9);
	CHECK(!ts_of("2000-01-01T00:00:00.1234567891", &t)); /* 10 fraction digits */
	CHECK(!ts_of("2000-01-01T00:00:00.", &t));
	CHECK(!ts_of("2000-01-01T00:00:00+", &t));
	CHECK(!ts_of("2000-01-01T00:00:00+5", &t));
	CHECK(!ts_of("2000-01-01T00:00:00+05:3", &t));
	CHECK(!ts_of("2000-01-01T00:00:00+24", &t));
	CHECK(!ts_of("2000-01-01T00:00:00+05:60", &t));
	CHECK(!ts_of("2000-01-01T00:00:00 ", &t));
	CHECK(!ts_of("2001-02-29T00:00:00", &t));
	CHECK(!ts_of("2000-01-01T00:00", &t));
	fmt_field naive = { .type = FMT_C_TIMESTAMP, .unit = FMT_TU_US }, utc = naive;
	utc.timezone = "UTC";
	int64_t v;
	CHECK(fmt_tv_timestamp_as("1970-01-01T00:00:01.5", 21, &naive, &v) && v == 1500000);
	CHECK(!fmt_tv_timestamp_as("1970-01-01T00:00:01.5", 21, &utc, &v));
	CHECK(fmt_tv_timestamp_as("1970-01-01T00:00:01Z", 20, &utc, &v) && v == 1000000);
	CHECK(!fmt_tv_timestamp_as("1970-01-01T00:00:01Z", 20, &naive, &v));
	/* int64 nanoseconds end to end: the first second's secs * 10^9 alone is below INT64_MIN */
	CHECK(fmt_tv_to_unit(-9223372037, 145224192, FMT_TU_NS, &v) && v == INT64_MIN);
	CHECK(!fmt_tv_to_unit(-9223372037, 145224191, FMT_TU_NS, &v));
	CHECK(fmt_tv_to_unit(-9223372037, 999999999, FMT_TU_NS, &v) && v == INT64_MIN + 854775807);
	CHECK(fmt_tv_to_unit(9223372036, 854775807, FMT_TU_NS, &v) && v == INT64_MAX);
	CHECK(!fmt_tv_to_unit(9223372036, 854775808, FMT_TU_NS, &v));
	CHECK(fmt_tv_to_unit(-1, 500000000, FMT_TU_MS, &v) && v == -500);
	CHECK(fmt_tv_to_unit(-1, 999, FMT_TU_MS, &v) && v == -1000); /* below the unit: truncated as before */
	CHECK(fmt_tv_to_unit(-9223372036854775807 - 1, 0, FMT_TU_S, &v) && v == INT64_MIN);
}

/* fmt_tv_date, the one date parser of the CSV reader and --where. */
static int date_of(const char *s, int32_t *days)
{
	return fmt_tv_date(s, strlen(s), days);
}

TEST(textval_dates)
{
	int32_t d;
	CHECK(date_of("1970-01-01", &d) && d == 0);
	CHECK(date_of("1969-12-31", &d) && d == -1);
	CHECK(date_of("2000-02-29", &d) && d == 11016);
	CHECK(date_of("0000-02-29", &d) && d == -719469);  /* year 0 is a leap year: 0000-03-01 is -719468 */
	CHECK(date_of("0000-01-01", &d) && d == -719528);
	CHECK(date_of("9999-12-31", &d) && d == 2932896);
	/* years ISO 8601 expands, as cell.c writes them: the ends of what a date32 holds */
	CHECK(date_of("10000-01-01", &d) && d == 2932897);
	CHECK(date_of("-0001-12-31", &d) && d == -719529);
	CHECK(date_of("-0001-01-01", &d) && d == -719893);
	CHECK(date_of("5881580-07-11", &d) && d == INT32_MAX);
	CHECK(date_of("-5877641-06-23", &d) && d == INT32_MIN);
	static const char *const bad[] = {
		"1900-02-29", "2023-02-29", "2024-02-30", "2024-04-31", "2024-13-01", "2024-00-10",
		"2024-01-00", "2024-1-011", "+024-01-01", "2024/01/01", "2024-01-1x", " 2024-01-01",
		"2024-01-01 ", "2024-01-01T00:00:00", "", "+10000-01-01", "010000-01-01", "-0000-01-01",
		"-001-01-01", "--0001-01-01", "-0003-02-29", "5881580-07-12", "-5877641-06-22",
		"12345678-01-01", "-",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(!date_of(bad[i], &d));
}

/* The type inference makes of the values (NULL-terminated). */
static fmt_ctype inferred(const char *const *values, const char **zone)
{
	fmt_tv_infer inf;
	fmt_field f = { 0 };
	fmt_tv_infer_init(&inf);
	for (; *values; values++)
		fmt_tv_infer_add(&inf, *values, strlen(*values));
	fmt_tv_infer_field(&inf, &f);
	if (zone)
		*zone = f.timezone;
	return f.type;
}

TEST(textval_inference)
{
	const char *zone = "x";
	CHECK(inferred((const char *[]){ "-9223372036854775808", "9223372036854775807", NULL }, NULL) == FMT_C_I64);
	CHECK(inferred((const char *[]){ "0", "18446744073709551615", NULL }, NULL) == FMT_C_U64);
	CHECK(inferred((const char *[]){ "-1", "18446744073709551615", NULL }, NULL) == FMT_C_UTF8);
	CHECK(inferred((const char *[]){ "-0", "18446744073709551615", NULL }, NULL) == FMT_C_UTF8);
	CHECK(inferred((const char *[]){ "+0", "18446744073709551615", NULL }, NULL) == FMT_C_U64);
	CHECK(inferred((const char *[]){ "18446744073709551616", NULL }, NULL) == FMT_C_UTF8);
	CHECK(inferred((const char *[]){ "1", "0.5", NULL }, NULL) == FMT_C_F64);
	CHECK(inferred((const char *[]){ "18446744073709551616", "1e3", NULL }, NULL) == FMT_C_F64);
	CHECK(inferred((const char *[]){ "2000-01-01 00:00:00", "2000-01-01T00:00:00.5", NULL }, &zone) ==
	      FMT_C_TIMESTAMP && zone == NULL);
	CHECK(inferred((const char *[]){ "2000-01-01T00:00:00Z", "2000-01-01T00:00:00+01", NULL }, &zone) ==
	      FMT_C_TIMESTAMP && zone && strcmp(zone, "UTC") == 0);
	CHECK(inferred((const char *[]){ "2000-01-01T00:00:00Z", "2000-01-01T00:00:00", NULL }, NULL) == FMT_C_UTF8);
}
