/* Values a target dtype cannot hold: finite float32 values that F16 or BF16 round to infinity,
 * and Q8_0 / Q4_0 blocks whose scale overflows F16 (specs/gguf.md §10-§12). llama.cpp refuses
 * such files ("tensor ... has invalid data"), so writers refuse them unless asked otherwise. */
#ifndef FMT_OVERFLOW_H
#define FMT_OVERFLOW_H

#include <stdint.h>
#include "fmt/dtype.h"
#include "fmt/err.h"

typedef enum fmt_overflow_mode {
	FMT_OVERFLOW_REFUSE = 0,   /* InvalidFormat naming the tensor, the element and the value */
	FMT_OVERFLOW_SATURATE,     /* F16 to ±65504, BF16 to ±3.3895314e38; Q8_0/Q4_0 as F16, so */
	FMT_OVERFLOW_WIDEN         /* the tensor is written as F32 instead */
} fmt_overflow_mode;

/* "refuse", "saturate", "widen" -> mode; 0 for any other name. */
int fmt_overflow_mode_from_name(const char *name, fmt_overflow_mode *mode);
const char *fmt_overflow_mode_name(fmt_overflow_mode mode);

/* 1 if values of dtype from, encoded as to, can overflow (to is F16, BF16, Q8_0 or Q4_0, and
 * from's range is not already inside to's). */
int fmt_overflow_possible(fmt_dtype from, fmt_dtype to);

/* The first element of x[0..n) that to cannot hold: a finite value F16/BF16 round to infinity,
 * or the largest-magnitude element (the first one, as ggml picks it) of a Q8_0/Q4_0 block whose
 * F16 scale is infinite. For block types n is a multiple of 32. Non-finite values are not
 * overflows (quantizers refuse them on their own). 1 and *at when found, else 0. */
int fmt_overflow_find(fmt_dtype to, const float *x, uint64_t n, uint64_t *at);

/* Replace every finite value beyond F16's (BF16's) largest finite value by that value with the
 * value's sign; other dtypes are left alone. Returns how many values changed. */
uint64_t fmt_overflow_saturate(fmt_dtype to, float *x, uint64_t n);

/* The message of a refusal: "tensor 'NAME': element N is V, beyond what F16 holds (largest
 * finite value 65504)", InvalidFormat. */
fmt_kind fmt_overflow_fail(fmt_err *e, const char *tensor, fmt_dtype to, uint64_t elem, float value);

#endif
