/* Streaming statistics of a tensor's values, and a bounded-memory pass over a model tensor. */
#ifndef FMT_STATS_H
#define FMT_STATS_H

#include <stdint.h>
#include <stddef.h>
#include "fmt/err.h"
#include "fmt/model.h"

#define FMT_STATS_FIRST 8

/* count is the number of finite values; NaN and ±Inf are counted in nan and inf and left out
 * of min, max, mean and std. With count 0 (empty, or no finite value) min, max, mean and std
 * are NaN. mean and m2 (sum of squared deviations from the mean) are kept in double and merged
 * chunk by chunk with the pairwise update of Chan, Golub and LeVeque: each chunk's own mean and
 * m2 come from two passes over the chunk, so no large sum of squares is ever subtracted.
 * Both are computed on the values scaled by 2^-exp, exp the binary exponent of the largest
 * magnitude seen (m2 is kept so, in units of 2^(2 exp), until fmt_stats_finish gives it
 * unscaled, which may then be inf): a power of two scales exactly, so
 * the results are the same bits as unscaled, and values up to DBL_MAX neither overflow a sum
 * nor a square (the sum of squares of values over ~1e154 was inf, so was std).
 * std is the population standard deviation sqrt(m2 / count) 2^exp, set by fmt_stats_finish.
 * first holds the first n_first values as given (NaN and Inf included), for previews: float32
 * values (fmt_stats_add), or float64 ones (fmt_stats_add_f64, f64 set) kept as they are. */
typedef struct fmt_stats {
	uint64_t count, nan, inf;
	double min, max, mean, m2, std;
	int exp;
	double first[FMT_STATS_FIRST];
	size_t n_first;
	int f64;
	/* An integer tensor (fmt_stats_add_int): FMT_STATS_SIGNED or FMT_STATS_UNSIGNED, and its
	 * least and greatest values and first values exactly (int64 bits when signed); min, max
	 * and first above are then unset; mean is the exact sum isum (two's complement when
	 * signed) over count, rounded once; m2 (and so std) from each value's difference from the
	 * first (ifirst[0]), exact in 128 bits and then a double, so a spread of a few units among
	 * values near 2^63 is not lost to their rounding. */
	int int_kind;
	uint64_t imin, imax, ifirst[FMT_STATS_FIRST];
	unsigned __int128 isum;
} fmt_stats;

enum { FMT_STATS_FLOAT = 0, FMT_STATS_SIGNED = 1, FMT_STATS_UNSIGNED = 2 };

void fmt_stats_init(fmt_stats *s);
void fmt_stats_add(fmt_stats *s, const float *x, size_t n);
/* n little-endian float64 values at src, in double throughout (none rounded to float32). */
void fmt_stats_add_f64(fmt_stats *s, const uint8_t *src, size_t n);
/* n little-endian elements of the plain integer dtype t (BOOL, I8 ... I64, U8 ... U64) at src;
 * every call on s with the same t. */
void fmt_stats_add_int(fmt_stats *s, fmt_dtype t, const uint8_t *src, size_t n);
void fmt_stats_finish(fmt_stats *s);

/* A mean and spread of doubles given one at a time (a table's column), scaled as fmt_stats is:
 * sum, Welford's mean and m2 (sum of squared deviations) are kept in units of 2^exp and
 * 2^(2 exp), exp the binary exponent of the largest finite magnitude so far, and rescaled
 * (exactly, a power of two) when a larger one comes. So the results are the same bits as the
 * plain running sum and Welford update give wherever those neither overflow nor underflow,
 * and stay finite up to DBL_MAX (the plain m2 of 1e300 and -1e300 is inf). ±Inf are counted
 * aside; the caller leaves NaN out. Zeroed is empty. */
typedef struct fmt_running {
	uint64_t n, pos_inf, neg_inf;   /* n: finite values */
	double sum, mean, m2;
	int exp, scaled;                /* scaled: exp is set (a nonzero value came) */
	double factor, limit;           /* 2^-exp (0 past DBL_MAX), 2^exp */
} fmt_running;

/* v into the Welford mean and m2 (fmt_running_mean, fmt_running_std). */
void fmt_running_add(fmt_running *r, double v);
/* v into the sum alone (fmt_running_sum_mean): cheaper, for a mean as sum / count. */
void fmt_running_add_sum(fmt_running *r, double v);
/* Welford's mean; with infinities +inf, -inf or (both) NaN; NaN when there is no value. */
double fmt_running_mean(const fmt_running *r);
/* The sum over the count, rounded as the plain sum / count; infinities and none as above. */
double fmt_running_sum_mean(const fmt_running *r);
/* sqrt(m2 / (count - ddof)): NaN with an infinity, or when count <= ddof. */
double fmt_running_std(const fmt_running *r, uint64_t ddof);

/* The quotient mag / n (negated when neg) rounded once to the nearest double, ties to even:
 * the mean of integers from their exact sum (mag up to 2^128 - 1). NaN when n is 0. */
double fmt_exact_mean(unsigned __int128 mag, int neg, uint64_t n);
/* The mean of n integers from their exact sum (two's complement when is_signed), rounded once. */
double fmt_int_sum_mean(unsigned __int128 sum, int is_signed, uint64_t n);

/* Statistics of every element of t (decoded with fmt_decode_f32, F64 with fmt_stats_add_f64 and
 * an integer dtype with fmt_stats_add_int: exactly), in chunks of at most 64Ki
 * elements on block boundaries, so memory beyond the tensor's bytes stays bounded.
 * Unsupported for a dtype fmt_decode_f32 cannot decode. out is finished on success. */
fmt_kind fmt_tensor_stats(const fmt_model *m, const fmt_tensor *t, fmt_stats *out, fmt_err *e);

#endif
