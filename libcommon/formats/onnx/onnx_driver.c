/* The ONNX driver (read-only): a model's initializers as tensors, its graph (ops, input) for
 * fmt-inspect's JSON, and the graph converted to a .nk network (write_network). */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fmt/out.h"
#include "fmt/registry.h"
#include "onnx_graph.h"

/* Protobuf has no magic: a ModelProto starts with ir_version (field 1, varint 1..15) and goes
 * on with another ModelProto field (producer, graph, opset...). */
static int onnx_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)file_size;
	if (n < 4 || head[0] != 0x08 || head[1] < 1 || head[1] > 15)
		return 0;
	static const uint8_t next_tags[] = { 0x12, 0x1a, 0x22, 0x28, 0x32, 0x3a, 0x42, 0x72 };
	return memchr(next_tags, head[2], sizeof next_tags) ? 40 : 0;
}

static fmt_dtype init_dtype(const onnx_init *in)
{
	return in->f32 ? FMT_DT_F32 : FMT_DT_I64;
}

static fmt_kind add_tensor(fmt_model *m, const onnx_init *in, fmt_err *e)
{
	fmt_tensor t = { .name = (char *)in->name, .dtype = init_dtype(in), .ndim = in->rank, .nelems = in->count,
			 .source = -1, .data = in->f32 ? (const uint8_t *)in->f32 : (const uint8_t *)in->i64 };
	t.nbytes = in->count * (in->f32 ? 4 : 8);
	if (in->rank > FMT_MAX_DIMS)
		return fmt_fail(e, FMT_UNSUPPORTED, "initializer '%s' has %d dimensions", in->name, in->rank);
	for (int d = 0; d < in->rank; d++)
		t.shape[d] = in->dims[d];
	if (fmt_model_find_tensor(m, in->name))
		return fmt_fail(e, FMT_INVALID_FORMAT, "two initializers are named '%s'", in->name);
	return fmt_model_add_tensor(m, &t, NULL, e);
}

/* The folder external data is read from: the model's own, when it is a file. */
static char *model_dir(const fmt_model *m)
{
	struct stat st;
	if (!m->path || strcmp(m->path, "-") == 0 || stat(m->path, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	char *copy = strdup(m->path), *dir = copy ? strdup(dirname(copy)) : NULL;
	free(copy);
	return dir;
}

static fmt_kind onnx_open(fmt_model *m, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	const uint8_t *bytes;
	onnx_graph *g = calloc(1, sizeof *g);
	if (!g)
		return fmt_fail(e, FMT_IO, "out of memory");
	m->format_state = g;
	fmt_kind k = s->size > ONNX_MAX_FILE_BYTES ? fmt_fail(e, FMT_UNSUPPORTED, "an ONNX protobuf holds at most 2 GiB")
						    : fmt_source_view(s, 0, s->size, &bytes, e);
	char *dir = k == FMT_OK ? model_dir(m) : NULL;
	if (k == FMT_OK)
		k = fmt_onnx_graph_load(g, bytes, (size_t)s->size, dir, e);
	free(dir);
	for (size_t i = 0; k == FMT_OK && i < g->n_inits; i++)
		k = add_tensor(m, &g->inits[i], e);
	if (k == FMT_OK && g->model->has_ir_version)
		m->version = (uint32_t)g->model->ir_version;
	return k;
}

static void onnx_close(fmt_model *m)
{
	if (m->format_state)
		fmt_onnx_graph_free(m->format_state);
	free(m->format_state);
	m->format_state = NULL;
}

static json_t *str_json(const char *s)
{
	return s ? fmt_json_string(s, strlen(s)) : json_null();
}

static json_t *onnx_describe(const fmt_model *m)
{
	const onnx_graph *g = m->format_state;
	json_t *ops = json_array(), *input = json_array(), *opsets = json_array();
	for (size_t i = 0; ops && i < g->g->n_node; i++)
		json_array_append_new(ops, json_pack("{s:o,s:o}", "op", str_json(g->g->node[i]->op_type), "name",
						     str_json(g->g->node[i]->name)));
	for (int d = 0; input && d < g->input_rank && d < ONNX_MAX_RANK; d++)
		json_array_append_new(input, json_integer((json_int_t)g->input_dims[d]));
	for (size_t i = 0; opsets && i < g->model->n_opset_import; i++)
		json_array_append_new(opsets, json_pack("{s:o,s:I}", "domain", str_json(g->model->opset_import[i]->domain),
							"version", (json_int_t)g->model->opset_import[i]->version));
	return json_pack("{s:I,s:o,s:o,s:o,s:I,s:o}", "ir_version", (json_int_t)g->model->ir_version, "producer",
			 str_json(g->model->producer_name), "opsets", opsets, "input_shape", input, "initializer_count",
			 (json_int_t)g->n_inits, "nodes", ops);
}

static fmt_kind onnx_write_network(const fmt_model *m, const fmt_driver *to, fmt_sink *k, const fmt_write_opts *o,
				   fmt_err *e)
{
	if (to != &fmt_driver_nk)
		return fmt_fail(e, FMT_UNSUPPORTED, "an ONNX graph converts to a .nk network, not to %s", to->title);
	nk_write_opts no = fmt_nk_write_opts(o->options);
	nk_spec spec;
	fmt_kind r = fmt_onnx_to_nk(m->format_state, &no, &spec, e);
	uint8_t *bytes = NULL;
	size_t n = 0;
	if (r == FMT_OK)
		r = fmt_nk_write_bytes(&spec, &bytes, &n, e);
	if (r == FMT_OK)
		r = fmt_sink_write(k, bytes, n, e);
	free(bytes);
	if (spec.layers || spec.weights)
		fmt_nk_spec_free(&spec);
	return r;
}

const fmt_driver fmt_driver_onnx = {
	.name = "onnx",
	.extension = ".onnx",
	.title = "ONNX",
	.probe = onnx_probe,
	.open = onnx_open,
	.close = onnx_close,
	.describe = onnx_describe,
	.write_network = onnx_write_network,
	.holds_dtype = NULL,
};
