/* Buyer watermarks in float values (specs/watermark.md, scheme fmtkit-wm/1): key derivation,
 * the keyed selection of values, quantization index modulation, the 64-bit payload with its
 * CRC-16, votes and the binomial tail that turns them into a p-value; the key-less lattice
 * test and the entropy statistics. Format-neutral: callers hand in little-endian float32 or
 * float64 values (a tensor chunk, a dataset column) and keep one accumulator per column. */
#ifndef FMT_WATERMARK_H
#define FMT_WATERMARK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "fmt/err.h"

#define FMT_WM_KEY_LEN 32
#define FMT_WM_HASH_LEN 32
#define FMT_WM_BITS 64
#define FMT_WM_DEFAULT_DENSITY 0.5
#define FMT_WM_DEFAULT_STRENGTH 12
#define FMT_WM_MIN_STRENGTH 1
#define FMT_WM_MAX_STRENGTH 22      /* v' must stay exact in float32 (§3) */
#define FMT_WM_DETECT_MIN_S 8
#define FMT_WM_DETECT_MAX_S 20
#define FMT_WM_DETECT_N (FMT_WM_DETECT_MAX_S - FMT_WM_DETECT_MIN_S + 1)
#define FMT_WM_MATCH_P 1e-9         /* prove: match iff p < this */
#define FMT_WM_SUSPICIOUS_P 1e-6    /* detect: a column is suspicious iff p < this */

/* The seller's key K and the PRF key derived from it, in sodium_malloc memory. */
typedef struct fmt_wm_key fmt_wm_key;

/* From K's 32 bytes (the key file's content). */
fmt_kind fmt_wm_key_new(const uint8_t k[FMT_WM_KEY_LEN], fmt_wm_key **out, fmt_err *e);
void fmt_wm_key_free(fmt_wm_key *key);

/* HMAC-SHA256(K, label): a key derived for one purpose (fmt/watermark_ss.h's stream key). */
void fmt_wm_derive(const fmt_wm_key *key, const char *label, uint8_t out[32]);

/* HMAC-SHA256(K, "fmtkit-wm/1 buyer" || buyer_id). */
void fmt_wm_buyer_hash(const fmt_wm_key *key, const char *buyer, size_t len, uint8_t out[FMT_WM_HASH_LEN]);
/* The 16-byte PRF key: first 16 bytes of HMAC-SHA256(K, "fmtkit-wm/1 prf"). */
void fmt_wm_prf_key(const fmt_wm_key *key, uint8_t out[16]);
/* SipHash-2-4 under the PRF key, as a little-endian u64. */
uint64_t fmt_wm_prf(const fmt_wm_key *key, const uint8_t *x, size_t n);

/* CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final XOR). */
uint16_t fmt_crc16_ccitt_false(const uint8_t *p, size_t n);

/* The payload of a buyer hash: its first 6 bytes then their CRC-16 big-endian, as a u64 whose
 * most significant bit is payload bit 0. */
uint64_t fmt_wm_payload(const uint8_t hash[FMT_WM_HASH_LEN]);
static inline int fmt_wm_payload_bit(uint64_t payload, unsigned i)
{
	return (int)((payload >> (63 - i)) & 1);
}
/* 1 when the payload's last 16 bits are the CRC-16 of its first 48. */
int fmt_wm_payload_valid(uint64_t payload);

/* Which element type: 4 (float32) or 8 (float64). */
typedef struct fmt_wm_pos {
	int selected;
	unsigned bit;                /* payload bit index j */
	int mask;                    /* m */
} fmt_wm_pos;

/* The bit pattern and the value of the little-endian float32 (width 4) or float64 (width 8) at p. */
static inline uint64_t fmt_wm_load_bits(const uint8_t *p, int width)
{
	if (width == 4) {
		uint32_t b;
		memcpy(&b, p, 4);
		return b;
	}
	uint64_t b;
	memcpy(&b, p, 8);
	return b;
}

static inline double fmt_wm_load_value(const uint8_t *p, int width)
{
	if (width == 4) {
		float f;
		memcpy(&f, p, 4);
		return f;
	}
	double d;
	memcpy(&d, p, 8);
	return d;
}

/* The anchor of a float32 / float64 bit pattern (sign, exponent, top 8 mantissa bits). */
uint64_t fmt_wm_anchor(uint64_t bits, int width);
/* Eligible: finite, non-zero, normal. */
int fmt_wm_eligible(uint64_t bits, int width);
/* Whether a value with this anchor is selected at density (0..1], and its bit and mask. */
fmt_wm_pos fmt_wm_position(const fmt_wm_key *key, uint64_t anchor, int width, double density);

/* QIM on one eligible value: v' carrying bit c at strength s, as bits of the same width.
 * Returns 0 (and leaves *out = bits) when v' would leave v's binade or change its anchor. */
int fmt_wm_qim_embed(uint64_t bits, int width, int c, int s, uint64_t *out);
/* The fraction f = r - floor(r), r = v / 2^(e - s), of an eligible value. */
double fmt_wm_qim_frac(uint64_t bits, int width, int s);
/* The bit read back: 1 iff |f - 0.5| < 0.25. */
int fmt_wm_qim_read(uint64_t bits, int width, int s);

typedef struct fmt_wm_params {
	const fmt_wm_key *key;
	uint64_t payload;
	double density;
	int strength;
} fmt_wm_params;

/* What embedding did to one column or tensor; merge pieces with fmt_wm_dist_merge. */
typedef struct fmt_wm_dist {
	uint64_t values;             /* every value seen */
	uint64_t eligible, selected, marked;
	uint64_t finite;             /* values in the mean and std */
	double max_rel;              /* max |v' - v| / |v| */
	double sum0, sumsq0;         /* of the original finite values */
	double q0;                   /* their sum of squared deviations from their mean */
	double sum_d, sumsq1;        /* sum of v' - v; sum of v'^2 */
	double sumsq_d;              /* sum of (v' - v)^2 */
} fmt_wm_dist;

/* Sums add; q0 adds with the pieces' means' spread (Chan, Golub and LeVeque's update). */
void fmt_wm_dist_merge(fmt_wm_dist *into, const fmt_wm_dist *piece);
/* Change of the mean relative to max(|mean|, std), and relative change of the (population)
 * std; 0 when undefined. */
void fmt_wm_dist_moments(const fmt_wm_dist *d, double *mean_rel, double *std_rel);
/* RMS of v' - v relative to the original values' (population) std; 0 when undefined. */
double fmt_wm_dist_rms_rel(const fmt_wm_dist *d);

/* Set the key up for prm->density and prm->payload (once, with the payload set; before threads
 * share the key): its selection tables then fill as embedding and votes need them, thread-safely.
 * Embedding under a payload the key was not prepared for gives the same bytes by the portable
 * loop, slower. */
fmt_kind fmt_wm_params_prepare(fmt_wm_params *prm, fmt_err *e);

/* Mark n little-endian values of width 4 or 8 at p in place. */
void fmt_wm_embed(const fmt_wm_params *prm, uint8_t *p, size_t n, int width, fmt_wm_dist *d);
/* For tests: which vector units the loops may use (the same bytes and sums either way): 2 the
 * widest the CPU has (the default), 1 AVX2 at most, 0 none (portable C); returns the previous
 * setting. Not thread-safe. */
int fmt_wm_use_simd(int level);

/* Votes: per payload bit, how many votes and how many of them said 1. */
typedef struct fmt_wm_votes {
	uint64_t total[FMT_WM_BITS];
	uint64_t ones[FMT_WM_BITS];
} fmt_wm_votes;

void fmt_wm_vote(const fmt_wm_params *prm, const uint8_t *p, size_t n, int width, fmt_wm_votes *v);
void fmt_wm_votes_merge(fmt_wm_votes *into, const fmt_wm_votes *piece);
uint64_t fmt_wm_votes_n(const fmt_wm_votes *v);
/* The majority payload; *unknown gets the number of tied (or vote-less) bits. */
uint64_t fmt_wm_votes_payload(const fmt_wm_votes *v, unsigned *unknown);
/* Votes agreeing with payload. */
uint64_t fmt_wm_votes_agree(const fmt_wm_votes *v, uint64_t payload);

/* Payload bits whose vote majority agrees with payload (ties and bits without votes do not).
 * This, not the vote count, is what prove tests: another buyer's copy agrees with a wrong
 * buyer's payload on about half of the bits with ~100 % of their votes, so the votes of a
 * copy are not Binomial(n, 1/2) under "not this buyer" (the spec's §4 test would accuse
 * every other buyer of a large file), while the 64 bits are: the payloads of two buyers are
 * independent uniform bit strings (48 HMAC bits; the CRC of their XOR, CRC-16 being linear). */
unsigned fmt_wm_votes_bits_agree(const fmt_wm_votes *v, uint64_t payload);

/* ln P[X >= a] for X ~ Binomial(n, 1/2), accurate far into the tail (no underflow). */
double fmt_wm_binom_log_sf(uint64_t n, uint64_t a);

/* Upstream alimentar's scheme (specs/ald.md §13), extraction only: one accumulator per float
 * column, fed the mantissa LSB of each non-null value in row order; the columns are then taken
 * in schema order as one bit string (bounded memory: counts per phase mod 256, not the bits). */
typedef struct fmt_wm_alim_col {
	uint64_t n;
	uint8_t first[256];          /* the column's first 256 bits */
	uint64_t cnt[256][2];        /* bits by (index mod 256, value) */
} fmt_wm_alim_col;
void fmt_wm_alim_add(fmt_wm_alim_col *c, int bit);
/* Upstream's extraction, and the test fmtkit decides by (specs/ald.md §13 and its project
 * note). Upstream: the candidate buyer hash is the first 256 bits packed LSB-first XOR the key;
 * matches counts, over all N bits, those equal to the candidate's pattern bit (index mod 256 in
 * the whole string), total = min(N, 1024), confidence = clamp(2 (matches / total - 0.5), 0, 1),
 * accepted at 0.80. The first 256 bits match by construction, and matches is not bounded by
 * total, so clean data is accepted. The test: only the bits after the first 256 (tested), those
 * of them equal to the pattern bit of their row mod 256 in their column (tested_matches; where
 * upstream embeds it), and ln p = ln P[at least that many] if those bits were in random order
 * (hypergeometric, given how many of them are 1 and how many have pattern bit 1): near 0 for
 * columns whose LSBs are all 0 (integers stored as floats), which a Binomial(n, 1/2) test would
 * accuse. */
typedef struct fmt_wm_alim_result {
	uint8_t hash[32];            /* the candidate */
	uint64_t bits;               /* N */
	uint64_t matches, total;     /* upstream's */
	double confidence;           /* upstream's */
	int accepted;                /* upstream's verdict: confidence >= 0.80 */
	uint64_t tested, tested_matches, tested_ones, pattern_ones;
	double log_p;
} fmt_wm_alim_result;
/* Returns -1 (nothing computed) when fewer than 256 bits were seen, else 1 when the test is
 * significant (log_p < ln FMT_WM_MATCH_P), 0 when not. */
int fmt_wm_alim_decide(const fmt_wm_alim_col *cols, size_t n_cols, const uint8_t key[32], fmt_wm_alim_result *res);

/* ln P[X >= x] for X ~ Hypergeometric(population n, k successes, d draws), no underflow. */
double fmt_wm_hypergeom_log_sf(uint64_t n, uint64_t k, uint64_t d, uint64_t x);

/* The key-less lattice test (§4 detect). */
typedef struct fmt_wm_lattice {
	uint64_t eligible;
	uint64_t aligned[FMT_WM_DETECT_N];   /* s = 8 + i */
	uint64_t precision[53];              /* values by the place of their lowest set mantissa bit
					      * (1..52; 0: no bit set) */
} fmt_wm_lattice;
void fmt_wm_lattice_add(fmt_wm_lattice *l, const uint8_t *p, size_t n, int width);
void fmt_wm_lattice_merge(fmt_wm_lattice *into, const fmt_wm_lattice *piece);
/* ln p of a mark at strength s. Marks at s leave the marked values with no mantissa bit below
 * place s + 1 and the others (density < 1) with their full precision: a valley in the precision
 * histogram. With X values of precision <= s + 1, Y of s + 2 .. s + 4 and Z of >= s + 5,
 * ln max(P[Bin(X + Y, 1/2) >= X], P[Bin(Z + Y, 1/2) >= Z]): a column of short mantissas by
 * nature (F16, BF16 or Q8_0 values widened to float32, integers, few decimals) has no high side
 * and full-precision data no low side; neither is suspicious, however many values are aligned. */
double fmt_wm_lattice_log_p(const fmt_wm_lattice *l, int s);

/* Entropy statistics of one numeric column (§4 entropy). Pass 1 sees every value (min, max and
 * the low-bit statistics), pass 2 fills the 256-bin value histogram between pass 1's min and max. */
typedef struct fmt_wm_entropy {
	uint64_t n;                  /* finite values */
	double min, max;
	uint64_t low1[2];            /* lowest bit */
	uint64_t low8[256];          /* lowest 8 bits */
	uint64_t pairs, both, prev_set; /* lag-1: pairs seen, pairs with both bits 1 */
	int prev;                    /* previous lowest bit, -1 before the first */
	int first_bit;
	uint64_t hist[256];
} fmt_wm_entropy;
void fmt_wm_entropy_init(fmt_wm_entropy *s);
/* A value with its lowest bits (float: of the bit pattern; integer: of the value). */
void fmt_wm_entropy_add(fmt_wm_entropy *s, double v, uint64_t low_bits);
void fmt_wm_entropy_hist(fmt_wm_entropy *s, double v);

typedef struct fmt_wm_entropy_result {
	double shannon;              /* bits, value histogram of 256 bins */
	double lsb_entropy;          /* bits, lowest bit */
	double ks_p;                 /* lowest 8 bits vs uniform 0..255 */
	double chi2_lsb_p;           /* lowest bit, 1 degree of freedom */
	double lag1_corr;            /* of consecutive lowest bits; 0 when undefined */
	double ks_d;
} fmt_wm_entropy_result;
void fmt_wm_entropy_finish(const fmt_wm_entropy *s, fmt_wm_entropy_result *r);

/* The buyers registry (JSON Lines of {"buyer": ID, "buyer_hash": HEX64, ...}): the first buyer
 * whose hash starts with prefix (lowercase hex) into *buyer (malloc'd; NULL when none, and on
 * any error). Every line is checked: a malformed one is InvalidFormat naming its number. */
fmt_kind fmt_wm_registry_find(const char *text, size_t n, const char *prefix, char **buyer, fmt_err *e);

/* Kolmogorov's limiting distribution: P[K > x] (the KS p-value of sqrt(n) D, with Stephens'
 * small-sample correction applied by the caller). */
double fmt_wm_kolmogorov_q(double x);

#endif
