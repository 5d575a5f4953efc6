/* OCP minifloats for the fp8/fp6/fp4 compressed formats (specs/apsim.md §4):
 * E4M3 (fn: bias 7, max 448, no infinities, S.1111.111 is NaN), MX E3M2 (bias 3, max 28) and
 * MX E2M1 (bias 1: 0, 0.5, 1, 1.5, 2, 3, 4, 6); all with subnormals. Encoding rounds to the
 * nearest representable value, ties to even, and saturates at ±max. */
#include <math.h>
#include "fmt/qtensor.h"

typedef struct minifloat {
	int bits;     /* total width */
	int mbits;    /* mantissa bits */
	int bias;
	float max;
	int has_nan;  /* E4M3fn: S.1111.111 */
} minifloat;

static const minifloat E4M3 = { 8, 3, 7, 448.0f, 1 };
static const minifloat E3M2 = { 6, 2, 3, 28.0f, 0 };
static const minifloat E2M1 = { 4, 1, 1, 6.0f, 0 };

static const minifloat *minifloat_of(fmt_qformat f)
{
	return f == FMT_Q_FP8 ? &E4M3 : f == FMT_Q_FP6 ? &E3M2 : f == FMT_Q_FP4 ? &E2M1 : NULL;
}

/* floor(log2(a)) for a finite a > 0. */
static int exponent_of(float a)
{
	int e;
	(void)frexpf(a, &e);
	return e - 1;
}

static unsigned encode(const minifloat *f, float x)
{
	unsigned sign = signbit(x) ? 1u << (f->bits - 1) : 0;
	int emin = 1 - f->bias;
	if (isnan(x))
		return f->has_nan ? sign | 0x7Fu : sign;
	float a = fabsf(x);
	if (!(a <= f->max))
		a = f->max;
	if (a == 0.0f)
		return sign;
	int ex = exponent_of(a);
	if (ex < emin)
		ex = emin;
	/* a / quantum is exact (a power-of-two scaling well inside float range); rintf rounds
	 * to nearest even in the default rounding mode. */
	float quantum = ldexpf(1.0f, ex - f->mbits);
	float r = rintf(a / quantum) * quantum;
	if (r > f->max)
		r = f->max;
	if (r == 0.0f)
		return sign;
	ex = exponent_of(r);
	if (ex < emin)
		return sign | (unsigned)(r / ldexpf(1.0f, emin - f->mbits));
	unsigned mant = (unsigned)(r / ldexpf(1.0f, ex - f->mbits)) - (1u << f->mbits);
	return sign | (unsigned)(ex + f->bias) << f->mbits | mant;
}

static float decode(const minifloat *f, unsigned code)
{
	unsigned sign = code >> (f->bits - 1) & 1u;
	unsigned field = code >> f->mbits & ((1u << (f->bits - 1 - f->mbits)) - 1);
	unsigned mant = code & ((1u << f->mbits) - 1);
	float v;
	if (f->has_nan && field == (1u << (f->bits - 1 - f->mbits)) - 1 && mant == (1u << f->mbits) - 1)
		v = NAN;
	else if (field == 0)
		v = ldexpf((float)mant, 1 - f->bias - f->mbits);
	else
		v = ldexpf((float)((1u << f->mbits) + mant), (int)field - f->bias - f->mbits);
	return sign ? -v : v;
}

unsigned fmt_minifloat_encode(fmt_qformat f, float x)
{
	const minifloat *m = minifloat_of(f);
	return m ? encode(m, x) : 0;
}

float fmt_minifloat_decode(fmt_qformat f, unsigned code)
{
	const minifloat *m = minifloat_of(f);
	return m ? decode(m, code & ((1u << m->bits) - 1)) : NAN;
}
