/* GGUF: the §8 example byte for byte, the empty file, value-type round trips, writer refusals,
 * the malformed-file catalogue of scripts/gen/gguf-malformed, and split sets. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/gguf.h"
#include "fmt/quant.h"
#include "fmt/registry.h"
#include "helpers.h"
#include "unit.h"

static const uint8_t example[160] = {
	0x47, 0x47, 0x55, 0x46, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	'g', 'e', 'n', 'e', 'r', 'a', 'l', '.', 'a', 'r', 'c', 'h', 'i', 't', 'e', 'c', 't', 'u', 'r', 'e',
	0x08, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 'l', 'l', 'a', 'm', 'a',
	0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	't', 'o', 'k', 'e', 'n', '_', 'e', 'm', 'b', 'd', '.', 'w', 'e', 'i', 'g', 'h', 't',
	0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40,
	0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xA0, 0x40, 0x00, 0x00, 0xC0, 0x40,
	0, 0, 0, 0, 0, 0, 0, 0 };

static const float rows[6] = { 1, 2, 3, 4, 5, 6 };

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
	static char path[256];
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/fmtkit-gguf-XXXXXX");
		if (!mkdtemp(tmpdir))
			return NULL;
	}
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

/* Remove the test directory (created by mkdtemp above, so the name is ours) at exit. */
__attribute__((destructor)) static void remove_tmpdir(void)
{
	char cmd[128];
	if (!tmpdir[0] || strncmp(tmpdir, "/tmp/fmtkit-gguf-", 17) != 0)
		return;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	*len = buf ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	return buf;
}

static int spit(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(data, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

/* An F32 tensor of n values (n is the product of the shape in every call here). */
static void add_f32_tensor(fmt_model *m, const char *name, const uint64_t *shape, int ndim,
			   const float *data, uint64_t n)
{
	unit_add_tensor(m, name, FMT_DT_F32, ndim, shape, data, 4 * n);
}

static fmt_kind write_model(const fmt_model *m, const char *path, uint32_t align, fmt_err *e)
{
	fmt_sink k;
	fmt_gguf_opts g = { .alignment = align };
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1, .private_for = &fmt_driver_gguf,
			     .private_opts = &g };
	fmt_kind r = fmt_sink_open(&k, path, FMT_SINK_FORCE, e);
	if (r != FMT_OK)
		return r;
	r = fmt_gguf_write(m, &k, &o, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

static void example_model(fmt_model *m)
{
	fmt_err e = { 0 };
	fmt_model_init(m);
	fmt_value v = fmt_value_str("llama", 5);
	CHECK(fmt_model_add_meta(m, "general.architecture", &v, &e) == FMT_OK);
	fmt_value_free(&v);
	const uint64_t shape[2] = { 2, 3 };
	add_f32_tensor(m, "token_embd.weight", shape, 2, rows, 6);
}

TEST(gguf_write_spec_example_bytes)
{
	fmt_model m;
	fmt_err e = { 0 };
	size_t n = 0;
	example_model(&m);
	const char *path = tmp_path("example.gguf");
	CHECK(write_model(&m, path, 0, &e) == FMT_OK);
	uint8_t *got = slurp(path, &n);
	CHECK_EQ_U64(n, 160);
	CHECK(got && n == 160 && memcmp(got, example, 160) == 0);
	free(got);
	fmt_model_free(&m);
}

TEST(gguf_write_empty_file)
{
	fmt_model m;
	fmt_err e = { 0 };
	size_t n = 0;
	fmt_model_init(&m);
	const char *path = tmp_path("empty.gguf");
	CHECK(write_model(&m, path, 0, &e) == FMT_OK);
	uint8_t *got = slurp(path, &n);
	const uint8_t want[32] = { 'G', 'G', 'U', 'F', 3 };
	CHECK_EQ_U64(n, 32);
	CHECK(got && n == 32 && memcmp(got, want, 32) == 0);
	free(got);
	fmt_model_free(&m);
	fmt_model r;
	CHECK(fmt_model_open(&r, path, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(r.n_tensors, 0);
	CHECK_EQ_U64(r.n_meta, 0);
	fmt_model_free(&r);
}

TEST(gguf_read_spec_example)
{
	fmt_model m;
	fmt_err e;
	const char *path = tmp_path("example-in.gguf");
	CHECK(spit(path, example, sizeof example) == 0);
	fmt_err_clear(&e);
	CHECK(fmt_model_open(&m, path, NULL, &e) == FMT_OK);
	CHECK_STR(m.driver->name, "gguf");
	CHECK_EQ_U64(m.version, 3);
	CHECK_EQ_U64(m.n_meta, 1);
	const fmt_value *arch = fmt_model_get_meta(&m, "general.architecture");
	CHECK(arch && arch->type == FMT_V_STR);
	CHECK_STR(arch ? arch->v.str.ptr : NULL, "llama");
	CHECK_EQ_U64(m.n_tensors, 1);
	const fmt_tensor *t = &m.tensors[0];
	CHECK_STR(t->name, "token_embd.weight");
	CHECK(t->dtype == FMT_DT_F32 && t->ndim == 2);
	CHECK_EQ_U64(t->shape[0], 2);
	CHECK_EQ_U64(t->shape[1], 3);
	CHECK_EQ_U64(t->offset, 128);
	CHECK_EQ_U64(t->file_offset, 0);
	CHECK_EQ_U64(t->nbytes, 24);
	const fmt_gguf_info *gi = fmt_gguf_info_of(&m);
	CHECK(gi && gi->alignment == 32 && gi->data_start == 128 && gi->n_shards == 1);
	const uint8_t *bytes;
	uint8_t *to_free;
	CHECK(fmt_tensor_load(&m, t, &bytes, &to_free, &e) == FMT_OK);
	float y[6];
	CHECK(fmt_dequant_f32(t->dtype, bytes, 6, y, &e) == FMT_OK);
	CHECK(memcmp(y, rows, sizeof y) == 0);
	free(to_free);
	fmt_model_free(&m);
}

/* Every value type, arrays of strings and empty arrays, through write -> read. */
TEST(gguf_roundtrip_value_types)
{
	fmt_model m, r;
	fmt_err e = { 0 };
	fmt_model_init(&m);
	fmt_value v;
	struct { const char *key; fmt_vtype type; uint64_t u; int64_t i; double f; } sc[] = {
		{ "t.u8", FMT_V_U8, 255, 0, 0 }, { "t.i8", FMT_V_I8, 0, -128, 0 },
		{ "t.u16", FMT_V_U16, 65535, 0, 0 }, { "t.i16", FMT_V_I16, 0, -32768, 0 },
		{ "t.u32", FMT_V_U32, 4294967295u, 0, 0 }, { "t.i32", FMT_V_I32, 0, -2147483647 - 1, 0 },
		{ "t.f32", FMT_V_F32, 0, 0, 0.1f }, { "t.u64", FMT_V_U64, UINT64_MAX, 0, 0 },
		{ "t.i64", FMT_V_I64, 0, INT64_MIN, 0 }, { "t.f64", FMT_V_F64, 0, 0, 0.1 },
	};
	for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
		memset(&v, 0, sizeof v);
		v.type = sc[i].type;
		if (v.type == FMT_V_F32 || v.type == FMT_V_F64)
			v.v.f = sc[i].f;
		else if (v.type == FMT_V_I8 || v.type == FMT_V_I16 || v.type == FMT_V_I32 || v.type == FMT_V_I64)
			v.v.i = sc[i].i;
		else
			v.v.u = sc[i].u;
		CHECK(fmt_model_add_meta(&m, sc[i].key, &v, &e) == FMT_OK);
	}
	memset(&v, 0, sizeof v);
	v.type = FMT_V_BOOL;
	v.v.b = 1;
	CHECK(fmt_model_add_meta(&m, "t.bool", &v, &e) == FMT_OK);
	v = fmt_value_str("caf\xc3\xa9\0x", 7);
	CHECK(fmt_model_add_meta(&m, "t.str", &v, &e) == FMT_OK);
	fmt_value_free(&v);
	fmt_value items[3];
	items[0] = fmt_value_str("a", 1);
	items[1] = fmt_value_str("", 0);
	items[2] = fmt_value_str("x\0z", 3);
	memset(&v, 0, sizeof v);
	v.type = FMT_V_ARRAY;
	v.v.arr.elem = FMT_V_STR;
	v.v.arr.count = 3;
	v.v.arr.items = items;
	CHECK(fmt_model_add_meta(&m, "t.strs", &v, &e) == FMT_OK);
	for (int i = 0; i < 3; i++)
		fmt_value_free(&items[i]);
	memset(&v, 0, sizeof v);
	v.type = FMT_V_ARRAY;
	v.v.arr.elem = FMT_V_U32;
	CHECK(fmt_model_add_meta(&m, "t.empty", &v, &e) == FMT_OK);
	fmt_value f[2];
	memset(f, 0, sizeof f);
	f[0].type = f[1].type = FMT_V_F32;
	f[0].v.f = -1.5;
	f[1].v.f = 2.25;
	v.v.arr.elem = FMT_V_F32;
	v.v.arr.count = 2;
	v.v.arr.items = f;
	CHECK(fmt_model_add_meta(&m, "t.f32s", &v, &e) == FMT_OK);
	const uint64_t shape1[1] = { 6 }, shape3[3] = { 1, 2, 3 };
	add_f32_tensor(&m, "one_d", shape1, 1, rows, 6);
	add_f32_tensor(&m, "three_d", shape3, 3, rows, 6);
	add_f32_tensor(&m, "scalar", NULL, 0, rows, 1);

	const char *path = tmp_path("types.gguf");
	CHECK(write_model(&m, path, 64, &e) == FMT_OK);
	CHECK(fmt_model_open(&r, path, NULL, &e) == FMT_OK);
	/* alignment 64 was not in the metadata: the writer appended general.alignment */
	CHECK_EQ_U64(r.n_meta, m.n_meta + 1);
	const fmt_value *al = fmt_model_get_meta(&r, "general.alignment");
	CHECK(al && al->type == FMT_V_U32 && al->v.u == 64);
	CHECK(fmt_gguf_info_of(&r) && fmt_gguf_info_of(&r)->alignment == 64);
	for (size_t i = 0; i < m.n_meta && i < r.n_meta; i++) {
		const fmt_value *a = &m.meta[i].val, *b = &r.meta[i].val;
		CHECK_STR(r.meta[i].key, m.meta[i].key);
		CHECK(a->type == b->type);
		if (a->type != b->type)
			continue;
		switch (a->type) {
		case FMT_V_STR:
			CHECK(a->v.str.len == b->v.str.len && memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len) == 0);
			break;
		case FMT_V_ARRAY:
			CHECK(a->v.arr.elem == b->v.arr.elem && a->v.arr.count == b->v.arr.count);
			for (uint64_t j = 0; j < a->v.arr.count && j < b->v.arr.count; j++) {
				fmt_value xv = fmt_array_item(a, j), yv = fmt_array_item(b, j);
				const fmt_value *x = &xv, *y = &yv;
				if (x->type == FMT_V_STR)
					CHECK_STR(x->v.str.ptr, y->v.str.ptr);
				else
					CHECK(x->v.f == y->v.f);
			}
			break;
		case FMT_V_F32: case FMT_V_F64:
			CHECK(a->v.f == b->v.f);
			break;
		case FMT_V_BOOL:
			CHECK(a->v.b == b->v.b);
			break;
		case FMT_V_I8: case FMT_V_I16: case FMT_V_I32: case FMT_V_I64:
			CHECK(a->v.i == b->v.i);
			break;
		default:
			CHECK(a->v.u == b->v.u);
		}
	}
	/* strings read back packed in one buffer (audit 8), bytes and lengths kept, also in a copy */
	const fmt_value *strs = fmt_model_get_meta(&r, "t.strs");
	CHECK(strs && strs->v.arr.packed && !strs->v.arr.items && strs->v.arr.count == 3);
	fmt_value copy;
	CHECK(strs && fmt_value_copy(&copy, strs, &e) == FMT_OK);
	for (int c = 0; strs && c < 2; c++) {
		const fmt_value *a = c ? &copy : strs;
		fmt_value s0 = fmt_array_item(a, 0), s1 = fmt_array_item(a, 1), s2 = fmt_array_item(a, 2);
		CHECK(s0.type == FMT_V_STR && s0.v.str.len == 1 && strcmp(s0.v.str.ptr, "a") == 0);
		CHECK(s1.type == FMT_V_STR && s1.v.str.len == 0 && s1.v.str.ptr[0] == '\0');
		CHECK(s2.type == FMT_V_STR && s2.v.str.len == 3 && memcmp(s2.v.str.ptr, "x\0z", 4) == 0);
	}
	if (strs)
		fmt_value_free(&copy);
	CHECK_EQ_U64(r.n_tensors, 3);
	if (r.n_tensors == 3) {
		CHECK(r.tensors[0].ndim == 1 && r.tensors[0].shape[0] == 6);
		CHECK(r.tensors[1].ndim == 3 && r.tensors[1].shape[0] == 1 && r.tensors[1].shape[2] == 3);
		/* a scalar is written as n_dims 1, ne {1} */
		CHECK(r.tensors[2].ndim == 1 && r.tensors[2].shape[0] == 1 && r.tensors[2].nbytes == 4);
		CHECK(r.tensors[1].offset % 64 == 0 && r.tensors[2].offset % 64 == 0);
	}
	fmt_model_free(&r);
	fmt_model_free(&m);
}

TEST(gguf_write_refusals)
{
	fmt_model m;
	fmt_err e = { 0 };
	fmt_sink k;
	const uint64_t shape5[5] = { 1, 1, 1, 2, 3 }, shape1[1] = { 6 };
	fmt_model_init(&m);
	add_f32_tensor(&m, "five", shape5, 5, rows, 6);
	CHECK(fmt_sink_open(&k, tmp_path("refused.gguf"), FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_gguf_write(&m, &k, NULL, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "tensor 'five'") != NULL);
	fmt_sink_abort(&k);
	fmt_model_free(&m);

	fmt_model_init(&m);
	char name[65];
	memset(name, 'n', 64);
	name[64] = '\0';
	add_f32_tensor(&m, name, shape1, 1, rows, 6);
	CHECK(fmt_sink_open(&k, tmp_path("refused.gguf"), FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_gguf_write(&m, &k, NULL, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "at most 63") != NULL);
	fmt_sink_abort(&k);
	fmt_model_free(&m);
	CHECK(access(tmp_path("refused.gguf"), F_OK) != 0);
}

/* Every case of scripts/gen/gguf-malformed: exit status and message. */
TEST(gguf_malformed_catalogue)
{
	char cmd[512], line[1024];
	const char *dir = tmp_path("malformed");
	snprintf(cmd, sizeof cmd, "python3 scripts/gen/gguf-malformed %s", dir);
	if (system(cmd) != 0) {
		unit_fail(__FILE__, __LINE__, "scripts/gen/gguf-malformed did not run (python3, cwd = repo root?)");
		return;
	}
	char tsv[300];
	snprintf(tsv, sizeof tsv, "%s/cases.tsv", dir);
	FILE *f = fopen(tsv, "r");
	CHECK(f != NULL);
	int n = 0;
	while (f && fgets(line, sizeof line, f)) {
		char *file = strtok(line, "\t\n"), *code = strtok(NULL, "\t\n"), *msg = strtok(NULL, "\t\n");
		if (!file || !code)
			continue;
		char path[600];
		snprintf(path, sizeof path, "%s/%s", dir, file);
		fmt_model m;
		fmt_err e;
		fmt_err_clear(&e);
		fmt_kind k = fmt_model_open(&m, path, &fmt_driver_gguf, &e);
		int want = atoi(code);
		if ((int)k != want || (msg && !strstr(e.msg, msg))) {
			char m2[1200];
			snprintf(m2, sizeof m2, "%s: kind %d (want %d), message \"%s\" (want \"%s\")", file, (int)k,
				 want, e.msg, msg ? msg : "");
			unit_fail(__FILE__, __LINE__, m2);
		}
		if (k == FMT_OK) {
			/* decode what can be decoded */
			for (size_t i = 0; i < m.n_tensors; i++) {
				const fmt_tensor *t = &m.tensors[i];
				const uint8_t *bytes;
				uint8_t *to_free;
				if (!fmt_dequant_supported(t->dtype) || t->nelems > 4096)
					continue;
				float y[4096];
				CHECK(fmt_tensor_load(&m, t, &bytes, &to_free, &e) == FMT_OK);
				CHECK(fmt_dequant_f32(t->dtype, bytes, t->nelems, y, &e) == FMT_OK);
				free(to_free);
			}
			fmt_model_free(&m);
		}
		n++;
	}
	if (f)
		fclose(f);
	CHECK(n > 60);
}

TEST(gguf_split_roundtrip)
{
	fmt_model m, r;
	fmt_err e = { 0 };
	char **paths;
	size_t n_paths;
	example_model(&m);
	const uint64_t shape1[1] = { 6 }, shape2[2] = { 3, 2 };
	add_f32_tensor(&m, "b", shape1, 1, rows, 6);
	add_f32_tensor(&m, "c", shape2, 2, rows, 6);
	char prefix[300];
	snprintf(prefix, sizeof prefix, "%s", tmp_path("sp"));
	CHECK(fmt_gguf_write_sharded(&m, prefix, &(fmt_shard_limits){ .max_tensors = 1 },
				     &(fmt_write_opts){ .sink_flags = FMT_SINK_FORCE }, &paths, &n_paths, &e) == FMT_OK);
	CHECK_EQ_U64(n_paths, 3);
	if (n_paths == 3) {
		CHECK(strstr(paths[0], "sp-00001-of-00003.gguf") != NULL);
		CHECK(fmt_model_open(&r, paths[0], NULL, &e) == FMT_OK);
		CHECK_EQ_U64(r.n_sources, 3);
		CHECK_EQ_U64(r.n_meta, m.n_meta);
		CHECK(!fmt_model_get_meta(&r, "split.count"));
		CHECK_STR(r.meta[0].key, "general.architecture");
		CHECK_EQ_U64(r.n_tensors, 3);
		for (size_t i = 0; i < r.n_tensors && i < 3; i++) {
			const uint8_t *bytes;
			uint8_t *to_free;
			CHECK_STR(r.tensors[i].name, m.tensors[i].name);
			CHECK(r.tensors[i].ndim == m.tensors[i].ndim);
			CHECK(memcmp(r.tensors[i].shape, m.tensors[i].shape, sizeof m.tensors[i].shape) == 0);
			CHECK_EQ_U64(r.tensors[i].source, i);
			CHECK(fmt_tensor_load(&r, &r.tensors[i], &bytes, &to_free, &e) == FMT_OK);
			CHECK(memcmp(bytes, rows, 24) == 0);
			free(to_free);
		}
		CHECK(fmt_gguf_info_of(&r)->n_shards == 3);
		fmt_model_free(&r);
		/* a non-first shard opens the whole set (issue 20 item 4): shard 1's metadata, the
		 * tensors in set order, the file named first among the sources */
		CHECK(fmt_model_open(&r, paths[1], NULL, &e) == FMT_OK);
		CHECK_EQ_U64(r.n_meta, m.n_meta);
		CHECK(!fmt_model_get_meta(&r, "split.count"));
		CHECK_STR(r.meta[0].key, "general.architecture");
		CHECK_EQ_U64(r.n_tensors, 3);
		CHECK_EQ_U64(r.n_sources, 3);
		CHECK_STR(r.sources[0].path, paths[1]);
		for (size_t i = 0; i < r.n_tensors && i < 3; i++)
			CHECK_STR(r.tensors[i].name, m.tensors[i].name);
		CHECK(r.n_tensors == 3 && r.tensors[1].source == 0);
		CHECK(fmt_gguf_info_of(&r)->n_shards == 3);
		fmt_model_free(&r);
		/* a missing shard: SchemaMismatch on the file named, naming the missing one */
		unlink(paths[2]);
		fmt_err_clear(&e);
		CHECK(fmt_model_open(&r, paths[1], NULL, &e) == FMT_SCHEMA);
		CHECK_STR(e.file, paths[1]);
		CHECK(strstr(e.msg, paths[2]) != NULL);
	}
	for (size_t i = 0; i < n_paths; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	free(paths);

	/* by size, with a metadata-only first shard: 24-byte tensors count 32 each */
	CHECK(fmt_gguf_write_sharded(&m, prefix, &(fmt_shard_limits){ .max_bytes = 64, .empty_first = 1 },
				     &(fmt_write_opts){ .sink_flags = FMT_SINK_FORCE }, &paths, &n_paths, &e) == FMT_OK);
	CHECK_EQ_U64(n_paths, 3); /* {} {a, b} {c} */
	if (n_paths == 3) {
		CHECK(fmt_model_open(&r, paths[0], NULL, &e) == FMT_OK);
		CHECK_EQ_U64(r.n_tensors, 3);
		CHECK(r.n_tensors == 3 && r.tensors[0].source == 1 && r.tensors[1].source == 1 &&
		      r.tensors[2].source == 2);
		fmt_model_free(&r);
	}
	for (size_t i = 0; i < n_paths; i++) {
		unlink(paths[i]);
		free(paths[i]);
	}
	free(paths);
	fmt_model_free(&m);
}

/* general.alignment in the model is honoured, and rewritten when the caller asks for another. */
TEST(gguf_write_alignment_key)
{
	fmt_model m, r;
	fmt_err e = { 0 };
	example_model(&m);
	fmt_value v;
	memset(&v, 0, sizeof v);
	v.type = FMT_V_U32;
	v.v.u = 16;
	CHECK(fmt_model_add_meta(&m, "general.alignment", &v, &e) == FMT_OK);
	const char *path = tmp_path("align.gguf");
	CHECK(write_model(&m, path, 0, &e) == FMT_OK);
	CHECK(fmt_model_open(&r, path, NULL, &e) == FMT_OK);
	CHECK(fmt_gguf_info_of(&r)->alignment == 16 && fmt_gguf_info_of(&r)->data_start % 16 == 0);
	CHECK_EQ_U64(r.n_meta, 2);
	fmt_model_free(&r);
	CHECK(write_model(&m, path, 128, &e) == FMT_OK);
	CHECK(fmt_model_open(&r, path, NULL, &e) == FMT_OK);
	CHECK(fmt_gguf_info_of(&r)->alignment == 128 && r.tensors[0].offset == 256);
	CHECK(fmt_model_get_meta(&r, "general.alignment")->v.u == 128);
	fmt_model_free(&r);
	m.meta[1].val.type = FMT_V_U64;
	fmt_sink k;
	CHECK(fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_gguf_write(&m, &k, NULL, &e) == FMT_INVALID_FORMAT);
	fmt_sink_abort(&k);
	fmt_model_free(&m);
}

/* ---- general.file_type / general.quantization_version ---- */

static void add_shaped(fmt_model *m, const char *name, fmt_dtype t, uint64_t nrows, uint64_t cols)
{
	fmt_err e = { 0 };
	fmt_tensor x;
	memset(&x, 0, sizeof x);
	x.name = (char *)name;
	x.dtype = t;
	x.ndim = nrows ? 2 : 1;
	x.shape[0] = nrows ? nrows : cols;
	x.shape[1] = cols;
	x.source = -1;
	fmt_dtype_nbytes(t, x.shape, x.ndim, &x.nelems, &x.nbytes, &e);
	fmt_model_add_tensor(m, &x, NULL, &e);
}

TEST(gguf_file_type_keys)
{
	fmt_model m;
	fmt_err e = { 0 };
	uint32_t ft;
	fmt_model_init(&m);
	add_shaped(&m, "big.f32", FMT_DT_F32, 0, 100000); /* 1-D: not a weight */
	add_shaped(&m, "w.q4k", FMT_DT_Q4_K, 4, 256);
	add_shaped(&m, "w.q6k", FMT_DT_Q6_K, 2, 256);
	add_shaped(&m, "w.f16", FMT_DT_F16, 8, 32);
	/* keep: Q4_K holds most 2-D bytes (576 of 1508) -> llama.cpp's guess MOSTLY_Q4_K_M */
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_INVALID, NULL, &e) == FMT_OK);
	const fmt_value *v = fmt_model_get_meta(&m, "general.file_type");
	CHECK(v && v->type == FMT_V_U32 && v->v.u == 15);
	v = fmt_model_get_meta(&m, "general.quantization_version");
	CHECK(v && v->type == FMT_V_U32 && v->v.u == 2);
	/* an existing u32 value naming Q4_K (Q4_K_S) is kept, in place */
	fmt_value s = { .type = FMT_V_U32, .v.u = 14 };
	CHECK(fmt_model_put_meta(&m, "general.file_type", &s, &e) == FMT_OK);
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_INVALID, NULL, &e) == FMT_OK);
	CHECK(fmt_model_get_meta(&m, "general.file_type")->v.u == 14);
	CHECK_STR(m.meta[0].key, "general.file_type");
	/* a requested dtype wins */
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_BF16, NULL, &e) == FMT_OK);
	CHECK(fmt_model_get_meta(&m, "general.file_type")->v.u == 32);
	CHECK_EQ_U64(m.n_meta, 2);
	fmt_model_free(&m);
	/* no quantized tensor: an inherited quantization_version stays with keep (issue 20 item
	 * 2) and is removed when a float dtype is asked for */
	fmt_model_init(&m);
	add_shaped(&m, "w", FMT_DT_F32, 2, 2);
	CHECK(fmt_model_put_meta(&m, "general.quantization_version", &s, &e) == FMT_OK);
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_INVALID, NULL, &e) == FMT_OK);
	CHECK(fmt_model_get_meta(&m, "general.quantization_version") != NULL);
	CHECK(fmt_model_get_meta(&m, "general.file_type")->v.u == 0);
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_F32, NULL, &e) == FMT_OK);
	CHECK(fmt_model_get_meta(&m, "general.quantization_version") == NULL);
	fmt_model_free(&m);
	/* no tensors: both keys stay as they are, whatever is asked */
	fmt_model_init(&m);
	CHECK(fmt_model_put_meta(&m, "general.file_type", &s, &e) == FMT_OK);
	CHECK(fmt_model_put_meta(&m, "general.quantization_version", &s, &e) == FMT_OK);
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_Q8_0, NULL, &e) == FMT_OK);
	CHECK(fmt_gguf_set_type_keys(&m, FMT_DT_INVALID, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(m.n_meta, 2);
	CHECK(fmt_model_get_meta(&m, "general.file_type")->v.u == 14);
	CHECK(fmt_model_get_meta(&m, "general.quantization_version")->v.u == 14);
	fmt_model_free(&m);
	/* names and the guess table */
	CHECK_STR(fmt_gguf_ftype_name(7), "MOSTLY_Q8_0");
	CHECK_STR(fmt_gguf_ftype_name(38), "MOSTLY_MXFP4_MOE");
	CHECK(fmt_gguf_ftype_name(5) == NULL && fmt_gguf_ftype_name(1024) == NULL);
	CHECK(fmt_gguf_ftype_of_dtype(FMT_DT_Q3_K, &ft) && ft == 12);
	CHECK(fmt_gguf_ftype_of_dtype(FMT_DT_IQ3_S, &ft) && ft == 26);
	CHECK(!fmt_gguf_ftype_of_dtype(FMT_DT_I32, &ft));
}
