/* The .nk runtime (libcommon/nkrt/): a parsed .nk model (fmt/nk.h) planned once into one
 * activation arena, then run any number of times without allocating. Float models follow
 * specs/nk.md §11, int8 models §12 bit for bit. Used by nk-run, fmt-verify --run-tests (through
 * fmt_model_run_tests) and fmt-convert --embed-tests. */
#ifndef FMT_NKRT_H
#define FMT_NKRT_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/nk.h"

/* One build of the kernels (portable, AVX2, AVX-512, AVX-512 with VNNI), chosen at start-up. */
typedef struct nk_kernels nk_kernels;
/* The kernels for this CPU; NK_KERNELS=generic (or portable) in the environment forces the
 * portable ones (fmt/env.h; any case),
 * NK_KERNELS=avx2 or avx512 caps the choice at AVX2 or at AVX-512 without VNNI. */
const nk_kernels *fmt_nk_kernels_get(void);
const nk_kernels *fmt_nk_kernels_generic(void);
/* "vnni", "avx512", "avx2" or "generic". */
const char *fmt_nk_kernels_name(const nk_kernels *k);

/* Requantization of one int8 op (a weight/bias pair): per output channel multiplier and shift,
 * zero points and the clamp its activation gives. */
typedef struct nk_qop {
	int32_t *mult;
	int32_t *shift;
	int32_t *lsh, *rsh;      /* max(shift, 0), max(-shift, 0): the kernels' form */
	int32_t in_zp, w_zp, out_zp;
	int32_t lo, hi;
	float out_scale;
	void *pk;                /* the kernels' pre-packed form of the op (nk_kernels.qpack), or NULL */
	int8_t *lut;             /* one input per output: the 256 x out outputs of every input code, or NULL */
} nk_qop;

/* The largest activation arena the runtime plans (1 GiB). */
#define NK_ARENA_MAX (1ull << 30)

typedef struct nk_engine {
	const nk_model *nm;
	const nk_kernels *k;
	void *arena;             /* the one activation allocation */
	size_t arena_bytes;
	uint64_t act_cap;        /* elements of each of the two ping-pong buffers */
	void *buf[2];
	void *scratch;           /* per-layer temporaries (composite layers) */
	float *ktmp;             /* float: the convolutions' padded planar input; int8: int32 sums */
	float *taps[NK_MAX_TAPS];
	nk_qop *qops;            /* int8: one per pair */
	uint32_t pooled;         /* int8: 1 + the max pool layer the layer before it already applied, or 0 */
	int32_t out_zp;          /* int8: parameters of the last run's output */
	float out_scale;
	uint64_t *layer_ns;      /* per-layer time of the last run when profiling, else NULL */
} nk_engine;

/* Plan and allocate everything a run needs; Unsupported / InvalidFormat never happen here
 * (fmt_nk_parse checked the model), only out of memory. */
fmt_kind fmt_nk_engine_init(nk_engine *en, const nk_model *nm, const nk_kernels *k, fmt_err *e);
void fmt_nk_engine_free(nk_engine *en);
/* Time each layer of every following run (layer_ns). */
fmt_kind fmt_nk_engine_profile(nk_engine *en, fmt_err *e);

/* Float models: input_count floats in, output_count floats out (a view into the arena, valid
 * until the next run). */
const float *fmt_nk_run_float(nk_engine *en, const float *input);
/* Int8 models: input_count int8 codes in, output_count codes out. */
const int8_t *fmt_nk_run_int8(nk_engine *en, const int8_t *input);

/* The input quantization of an int8 model: the first op's input scale and zero point. */
void fmt_nk_input_quant(const nk_model *nm, float *scale, int32_t *zero_point);

/* CLOCK_MONOTONIC in nanoseconds (the profile and the benchmark). */
uint64_t fmt_nk_now_ns(void);

/* Input values, as nk-run and fmt-convert --embed-tests read them. */
typedef struct nk_values {
	double *v;
	size_t n;
	int raw;                 /* binary or random: already in the model's input type */
} nk_values;

fmt_kind fmt_nk_parse_value_list(const char *text, nk_values *out, fmt_err *e);
fmt_kind fmt_nk_parse_value_json(const char *text, size_t len, nk_values *out, fmt_err *e);
fmt_kind fmt_nk_read_value_file(const char *path, const nk_model *nm, nk_values *out, fmt_err *e);
fmt_kind fmt_nk_random_values(uint64_t seed, const nk_model *nm, nk_values *out, fmt_err *e);
fmt_kind fmt_nk_values_to_input(const nk_values *v, const nk_model *nm, int quantize, void *dst, fmt_err *e);
void fmt_nk_values_free(nk_values *v);

/* One run on input (float32, or int8 codes for an int8 model): its output in the arena. */
const void *fmt_nk_run(nk_engine *en, const void *input);
/* The output as a double (int8: the code itself). */
double fmt_nk_value_at(const nk_model *nm, const void *out, uint64_t i);
/* The order of outputs (argmax, nk-run --top): a ranks above b when a > b, and NaN ranks above
 * every number (as numpy's argmax and sort take it); equal values (NaNs among them) do not. */
int fmt_nk_ranks_above(double a, double b);
/* Lowest index among equal maxima (§14) in that order: the first NaN when there is one (as
 * np.argmax). */
uint64_t fmt_nk_argmax(const nk_model *nm, const void *out, uint64_t n);

struct fmt_test_case;
/* Every embedded case of nm (§14) on en, each to each(ctx, case) (when not NULL), counted into
 * *passed and *failed. TestFailed when a case failed, or when there are none (counted as one
 * failed case). */
fmt_kind fmt_nk_test_suite(const nk_model *nm, nk_engine *en, void (*each)(void *ctx, const struct fmt_test_case *c),
			   void *ctx, unsigned *passed, unsigned *failed, fmt_err *e);
/* The suite of a model opened with the nk driver, on the kernels for this CPU, after the work
 * check (max_work, 0: NK_DEFAULT_MAX_WORK); what fmt_model_run_tests runs for .nk files. */
struct fmt_model;
fmt_kind fmt_nk_model_tests(const struct fmt_model *m, uint64_t max_work,
			    void (*each)(void *ctx, const struct fmt_test_case *c), void *ctx, fmt_err *e);

/* ---- fmt-convert --embed-tests ---- */

/* One test case to embed: its input values (float; an int8 network quantizes them with its
 * input scale and zero point, as nk-run --quantize-input), its label (-1: none) and its name
 * (NULL: "case N", N from 0). */
typedef struct nk_embed_case {
	const char *name;
	size_t name_len;
	int32_t label;
	const double *values;
	size_t n;
} nk_embed_case;

/* A copy of the .nk file data[0..size) with a TCAS block of these cases (specs/nk.md §8): the
 * expected outputs computed by the runtime (an int8 network's dequantized), the given absolute
 * tolerance, bit 0 of the flags set (bit 2 for an int8 network's int8 inputs). A TCAS block the
 * file had is replaced. The result passes its own suite (checked). *out is malloc'd.
 * InvalidFormat: a case of the wrong size, a value or output not finite, a label out of range,
 * more than 16 cases; TestFailed: a label the network does not predict; Unsupported: more work
 * than NK_DEFAULT_MAX_WORK. */
fmt_kind fmt_nk_embed_tests(const void *data, size_t size, const nk_embed_case *cases, size_t n_cases, float tolerance,
			    uint8_t **out, size_t *out_size, fmt_err *e);

/* The cases of an INPUTS file for nm: raw little-endian float32 (a whole number of inputs of
 * input_count values), or a JSON array of cases, each an array of numbers (nested arrays
 * flattened) or an object {"input": [...], "name": "...", "label": N}. Freed with
 * fmt_nk_embed_cases_free. */
typedef struct nk_embed_set {
	nk_embed_case *cases;
	size_t n;
	double *values;          /* every case's values, one block */
	char *names;             /* every name, one block */
} nk_embed_set;
fmt_kind fmt_nk_read_embed_inputs(const char *path, const nk_model *nm, nk_embed_set *set, fmt_err *e);
/* The same file format with 1 to max inputs (fmt-convert --calibration: NK_MAX_CALIBRATION). */
fmt_kind fmt_nk_read_inputs(const char *path, const nk_model *nm, size_t max, nk_embed_set *set, fmt_err *e);
/* --labels FILE: one integer per case (-1: none), a JSON array or numbers separated by white
 * space or commas; as many as the cases. */
fmt_kind fmt_nk_read_embed_labels(const char *path, nk_embed_set *set, fmt_err *e);
void fmt_nk_embed_cases_free(nk_embed_set *set);

/* ---- fmt-convert --dtype int8 --calibration ---- */

/* At most this many calibration inputs (upstream's quantizer uses its first 256). */
#define NK_MAX_CALIBRATION 256

/* How the int8 network agrees with the float one over the calibration inputs. */
typedef struct nk_quant_report {
	size_t inputs;           /* calibration inputs */
	size_t argmax_agree;     /* of them, those whose int8 argmax is the float argmax */
	double max_abs_error;    /* largest |float output - dequantized int8 output| */
	size_t worst_input;      /* the input of that error */
	uint32_t ops;            /* quantized operations (QUAN records) */
} nk_quant_report;

/* The int8 (version 4) file of the float .nk network data[0..size) (fmt_nk_write_int8), its
 * activation ranges taken by running the float network over the cases' inputs (labels and
 * names unused), and the agreement of the two networks over them into *r. *out malloc'd.
 * Unsupported: a layer without int8 form, more work than NK_DEFAULT_MAX_WORK; InvalidFormat: an
 * input of the wrong size or not finite, a layer output that is not finite, no inputs or more
 * than NK_MAX_CALIBRATION. */
fmt_kind fmt_nk_quantize(const void *data, size_t size, const nk_embed_set *cal, uint8_t **out, size_t *out_size,
			 nk_quant_report *r, fmt_err *e);

#endif
