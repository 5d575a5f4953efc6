/* fmt/stats.h: exact small cases, NaN/Inf accounting, numerical stability, and the chunked
 * pass over a model tensor against a one-shot pass over the fully decoded tensor. */
#include <math.h>
#include <stdlib.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/half.h"
#include "fmt/stats.h"
#include "unit.h"

TEST(stats_exact_small)
{
	float x[6] = { 1, 2, 3, 4, NAN, INFINITY };
	fmt_stats s;
	fmt_stats_init(&s);
	fmt_stats_add(&s, x, 6);
	fmt_stats_finish(&s);
	CHECK_EQ_U64(s.count, 4);
	CHECK_EQ_U64(s.nan, 1);
	CHECK_EQ_U64(s.inf, 1);
	CHECK(s.min == 1);
	CHECK(s.max == 4);
	CHECK(s.mean == 2.5);
	CHECK(s.m2 == 5);
	CHECK(s.std == sqrt(1.25));
	CHECK_EQ_U64(s.n_first, 6);
	CHECK(s.first[3] == 4 && isnan(s.first[4]) && isinf(s.first[5]));
}

/* Integer dtypes: exact least, greatest and first values, in pieces and across passes. */
TEST(stats_int_exact)
{
	uint8_t b[8 * 2000];
	for (int i = 0; i < 2000; i++)
		fmt_wr_u64(b + 8 * i, (uint64_t)(INT64_C(9007199254740993) + i));
	fmt_wr_u64(b + 8 * 1500, (uint64_t)INT64_MIN);
	fmt_wr_u64(b + 8 * 1999, (uint64_t)INT64_MAX);
	fmt_stats s;
	fmt_stats_init(&s);
	fmt_stats_add_int(&s, FMT_DT_I64, b, 3);
	fmt_stats_add_int(&s, FMT_DT_I64, b + 24, 1997);
	fmt_stats_finish(&s);
	CHECK_EQ_U64(s.int_kind, FMT_STATS_SIGNED);
	CHECK_EQ_U64(s.count, 2000);
	CHECK((int64_t)s.imin == INT64_MIN && (int64_t)s.imax == INT64_MAX);
	CHECK_EQ_U64(s.n_first, 8);
	CHECK_EQ_U64(s.ifirst[0], 9007199254740993u);
	CHECK_EQ_U64(s.ifirst[7], 9007199254741000u);
	/* U64 above 2^63 compares unsigned; I8 sign-extends; BOOL is 0 or 1 */
	fmt_wr_u64(b, UINT64_MAX);
	fmt_wr_u64(b + 8, 5);
	fmt_stats_init(&s);
	fmt_stats_add_int(&s, FMT_DT_U64, b, 2);
	CHECK(s.int_kind == FMT_STATS_UNSIGNED && s.imin == 5 && s.imax == UINT64_MAX);
	uint8_t i8[3] = { 0x80, 0x7F, 0xFF };
	fmt_stats_init(&s);
	fmt_stats_add_int(&s, FMT_DT_I8, i8, 3);
	CHECK((int64_t)s.imin == -128 && (int64_t)s.imax == 127 && (int64_t)s.ifirst[2] == -1);
	fmt_stats_finish(&s);
	CHECK(s.mean == -2.0 / 3);
	fmt_stats_init(&s);
	fmt_stats_add_int(&s, FMT_DT_BOOL, i8, 3);
	fmt_stats_finish(&s); /* mean is set there (before, the summaries hold differences from the first) */
	CHECK(s.imin == 1 && s.imax == 1 && s.mean == 1 && s.std == 0);
}

TEST(stats_pieces_and_first)
{
	float x[20];
	fmt_stats s;
	for (int i = 0; i < 20; i++)
		x[i] = (float)(i - 5);
	x[7] = -INFINITY;
	fmt_stats_init(&s);
	fmt_stats_add(&s, x, 3);
	fmt_stats_add(&s, x + 3, 0);
	fmt_stats_add(&s, x + 3, 4);
	fmt_stats_add(&s, x + 7, 13);
	fmt_stats_finish(&s);
	CHECK_EQ_U64(s.n_first, 8);
	for (int i = 0; i < 7; i++)
		CHECK(s.first[i] == x[i]);
	CHECK(isinf(s.first[7]) && s.first[7] < 0);
	CHECK_EQ_U64(s.count, 19);
	CHECK_EQ_U64(s.inf, 1);
	CHECK(s.min == -5 && s.max == 14);
	/* -5..14 without 2: sum 90 - 2 = 88 */
	double mean = 88.0 / 19, m2 = 0;
	for (int i = 0; i < 20; i++)
		if (i != 7)
			m2 += (x[i] - mean) * (x[i] - mean);
	CHECK(fabs(s.mean - mean) < 1e-12);
	CHECK(fabs(s.std - sqrt(m2 / 19)) < 1e-12);
}

TEST(stats_empty_and_all_nan)
{
	fmt_stats s;
	fmt_stats_init(&s);
	fmt_stats_finish(&s);
	CHECK_EQ_U64(s.count, 0);
	CHECK(isnan(s.min) && isnan(s.max) && isnan(s.mean) && isnan(s.std));
	CHECK_EQ_U64(s.n_first, 0);
	float nans[3] = { NAN, -NAN, INFINITY };
	fmt_stats_init(&s);
	fmt_stats_add(&s, nans, 3);
	fmt_stats_finish(&s);
	CHECK_EQ_U64(s.count, 0);
	CHECK_EQ_U64(s.nan, 2);
	CHECK_EQ_U64(s.inf, 1);
	CHECK(isnan(s.min) && isnan(s.max) && isnan(s.mean) && isnan(s.std));
}

/* A large offset with a small spread: a naive sum-of-squares formula loses every digit here. */
TEST(stats_stable_with_offset)
{
	enum { N = 3000000 };
	float *x = malloc(N * sizeof *x);
	CHECK(x != NULL);
	if (!x)
		return;
	for (int i = 0; i < N; i++)
		x[i] = i % 2 ? 100000.5f : 99999.5f;
	fmt_stats s;
	fmt_stats_init(&s);
	for (int done = 0; done < N; done += 77777)
		fmt_stats_add(&s, x + done, (size_t)(N - done < 77777 ? N - done : 77777));
	fmt_stats_finish(&s);
	CHECK_EQ_U64(s.count, N);
	CHECK(fabs(s.mean - 100000.0) < 1e-9);
	CHECK(fabs(s.std - 0.5) < 1e-9);
	CHECK(s.min == 99999.5 && s.max == 100000.5);
	free(x);
}

static fmt_kind stats_of(const fmt_tensor *t, fmt_stats *s, fmt_err *e)
{
	fmt_model m;
	fmt_model_init(&m);
	fmt_err_clear(e);
	fmt_kind k = fmt_tensor_stats(&m, t, s, e);
	fmt_model_free(&m);
	return k;
}

static fmt_tensor memory_tensor(const char *name, fmt_dtype dtype, uint64_t nelems,
				const uint8_t *data)
{
	fmt_tensor t;
	fmt_err e = { 0 };
	memset(&t, 0, sizeof t);
	t.name = (char *)name;
	t.dtype = dtype;
	t.ndim = 1;
	t.shape[0] = nelems;
	t.source = -1;
	t.data = data;
	fmt_dtype_nbytes(dtype, t.shape, 1, &t.nelems, &t.nbytes, &e);
	return t;
}

static int same_stats(const fmt_stats *a, const fmt_stats *b)
{
	return a->count == b->count && a->nan == b->nan && a->inf == b->inf && a->min == b->min &&
	       a->max == b->max && a->mean == b->mean && a->m2 == b->m2 && a->std == b->std &&
	       a->n_first == b->n_first && memcmp(a->first, b->first, sizeof a->first) == 0;
}

/* Chunked decoding (64Ki elements) must give exactly the stats of one pass over all values. */
static void check_chunked(fmt_dtype dtype, const uint8_t *bytes, uint64_t nelems)
{
	fmt_err e = { 0 };
	fmt_stats chunked, whole;
	fmt_tensor t = memory_tensor("w", dtype, nelems, bytes);
	CHECK(stats_of(&t, &chunked, &e) == FMT_OK);
	float *all = malloc(nelems * sizeof *all);
	CHECK(all != NULL);
	if (!all)
		return;
	CHECK(fmt_decode_f32(dtype, bytes, nelems, all, &e) == FMT_OK);
	fmt_stats_init(&whole);
	fmt_stats_add(&whole, all, nelems);
	fmt_stats_finish(&whole);
	CHECK(same_stats(&chunked, &whole));
	CHECK_EQ_U64(chunked.count + chunked.nan + chunked.inf, nelems);
	free(all);
}

TEST(stats_tensor_chunked_f16)
{
	enum { N = 3 * 65536 + 1234 };
	uint8_t *bytes = malloc(2 * N);
	CHECK(bytes != NULL);
	if (!bytes)
		return;
	for (uint32_t i = 0; i < N; i++)
		fmt_wr_u16(bytes + 2 * i, (uint16_t)(i * 7919u));   /* every f16 pattern, NaN/Inf too */
	check_chunked(FMT_DT_F16, bytes, N);
	free(bytes);
}

TEST(stats_tensor_chunked_q8_0)
{
	enum { BLOCKS = 2200, N = BLOCKS * 32 };
	uint8_t *bytes = malloc(BLOCKS * 34);
	CHECK(bytes != NULL);
	if (!bytes)
		return;
	for (uint32_t b = 0; b < BLOCKS; b++) {
		fmt_wr_u16(bytes + 34 * b, fmt_f32_to_f16((float)(b % 13 + 1) * 0.01f));
		for (int i = 0; i < 32; i++)
			bytes[34 * b + 2 + i] = (uint8_t)(b * 31 + (uint32_t)i * 17);
	}
	check_chunked(FMT_DT_Q8_0, bytes, N);
	free(bytes);
}

TEST(stats_tensor_errors)
{
	fmt_err e = { 0 };
	fmt_stats s;
	uint8_t bytes[64] = { 0 };
	fmt_tensor c64 = memory_tensor("z", FMT_DT_C64, 4, bytes);
	CHECK(stats_of(&c64, &s, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "tensor 'z': cannot decode C64 data");
	fmt_tensor wrong = memory_tensor("w", FMT_DT_F32, 4, bytes);
	wrong.nbytes = 12;
	CHECK(stats_of(&wrong, &s, &e) == FMT_INTERNAL);
	CHECK(strstr(e.msg, "tensor 'w'") != NULL);
	fmt_tensor ok = memory_tensor("u", FMT_DT_U8, 64, bytes);
	CHECK(stats_of(&ok, &s, &e) == FMT_OK);
	CHECK_EQ_U64(s.count, 64);
	CHECK(s.mean == 0 && s.std == 0 && s.min == 0 && s.max == 0);
	fmt_tensor scalar = memory_tensor("one", FMT_DT_I8, 1, bytes);
	scalar.ndim = 0;
	CHECK(stats_of(&scalar, &s, &e) == FMT_OK);
	CHECK_EQ_U64(s.count, 1);
}

/* fmt_exact_mean: the quotient rounded once, ties to even, the remainder deciding a near-tie. */
TEST(stats_exact_mean_rounds_once)
{
	CHECK(fmt_exact_mean(7, 0, 2) == 3.5);
	CHECK(fmt_exact_mean(7, 1, 2) == -3.5);
	CHECK(fmt_exact_mean(1, 0, 3) == 1.0 / 3);
	CHECK(fmt_exact_mean(0, 0, 5) == 0);
	CHECK(isnan(fmt_exact_mean(1, 0, 0)));
	CHECK(fmt_exact_mean(~(unsigned __int128)0, 0, 1) == 0x1p128);
	/* 2^54 + 2 is halfway between 2^54 and 2^54 + 4: even; a third above it: up */
	unsigned __int128 tie = ((unsigned __int128)1 << 54) + 2;
	CHECK(fmt_exact_mean(tie, 0, 1) == 0x1p54);
	CHECK(fmt_exact_mean(tie * 3 + 1, 0, 3) == 0x1p54 + 4);
	CHECK(fmt_exact_mean(tie * 3 - 1, 0, 3) == 0x1p54);
	/* 2^64 values of 2^64 - 1 would sum past 2^128; 3 * (2^64 - 1) / 3 is exact */
	CHECK(fmt_exact_mean((unsigned __int128)UINT64_MAX * 3, 0, 3) == 0x1p64);
	CHECK(fmt_exact_mean(1, 0, UINT64_MAX) == 0x1p-64);
}

/* fmt_running: the plain running sum and Welford update's bits on ordinary values (values of
 * many magnitudes, so exp grows several times), finite figures up to DBL_MAX, infinities. */
TEST(running_scaled_same_bits_and_finite)
{
	fmt_running r = { 0 }, s = { 0 };
	double mean = 0, m2 = 0, sum = 0;
	uint64_t n = 0;
	for (int i = 0; i < 5000; i++) {
		double v = ldexp((double)((i * 7919) % 1000) - 499.5, (i % 97) - 48) + 0.1 * i;
		double d = v - mean;
		n++;
		mean += d / (double)n;
		m2 += d * (v - mean);
		sum += v;
		fmt_running_add(&r, v);
		fmt_running_add_sum(&s, v);
	}
	CHECK(fmt_running_mean(&r) == mean);
	CHECK(fmt_running_std(&r, 1) == sqrt(m2 / (double)(n - 1)));
	CHECK(fmt_running_sum_mean(&s) == sum / (double)n);
	fmt_running big = { 0 }, bigs = { 0 };
	const double xs[] = { 1e300, -1e300, 1e308 };
	for (int i = 0; i < 3; i++) {
		fmt_running_add(&big, xs[i]);
		fmt_running_add_sum(&bigs, xs[i]);
	}
	CHECK(fmt_running_mean(&big) == 1e308 / 3);
	CHECK(fmt_running_sum_mean(&bigs) == 1e308 / 3);
	CHECK(fmt_running_std(&big, 1) == 5.773502691896258e307);
	CHECK(isnan(fmt_running_std(&big, 3)));
	fmt_running none = { 0 }, inf = { 0 };
	CHECK(isnan(fmt_running_mean(&none)) && isnan(fmt_running_sum_mean(&none)));
	fmt_running_add(&inf, 1);
	fmt_running_add(&inf, INFINITY);
	fmt_running_add(&inf, 2);
	CHECK(fmt_running_mean(&inf) == INFINITY && isnan(fmt_running_std(&inf, 1)));
	fmt_running_add(&inf, -INFINITY);
	CHECK(isnan(fmt_running_mean(&inf)));
}
