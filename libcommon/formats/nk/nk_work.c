/* The work of one run of a parsed .nk network, counted from the shapes fmt_nk_parse propagated:
 * each weight (or per-channel scale, shift, gamma) is applied once per output position of its
 * operation (specs/nk.md §11, §12), each pooling window tap once per output value; bias adds,
 * activations and residual adds are not counted (at most a few per activation value). A hostile
 * file can declare more than 64 bits of it (a pooling kernel of 2^32 x 2^32): the counts
 * saturate at UINT64_MAX. */
#include <stdio.h>
#include "fmt/checked.h"
#include "fmt/nk.h"

static uint64_t positions(nk_shape s)
{
	return (uint64_t)s.h * s.w;
}

/* Pairs [first, first + n), each applied at `at` output positions. */
static uint64_t pairs_at(const nk_model *nm, uint32_t first, uint32_t n, uint64_t at)
{
	uint64_t sum = 0;
	for (uint32_t p = first; p < first + n; p++)
		sum = fmt_sat_add_u64(sum, fmt_sat_mul_u64(nm->weights[p].count, at));
	return sum;
}

/* A UIB's start depthwise and expansion run at the size after the start depthwise, its
 * middle depthwise and projection at the output size (§11.9; no BN pairs in int8 models). */
static uint64_t uib_work(const nk_model *nm, const nk_layer *l)
{
	uint32_t per_op = nm->quantized ? 1 : 2, before_middle = (l->start_dw ? per_op : 0) + per_op;
	return fmt_sat_add_u64(pairs_at(nm, l->first_pair, before_middle, positions(l->uib_start)),
		       pairs_at(nm, l->first_pair + before_middle, l->n_pairs - before_middle, positions(l->out)));
}

/* The PAFPN's pairs (§11.13): laterals at P3, P4, P5 (16A, 4A, A positions, A the input's),
 * the top-down and bottom-up depthwise + pointwise pairs, then one head per scale. */
static uint64_t pafpn_work(const nk_model *nm, const nk_layer *l)
{
	static const uint8_t scale_of_pair[11] = { 16, 4, 1, 4, 4, 16, 16, 4, 4, 1, 1 };
	static const uint8_t scale_of_head[3] = { 16, 4, 1 };
	uint64_t area = positions(l->in), sum = 0;
	uint32_t p = l->first_pair, per_head = 4 + 2 * l->convs;
	for (uint32_t i = 0; i < 11; i++)
		sum = fmt_sat_add_u64(sum, pairs_at(nm, p + i, 1, fmt_sat_mul_u64(area, scale_of_pair[i])));
	for (uint32_t h = 0; h < 3; h++)
		sum = fmt_sat_add_u64(sum, pairs_at(nm, p + 11 + h * per_head, per_head, fmt_sat_mul_u64(area, scale_of_head[h])));
	return sum;
}

static uint64_t layer_work(const nk_model *nm, const nk_layer *l)
{
	switch (l->kind) {
	case NK_DENSE: return pairs_at(nm, l->first_pair, l->n_pairs, l->in.h); /* h: an MLP's rows */
	case NK_MAXPOOL: case NK_AVGPOOL:
		return fmt_sat_mul_u64(fmt_sat_mul_u64(l->kh, l->kw), nk_shape_count(l->out));
	case NK_FLATTEN: case NK_FEATURE_TAP: return 0;
	case NK_UIB: return uib_work(nm, l);
	case NK_PAFPN: return pafpn_work(nm, l);
	default: /* convolutions, BN, LN, ConvNeXt, ResNet, head: every pair at the output size */
		return pairs_at(nm, l->first_pair, l->n_pairs, positions(l->out));
	}
}

void fmt_nk_count_work(nk_model *nm)
{
	nm->work = 0;
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		nm->layers[i].work = layer_work(nm, &nm->layers[i]);
		nm->work = fmt_sat_add_u64(nm->work, nm->layers[i].work);
	}
}

static void print_count(char *buf, size_t n, uint64_t v)
{
	snprintf(buf, n, v == UINT64_MAX ? "more than %llu" : "%llu", (unsigned long long)(v - (v == UINT64_MAX)));
}

fmt_kind fmt_nk_check_work(const nk_model *nm, uint64_t limit, fmt_err *e)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		const nk_layer *l = &nm->layers[i];
		sum = fmt_sat_add_u64(sum, l->work);
		if (sum <= limit)
			continue;
		char layer[32], total[32];
		print_count(layer, sizeof layer, l->work);
		print_count(total, sizeof total, sum);
		return fmt_fail(e, FMT_UNSUPPORTED,
				"layer %u (%s): %s multiply-adds, %s for the network up to it: above the work limit of "
				"%llu (--max-work raises it)", i, fmt_nk_kind_name(l->kind), layer, total,
				(unsigned long long)limit);
	}
	return FMT_OK;
}

fmt_kind fmt_nk_check_values(const nk_model *nm, uint64_t limit, fmt_err *e)
{
	uint64_t sum = fmt_sat_add_u64(nm->input_count, nm->output_count);
	if (sum <= limit)
		return FMT_OK;
	return fmt_fail(e, FMT_UNSUPPORTED,
			"the network's input and output hold %llu values (%llu in, %llu out): above the limit of %llu "
			"(--max-values raises it)", (unsigned long long)sum, (unsigned long long)nm->input_count,
			(unsigned long long)nm->output_count, (unsigned long long)limit);
}
