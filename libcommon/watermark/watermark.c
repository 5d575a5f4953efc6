/* The fmtkit-wm/1 watermark (specs/watermark.md). The spec writes the embedding in doubles,
 * v' = Δ (floor(r − c/2 + 1/2) + c/2) with r = v/Δ; here the same arithmetic is done exactly on
 * the integer significand (r's fraction is its low 23 − s or 52 − s bits), which gives the
 * same values bit for bit (tests/unit/test_watermark.c checks it against the double formula)
 * and is several times faster. The PRF depends on the anchor only, and a float32 has 2^17
 * anchors (2^20 for float64): the selection of every anchor is computed at most once per key
 * and density into a table, so a value costs a lookup, not a SipHash. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "fmt/watermark.h"
#include "ss_internal.h"

#define BUYER_LABEL "fmtkit-wm/1 buyer"
#define PRF_LABEL "fmtkit-wm/1 prf"
#define NOT_SELECTED 0xFF
#define ANCHORS32 (1u << 17)   /* sign, 8 exponent bits, top 8 mantissa bits */
#define ANCHORS64 (1u << 20)   /* sign, 11 exponent bits, top 8 mantissa bits */

struct fmt_wm_key {
	uint8_t k[FMT_WM_KEY_LEN];
	uint8_t prf[16];
	/* Selection tables for one density (entry: NOT_SELECTED or mask << 6 | bit), allocated by
	 * fmt_wm_params_prepare and filled by fill_entries as values need them. */
	double density;
	uint8_t *table32, *table64;
	/* For embedding float32 under one payload: per anchor, the bit it carries (0 or 1) or
	 * NOT_SELECTED; filled with table32 for carry_payload at density. */
	uint8_t *carry32;
	uint64_t carry_payload;
	pthread_mutex_t lock;     /* held while entries are filled */
	unsigned filled[2];       /* entries filled of table32, table64 */
	int complete[2];          /* all filled: no lock needed (read atomically) */
	size_t scanned[2];        /* values looked at one by one: at a quarter of the anchors, all are filled */
};

static void hmac(const uint8_t k[FMT_WM_KEY_LEN], const char *label, const void *msg, size_t n,
		 uint8_t out[32])
{
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, k, FMT_WM_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
	if (n)
		crypto_auth_hmacsha256_update(&st, msg, n);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof st);
}

fmt_kind fmt_wm_key_new(const uint8_t k[FMT_WM_KEY_LEN], fmt_wm_key **out, fmt_err *e)
{
	*out = NULL;
	if (sodium_init() < 0)
		return fmt_fail(e, FMT_INTERNAL, "libsodium cannot be initialised");
	fmt_wm_key *key = sodium_malloc(sizeof *key);
	if (!key)
		return fmt_fail(e, FMT_IO, "out of memory for the watermark key");
	memset(key, 0, sizeof *key);
	if (pthread_mutex_init(&key->lock, NULL) != 0) {
		sodium_free(key);
		return fmt_fail(e, FMT_IO, "cannot create the watermark key's lock");
	}
	memcpy(key->k, k, FMT_WM_KEY_LEN);
	uint8_t mac[32];
	hmac(k, PRF_LABEL, NULL, 0, mac);
	memcpy(key->prf, mac, sizeof key->prf);
	sodium_memzero(mac, sizeof mac);
	*out = key;
	return FMT_OK;
}

void fmt_wm_key_free(fmt_wm_key *key)
{
	if (!key)
		return;
	free(key->table32);
	free(key->table64);
	free(key->carry32);
	pthread_mutex_destroy(&key->lock);
	sodium_free(key);
}

void fmt_wm_derive(const fmt_wm_key *key, const char *label, uint8_t out[32])
{
	hmac(key->k, label, NULL, 0, out);
}

void fmt_wm_buyer_hash(const fmt_wm_key *key, const char *buyer, size_t len, uint8_t out[FMT_WM_HASH_LEN])
{
	hmac(key->k, BUYER_LABEL, buyer, len, out);
}

void fmt_wm_prf_key(const fmt_wm_key *key, uint8_t out[16])
{
	memcpy(out, key->prf, 16);
}

uint64_t fmt_wm_prf(const fmt_wm_key *key, const uint8_t *x, size_t n)
{
	uint8_t h[crypto_shorthash_BYTES];
	crypto_shorthash(h, x, n, key->prf);
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | h[i];
	return v;
}

uint16_t fmt_crc16_ccitt_false(const uint8_t *p, size_t n)
{
	uint16_t crc = 0xFFFF;
	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
	}
	return crc;
}

uint64_t fmt_wm_payload(const uint8_t hash[FMT_WM_HASH_LEN])
{
	uint64_t p = 0;
	for (int i = 0; i < 6; i++)
		p = p << 8 | hash[i];
	return p << 16 | fmt_crc16_ccitt_false(hash, 6);
}

int fmt_wm_payload_valid(uint64_t payload)
{
	uint8_t b[6];
	for (int i = 0; i < 6; i++)
		b[i] = (uint8_t)(payload >> (56 - 8 * i));
	return fmt_crc16_ccitt_false(b, 6) == (uint16_t)payload;
}

/* Mantissa bits M, exponent field width and bias of a width. */
#define MANT(w) ((w) == 4 ? 23 : 52)
#define EXPMAX(w) ((w) == 4 ? 0xFFu : 0x7FFu)

uint64_t fmt_wm_anchor(uint64_t bits, int width)
{
	int low = MANT(width) - 8;
	return bits & ~((UINT64_C(1) << low) - 1);
}

int fmt_wm_eligible(uint64_t bits, int width)
{
	uint64_t exp = bits >> MANT(width) & EXPMAX(width);
	return exp != 0 && exp != EXPMAX(width);
}

fmt_wm_pos fmt_wm_position(const fmt_wm_key *key, uint64_t anchor, int width, double density)
{
	uint8_t x[9];
	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(anchor >> (8 * i));
	x[8] = (uint8_t)width;
	uint64_t h = fmt_wm_prf(key, x, sizeof x);
	fmt_wm_pos p;
	p.selected = (double)(h & 0xFFFF) < density * 65536.0;
	p.bit = (unsigned)(((h >> 16) & 0xFFFF) % FMT_WM_BITS);
	p.mask = (int)((h >> 32) & 1);
	return p;
}

/* The selection tables are filled lazily, one anchor at a time, as values arrive: a small model
 * costs a SipHash per anchor it uses, not 2^17 + 2^20 of them; a call with many values fills a
 * whole table at once. Each entry is computed once, under the key's lock, before the loops read it;
 * UNKNOWN (never a real entry: those are NOT_SELECTED or below 128) marks the ones still to do.
 * Once the values looked at one by one reach a quarter of a table's size, it is filled whole: a
 * large model pays one table, and no lock, as before. (A vector loop's 4-byte gather also reads
 * the 3 entries after its own, which another thread may be filling: it masks them off.) */
#define UNKNOWN 0xFE

static unsigned anchors_of(int width)
{
	return width == 4 ? ANCHORS32 : ANCHORS64;
}

/* Table entry i of a width: NOT_SELECTED or mask << 6 | bit. */
static uint8_t anchor_entry(const fmt_wm_key *key, unsigned i, int width, double density)
{
	uint64_t anchor = (uint64_t)i << (MANT(width) - 8);
	if (!fmt_wm_eligible(anchor, width))
		return NOT_SELECTED;
	fmt_wm_pos p = fmt_wm_position(key, anchor, width, density);
	return p.selected ? (uint8_t)(p.mask << 6 | (int)p.bit) : NOT_SELECTED;
}

/* The bit a float32 anchor with table entry t carries under payload (0 or 1), or NOT_SELECTED. */
static uint8_t carry_entry(uint8_t t, uint64_t payload)
{
	return t == NOT_SELECTED || t == UNKNOWN ? NOT_SELECTED
	       : (uint8_t)(fmt_wm_payload_bit(payload, t & 63) ^ (t >> 6 & 1));
}

/* A table of UNKNOWN entries; + 3 bytes past the end that a 4-byte gather of the last entry reads. */
static uint8_t *unknown_table(int width)
{
	unsigned n = anchors_of(width);
	uint8_t *t = malloc(n + 3);
	if (t) {
		memset(t, UNKNOWN, n);
		memset(t + n, width == 4 ? 0 : NOT_SELECTED, 3);
	}
	return t;
}

/* Entry i computed; the caller holds the lock. */
static void fill_entry(fmt_wm_key *key, unsigned i, int width)
{
	uint8_t *t = width == 4 ? key->table32 : key->table64;
	t[i] = anchor_entry(key, i, width, key->density);
	if (width == 4)
		key->carry32[i] = carry_entry(t[i], key->carry_payload);
	key->filled[width == 8]++;
}

/* Every entry the n values at p look up is computed when this returns (thread-safe). */
static void fill_entries(const fmt_wm_key *ckey, const uint8_t *p, size_t n, int width)
{
	fmt_wm_key *key = (fmt_wm_key *)ckey;   /* a cache: the key's selections do not change */
	int w = width == 8;
	if (__atomic_load_n(&key->complete[w], __ATOMIC_ACQUIRE))
		return;
	unsigned anchors = anchors_of(width);
	int shift = MANT(width) - 8;   /* the index: sign, exponent and 8 mantissa bits */
	pthread_mutex_lock(&key->lock);
	const uint8_t *t = width == 4 ? key->table32 : key->table64;
	if (n >= anchors / 4 - key->scanned[w]) {   /* scanned stays below a quarter of anchors */
		for (unsigned i = 0; i < anchors; i++)
			if (t[i] == UNKNOWN)
				fill_entry(key, i, width);
	} else {
		key->scanned[w] += n;
		for (size_t v = 0; v < n; v++) {
			unsigned i = (unsigned)(fmt_wm_load_bits(p + v * (size_t)width, width) >> shift);
			if (t[i] == UNKNOWN)
				fill_entry(key, i, width);
		}
	}
	if (key->filled[w] == anchors)
		__atomic_store_n(&key->complete[w], 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&key->lock);
}

/* The key's tables for density (emptied when it changes) and its float32 table of the bits
 * carried under payload; call before sharing the key between threads. */
static fmt_kind key_prepare(fmt_wm_key *key, double density, uint64_t payload)
{
	if (!key->table32 || key->density != density) {
		free(key->table32);
		free(key->table64);
		free(key->carry32);
		key->table32 = unknown_table(4);
		key->table64 = unknown_table(8);
		key->carry32 = unknown_table(4);
		if (!key->table32 || !key->table64 || !key->carry32) {
			free(key->table32);
			free(key->table64);
			free(key->carry32);
			key->table32 = key->table64 = key->carry32 = NULL;
			return FMT_IO;
		}
		memset(key->carry32 + ANCHORS32, NOT_SELECTED, 3);
		key->density = density;
		key->filled[0] = key->filled[1] = 0;
		key->complete[0] = key->complete[1] = 0;
		key->scanned[0] = key->scanned[1] = 0;
		key->carry_payload = payload;
	}
	if (key->carry_payload != payload) {
		for (unsigned i = 0; i < ANCHORS32; i++)
			key->carry32[i] = carry_entry(key->table32[i], payload);
		key->carry_payload = payload;
	}
	return FMT_OK;
}

fmt_kind fmt_wm_params_prepare(fmt_wm_params *prm, fmt_err *e)
{
	if (key_prepare((fmt_wm_key *)prm->key, prm->density, prm->payload) != FMT_OK)
		return fmt_fail(e, FMT_IO, "out of memory for the watermark selection tables");
	return FMT_OK;
}

static inline uint8_t table_entry(const fmt_wm_key *key, uint64_t bits, int width)
{
	return width == 4 ? key->table32[bits >> 15] : key->table64[bits >> 44];
}

/* The significand with its implicit bit, signed: v = U × 2^(e − M). */
static inline int64_t signed_significand(uint64_t bits, int width)
{
	int m = MANT(width);
	int64_t u = (int64_t)((bits & ((UINT64_C(1) << m) - 1)) | UINT64_C(1) << m);
	return bits >> (width * 8 - 1) ? -u : u;
}

/* floor(x / 2^q) and the non-negative remainder. */
static inline int64_t floor_shift(int64_t x, int q)
{
	return x >= 0 ? x >> q : -((-x + ((INT64_C(1) << q) - 1)) >> q);
}

static inline __attribute__((always_inline)) int qim_embed(uint64_t bits, int width, int c, int s, uint64_t *out)
{
	int m = MANT(width), q = m - s;
	*out = bits;
	if (!fmt_wm_eligible(bits, width) || q < 1)
		return 0;
	int64_t unit = INT64_C(1) << q, half = unit >> 1;
	int64_t u = signed_significand(bits, width);
	int64_t k = floor_shift(u + half - c * half, q);
	int64_t v = k * unit + c * half;
	uint64_t mag = (uint64_t)(v < 0 ? -v : v);
	if ((v < 0) != (u < 0) || mag >> m != 1)
		return 0;                                    /* left the binade */
	uint64_t sign_exp = bits & ~((UINT64_C(1) << m) - 1);
	uint64_t nb = sign_exp | (mag & ((UINT64_C(1) << m) - 1));
	if (fmt_wm_anchor(nb, width) != fmt_wm_anchor(bits, width))
		return 0;
	*out = nb;
	return 1;
}

int fmt_wm_qim_embed(uint64_t bits, int width, int c, int s, uint64_t *out)
{
	return qim_embed(bits, width, c, s, out);
}

/* r's fraction in units of 2^-q: F in [0, 2^q). */
static inline uint64_t frac_units(uint64_t bits, int width, int q)
{
	int64_t u = signed_significand(bits, width);
	return (uint64_t)(u - floor_shift(u, q) * (INT64_C(1) << q));
}

double fmt_wm_qim_frac(uint64_t bits, int width, int s)
{
	int q = MANT(width) - s;
	return ldexp((double)frac_units(bits, width, q), -q);
}

static inline int read_bit(uint64_t bits, int width, int q)
{
	uint64_t f = frac_units(bits, width, q), half = UINT64_C(1) << (q - 1);
	uint64_t dist = f > half ? f - half : half - f;
	return 4 * dist < (UINT64_C(1) << q);        /* |f − 0.5| < 0.25 */
}

int fmt_wm_qim_read(uint64_t bits, int width, int s)
{
	return read_bit(bits, width, MANT(width) - s);
}

static inline void store(uint8_t *p, uint64_t bits, int width)
{
	if (width == 4) {
		uint32_t b = (uint32_t)bits;
		memcpy(p, &b, 4);
	} else {
		memcpy(p, &bits, 8);
	}
}

static inline double as_double(uint64_t bits, int width)
{
	if (width == 4) {
		uint32_t b = (uint32_t)bits;
		float f;
		memcpy(&f, &b, 4);
		return f;
	}
	double d;
	memcpy(&d, &bits, 8);
	return d;
}

/* What a run of embedding adds up. The sums of value i of a call go to lane i % WM_LANES, and
 * the lanes are added in one order at the end: the scalar and the vector loops give the same
 * doubles (a float32 squared is exact in a double, so a fused multiply-add changes nothing). */
#define WM_LANES 16
typedef struct lane_sums {
	double sum0[WM_LANES], sumsq0[WM_LANES], sum_d[WM_LANES], sumsq1[WM_LANES];
	double max_rel;
	uint64_t finite, eligible, selected, marked;
} lane_sums;

/* Values [from, n) of a call, one at a time (a constant width where it is inlined: the compiler
 * specialises it). Branch-free where the data is random (selection, the bit carried, the QIM
 * move): the same arithmetic as qim_embed for every value, the result kept only where it counts. */
static inline __attribute__((always_inline)) void embed_scalar(const fmt_wm_params *prm, uint8_t *p, size_t from,
							      size_t n, const int width, lane_sums *out_sums)
{
	lane_sums local = *out_sums, *s = &local;   /* a local: the stores to p (bytes) cannot alias it */
	const fmt_wm_key *key = prm->key;
	const int m = MANT(width), q = m - prm->strength;
	const uint64_t payload = prm->payload, expmax = EXPMAX(width);
	const uint64_t mant_mask = (UINT64_C(1) << m) - 1, anchor_mask = ~((UINT64_C(1) << (m - 8)) - 1);
	const int64_t unit = INT64_C(1) << q, half = unit >> 1;
	for (size_t i = from; i < n; i++) {
		uint8_t *at = p + i * (size_t)width;
		uint64_t bits = fmt_wm_load_bits(at, width);
		uint64_t exp = bits >> m & expmax;
		int is_finite = exp != expmax, is_elig = is_finite & (exp != 0);
		uint8_t t = table_entry(key, bits, width);   /* NOT_SELECTED for every ineligible anchor */
		int sel = t != NOT_SELECTED;
		int64_t c = (int64_t)(fmt_wm_payload_bit(payload, t & 63) ^ (t >> 6 & 1));
		int64_t u = (int64_t)((bits & mant_mask) | (mant_mask + 1));
		u = bits >> (width * 8 - 1) ? -u : u;
		int64_t k = (u + half - c * half) >> q;      /* floor: arithmetic shift (GCC, Clang) */
		int64_t v = k * unit + c * half;
		uint64_t neg = (uint64_t)(v >> 63), mag = ((uint64_t)v ^ neg) - neg;
		uint64_t nb = (bits & ~mant_mask) | (mag & mant_mask);
		int ok = sel & ((mag >> m) == 1) & ((v < 0) == (u < 0)) & ((nb & anchor_mask) == (bits & anchor_mask));
		/* selections by masks, not branches: ok and is_finite are as random as the data */
		uint64_t ok_mask = 0 - (uint64_t)ok, finite_mask = 0 - (uint64_t)is_finite;
		uint64_t out = (nb & ok_mask) | (bits & ~ok_mask);
		store(at, out, width);
		double x = as_double(bits & finite_mask, width), x1 = as_double(out & finite_mask, width);
		double diff = x1 - x;
		/* |x' − x| / |x|: 0 where unmarked (x' = x; a 0 divides by 1); float32 in float (x' − x is
		 * exact there, in one binade), as the vector loops do */
		double rel = width == 4 ? (double)(fabsf((float)x1 - (float)x) / (fabsf((float)x) + (float)(x == 0)))
					: fabs(diff) / (fabs(x) + (double)(x == 0));
		s->max_rel = rel > s->max_rel ? rel : s->max_rel;
		unsigned l = (unsigned)(i % WM_LANES);
		s->sum0[l] += x;
		s->sumsq0[l] += x * x;
		s->sum_d[l] += diff;
		s->sumsq1[l] += x1 * x1;
		s->finite += (uint64_t)is_finite;
		s->eligible += (uint64_t)is_elig;
		s->selected += (uint64_t)sel;
		s->marked += (uint64_t)ok;
	}
	*out_sums = local;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WM_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define WM_AVX2 __attribute__((target("avx2")))

/* The scalar loop's arithmetic on 16 float32 values at a time (a gather for the table); returns
 * how many values it did (a multiple of 16; the scalar loop does the rest). */
WM_AVX512 static size_t embed32_avx512(const fmt_wm_params *prm, uint8_t *p, size_t n, lane_sums *s)
{
	const int *table = (const int *)(const void *)prm->key->carry32;
	const int q = 23 - prm->strength;
	const __m128i qv = _mm_cvtsi32_si128(q);
	const __m512i byte = _mm512_set1_epi32(0xFF), half = _mm512_set1_epi32(1 << (q - 1));
	const __m512i mant = _mm512_set1_epi32(0x7FFFFF), implicit = _mm512_set1_epi32(0x800000);
	const __m512i anchor = _mm512_set1_epi32((int32_t)0xFFFF8000u), one = _mm512_set1_epi32(1);
	__m512d s0[2], sq0[2], sd[2], sq1[2];
	__m512 mx = _mm512_setzero_ps();
	for (int h = 0; h < 2; h++) {
		s0[h] = _mm512_loadu_pd(s->sum0 + 8 * h);
		sq0[h] = _mm512_loadu_pd(s->sumsq0 + 8 * h);
		sd[h] = _mm512_loadu_pd(s->sum_d + 8 * h);
		sq1[h] = _mm512_loadu_pd(s->sumsq1 + 8 * h);
	}
	uint64_t finite = 0, eligible = 0, selected = 0, marked = 0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512i b = _mm512_loadu_si512(p + 4 * i);
		/* two 8-lane gathers: faster than one 16-lane gather on Zen 5 */
		__m512i idx = _mm512_srli_epi32(b, 15);
		__m256i t_lo = _mm256_i32gather_epi32(table, _mm512_castsi512_si256(idx), 1);
		__m256i t_hi = _mm256_i32gather_epi32(table, _mm512_extracti64x4_epi64(idx, 1), 1);
		__m512i t = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(t_lo), t_hi, 1), byte);
		__mmask16 sel = _mm512_cmpneq_epi32_mask(t, byte);
		__mmask16 c = _mm512_test_epi32_mask(t, one);   /* NOT_SELECTED's 1 is undone by ok */
		__m512i exp = _mm512_and_si512(_mm512_srli_epi32(b, 23), byte);
		__mmask16 fin = _mm512_cmpneq_epi32_mask(exp, byte);
		__mmask16 elig = fin & _mm512_test_epi32_mask(exp, exp);
		__mmask16 neg = _mm512_movepi32_mask(b);
		__m512i u = _mm512_or_si512(_mm512_and_si512(b, mant), implicit);
		u = _mm512_mask_sub_epi32(u, neg, _mm512_setzero_si512(), u);
		__m512i ch = _mm512_maskz_mov_epi32(c, half);
		__m512i k = _mm512_sra_epi32(_mm512_sub_epi32(_mm512_add_epi32(u, half), ch), qv);
		__m512i v = _mm512_add_epi32(_mm512_sll_epi32(k, qv), ch);
		__m512i mag = _mm512_abs_epi32(v);
		__mmask16 vneg = _mm512_movepi32_mask(v);
		__m512i nb = _mm512_or_si512(_mm512_andnot_si512(mant, b), _mm512_and_si512(mag, mant));
		__mmask16 ok = sel & _mm512_cmpeq_epi32_mask(_mm512_srli_epi32(mag, 23), one) & (__mmask16)~(vneg ^ neg) &
			       _mm512_cmpeq_epi32_mask(_mm512_and_si512(nb, anchor), _mm512_and_si512(b, anchor));
		__m512i out = _mm512_mask_blend_epi32(ok, b, nb);
		_mm512_storeu_si512(p + 4 * i, out);
		finite += (uint64_t)__builtin_popcount(fin);
		eligible += (uint64_t)__builtin_popcount(elig);
		selected += (uint64_t)__builtin_popcount(sel);
		marked += (uint64_t)__builtin_popcount(ok);
		__m512 x = _mm512_maskz_mov_ps(fin, _mm512_castsi512_ps(b));
		__m512 x1 = _mm512_maskz_mov_ps(fin, _mm512_castsi512_ps(out));
		__m512 rel = _mm512_div_ps(_mm512_abs_ps(_mm512_sub_ps(x1, x)), _mm512_abs_ps(x));
		mx = _mm512_mask_max_ps(mx, ok, mx, rel);
		for (int h = 0; h < 2; h++) {
			__m512d xd = _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(x, 1) : _mm512_castps512_ps256(x));
			__m512d x1d = _mm512_cvtps_pd(h ? _mm512_extractf32x8_ps(x1, 1) : _mm512_castps512_ps256(x1));
			__m512d diff = _mm512_sub_pd(x1d, xd);
			s0[h] = _mm512_add_pd(s0[h], xd);
			sq0[h] = _mm512_fmadd_pd(xd, xd, sq0[h]);   /* exact products: as a multiply, then an add */
			sd[h] = _mm512_add_pd(sd[h], diff);
			sq1[h] = _mm512_fmadd_pd(x1d, x1d, sq1[h]);
		}
	}
	for (int h = 0; h < 2; h++) {
		_mm512_storeu_pd(s->sum0 + 8 * h, s0[h]);
		_mm512_storeu_pd(s->sumsq0 + 8 * h, sq0[h]);
		_mm512_storeu_pd(s->sum_d + 8 * h, sd[h]);
		_mm512_storeu_pd(s->sumsq1 + 8 * h, sq1[h]);
	}
	double most = _mm512_reduce_max_ps(mx);
	if (most > s->max_rel)
		s->max_rel = most;
	s->finite += finite;
	s->eligible += eligible;
	s->selected += selected;
	s->marked += marked;
	return i;
}

/* embed32_avx512 on 8 values at a time (masks are vectors of all-ones lanes here); each pass of
 * the loop does 16 values as two halves, so that value i still goes to lane i % 16. */
WM_AVX2 static size_t embed32_avx2(const fmt_wm_params *prm, uint8_t *p, size_t n, lane_sums *s)
{
	const int *table = (const int *)(const void *)prm->key->carry32;
	const int q = 23 - prm->strength;
	const __m128i qv = _mm_cvtsi32_si128(q);
	const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1), byte = _mm256_set1_epi32(0xFF);
	const __m256i half = _mm256_set1_epi32(1 << (q - 1)), mant = _mm256_set1_epi32(0x7FFFFF);
	const __m256i implicit = _mm256_set1_epi32(0x800000), anchor = _mm256_set1_epi32((int32_t)0xFFFF8000u);
	const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
	__m256d s0[4], sq0[4], sd[4], sq1[4];
	__m256 mx = _mm256_setzero_ps();
	for (int k4 = 0; k4 < 4; k4++) {
		s0[k4] = _mm256_loadu_pd(s->sum0 + 4 * k4);
		sq0[k4] = _mm256_loadu_pd(s->sumsq0 + 4 * k4);
		sd[k4] = _mm256_loadu_pd(s->sum_d + 4 * k4);
		sq1[k4] = _mm256_loadu_pd(s->sumsq1 + 4 * k4);
	}
	uint64_t finite = 0, eligible = 0, selected = 0, marked = 0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		for (int h = 0; h < 2; h++) {
			uint8_t *at = p + 4 * (i + 8 * (size_t)h);
			__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)at);
			__m256i t = _mm256_and_si256(_mm256_i32gather_epi32(table, _mm256_srli_epi32(b, 15), 1), byte);
			__m256i unsel = _mm256_cmpeq_epi32(t, byte);
			__m256i c = _mm256_and_si256(t, one);   /* NOT_SELECTED's 1 is undone by ok */
			__m256i exp = _mm256_and_si256(_mm256_srli_epi32(b, 23), byte);
			__m256i nonfin = _mm256_cmpeq_epi32(exp, byte), sub = _mm256_cmpeq_epi32(exp, zero);
			__m256i neg = _mm256_srai_epi32(b, 31);
			__m256i u = _mm256_or_si256(_mm256_and_si256(b, mant), implicit);
			u = _mm256_sub_epi32(_mm256_xor_si256(u, neg), neg);
			__m256i ch = _mm256_and_si256(_mm256_sub_epi32(zero, c), half);
			__m256i k = _mm256_sra_epi32(_mm256_sub_epi32(_mm256_add_epi32(u, half), ch), qv);
			__m256i v = _mm256_add_epi32(_mm256_sll_epi32(k, qv), ch);
			__m256i mag = _mm256_abs_epi32(v);
			__m256i nb = _mm256_or_si256(_mm256_andnot_si256(mant, b), _mm256_and_si256(mag, mant));
			__m256i ok = _mm256_andnot_si256(unsel, _mm256_cmpeq_epi32(_mm256_srli_epi32(mag, 23), one));
			ok = _mm256_andnot_si256(_mm256_xor_si256(_mm256_srai_epi32(v, 31), neg), ok);
			ok = _mm256_and_si256(ok, _mm256_cmpeq_epi32(_mm256_and_si256(nb, anchor), _mm256_and_si256(b, anchor)));
			__m256i out = _mm256_blendv_epi8(b, nb, ok);
			_mm256_storeu_si256((__m256i *)(void *)at, out);
			finite += 8u - (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(nonfin)));
			eligible += 8u - (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(nonfin, sub))));
			selected += 8u - (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(unsel)));
			marked += (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ok)));
			__m256 x = _mm256_andnot_ps(_mm256_castsi256_ps(nonfin), _mm256_castsi256_ps(b));
			__m256 x1 = _mm256_andnot_ps(_mm256_castsi256_ps(nonfin), _mm256_castsi256_ps(out));
			__m256 rel = _mm256_div_ps(_mm256_and_ps(_mm256_sub_ps(x1, x), magnitude), _mm256_and_ps(x, magnitude));
			mx = _mm256_max_ps(mx, _mm256_and_ps(rel, _mm256_castsi256_ps(ok)));
			for (int half4 = 0; half4 < 2; half4++) {
				int k4 = 2 * h + half4;
				__m256d xd = _mm256_cvtps_pd(half4 ? _mm256_extractf128_ps(x, 1) : _mm256_castps256_ps128(x));
				__m256d x1d = _mm256_cvtps_pd(half4 ? _mm256_extractf128_ps(x1, 1) : _mm256_castps256_ps128(x1));
				s0[k4] = _mm256_add_pd(s0[k4], xd);
				sq0[k4] = _mm256_add_pd(sq0[k4], _mm256_mul_pd(xd, xd));
				sd[k4] = _mm256_add_pd(sd[k4], _mm256_sub_pd(x1d, xd));
				sq1[k4] = _mm256_add_pd(sq1[k4], _mm256_mul_pd(x1d, x1d));
			}
		}
	for (int k4 = 0; k4 < 4; k4++) {
		_mm256_storeu_pd(s->sum0 + 4 * k4, s0[k4]);
		_mm256_storeu_pd(s->sumsq0 + 4 * k4, sq0[k4]);
		_mm256_storeu_pd(s->sum_d + 4 * k4, sd[k4]);
		_mm256_storeu_pd(s->sumsq1 + 4 * k4, sq1[k4]);
	}
	float most[8];
	_mm256_storeu_ps(most, mx);
	for (int l = 0; l < 8; l++)
		if (most[l] > s->max_rel)
			s->max_rel = most[l];
	s->finite += finite;
	s->eligible += eligible;
	s->selected += selected;
	s->marked += marked;
	return i;
}

/* Count the bins of votes (payload bit j and the bit read, 2j + bit, or none) in four
 * histograms in turn, so that equal bins in a row do not wait on each other; flushed into the
 * totals before a 32-bit bin could fill. */
enum { VOTE_NONE = 2 * FMT_WM_BITS };
typedef struct vote_hist {
	uint32_t h[4][VOTE_NONE + 1];
} vote_hist;

static void vote_hist_flush(vote_hist *vh, uint64_t total[64], uint64_t ones[64])
{
	for (int h = 0; h < 4; h++)
		for (int j = 0; j < FMT_WM_BITS; j++) {
			total[j] += (uint64_t)vh->h[h][2 * j] + vh->h[h][2 * j + 1];
			ones[j] += vh->h[h][2 * j + 1];
		}
	memset(vh, 0, sizeof *vh);
}

static inline void vote_hist_add16(vote_hist *vh, const uint32_t bins[16])
{
	for (int l = 0; l < 16; l++)
		vh->h[l & 3][bins[l]]++;
}

/* The votes of 16 float32 values at a time: the vector part finds each value's bin, a scalar
 * pass counts the bins. Returns how many values it did. */
WM_AVX2 static size_t vote32_avx2(const fmt_wm_params *prm, const uint8_t *p, size_t n, uint64_t total[64],
				  uint64_t ones[64])
{
	const int *table = (const int *)(const void *)prm->key->table32;
	const int q = 23 - prm->strength;
	const __m256i byte = _mm256_set1_epi32(0xFF), one = _mm256_set1_epi32(1);
	const __m256i low = _mm256_set1_epi32((1 << q) - 1), half = _mm256_set1_epi32(1 << (q - 1));
	const __m256i unit = _mm256_set1_epi32(1 << q), mant = _mm256_set1_epi32(0x7FFFFF);
	const __m256i implicit = _mm256_set1_epi32(0x800000), none = _mm256_set1_epi32(VOTE_NONE);
	const __m256i sixty_three = _mm256_set1_epi32(63);
	vote_hist vh;
	memset(&vh, 0, sizeof vh);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		uint32_t bins[16];
		for (int h = 0; h < 2; h++) {
			__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 4 * (i + 8 * (size_t)h)));
			__m256i t = _mm256_and_si256(_mm256_i32gather_epi32(table, _mm256_srli_epi32(b, 15), 1), byte);
			__m256i neg = _mm256_srai_epi32(b, 31);
			__m256i u = _mm256_or_si256(_mm256_and_si256(b, mant), implicit);
			u = _mm256_sub_epi32(_mm256_xor_si256(u, neg), neg);
			__m256i dist = _mm256_abs_epi32(_mm256_sub_epi32(_mm256_and_si256(u, low), half));
			__m256i read = _mm256_and_si256(_mm256_cmpgt_epi32(unit, _mm256_slli_epi32(dist, 2)), one);
			__m256i bit = _mm256_xor_si256(read, _mm256_and_si256(_mm256_srli_epi32(t, 6), one));
			__m256i bin = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(t, sixty_three), 1), bit);
			bin = _mm256_blendv_epi8(bin, none, _mm256_cmpeq_epi32(t, byte));
			_mm256_storeu_si256((__m256i *)(void *)(bins + 8 * h), bin);
		}
		vote_hist_add16(&vh, bins);
		if ((i & 0xFFFFF) == 0xFFFF0)
			vote_hist_flush(&vh, total, ones);
	}
	vote_hist_flush(&vh, total, ones);
	return i;
}

/* 2: AVX-512 where the CPU has it, else AVX2; 1: AVX2 at most; 0: portable C. */
static int simd_wanted = 2;

static int vector_isa(void)
{
	if (simd_wanted >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		return 2;
	return simd_wanted >= 1 && __builtin_cpu_supports("avx2") ? 1 : 0;
}

static size_t embed32_vector(const fmt_wm_params *prm, uint8_t *p, size_t n, lane_sums *s)
{
	if (!prm->key->carry32 || prm->key->carry_payload != prm->payload || prm->key->density != prm->density)
		return 0;   /* not prepared for this payload: the portable loop */
	switch (vector_isa()) {
	case 2: return embed32_avx512(prm, p, n, s);
	case 1: return embed32_avx2(prm, p, n, s);
	default: return 0;
	}
}

/* Votes have no AVX-512 loop: on Zen 5 one measured at 1.8 ns a value, the AVX2 loop at 1.0. */
static size_t vote32_vector(const fmt_wm_params *prm, const uint8_t *p, size_t n, uint64_t total[64], uint64_t ones[64])
{
	return vector_isa() >= 1 ? vote32_avx2(prm, p, n, total, ones) : 0;
}
#else
static int simd_wanted = 2;

static size_t embed32_vector(const fmt_wm_params *prm, uint8_t *p, size_t n, lane_sums *s)
{
	(void)prm, (void)p, (void)n, (void)s;
	return 0;
}

static size_t vote32_vector(const fmt_wm_params *prm, const uint8_t *p, size_t n, uint64_t total[64], uint64_t ones[64])
{
	(void)prm, (void)p, (void)n, (void)total, (void)ones;
	return 0;
}
#endif

int fmt_wm_vector_isa(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	return vector_isa();
#else
	return 0;
#endif
}

int fmt_wm_use_simd(int level)
{
	int was = simd_wanted;
	simd_wanted = level;
	return was;
}

static double lanes_total(const double *lane)
{
	double total = 0;
	for (int l = 0; l < WM_LANES; l++)
		total += lane[l];
	return total;
}

void fmt_wm_embed(const fmt_wm_params *prm, uint8_t *p, size_t n, int width, fmt_wm_dist *d)
{
	lane_sums s;
	memset(&s, 0, sizeof s);
	s.max_rel = d->max_rel;
	fill_entries(prm->key, p, n, width);
	if (width == 4) {
		embed_scalar(prm, p, embed32_vector(prm, p, n, &s), n, 4, &s);
	} else {
		embed_scalar(prm, p, 0, n, 8, &s);
	}
	fmt_wm_dist piece = { .values = n, .finite = s.finite, .eligible = s.eligible, .selected = s.selected,
			      .marked = s.marked, .max_rel = s.max_rel, .sum0 = lanes_total(s.sum0),
			      .sumsq0 = lanes_total(s.sumsq0), .sum_d = lanes_total(s.sum_d),
			      .sumsq1 = lanes_total(s.sumsq1) };
	if (piece.finite) {
		double q = piece.sumsq0 - piece.sum0 * piece.sum0 / (double)piece.finite;
		piece.q0 = q > 0 ? q : 0;
	}
	fmt_wm_dist_merge(d, &piece);
}

void fmt_wm_dist_merge(fmt_wm_dist *into, const fmt_wm_dist *piece)
{
	double na = (double)into->finite, nb = (double)piece->finite;
	if (na > 0 && nb > 0) {
		double gap = piece->sum0 / nb - into->sum0 / na;
		into->q0 += piece->q0 + gap * gap * (na * nb / (na + nb));
	} else {
		into->q0 += piece->q0;
	}
	into->values += piece->values;
	into->eligible += piece->eligible;
	into->selected += piece->selected;
	into->marked += piece->marked;
	into->finite += piece->finite;
	if (piece->max_rel > into->max_rel)
		into->max_rel = piece->max_rel;
	into->sum0 += piece->sum0;
	into->sumsq0 += piece->sumsq0;
	into->sum_d += piece->sum_d;
	into->sumsq1 += piece->sumsq1;
	into->sumsq_d += piece->sumsq_d;
}

double fmt_wm_dist_rms_rel(const fmt_wm_dist *d)
{
	if (d->finite == 0)
		return 0;
	return d->q0 > 0 ? sqrt(d->sumsq_d / d->q0) : 0;
}

void fmt_wm_dist_moments(const fmt_wm_dist *d, double *mean_rel, double *std_rel)
{
	*mean_rel = *std_rel = 0;
	if (d->finite == 0)
		return;
	double n = (double)d->finite;
	double mean0 = d->sum0 / n, mean1 = (d->sum0 + d->sum_d) / n;
	double var0 = d->sumsq0 / n - mean0 * mean0, var1 = d->sumsq1 / n - mean1 * mean1;
	double std0 = var0 > 0 ? sqrt(var0) : 0, std1 = var1 > 0 ? sqrt(var1) : 0;
	/* relative to the column's scale: |mean|, or the std when the mean is near 0 */
	double scale = fmax(fabs(mean0), std0);
	if (scale > 0)
		*mean_rel = fabs(d->sum_d / n) / scale;
	if (std0 != 0)
		*std_rel = fabs(std1 - std0) / std0;
}

static inline __attribute__((always_inline)) void vote_loop(const fmt_wm_params *prm, const uint8_t *p, size_t from,
							   size_t n, const int width, uint64_t total[64], uint64_t ones[64])
{
	const fmt_wm_key *key = prm->key;
	const int q = MANT(width) - prm->strength;
	for (size_t i = from; i < n; i++) {
		uint64_t bits = fmt_wm_load_bits(p + i * (size_t)width, width);
		uint8_t t = table_entry(key, bits, width);   /* NOT_SELECTED for every ineligible anchor */
		uint64_t sel = t != NOT_SELECTED;
		unsigned j = t & 63;
		total[j] += sel;
		ones[j] += sel & (uint64_t)(read_bit(bits, width, q) ^ (t >> 6 & 1));
	}
}

void fmt_wm_vote(const fmt_wm_params *prm, const uint8_t *p, size_t n, int width, fmt_wm_votes *v)
{
	uint64_t total[FMT_WM_BITS] = { 0 }, ones[FMT_WM_BITS] = { 0 };
	fill_entries(prm->key, p, n, width);
	if (width == 4) {
		vote_loop(prm, p, vote32_vector(prm, p, n, total, ones), n, 4, total, ones);
	} else {
		vote_loop(prm, p, 0, n, 8, total, ones);
	}
	for (int j = 0; j < FMT_WM_BITS; j++) {
		v->total[j] += total[j];
		v->ones[j] += ones[j];
	}
}

void fmt_wm_votes_merge(fmt_wm_votes *into, const fmt_wm_votes *piece)
{
	for (int j = 0; j < FMT_WM_BITS; j++) {
		into->total[j] += piece->total[j];
		into->ones[j] += piece->ones[j];
	}
}

uint64_t fmt_wm_votes_n(const fmt_wm_votes *v)
{
	uint64_t n = 0;
	for (int j = 0; j < FMT_WM_BITS; j++)
		n += v->total[j];
	return n;
}

uint64_t fmt_wm_votes_payload(const fmt_wm_votes *v, unsigned *unknown)
{
	uint64_t p = 0;
	*unknown = 0;
	for (int j = 0; j < FMT_WM_BITS; j++) {
		uint64_t ones = v->ones[j], zeros = v->total[j] - v->ones[j];
		if (ones == zeros)
			(*unknown)++;
		p = p << 1 | (ones > zeros);
	}
	return p;
}

uint64_t fmt_wm_votes_agree(const fmt_wm_votes *v, uint64_t payload)
{
	uint64_t a = 0;
	for (unsigned j = 0; j < FMT_WM_BITS; j++)
		a += fmt_wm_payload_bit(payload, j) ? v->ones[j] : v->total[j] - v->ones[j];
	return a;
}

unsigned fmt_wm_votes_bits_agree(const fmt_wm_votes *v, uint64_t payload)
{
	unsigned m = 0;
	for (unsigned j = 0; j < FMT_WM_BITS; j++) {
		uint64_t agree = fmt_wm_payload_bit(payload, j) ? v->ones[j] : v->total[j] - v->ones[j];
		m += 2 * agree > v->total[j];
	}
	return m;
}

/* ln C(n, k) 2^-n */
static double log_choose(uint64_t n, uint64_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

static double log_pmf(uint64_t n, uint64_t k)
{
	return log_choose(n, k) - (double)n * M_LN2;
}

/* The terms of a tail relative to its first, summed until they stop counting. */
double fmt_wm_binom_log_sf(uint64_t n, uint64_t a)
{
	if (a == 0)
		return 0;
	if (a > n)
		return -INFINITY;
	if (2 * a > n) {
		/* upper tail from a: term(k+1)/term(k) = (n − k)/(k + 1) < 1 */
		double sum = 1, term = 1;
		for (uint64_t k = a; k < n; k++) {
			term *= (double)(n - k) / (double)(k + 1);
			sum += term;
			if (term < sum * 1e-17)
				break;
		}
		return log_pmf(n, a) + log(sum);
	}
	/* P[X >= a] = 1 − P[X <= a − 1], the lower tail summed down from a − 1 */
	double sum = 1, term = 1;
	for (uint64_t k = a - 1; k > 0; k--) {
		term *= (double)k / (double)(n - k + 1);
		sum += term;
		if (term < sum * 1e-17)
			break;
	}
	double lower = exp(log_pmf(n, a - 1) + log(sum));
	return log1p(-(lower < 1 ? lower : 1));
}

void fmt_wm_alim_add(fmt_wm_alim_col *c, int bit)
{
	if (c->n < 256)
		c->first[c->n] = (uint8_t)bit;
	c->cnt[c->n & 255][bit & 1]++;
	c->n++;
}

/* P[X = j], X ~ Hypergeometric(n, k, d), in log; lo <= j <= min(k, d). */
static double hyper_log_pmf(uint64_t n, uint64_t k, uint64_t d, uint64_t j)
{
	return log_choose(k, j) + log_choose(n - k, d - j) - log_choose(n, d);
}

/* As fmt_wm_binom_log_sf: the terms of a tail relative to its first, summed while they count. */
double fmt_wm_hypergeom_log_sf(uint64_t n, uint64_t k, uint64_t d, uint64_t x)
{
	if (k > n || d > n)
		return NAN;
	uint64_t lo = d > n - k ? d - (n - k) : 0, hi = k < d ? k : d;
	if (x <= lo)
		return 0;
	if (x > hi)
		return -INFINITY;
	double rest = (double)(n - k) - (double)d;      /* n - k - d, may be negative */
	if ((double)x * (double)n > (double)k * (double)d) {
		/* upper tail from x: h(j+1)/h(j) = (k - j)(d - j) / ((j + 1)(n - k - d + j + 1)) */
		double sum = 1, term = 1;
		for (uint64_t j = x; j < hi; j++) {
			term *= (double)(k - j) * (double)(d - j) / ((double)(j + 1) * (rest + (double)j + 1));
			sum += term;
			if (term < sum * 1e-17)
				break;
		}
		return hyper_log_pmf(n, k, d, x) + log(sum);
	}
	/* 1 - P[X <= x - 1], the lower tail summed down from x - 1 */
	double sum = 1, term = 1;
	for (uint64_t j = x - 1; j > lo; j--) {
		term *= (double)j * (rest + (double)j) / ((double)(k - j + 1) * (double)(d - j + 1));
		sum += term;
		if (term < sum * 1e-17)
			break;
	}
	double lower = exp(hyper_log_pmf(n, k, d, x - 1) + log(sum));
	return log1p(-(lower < 1 ? lower : 1));
}

int fmt_wm_alim_decide(const fmt_wm_alim_col *cols, size_t n_cols, const uint8_t key[32], fmt_wm_alim_result *res)
{
	uint8_t first[256];
	uint64_t n = 0;
	memset(res, 0, sizeof *res);
	for (size_t c = 0; c < n_cols; c++) {
		for (uint64_t i = 0; i < cols[c].n && i < 256 && n + i < 256; i++)
			first[n + i] = cols[c].first[i];
		n += cols[c].n;
	}
	res->bits = n;
	if (n < 256)
		return -1;
	for (int j = 0; j < 32; j++) {
		uint8_t b = 0;
		for (int t = 0; t < 8; t++)
			b = (uint8_t)(b | first[8 * j + t] << t);
		res->hash[j] = b ^ key[j];
	}
	/* upstream: each bit against the pattern bit of its index mod 256 in the whole string; the
	 * test: against the pattern bit of its row mod 256 in its column, where upstream embeds it */
	uint64_t start = 0, m = 0, tm = 0, ones = 0, pattern_ones = 0, both = 0;
	for (size_t c = 0; c < n_cols; c++) {
		for (unsigned ph = 0; ph < 256; ph++) {
			const uint64_t *cnt = cols[c].cnt[ph];
			int b = first[ph];
			m += cnt[first[(start + ph) & 255]];
			tm += cnt[b];
			ones += cnt[1];
			if (b) {
				pattern_ones += cnt[0] + cnt[1];
				both += cnt[1];
			}
		}
		start += cols[c].n;
	}
	res->matches = m;
	res->total = n < 1024 ? n : 1024;
	double conf = 2 * ((double)m / (double)res->total - 0.5);
	res->confidence = conf < 0 ? 0 : conf > 1 ? 1 : conf;
	res->accepted = res->confidence >= 0.80;
	/* the first 256 bits chose the pattern: out of the test (the first column's row r, r < 256,
	 * is its own pattern bit and matches by construction) */
	uint64_t g = 0;
	for (size_t c = 0; c < n_cols && g < 256; c++)
		for (uint64_t r = 0; r < cols[c].n && g < 256; r++, g++) {
			int bit = first[g], b = first[r];
			tm -= bit == b;
			ones -= (uint64_t)bit;
			if (b) {
				pattern_ones--;
				both -= (uint64_t)bit;
			}
		}
	res->tested = n - 256;
	res->tested_matches = tm;
	res->tested_ones = ones;
	res->pattern_ones = pattern_ones;
	res->log_p = fmt_wm_hypergeom_log_sf(res->tested, ones, pattern_ones, both);
	return res->log_p < log(FMT_WM_MATCH_P);
}

void fmt_wm_lattice_add(fmt_wm_lattice *l, const uint8_t *p, size_t n, int width)
{
	for (size_t i = 0; i < n; i++, p += width) {
		uint64_t bits = fmt_wm_load_bits(p, width);
		if (!fmt_wm_eligible(bits, width))
			continue;
		l->eligible++;
		uint64_t mant = bits & ((UINT64_C(1) << MANT(width)) - 1);
		l->precision[mant ? MANT(width) - __builtin_ctzll(mant) : 0]++;
		int64_t u = signed_significand(bits, width);
		for (int s = FMT_WM_DETECT_MIN_S; s <= FMT_WM_DETECT_MAX_S; s++) {
			int q = MANT(width) - s;
			uint64_t unit = UINT64_C(1) << q, half = unit >> 1;
			uint64_t f = (uint64_t)(u - floor_shift(u, q) * (int64_t)unit);
			uint64_t d = f > half ? f - half : half - f, dmin = f < unit - f ? f : unit - f;
			if (d < dmin)
				dmin = d;
			l->aligned[s - FMT_WM_DETECT_MIN_S] += 8 * dmin < unit;  /* < 0.125 */
		}
	}
}

void fmt_wm_lattice_merge(fmt_wm_lattice *into, const fmt_wm_lattice *piece)
{
	into->eligible += piece->eligible;
	for (int i = 0; i < FMT_WM_DETECT_N; i++)
		into->aligned[i] += piece->aligned[i];
	for (int i = 0; i < 53; i++)
		into->precision[i] += piece->precision[i];
}

double fmt_wm_lattice_log_p(const fmt_wm_lattice *l, int s)
{
	uint64_t low = 0, mid = 0, high = 0;
	for (int i = 0; i < 53; i++) {
		if (i <= s + 1)
			low += l->precision[i];
		else if (i <= s + 4)
			mid += l->precision[i];
		else
			high += l->precision[i];
	}
	return fmax(fmt_wm_binom_log_sf(low + mid, low), fmt_wm_binom_log_sf(high + mid, high));
}

void fmt_wm_entropy_init(fmt_wm_entropy *s)
{
	memset(s, 0, sizeof *s);
	s->min = INFINITY;
	s->max = -INFINITY;
	s->prev = -1;
}

void fmt_wm_entropy_add(fmt_wm_entropy *s, double v, uint64_t low_bits)
{
	if (!isfinite(v))
		return;
	s->n++;
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	int b = (int)(low_bits & 1);
	s->low1[b]++;
	s->low8[low_bits & 0xFF]++;
	if (s->prev < 0)
		s->first_bit = b;
	if (s->prev >= 0) {
		s->pairs++;
		s->both += (uint64_t)(b & s->prev);
		s->prev_set += (uint64_t)s->prev;
	}
	s->prev = b;
}

void fmt_wm_entropy_hist(fmt_wm_entropy *s, double v)
{
	if (!isfinite(v) || s->n == 0)
		return;
	double span = s->max - s->min;
	size_t bin = 0;
	if (span > 0) {
		double x = (v - s->min) / span * 256.0;
		bin = x >= 255 ? 255 : x <= 0 ? 0 : (size_t)x;
	}
	s->hist[bin]++;
}

double fmt_wm_kolmogorov_q(double x)
{
	if (x < 0.2)
		return 1;
	double sum = 0;
	for (int k = 1; k <= 100; k++) {
		double t = exp(-2.0 * k * k * x * x);
		sum += (k & 1 ? 2 : -2) * t;
		if (t < 1e-17)
			break;
	}
	return sum < 0 ? 0 : sum > 1 ? 1 : sum;
}

static double entropy_bits(const uint64_t *counts, size_t k, uint64_t n)
{
	double h = 0;
	for (size_t i = 0; i < k; i++)
		if (counts[i]) {
			double p = (double)counts[i] / (double)n;
			h -= p * log2(p);
		}
	return h;
}

void fmt_wm_entropy_finish(const fmt_wm_entropy *s, fmt_wm_entropy_result *r)
{
	memset(r, 0, sizeof *r);
	r->ks_p = r->chi2_lsb_p = 1;
	if (s->n == 0)
		return;
	double n = (double)s->n;
	r->shannon = entropy_bits(s->hist, 256, s->n);
	r->lsb_entropy = entropy_bits(s->low1, 2, s->n);
	/* KS against the discrete uniform on 0..255 */
	double cum = 0, d = 0;
	for (int i = 0; i < 256; i++) {
		cum += (double)s->low8[i];
		double diff = fabs(cum / n - (double)(i + 1) / 256.0);
		if (diff > d)
			d = diff;
	}
	double sn = sqrt(n);
	r->ks_d = d;
	r->ks_p = fmt_wm_kolmogorov_q((sn + 0.12 + 0.11 / sn) * d);
	double diff = (double)s->low1[0] - (double)s->low1[1];
	double chi2 = diff * diff / n;
	r->chi2_lsb_p = erfc(sqrt(chi2 / 2));
	if (s->pairs > 1) {
		/* Pearson correlation of (b_i, b_{i+1}) over the pairs */
		double np = (double)s->pairs;
		double mx = (double)s->prev_set / np;
		/* the second members of the pairs: every bit but the first */
		double my = ((double)s->low1[1] - (double)s->first_bit) / np;
		double cov = (double)s->both / np - mx * my;
		double vx = mx * (1 - mx), vy = my * (1 - my);
		r->lag1_corr = vx > 0 && vy > 0 ? cov / sqrt(vx * vy) : 0;
	}
}
