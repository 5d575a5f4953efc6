/* Planning (one arena: two ping-pong activation buffers, the largest layer scratch, the feature
 * taps) and the run loops. Nothing is allocated once fmt_nk_engine_init has returned. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "nkrt_internal.h"

#define ARENA_ALIGN 64

static uint64_t round_up(uint64_t n)
{
	return (n + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1);
}

fmt_kind fmt_nk_engine_init(nk_engine *en, const nk_model *nm, const nk_kernels *k, fmt_err *e)
{
	memset(en, 0, sizeof *en);
	en->nm = nm;
	en->k = k;
	size_t elem = nm->quantized ? 1 : sizeof(float);
	uint64_t act = nk_shape_count(nm->input), scratch = 0, kscratch = 0, taps[NK_MAX_TAPS] = { 0 };
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		uint64_t n = nk_shape_count(l->out);
		uint64_t s = nm->quantized ? fmt_nk_int8_scratch(nm, l) : fmt_nk_float_scratch(nm, l);
		act = n > act ? n : act;
		scratch = s > scratch ? s : scratch;
		/* int8: one int32 sum per output channel of the widest op */
		uint64_t ks = nm->quantized ? fmt_nk_int8_kscratch(nm, l) : fmt_nk_float_kscratch(nm, l);
		kscratch = ks > kscratch ? ks : kscratch;
		if (l->kind == NK_FEATURE_TAP && n > taps[l->tap_id])
			taps[l->tap_id] = n;
	}
	/* Every count is below 2^26 elements (the loader), scratch a small multiple of that. */
	uint64_t total = 2 * round_up(act * elem) + round_up(scratch * elem) + round_up(kscratch * sizeof(float));
	for (int t = 0; t < NK_MAX_TAPS; t++)
		total += round_up(taps[t] * elem);
	/* A small file can declare large shapes: the arena is refused above a bound, not attempted. */
	if (total > NK_ARENA_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "the network needs a %llu-byte activation arena (at most %llu)",
				(unsigned long long)total, (unsigned long long)NK_ARENA_MAX);
	if (!(en->arena = aligned_alloc(ARENA_ALIGN, (size_t)total)))
		return fmt_fail(e, FMT_IO, "out of memory for a %llu-byte activation arena", (unsigned long long)total);
	en->arena_bytes = (size_t)total;
	en->act_cap = act;
	uint8_t *at = en->arena;
	en->buf[0] = at;
	at += round_up(act * elem);
	en->buf[1] = at;
	at += round_up(act * elem);
	en->scratch = at;
	at += round_up(scratch * elem);
	en->ktmp = (float *)at;
	at += round_up(kscratch * sizeof(float));
	for (int t = 0; t < NK_MAX_TAPS; t++) {
		en->taps[t] = (float *)at;
		at += round_up(taps[t] * elem);
	}
	memset(en->arena, 0, en->arena_bytes); /* touch it now, not in the first run */
	if (nm->quantized)
		return fmt_nk_int8_plan(en, e);
	return FMT_OK;
}

void fmt_nk_engine_free(nk_engine *en)
{
	if (en->qops)
		for (uint32_t p = 0; p < en->nm->n_weights; p++) {
			free(en->qops[p].mult);
			free(en->qops[p].shift);
			free(en->qops[p].lsh);
			free(en->qops[p].rsh);
			free(en->qops[p].pk);
			free(en->qops[p].lut);
		}
	free(en->qops);
	free(en->arena);
	free(en->layer_ns);
	memset(en, 0, sizeof *en);
}

fmt_kind fmt_nk_engine_profile(nk_engine *en, fmt_err *e)
{
	if (!(en->layer_ns = calloc(en->nm->n_layers, sizeof *en->layer_ns)))
		return fmt_fail(e, FMT_IO, "out of memory");
	return FMT_OK;
}

uint64_t fmt_nk_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const float *fmt_nk_run_float(nk_engine *en, const float *input)
{
	const nk_model *nm = en->nm;
	float *cur = en->buf[0], *next = en->buf[1];
	memcpy(cur, input, nm->input_count * sizeof(float));
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		uint64_t t0 = en->layer_ns ? fmt_nk_now_ns() : 0;
		fmt_nk_float_layer(en, i, cur, next);
		if (en->layer_ns)
			en->layer_ns[i] = fmt_nk_now_ns() - t0;
		float *t = cur;
		cur = next;
		next = t;
	}
	return cur;
}

const int8_t *fmt_nk_run_int8(nk_engine *en, const int8_t *input)
{
	const nk_model *nm = en->nm;
	int8_t *cur = en->buf[0], *next = en->buf[1];
	int32_t zp = 0;
	float scale = 1.0f;
	memcpy(cur, input, nm->input_count);
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		uint64_t t0 = en->layer_ns ? fmt_nk_now_ns() : 0;
		fmt_nk_int8_layer(en, i, cur, next, &zp, &scale);
		if (en->layer_ns)
			en->layer_ns[i] = fmt_nk_now_ns() - t0;
		int8_t *t = cur;
		cur = next;
		next = t;
	}
	en->out_zp = zp;
	en->out_scale = scale;
	return cur;
}

uint64_t fmt_nk_uib_stage(const nk_layer *l)
{
	uint64_t m = (uint64_t)l->uib_start.h * l->uib_start.w * (l->in_ch > l->expanded ? l->in_ch : l->expanded);
	uint64_t b = (uint64_t)l->out.h * l->out.w * l->expanded; /* the middle depthwise output */
	return m > b ? m : b;
}

void fmt_nk_input_quant(const nk_model *nm, float *scale, int32_t *zero_point)
{
	*scale = nm->n_quant ? nm->quant[0].in_scale : 1.0f;
	*zero_point = nm->n_quant ? nm->quant[0].in_zp : 0;
}
