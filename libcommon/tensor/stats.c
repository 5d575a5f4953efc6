/* Streaming tensor statistics (fmt/stats.h). Values arrive in arbitrary pieces; each piece is
 * cut into passes of PASS_ELEMS values, summarised with two passes (mean, then squared
 * deviations from it), and merged into the running totals with Chan et al.'s pairwise update. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/convert.h"
#include "fmt/half.h"
#include "fmt/stats.h"

/* Small enough to stay in L1 between the two passes. */
enum { PASS_ELEMS = 1024 };

/* Decoded elements per chunk in fmt_tensor_stats (rounded down to whole blocks). */
enum { TENSOR_CHUNK_ELEMS = 65536 };

void fmt_stats_init(fmt_stats *s)
{
	memset(s, 0, sizeof *s);
	s->min = s->max = NAN;
	s->std = NAN;
}

typedef struct pass_summary {
	uint64_t count;
	double min, max, mean, m2;  /* m2 in units of 2^(2 exp) */
	int exp;
} pass_summary;

/* The binary exponent of the largest magnitude among lo..hi: |v| / 2^exp < 1. */
static int scale_exp(double lo, double hi)
{
	int exp = 0;
	double big = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
	(void)frexp(big, &exp);
	return exp;
}

/* x 2^-exp, the value ldexp(x, -exp) gives: a product by 2^-exp (factor) is rounded as ldexp
 * rounds, and costs a multiplication where ldexp is a call per value (a third of --stats' time);
 * ldexp itself only when 2^-exp is past DBL_MAX (factor 0: a pass of subnormal values). */
static double scaled(double x, int exp, double factor)
{
	return factor != 0 ? x * factor : ldexp(x, -exp);
}

static void summarise_pass(fmt_stats *s, const double *x, size_t n, pass_summary *p)
{
	double sum = 0, lo = INFINITY, hi = -INFINITY;
	uint64_t count = 0;
	for (size_t i = 0; i < n; i++) {
		double v = x[i];
		if (isnan(v)) {
			s->nan++;
		} else if (isinf(v)) {
			s->inf++;
		} else {
			count++;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	}
	p->count = count;
	p->min = lo;
	p->max = hi;
	p->exp = count ? scale_exp(lo, hi) : 0;
	const double factor = p->exp > DBL_MIN_EXP - 2 ? ldexp(1.0, -p->exp) : 0;
	if (count)
		for (size_t i = 0; i < n; i++)
			if (isfinite(x[i]))
				sum += scaled(x[i], p->exp, factor);
	double mean = count ? sum / (double)count : 0, m2 = 0;
	if (count)
		for (size_t i = 0; i < n; i++)
			if (isfinite(x[i])) {
				double d = scaled(x[i], p->exp, factor) - mean;
				m2 += d * d;
			}
	p->mean = ldexp(mean, p->exp);
	p->m2 = m2;
}

static void merge_pass(fmt_stats *s, const pass_summary *p)
{
	if (p->count == 0)
		return;
	if (s->count == 0) {
		s->count = p->count;
		s->min = p->min;
		s->max = p->max;
		s->mean = p->mean;
		s->m2 = p->m2;
		s->exp = p->exp;
		return;
	}
	/* both in units of the larger magnitude's 2^exp */
	int exp = p->exp > s->exp ? p->exp : s->exp;
	double na = (double)s->count, nb = (double)p->count, n = na + nb;
	double mean = ldexp(s->mean, -exp), delta = ldexp(p->mean, -exp) - mean;
	s->mean = ldexp(mean + delta * (nb / n), exp);
	s->m2 = ldexp(s->m2, 2 * (s->exp - exp)) + (ldexp(p->m2, 2 * (p->exp - exp)) + delta * delta * (na * nb / n));
	s->exp = exp;
	s->count += p->count;
	s->min = p->min < s->min ? p->min : s->min;
	s->max = p->max > s->max ? p->max : s->max;
}

void fmt_stats_add(fmt_stats *s, const float *x, size_t n)
{
	double wide[PASS_ELEMS];
	for (size_t done = 0; done < n; done += PASS_ELEMS) {
		size_t len = n - done < PASS_ELEMS ? n - done : PASS_ELEMS;
		for (size_t i = 0; i < len; i++) {
			wide[i] = x[done + i];
			if (s->n_first < FMT_STATS_FIRST)
				s->first[s->n_first++] = wide[i];
		}
		pass_summary p;
		summarise_pass(s, wide, len, &p);
		merge_pass(s, &p);
	}
}

void fmt_stats_add_f64(fmt_stats *s, const uint8_t *src, size_t n)
{
	double wide[PASS_ELEMS];
	s->f64 = 1;
	for (size_t done = 0; done < n; done += PASS_ELEMS) {
		size_t len = n - done < PASS_ELEMS ? n - done : PASS_ELEMS;
		for (size_t i = 0; i < len; i++) {
			wide[i] = fmt_bits_f64(fmt_rd_u64(src + 8 * (done + i)));
			if (s->n_first < FMT_STATS_FIRST)
				s->first[s->n_first++] = wide[i];
		}
		pass_summary p;
		summarise_pass(s, wide, len, &p);
		merge_pass(s, &p);
	}
}

/* Element i of the integer dtype t at src: int64 bits when signed. */
static uint64_t int_at(fmt_dtype t, const uint8_t *src, size_t i)
{
	switch (t) {
	case FMT_DT_BOOL: return src[i] != 0;
	case FMT_DT_U8: return src[i];
	case FMT_DT_I8: return (uint64_t)(int64_t)(int8_t)src[i];
	case FMT_DT_U16: return fmt_rd_u16(src + 2 * i);
	case FMT_DT_I16: return (uint64_t)(int64_t)(int16_t)fmt_rd_u16(src + 2 * i);
	case FMT_DT_U32: return fmt_rd_u32(src + 4 * i);
	case FMT_DT_I32: return (uint64_t)(int64_t)(int32_t)fmt_rd_u32(src + 4 * i);
	default: return fmt_rd_u64(src + 8 * i);  /* U64, I64 */
	}
}

static int is_signed_int(fmt_dtype t)
{
	return t == FMT_DT_I8 || t == FMT_DT_I16 || t == FMT_DT_I32 || t == FMT_DT_I64;
}

/* a < b as t's values */
static int int_less(int is_signed, uint64_t a, uint64_t b)
{
	return is_signed ? (int64_t)a < (int64_t)b : a < b;
}

void fmt_stats_add_int(fmt_stats *s, fmt_dtype t, const uint8_t *src, size_t n)
{
	int is_signed = is_signed_int(t);
	s->int_kind = is_signed ? FMT_STATS_SIGNED : FMT_STATS_UNSIGNED;
	double wide[PASS_ELEMS];
	for (size_t done = 0; done < n; done += PASS_ELEMS) {
		size_t len = n - done < PASS_ELEMS ? n - done : PASS_ELEMS;
		for (size_t i = 0; i < len; i++) {
			uint64_t v = int_at(t, src, done + i);
			if ((s->count == 0 && i == 0) || int_less(is_signed, v, s->imin))
				s->imin = v;
			if ((s->count == 0 && i == 0) || int_less(is_signed, s->imax, v))
				s->imax = v;
			if (s->n_first < FMT_STATS_FIRST)
				s->ifirst[s->n_first++] = v;
			/* signed: v's sign extended to 128 bits; the sum wraps as two's complement */
			s->isum += is_signed ? (unsigned __int128)(__int128)(int64_t)v : (unsigned __int128)v;
			/* the spread from the tensor's first value, exact in 128 bits and rounded once:
			 * values near 2^62 as doubles are 1024 apart, which made std that coarse */
			__int128 d = is_signed ? (__int128)(int64_t)v - (__int128)(int64_t)s->ifirst[0]
					       : (__int128)v - (__int128)s->ifirst[0];
			wide[i] = (double)d;
		}
		pass_summary p;
		summarise_pass(s, wide, len, &p);
		merge_pass(s, &p);
	}
}

void fmt_stats_finish(fmt_stats *s)
{
	if (s->count == 0) {
		s->min = s->max = s->mean = s->std = NAN;
		s->m2 = 0;
		return;
	}
	s->std = ldexp(sqrt(s->m2 / (double)s->count), s->exp);
	s->m2 = ldexp(s->m2, 2 * s->exp);   /* unscaled: inf past ~1e154, where std is not */
	s->exp = 0;
	if (s->int_kind)
		s->mean = fmt_int_sum_mean(s->isum, s->int_kind == FMT_STATS_SIGNED, s->count);
}

/* v in r's units, r rescaled first when |v| is past its 2^exp (or is its first nonzero). */
static double running_scaled(fmt_running *r, double v)
{
	if (v != 0 && (!r->scaled || fabs(v) >= r->limit)) {
		int exp = 0;
		(void)frexp(v, &exp);
		if (r->scaled) {
			r->sum = ldexp(r->sum, r->exp - exp);
			r->mean = ldexp(r->mean, r->exp - exp);
			r->m2 = ldexp(r->m2, 2 * (r->exp - exp));
		}
		r->exp = exp;
		r->scaled = 1;
		r->factor = exp > DBL_MIN_EXP - 2 ? ldexp(1.0, -exp) : 0;
		r->limit = ldexp(1.0, exp);
	}
	return r->scaled ? scaled(v, r->exp, r->factor) : v;
}

/* 1 when v is an infinity, counted */
static int running_inf(fmt_running *r, double v)
{
	if (!isinf(v))
		return 0;
	if (v > 0)
		r->pos_inf++;
	else
		r->neg_inf++;
	return 1;
}

void fmt_running_add(fmt_running *r, double v)
{
	if (running_inf(r, v))
		return;
	double x = running_scaled(r, v), d = x - r->mean;
	r->n++;
	r->mean += d / (double)r->n;
	r->m2 += d * (x - r->mean);
}

void fmt_running_add_sum(fmt_running *r, double v)
{
	if (running_inf(r, v))
		return;
	r->sum += running_scaled(r, v);
	r->n++;
}

/* NaN, ±inf when r holds infinities (or nothing), else 0 */
static double running_special(const fmt_running *r)
{
	if (r->pos_inf && r->neg_inf)
		return NAN;
	return r->pos_inf ? INFINITY : r->neg_inf ? -INFINITY : r->n ? 0 : NAN;
}

static double running_unscaled(const fmt_running *r, double x)
{
	return r->scaled ? ldexp(x, r->exp) : x;
}

double fmt_running_mean(const fmt_running *r)
{
	double special = running_special(r);
	return special != 0 ? special : running_unscaled(r, r->mean);
}

double fmt_running_sum_mean(const fmt_running *r)
{
	double special = running_special(r);
	return special != 0 ? special : running_unscaled(r, r->sum / (double)r->n);
}

double fmt_running_std(const fmt_running *r, uint64_t ddof)
{
	if (r->pos_inf || r->neg_inf || r->n <= ddof)
		return NAN;
	return running_unscaled(r, sqrt(r->m2 / (double)(r->n - ddof)));
}

static int bit_length(unsigned __int128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
	return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* A 63-bit m (2^62 <= m < 2^63) times 2^shift, its bits below m's sticky in bit 0 (below the
 * rounding bit of a double's 53): converting m to double then rounds as the exact value does. */
double fmt_exact_mean(unsigned __int128 mag, int neg, uint64_t n)
{
	if (n == 0)
		return NAN;
	unsigned __int128 q = mag / n;
	uint64_t r = (uint64_t)(mag % n), m;
	int shift = 0, sticky;
	if (bit_length(q) > 63) {
		shift = bit_length(q) - 63;
		m = (uint64_t)(q >> shift);
		sticky = (q & (((unsigned __int128)1 << shift) - 1)) != 0 || r != 0;
	} else {
		m = (uint64_t)q;
		/* long division, one more bit of the quotient at a time: at most 64 steps before the
		 * first 1 (r / n >= 2^-64) and 63 after */
		while (m < (UINT64_C(1) << 62) && (m || r)) {
			unsigned __int128 r2 = (unsigned __int128)r << 1;
			m = m << 1 | (r2 >= n);
			r = (uint64_t)(r2 >= n ? r2 - n : r2);
			shift--;
		}
		sticky = r != 0;
	}
	double v = ldexp((double)(m | (uint64_t)sticky), shift);
	return neg ? -v : v;
}

double fmt_int_sum_mean(unsigned __int128 sum, int is_signed, uint64_t n)
{
	return is_signed && (__int128)sum < 0 ? fmt_exact_mean(-sum, 1, n) : fmt_exact_mean(sum, 0, n);
}

/* The tensor's element and byte counts must agree with its dtype and shape before we walk
 * its bytes; a driver that got them wrong is a bug, not a bad file. */
static fmt_kind check_tensor_size(const fmt_tensor *t, fmt_err *e)
{
	uint64_t nelems, nbytes;
	if (fmt_dtype_nbytes(t->dtype, t->shape, t->ndim, &nelems, &nbytes, e) != FMT_OK) {
		e->kind = FMT_INTERNAL;
		fmt_err_prefix(e, "tensor '%s'", t->name);
		return FMT_INTERNAL;
	}
	if (nelems != t->nelems || nbytes != t->nbytes)
		return fmt_fail(e, FMT_INTERNAL,
				"tensor '%s': %llu elements in %llu bytes, but its %s shape gives %llu in %llu",
				t->name, (unsigned long long)t->nelems, (unsigned long long)t->nbytes,
				fmt_dtype_name(t->dtype), (unsigned long long)nelems,
				(unsigned long long)nbytes);
	return FMT_OK;
}

static fmt_kind stats_of_bytes(const fmt_tensor *t, const uint8_t *bytes, float *buf,
			       uint64_t chunk_elems, fmt_stats *out, fmt_err *e)
{
	const fmt_dtype_info *info = fmt_dtype_get(t->dtype);
	/* whole blocks, and for plain types whole bytes per element: exact */
	uint64_t chunk_bytes = chunk_elems / info->block_elems * info->block_bits / 8;
	uint64_t offset = 0;
	for (uint64_t done = 0; done < t->nelems; done += chunk_elems) {
		uint64_t n = t->nelems - done < chunk_elems ? t->nelems - done : chunk_elems;
		if (info->is_int) {  /* exactly: a float holds integers only up to 2^24 */
			fmt_stats_add_int(out, t->dtype, bytes + offset, (size_t)n);
			offset += chunk_bytes;
			continue;
		}
		if (t->dtype == FMT_DT_F64) {  /* in double: a float32 step would make 1e300 Inf */
			fmt_stats_add_f64(out, bytes + offset, (size_t)n);
			offset += chunk_bytes;
			continue;
		}
		fmt_kind k = fmt_decode_f32(t->dtype, bytes + offset, n, buf, e);
		if (k != FMT_OK) {
			fmt_err_prefix(e, "tensor '%s'", t->name);
			return k;
		}
		fmt_stats_add(out, buf, (size_t)n);
		offset += chunk_bytes;
	}
	return FMT_OK;
}

fmt_kind fmt_tensor_stats(const fmt_model *m, const fmt_tensor *t, fmt_stats *out, fmt_err *e)
{
	fmt_stats_init(out);
	if (!fmt_decode_supported(t->dtype))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': cannot decode %s data", t->name,
				fmt_dtype_name(t->dtype));
	fmt_kind k = check_tensor_size(t, e);
	if (k != FMT_OK)
		return k;
	uint32_t block = fmt_dtype_get(t->dtype)->block_elems;
	uint64_t chunk_elems = TENSOR_CHUNK_ELEMS / block * block;
	if (chunk_elems == 0)
		chunk_elems = block;
	float *buf = malloc((size_t)chunk_elems * sizeof *buf);
	if (!buf)
		return fmt_fail(e, FMT_IO, "tensor '%s': out of memory for a %llu-element decode buffer",
				t->name, (unsigned long long)chunk_elems);
	const uint8_t *bytes;
	uint8_t *to_free = NULL;
	k = fmt_tensor_load(m, t, &bytes, &to_free, e);
	if (k == FMT_OK)
		k = stats_of_bytes(t, bytes, buf, chunk_elems, out, e);
	free(to_free);
	free(buf);
	if (k == FMT_OK)
		fmt_stats_finish(out);
	return k;
}
