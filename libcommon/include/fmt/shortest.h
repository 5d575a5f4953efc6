/* Shortest round-trip decimal text of binary64, binary32 and binary16 values: the fewest
 * significant digits that read back (correctly rounded, to nearest even) to the same value
 * (when two decimals of that length read back, the one nearest the value; for a power of two,
 * whose rounding interval reaches twice as far above as below, that may be a decimal farther
 * than the nearest of its length), laid out as Python's repr lays out a float, so that the
 * text reads back as a float, never as an integer: "0.1", "123.0", "1200.0", "-0.0",
 * "0.0001", "1e+16", "-3.5e-07", "1e+22". Python's repr of a double, numpy's of a float32 or
 * float16, byte for byte. NaN is written "NaN", infinities "inf" and "-inf". The Schubfach
 * method (R. Giulietti, "The Schubfach way to render doubles", 2020): one 128-bit
 * multiplication by a tabled power of ten (scripts/gen-pow10-table) per bound. */
#ifndef FMT_SHORTEST_H
#define FMT_SHORTEST_H

#include <stddef.h>
#include <stdint.h>

/* Longest text either writes, its terminating NUL included: "-2.2250738585072014e-308". */
#define FMT_SHORTEST_MAX 32

/* Write v to buf (at least FMT_SHORTEST_MAX bytes), NUL-terminated; returns its length. */
size_t fmt_shortest_f64(double v, char *buf);
size_t fmt_shortest_f32(float v, char *buf);
size_t fmt_shortest_f16(uint16_t bits, char *buf);
/* fmt_shortest_f64 without its fast path for values of at most six decimals: the same text
 * (the tests compare the two). */
size_t fmt_shortest_f64_schubfach(double v, char *buf);

/* The other direction: m 10^e10 correctly rounded to a double, from the same table (one
 * 64x128-bit product; the approximation's error band decides the rounding except in cases
 * within 2^-70 of a tie, which it declines). 1 with *out set; 0 when it cannot decide or the
 * result would be subnormal, infinite or outside the table: strtod then. */
int fmt_decimal_f64(uint64_t m, int e10, int negative, double *out);

#endif
