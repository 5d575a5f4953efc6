/* nk-run's interpreter: a parsed .nk model (fmt/nk.h) planned once into one activation arena,
 * then run any number of times without allocating. Float models follow specs/nk.md §11, int8
 * models §12 bit for bit. */
#ifndef NK_ENGINE_H
#define NK_ENGINE_H

#include <stdint.h>
#include "fmt/nk.h"
#include "kernels.h"

/* Requantization of one int8 op (a weight/bias pair): per output channel multiplier and shift,
 * zero points and the clamp its activation gives. */
typedef struct nk_qop {
	int32_t *mult;
	int32_t *shift;
	int32_t *lsh, *rsh;      /* max(shift, 0), max(-shift, 0): the kernels' form */
	int32_t in_zp, w_zp, out_zp;
	int32_t lo, hi;
	float out_scale;
} nk_qop;

/* The largest activation arena nk-run plans (1 GiB). */
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
	int32_t out_zp;          /* int8: parameters of the last run's output */
	float out_scale;
	uint64_t *layer_ns;      /* per-layer time of the last run when profiling, else NULL */
} nk_engine;

/* Plan and allocate everything a run needs; Unsupported / InvalidFormat never happen here
 * (fmt_nk_parse checked the model), only out of memory. */
fmt_kind nk_engine_init(nk_engine *en, const nk_model *nm, const nk_kernels *k, fmt_err *e);
void nk_engine_free(nk_engine *en);
/* Time each layer of every following run (layer_ns). */
fmt_kind nk_engine_profile(nk_engine *en, fmt_err *e);

/* Float models: input_count floats in, output_count floats out (a view into the arena, valid
 * until the next run). */
const float *nk_run_float(nk_engine *en, const float *input);
/* Int8 models: input_count int8 codes in, output_count codes out. */
const int8_t *nk_run_int8(nk_engine *en, const int8_t *input);

/* The input quantization of an int8 model: the first op's input scale and zero point. */
void nk_input_quant(const nk_model *nm, float *scale, int32_t *zero_point);

/* CLOCK_MONOTONIC in nanoseconds (the profile and the benchmark). */
uint64_t nk_now_ns(void);

/* Elements of each of a UIB's two stage buffers (start depthwise output, expanded, middle
 * depthwise output alternate between them). */
uint64_t nk_uib_stage(const nk_layer *l);

/* Shared float helpers (float_ops.c) used by the engine. */
void nk_float_layer(nk_engine *en, uint32_t i, const float *x, float *y);
void nk_int8_layer(nk_engine *en, uint32_t i, const int8_t *x, int8_t *y, int32_t *cur_zp, float *cur_scale);
fmt_kind nk_int8_plan(nk_engine *en, fmt_err *e);
uint64_t nk_float_scratch(const nk_model *nm, const nk_layer *l);
uint64_t nk_float_kscratch(const nk_model *nm, const nk_layer *l);
uint64_t nk_int8_scratch(const nk_model *nm, const nk_layer *l);
uint64_t nk_int8_kscratch(const nk_model *nm, const nk_layer *l);

#endif
