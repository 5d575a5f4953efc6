/* Which dtype each tensor gets, which metadata and units survive, and the output model. */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/out.h"
#include "fmt/qtensor.h"
#include "fmt/quant.h"
#include "fmt/retype.h"
#include "fmt/shardset.h"
#include "fmt/strbuf.h"
#include "fmt/table.h"
#include "pipeline_internal.h"

/* The output format's profile: what it can hold (fmt_driver capabilities), asked of the driver
 * once per conversion and consulted for every tensor and key. */
typedef struct target {
	const fmt_driver *d;
	unsigned char holds[FMT_DT_COUNT];   /* dtypes stored as they are */
	int encodes;                         /* encoded tensors (FMT_CAP_ENCODED) */
	int units, units_as_meta;            /* FMT_CAP_UNITS, FMT_CAP_UNITS_AS_META */
	int typed_meta;                      /* FMT_CAP_TYPED_META: else strings only */
	int signatures;                      /* FMT_CAP_SIGNATURES */
	int dequant_guarded;                 /* FMT_CAP_DEQUANT_GUARDED */
	const char *default_dtype;           /* --dtype when none is given, NULL: keep */
	fmt_dtype (*choose_dtype)(const fmt_tensor *t, fmt_dtype want, const char **why);
	fmt_kind (*mix_dtypes)(const fmt_model *m, const fmt_model *meta, const char *name, const void *options,
			       fmt_mix_entry *entries, const char **mix, char *note, size_t note_n, fmt_err *e);
	const fmt_drvopts *options;          /* the options the driver declares */
} target;

static void profile_of(const fmt_driver *d, target *tg)
{
	memset(tg, 0, sizeof *tg);
	tg->d = d;
	for (int t = FMT_DT_INVALID + 1; t < FMT_DT_COUNT; t++)
		tg->holds[t] = (unsigned char)fmt_driver_holds_dtype(d, (fmt_dtype)t);
	tg->encodes = fmt_driver_can(d, FMT_CAP_ENCODED);
	tg->units = fmt_driver_can(d, FMT_CAP_UNITS);
	tg->units_as_meta = fmt_driver_can(d, FMT_CAP_UNITS_AS_META);
	tg->typed_meta = fmt_driver_can(d, FMT_CAP_TYPED_META);
	tg->signatures = fmt_driver_can(d, FMT_CAP_SIGNATURES);
	tg->dequant_guarded = fmt_driver_can(d, FMT_CAP_DEQUANT_GUARDED);
	tg->default_dtype = d->default_dtype;
	tg->choose_dtype = d->choose_dtype;
	tg->mix_dtypes = d->mix_dtypes;
	tg->options = d->options;
}

static int holds(const target *tg, fmt_dtype t)
{
	return t > FMT_DT_INVALID && t < FMT_DT_COUNT && tg->holds[t];
}

/* "--dtype X needs GGUF output": the format a message names for what the target lacks. */
static const char *title_of(const fmt_driver *d)
{
	return d ? d->title : "another";
}

/* --dtype: keep, a plain dtype, or (for .apsim) a compressed format. */
typedef struct wanted {
	fmt_dtype plain;   /* FMT_DT_INVALID unless a plain dtype was asked */
	int qformat;       /* a fmt_qformat, or -1 */
	int defaulted;     /* no --dtype: quantized tensors the target holds stay as they are */
} wanted;

static int keep(wanted w)
{
	return w.plain == FMT_DT_INVALID && w.qformat < 0;
}

/* --dtype's plain dtypes. */
static const struct { const char *name; fmt_dtype dtype; } plain[] = {
	{ "f32", FMT_DT_F32 }, { "f16", FMT_DT_F16 }, { "bf16", FMT_DT_BF16 },
	{ "q8_0", FMT_DT_Q8_0 }, { "q4_0", FMT_DT_Q4_0 }, { "q4_1", FMT_DT_Q4_1 },
	{ "q5_0", FMT_DT_Q5_0 }, { "q5_1", FMT_DT_Q5_1 }, { "q2_k", FMT_DT_Q2_K },
	{ "q3_k", FMT_DT_Q3_K }, { "q4_k", FMT_DT_Q4_K }, { "q5_k", FMT_DT_Q5_K },
	{ "q6_k", FMT_DT_Q6_K }, { "iq4_nl", FMT_DT_IQ4_NL }, { "iq4_xs", FMT_DT_IQ4_XS },
};
#define N_PLAIN (sizeof plain / sizeof plain[0])

static int is_plain_name(const char *name)
{
	for (size_t i = 0; i < N_PLAIN; i++)
		if (strcasecmp(plain[i].name, name) == 0)
			return 1;
	return 0;
}

#define MIXES_MAX 64

/* A --dtype that names nothing the target takes: another format's mix of dtypes (GGUF's
 * Q4_K_M for safetensors output), or a word to list the names for, with the one the user
 * likely meant. */
static fmt_kind unknown_dtype(const target *tg, const char *name, fmt_err *e)
{
	fmt_drvopt_value mixes[MIXES_MAX], own[MIXES_MAX];
	size_t n_mixes = fmt_driver_dtype_mixes(mixes, MIXES_MAX);
	const fmt_driver *mixer = fmt_driver_with_mix(name), *aliaser = fmt_driver_with_alias(name);
	if (!mixer && aliaser && aliaser != tg->d)   /* GGUF's 15 (llama-quantize's Q4_K_M) */
		return fmt_fail(e, FMT_USAGE, "--dtype %s needs %s output (its name of one of its presets or dtypes; "
				"%s has none)", name, aliaser->title, tg->d->title);
	if (mixer && mixer != tg->d)
		return fmt_fail(e, FMT_USAGE, "--dtype %s needs %s output (a preset of its dtypes; %s has none)", name,
				mixer->title, tg->d->title);
	fmt_nearest near;
	fmt_nearest_init(&near, name);
	for (size_t i = 0; i < N_PLAIN; i++)
		fmt_nearest_offer(&near, plain[i].name);
	for (int f = FMT_Q_INT8; f <= FMT_Q_BF16; f++)
		fmt_nearest_offer(&near, fmt_qformat_name((fmt_qformat)f));
	fmt_nearest_offer(&near, "keep");
	for (size_t i = 0; i < n_mixes; i++)
		fmt_nearest_offer(&near, mixes[i].word);
	char own_list[512] = "", not_word[160];
	if (tg->d->dtype_mixes) {   /* those that are not a dtype's name too */
		const char *words[MIXES_MAX];
		size_t n_words = 0, n_own = tg->d->dtype_mixes(own, MIXES_MAX);
		for (size_t i = 0; i < n_own; i++)
			if (!is_plain_name(own[i].word))
				words[n_words++] = own[i].word;
		size_t used = (size_t)snprintf(own_list, sizeof own_list, ", or for %s output the presets ", tg->d->title);
		if (n_words && used < sizeof own_list)
			fmt_join_words(words, n_words, " or ", own_list + used, sizeof own_list - used);
		else
			own_list[0] = '\0';
	}
	return fmt_fail(e, FMT_USAGE, "--dtype takes f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, fp6, fp4 "
			"or keep, or the ggml types q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, "
			"iq4_xs%s (%s)", own_list, fmt_not_word(not_word, sizeof not_word, name, fmt_nearest_best(&near)));
}

static fmt_kind parse_wanted(const fmt_convert_opts *o, const target *tg, wanted *w, fmt_err *e)
{
	const char *name = o->dtype ? o->dtype : tg->default_dtype ? tg->default_dtype : "keep";
	fmt_qformat qf;
	w->plain = FMT_DT_INVALID;
	w->qformat = -1;
	w->defaulted = o->dtype == NULL;
	if (strcasecmp(name, "keep") == 0)
		return FMT_OK;
	/* For formats with encoded tensors, bf16 is the encoded format of that name (Apsi §4). */
	if (fmt_qformat_from_name(name, &qf) && (tg->encodes || (strcasecmp(name, "bf16") != 0))) {
		if (!tg->encodes)
			return fmt_fail(e, FMT_USAGE, "--dtype %s needs %s output (%s cannot hold it)", name,
					title_of(fmt_driver_with(FMT_CAP_ENCODED)), o->to->name);
		w->qformat = (int)qf;
		return FMT_OK;
	}
	for (size_t i = 0; i < N_PLAIN; i++) {
		if (strcasecmp(name, plain[i].name) != 0)
			continue;
		if (!holds(tg, plain[i].dtype))
			return fmt_fail(e, FMT_USAGE, "--dtype %s needs %s output (%s cannot hold it)", name,
					title_of(fmt_driver_holding(plain[i].dtype)), o->to->name);
		w->plain = plain[i].dtype;
		return FMT_OK;
	}
	return unknown_dtype(tg, name, e);
}

const char *fmt_pipeline_dtype_name(const fmt_convert_opts *o)
{
	const char *alias = o->dtype && o->to && o->to->dtype_alias ? o->to->dtype_alias(o->dtype) : NULL;
	return alias ? alias : o->dtype;
}

fmt_kind fmt_pipeline_check_dtype(const fmt_convert_opts *o, fmt_err *e)
{
	target tg;
	wanted w;
	if (!o->dtype || fmt_driver_with_mix(o->dtype) == o->to)
		return FMT_OK;
	profile_of(o->to, &tg);
	if (tg.mix_dtypes) { /* a name the driver refuses itself (llama-quantize's COPY, IQ2_XXS) */
		fmt_model none;
		fmt_mix_entry entry;
		const char *mix = NULL;
		char note[FMT_ERR_MSG_MAX];
		fmt_model_init(&none);
		fmt_kind k = tg.mix_dtypes(&none, &none, o->dtype, NULL, &entry, &mix, note, sizeof note, e);
		fmt_model_free(&none);
		if (k != FMT_OK)
			return k;
	}
	return parse_wanted(o, &tg, &w, e);
}

static int is_block(fmt_dtype t)
{
	return fmt_dtype_get(t)->block_elems > 1;
}

/* The plain dtype a float-valued tensor gets. */
static fmt_dtype float_target(const fmt_tensor *t, fmt_dtype want, const target *tg, const char **why)
{
	if (want == FMT_DT_INVALID) {
		if (holds(tg, t->dtype))
			return t->dtype;
		*why = "the target cannot hold this dtype";
		return FMT_DT_F32;
	}
	/* The format's own conventions (GGUF: 1-D tensors stay F32...). */
	return tg->choose_dtype ? tg->choose_dtype(t, want, why) : want;
}

static fmt_kind name_list_add(name_list *l, const char *name, fmt_err *e)
{
	const char **grown = realloc(l->names, (l->n + 1) * sizeof *grown);
	if (!grown)
		return fmt_fail(e, FMT_IO, "out of memory");
	l->names = grown;
	l->names[l->n++] = name;
	return FMT_OK;
}

/* "a, b, c" (cut short, with "...", past the buffer). */
static void name_list_join(const name_list *l, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < l->n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", l->names[i]);
	if (used >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);
}

static int selected(const char *name, const fmt_convert_opts *o)
{
	return fmt_name_selected(name, o->include, o->n_include, o->exclude, o->n_exclude);
}

/* Append " --OPTION 'PATTERN'" for each of the n patterns whose bit in pick is set (all when
 * pick is NULL) to buf. */
static void patterns_text(char *buf, size_t size, const char *option, const char **patterns, size_t n,
			  const unsigned char *pick)
{
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(buf);
		if (!pick || pick[i])
			snprintf(buf + used, size - used, "%s--%s '%s'", used ? " " : "", option, patterns[i]);
	}
}

/* Each pattern of list that matches none of the names the selection looks at is marked in
 * unmatched; the count of them is returned. */
static size_t unmatched_patterns(const fmt_model *in, const char **list, size_t n, unsigned char *unmatched)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		unmatched[i] = 1;
		for (size_t t = 0; t < in->n_tensors && unmatched[i]; t++)
			if (!fmt_qtensor_is_scales(in, in->tensors[t].name) && fnmatch(list[i], in->tensors[t].name, 0) == 0)
				unmatched[i] = 0;
		count += unmatched[i];
	}
	return count;
}

/* --include and --exclude: a pattern that matches no tensor is a typo (naming every such
 * pattern), and a selection that leaves no tensor is never what was meant. Both UsageError. */
static fmt_kind check_selection(const fmt_model *in, const fmt_convert_opts *o, fmt_err *e)
{
	char text[FMT_ERR_MSG_MAX / 2] = "";
	size_t tensors = 0, chosen = 0;
	if (o->n_include + o->n_exclude == 0)
		return FMT_OK;
	unsigned char *bad = calloc(o->n_include + o->n_exclude, 1);
	if (!bad)
		return fmt_fail(e, FMT_IO, "out of memory");
	size_t n_bad = unmatched_patterns(in, o->include, o->n_include, bad) +
		       unmatched_patterns(in, o->exclude, o->n_exclude, bad + o->n_include);
	patterns_text(text, sizeof text, "include", o->include, o->n_include, n_bad ? bad : NULL);
	patterns_text(text, sizeof text, "exclude", o->exclude, o->n_exclude, n_bad ? bad + o->n_include : NULL);
	free(bad);
	for (size_t t = 0; t < in->n_tensors; t++) {
		if (fmt_qtensor_is_scales(in, in->tensors[t].name))
			continue;
		tensors++;
		chosen += selected(in->tensors[t].name, o);
	}
	if (n_bad)
		return fmt_fail(e, FMT_USAGE, "%s match%s no tensor of the input (%zu tensor%s)", text,
				n_bad == 1 ? "es" : "", tensors, tensors == 1 ? "" : "s");
	if (chosen == 0)
		return fmt_fail(e, FMT_USAGE, "%s select%s none of the input's %zu tensor%s", text,
				o->n_include + o->n_exclude == 1 ? "s" : "", tensors, tensors == 1 ? "" : "s");
	return FMT_OK;
}

/* ---- one logical tensor ---- */

static void set_names(plan_entry *pe, const char *from, const char *to)
{
	snprintf(pe->from, sizeof pe->from, "%s", from);
	snprintf(pe->to, sizeof pe->to, "%s", to);
}

/* --overflow=saturate|widen: read the values once to find the tensors the asked dtype cannot
 * hold. Widened, they become F32; saturated, F16/BF16 keep their type (the values are clamped
 * as they are written) and Q8_0/Q4_0 become F16. refuse (the default) reads nothing here: the
 * writer stops at the first such value. */
static fmt_kind overflow_target(const fmt_model *in, const fmt_tensor *t, const fmt_convert_opts *o,
				plan_entry *pe, fmt_dtype *to, fmt_err *e)
{
	int found = 0;
	if (o->overflow == FMT_OVERFLOW_REFUSE || !fmt_overflow_possible(t->dtype, *to))
		return FMT_OK;
	fmt_kind k = fmt_tensor_find_overflow(in, t, *to, &found, &pe->overflow_elem, &pe->overflow_value, e);
	if (k != FMT_OK || !found)
		return k;
	pe->overflowed = 1;
	snprintf(pe->asked, sizeof pe->asked, "%s", fmt_dtype_name(*to));
	if (o->overflow == FMT_OVERFLOW_WIDEN) {
		*to = FMT_DT_F32;
		pe->why = "values beyond the asked dtype: widened";
	} else {
		*to = is_block(*to) ? FMT_DT_F16 : *to;
		pe->why = "values beyond the asked dtype: saturated";
	}
	return FMT_OK;
}

/* A tensor of a block type that would become another dtype: requantizing, refused unless
 * --allow-requantize (as llama-quantize); to a float dtype too when the target says so (GGUF:
 * llama-quantize's F16, BF16 and F32 refuse a Q8_0 tensor as well). */
static fmt_kind requantize_allowed(const fmt_tensor *t, fmt_dtype to, const target *tg, const fmt_convert_opts *o,
				   fmt_err *e)
{
	if (!is_block(t->dtype) || to == t->dtype || o->allow_requantize)
		return FMT_OK;
	if (is_block(to))
		return fmt_fail(e, FMT_USAGE, "tensor '%s' is already quantized (%s): requantizing it to %s "
				"loses precision twice; --allow-requantize does it", t->name,
				fmt_dtype_name(t->dtype), fmt_dtype_name(to));
	if (tg->dequant_guarded)
		return fmt_fail(e, FMT_USAGE, "tensor '%s' is already quantized (%s): expanding it to %s is "
				"requantizing to llama-quantize, which refuses it; --allow-requantize does it",
				t->name, fmt_dtype_name(t->dtype), fmt_dtype_name(to));
	return FMT_OK;
}

/* A block type asked for a tensor: refused when the tensor may not be requantized, or when its
 * rows do not divide into the blocks (a 256-element type; 32-element ones became F16 in the
 * target's choice). */
static fmt_kind quantize_allowed(const fmt_tensor *t, fmt_dtype to, const target *tg, const fmt_convert_opts *o,
				 fmt_err *e)
{
	fmt_kind k = requantize_allowed(t, to, tg, o, e);
	if (k != FMT_OK || !is_block(to) || to == t->dtype)
		return k;
	uint64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
	if (!fmt_dtype_row_ok(to, row))
		return fmt_fail(e, FMT_USAGE, "tensor '%s': rows of %" PRIu64 " elements do not divide into "
				"%s blocks of %u (llama-quantize would write %s)", t->name, row,
				fmt_dtype_name(to), (unsigned)fmt_dtype_get(to)->block_elems,
				fmt_dtype_name(fmt_quantize_row_fallback(to, row)));
	return FMT_OK;
}

/* A tensor that becomes dtype to: refused when it cannot (or may not) become it, widened or
 * saturated where --overflow says so. */
static fmt_kind add_as(convert_plan *p, const fmt_model *in, const fmt_tensor *t, fmt_dtype to,
		       const fmt_mix_entry *weighted, const target *tg, const fmt_convert_opts *o, fmt_pool *pool,
		       plan_entry *pe, fmt_err *e)
{
	const fmt_dtype_info *d = fmt_dtype_get(t->dtype);
	if (to != t->dtype && !fmt_retype_possible(t->dtype, to))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': cannot convert %s to %s", t->name,
				fmt_dtype_name(t->dtype), fmt_dtype_name(to));
	fmt_kind k = quantize_allowed(t, to, tg, o, e);
	if (k == FMT_OK)
		k = overflow_target(in, t, o, pe, &to, e);
	if (k != FMT_OK)
		return k;
	if (is_block(t->dtype) && !is_block(to)) {
		k = name_list_add(&p->expanded, t->name, e);
		if (k != FMT_OK)
			return k;
	}
	set_names(pe, d->name, fmt_dtype_name(to));
	const char *name = weighted && weighted->name ? weighted->name : t->name;   /* the mix's name */
	if (weighted && weighted->weights && to == weighted->type)
		return fmt_model_add_retyped_weighted(&p->out, in, t, name, to, weighted->weights,
						      weighted->rows_per_set, pool, e);
	return fmt_model_add_retyped_mode(&p->out, in, t, name, to, o->overflow, pool, e);
}

static fmt_kind add_plain(convert_plan *p, const fmt_model *in, const fmt_tensor *t, wanted w,
			  const target *tg, const fmt_convert_opts *o, fmt_pool *pool, plan_entry *pe, fmt_err *e)
{
	const fmt_dtype_info *d = fmt_dtype_get(t->dtype);
	if (d->is_int) {
		/* Integer tensors keep their type; a target without it is an error, not a guess. */
		if (!holds(tg, t->dtype))
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %s has no %s equivalent", t->name,
					fmt_dtype_name(t->dtype), tg->d->title);
		set_names(pe, d->name, d->name);
		return fmt_model_add_retyped(&p->out, in, t, t->name, t->dtype, pool, e);
	}
	if (w.qformat == FMT_Q_BF16 && o->overflow != FMT_OVERFLOW_REFUSE) {
		/* Apsi bf16 values beyond BF16: a plain BF16 (saturated) or F32 (widened) tensor */
		fmt_dtype to = FMT_DT_BF16;
		fmt_kind k = overflow_target(in, t, o, pe, &to, e);
		if (k != FMT_OK || pe->overflowed) {
			set_names(pe, d->name, fmt_dtype_name(to));
			return k != FMT_OK ? k : fmt_model_add_retyped_mode(&p->out, in, t, t->name, to, o->overflow, pool, e);
		}
	}
	if (w.qformat >= 0) {
		fmt_qtensor q;
		fmt_kind k = fmt_qtensor_plan(t, (fmt_qformat)w.qformat, &q, e);
		if (k != FMT_OK)
			return k;
		set_names(pe, d->name, fmt_qformat_name(q.format));
		return fmt_model_add_quantized(&p->out, in, t, &q, pool, e);
	}
	/* GGUF Q8_0 and Q4_0 become encoded tensors losslessly, as int8 and int4 with block-32
	 * scales, in formats that have them. */
	if (tg->encodes && keep(w) && (t->dtype == FMT_DT_Q8_0 || t->dtype == FMT_DT_Q4_0)) {
		set_names(pe, d->name, t->dtype == FMT_DT_Q8_0 ? "int8" : "int4");
		pe->why = "lossless";
		return fmt_model_add_from_ggml(&p->out, in, t, pool, e);
	}
	fmt_dtype want = w.defaulted && is_block(t->dtype) ? FMT_DT_INVALID : w.plain;
	return add_as(p, in, t, float_target(t, want, tg, &pe->why), NULL, tg, o, pool, pe, e);
}

/* A tensor of a mix (the target's per-tensor rules): the dtype chosen, or its own kept. */
static fmt_kind add_mixed(convert_plan *p, const fmt_model *in, const fmt_tensor *t, const fmt_mix_entry *me,
			  const target *tg, const fmt_convert_opts *o, fmt_pool *pool, plan_entry *pe, fmt_err *e)
{
	fmt_dtype to = me->type != FMT_DT_INVALID ? me->type : holds(tg, t->dtype) ? t->dtype : FMT_DT_F32;
	pe->why = me->weights ? "importance weights" : me->why;
	return add_as(p, in, t, to, me, tg, o, pool, pe, e);
}

/* A compressed tensor kept as it is (.apsim to .apsim) or mapped losslessly onto a ggml block
 * type; 0 when it must be decoded first. */
static int qtensor_passes_through(const fmt_qtensor *q, wanted w, const target *tg, fmt_dtype *ggml)
{
	if (tg->encodes)
		return fmt_qtensor_canonical(q) && (keep(w) || w.qformat == (int)q->format);
	return fmt_qtensor_ggml_compatible(q, ggml) && holds(tg, *ggml) &&
	       (keep(w) || w.defaulted || w.plain == *ggml);
}

static fmt_kind copy_qtensor(convert_plan *p, const fmt_model *in, const fmt_qtensor *q,
			     fmt_pool *pool, fmt_err *e)
{
	const fmt_tensor *codes = fmt_model_find_tensor(in, q->name);
	char *dflt = q->scales || q->format == FMT_Q_BF16 ? NULL : fmt_qtensor_scales_name(q->name);
	const fmt_tensor *sc = q->scales ? fmt_model_find_tensor(in, q->scales) : dflt ? fmt_model_find_tensor(in, dflt) : NULL;
	free(dflt);
	fmt_kind k = codes ? fmt_model_add_retyped(&p->out, in, codes, codes->name, codes->dtype, pool, e)
			   : fmt_fail(e, FMT_INTERNAL, "compressed tensor '%s' has no codes", q->name);
	if (k == FMT_OK && sc)
		k = fmt_model_add_retyped(&p->out, in, sc, sc->name, sc->dtype, pool, e);
	if (k == FMT_OK)
		k = fmt_model_add_qtensor(&p->out, q, e);
	return k;
}

static fmt_kind add_qtensor(convert_plan *p, const fmt_model *in, const fmt_qtensor *q, wanted w,
			    const target *tg, const fmt_convert_opts *o, fmt_pool *pool, plan_entry *pe, fmt_err *e)
{
	fmt_dtype ggml;
	if (qtensor_passes_through(q, w, tg, &ggml)) {
		set_names(pe, fmt_qformat_name(q->format), tg->encodes ? fmt_qformat_name(q->format) : fmt_dtype_name(ggml));
		if (!tg->encodes)
			pe->why = "lossless";
		return tg->encodes ? copy_qtensor(p, in, q, pool, e) : fmt_model_add_to_ggml(&p->out, in, q, pool, e);
	}
	/* Decoded in pass one; convert the decoded tensor like any float tensor. */
	const fmt_tensor *decoded = fmt_model_find_tensor(&p->mid, q->name);
	if (!decoded)
		return fmt_fail(e, FMT_INTERNAL, "compressed tensor '%s' was not decoded", q->name);
	fmt_kind k = add_plain(p, &p->mid, decoded, w, tg, o, pool, pe, e);
	snprintf(pe->from, sizeof pe->from, "%s", fmt_qformat_name(q->format));
	if (k == FMT_OK && w.qformat < 0)
		k = name_list_add(&p->expanded, q->name, e);
	return k;
}

/* Pass one: decode into p->mid every compressed tensor that cannot pass through, so that the
 * output's tensors can point at tensors that no longer move. */
static fmt_kind decode_qtensors(convert_plan *p, const fmt_model *in, wanted w, const target *tg,
				const fmt_convert_opts *o, fmt_pool *pool, fmt_err *e)
{
	fmt_dtype ggml;
	for (size_t i = 0; i < in->n_qtensors; i++) {
		const fmt_qtensor *q = &in->qtensors[i];
		if (!selected(q->name, o) || qtensor_passes_through(q, w, tg, &ggml))
			continue;
		fmt_kind k = fmt_model_add_dequantized(&p->mid, in, q, pool, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

/* ---- metadata and units ---- */

#define UNITS_KEY FMT_UNITS_META_PREFIX

/* The input's UNITS_KEY<name> keys by name -> their place in in->meta (the first of a key given
 * twice): each tensor's key looked for among all the keys took minutes for a file of 40,000
 * tensors with units. */
static fmt_kind index_unit_keys(const fmt_model *in, fmt_nameset *keys, fmt_err *e)
{
	const size_t pre = sizeof UNITS_KEY - 1;
	memset(keys, 0, sizeof *keys);
	for (size_t i = 0; i < in->n_meta; i++)
		if (strncmp(in->meta[i].key, UNITS_KEY, pre) == 0 && fmt_nameset_add_at(keys, in->meta[i].key + pre, i) < 0)
			return fmt_fail(e, FMT_IO, "out of memory");
	return FMT_OK;
}

/* The unit of a logical tensor: the model's own, or a UNITS_KEY<name> key. */
static int unit_of(const fmt_model *in, const fmt_nameset *keys, const char *name, int8_t dims[FMT_UNIT_DIMS])
{
	const fmt_unit *u = fmt_model_find_unit(in, name);
	if (u) {
		memcpy(dims, u->dims, FMT_UNIT_DIMS);
		return 1;
	}
	long at = fmt_nameset_find(keys, name);
	const fmt_value *v = at >= 0 ? &in->meta[at].val : NULL;
	if (!v || v->type != FMT_V_ARRAY || v->v.arr.count != FMT_UNIT_DIMS || v->v.arr.elem != FMT_V_I32)
		return 0;
	for (int i = 0; i < FMT_UNIT_DIMS; i++) {
		int64_t x = fmt_array_item(v, (uint64_t)i).v.i;
		if (x < INT8_MIN || x > INT8_MAX)
			return 0;
		dims[i] = (int8_t)x;
	}
	return 1;
}

static fmt_kind carry_unit(convert_plan *p, const fmt_model *in, const fmt_nameset *keys, const char *name,
			   const target *tg, fmt_err *e)
{
	int8_t dims[FMT_UNIT_DIMS];
	if (!unit_of(in, keys, name, dims))
		return FMT_OK;
	if (tg->units)
		return fmt_model_add_unit(&p->out, name, dims, e);
	if (!tg->units_as_meta)
		return name_list_add(&p->dropped_units, name, e);
	fmt_value items[FMT_UNIT_DIMS];
	for (int i = 0; i < FMT_UNIT_DIMS; i++)
		items[i] = (fmt_value){ .type = FMT_V_I32, .v.i = dims[i] };
	fmt_value arr = { .type = FMT_V_ARRAY, .v.arr = { .elem = FMT_V_I32, .count = FMT_UNIT_DIMS, .items = items } };
	char key[FMT_ERR_MSG_MAX];
	snprintf(key, sizeof key, UNITS_KEY "%s", name);
	return fmt_model_add_meta(&p->out, key, &arr, e);
}

/* A key another format derives from its tensors (GGUF's general.file_type): meaningless once
 * the tensors are in a format that does not; the target recomputes its own. */
static int derived_elsewhere(const char *key, const target *tg)
{
	for (const fmt_driver *const *d = fmt_drivers(); *d; d++)
		for (const char *const *k = (*d)->derived_keys; k && *k; k++)
			if (strcmp(*k, key) == 0 && *d != tg->d)
				return 1;
	return 0;
}

/* Keys the target derives from the output's tensors are set after the input's keys, before
 * the user's --arch, --unset, --metadata-from, --set-from and --set (which win). */
/* The input's keys the output carries into out; *dropped counts those the target cannot hold. */
static fmt_kind carry_input_keys(fmt_model *out, const fmt_model *in, const target *tg, size_t *dropped, fmt_err *e)
{
	int typed = tg->typed_meta;
	for (size_t i = 0; i < in->n_meta; i++) {
		const fmt_meta *mm = &in->meta[i];
		/* split.* describe the input's shards; units keys become units, handled per tensor. */
		if (strncmp(mm->key, "split.", 6) == 0 || strncmp(mm->key, UNITS_KEY, sizeof UNITS_KEY - 1) == 0)
			continue;
		if (derived_elsewhere(mm->key, tg))
			continue;
		if (!typed && mm->val.type != FMT_V_STR) {
			++*dropped;
			continue;
		}
		fmt_kind k = fmt_model_add_meta(out, mm->key, &mm->val, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind carry_metadata(convert_plan *p, const fmt_model *in, const fmt_convert_opts *o, const target *tg,
			       wanted w, const char *mix, fmt_err *e)
{
	fmt_kind k = carry_input_keys(&p->out, in, tg, &p->dropped_meta, e);
	const fmt_driver *d = tg->d;
	const void *values = tg->options ? fmt_drvopt_values(o->options, tg->options) : NULL;
	if (k == FMT_OK && d->derive_meta)
		k = d->derive_meta(&p->out, w.defaulted ? FMT_DT_INVALID : w.plain, mix, values, e);
	if (k == FMT_OK)
		k = fmt_meta_apply_user(&p->out, o, d, e);
	if (k != FMT_OK || !d->finish_meta)
		return k;
	k = d->finish_meta(&p->out, mix, values, e);
	/* --set has the last word on the keys finish_meta sets too (GGUF: the importance matrix's
	 * record, which wins over --override-kv as llama-quantize's does); set again, in place */
	return k == FMT_OK ? fmt_setkv_reapply(&p->out, o->sets, o->n_sets, o->overrides, o->n_overrides,
					       !fmt_driver_can(d, FMT_CAP_TYPED_META), e) : k;
}

/* ---- a mix: the target's own per-tensor dtypes (GGUF: llama-quantize's presets) ---- */

typedef struct mix {
	const char *name;        /* NULL: no mix */
	fmt_mix_entry *entries;  /* per input tensor */
} mix;

static void mix_free(mix *mx, size_t n)
{
	for (size_t i = 0; mx->entries && i < n; i++)
		free(mx->entries[i].name);
	free(mx->entries);
	memset(mx, 0, sizeof *mx);
}

/* Asked once, with the metadata the output will carry (the input's keys and the user's). */
static fmt_kind plan_mix(const fmt_model *in, const fmt_convert_opts *o, const target *tg, mix *mx,
			 char note[FMT_ERR_MSG_MAX], fmt_err *e)
{
	const void *values = tg->options ? fmt_drvopt_values(o->options, tg->options) : NULL;
	size_t n = in->n_tensors ? in->n_tensors : 1, dropped = 0;
	fmt_model meta;
	memset(mx, 0, sizeof *mx);
	if (!tg->mix_dtypes || (!o->dtype && !values))
		return FMT_OK;
	if (!(mx->entries = calloc(n, sizeof *mx->entries)))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_model_init(&meta);
	fmt_kind k = carry_input_keys(&meta, in, tg, &dropped, e);
	if (k == FMT_OK)
		k = fmt_meta_apply_user(&meta, o, tg->d, e);
	if (k == FMT_OK)
		k = tg->mix_dtypes(in, &meta, o->dtype, values, mx->entries, &mx->name, note, FMT_ERR_MSG_MAX, e);
	fmt_model_free(&meta);
	return k;
}

/* ---- the plan ---- */

static uint64_t bytes_since(const fmt_model *m, size_t first)
{
	uint64_t n = 0;
	for (size_t i = first; i < m->n_tensors; i++)
		n += m->tensors[i].nbytes;
	return n;
}

fmt_kind fmt_plan_build(convert_plan *p, const fmt_model *in, const fmt_convert_opts *o, fmt_pool *pool,
			fmt_err *e)
{
	target profile, *tg = &profile;
	wanted w = { FMT_DT_INVALID, -1, 0 };
	mix mx;
	fmt_nameset keys;
	memset(p, 0, sizeof *p);
	fmt_model_init(&p->mid);
	fmt_model_init(&p->out);
	if (in->opaque)
		return fmt_fail(e, FMT_UNSUPPORTED, "cannot convert: %s", in->opaque);
	profile_of(o->to, &profile);
	fmt_kind k = plan_mix(in, o, tg, &mx, p->mix_note, e);
	if (k == FMT_OK && !mx.name)
		k = parse_wanted(o, tg, &w, e);
	if (k == FMT_OK)
		k = check_selection(in, o, e);
	if (k == FMT_OK && (o->sign || fmt_key_opts_given(&o->key)) && !tg->signatures)
		k = fmt_fail(e, FMT_USAGE, "--sign needs %s output (%s has no signatures)",
			     title_of(fmt_driver_with(FMT_CAP_SIGNATURES)), o->to->name);
	if (k == FMT_OK)
		k = decode_qtensors(p, in, w, tg, o, pool, e);
	if (k == FMT_OK && !(p->entries = calloc(in->n_tensors ? in->n_tensors : 1, sizeof *p->entries)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k == FMT_OK && (k = index_unit_keys(in, &keys, e)) != FMT_OK)
		fmt_nameset_free(&keys);
	if (k != FMT_OK) {
		mix_free(&mx, in->n_tensors);
		return k;
	}
	for (size_t i = 0; i < in->n_tensors && k == FMT_OK; i++) {
		const fmt_tensor *t = &in->tensors[i];
		if (fmt_qtensor_is_scales(in, t->name))   /* handled with its codes, not on its own */
			continue;
		if (!selected(t->name, o) || (mx.name && mx.entries[i].dropped)) {
			p->excluded++;   /* --exclude, or a layer the mix leaves out (--prune-layers) */
			continue;
		}
		plan_entry *pe = &p->entries[p->n_entries];
		const fmt_qtensor *q = fmt_model_find_qtensor(in, t->name);
		size_t first = p->out.n_tensors;
		pe->name = t->name;
		k = q ? add_qtensor(p, in, q, w, tg, o, pool, pe, e)
		      : mx.name ? add_mixed(p, in, t, &mx.entries[i], tg, o, pool, pe, e)
				: add_plain(p, in, t, w, tg, o, pool, pe, e);
		for (size_t j = first; k == FMT_OK && j < p->out.n_tensors; j++) {
			p->out.tensors[j].seq_pos = t->seq_pos;   /* made from t: read when t is */
			p->out.tensors[j].out_shard = mx.name ? mx.entries[i].shard : 0;   /* the mix's file */
		}
		if (k == FMT_OK)
			k = carry_unit(p, in, &keys, t->name, tg, e);
		pe->bytes = bytes_since(&p->out, first);
		if (k == FMT_OK && mx.name && mx.entries[i].name)   /* renamed by the mix: the output's */
			pe->name = p->out.tensors[first].name;
		p->n_entries++;
	}
	fmt_nameset_free(&keys);
	if (k == FMT_OK)
		k = carry_metadata(p, in, o, tg, w, mx.name, e);
	mix_free(&mx, in->n_tensors);
	return k;
}

void fmt_plan_free(convert_plan *p)
{
	free(p->entries);
	free(p->expanded.names);
	free(p->dropped_units.names);
	fmt_model_free(&p->out);
	fmt_model_free(&p->mid);
	memset(p, 0, sizeof *p);
}

json_t *fmt_plan_json(const convert_plan *p, const fmt_shard_plan *set, const char *input, const char *output,
		      const fmt_convert_opts *o)
{
	json_t *tensors = json_array();
	for (size_t i = 0; tensors && i < p->n_entries; i++) {
		const plan_entry *pe = &p->entries[i];
		json_t *t = json_pack("{s:o,s:s,s:s,s:o}", "name", fmt_json_string(pe->name, strlen(pe->name)),
				      "from", pe->from, "to", pe->to, "bytes", fmt_json_u64(pe->bytes));
		if (t && pe->why)
			json_object_set_new(t, "note", json_string(pe->why));
		if (t && pe->overflowed)
			json_object_set_new(t, "overflow", json_pack("{s:s,s:o,s:f}", "dtype", pe->asked, "element",
								     fmt_json_u64(pe->overflow_elem), "value",
								     (double)pe->overflow_value));
		json_array_append_new(tensors, t);
	}
	json_t *units = json_array();
	for (size_t i = 0; units && i < p->dropped_units.n; i++)
		json_array_append_new(units, fmt_json_string(p->dropped_units.names[i], strlen(p->dropped_units.names[i])));
	json_t *j = json_pack("{s:o,s:o,s:s,s:b,s:I,s:I,s:I,s:I,s:o,s:o,s:o}",
			      "input", fmt_json_string(input, strlen(input)),
			      "output", fmt_json_string(output, strlen(output)), "format", o->to->name,
			      "dry_run", o->dry_run, "tensor_count", (json_int_t)p->n_entries,
			      "excluded", (json_int_t)p->excluded, "expanded", (json_int_t)p->expanded.n,
			      "dropped_metadata", (json_int_t)p->dropped_meta, "dropped_units", units,
			      "data_bytes", fmt_json_u64(bytes_since(&p->out, 0)), "tensors", tensors);
	if (j && set)
		fmt_shard_plan_json(j, set);
	return j;
}

void fmt_plan_print(FILE *out, const convert_plan *p, const fmt_shard_plan *set, const char *input,
		    const char *output, const fmt_convert_opts *o)
{
	if (o->json) {
		json_t *j = fmt_plan_json(p, set, input, output, o);
		fmt_json_line(out, j);
		json_decref(j);
		return;
	}
	fputs(o->dry_run ? "plan: " : "converted: ", out);
	fmt_out_escaped(out, input, strlen(input));
	fputs(" -> ", out);
	fmt_out_escaped(out, output, strlen(output));
	fprintf(out, " (%s, %zu tensor%s)\n", o->to->name, p->n_entries, p->n_entries == 1 ? "" : "s");
	for (size_t i = 0; i < p->n_entries; i++) {
		const plan_entry *pe = &p->entries[i];
		fputs("  ", out);
		fmt_out_escaped(out, pe->name, strlen(pe->name));
		fprintf(out, "  %s -> %s  %" PRIu64 " bytes", pe->from, pe->to, pe->bytes);
		if (pe->why)
			fprintf(out, "  (%s)", pe->why);
		fputc('\n', out);
	}
	const uint64_t total = bytes_since(&p->out, 0);   /* JSON's data_bytes */
	fprintf(out, "tensor data: %" PRIu64 " bytes (%.2f MiB)\n", total, (double)total / (1024.0 * 1024.0));
	for (size_t i = 0; set && i < set->n_shards; i++) {
		const fmt_shard *s = &set->shards[i];
		fputs("shard ", out);
		fmt_out_escaped(out, s->path, strlen(s->path));
		fprintf(out, ": %zu tensor%s, %" PRIu64 " bytes of tensor data", s->count, s->count == 1 ? "" : "s",
			s->bytes);
		if (s->file_bytes)   /* counted by the format's planner, or the file written */
			fprintf(out, ", %" PRIu64 " bytes", s->file_bytes);
		fputc('\n', out);
	}
	if (set && set->index) {
		fputs("index ", out);
		fmt_out_escaped(out, set->index, strlen(set->index));
		fputc('\n', out);
	}
}

static void warn_overflow(const plan_entry *pe, const fmt_convert_opts *o)
{
	fmt_overflow_mode mode = o->overflow;
	const char *how = mode == FMT_OVERFLOW_WIDEN ? "written as F32"
			  : strcmp(pe->asked, "BF16") == 0 ? "values beyond it saturated to +-3.3895314e+38"
			  : strcmp(pe->asked, "F16") == 0 ? "values beyond it saturated to +-65504"
			  : "written as F16, values beyond it saturated to +-65504";
	fmt_pipeline_warn(o, "tensor '%s': element %" PRIu64 " is %.9g, beyond what %s holds; %s (--overflow=%s)",
			  pe->name, pe->overflow_elem, (double)pe->overflow_value, pe->asked, how,
			  fmt_overflow_mode_name(mode));
}

void fmt_plan_warn_names(const convert_plan *p, const fmt_convert_opts *o)
{
	char why[FMT_ERR_MSG_MAX];
	if (o->to->foreign_names && o->to->foreign_names(&p->out, why, sizeof why))
		fmt_pipeline_warn(o, "%s", why);
	if (p->mix_note[0])
		fmt_pipeline_warn(o, "%s", p->mix_note);
}

/* --dtype of a plain dtype that no tensor got (a q4_0 whose blocks no row divides into, 1-D
 * tensors that stay F32): the writing succeeds, so say it once. */
static void warn_dtype_unused(const convert_plan *p, const fmt_convert_opts *o)
{
	size_t k = 0;
	while (o->dtype && k < N_PLAIN && strcasecmp(plain[k].name, o->dtype) != 0)
		k++;
	if (!o->dtype || k == N_PLAIN || !p->n_entries)
		return;
	for (size_t i = 0; i < p->n_entries; i++)
		if (strcasecmp(p->entries[i].to, o->dtype) == 0)
			return;
	fmt_pipeline_warn(o, "--dtype %s: none of the %zu tensor%s became %s (rows that do not divide into its "
			  "blocks, or tensors the target keeps in another type): --dry-run lists each one's dtype "
			  "and why", o->dtype, p->n_entries, p->n_entries == 1 ? "" : "s", fmt_dtype_name(plain[k].dtype));
}

void fmt_plan_warn(const convert_plan *p, const fmt_convert_opts *o)
{
	char names[FMT_ERR_MSG_MAX / 2];
	fmt_plan_warn_names(p, o);
	warn_dtype_unused(p, o);
	for (size_t i = 0; i < p->n_entries; i++)
		if (p->entries[i].overflowed)
			warn_overflow(&p->entries[i], o);
	if (p->expanded.n) {
		name_list_join(&p->expanded, names, sizeof names);
		fmt_pipeline_warn(o, "%zu quantized tensor%s expanded to a float type: %s", p->expanded.n,
				  p->expanded.n == 1 ? "" : "s", names);
	}
	if (p->dropped_meta)
		fmt_pipeline_warn(o, "%zu metadata entr%s dropped: the target holds only string values",
				  p->dropped_meta, p->dropped_meta == 1 ? "y" : "ies");
	if (p->dropped_units.n) {
		name_list_join(&p->dropped_units, names, sizeof names);
		fmt_pipeline_warn(o, "units dropped (the target cannot hold them): %s", names);
	}
}
