/* fmt_shortest_f64 / fmt_shortest_f32 against the definition of Python's repr: the fewest
 * digits that read back to the value, of those the nearest (reference() below: snprintf's
 * correctly rounded digits and strtod / strtof), laid out as Python's repr lays out a float, on
 * special values, subnormals, powers of two and ten, integers, and millions of random values
 * from a fixed seed. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include "fmt/half.h"
#include "fmt/shortest.h"
#include "fmt/textval.h"
#include "unit.h"

/* Whether TEXT reads back to V (as a double, or as a float: strtof, one rounding). */
static int reads_back(const char *text, double v, int is_f32)
{
	return is_f32 ? strtof(text, NULL) == (float)v : strtod(text, NULL) == v;
}

/* M 10^E10 (M > 0) in Python repr's layout: positional with a point when the leading digit's
 * exponent is in [-4, 16), "1.5e-05" otherwise. */
static void layout(int negative, uint64_t m, int e10, char *buf, size_t n)
{
	char digits[32];
	while (m % 10 == 0)
		m /= 10, e10++;
	int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)m), x10 = e10 + nd - 1;
	const char *sign = negative ? "-" : "";
	if (x10 < -4 || x10 >= 16)
		snprintf(buf, n, "%s%c%s%.*se%c%02d", sign, digits[0], nd > 1 ? "." : "", nd - 1, digits + 1,
			 x10 < 0 ? '-' : '+', abs(x10));
	else if (x10 < 0)
		snprintf(buf, n, "%s0.%.*s%s", sign, -x10 - 1, "0000", digits);
	else if (nd > x10 + 1)
		snprintf(buf, n, "%s%.*s.%s", sign, x10 + 1, digits, digits + x10 + 1);
	else
		snprintf(buf, n, "%s%s%.*s.0", sign, digits, x10 + 1 - nd, "0000000000000000");
}

/* |V|'s nearest P-digit decimal M 10^E10 (printf's "%.(P-1)e", rounding half to even). */
static void nearest_digits(double v, int p, uint64_t *m, int *e10)
{
	char e[64];
	snprintf(e, sizeof e, "%.*e", p - 1, fabs(v));
	*m = 0;
	for (const char *c = e; *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			*m = 10 * *m + (uint64_t)(*c - '0');
	*e10 = atoi(strchr(e, 'e') + 1) - (p - 1);
}

/* Python's repr of a double (numpy's of a float32) by its definition: the fewest digits P such
 * that a P-digit decimal reads back, of those the nearest to V. Tried for P = 1, 2, ...: the
 * nearest P-digit decimal, and when it does not read back its neighbour on V's other side (a
 * power of two's rounding interval reaches twice as far above V as below, so that neighbour
 * can be inside when the nearer one is not; no other P-digit decimal can be). */
static void reference(double v, int is_f32, char *buf, size_t n)
{
	char t[64];
	if (isnan(v) || isinf(v)) {
		snprintf(buf, n, isnan(v) ? "NaN" : v < 0 ? "-inf" : "inf");
		return;
	}
	if (v == 0) {
		snprintf(buf, n, "%s0.0", signbit(v) ? "-" : "");
		return;
	}
	for (int p = 1;; p++) {
		uint64_t m, pow_p = 1;
		int e10;
		for (int i = 1; i < p; i++)
			pow_p *= 10;
		nearest_digits(v, p, &m, &e10);
		snprintf(t, sizeof t, "%llue%d", (unsigned long long)m, e10);
		if (!reads_back(t, fabs(v), is_f32)) {
			if (strtod(t, NULL) < fabs(v)) {
				if (++m == 10 * pow_p)
					m = pow_p, e10++;
			} else if (m-- == pow_p) {
				m = 10 * pow_p - 1, e10--;
			}
			snprintf(t, sizeof t, "%llue%d", (unsigned long long)m, e10);
			if (!reads_back(t, fabs(v), is_f32))
				continue;
		}
		layout(signbit(v) != 0, m, e10, buf, n);
		return;
	}
}

/* The significant digits of TEXT: its mantissa's digits after the leading zeros and before the
 * trailing ones (1 for a zero). */
static int significant_digits(const char *text)
{
	int digits = 0, leading = 1, zeros = 0;
	for (const char *c = text; *c && *c != 'e'; c++) {
		if (*c < '0' || *c > '9')
			continue;
		leading = leading && *c == '0';
		digits += !leading;
		zeros = *c == '0' ? zeros + !leading : 0;
	}
	return digits - zeros ? digits - zeros : 1;
}

/* What the reference gives for V, in two conversions instead of its search when V is not a
 * power of two (its rounding interval symmetric: a P-digit decimal reads back iff the nearest
 * does, and then every longer nearest does) and TEXT (the answer under test) has the right
 * number of digits D: the nearest D-digit decimal reads back and the nearest (D-1)-digit one
 * does not. Otherwise the search itself. */
static void expected(double v, int is_f32, const char *text, char *buf, size_t n)
{
	int d = significant_digits(text), e10;
	uint64_t m;
	double significand = frexp(fabs(v), &e10);
	if (isfinite(v) && v != 0 && significand != 0.5 && d <= (is_f32 ? 9 : 17)) {
		char t[64];
		int shorter = 0;
		if (d > 1) {
			nearest_digits(v, d - 1, &m, &e10);
			snprintf(t, sizeof t, "%llue%d", (unsigned long long)m, e10);
			shorter = reads_back(t, fabs(v), is_f32);
		}
		nearest_digits(v, d, &m, &e10);
		snprintf(t, sizeof t, "%llue%d", (unsigned long long)m, e10);
		if (!shorter && reads_back(t, fabs(v), is_f32)) {
			layout(signbit(v) != 0, m, e10, buf, n);
			return;
		}
	}
	reference(v, is_f32, buf, n);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rng_next(void)
{
	uint64_t x = rng_state; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Du;
}

static int mismatches;

static void same_f64(double v)
{
	char got[FMT_SHORTEST_MAX], want[64];
	size_t n = fmt_shortest_f64(v, got);
	expected(v, 0, got, want, sizeof want);
	if (n != strlen(got) || strcmp(got, want) || (!isnan(v) && strtod(got, NULL) != v)) {
		if (mismatches++ < 10)
			CHECK_STR(got, want);
		else
			unit_current_failed = 1;
	}
}

static void same_f32(float v)
{
	char got[FMT_SHORTEST_MAX], want[64];
	size_t n = fmt_shortest_f32(v, got);
	expected(v, 1, got, want, sizeof want);
	if (n != strlen(got) || strcmp(got, want) || (!isnan(v) && strtof(got, NULL) != v)) {
		if (mismatches++ < 10)
			CHECK_STR(got, want);
		else
			unit_current_failed = 1;
	}
}

TEST(shortest_special_values)
{
	char b[FMT_SHORTEST_MAX];
	static const struct { double v; const char *text; } cases[] = {
		{ 0.0, "0.0" }, { -0.0, "-0.0" }, { 1.0, "1.0" }, { -1.5, "-1.5" }, { 0.1, "0.1" },
		{ 100.0, "100.0" }, { 123.0, "123.0" }, { 1200.0, "1200.0" }, { 0.0001, "0.0001" },
		{ 0.00001, "1e-05" }, { 1e22, "1e+22" }, { 1e23, "1e+23" }, { 5e-324, "5e-324" },
		{ DBL_MAX, "1.7976931348623157e+308" }, { DBL_MIN, "2.2250738585072014e-308" },
		{ -DBL_MIN, "-2.2250738585072014e-308" }, { 9007199254740993.0, "9007199254740992.0" },
		{ 0.3, "0.3" }, { 2.0 / 3.0, "0.6666666666666666" }, { 1e16, "1e+16" },
		{ 123456789012345680.0, "1.2345678901234568e+17" }, { 0.000123, "0.000123" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_EQ_U64(fmt_shortest_f64(cases[i].v, b), strlen(cases[i].text));
		CHECK_STR(b, cases[i].text);
	}
	fmt_shortest_f64(NAN, b);
	CHECK_STR(b, "NaN");
	fmt_shortest_f64(-NAN, b);
	CHECK_STR(b, "NaN");
	fmt_shortest_f64(INFINITY, b);
	CHECK_STR(b, "inf");
	fmt_shortest_f64(-INFINITY, b);
	CHECK_STR(b, "-inf");
	fmt_shortest_f32(0.1f, b);
	CHECK_STR(b, "0.1");
	fmt_shortest_f32(FLT_MAX, b);
	CHECK_STR(b, "3.4028235e+38");
	fmt_shortest_f32(FLT_TRUE_MIN, b);
	CHECK_STR(b, "1e-45");
	fmt_shortest_f32(16777216.0f, b);
	CHECK_STR(b, "16777216.0");
	fmt_shortest_f32(-INFINITY, b);
	CHECK_STR(b, "-inf");
}

/* The edges of the text's layouts and of the digit generation: zeros, subnormals, the largest
 * values, 2^53 and its neighbours, every power of ten in the table's range and the integers
 * around the fixed/exponent switch (up to sixteen trailing zeros of the scaled value go). */
TEST(shortest_edges)
{
	char b[FMT_SHORTEST_MAX];
	static const struct { double v; const char *text; } cases[] = {
		{ 0.0, "0.0" }, { -0.0, "-0.0" },
		{ 4.9406564584124654e-324, "5e-324" }, { -4.9406564584124654e-324, "-5e-324" },
		{ 2.2250738585072009e-308, "2.225073858507201e-308" }, /* largest subnormal */
		{ 1.0e-310, "1e-310" },
		{ -DBL_MAX, "-1.7976931348623157e+308" },
		{ 9007199254740991.0, "9007199254740991.0" }, { 9007199254740992.0, "9007199254740992.0" },
		{ 9007199254740994.0, "9007199254740994.0" }, { -9007199254740991.0, "-9007199254740991.0" },
		{ 18446744073709551616.0, "1.8446744073709552e+19" }, { 9223372036854775808.0, "9.223372036854776e+18" },
		{ -9223372036854775808.0, "-9.223372036854776e+18" },
		{ 1e15, "1000000000000000.0" }, { 123456789012345.0, "123456789012345.0" }, { 1234567890123456.0, "1234567890123456.0" },
		{ 12345678901234567.0, "1.2345678901234568e+16" }, { 1e-4, "0.0001" }, { 1.5e-7, "1.5e-07" },
		{ 733.458, "733.458" }, { 0.001, "0.001" }, { 1000.5, "1000.5" }, { 10.0, "10.0" },
		{ 99.99, "99.99" }, { 1e100, "1e+100" }, { 1e-100, "1e-100" }, { 1.7e308, "1.7e+308" },
		{ 0.1257302210933933, "0.1257302210933933" }, { -0.1321048632913019, "-0.1321048632913019" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_EQ_U64(fmt_shortest_f64(cases[i].v, b), strlen(cases[i].text));
		CHECK_STR(b, cases[i].text);
	}
	for (int k = -323; k <= 308; k++) {
		char t[32];
		snprintf(t, sizeof t, "1e%d", k);
		same_f64(strtod(t, NULL));
		snprintf(t, sizeof t, "7.25e%d", k);
		same_f64(strtod(t, NULL));
	}
	for (double v = 1; v < 1e17; v *= 10) {
		same_f64(v - 1);
		same_f64(v + 1);
		same_f64(v * 1.5);
	}
	for (int e = -1074; e <= 1023; e += 7) {
		same_f64(ldexp(1, e));
		same_f64(-ldexp(1, e));
	}
	/* powers of two whose shortest decimal is not the nearest of its length: Python's repr
	 * (numpy's for float32; printf's "%.Pg" search wrote a digit more) */
	static const struct { int e; const char *text; } pow2[] = {
		{ -1017, "7.120236347223045e-307" }, { -957, "8.209073602596753e-289" },
		{ -808, "5.858190679279809e-244" },
	};
	for (size_t i = 0; i < sizeof pow2 / sizeof pow2[0]; i++) {
		fmt_shortest_f64(ldexp(1, pow2[i].e), b);
		CHECK_STR(b, pow2[i].text);
	}
	static const struct { int e; const char *text; } pow2f[] = {
		{ -96, "1.2621775e-29" }, { 87, "1.5474251e+26" }, { 90, "1.2379401e+27" },
	};
	for (size_t i = 0; i < sizeof pow2f / sizeof pow2f[0]; i++) {
		fmt_shortest_f32(ldexpf(1, pow2f[i].e), b);
		CHECK_STR(b, pow2f[i].text);
	}
	static const struct { uint16_t bits; const char *text; } halves[] = {
		{ 0x7bff, "65500.0" }, { 0x0001, "6e-08" }, { 0x0400, "6.104e-05" }, { 0x068e, "0.0001" },
		{ 0x8000, "-0.0" }, { 0x3c00, "1.0" }, { 0xfc00, "-inf" }, { 0x7e00, "NaN" },
	};
	for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++) {
		CHECK_EQ_U64(fmt_shortest_f16(halves[i].bits, b), strlen(halves[i].text));
		CHECK_STR(b, halves[i].text);
	}
	static const float fcases[] = { 0.0f, -0.0f, 1e-45f, FLT_MIN, FLT_MAX, 16777217.0f, 0.1f, 1e10f };
	for (size_t i = 0; i < sizeof fcases / sizeof fcases[0]; i++)
		same_f32(fcases[i]);
}

TEST(shortest_f64_structured)
{
	mismatches = 0;
	for (int e = -1074; e <= 1023; e++) { /* every power of two, and its neighbours */
		double p = ldexp(1.0, e);
		same_f64(p);
		same_f64(-p);
		same_f64(nextafter(p, 0));
		same_f64(nextafter(p, INFINITY));
	}
	for (int e = -325; e <= 309; e++) { /* powers of ten as read, and their neighbours */
		char t[16];
		snprintf(t, sizeof t, "1e%d", e);
		double p = strtod(t, NULL);
		same_f64(p);
		same_f64(nextafter(p, 0));
		same_f64(nextafter(p, INFINITY));
	}
	for (uint64_t c = 1; c < 20000; c++) { /* the smallest subnormals, the largest below DBL_MAX */
		same_f64(fmt_bits_f64(c));
		same_f64(fmt_bits_f64(0x000FFFFFFFFFFFFFu - c));
		same_f64(fmt_bits_f64(0x7FEFFFFFFFFFFFFFu - c));
	}
	for (int i = -100000; i <= 100000; i++) { /* integers, and short decimals */
		same_f64(i);
		same_f64(i / 1000.0);
		same_f64(i * 1e-7);
	}
	for (int i = 0; i < 1000; i++) /* the integers near 2^53, 2^64 */
		same_f64(9007199254740992.0 + 2.0 * (i - 500)), same_f64(18446744073709551616.0 + 4096.0 * (i - 500));
	CHECK_EQ_U64(mismatches, 0);
}

TEST(shortest_f64_random)
{
	mismatches = 0;
	rng_state = 0x9E3779B97F4A7C15u;
	for (int i = 0; i < 1000000; i++) {
		uint64_t bits = rng_next();
		if (((bits >> 52) & 0x7FF) == 0x7FF)
			continue;
		same_f64(fmt_bits_f64(bits));
	}
	for (int i = 0; i < 500000; i++) { /* values of the sizes data holds: uniform in a decade */
		double u = (double)(rng_next() >> 11) * 0x1p-53;
		same_f64(u * pow(10.0, (double)(int)(rng_next() % 40) - 20));
	}
	CHECK_EQ_U64(mismatches, 0);
}

/* fmt_shortest_f64's fast path (values of at most six decimals below 2^28) against the full
 * method, fmt_shortest_f64_schubfach, byte for byte: edges (zeros, subnormals, powers of two,
 * 2^28 and around it, NaN and infinities), every decimal of 0 to 8 places from integers of each
 * size with their neighbours, and random values and bit patterns. */
static int fast_mismatches;

static void same_as_full(double v)
{
	char fast[FMT_SHORTEST_MAX], full[FMT_SHORTEST_MAX];
	size_t n = fmt_shortest_f64(v, fast), m = fmt_shortest_f64_schubfach(v, full);
	if (n != m || strcmp(fast, full)) {
		if (fast_mismatches++ < 10)
			CHECK_STR(fast, full);
		else
			unit_current_failed = 1;
	}
}

static void same_as_full_around(double v)
{
	same_as_full(v);
	same_as_full(-v);
	same_as_full(nextafter(v, 0));
	same_as_full(nextafter(v, INFINITY));
}

TEST(shortest_fast_path_as_full)
{
	static const double edges[] = { 0.0, -0.0, 5e-324, 2.2250738585072009e-308, 2.2250738585072014e-308, 1e-7,
					1e-6, 5e-7, 1.5e-6, 0.1, 0.2, 0.3, 0.015625, 0.5, 1.0, 123456.789, 1e15, 1e16,
					9007199254740993.0, 268435456.0, 268435455.999999, 268435455.5, 134217727.999999,
					99999.999999, 999999.999999, 9.999999, 0.999999, 0.000001, 0.0000015, 1e-5,
					733.458, 508.17, 1e22, DBL_MAX, DBL_MIN };
	fast_mismatches = 0;
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
		same_as_full_around(edges[i]);
	same_as_full(NAN);
	same_as_full(-NAN);
	same_as_full(INFINITY);
	same_as_full(-INFINITY);
	for (int e = -1074; e <= 1023; e++) /* powers of two (the asymmetric intervals) */
		same_as_full_around(ldexp(1.0, e));
	static const double pow10[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8 };
	for (int places = 0; places <= 8; places++) /* short decimals at every scale of the path */
		for (int64_t i = -30000; i <= 30000; i++) {
			same_as_full_around((double)i / pow10[places]);
			same_as_full_around((double)(i * 9973 + 268000000) / pow10[places]);
		}
	rng_state = 0x0123456789ABCDEFu;
	for (int i = 0; i < 1000000; i++) {
		uint64_t r = rng_next();
		int places = (int)(r % 9);
		double m = (double)(rng_next() >> (11 + r % 40)); /* integers of 13 to 53 bits */
		same_as_full_around(m / pow10[places]);
		same_as_full(fmt_bits_f64(rng_next()));
		same_as_full((double)(rng_next() >> 11) * 0x1p-53 * 0x1p29);
	}
	CHECK_EQ_U64(fast_mismatches, 0);
}

TEST(shortest_f32)
{
	mismatches = 0;
	for (int e = -149; e <= 127; e++) {
		float p = ldexpf(1.0f, e);
		same_f32(p);
		same_f32(nextafterf(p, 0));
		same_f32(nextafterf(p, INFINITY));
	}
	for (uint32_t c = 1; c < 100000; c++) {
		same_f32(fmt_bits_f32(c));
		same_f32(fmt_bits_f32(0x7F7FFFFFu - c));
		same_f32((float)c);
		same_f32((float)c / 1000.0f);
	}
	rng_state = 0xD1B54A32D192ED03u;
	for (int i = 0; i < 1000000; i++) {
		uint32_t bits = (uint32_t)(rng_next() >> 32);
		if (((bits >> 23) & 0xFF) == 0xFF)
			continue;
		same_f32(fmt_bits_f32(bits));
	}
	CHECK_EQ_U64(mismatches, 0);
}

/* fmt_tv_float (CSV and JSON Lines numbers) bit for bit against strtod: random decimals of 1 to
 * 19 significant digits over the whole exponent range, the decimals printed for random doubles
 * (shortest, 17 digits), and ties between doubles. */
static int same_as_strtod(const char *text)
{
	double got = 0, want;
	char *end;
	int ok = fmt_tv_float(text, strlen(text), &got);
	want = strtod(text, &end);
	if (!ok)
		return isinf(want) && !*end; /* overflow is refused */
	return !memcmp(&got, &want, sizeof got);
}

TEST(decimal_to_double)
{
	char t[64];
	int bad = 0;
	static const char *cases[] = { "0", "-0", "0.0", "1", "-1.5", "0.1", "1e22", "1e23", "9007199254740993",
				       "9007199254740993.0000", "4.9406564584124654e-324", "2.2250738585072014e-308",
				       "1.7976931348623157e+308", "1.7976931348623159e+308", "123456789012345678",
				       "0.30000000000000004", "5e-324", ".5", "5.", "+7.25e-3", "1E5",
				       "18446744073709551615", "9999999999999999999", "1e-400" };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (!same_as_strtod(cases[i]) && bad++ < 10)
			CHECK_STR(cases[i], "(parsed as strtod does)");
	/* 128 characters or more are not a float, as before the fast path (type inference) */
	char longer[160] = "0.";
	double x;
	memset(longer + 2, '0', 125);
	strcpy(longer + 2 + 124, "1"); /* 127 characters: 1e-125 */
	CHECK(fmt_tv_float(longer, 127, &x) && x == strtod(longer, NULL));
	strcpy(longer + 2 + 125, "1"); /* 128 */
	CHECK(!fmt_tv_float(longer, 128, &x));
	rng_state = 0x243F6A8885A308D3u;
	for (int i = 0; i < 600000; i++) {
		int digits = 1 + (int)(rng_next() % 19), e = (int)(rng_next() % 700) - 350;
		uint64_t m = rng_next() % 10000000000000000000u;
		char d[24];
		snprintf(d, sizeof d, "%019llu", (unsigned long long)m);
		int point = (int)(rng_next() % (uint64_t)(digits + 1));
		snprintf(t, sizeof t, "%s%.*s.%.*se%d", rng_next() & 1 ? "-" : "", point, d + 19 - digits,
			 digits - point, d + 19 - digits + point, e);
		if (!same_as_strtod(t) && bad++ < 10)
			CHECK_STR(t, "(parsed as strtod does)");
	}
	for (int i = 0; i < 400000; i++) {
		uint64_t bits = rng_next() & 0x7FFFFFFFFFFFFFFFu;
		double v = fmt_bits_f64(bits), next = nextafter(v, INFINITY);
		if (!isfinite(next))
			continue;
		snprintf(t, sizeof t, "%.17g", v);
		bad += !same_as_strtod(t);
		fmt_shortest_f64(v, t);
		bad += !same_as_strtod(t);
		snprintf(t, sizeof t, "%.18g", v / 2 + next / 2); /* near the tie */
		bad += !same_as_strtod(t);
	}
	CHECK_EQ_U64(bad, 0);
}
