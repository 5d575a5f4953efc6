/* Shortest round-trip decimals (fmt/shortest.h), after the Schubfach paper.
 *
 * A finite nonzero value is v = c 2^q (c an integer). Every real in its rounding interval
 * [v - 2^q/2, v + 2^q/2] (open when c is odd; the lower half-width is 2^q/4 when c is the
 * smallest normal significand of its binade) reads back as v. Scaled by 10^-k, with k chosen so
 * that the interval is at most 10 units wide, the interval holds at most one multiple of 10
 * and at least one integer: if exactly one of the two multiples of 10 around v lies inside, it
 * is the shortest answer; otherwise the answer is the integer inside next to v (the nearer one
 * when both floor and ceiling are inside). The scaled bounds are computed in units of a quarter
 * with a 126-bit over-approximation g of 10^-k and rounded to odd, which keeps the comparisons
 * exact (the paper's proof). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "fmt/shortest.h"
#include "fmt/strbuf.h"
#include "pow10_table.h"

#define MASK63 ((uint64_t)0x7fffffffffffffff)

/* floor(q log10 2), floor(log10(3/4 2^q)), floor(e log2 10): exact for |q|, |e| <= 1233
 * (scripts/gen-pow10-table checks them against exact arithmetic). */
static int floor_log10_pow2(int q)
{
	return (int)(((int64_t)q * 661971961083) >> 41);
}

static int floor_log10_three_quarters_pow2(int q)
{
	return (int)(((int64_t)q * 661971961083 - 274743187321) >> 41);
}

static int floor_log2_pow10(int e)
{
	return (int)(((int64_t)e * 913124641741) >> 38);
}

/* floor(g cp / 2^127) with g = g1 2^63 + g0, its lowest bit set when the discarded fraction
 * is nonzero (round to odd). */
static uint64_t scale_round_odd(uint64_t g1, uint64_t g0, uint64_t cp)
{
	unsigned __int128 lo = (unsigned __int128)g0 * cp, hi = (unsigned __int128)g1 * cp;
	uint64_t mid = ((uint64_t)hi >> 1) + (uint64_t)(lo >> 64);
	uint64_t whole = (uint64_t)(hi >> 64) + (mid >> 63);
	return whole | (((mid & MASK63) + MASK63) >> 63);
}

/* The shortest decimal f 10^e in the rounding interval of c 2^q, the nearest of them to the
 * value; asym: c is the smallest normal significand and q is not the least exponent (the
 * interval reaches only 2^q/4 below: the same steps find its shortest, the paper's proof). */
static void to_decimal(uint64_t c, int q, int asym, uint64_t *f, int *e)
{
	uint64_t odd = c & 1, cb = c << 2, cbr = cb + 2, cbl;
	int k;
	if (asym) {
		cbl = cb - 1;
		k = floor_log10_three_quarters_pow2(q);
	} else {
		cbl = cb - 2;
		k = floor_log10_pow2(q);
	}
	int h = q + floor_log2_pow10(-k) + 2; /* 1..4: cb << h keeps below 2^63 */
	const uint64_t *g = fmt_pow10_g[-k - FMT_POW10_E_MIN];
	uint64_t vb = scale_round_odd(g[0], g[1], cb << h);
	uint64_t vbl = scale_round_odd(g[0], g[1], cbl << h);
	uint64_t vbr = scale_round_odd(g[0], g[1], cbr << h);
	uint64_t s = vb >> 2, sp10 = s / 10 * 10, tp10 = sp10 + 10, t = s + 1;
	*e = k;
	int lower_in = vbl + odd <= sp10 << 2, upper_in = (tp10 << 2) + odd <= vbr;
	if (lower_in != upper_in) {
		*f = lower_in ? sp10 : tp10;
		return;
	}
	lower_in = vbl + odd <= s << 2;
	upper_in = (t << 2) + odd <= vbr;
	if (lower_in != upper_in) {
		*f = lower_in ? s : t;
		return;
	}
	/* both inside: the nearer; a tie goes to the even one */
	uint64_t mid = (s + t) << 1;
	*f = vb < mid || (vb == mid && !(s & 1)) ? s : t;
}

/* f 10^e laid out as Python's repr lays out a float: positional with a point when the leading
 * digit's exponent is in [-4, 16) ("100.0", "0.000123"), else "1e+16", "1.5e-05". */
static size_t put_decimal(char *buf, int negative, uint64_t f, int e)
{
	char *p = buf;
	if (negative)
		*p++ = '-';
	if (f == 0) {
		memcpy(p, "0.0", 4);
		return (size_t)(p + 3 - buf);
	}
	/* the scaled value carries up to 16 trailing zeros: eight at a time first */
	while (f % 100000000u == 0) {
		f /= 100000000u;
		e += 8;
	}
	if (f % 10000 == 0) {
		f /= 10000;
		e += 4;
	}
	if (f % 100 == 0) {
		f /= 100;
		e += 2;
	}
	if (f % 10 == 0) {
		f /= 10;
		e++;
	}
	int n = fmt_digit_count(f);
	int x10 = e + n - 1; /* the exponent of the leading digit */
	if (x10 >= -4 && x10 < 16) {
		if (x10 < 0) {
			memcpy(p, "0.000000", 8); /* "0." and -x10 - 1 zeros; the digits go over the rest */
			p = fmt_put_digits(p + 1 - x10, f, n);
		} else if (n > x10 + 1) {
			/* the digits, then the fraction's one place on for the point (no division by a
			 * power of ten that varies): eight or sixteen bytes moved, inside buf either
			 * way (the point is at most 17 bytes in; at most 9 when sixteen) */
			char *point = p + x10 + 1;
			uint64_t w[2];
			fmt_put_digits(p, f, n);
			if (n - x10 - 1 <= 8) {
				memcpy(w, point, 8);
				memcpy(point + 1, w, 8);
			} else {
				memcpy(w, point, 16);
				memcpy(point + 1, w, 16);
			}
			*point = '.';
			p += n + 1;
		} else { /* an integer: its zeros, and a point so that it reads back as a float */
			p = fmt_put_digits(p, f, n);
			memset(p, '0', (size_t)(x10 + 1 - n));
			p += x10 + 1 - n;
			memcpy(p, ".0", 2);
			p += 2;
		}
	} else {
		fmt_put_digits(p + 1, f, n);
		p[0] = p[1];
		if (n > 1) {
			p[1] = '.';
			p += n + 1;
		} else {
			p++;
		}
		*p++ = 'e';
		*p++ = x10 < 0 ? '-' : '+';
		unsigned a = (unsigned)(x10 < 0 ? -x10 : x10);
		if (a >= 100)
			*p++ = (char)('0' + a / 100);
		memcpy(p, fmt_digit_pairs + 2 * (a % 100), 2);
		p += 2;
	}
	*p = '\0';
	return (size_t)(p - buf);
}

static size_t put_special(char *buf, int negative, int nan)
{
	const char *s = nan ? "NaN" : negative ? "-inf" : "inf";
	size_t n = strlen(s);
	memcpy(buf, s, n + 1);
	return n;
}

/* The shared path: a binary format of mbits stored significand bits and ebits exponent bits. */
static size_t shortest(uint64_t bits, int mbits, int ebits, char *buf)
{
	int negative = (int)(bits >> (mbits + ebits)) & 1;
	uint64_t frac = bits & (((uint64_t)1 << mbits) - 1);
	int biased = (int)(bits >> mbits) & ((1 << ebits) - 1);
	int emax = (1 << ebits) - 1, q_min = 2 - (1 << (ebits - 1)) - mbits;
	uint64_t f;
	int e;
	if (biased == emax)
		return put_special(buf, negative, frac != 0);
	if (biased == 0) {
		if (frac == 0)
			return put_decimal(buf, negative, 0, 0);
		to_decimal(frac, q_min, 0, &f, &e);
		return put_decimal(buf, negative, f, e);
	}
	uint64_t c = frac | (uint64_t)1 << mbits;
	int q = biased + q_min - 1;
	/* an integer below 2^mbits+1 is its own shortest decimal */
	if (q <= 0 && -q <= mbits && (c & (((uint64_t)1 << -q) - 1)) == 0)
		return put_decimal(buf, negative, c >> -q, 0);
	to_decimal(c, q, frac == 0 && biased > 1, &f, &e);
	return put_decimal(buf, negative, f, e);
}

/* A value of at most six decimals (508.17, -3.5, 0.000125: prices, measures, rounded data):
 * a 10^6 (a = |v| < 2^28) then lies within 0.05 of an integer m, the nearest, whose m / 10^6 (one
 * correctly rounded division) reads back as a. v's rounding interval, under 10^-7 wide there,
 * holds no other decimal as short (two would be 10^-6 apart, or 10^-7 across a power of ten):
 * m 10^-6 is what the full method finds. */
static int six_decimals(double a, uint64_t *m)
{
	double x = a * 1e6, r = (x + 0x1p52) - 0x1p52; /* round to nearest: x < 2^48 */
	if (r / 1e6 != a)
		return 0;
	*m = (uint64_t)r;
	return 1;
}

size_t fmt_shortest_f64_schubfach(double v, char *buf)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	return shortest(bits, 52, 11, buf);
}

size_t fmt_shortest_f64(double v, char *buf)
{
	uint64_t bits, m;
	double a = fabs(v);
	memcpy(&bits, &v, sizeof bits);
	/* not a power of two (frac 0: the asymmetric interval, where a shorter decimal may lie
	 * farther above), NaN or infinite */
	if (a < 0x1p28 && (bits & (((uint64_t)1 << 52) - 1)) && six_decimals(a, &m))
		return put_decimal(buf, (int)(bits >> 63), m, -6);
	return shortest(bits, 52, 11, buf);
}

size_t fmt_shortest_f32(float v, char *buf)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof bits);
	return shortest(bits, 23, 8, buf);
}

size_t fmt_shortest_f16(uint16_t bits, char *buf)
{
	return shortest(bits, 10, 5, buf);
}

int fmt_decimal_f64(uint64_t m, int e10, int negative, double *out)
{
	if (m == 0) {
		*out = negative ? -0.0 : 0.0;
		return 1;
	}
	if (e10 < FMT_POW10_E_MIN || e10 > FMT_POW10_E_MAX)
		return 0;
	/* 10^e10 lies in [(g - 1) 2^r, g 2^r) with g = g1 2^63 + g0, r = floor(log2 10^e10) - 125 */
	const uint64_t *g = fmt_pow10_g[e10 - FMT_POW10_E_MIN];
	int lz = __builtin_clzll(m), r = floor_log2_pow10(e10) - 125;
	uint64_t mn = m << lz;
	/* P = mn g = (mn g1) 2^63 + mn g0, in three 64-bit limbs p2 p1 p0; 2^188 <= P < 2^190 */
	unsigned __int128 a = (unsigned __int128)mn * g[0], b = (unsigned __int128)mn * g[1];
	uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64);
	uint64_t p0 = a0 << 63, p1 = (a0 >> 1) | (a1 << 63), p2 = a1 >> 1;
	unsigned __int128 lo = ((unsigned __int128)p1 << 64 | p0) + b;
	p2 += lo < b; /* carry */
	p1 = (uint64_t)(lo >> 64);
	p0 = (uint64_t)lo;
	/* the value m 10^e10 is V in [P - mn, P) times 2^(r - lz); keep 54 bits of P (53 and the
	 * rounding bit): T = P >> shift */
	int top = p2 >> 61 ? 62 : 61; /* bits in p2 */
	int cut = top - 54;                 /* low bits of p2 below T */
	uint64_t t = p2 >> cut, below = p2 & (((uint64_t)1 << cut) - 1);
	/* every V in the band must have the same T and a nonzero remainder under it: then T and
	 * "more than nothing below the rounding bit" decide round to nearest even exactly */
	if (!below && !p1 && p0 <= mn)
		return 0;
	uint64_t mant = (t >> 1) + (t & 1);
	int e2 = 128 + cut + r - lz + 1; /* V ~ mant 2^e2 */
	if (mant >> 53) {
		mant >>= 1;
		e2++;
	}
	int biased = e2 + 1075;
	if (biased < 1 || biased > 2046)
		return 0;
	uint64_t bits = (uint64_t)negative << 63 | (uint64_t)biased << 52 | (mant & (((uint64_t)1 << 52) - 1));
	memcpy(out, &bits, sizeof bits);
	return 1;
}
