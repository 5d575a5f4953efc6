/* safetensors driver, writer and sharded index (specs/safetensors.md). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/model.h"
#include "fmt/registry.h"
#include "fmt/safetensors.h"
#include "helpers.h"
#include "unit.h"

/* ---- helpers ---- */

static char *tmp_dir(void)
{
	static char dir[64];
	strcpy(dir, "/tmp/fmt-st-XXXXXX");
	return mkdtemp(dir);
}

static char *join(const char *dir, const char *name)
{
	static char path[4][512];
	static int slot;
	slot = (slot + 1) % 4;
	snprintf(path[slot], sizeof path[slot], "%s/%s", dir, name);
	return path[slot];
}

static void rm_dir(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static int write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t put = fwrite(p, 1, n, f);
	return fclose(f) == 0 && put == n ? 0 : -1;
}

static uint8_t *read_whole(const char *path, size_t *n)
{
	char *buf = NULL;
	fmt_err e = { 0 };
	if (fmt_read_file(path, (size_t)1 << 26, &buf, n, &e) != FMT_OK)
		return NULL;
	return (uint8_t *)buf;
}

/* Open bytes from memory with the safetensors driver (as the fuzz target does). */
static fmt_kind open_mem(const void *p, size_t n, fmt_model *m, fmt_err *e)
{
	fmt_source s;
	memset(&s, 0, sizeof s);
	s.fd = -1;
	s.path = strdup("mem");
	s.size = n;
	s.buf = malloc(n ? n : 1);
	memcpy(s.buf, p, n);
	fmt_model_init(m);
	fmt_model_add_source(m, &s, NULL, e);
	m->driver = &fmt_driver_safetensors;
	m->close = fmt_driver_safetensors.close;
	fmt_err_clear(e);
	return fmt_driver_safetensors.open(m, e);
}

/* A file: 8-byte length of header (as given, no padding), the header, then data_len zeros. */
static uint8_t *make_st(const char *header, size_t data_len, size_t *n)
{
	size_t hl = strlen(header);
	uint8_t *p = calloc(1, 8 + hl + data_len + 1);
	fmt_wr_u64(p, hl);
	memcpy(p + 8, header, hl);
	*n = 8 + hl + data_len;
	return p;
}

static fmt_kind open_header(const char *header, size_t data_len, fmt_err *e)
{
	size_t n;
	uint8_t *p = make_st(header, data_len, &n);
	fmt_model m;
	fmt_kind k = open_mem(p, n, &m, e);
	fmt_model_free(&m);
	free(p);
	return k;
}

/* Write m to dir/name through a real sink; returns the file's bytes. */
static uint8_t *write_model(const fmt_model *m, const char *dir, const char *name, size_t *n)
{
	fmt_sink k;
	fmt_err e = { 0 };
	const char *path = join(dir, name);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	fmt_kind r = fmt_st_write(m, &k, &e);
	CHECK(r == FMT_OK);
	if (r != FMT_OK) {
		printf("  write: %s\n", e.msg);
		fmt_sink_abort(&k);
		return NULL;
	}
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	return read_whole(path, n);
}

static const float seq6[6] = { 0, 1, 2, 3, 4, 5 };

static int is_little_endian(void)
{
	uint16_t x = 1;
	uint8_t b;
	memcpy(&b, &x, 1);
	return b == 1;
}

/* Expected file: len, header text, spaces to pad, data. */
static void check_file(const uint8_t *got, size_t n, uint64_t hlen, const char *json,
		       const void *data, size_t data_len)
{
	size_t jl = strlen(json);
	CHECK_EQ_U64(n, 8 + hlen + data_len);
	if (n != 8 + hlen + data_len)
		return;
	CHECK_EQ_U64(fmt_rd_u64(got), hlen);
	CHECK_MEM(got + 8, json, jl);
	for (size_t i = jl; i < hlen; i++)
		CHECK(got[8 + i] == ' ');
	CHECK_MEM(got + 8 + hlen, data, data_len);
}

/* ---- §6 reference vectors and §7 worked example ---- */

TEST(st_write_reference_attn_dot0)
{
	char *dir = tmp_dir();
	fmt_model m;
	size_t n;
	uint64_t shape[3] = { 1, 2, 3 };
	fmt_model_init(&m);
	CHECK(is_little_endian());
	unit_add_sized_tensor(&m, "attn.0", FMT_DT_F32, 3, shape, seq6);
	uint8_t *got = write_model(&m, dir, "a.safetensors", &n);
	CHECK(got != NULL);
	if (got) {
		static const uint8_t len64[8] = { 0x40, 0, 0, 0, 0, 0, 0, 0 };
		CHECK_MEM(got, len64, 8);
		check_file(got, n, 64, "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}",
			   seq6, 24);
	}
	free(got);
	fmt_model_free(&m);
	rm_dir(dir);
}

TEST(st_write_reference_attn0_padded)
{
	char *dir = tmp_dir();
	fmt_model m;
	size_t n;
	uint64_t shape[4] = { 1, 1, 2, 3 };
	fmt_model_init(&m);
	unit_add_sized_tensor(&m, "attn0", FMT_DT_F32, 4, shape, seq6);
	uint8_t *got = write_model(&m, dir, "a.safetensors", &n);
	const char *json = "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}";
	CHECK_EQ_U64(strlen(json), 65);
	if (got)
		check_file(got, n, 72, json, seq6, 24);
	free(got);
	fmt_model_free(&m);
	rm_dir(dir);
}

/* What a dry run lists (fmt_st_file_bytes) is what the writer writes: unpadded and padded
 * headers (attn.0: 64, attn0: 65 -> 72), metadata, no tensor. */
TEST(st_file_bytes_is_what_is_written)
{
	char *dir = tmp_dir();
	fmt_model m;
	fmt_err e = { 0 };
	size_t n;
	uint64_t bytes = 0, shape[4] = { 1, 1, 2, 3 };
	fmt_model_init(&m);
	CHECK(fmt_st_file_bytes(&m, &bytes, &e) == FMT_OK);
	CHECK_EQ_U64(bytes, 16);
	unit_add_sized_tensor(&m, "attn0", FMT_DT_F32, 4, shape, seq6);
	CHECK(fmt_st_file_bytes(&m, &bytes, &e) == FMT_OK);
	CHECK_EQ_U64(bytes, 8 + 72 + 24);
	unit_add_sized_tensor(&m, "attn.0", FMT_DT_F32, 3, shape + 1, seq6);
	unit_add_str_meta(&m, "framework", "pt");
	uint8_t *got = write_model(&m, dir, "a.safetensors", &n);
	CHECK(fmt_st_file_bytes(&m, &bytes, &e) == FMT_OK);
	CHECK_EQ_U64(bytes, n);
	free(got);
	fmt_model_free(&m);
	rm_dir(dir);
}

TEST(st_write_reference_empty)
{
	char *dir = tmp_dir();
	fmt_model m;
	size_t n;
	fmt_model_init(&m);
	uint8_t *got = write_model(&m, dir, "e.safetensors", &n);
	static const uint8_t want[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' ' };
	CHECK_EQ_U64(n, 16);
	if (got && n == 16)
		CHECK_MEM(got, want, 16);
	free(got);
	unit_add_str_meta(&m, "framework", "pt");
	got = write_model(&m, dir, "em.safetensors", &n);
	if (got)
		check_file(got, n, 40, "{\"__metadata__\":{\"framework\":\"pt\"}}", "", 0);
	free(got);
	fmt_model_free(&m);
	rm_dir(dir);
}

static const uint8_t worked_example[164] = {
	0x90, 0, 0, 0, 0, 0, 0, 0,
	'{', '"', '_', '_', 'm', 'e', 't', 'a', 'd', 'a', 't', 'a', '_', '_', '"', ':', '{', '"',
	'f', 'o', 'r', 'm', 'a', 't', '"', ':', '"', 'p', 't', '"', '}', ',', '"', 'a', '"', ':',
	'{', '"', 'd', 't', 'y', 'p', 'e', '"', ':', '"', 'F', '3', '2', '"', ',', '"', 's', 'h',
	'a', 'p', 'e', '"', ':', '[', '2', ']', ',', '"', 'd', 'a', 't', 'a', '_', 'o', 'f', 'f',
	's', 'e', 't', 's', '"', ':', '[', '0', ',', '8', ']', '}', ',', '"', 'b', '"', ':', '{',
	'"', 'd', 't', 'y', 'p', 'e', '"', ':', '"', 'F', '1', '6', '"', ',', '"', 's', 'h', 'a',
	'p', 'e', '"', ':', '[', '2', ']', ',', '"', 'd', 'a', 't', 'a', '_', 'o', 'f', 'f', 's',
	'e', 't', 's', '"', ':', '[', '8', ',', '1', '2', ']', '}', '}', ' ', ' ', ' ', ' ', ' ',
	0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0,
	0x00, 0x3c, 0x00, 0xc0,
};

static const uint8_t f16_b[4] = { 0x00, 0x3c, 0x00, 0xc0 };
static const float f32_a[2] = { 1.0f, -2.0f };

static void build_worked(fmt_model *m)
{
	uint64_t two = 2;
	fmt_model_init(m);
	/* Added in the "wrong" order: the writer sorts F32 before F16. */
	unit_add_sized_tensor(m, "b", FMT_DT_F16, 1, &two, f16_b);
	unit_add_sized_tensor(m, "a", FMT_DT_F32, 1, &two, f32_a);
	unit_add_str_meta(m, "format", "pt");
}

TEST(st_write_worked_example_164_bytes)
{
	char *dir = tmp_dir();
	fmt_model m;
	size_t n;
	build_worked(&m);
	uint8_t *got = write_model(&m, dir, "w.safetensors", &n);
	CHECK_EQ_U64(n, 164);
	if (got && n == 164)
		for (size_t i = 0; i < 164; i++)
			if (got[i] != worked_example[i]) {
				char msg[64];
				snprintf(msg, sizeof msg, "byte %zu: %02x != %02x", i, got[i], worked_example[i]);
				unit_fail(__FILE__, __LINE__, msg);
				break;
			}
	free(got);
	fmt_model_free(&m);
	rm_dir(dir);
}

TEST(st_read_worked_example)
{
	char *dir = tmp_dir();
	const char *path = join(dir, "w.safetensors");
	fmt_model m;
	fmt_err e = { 0 };
	CHECK(write_file(path, worked_example, sizeof worked_example) == 0);
	fmt_kind k = fmt_model_open(&m, path, NULL, &e);
	CHECK(k == FMT_OK);
	if (k != FMT_OK) {
		printf("  %s\n", e.msg);
		rm_dir(dir);
		return;
	}
	CHECK(m.driver == &fmt_driver_safetensors);
	CHECK_EQ_U64(m.version, 0);
	CHECK_EQ_U64(fmt_st_header_len(&m), 144);
	CHECK_EQ_U64(m.n_meta, 1);
	CHECK_STR(m.meta[0].key, "format");
	CHECK(m.meta[0].val.type == FMT_V_STR);
	CHECK_STR(m.meta[0].val.v.str.ptr, "pt");
	CHECK_EQ_U64(m.n_tensors, 2);
	CHECK_STR(m.tensors[0].name, "a");
	CHECK(m.tensors[0].dtype == FMT_DT_F32);
	CHECK_EQ_U64(m.tensors[0].ndim, 1);
	CHECK_EQ_U64(m.tensors[0].shape[0], 2);
	CHECK_EQ_U64(m.tensors[0].nelems, 2);
	CHECK_EQ_U64(m.tensors[0].nbytes, 8);
	CHECK_EQ_U64(m.tensors[0].offset, 152);
	CHECK_EQ_U64(m.tensors[0].file_offset, 0);
	CHECK_EQ_U64(m.tensors[0].source, 0);
	CHECK_STR(m.tensors[1].name, "b");
	CHECK(m.tensors[1].dtype == FMT_DT_F16);
	CHECK_EQ_U64(m.tensors[1].offset, 160);
	CHECK_EQ_U64(m.tensors[1].file_offset, 8);
	const uint8_t *bytes;
	uint8_t *to_free;
	CHECK(fmt_tensor_load(&m, &m.tensors[1], &bytes, &to_free, &e) == FMT_OK);
	CHECK_MEM(bytes, f16_b, 4);
	free(to_free);

	/* Write it back: the same 164 bytes. */
	size_t n;
	uint8_t *again = write_model(&m, dir, "again.safetensors", &n);
	CHECK_EQ_U64(n, 164);
	if (again && n == 164)
		CHECK_MEM(again, worked_example, 164);
	free(again);
	fmt_model_free(&m);
	rm_dir(dir);
}

TEST(st_read_metadata_in_file_order)
{
	fmt_model m;
	fmt_err e = { 0 };
	size_t n;
	uint8_t *p = make_st("{\"__metadata__\":{\"z\":\"1\",\"b\":\"2\",\"m\":\"\\u00e9\\n\"},"
			     "\"t\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}  \t\r\n",
			     1, &n);
	CHECK(open_mem(p, n, &m, &e) == FMT_OK);
	CHECK_EQ_U64(m.n_meta, 3);
	if (m.n_meta == 3) {
		CHECK_STR(m.meta[0].key, "z");
		CHECK_STR(m.meta[1].key, "b");
		CHECK_STR(m.meta[2].key, "m");
		CHECK_STR(m.meta[2].val.v.str.ptr, "\xc3\xa9\n");
	}
	CHECK_EQ_U64(m.n_tensors, 1);
	CHECK_EQ_U64(m.tensors[0].ndim, 0);
	CHECK_EQ_U64(m.tensors[0].nelems, 1);
	fmt_model_free(&m);
	free(p);
}

TEST(st_read_tensors_in_offset_order)
{
	fmt_model m;
	fmt_err e = { 0 };
	size_t n;
	uint8_t *p = make_st("{\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]},"
			     "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
			     "\"a\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]},"
			     "\"f\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[6,9]}}",
			     9, &n);
	fmt_kind k = open_mem(p, n, &m, &e);
	CHECK(k == FMT_OK);
	if (k != FMT_OK)
		printf("  %s\n", e.msg);
	CHECK_EQ_U64(m.n_tensors, 4);
	if (m.n_tensors == 4) {
		CHECK_STR(m.tensors[0].name, "a");
		CHECK_STR(m.tensors[1].name, "e");
		CHECK_EQ_U64(m.tensors[1].nbytes, 0);
		CHECK_STR(m.tensors[2].name, "c");
		CHECK_STR(m.tensors[3].name, "f");
		CHECK_EQ_U64(m.tensors[3].nelems, 6);
		CHECK_EQ_U64(m.tensors[3].nbytes, 3);
	}
	fmt_model_free(&m);
	free(p);
}

TEST(st_zero_tensor_file)
{
	fmt_err e = { 0 };
	CHECK(open_header("{}", 0, &e) == FMT_OK);
	CHECK(open_header("{}      ", 0, &e) == FMT_OK);
	CHECK(open_header("{\"__metadata__\":{}}", 0, &e) == FMT_OK);
}

/* ---- §5 / §9 malformed headers ---- */

struct bad_case {
	const char *header;
	size_t data;
	fmt_kind kind;
	const char *msg;
};

#define T(x) "{\"w\":" x "}"
static const struct bad_case bad_cases[] = {
	{ "{\"__metadata__\":{\"a\":\"\xff\"}}", 0, FMT_INVALID_FORMAT, "not valid UTF-8 at byte 22 (file offset 30)" },
	{ "{\"__metadata__\":{\"a\":\"\xc0\xaf\"}}", 0, FMT_INVALID_FORMAT, "not valid UTF-8 at byte 22" },
	{ "{\"a\":\"\xed\xa0\x80\"}", 0, FMT_INVALID_FORMAT, "not valid UTF-8 at byte 6" },
	{ "[]", 0, FMT_INVALID_FORMAT, "must begin with '{'" },
	{ " {}", 0, FMT_INVALID_FORMAT, "must begin with '{' (found whitespace)" },
	{ "", 0, FMT_INVALID_FORMAT, "must begin with '{' (found an empty header)" },
	{ "{} x", 0, FMT_INVALID_FORMAT, "not valid JSON" },
	{ "{}{}", 0, FMT_INVALID_FORMAT, "not valid JSON" },
	{ "{\"a\":", 0, FMT_INVALID_FORMAT, "not valid JSON" },
	{ T("{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "negative number at header byte 29" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-0,8]}"), 8, FMT_INVALID_FORMAT, "negative number" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': shape[0] has a fraction or exponent" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8e0]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': data_offsets[1] has a fraction or exponent" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8E+0]}"), 8, FMT_INVALID_FORMAT, "fraction or exponent" },
	{ T("{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "not valid JSON" },
	{ T("{\"dtype\":\"F32\",\"shape\":[+2],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "not valid JSON" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551616]}"), 8, FMT_INVALID_FORMAT, "not valid JSON" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,9223372036854775808]}"), 8, FMT_INVALID_FORMAT, "not valid JSON" },
	{ "{\"__metadata__\":{\"a\":\"\\ud800\"}}", 0, FMT_INVALID_FORMAT, "not valid JSON" },
	{ "{\"__metadata__\":{\"a\":\"x\ty\"}}", 0, FMT_INVALID_FORMAT, "not valid JSON" },
	{ "{\"__metadata__\":{\"a\":\"\\u0000\"}}", 0, FMT_INVALID_FORMAT, "not valid JSON" },
	{ "{\"__metadata__\":\"pt\"}", 0, FMT_INVALID_FORMAT, "__metadata__ is not an object" },
	{ "{\"__metadata__\":{\"x\":1}}", 0, FMT_INVALID_FORMAT, "__metadata__ value for 'x' is not a string" },
	{ "{\"__metadata__\":{\"x\":[\"a\"]}}", 0, FMT_INVALID_FORMAT, "__metadata__ value for 'x' is not a string" },
	{ "{\"__metadata__\":{},\"__metadata__\":{}}", 0, FMT_INVALID_FORMAT, "duplicate key '__metadata__' in header" },
	{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
	  1, FMT_INVALID_FORMAT, "duplicate key 'a' in header" },
	{ "{\"a\\\"b\":{},\"a\\\"b\":{}}", 0, FMT_INVALID_FORMAT, "duplicate key 'a\\\"b' in header" },
	{ T("{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}"), 1, FMT_INVALID_FORMAT, "duplicate key 'dtype'" },
	{ T("[0,8]"), 8, FMT_INVALID_FORMAT, "tensor 'w': entry is not an object" },
	{ T("{\"shape\":[2],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': missing 'dtype'" },
	{ T("{\"dtype\":\"F32\",\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': missing 'shape'" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': missing 'data_offsets'" },
	{ T("{\"dtype\":\"F17\",\"shape\":[2],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': unknown dtype 'F17'" },
	{ T("{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': unknown dtype 'f32'" },
	{ T("{\"dtype\":\"Q4_0\",\"shape\":[32],\"data_offsets\":[0,18]}"), 18, FMT_INVALID_FORMAT, "tensor 'w': unknown dtype 'Q4_0'" },
	{ T("{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': dtype is not a string" },
	{ T("{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': shape is not an array" },
	{ T("{\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': shape[0] is not a non-negative integer" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4,8]}"), 8, FMT_INVALID_FORMAT, "exactly two integers" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}"), 8, FMT_INVALID_FORMAT, "exactly two integers" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{\"a\":0}}"), 8, FMT_INVALID_FORMAT, "exactly two integers" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[\"0\",8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': data_offsets[0] is not a non-negative integer" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"strides\":[1]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': unknown field 'strides'" },
	{ T("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}"), 4, FMT_UNSUPPORTED, "tensor 'w': rank 17" },
	{ T("{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': element count overflows" },
	{ T("{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': byte size" },
	{ T("{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}"), 2, FMT_INVALID_FORMAT, "tensor 'w': misaligned: 3 F4 elements" },
	{ T("{\"dtype\":\"F6_E3M2\",\"shape\":[3],\"data_offsets\":[0,3]}"), 3, FMT_INVALID_FORMAT, "tensor 'w': misaligned: 3 F6_E3M2 elements" },
	{ T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': data_offsets begin 4 leaves a hole at the start" },
	{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
	  16, FMT_INVALID_FORMAT, "tensor 'b': data_offsets begin 8 leaves a hole after 4" },
	{ "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
	  12, FMT_INVALID_FORMAT, "tensor 'b' overlaps 'a' (begin 4 < end 8)" },
	{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
	  8, FMT_INVALID_FORMAT, "tensor 'b' overlaps 'a'" },
	{ T("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': data_offsets end 4 < begin 8" },
	{ T("{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}"), 8, FMT_INVALID_FORMAT, "tensor 'w': data_offsets [0, 8] hold 8 bytes but 3 F32 elements need 12" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"), 4, FMT_INVALID_FORMAT, "file is truncated" },
	{ T("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"), 12, FMT_INVALID_FORMAT, "file has 4 bytes after the last tensor" },
	{ "{}", 3, FMT_INVALID_FORMAT, "file has 3 bytes after the last tensor (expected 10 bytes, found 13)" },
};
#undef T

TEST(st_malformed_headers)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const struct bad_case *c = &bad_cases[i];
		if (!c->msg[0])
			continue;
		fmt_err e = { 0 };
		fmt_kind k = open_header(c->header, c->data, &e);
		if (k != c->kind || !strstr(e.msg, c->msg)) {
			char m[1400];
			snprintf(m, sizeof m, "case %zu: kind %d, message \"%s\" (want %d, \"%s\")", i, (int)k,
				 k == FMT_OK ? "" : e.msg, (int)c->kind, c->msg);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
}

TEST(st_malformed_lengths)
{
	fmt_err e = { 0 };
	fmt_model m;
	uint8_t small[5] = { 2, 0, 0, 0, 0 };
	CHECK(open_mem(small, sizeof small, &m, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "too small") != NULL);
	fmt_model_free(&m);

	uint8_t big[10] = { 0, 0xc2, 0xeb, 0x0b, 0, 0, 0, 0, '{', '}' }; /* 200000000 */
	CHECK(open_mem(big, sizeof big, &m, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "header length 200000000 exceeds the 100000000-byte cap");
	fmt_model_free(&m);

	memset(big, 0xff, 8);
	CHECK(open_mem(big, sizeof big, &m, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "exceeds the 100000000-byte cap") != NULL);
	fmt_model_free(&m);

	uint8_t past[10] = { 100, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
	CHECK(open_mem(past, sizeof past, &m, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "runs past the end of the file") != NULL);
	fmt_model_free(&m);

	uint8_t nul[16] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0, 0, 0, 0, 0, 0 };
	CHECK(open_mem(nul, sizeof nul, &m, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "not valid JSON") != NULL);
	fmt_model_free(&m);
}

TEST(st_probe)
{
	const fmt_driver *d = &fmt_driver_safetensors;
	CHECK(d->probe(worked_example, sizeof worked_example, sizeof worked_example) >= 50);
	uint8_t ws[16] = { 8, 0, 0, 0, 0, 0, 0, 0, ' ', '\n', '{', '}', ' ', ' ', ' ', ' ' };
	CHECK(d->probe(ws, sizeof ws, sizeof ws) > 0);
	uint8_t gguf[16] = { 'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	CHECK(d->probe(gguf, sizeof gguf, sizeof gguf) == 0);
	uint8_t text[16] = "{\"weight_map\":1}";
	CHECK(d->probe(text, sizeof text, sizeof text) == 0);
	CHECK(fmt_driver_st_index.probe(text, sizeof text, sizeof text) > 0);
	CHECK(fmt_driver_st_index.probe(worked_example, sizeof worked_example, 164) == 0);
	CHECK(d->probe(worked_example, 7, 7) == 0);
}

/* Open must read only the header: a sparse 8 GiB file opens at once. */
TEST(st_open_touches_only_the_header)
{
	char *dir = tmp_dir();
	const char *path = join(dir, "big.safetensors");
	char header[128];
	uint64_t data = (uint64_t)8 << 30;
	int hl = snprintf(header, sizeof header,
			  "{\"big\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[0,%llu]}}",
			  (unsigned long long)data, (unsigned long long)data);
	uint8_t len[8];
	fmt_wr_u64(len, (uint64_t)hl);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, len, 8) == 8);
	CHECK(write(fd, header, (size_t)hl) == hl);
	CHECK(ftruncate(fd, (off_t)(8 + (uint64_t)hl + data)) == 0);
	close(fd);
	fmt_model m;
	fmt_err e = { 0 };
	fmt_kind k = fmt_model_open(&m, path, NULL, &e);
	CHECK(k == FMT_OK);
	if (k == FMT_OK) {
		CHECK_EQ_U64(m.tensors[0].nbytes, data);
		CHECK(m.sources[0].map == NULL);
		fmt_model_free(&m);
	} else {
		printf("  %s\n", e.msg);
	}
	rm_dir(dir);
}

TEST(st_open_100k_tensors)
{
	const size_t count = 100000;
	size_t cap = count * 80 + 64, len = 0;
	char *h = malloc(cap);
	len += (size_t)snprintf(h + len, cap - len, "{");
	for (size_t i = 0; i < count; i++)
		len += (size_t)snprintf(h + len, cap - len,
					"%s\"layer.%zu.w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}",
					i ? "," : "", count - 1 - i, count - 1 - i, count - i);
	len += (size_t)snprintf(h + len, cap - len, "}");
	size_t n;
	uint8_t *p = make_st(h, count, &n);
	fmt_model m;
	fmt_err e = { 0 };
	fmt_kind k = open_mem(p, n, &m, &e);
	CHECK(k == FMT_OK);
	CHECK_EQ_U64(m.n_tensors, count);
	if (k == FMT_OK) {
		CHECK_STR(m.tensors[0].name, "layer.0.w");
		CHECK_EQ_U64(m.tensors[count - 1].file_offset, count - 1);
		char *json = NULL;
		size_t jl = 0;
		CHECK(fmt_st_header_json(&m, &json, &jl, &e) == FMT_OK);
		free(json);
	}
	fmt_model_free(&m);
	free(p);
	free(h);
}

/* ---- writer details ---- */

TEST(st_write_escaping_and_order)
{
	fmt_model m;
	fmt_err e = { 0 };
	uint64_t one = 1;
	static const uint8_t byte = 7;
	static const uint64_t u64v = 9;
	static const uint16_t bf = 0x3f80;
	fmt_model_init(&m);
	unit_add_sized_tensor(&m, "q\"\\/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9", FMT_DT_U8, 1, &one, &byte);
	unit_add_sized_tensor(&m, "b", FMT_DT_BOOL, 1, &one, &byte);
	unit_add_sized_tensor(&m, "z", FMT_DT_U64, 1, &one, &u64v);
	unit_add_sized_tensor(&m, "B", FMT_DT_BF16, 1, &one, &bf);
	unit_add_sized_tensor(&m, "A", FMT_DT_BF16, 1, &one, &bf);
	unit_add_str_meta(&m, "zz", "1");
	unit_add_str_meta(&m, "Za", "\x02");
	fmt_value num = { .type = FMT_V_U32, .v.u = 5 };
	CHECK(fmt_model_add_meta(&m, "count", &num, &e) == FMT_OK);
	char *json = NULL;
	size_t len = 0;
	CHECK(fmt_st_header_json(&m, &json, &len, &e) == FMT_OK);
	static const char want[] = "{\"__metadata__\":{\"Za\":\"\\u0002\",\"zz\":\"1\"},"
		"\"z\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[0,8]},"
		"\"A\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[8,10]},"
		"\"B\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[10,12]},"
		"\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[12,13]},"
		"\"b\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[13,14]}}";
	CHECK_STR(json, want);
	CHECK_EQ_U64(len, strlen(json));
	free(json);

	size_t *order = NULL;
	CHECK(fmt_st_tensor_order(&m, &order, &e) == FMT_OK);
	if (order) {
		CHECK_EQ_U64(order[0], 2);
		CHECK_EQ_U64(order[4], 1);
	}
	free(order);

	/* Write, count the skipped number, read back: names and metadata survive. */
	char *dir = tmp_dir();
	fmt_sink k;
	size_t skipped = 99;
	CHECK(fmt_sink_open(&k, join(dir, "x.safetensors"), 0, &e) == FMT_OK);
	CHECK(fmt_st_write_ex(&m, &k, &skipped, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	CHECK_EQ_U64(skipped, 1);
	fmt_model r;
	CHECK(fmt_model_open(&r, join(dir, "x.safetensors"), NULL, &e) == FMT_OK);
	CHECK_EQ_U64(r.n_tensors, 5);
	CHECK(fmt_model_find_tensor(&r, "q\"\\/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9") != NULL);
	CHECK_EQ_U64(r.n_meta, 2);
	if (r.n_meta == 2)
		CHECK_STR(r.meta[0].val.v.str.ptr, "\x02");
	fmt_model_free(&r);
	fmt_model_free(&m);
	rm_dir(dir);
}

TEST(st_write_refusals)
{
	fmt_model m;
	fmt_err e = { 0 };
	uint64_t n32 = 32, one = 1;
	static uint8_t block[18];
	char *json = NULL;
	size_t len;
	fmt_model_init(&m);
	unit_add_sized_tensor(&m, "blk.0.q", FMT_DT_Q4_0, 1, &n32, block);
	CHECK(fmt_st_header_json(&m, &json, &len, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "tensor 'blk.0.q'") != NULL && strstr(e.msg, "Q4_0") != NULL);
	fmt_model_free(&m);

	fmt_model_init(&m);
	unit_add_sized_tensor(&m, "a", FMT_DT_U8, 1, &one, block);
	unit_add_sized_tensor(&m, "a", FMT_DT_F32, 1, &one, block);
	CHECK(fmt_st_header_json(&m, &json, &len, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "duplicate tensor name 'a'") != NULL);
	fmt_model_free(&m);

	fmt_model_init(&m);
	unit_add_sized_tensor(&m, "__metadata__", FMT_DT_U8, 1, &one, block);
	CHECK(fmt_st_header_json(&m, &json, &len, &e) == FMT_UNSUPPORTED);
	fmt_model_free(&m);

	fmt_model_init(&m);
	fmt_value v = fmt_value_str("a\0b", 3);
	CHECK(fmt_model_add_meta(&m, "k", &v, &e) == FMT_OK);
	fmt_value_free(&v);
	CHECK(fmt_st_header_json(&m, &json, &len, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "metadata 'k'") != NULL);
	fmt_model_free(&m);

	fmt_model_init(&m);
	unit_add_str_meta(&m, "k", "1");
	unit_add_str_meta(&m, "k", "2");
	CHECK(fmt_st_header_json(&m, &json, &len, &e) == FMT_INVALID_FORMAT);
	fmt_model_free(&m);
}

/* ---- sharded index ---- */

static const char py_index[] =
	"{\n"
	"  \"metadata\": {\n"
	"    \"total_size\": 1234\n"
	"  },\n"
	"  \"weight_map\": {\n"
	"    \"a\\\"b\\\\c\\n\\u0001\\u007f\\ud83d\\ude00\": \"model-00001-of-00002.safetensors\",\n"
	"    \"zeta.w\\u00e9ight\": \"model-00002-of-00002.safetensors\"\n"
	"  }\n"
	"}\n";

TEST(st_index_write_matches_python)
{
	char *dir = tmp_dir();
	const char *names[2] = { "zeta.w\xc3\xa9ight", "a\"b\\c\n\x01\x7f\xf0\x9f\x98\x80" };
	const char *files[2] = { "model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors" };
	fmt_err e = { 0 };
	size_t n;
	const char *path = join(dir, "model.safetensors.index.json");
	CHECK(fmt_st_index_write(path, names, files, 2, 1234, 0, &e) == FMT_OK);
	uint8_t *got = read_whole(path, &n);
	CHECK_EQ_U64(n, strlen(py_index));
	if (got)
		CHECK_STR((char *)got, py_index);
	free(got);
	/* An existing output is refused without the force flag. */
	CHECK(fmt_st_index_write(path, names, files, 2, 1234, 0, &e) == FMT_USAGE);
	CHECK(fmt_st_index_write(path, NULL, NULL, 0, 0, FMT_SINK_FORCE, &e) == FMT_OK);
	got = read_whole(path, &n);
	if (got)
		CHECK_STR((char *)got, "{\n  \"metadata\": {\n    \"total_size\": 0\n  },\n  \"weight_map\": {}\n}\n");
	free(got);
	const char *bad_files[1] = { "../x.safetensors" };
	CHECK(fmt_st_index_write(path, names, bad_files, 1, 0, FMT_SINK_FORCE, &e) == FMT_USAGE);

	/* What we write we read back. */
	fmt_st_index ix;
	CHECK(fmt_st_index_parse(py_index, strlen(py_index), &ix, &e) == FMT_OK);
	CHECK_EQ_U64(ix.n_entries, 2);
	CHECK(ix.has_total_size);
	CHECK_EQ_U64(ix.total_size, 1234);
	if (ix.n_entries == 2) {
		CHECK_STR(ix.entries[0].tensor, names[1]);
		CHECK_STR(ix.entries[1].file, files[0]);
	}
	fmt_st_index_free(&ix);
	rm_dir(dir);
}

TEST(st_index_parse_rules)
{
	static const struct { const char *json; fmt_kind kind; const char *msg; } cases[] = {
		{ "{\"weight_map\":{\"a\":\"x.safetensors\"}}", FMT_OK, "" },
		{ "{\"metadata\":{\"total_size\":12.0,\"x\":[1]},\"weight_map\":{},\"extra\":1}", FMT_OK, "" },
		{ "{\"weight_map\":{\"a\":\"../x.safetensors\"}}", FMT_INVALID_FORMAT, "path separator" },
		{ "{\"weight_map\":{\"a\":\"d\\\\x.safetensors\"}}", FMT_INVALID_FORMAT, "path separator" },
		{ "{\"weight_map\":{\"a\":\"/etc/passwd\"}}", FMT_INVALID_FORMAT, "path separator" },
		{ "{\"weight_map\":{\"a\":\"..\"}}", FMT_INVALID_FORMAT, "directory reference" },
		{ "{\"weight_map\":{\"a\":\".\"}}", FMT_INVALID_FORMAT, "directory reference" },
		{ "{\"weight_map\":{\"a\":\"\"}}", FMT_INVALID_FORMAT, "is empty" },
		{ "{\"weight_map\":{\"a\":\"x\\u0000y\"}}", FMT_INVALID_FORMAT, "not valid JSON" },
		{ "{\"weight_map\":{\"a\":1}}", FMT_INVALID_FORMAT, "weight_map value for 'a' is not a string" },
		{ "{\"weight_map\":{\"a\":\"x\",\"a\":\"x\"}}", FMT_INVALID_FORMAT, "duplicate object key" },
		{ "{\"weight_map\":[]}", FMT_INVALID_FORMAT, "\"weight_map\" is not an object" },
		{ "{\"metadata\":{}}", FMT_INVALID_FORMAT, "no \"weight_map\"" },
		{ "{\"metadata\":[],\"weight_map\":{}}", FMT_INVALID_FORMAT, "\"metadata\" is not an object" },
		{ "{\"metadata\":{\"total_size\":-1},\"weight_map\":{}}", FMT_INVALID_FORMAT, "total_size" },
		{ "{\"metadata\":{\"total_size\":1.5},\"weight_map\":{}}", FMT_INVALID_FORMAT, "total_size" },
		{ "{\"metadata\":{\"total_size\":\"12\"},\"weight_map\":{}}", FMT_INVALID_FORMAT, "total_size" },
		{ "[]", FMT_INVALID_FORMAT, "not a JSON object" },
		{ "{", FMT_INVALID_FORMAT, "not valid JSON" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fmt_st_index ix;
		fmt_err e;
		fmt_err_clear(&e);
		fmt_kind k = fmt_st_index_parse(cases[i].json, strlen(cases[i].json), &ix, &e);
		if (k != cases[i].kind || (k != FMT_OK && !strstr(e.msg, cases[i].msg))) {
			char m[1400];
			snprintf(m, sizeof m, "case %zu: kind %d \"%s\"", i, (int)k, e.msg);
			unit_fail(__FILE__, __LINE__, m);
		}
		if (k == FMT_OK)
			fmt_st_index_free(&ix);
	}
}

/* A set: shard 1 holds a (F32 [2]), shard 2 holds b (F16 [2]) and maybe more. */
static void write_shard(const char *dir, const char *name, int which, int with_extra)
{
	fmt_model m;
	size_t n;
	uint64_t two = 2, one = 1;
	static const uint8_t seven = 7;
	fmt_model_init(&m);
	if (which & 1)
		unit_add_sized_tensor(&m, "a", FMT_DT_F32, 1, &two, f32_a);
	if (which & 2)
		unit_add_sized_tensor(&m, "b", FMT_DT_F16, 1, &two, f16_b);
	if (with_extra)
		unit_add_sized_tensor(&m, "c", FMT_DT_U8, 1, &one, &seven);
	unit_add_str_meta(&m, "format", which & 1 ? "pt" : "other");
	free(write_model(&m, dir, name, &n));
	fmt_model_free(&m);
}

#define S1 "model-00001-of-00002.safetensors"
#define S2 "model-00002-of-00002.safetensors"

static fmt_kind open_set(const char *dir, const char *idx_json, fmt_model *m, fmt_err *e)
{
	const char *path = join(dir, "model.safetensors.index.json");
	CHECK(write_file(path, idx_json, strlen(idx_json)) == 0);
	fmt_err_clear(e);
	return fmt_model_open(m, path, NULL, e);
}

TEST(st_index_open_set)
{
	char *dir = tmp_dir();
	fmt_model m;
	fmt_err e = { 0 };
	write_shard(dir, S2, 2, 0);
	write_shard(dir, S1, 1, 0);
	const char *names[2] = { "b", "a" };
	const char *files[2] = { S2, S1 };
	const char *ipath = join(dir, "model.safetensors.index.json");
	CHECK(fmt_st_index_write(ipath, names, files, 2, 12, 0, &e) == FMT_OK);
	fmt_kind k = fmt_model_open(&m, ipath, NULL, &e);
	CHECK(k == FMT_OK);
	if (k != FMT_OK) {
		printf("  %s: %s\n", e.file, e.msg);
		rm_dir(dir);
		return;
	}
	CHECK(m.driver == &fmt_driver_st_index);
	CHECK_EQ_U64(m.n_sources, 3);
	CHECK_EQ_U64(m.n_tensors, 2);
	CHECK_STR(m.tensors[0].name, "a");
	CHECK_EQ_U64(m.tensors[0].source, 1);
	CHECK_STR(m.tensors[1].name, "b");
	CHECK_EQ_U64(m.tensors[1].source, 2);
	CHECK(strstr(m.sources[2].path, S2) != NULL);
	CHECK_EQ_U64(m.n_meta, 1);
	CHECK_STR(m.meta[0].val.v.str.ptr, "pt"); /* the first shard's metadata only */
	uint64_t total = 0;
	CHECK(fmt_st_index_total_size(&m, &total) == 1);
	CHECK_EQ_U64(total, 12);
	const uint8_t *bytes;
	uint8_t *to_free;
	CHECK(fmt_tensor_load(&m, &m.tensors[1], &bytes, &to_free, &e) == FMT_OK);
	CHECK_MEM(bytes, f16_b, 4);
	free(to_free);

	/* The combined model written as one file is the worked example. */
	size_t n;
	uint8_t *one = write_model(&m, dir, "merged.safetensors", &n);
	CHECK_EQ_U64(n, 164);
	if (one && n == 164)
		CHECK_MEM(one, worked_example, 164);
	free(one);
	fmt_model_free(&m);

	/* total_size is optional. */
	k = open_set(dir, "{\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"" S2 "\"}}", &m, &e);
	CHECK(k == FMT_OK);
	if (k == FMT_OK) {
		CHECK(fmt_st_index_total_size(&m, &total) == 0);
		fmt_model_free(&m);
	}
	rm_dir(dir);
}

TEST(st_index_set_mismatches)
{
	char *dir = tmp_dir();
	fmt_model m;
	fmt_err e = { 0 };
	write_shard(dir, S1, 1, 0);
	write_shard(dir, S2, 2, 0);
	write_shard(dir, "both.safetensors", 3, 0);
	write_shard(dir, "extra.safetensors", 2, 1);
	CHECK(write_file(join(dir, "broken.safetensors"), worked_example, 160) == 0);
	static const struct { const char *json; fmt_kind kind; const char *msg; } cases[] = {
		{ "{\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"missing.safetensors\"}}", FMT_SCHEMA,
		  "shard 'missing.safetensors' named in weight_map does not exist" },
		{ "{\"weight_map\":{\"a\":\"" S2 "\",\"b\":\"" S2 "\"}}", FMT_SCHEMA,
		  "tensor 'a' is listed in weight_map for '" S2 "' but is not in that shard" },
		{ "{\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"" S1 "\",\"c\":\"" S2 "\"}}", FMT_SCHEMA,
		  "tensor 'b' is in shard '" S2 "' but weight_map names '" S1 "'" },
		{ "{\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"both.safetensors\"}}", FMT_SCHEMA,
		  "tensor 'a' appears in shards" },
		{ "{\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"extra.safetensors\"}}", FMT_SCHEMA,
		  "tensor 'c' in shard 'extra.safetensors' is not listed in weight_map" },
		{ "{\"metadata\":{\"total_size\":13},\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"" S2 "\"}}", FMT_SCHEMA,
		  "metadata.total_size 13 differs from the sum of the tensor sizes, 12 bytes" },
		{ "{\"weight_map\":{\"a\":\"" S1 "\",\"b\":\"broken.safetensors\"}}", FMT_INVALID_FORMAT,
		  "file is truncated" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fmt_kind k = open_set(dir, cases[i].json, &m, &e);
		if (k == FMT_OK)
			fmt_model_free(&m);
		if (k != cases[i].kind || !strstr(e.msg, cases[i].msg)) {
			char msg[1400];
			snprintf(msg, sizeof msg, "case %zu: kind %d \"%s\"", i, (int)k, e.msg);
			unit_fail(__FILE__, __LINE__, msg);
		}
	}
	/* A broken shard's error names the shard file. */
	CHECK(open_set(dir, cases[6].json, &m, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.file, "broken.safetensors") != NULL);
	rm_dir(dir);
}
