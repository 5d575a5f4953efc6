/* The .nk format driver: probe by magic, open = fmt_nk_parse over the mapped file, the catalog as
 * model tensors named after the layer that owns them, upstream's summary as the text form and
 * the whole structure as describe's JSON. */
#include <stdlib.h>
#include <string.h>
#include "fmt/nk.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/drvopt.h"

static int nk_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	return n >= 4 && memcmp(head, "NKIT", 4) == 0 ? 100 : 0;
}

static fmt_dtype model_dtype(unsigned nk_dtype)
{
	return nk_dtype == NK_I8 ? FMT_DT_I8 : nk_dtype == NK_I32 ? FMT_DT_I32 : FMT_DT_F32;
}

static fmt_kind add_tensor(fmt_model *m, const nk_model *nm, const nk_tensor *t, uint32_t pair, const char *what,
			   fmt_err *e)
{
	const nk_pair *p = &nm->pairs[pair];
	char name[96];
	snprintf(name, sizeof name, "layers.%u.%s%s%s", p->layer, p->role, *p->role ? "." : "", what);
	fmt_tensor ft = { .name = name, .dtype = model_dtype(t->dtype), .ndim = t->rank, .nelems = t->count,
			  .nbytes = t->bytes, .source = 0, .offset = t->offset, .file_offset = t->offset };
	for (int d = 0; d < t->rank; d++)
		ft.shape[d] = t->dims[d];
	return fmt_model_add_tensor(m, &ft, NULL, e);
}

/* An int8 weight tensor of pair p as an encoded tensor (specs/nk.md §6): its codes, and the
 * scales tensor NAME__qscale (F32, in memory) of the per-channel scales when the op uses them
 * (one per output channel, dimension 0), else the one per-tensor weight_scale. Weights with a
 * non-zero zero point are not of this form and stay plain int8 tensors. */
static fmt_kind add_encoded(fmt_model *m, const nk_model *nm, uint32_t p, fmt_err *e)
{
	const nk_tensor *w = &nm->weights[p];
	const nk_quant *q = &nm->quant[p];
	if (q->w_zp != 0)
		return FMT_OK;
	const fmt_tensor *codes = &m->tensors[m->n_tensors - 1];
	int per_channel = q->n_scales == nm->biases[p].count && q->n_scales == w->dims[0];
	uint64_t n = per_channel ? q->n_scales : 1;
	float *scales = malloc(n * sizeof(float));
	if (!scales)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (uint64_t i = 0; i < n; i++)
		scales[i] = per_channel ? q->scales[i] : q->w_scale;
	char name[128];
	snprintf(name, sizeof name, "%s__qscale", codes->name);
	fmt_qtensor qt = { .name = codes->name, .format = FMT_Q_INT8, .axis = per_channel ? 0 : -1,
			   .ndim = codes->ndim };
	fmt_tensor st = { .name = name, .dtype = FMT_DT_F32, .ndim = codes->ndim, .nelems = n, .nbytes = n * 4,
			  .source = -1, .data = (const uint8_t *)scales, .owned_data = 1 };
	for (int d = 0; d < codes->ndim; d++) {
		qt.shape[d] = codes->shape[d];
		qt.scale_shape[d] = st.shape[d] = (per_channel && d == 0) ? n : 1;
	}
	fmt_kind k = fmt_model_add_qtensor(m, &qt, e);
	if (k == FMT_OK)
		k = fmt_model_add_tensor(m, &st, NULL, e);
	else
		free(scales);
	return k;
}

static fmt_kind nk_open(fmt_model *m, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	const uint8_t *bytes;
	nk_model *nm = calloc(1, sizeof *nm);
	if (!nm)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_source_view(s, 0, s->size, &bytes, e);
	if (k == FMT_OK)
		k = fmt_nk_parse(nm, bytes, s->size, e);
	if (k != FMT_OK) {
		free(nm);
		return k;
	}
	m->format_state = nm;
	m->version = nm->version;
	for (uint32_t i = 0; k == FMT_OK && i < nm->n_weights; i++) {
		k = add_tensor(m, nm, &nm->weights[i], i, "weight", e);
		if (k == FMT_OK && nm->quantized)
			k = add_encoded(m, nm, i, e);
		if (k == FMT_OK)
			k = add_tensor(m, nm, &nm->biases[i], i, "bias", e);
	}
	return k;
}

static void nk_close(fmt_model *m)
{
	fmt_nk_free(m->format_state);
	free(m->format_state);
	m->format_state = NULL;
}

static json_t *nk_describe(const fmt_model *m)
{
	return fmt_nk_describe_json(m->format_state);
}

static void nk_text_summary(const fmt_model *m, FILE *out)
{
	fmt_nk_print_summary(out, m->format_state, m->path);
}

const nk_model *fmt_nk_model_of(const fmt_model *m)
{
	return m->driver && m->driver->text_summary == nk_text_summary ? m->format_state : NULL;
}

/* ---- the writer's options (a network comes from another format's write_network) ---- */

static int parse_flag_no_fuse(void *values, const char *arg, fmt_err *e)
{
	(void)arg;
	(void)e;
	((nk_write_opts *)values)->no_fuse = 1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_flag_no_optimize(void *values, const char *arg, fmt_err *e)
{
	(void)arg;
	(void)e;
	((nk_write_opts *)values)->no_optimize = 1;
	return FMT_DRVOPT_GIVEN;
}

static const fmt_drvopt nk_option_list[] = {
	{ "no-fuse", NULL, "keep residual blocks as their primitive layers: no ResNet, UIB or\n"
	  "ConvNeXt V2 block is made (a graph with a residual Add is then refused)", FMT_DRVOPT_WRITE,
	  .parse = parse_flag_no_fuse },
	{ "no-optimize", NULL, "no packager passes (identity batch norms, batch norm folding,\n"
	  "merging of linear dense layers)", FMT_DRVOPT_WRITE, .parse = parse_flag_no_optimize },
	{ .name = NULL }
};

static const fmt_drvopts nk_options = { .list = nk_option_list, .size = sizeof(nk_write_opts) };

nk_write_opts fmt_nk_write_opts(const fmt_drvopt_sets *s)
{
	const nk_write_opts *o = fmt_drvopt_values(s, &nk_options);
	return o ? *o : (nk_write_opts){ 0 };
}

const fmt_driver fmt_driver_nk = {
	.name = "nk",
	.extension = ".nk",
	.title = ".nk",
	.caps = FMT_CAP_ENCODED | FMT_CAP_NETWORK,
	.options = &nk_options,
	.probe = nk_probe,
	.open = nk_open,
	.close = nk_close,
	.describe = nk_describe,
	.text_summary = nk_text_summary,
	.test_runner = "nk-run",
};
