/* The spread-spectrum watermark for model weights, scheme fmtkit-ss/1 (man/fmt-watermark.1,
 * "THE SPREAD-SPECTRUM SCHEME"): every element of a float tensor gets ±A (A = strength x the
 * standard deviation of its block of 65536 elements); which of 2048 code bits it carries and its
 * sign come from a ChaCha20 keystream keyed by the seller's key and indexed by the tensor's
 * element count and the element's index, so names, dtypes, byte layouts, tensor order and
 * dropped tensors do not move them. The 64-bit payload (fmt_wm_payload) is coded byte by byte
 * with the [256, 8] Hadamard code. Detection correlates each code bit's elements with their signs
 * per tensor, normalised (z: free of scale, shift and value distribution), and decodes by a
 * Walsh-Hadamard transform; prove's p-value is the share of all 2^48 buyer hashes that would
 * score as high as the buyer's, counted exactly. */
#ifndef FMT_WATERMARK_SS_H
#define FMT_WATERMARK_SS_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/watermark.h"

#define FMT_SS_GROUPS 2048            /* code bits: 8 payload bytes x 256 */
#define FMT_SS_BYTES 8
#define FMT_SS_BLOCK 65536            /* elements whose standard deviation sets the amplitude */
#define FMT_SS_DEFAULT_STRENGTH 0.01  /* amplitude / block std: RMS change <= 1 % of the std */
#define FMT_SS_MAX_STRENGTH 0.5
#define FMT_SS_RANKED_BYTES 6         /* prove ranks the 6 buyer-hash bytes (not the CRC) */
#define FMT_SS_MAX_ELEMS (UINT64_C(1) << 37) /* the keystream's 32-bit block counter */

/* The 32-byte ChaCha20 key: HMAC-SHA256(K, "fmtkit-ss/1 stream"). */
void fmt_ss_stream_key(const fmt_wm_key *key, uint8_t sk[32]);

/* r_i for elements [first, first + n) of a tensor of nelems elements: bytes 2i and 2i + 1 of the
 * ChaCha20 (RFC 8439) keystream under sk with nonce = nelems (u64 LE) || 0 (u32), little-endian.
 * Code bit j = r & 2047, sign s = -1 when bit 11 is set. */
void fmt_ss_stream(const uint8_t sk[32], uint64_t nelems, uint64_t first, size_t n, uint16_t *r);

/* d_j = +1 or -1: code bit j = 256 b + x carries parity(payload byte b AND x) (d = 1 - 2 bit);
 * payload byte 0 is the most significant. */
void fmt_ss_codeword(uint64_t payload, int8_t d[FMT_SS_GROUPS]);

typedef struct fmt_ss_params {
	uint8_t sk[32];                /* the stream key of the scheme embedded */
	int8_t d[FMT_SS_GROUPS];
	double strength;
	int version;                   /* 2: fmtkit-ss/2 (fmt_ss2_embed), 1: fmtkit-ss/1 (fmt_ss_embed) */
} fmt_ss_params;

/* Mark one block in place: n little-endian float32 (width 4) or float64 (8) values at p, the
 * elements [first, first + n) of a tensor of nelems elements, first a multiple of FMT_SS_BLOCK
 * and n = min(FMT_SS_BLOCK, nelems - first). Non-finite values stay and do not count. */
void fmt_ss_embed(const fmt_ss_params *prm, uint8_t *p, uint64_t nelems, uint64_t first, size_t n, int width,
		  fmt_wm_dist *d);

/* One tensor's sums per code bit (over finite values): count, sum of signs, of sign x value, of
 * values and of squares. */
typedef struct fmt_ss_acc {
	uint64_t n[FMT_SS_GROUPS];
	double s[FMT_SS_GROUPS], sv[FMT_SS_GROUPS], v1[FMT_SS_GROUPS], v2[FMT_SS_GROUPS];
} fmt_ss_acc;

/* Add values [first, first + n) of a tensor of nelems elements (float32 or float64 in host
 * order, as decoded). */
void fmt_ss_acc_f32(const uint8_t sk[32], fmt_ss_acc *a, const float *v, uint64_t nelems, uint64_t first, size_t n);
void fmt_ss_acc_f64(const uint8_t sk[32], fmt_ss_acc *a, const double *v, uint64_t nelems, uint64_t first, size_t n);
void fmt_ss_acc_merge(fmt_ss_acc *into, const fmt_ss_acc *piece);

/* The model's evidence: per code bit, sum over tensors of sqrt(n_tj) z_tj and of n_tj. */
typedef struct fmt_ss_sum {
	double zw[FMT_SS_GROUPS], n[FMT_SS_GROUPS];
	uint64_t values;
	size_t tensors;
} fmt_ss_sum;

/* z_tj = (sum s v - m sum s) / sqrt(sum (v - m)^2) with m the tensor's mean; 0 without spread. */
void fmt_ss_sum_add(fmt_ss_sum *sum, const fmt_ss_acc *a);

/* Per payload byte, the score of each of the 256 values: the Walsh-Hadamard transform of
 * y_j = zw_j / sqrt(n_j) over the byte's 256 code bits, divided by 16 (N(0,1) without a mark). */
void fmt_ss_scores(const fmt_ss_sum *sum, double score[FMT_SS_BYTES][256]);

/* The payload of the best-scoring bytes; *ties counts bytes whose best score is shared. */
uint64_t fmt_ss_decode(const double score[FMT_SS_BYTES][256], unsigned *ties);

/* How many of the 256 values score at least as high as v: 1 = v is the best. */
unsigned fmt_ss_rank(const double score[256], unsigned v);

/* prove's p-value for a buyer's payload: the chance that a buyer drawn at random (6 uniform
 * hash bytes U_b) scores at least as high, P[sum_b score_b(U_b) >= sum_b score_b(P_b)] over
 * the 6 buyer-hash bytes (the CRC bytes follow from them); each score rounded up to a multiple
 * of 1/32 in the count, so the result is an upper bound, counted exactly over 2^48. Negative on
 * allocation failure. */
double fmt_ss_score_p(const double score[FMT_SS_BYTES][256], uint64_t payload);


/* fmtkit-ss/2 (man/fmtkit-watermark.7): a tensor is cut into runs of FMT_SS2_RUN elements and the
 * runs into groups of FMT_SS2_GROUP (one group = FMT_SS_BLOCK elements); one run per group, picked
 * by the key, is marked and the rest is left alone. In a marked run, each payload byte's 256 code
 * bits move along the Hadamard code word or against it, whichever the run's own values already
 * lean to (the sign of their correlation with it), and the detector scores each run and byte by
 * the absolute value of the correlation, so the original weights add to the evidence instead of
 * hiding it. A marked run's energy (sum of squared changes) is strength^2 x a lower bound of its
 * group's sum of squared deviations from the group's mean, computed from every value of the group
 * in a fixed float32 order, and every change is rounded toward the original value: the tensor's
 * RMS change is at most strength x its standard deviation, whatever the values (the law of total
 * variance). Element positions and signs come from the keystream of fmt_ss_stream under the
 * fmtkit-ss/2 stream key. */
#define FMT_SS2_RUN 512
#define FMT_SS2_GROUP 128
_Static_assert(FMT_SS2_RUN * FMT_SS2_GROUP == FMT_SS_BLOCK, "a group is a block");

/* HMAC-SHA256(K, "fmtkit-ss/2 stream"). */
void fmt_ss2_stream_key(const fmt_wm_key *key, uint8_t sk[32]);
/* The marked run of group g (runs 128g .. 128g + 127, fewer in a tensor's last group). */
uint64_t fmt_ss2_marked_run(const uint8_t sk[32], uint64_t nelems, uint64_t group);
/* Mark one group in place: n little-endian float32 (width 4) or float64 (8) values at p, the
 * elements [first, first + n) of a tensor of nelems, first a multiple of FMT_SS_BLOCK and
 * n = min(FMT_SS_BLOCK, nelems - first). d gets the group's moments (every finite value is
 * read) and the marked run's changes. */
void fmt_ss2_embed(const fmt_ss_params *prm, uint8_t *p, uint64_t nelems, uint64_t first, size_t n,
		   int width, fmt_wm_dist *d);

/* The evidence: per payload byte and candidate, the sum over marked runs of sqrt(n_kb) x
 * |score_kb(a)|, and the sum of n_kb (n_kb: the run's finite values on the byte's code bits). */
typedef struct fmt_ss2_acc {
	double y[FMT_SS_BYTES][256], w[FMT_SS_BYTES];
	uint64_t values, runs;
} fmt_ss2_acc;
/* Add the marked runs among values [first, first + n) of a tensor (host order, as decoded):
 * first a multiple of FMT_SS_BLOCK, n a multiple of it or reaching the tensor's end. */
void fmt_ss2_acc_f32(const uint8_t sk[32], fmt_ss2_acc *a, const float *v, uint64_t nelems, uint64_t first, size_t n);
void fmt_ss2_acc_f64(const uint8_t sk[32], fmt_ss2_acc *a, const double *v, uint64_t nelems, uint64_t first,
		     size_t n);
void fmt_ss2_acc_merge(fmt_ss2_acc *into, const fmt_ss2_acc *piece);
/* score_b(a) = y_b(a) / sqrt(w_b) (0 without runs): for fmt_ss_decode and fmt_ss_score_p. */
void fmt_ss2_scores(const fmt_ss2_acc *a, double score[FMT_SS_BYTES][256]);

#endif
