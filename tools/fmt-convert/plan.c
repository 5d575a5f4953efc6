/* Which dtype each tensor gets, which metadata survives, and the output model that results. */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fmt/convert.h"
#include "fmt/out.h"
#include "fmt/retype.h"
#include "convert.h"

static int is_gguf(const fmt_driver *d)
{
	return strcmp(d->name, "gguf") == 0;
}

static int target_holds(const fmt_driver *to, fmt_dtype t)
{
	const fmt_dtype_info *d = fmt_dtype_get(t);
	return is_gguf(to) ? d->ggml_id >= 0 : d->in_safetensors;
}

static const struct { const char *name; fmt_dtype dtype; int gguf_only; } dtype_options[] = {
	{ "f32", FMT_DT_F32, 0 }, { "f16", FMT_DT_F16, 0 }, { "bf16", FMT_DT_BF16, 0 },
	{ "q8_0", FMT_DT_Q8_0, 1 }, { "q4_0", FMT_DT_Q4_0, 1 },
};

/* FMT_DT_INVALID means keep each tensor's dtype. */
static fmt_kind requested_dtype(const convert_opts *o, fmt_dtype *out, fmt_err *e)
{
	const char *name = o->dtype ? o->dtype : is_gguf(o->to) ? "f16" : NULL;
	*out = FMT_DT_INVALID;
	if (!name || strcasecmp(name, "keep") == 0)
		return FMT_OK;
	for (size_t i = 0; i < sizeof dtype_options / sizeof dtype_options[0]; i++) {
		if (strcasecmp(name, dtype_options[i].name) != 0)
			continue;
		if (dtype_options[i].gguf_only && !is_gguf(o->to))
			return fmt_fail(e, FMT_USAGE, "--dtype %s needs GGUF output (%s cannot hold it)", name, o->to->name);
		*out = dtype_options[i].dtype;
		return FMT_OK;
	}
	return fmt_fail(e, FMT_USAGE, "--dtype takes f32, f16, bf16, q8_0, q4_0 or keep (not '%s')", name);
}

static int is_quantized(fmt_dtype t)
{
	return fmt_dtype_get(t)->block_elems > 1;
}

/* The dtype one float-valued tensor gets when `want` was asked for. */
static fmt_dtype float_target(const fmt_tensor *t, fmt_dtype want, const fmt_driver *to, const char **why)
{
	uint64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
	if (want == FMT_DT_INVALID) {
		if (target_holds(to, t->dtype))
			return t->dtype;
		*why = "the target cannot hold this dtype";
		return FMT_DT_F32;
	}
	if (!is_gguf(to) || want == FMT_DT_F32)
		return want;
	/* GGUF conventions of llama.cpp's converters: norms and biases (1-D) stay F32; rows that
	 * do not divide into 32-element blocks are written as F16. */
	if (t->ndim <= 1) {
		*why = "1-D tensors stay F32 in GGUF";
		return FMT_DT_F32;
	}
	if (is_quantized(want) && row % fmt_dtype_get(want)->block_elems != 0) {
		*why = "rows are not a multiple of the block size";
		return FMT_DT_F16;
	}
	return want;
}

static fmt_kind tensor_target(const fmt_tensor *t, fmt_dtype want, const fmt_driver *to,
			      plan_entry *pe, fmt_err *e)
{
	const fmt_dtype_info *d = fmt_dtype_get(t->dtype);
	pe->src = t;
	pe->why = NULL;
	if (d->is_int) {
		/* Integer tensors keep their type; a target without it is an error, not a guess. */
		if (!target_holds(to, t->dtype))
			return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': %s has no %s equivalent", t->name,
					fmt_dtype_name(t->dtype), to->name);
		pe->to = t->dtype;
		return FMT_OK;
	}
	pe->to = float_target(t, want, to, &pe->why);
	if (pe->to != t->dtype && !fmt_retype_possible(t->dtype, pe->to))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor '%s': cannot convert %s to %s", t->name,
				fmt_dtype_name(t->dtype), fmt_dtype_name(pe->to));
	return FMT_OK;
}

static int selected(const char *name, const convert_opts *o)
{
	int in = o->n_include == 0;
	for (size_t i = 0; !in && i < o->n_include; i++)
		in = fnmatch(o->include[i], name, 0) == 0;
	for (size_t i = 0; in && i < o->n_exclude; i++)
		in = fnmatch(o->exclude[i], name, 0) != 0;
	return in;
}

static fmt_kind put_front(fmt_model *m, const char *key, const fmt_value *v, fmt_err *e)
{
	fmt_kind k = setkv_put(m, key, v, e);
	if (k != FMT_OK)
		return k;
	for (size_t i = 0; i < m->n_meta; i++) {
		if (strcmp(m->meta[i].key, key) == 0) {
			fmt_meta entry = m->meta[i];
			memmove(&m->meta[1], &m->meta[0], i * sizeof entry);
			m->meta[0] = entry;
			break;
		}
	}
	return FMT_OK;
}

static fmt_kind carry_metadata(convert_plan *p, const fmt_model *in, const convert_opts *o, fmt_err *e)
{
	int gguf = is_gguf(o->to);
	for (size_t i = 0; i < in->n_meta; i++) {
		const fmt_meta *mm = &in->meta[i];
		/* split.* describe the input's shards, not the output. */
		if (strncmp(mm->key, "split.", 6) == 0)
			continue;
		if (!gguf && mm->val.type != FMT_V_STR) {
			p->dropped_meta++;
			continue;
		}
		fmt_kind k = fmt_model_add_meta(&p->out, mm->key, &mm->val, e);
		if (k != FMT_OK)
			return k;
	}
	if (o->arch) {
		if (!gguf)
			return fmt_fail(e, FMT_USAGE, "--arch needs GGUF output");
		fmt_value v = fmt_value_str(o->arch, strlen(o->arch));
		fmt_kind k = v.v.str.ptr ? put_front(&p->out, "general.architecture", &v, e)
					 : fmt_fail(e, FMT_IO, "out of memory");
		fmt_value_free(&v);
		if (k != FMT_OK)
			return k;
	}
	if (o->set_from) {
		fmt_kind k = setkv_apply_file(&p->out, o->set_from, !gguf, e);
		if (k != FMT_OK)
			return k;
	}
	for (size_t i = 0; i < o->n_sets; i++) {
		fmt_kind k = setkv_apply(&p->out, o->sets[i], !gguf, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

fmt_kind plan_build(convert_plan *p, const fmt_model *in, const convert_opts *o, fmt_pool *pool,
		    fmt_err *e)
{
	fmt_dtype want;
	memset(p, 0, sizeof *p);
	fmt_model_init(&p->out);
	p->out.driver = NULL;
	fmt_kind k = requested_dtype(o, &want, e);
	if (k != FMT_OK)
		return k;
	p->entries = calloc(in->n_tensors ? in->n_tensors : 1, sizeof *p->entries);
	if (!p->entries)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < in->n_tensors; i++) {
		const fmt_tensor *t = &in->tensors[i];
		if (!selected(t->name, o)) {
			p->excluded++;
			continue;
		}
		plan_entry *pe = &p->entries[p->n_entries];
		k = tensor_target(t, want, o->to, pe, e);
		if (k == FMT_OK)
			k = fmt_model_add_retyped(&p->out, in, t, t->name, pe->to, pool, e);
		if (k != FMT_OK)
			return k;
		if (is_quantized(t->dtype) && !is_quantized(pe->to))
			p->expanded++;
		p->n_entries++;
	}
	return carry_metadata(p, in, o, e);
}

void plan_free(convert_plan *p)
{
	free(p->entries);
	fmt_model_free(&p->out);
	memset(p, 0, sizeof *p);
}

static json_t *plan_json(const convert_plan *p, const char *input, const char *output, const convert_opts *o)
{
	json_t *tensors = json_array();
	for (size_t i = 0; tensors && i < p->n_entries; i++) {
		const plan_entry *pe = &p->entries[i];
		json_t *t = json_pack("{s:o,s:s,s:s,s:I}", "name", fmt_json_string(pe->src->name, strlen(pe->src->name)),
				      "from", fmt_dtype_name(pe->src->dtype), "to", fmt_dtype_name(pe->to),
				      "bytes", (json_int_t)p->out.tensors[i].nbytes);
		if (t && pe->why)
			json_object_set_new(t, "note", json_string(pe->why));
		json_array_append_new(tensors, t);
	}
	uint64_t bytes = 0;
	for (size_t i = 0; i < p->out.n_tensors; i++)
		bytes += p->out.tensors[i].nbytes;
	return json_pack("{s:o,s:o,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:o}",
			 "input", fmt_json_string(input, strlen(input)),
			 "output", fmt_json_string(output, strlen(output)), "format", o->to->name,
			 "dry_run", o->dry_run, "tensor_count", (json_int_t)p->n_entries,
			 "excluded", (json_int_t)p->excluded, "expanded", (json_int_t)p->expanded,
			 "dropped_metadata", (json_int_t)p->dropped_meta, "data_bytes", (json_int_t)bytes,
			 "tensors", tensors);
}

void plan_print(FILE *out, const convert_plan *p, const char *input, const char *output,
		const convert_opts *o)
{
	if (o->json) {
		json_t *j = plan_json(p, input, output, o);
		fmt_json_line(out, j);
		json_decref(j);
		return;
	}
	fputs(o->dry_run ? "plan: " : "converted: ", out);
	fmt_out_escaped(out, input, strlen(input));
	fputs(" -> ", out);
	fmt_out_escaped(out, output, strlen(output));
	fprintf(out, " (%s, %zu tensors)\n", o->to->name, p->n_entries);
	for (size_t i = 0; i < p->n_entries; i++) {
		const plan_entry *pe = &p->entries[i];
		fputs("  ", out);
		fmt_out_escaped(out, pe->src->name, strlen(pe->src->name));
		fprintf(out, "  %s -> %s  %" PRIu64 " bytes", fmt_dtype_name(pe->src->dtype),
			fmt_dtype_name(pe->to), p->out.tensors[i].nbytes);
		if (pe->why)
			fprintf(out, "  (%s)", pe->why);
		fputc('\n', out);
	}
}

void plan_warn(const convert_plan *p, const char *tool)
{
	if (p->expanded)
		fmt_report_warning(stderr, tool, "%zu quantized tensor%s expanded to a float type", p->expanded,
				   p->expanded == 1 ? "" : "s");
	if (p->dropped_meta)
		fmt_report_warning(stderr, tool, "%zu metadata entr%s dropped: the target holds only string values",
				   p->dropped_meta, p->dropped_meta == 1 ? "y" : "ies");
}
