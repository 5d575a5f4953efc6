/* Shortest round-trip decimal text of binary64 and binary32 values, in printf's "%.Pg" layout
 * with P the fewest significant digits that read back (strtod / strtof, round to nearest even)
 * to the same value: "0.1", "1e+22", "-3.5e-07", "123", "1.2e+03", "-0". When two decimals of
 * that length read back, the one nearest the value. NaN is written "NaN", infinities "inf" and
 * "-inf". The Schubfach method (R. Giulietti, "The Schubfach way to render doubles", 2020):
 * one 128-bit multiplication by a tabled power of ten (scripts/gen-pow10-table) per bound. */
#ifndef FMT_SHORTEST_H
#define FMT_SHORTEST_H

#include <stddef.h>
#include <stdint.h>

/* Longest text either writes, its terminating NUL included: "-2.2250738585072014e-308". */
#define FMT_SHORTEST_MAX 32

/* Write v to buf (at least FMT_SHORTEST_MAX bytes), NUL-terminated; returns its length. */
size_t fmt_shortest_f64(double v, char *buf);
size_t fmt_shortest_f32(float v, char *buf);
/* fmt_shortest_f64 without its fast path for values of at most six decimals: the same text
 * (the tests compare the two). */
size_t fmt_shortest_f64_schubfach(double v, char *buf);

/* The other direction: m 10^e10 correctly rounded to a double, from the same table (one
 * 64x128-bit product; the approximation's error band decides the rounding except in cases
 * within 2^-70 of a tie, which it declines). 1 with *out set; 0 when it cannot decide or the
 * result would be subnormal, infinite or outside the table: strtod then. */
int fmt_decimal_f64(uint64_t m, int e10, int negative, double *out);

#endif
