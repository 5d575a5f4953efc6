/* What the runtime's files share: the kernels, and the float and int8 layers the engine
 * plans and runs. */
#ifndef NKRT_INTERNAL_H
#define NKRT_INTERNAL_H

#include "fmt/nkrt.h"
#include "kernels.h"

/* Elements of each of a UIB's two stage buffers (start depthwise output, expanded, middle
 * depthwise output alternate between them). */
uint64_t fmt_nk_uib_stage(const nk_layer *l);

/* The layers (float_ops.c, int8_ops.c) the engine plans and runs. */
void fmt_nk_float_layer(nk_engine *en, uint32_t i, const float *x, float *y);
/* Float layer i in the arithmetic of upstream's calibration run (calib_ops.c): what the
 * activation ranges of fmt-convert --dtype int8 come from. */
void fmt_nk_calib_layer(nk_engine *en, uint32_t i, const float *x, float *y);
void fmt_nk_int8_layer(nk_engine *en, uint32_t i, const int8_t *x, int8_t *y, int32_t *cur_zp, float *cur_scale);
fmt_kind fmt_nk_int8_plan(nk_engine *en, fmt_err *e);
uint64_t fmt_nk_float_scratch(const nk_model *nm, const nk_layer *l);
uint64_t fmt_nk_float_kscratch(const nk_model *nm, const nk_layer *l);
uint64_t fmt_nk_int8_scratch(const nk_model *nm, const nk_layer *l);
uint64_t fmt_nk_int8_kscratch(const nk_model *nm, const nk_layer *l);

/* A JSON array of numbers (nested arrays flattened in order) into out. */
#include <jansson.h>
fmt_kind fmt_nk_values_from_json(json_t *j, nk_values *out, fmt_err *e);
/* Bytes that start with '[' and end with ']' around white space. */
int fmt_nk_looks_like_json(const uint8_t *b, size_t n);
/* The index of the first of values[0..n) that is not a finite float32 (NaN, infinite, or
 * beyond FLT_MAX), n when all are. */
size_t fmt_nk_first_nonfinite(const double *values, size_t n);

#endif
