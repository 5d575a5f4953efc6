/* ONNX models read with protobuf-c (the schema subset in onnx.proto): the message unpacked,
 * each initializer's data checked against its dims and decoded, inline (raw_data or the typed
 * lists) or from an external data file beside the model (a relative path inside the model's
 * folder, an offset and a length inside that file). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "onnx_graph.h"

static size_t elem_bytes(int dtype)
{
	return dtype == ONNX_FLOAT || dtype == ONNX_INT32 ? 4 : dtype == ONNX_INT64 || dtype == ONNX_DOUBLE ? 8 : 0;
}

static const char *tensor_name(const FmtOnnx__TensorProto *t)
{
	return t->name && *t->name ? t->name : "(unnamed)";
}

static fmt_kind take_shape(onnx_init *in, const FmtOnnx__TensorProto *t, fmt_err *e)
{
	if (t->n_dims > ONNX_MAX_RANK)
		return fmt_fail(e, FMT_UNSUPPORTED, "initializer '%s' has %zu dimensions (at most %d)", in->name,
				t->n_dims, ONNX_MAX_RANK);
	in->rank = (int)t->n_dims;
	in->count = 1;
	for (size_t d = 0; d < t->n_dims; d++) {
		if (t->dims[d] < 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': dimension %zu is negative", in->name, d);
		in->dims[d] = (uint64_t)t->dims[d];
		if (fmt_mul_u64(in->count, in->dims[d], &in->count) || in->count > ONNX_MAX_FILE_BYTES)
			return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': its dimensions overflow", in->name);
	}
	return FMT_OK;
}

/* in's host array: float for the float types, int64 for the integer ones. */
static fmt_kind alloc_values(onnx_init *in, fmt_err *e)
{
	uint64_t n = in->count ? in->count : 1;
	if (in->dtype == ONNX_FLOAT || in->dtype == ONNX_DOUBLE)
		in->f32 = malloc(n * sizeof(float));
	else
		in->i64 = malloc(n * sizeof(int64_t));
	return in->f32 || in->i64 ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

/* Decode count little-endian elements of dtype at p into in's host arrays. */
static fmt_kind decode_raw(onnx_init *in, const uint8_t *p, fmt_err *e)
{
	if (alloc_values(in, e) != FMT_OK)
		return FMT_IO;
	for (uint64_t i = 0; i < in->count; i++) {
		if (in->dtype == ONNX_FLOAT) {
			uint32_t u = fmt_rd_u32(p + 4 * i);
			memcpy(&in->f32[i], &u, 4);
		} else if (in->dtype == ONNX_DOUBLE) {
			uint64_t u = fmt_rd_u64(p + 8 * i);
			double d;
			memcpy(&d, &u, 8);
			in->f32[i] = (float)d;
		} else if (in->dtype == ONNX_INT32) {
			in->i64[i] = (int32_t)fmt_rd_u32(p + 4 * i);
		} else {
			in->i64[i] = (int64_t)fmt_rd_u64(p + 8 * i);
		}
	}
	return FMT_OK;
}

/* The typed lists (float_data, int32_data, int64_data, double_data). */
static fmt_kind decode_lists(onnx_init *in, const FmtOnnx__TensorProto *t, fmt_err *e)
{
	size_t have = in->dtype == ONNX_FLOAT ? t->n_float_data : in->dtype == ONNX_INT32 ? t->n_int32_data :
		      in->dtype == ONNX_INT64 ? t->n_int64_data : t->n_double_data;
	if (have != in->count)
		return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': %zu values for %llu elements", in->name, have,
				(unsigned long long)in->count);
	if (alloc_values(in, e) != FMT_OK)
		return FMT_IO;
	for (uint64_t i = 0; i < in->count; i++) {
		if (in->dtype == ONNX_FLOAT)
			in->f32[i] = t->float_data[i];
		else if (in->dtype == ONNX_DOUBLE)
			in->f32[i] = (float)t->double_data[i];
		else if (in->dtype == ONNX_INT32)
			in->i64[i] = t->int32_data[i];
		else
			in->i64[i] = t->int64_data[i];
	}
	return FMT_OK;
}

/* A decimal external_data number ("offset", "length"). */
static int parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || strlen(s) > 20)
		return 1;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || fmt_mul_u64(v, 10, &v) || fmt_add_u64(v, (uint64_t)(*s - '0'), &v))
			return 1;
	}
	*out = v;
	return 0;
}

/* A location that stays inside the model's folder: relative, no ".." component. */
static int location_ok(const char *loc)
{
	if (!*loc || loc[0] == '/' || strlen(loc) > 4096)
		return 0;
	for (const char *p = loc; *p;) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += len + (end ? 1 : 0);
	}
	return 1;
}

typedef struct external_ref {
	const char *location;
	uint64_t offset, length;
	int has_length;
} external_ref;

static fmt_kind external_fields(const onnx_init *in, const FmtOnnx__TensorProto *t, external_ref *r, fmt_err *e)
{
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < t->n_external_data; i++) {
		const char *key = t->external_data[i]->key ? t->external_data[i]->key : "";
		const char *val = t->external_data[i]->value ? t->external_data[i]->value : "";
		if (strcmp(key, "location") == 0)
			r->location = val;
		else if (strcmp(key, "offset") == 0 && parse_u64(val, &r->offset))
			return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data offset '%.40s' is not a "
					"number", in->name, val);
		else if (strcmp(key, "length") == 0 && (r->has_length = 1) && parse_u64(val, &r->length))
			return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data length '%.40s' is not a "
					"number", in->name, val);
	}
	if (!r->location)
		return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data without a location", in->name);
	if (!location_ok(r->location))
		return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data location '%.200s' leaves the "
				"model's folder (absolute paths and '..' are refused)", in->name, r->location);
	return FMT_OK;
}

/* The external file at dir/location, opened only if its real path is inside dir's. */
static fmt_kind open_inside(const char *dir, const onnx_init *in, const char *location, int *fd, fmt_err *e)
{
	char path[PATH_MAX], real_dir[PATH_MAX], real[PATH_MAX];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, location) >= sizeof path || !realpath(dir, real_dir))
		return fmt_fail(e, FMT_IO, "initializer '%s': cannot resolve external data '%.200s'", in->name, location);
	if (!realpath(path, real))
		return fmt_fail(e, FMT_IO, "initializer '%s': external data '%.200s': %s", in->name, location,
				strerror(errno));
	size_t n = strlen(real_dir);
	if (strncmp(real, real_dir, n) != 0 || (real[n] != '/' && strcmp(real_dir, "/") != 0))
		return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data '%.200s' resolves outside the "
				"model's folder", in->name, location);
	*fd = open(real, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return fmt_fail(e, FMT_IO, "initializer '%s': external data '%.200s': %s", in->name, location,
				strerror(errno));
	return FMT_OK;
}

static fmt_kind read_external(onnx_init *in, const FmtOnnx__TensorProto *t, const char *dir, fmt_err *e)
{
	external_ref r;
	fmt_kind k = external_fields(in, t, &r, e);
	if (k != FMT_OK)
		return k;
	if (!dir)
		return fmt_fail(e, FMT_UNSUPPORTED, "initializer '%s': external data needs the model as a file",
				in->name);
	uint64_t want = in->count * elem_bytes(in->dtype), end;
	if (r.has_length && r.length != want)
		return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data length %llu, its dimensions "
				"need %llu bytes", in->name, (unsigned long long)r.length, (unsigned long long)want);
	int fd;
	if ((k = open_inside(dir, in, r.location, &fd, e)) != FMT_OK)
		return k;
	struct stat st;
	uint8_t *buf = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		k = fmt_fail(e, FMT_IO, "initializer '%s': external data '%.200s' is not a regular file", in->name,
			     r.location);
	else if (fmt_add_u64(r.offset, want, &end) || end > (uint64_t)st.st_size)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': external data [%llu, +%llu) lies past the end of "
			     "'%.200s' (%llu bytes)", in->name, (unsigned long long)r.offset, (unsigned long long)want,
			     r.location, (unsigned long long)st.st_size);
	else if (!(buf = malloc(want ? want : 1)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	else if (pread(fd, buf, want, (off_t)r.offset) != (ssize_t)want)
		k = fmt_fail(e, FMT_IO, "initializer '%s': cannot read external data '%.200s'", in->name, r.location);
	close(fd);
	if (k == FMT_OK)
		k = decode_raw(in, buf, e);
	in->external = 1;
	free(buf);
	return k;
}

static fmt_kind load_init(onnx_init *in, const FmtOnnx__TensorProto *t, const char *dir, fmt_err *e)
{
	in->name = tensor_name(t);
	in->dtype = t->has_data_type ? t->data_type : 0;
	fmt_kind k = take_shape(in, t, e);
	if (k != FMT_OK)
		return k;
	if (!elem_bytes(in->dtype))
		return fmt_fail(e, FMT_UNSUPPORTED, "initializer '%s': data type %d (float, double, int32 and int64 "
				"are read)", in->name, in->dtype);
	if (t->has_data_location && t->data_location == FMT_ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return read_external(in, t, dir, e);
	if (!t->has_raw_data)
		return decode_lists(in, t, e);
	if (t->raw_data.len != in->count * elem_bytes(in->dtype))
		return fmt_fail(e, FMT_INVALID_FORMAT, "initializer '%s': %zu bytes of raw data for %llu elements of "
				"%zu bytes", in->name, t->raw_data.len, (unsigned long long)in->count,
				elem_bytes(in->dtype));
	return decode_raw(in, t->raw_data.data, e);
}

/* init_names: every initializer's name, in order, so that a name's ordinal is its index; left
 * short (fmt_onnx_init_find then searches) at a name seen twice or out of memory. */
static void index_inits(onnx_graph *g)
{
	for (size_t i = 0; i < g->n_inits; i++)
		if (fmt_nameset_add(&g->init_names, g->inits[i].name) != 1)
			return;
}

static void input_shape(onnx_graph *g)
{
	if (!g->g->n_input || !g->g->input[0]->type || !g->g->input[0]->type->tensor_type ||
	    !g->g->input[0]->type->tensor_type->shape)
		return;
	const FmtOnnx__TensorShapeProto *s = g->g->input[0]->type->tensor_type->shape;
	g->input_rank = s->n_dim > ONNX_MAX_RANK ? ONNX_MAX_RANK + 1 : (int)s->n_dim;
	for (size_t d = 0; d < s->n_dim && d < ONNX_MAX_RANK; d++) {
		const FmtOnnx__TensorShapeProto__Dimension *dim = s->dim[d];
		int fixed = dim->value_case == FMT_ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		g->input_dims[d] = fixed && dim->dim_value > 0 ? (uint64_t)dim->dim_value : 0;
	}
}

#define BUDGET_HEADER 16   /* the size of each block, kept before it (keeps malloc's alignment) */

static void *budget_alloc(void *ctx, size_t size)
{
	onnx_budget *b = ctx;
	uint64_t need = (uint64_t)size + BUDGET_HEADER;
	if (b->used + need > b->limit) {
		b->exceeded = 1;
		return NULL;
	}
	uint8_t *p = malloc(need);
	if (!p) {
		b->nomem = 1;
		return NULL;
	}
	memcpy(p, &size, sizeof size);
	b->used += need;
	return p + BUDGET_HEADER;
}

static void budget_free(void *ctx, void *ptr)
{
	onnx_budget *b = ctx;
	if (!ptr)
		return;
	uint8_t *p = (uint8_t *)ptr - BUDGET_HEADER;
	size_t size;
	memcpy(&size, p, sizeof size);
	b->used -= size + BUDGET_HEADER;
	free(p);
}

fmt_kind fmt_onnx_graph_load(onnx_graph *g, const uint8_t *bytes, size_t n, const char *dir, fmt_err *e)
{
	memset(g, 0, sizeof *g);
	if (n > ONNX_MAX_FILE_BYTES)
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu bytes: an ONNX protobuf holds at most 2 GiB", n);
	g->budget.limit = ONNX_DECODE_BASE_BYTES + 4ull * n;
	g->alloc = (ProtobufCAllocator){ .alloc = budget_alloc, .free = budget_free, .allocator_data = &g->budget };
	g->model = fmt_onnx__model_proto__unpack(&g->alloc, n, bytes);
	if (!g->model && g->budget.exceeded)
		return fmt_fail(e, FMT_INVALID_FORMAT, "decoding the protobuf needs more than %llu bytes of memory (64 MiB "
				"and 4 per byte of the file)", (unsigned long long)g->budget.limit);
	if (!g->model && g->budget.nomem)
		return fmt_fail(e, FMT_IO, "out of memory decoding the ONNX protobuf");
	if (!g->model)
		return fmt_fail(e, FMT_INVALID_FORMAT, "not a valid ONNX protobuf (ModelProto does not decode)");
	g->g = g->model->graph;
	if (!g->g)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the ONNX model has no graph");
	if (g->g->n_node > ONNX_MAX_NODES || g->g->n_initializer > ONNX_MAX_INITIALIZERS)
		return fmt_fail(e, FMT_UNSUPPORTED, "%zu nodes and %zu initializers (at most %d of each)", g->g->n_node,
				g->g->n_initializer, ONNX_MAX_NODES);
	for (size_t i = 0; i < g->g->n_node; i++)
		if (!g->g->node[i]->op_type || !*g->g->node[i]->op_type)
			return fmt_fail(e, FMT_INVALID_FORMAT, "node %zu has no op_type", i);
	g->inits = calloc(g->g->n_initializer ? g->g->n_initializer : 1, sizeof *g->inits);
	if (!g->inits)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < g->g->n_initializer; i++) {
		fmt_kind k = load_init(&g->inits[g->n_inits++], g->g->initializer[i], dir, e);
		if (k != FMT_OK)
			return k;
	}
	index_inits(g);
	input_shape(g);
	return FMT_OK;
}

void fmt_onnx_graph_free(onnx_graph *g)
{
	fmt_nameset_free(&g->init_names);
	for (size_t i = 0; i < g->n_inits; i++) {
		free(g->inits[i].f32);
		free(g->inits[i].i64);
	}
	free(g->inits);
	if (g->model)
		fmt_onnx__model_proto__free_unpacked(g->model, &g->alloc);
	memset(g, 0, sizeof *g);
}

const onnx_init *fmt_onnx_init_find(const onnx_graph *g, const char *name)
{
	if (!name || !*name)
		return NULL;
	if (g->init_names.used == g->n_inits) {
		long at = fmt_nameset_find(&g->init_names, name);
		return at >= 0 ? &g->inits[at] : NULL;
	}
	for (size_t i = 0; i < g->n_inits; i++)
		if (strcmp(g->inits[i].name, name) == 0)
			return &g->inits[i];
	return NULL;
}
