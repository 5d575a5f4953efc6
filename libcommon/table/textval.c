/* Text values: booleans, integers, floats and RFC 3339 timestamps. */
#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/half.h"
#include "fmt/shortest.h"
#include "fmt/textval.h"

int fmt_tv_bool(const char *s, size_t n, int *v)
{
	if ((n == 4 && (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) || !memcmp(s, "TRUE", 4)))) {
		*v = 1;
		return 1;
	}
	if ((n == 5 && (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) || !memcmp(s, "FALSE", 5)))) {
		*v = 0;
		return 1;
	}
	return 0;
}

/* Whether s[0..8) are all digits, without a branch per byte. */
static inline int all_digits8(uint64_t x)
{
	return (x & 0xF0F0F0F0F0F0F0F0u) == 0x3030303030303030u &&
	       ((x + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) == 0x3030303030303030u;
}

/* s[0..8) with s[0] in the lowest byte (one load: gcc merges fmt_rd_u64's bytes). */
static inline uint64_t load8(const char *s)
{
	return fmt_rd_u64((const uint8_t *)s);
}

/* The value of eight digits (the first in the lowest byte): pairs, then fours, then all. */
static inline uint64_t value8(uint64_t x)
{
	x = (x & 0x0F0F0F0F0F0F0F0Fu) * 2561 >> 8;
	x = (x & 0x00FF00FF00FF00FFu) * 6553601 >> 16;
	return (x & 0x0000FFFF0000FFFFu) * 42949672960001u >> 32;
}

/* s[0..8) as digits into *v when they all are. */
static inline int take8(const char *s, uint64_t *v)
{
	uint64_t x = load8(s);
	if (!all_digits8(x))
		return 0;
	*v = value8(x);
	return 1;
}

static inline uint64_t load4(const char *s)
{
	return fmt_rd_u32((const uint8_t *)s);
}

/* s[0..n), 1 <= n <= 8, as the last n bytes of a word whose first 8 - n bytes are '0' (the
 * first byte lowest, as load8): value8 of it is the value of the n digits. Reads only s[0..n),
 * with two overlapping four-byte loads from four bytes on. */
static inline uint64_t load_padded(const char *s, size_t n)
{
	const uint64_t zeros = 0x3030303030303030u;
	if (n == 8)
		return load8(s);
	uint64_t x = zeros >> (8 * n);
	if (n >= 4)
		return x | load4(s + n - 4) << 32 | load4(s) << (8 * (8 - n));
	for (size_t k = 0; k < n; k++)
		x |= (uint64_t)(unsigned char)s[k] << (8 * (8 - n + k));
	return x;
}

/* Whether s[0..n), 1 <= n, are all digits, eight at a time as digits_value reads them. */
static inline int all_digits(const char *s, size_t n)
{
	size_t i = (n - 1) % 8 + 1;
	if (!all_digits8(load_padded(s, i)))
		return 0;
	for (; i < n; i += 8)
		if (!all_digits8(load8(s + i)))
			return 0;
	return 1;
}

/* The value of the digits s[0..n), 1 <= n <= 19 (below 10^19 < 2^64), eight at a time: the
 * first (n - 1) % 8 + 1 padded to eight, then whole words. 0 when one is not a digit. */
static inline int digits_value(const char *s, size_t n, uint64_t *v)
{
	size_t i = (n - 1) % 8 + 1;
	uint64_t x = load_padded(s, i), acc;
	if (!all_digits8(x))
		return 0;
	for (acc = value8(x); i < n; i += 8) {
		x = load8(s + i);
		if (!all_digits8(x))
			return 0;
		acc = acc * 100000000u + value8(x);
	}
	*v = acc;
	return 1;
}

int fmt_tv_int64(const char *s, size_t n, int64_t *v)
{
	size_t i = 0;
	int neg = 0;
	uint64_t acc = 0;
	if (n && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n || n - i > 19 || !digits_value(s + i, n - i, &acc))
		return 0;
	if (acc > (uint64_t)INT64_MAX + (uint64_t)neg)
		return 0;
	*v = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return 1;
}

int fmt_tv_uint64(const char *s, size_t n, uint64_t *v)
{
	size_t i = n && s[0] == '+';
	uint64_t acc = 0;
	if (i == n || n - i > 20)
		return 0;
	for (; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (d > 9 || __builtin_mul_overflow(acc, 10, &acc) || __builtin_add_overflow(acc, d, &acc))
			return 0;
	}
	*v = acc;
	return 1;
}

/* The exponent at s[*i..n) when one starts there ([eE][+-]digits, at most 4 digits) into *exp,
 * *i past it; 0 when it is malformed or longer. */
static inline int exponent(const char *s, size_t n, size_t *i, int *exp)
{
	int eneg = 0, ed = 0;
	*exp = 0;
	if (*i == n || (s[*i] != 'e' && s[*i] != 'E'))
		return 1;
	if (++*i < n && (s[*i] == '-' || s[*i] == '+'))
		eneg = s[(*i)++] == '-';
	for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; ++*i)
		if (++ed > 4)
			return 0;
		else
			*exp = *exp * 10 + (s[*i] - '0');
	if (eneg)
		*exp = -*exp;
	return ed != 0;
}

/* m * 10^exp (negated when neg), m of digits significant digits: Clinger's exact case first (at
 * most 15 digits, so m is exact in a double, and |exp| <= 22, so 10^|exp| is exact: m * 10^exp
 * or m / 10^-exp is one correctly rounded operation), else the tabled powers of ten of
 * fmt_decimal_f64 (0 when the value is not clear-cut). */
static inline int decimal_value(uint64_t m, int digits, int exp, int neg, double *v)
{
#if FLT_EVAL_METHOD == 0
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
					1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	if (digits <= 15 && exp >= -22 && exp <= 22) {
		double d = (double)m;
		d = exp < 0 ? d / pow10[-exp] : d * pow10[exp];
		*v = neg ? -d : d;
		return 1;
	}
#else
	(void)digits;
#endif
	return fmt_decimal_f64(m, exp, neg, v);
}

/* float_fast for more than 19 digits, leading zeros skipped one by one: at most 19 significant
 * digits. */
static int float_long(const char *s, size_t n, double *v)
{
	size_t i = 0;
	int neg = 0, digits = 0, frac = 0, exp = 0, any = 0;
	uint64_t m = 0;
	uint64_t d8;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
		/* past the leading zeros, eight digits at once while 19 are not exceeded */
		while (m && digits <= 11 && n - i >= 8 && take8(s + i, &d8))
			m = m * 100000000u + d8, digits += 8, i += 8;
		if (i == n || s[i] < '0' || s[i] > '9')
			break;
		if (m || s[i] != '0') {
			m = m * 10 + (uint64_t)(s[i] - '0');
			if (++digits > 19)
				return 0;
		}
	}
	if (i < n && s[i] == '.')
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, any = 1) {
			while (m && digits <= 11 && n - i >= 8 && take8(s + i, &d8))
				m = m * 100000000u + d8, digits += 8, frac += 8, i += 8;
			if (i == n || s[i] < '0' || s[i] > '9')
				break;
			frac++;
			if (m || s[i] != '0') {
				m = m * 10 + (uint64_t)(s[i] - '0');
				if (++digits > 19)
					return 0;
			}
		}
	if (!any || !exponent(s, n, &i, &exp) || i != n)
		return 0;
	return decimal_value(m, digits, exp - frac, neg, v);
}

/* The digits from s[*i] on onto *m (which wraps past 19 digits), eight at once while there
 * are eight; how many. */
static inline size_t digit_run(const char *s, size_t n, size_t *i, uint64_t *m)
{
	size_t from = *i;
	for (uint64_t d8; n - *i >= 8 && take8(s + *i, &d8); *i += 8)
		*m = *m * 100000000u + d8;
	for (; *i < n && s[*i] >= '0' && s[*i] <= '9'; ++*i)
		*m = *m * 10 + (uint64_t)(s[*i] - '0');
	return *i - from;
}

/* [+-]digits[.digits][e[+-]digits] with at most 19 significant digits, without strtod: the
 * digits eight at a time while there are eight, at most 19 of them with the leading zeros (else
 * float_long), then decimal_value. 0 when the text is not that simple or the value not
 * clear-cut; strtod decides then. */
static int float_fast(const char *s, size_t n, double *v)
{
	size_t i = 0, digits;
	int neg = 0, exp;
	uint64_t m = 0;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	digits = digit_run(s, n, &i, &m);
	size_t frac = 0;
	if (i < n && s[i] == '.') {
		i++;
		frac = digit_run(s, n, &i, &m);
	}
	if (digits + frac == 0 || !exponent(s, n, &i, &exp) || i != n)
		return 0;
	if (digits + frac > 19)
		return float_long(s, n, v);
	return decimal_value(m, m ? fmt_digit_count(m) : 0, exp - (int)frac, neg, v);
}

int fmt_tv_float(const char *s, size_t n, double *v)
{
	char buf[128];
	if (n == 0 || n >= sizeof buf) /* type inference relies on this bound: keep it first */
		return 0;
	if (float_fast(s, n, v))
		return 1;
	/* decimal only: no hex floats, no leading/trailing space */
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' ||
		      c == 'n' || c == 'a' || c == 'N' || c == 'i' || c == 'f' || c == 'I' || c == 'F' ||
		      c == 't' || c == 'y' || c == 'T' || c == 'Y'))
			return 0;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *end;
	errno = 0;
	double d = strtod(buf, &end);
	if (end != buf + n || (errno == ERANGE && isinf(d)))
		return 0;
	*v = d;
	return 1;
}

/* |x| as the bits of a float16 or float32 magnitude (rounded to nearest even), and back; the
 * infinity's bits (and above) stand for the power of two past the largest finite value, where
 * rounding to nearest starts to give infinity. */
static uint32_t narrow_mag(fmt_ctype t, double a)
{
	return t == FMT_C_F16 ? fmt_f64_to_f16(a) & 0x7FFFu : fmt_f32_bits((float)a);
}

static double narrow_mag_value(fmt_ctype t, uint32_t mag)
{
	if (t == FMT_C_F16)
		return mag >= 0x7C00u ? 0x1p16 : (double)fmt_f16_to_f32((uint16_t)mag);
	return mag >= 0x7F800000u ? 0x1p128 : (double)fmt_bits_f32(mag);
}

/* The sign of x - m, x the decimal s[0..n) (n < 128, as fmt_tv_float read it) and m the float64
 * nearest it: the float64 above or equal to x is above m when x is, the one below or equal below
 * m when x is; x == m when both are m. */
static int decimal_side(const char *s, size_t n, double m)
{
	char buf[128];
	memcpy(buf, s, n);
	buf[n] = '\0';
	int mode = fegetround();
	fesetround(FE_UPWARD);
	double up = strtod(buf, NULL);
	fesetround(FE_DOWNWARD);
	double down = strtod(buf, NULL);
	fesetround(mode);
	return up > m ? 1 : down < m ? -1 : 0;
}

double fmt_tv_float_narrowable(const char *s, size_t n, double d, fmt_ctype t)
{
	if ((t != FMT_C_F16 && t != FMT_C_F32) || !isfinite(d) || n >= 128)
		return d;
	double a = fabs(d);
	uint32_t mag = narrow_mag(t, a);
	double r = narrow_mag_value(t, mag);
	if (r == a)
		return d;   /* exact */
	double other = narrow_mag_value(t, a > r ? mag + 1 : mag - 1);
	if (2 * a != r + other)
		return d;   /* not halfway: d and the decimal round alike */
	int side = decimal_side(s, n, d);
	return side > 0 ? nextafter(d, INFINITY) : side < 0 ? nextafter(d, -INFINITY) : d;
}

int fmt_tv_nonfinite(const char *s, size_t n, double *v)
{
	static const struct { const char *text; double value; } names[] = {
		{ "NaN", NAN }, { "inf", INFINITY }, { "-inf", -INFINITY },
		{ "Infinity", INFINITY }, { "-Infinity", -INFINITY },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i].text) == n && memcmp(s, names[i].text, n) == 0) {
			*v = names[i].value;
			return 1;
		}
	return 0;
}

/* Whether s is a plain decimal float by its syntax alone ([+-] digits [. digits] [e [+-]
 * digits], at least one digit); 1 yes, 0 no, -1 when only strtod can tell (nan, inf, an
 * exponent that could overflow). Type inference calls this instead of converting. */
static inline __attribute__((always_inline)) int float_syntax(const char *s, size_t n)
{
	size_t i = 0, digits_seen = 0, exp_digits = 0;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	while (n - i >= 8 && all_digits8(load8(s + i)))
		i += 8, digits_seen += 8;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++, digits_seen++;
	if (i < n && s[i] == '.') {
		i++;
		while (n - i >= 8 && all_digits8(load8(s + i)))
			i += 8, digits_seen += 8;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++, digits_seen++;
	}
	if (!digits_seen)
		return i < n && (s[i] == 'n' || s[i] == 'N' || s[i] == 'i' || s[i] == 'I') ? -1 : 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++, exp_digits++;
		if (!exp_digits)
			return 0;
		if (exp_digits > 2)
			return i == n ? -1 : 0;
	}
	if (digits_seen > 300)
		return i == n ? -1 : 0; /* could overflow: let strtod say */
	return i == n;
}

static int digits(const char *s, int n, int *out)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 1;
}

/* The zone after a timestamp's time at s[0..n): Z, or +hh:mm, +hhmm, +hh (or -) as seconds east
 * of UTC; how many bytes it took, 0 when none is there, -1 when what is there is not a zone. */
static int zone(const char *s, size_t n, int *east)
{
	int oh, om = 0, len = 3;
	*east = 0;
	if (n == 0)
		return 0;
	if (s[0] == 'Z' || s[0] == 'z')
		return 1;
	if ((s[0] != '+' && s[0] != '-') || n < 3 || !digits(s + 1, 2, &oh) || oh > 23)
		return -1;
	if (n >= 6 && s[3] == ':' && digits(s + 4, 2, &om))
		len = 6;
	else if (n >= 5 && digits(s + 3, 2, &om))
		len = 5;
	if (om > 59)
		return -1;
	*east = (s[0] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
	return len;
}

/* The year at the start of s[0..n): 4 digits, or more without a leading zero (years after
 * 9999), after a '-' for years before 0000 (ISO 8601's expanded years, as date_text in cell.c
 * writes them); at most 7 digits, more than a date32 holds. How many bytes it took, 0 when none. */
static size_t year(const char *s, size_t n, int64_t *y)
{
	size_t i = n > 0 && s[0] == '-', first = i;
	int64_t v = 0;
	for (; i < n && i - first < 8 && s[i] >= '0' && s[i] <= '9'; i++)
		v = v * 10 + (s[i] - '0');
	size_t nd = i - first;
	if (nd < 4 || nd > 7 || (nd > 4 && s[first] == '0') || (first && v == 0))
		return 0;
	*y = first ? -v : v;
	return i;
}

/* The date at the start of s[0..n) as YYYY-MM-DD (the year as year() reads it), a day of the
 * proleptic Gregorian calendar (February 29 in leap years only), as days since 1970-01-01; how
 * many bytes it took, 0 when it is not one. */
static size_t civil_date(const char *s, size_t n, int64_t *days)
{
	int64_t y;
	int mo, d;
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	size_t i = year(s, n, &y);
	if (!i || n - i < 6 || s[i] != '-' || !digits(s + i + 1, 2, &mo) || s[i + 3] != '-' ||
	    !digits(s + i + 4, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1])
		return 0;
	if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 0;
	*days = fmt_days_from_civil(y, (unsigned)mo, (unsigned)d);
	return i + 6;
}

int fmt_tv_date(const char *s, size_t n, int32_t *days)
{
	int64_t v;
	size_t at = civil_date(s, n, &v);
	if (!at || at != n || v < INT32_MIN || v > INT32_MAX)
		return 0;
	*days = (int32_t)v;
	return 1;
}

int fmt_tv_timestamp(const char *s, size_t n, fmt_tv_time *t)
{
	int h, mi, se, east;
	int64_t days;
	size_t at = civil_date(s, n, &days), i = at + 9;
	if (!at || n < i || (s[at] != 'T' && s[at] != 't' && s[at] != ' ') ||
	    !digits(s + at + 1, 2, &h) || s[at + 3] != ':' || !digits(s + at + 4, 2, &mi) ||
	    s[at + 6] != ':' || !digits(s + at + 7, 2, &se) || h > 23 || mi > 59 || se > 60)
		return 0;
	uint32_t frac = 0;
	int nd = 0;
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			if (nd == 9)
				return 0;
			frac = frac * 10 + (uint32_t)(s[i] - '0');
			nd++;
		}
		if (nd == 0)
			return 0;
	}
	for (int k = nd; k < 9; k++)
		frac *= 10;
	int zlen = zone(s + i, n - i, &east);
	if (zlen < 0 || i + (size_t)zlen != n)
		return 0;
	t->secs = days * 86400 + h * 3600 + mi * 60 + se - east;
	t->nanos = frac;
	t->digits = nd;
	t->zoned = zlen > 0;
	return 1;
}

int fmt_tv_timestamp_as(const char *s, size_t n, const fmt_field *f, int64_t *out)
{
	fmt_tv_time t;
	return fmt_tv_timestamp(s, n, &t) && t.zoned == (f->timezone != NULL) &&
	       fmt_tv_to_unit(t.secs, t.nanos, f->unit, out);
}

fmt_time_unit fmt_tv_unit_for_digits(int d)
{
	return d == 0 ? FMT_TU_S : d <= 3 ? FMT_TU_MS : d <= 6 ? FMT_TU_US : FMT_TU_NS;
}

/* A negative second with a fraction is taken as the next second less the rest of it: the
 * earliest second of int64 nanoseconds (1677-09-21T00:12:43.145224192) has secs * 10^9 below
 * INT64_MIN though the sum is not. */
int fmt_tv_to_unit(int64_t secs, uint32_t nanos, fmt_time_unit unit, int64_t *out)
{
	static const int64_t per[] = { 1, 1000, 1000000, 1000000000 };
	int64_t v, part = (int64_t)nanos / (1000000000 / per[unit]);
	if (secs < 0 && part > 0) {
		secs++;
		part -= per[unit];
	}
	if (__builtin_mul_overflow(secs, per[unit], &v) || __builtin_add_overflow(v, part, &v))
		return 0;
	*out = v;
	return 1;
}

void fmt_tv_infer_init(fmt_tv_infer *t)
{
	memset(t, 0, sizeof *t);
	t->can = TV_BOOL | TV_INT | TV_UINT | TV_FLOAT | TV_TIME;
}

/* [+-]digits and nothing else. */
static int integer_literal(const char *s, size_t n)
{
	size_t i = n && (s[0] == '-' || s[0] == '+');
	if (i == n)
		return 0;
	for (; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Whether s leaves t as it is, for the columns whose type is as good as settled: booleans,
 * integers that no timestamp or boolean can be, numbers with a fraction seen. */
static inline int changes_nothing(const fmt_tv_infer *t, const char *s, size_t n)
{
	int b;
	size_t neg;
	switch (t->can) {
	case TV_BOOL:
		return fmt_tv_bool(s, n, &b);
	case TV_FLOAT:
		return t->real && float_syntax(s, n) == 1;
	case TV_INT | TV_FLOAT: /* [-]digits, at most 18 (below 10^18: an int64 whatever they are) */
		neg = n && s[0] == '-';
		return n > neg && n - neg <= 18 && all_digits(s + neg, n - neg);
	case TV_INT | TV_UINT | TV_FLOAT:
		return n && n <= 18 && all_digits(s, n);
	default:
		return 0;
	}
}

static void infer_add_slow(fmt_tv_infer *t, const char *s, size_t n);

void fmt_tv_infer_add(fmt_tv_infer *t, const char *s, size_t n)
{
	if (changes_nothing(t, s, n))
		t->seen = 1;
	else
		infer_add_slow(t, s, n);
}

__attribute__((noinline)) static void infer_add_slow(fmt_tv_infer *t, const char *s, size_t n)
{
	int b;
	int64_t i = 0;
	uint64_t u;
	double d;
	fmt_tv_time tm;
	t->seen = 1;
	if ((t->can & TV_BOOL) && !fmt_tv_bool(s, n, &b))
		t->can &= ~(unsigned)TV_BOOL;
	int is_int64 = (t->can & (TV_INT | TV_UINT)) && fmt_tv_int64(s, n, &i);
	if ((t->can & TV_INT) && !is_int64)
		t->can &= ~(unsigned)TV_INT;
	/* as fmt_tv_uint64 reads it: no sign but + */
	if ((t->can & TV_UINT) && !(is_int64 ? i >= 0 && s[0] != '-' : fmt_tv_uint64(s, n, &u)))
		t->can &= ~(unsigned)TV_UINT;
	/* an int64 literal is float syntax and not "real": nothing to learn about floats */
	if ((t->can & TV_FLOAT) && !is_int64) {
		int syn = float_syntax(s, n);
		if (syn == 0 || (syn < 0 && !fmt_tv_float(s, n, &d)))
			t->can &= ~(unsigned)TV_FLOAT;
		else if (!t->real)
			t->real = !integer_literal(s, n);
	}
	if (t->can & TV_TIME) {
		if (!fmt_tv_timestamp(s, n, &tm)) {
			t->can &= ~(unsigned)TV_TIME;
		} else {
			t->zoned |= tm.zoned;
			t->unzoned |= !tm.zoned;
			if (tm.digits > t->digits)
				t->digits = tm.digits;
			if (t->zoned && t->unzoned) /* instants and wall-clock times: no one type holds both */
				t->can &= ~(unsigned)TV_TIME;
		}
	}
}

/* What fmt_tv_infer_add tracks only while a type is still possible is taken from later only
 * then: later saw its values while the type was possible for it, which one pass would have too. */
void fmt_tv_infer_merge(fmt_tv_infer *t, const fmt_tv_infer *later)
{
	if (t->can & TV_FLOAT)
		t->real |= later->real;
	if (t->can & TV_TIME) {
		t->zoned |= later->zoned;
		t->unzoned |= later->unzoned;
		if (later->digits > t->digits)
			t->digits = later->digits;
	}
	t->seen |= later->seen;
	t->nulls |= later->nulls;
	t->can &= later->can;
	if (t->zoned && t->unzoned)
		t->can &= ~(unsigned)TV_TIME;
}

void fmt_tv_infer_field(const fmt_tv_infer *t, fmt_field *f)
{
	f->nullable = t->nulls != 0;
	f->timezone = NULL;
	if (!t->seen)
		f->type = FMT_C_UTF8;
	else if (t->can & TV_BOOL)
		f->type = FMT_C_BOOL;
	else if (t->can & TV_INT)
		f->type = FMT_C_I64;
	else if (t->can & TV_UINT)
		f->type = FMT_C_U64;
	else if ((t->can & TV_FLOAT) && t->real)
		f->type = FMT_C_F64;
	else if (t->can & TV_TIME) {
		f->type = FMT_C_TIMESTAMP;
		f->unit = fmt_tv_unit_for_digits(t->digits);
		f->timezone = t->zoned ? "UTC" : NULL;
	} else
		f->type = FMT_C_UTF8;
}
