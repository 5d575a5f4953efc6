/* Arrow IPC: the flatbuffer codec and the stream/file reader and writer. */
#include <stdlib.h>
#include "fmt/arrow.h"
#include "fmt/io.h"
#include "fmt/checked.h"
#include "unit.h"

static uint8_t *read_fixture(const char *path, size_t *n)
{
	char *data;
	fmt_err e = { 0 };
	if (fmt_read_file(path, 1 << 20, &data, n, &e) != FMT_OK)
		return NULL;
	return (uint8_t *)data;
}

/* The payload of specs/ald.md §10 (arrow-rs bytes) is reproduced exactly. */
TEST(arrow_ipc_writes_spec_example_stream)
{
	size_t n;
	uint8_t *file = read_fixture("tests/data/ald/spec-example.ald", &n);
	CHECK(file && n == 636);
	if (!file)
		return;
	fmt_field f = { .name = "x", .type = FMT_C_I32 };
	fmt_schema s = { .fields = &f, .n_fields = 1 };
	uint8_t vals[12] = { 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0 };
	fmt_column c = { .values = vals, .values_len = 12 };
	fmt_batch b = { .n_rows = 3, .columns = &c, .n_columns = 1 };
	fmt_ipc_writer w;
	fmt_sb out = { 0 };
	fmt_err e = { 0 };
	CHECK(fmt_ipc_writer_begin(&w, &s, 0, &out, &e) == FMT_OK);
	CHECK_EQ_U64(out.len, 128);
	CHECK(fmt_ipc_writer_batch(&w, &b, &out, &e) == FMT_OK);
	CHECK(fmt_ipc_writer_end(&w, &out, &e) == FMT_OK);
	CHECK_EQ_U64(out.len, 456);
	CHECK(out.len == 456 && memcmp(out.p, file + 0xB0, 456) == 0);
	fmt_sb_free(&out);
	free(file);
}

TEST(arrow_ipc_reads_spec_example_stream)
{
	size_t n;
	uint8_t *file = read_fixture("tests/data/ald/spec-example.ald", &n);
	if (!file)
		return;
	fmt_ipc_reader r;
	fmt_err e = { 0 };
	fmt_batch b;
	int done;
	CHECK(fmt_ipc_open(&r, file + 0xB0, 456, &e) == FMT_OK);
	CHECK_EQ_U64(r.schema.n_fields, 1);
	CHECK_STR(r.schema.fields[0].name, "x");
	CHECK(r.schema.fields[0].type == FMT_C_I32);
	CHECK(!r.schema.fields[0].nullable);
	fmt_batch_init(&b, 1, &e);
	CHECK(fmt_ipc_next(&r, &b, &done, &e) == FMT_OK && !done);
	CHECK(fmt_batch_check(&r.schema, &b, &e) == FMT_OK);
	CHECK_EQ_U64(b.n_rows, 3);
	CHECK_EQ_U64(fmt_rd_u32(b.columns[0].values + 8), 3);
	fmt_batch_free(&b);
	fmt_batch_init(&b, 1, &e);
	CHECK(fmt_ipc_next(&r, &b, &done, &e) == FMT_OK && done);
	fmt_batch_free(&b);
	fmt_ipc_close(&r);
	free(file);
}

/* Every supported type, with nulls, through the stream and the file format. */
TEST(arrow_ipc_round_trip_all_types)
{
	fmt_field f[6] = {
		{ .name = "b", .type = FMT_C_BOOL, .nullable = 1 },
		{ .name = "s", .type = FMT_C_UTF8, .nullable = 1 },
		{ .name = "t", .type = FMT_C_TIMESTAMP, .unit = FMT_TU_MS, .timezone = "UTC" },
		{ .name = "v", .type = FMT_C_FIXED_SIZE_LIST, .list_size = 2, .elem = FMT_C_F32 },
		{ .name = "h", .type = FMT_C_F16 },
		{ .name = "u", .type = FMT_C_U64, .nullable = 1 },
	};
	fmt_schema s = { .fields = f, .n_fields = 6 };
	uint8_t valid = 0x5, bools = 0x4;
	uint8_t offs[16] = { 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0 };
	uint8_t ts[24] = { 1 }, vec[24] = { 0 }, half[6] = { 0, 0x3c }, u64s[24];
	memset(u64s, 0xff, sizeof u64s);
	fmt_column c[6] = {
		{ .null_count = 1, .validity = &valid, .values = &bools, .values_len = 1 },
		{ .null_count = 1, .validity = &valid, .offsets = offs, .values = (const uint8_t *)"hiabc", .values_len = 5 },
		{ .values = ts, .values_len = 24 },
		{ .values = vec, .values_len = 24 },
		{ .values = half, .values_len = 6 },
		{ .null_count = 1, .validity = &valid, .values = u64s, .values_len = 24 },
	};
	fmt_batch b = { .n_rows = 3, .columns = c, .n_columns = 6 };
	for (int file = 0; file < 2; file++) {
		fmt_ipc_writer w;
		fmt_sb out = { 0 };
		fmt_err e = { 0 };
		CHECK(fmt_ipc_writer_begin(&w, &s, file, &out, &e) == FMT_OK);
		CHECK(fmt_ipc_writer_batch(&w, &b, &out, &e) == FMT_OK);
		CHECK(fmt_ipc_writer_batch(&w, &b, &out, &e) == FMT_OK);
		CHECK(fmt_ipc_writer_end(&w, &out, &e) == FMT_OK);
		fmt_ipc_reader r;
		CHECK(fmt_ipc_open(&r, (uint8_t *)out.p, out.len, &e) == FMT_OK);
		CHECK(fmt_schema_expect(&s, &r.schema, &e) == FMT_OK);
		char name[128];
		fmt_field_type_name(&r.schema.fields[2], name, sizeof name);
		CHECK_STR(name, "timestamp[ms, UTC]");
		fmt_field_type_name(&r.schema.fields[3], name, sizeof name);
		CHECK_STR(name, "fixed_size_list<float32>[2]");
		int done, batches = 0;
		fmt_batch rb;
		for (;;) {
			fmt_batch_init(&rb, 6, &e);
			if (fmt_ipc_next(&r, &rb, &done, &e) != FMT_OK || done) {
				fmt_batch_free(&rb);
				break;
			}
			batches++;
			CHECK(fmt_batch_check(&r.schema, &rb, &e) == FMT_OK);
			CHECK_EQ_U64(rb.n_rows, 3);
			CHECK_EQ_U64(rb.columns[1].null_count, 1);
			const uint8_t *p;
			size_t len;
			fmt_column_bytes(&rb.columns[1], FMT_C_UTF8, 2, &p, &len);
			CHECK(len == 3 && memcmp(p, "abc", 3) == 0);
			CHECK(fmt_column_is_null(&rb.columns[1], 1));
			CHECK(fmt_column_bool(&rb.columns[0], 2));
			CHECK_EQ_U64(fmt_rd_u64(rb.columns[5].values), UINT64_MAX);
			CHECK_EQ_U64(fmt_rd_u16(rb.columns[4].values), 0x3c00);
			fmt_batch_free(&rb);
		}
		CHECK_EQ_U64(batches, 2);
		fmt_ipc_close(&r);
		fmt_sb_free(&out);
	}
}

/* Read everything in data; 1 if it was all accepted. */
static int read_all(const uint8_t *data, size_t n)
{
	fmt_ipc_reader r;
	fmt_err e = { 0 };
	if (fmt_ipc_open(&r, data, n, &e) != FMT_OK)
		return 0;
	int ok = 1, done = 0;
	while (ok && !done) {
		fmt_batch b;
		fmt_batch_init(&b, r.schema.n_fields, &e);
		ok = fmt_ipc_next(&r, &b, &done, &e) == FMT_OK && (done || fmt_batch_check(&r.schema, &b, &e) == FMT_OK);
		fmt_batch_free(&b);
	}
	fmt_ipc_close(&r);
	return ok;
}

/* Every truncation and every high-bit flip of a valid stream is refused or read safely (the
 * sanitizer build proves "safely"). */
TEST(arrow_ipc_hostile_bytes)
{
	size_t n;
	uint8_t *file = read_fixture("tests/data/ald/spec-example.ald", &n);
	if (!file)
		return;
	const uint8_t *stream = file + 0xB0;
	int refused = 0;
	for (size_t cut = 0; cut < 456; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, stream, cut);
		int ok = read_all(copy, cut);
		CHECK(ok == (cut == 128 || cut == 448));
		refused += !ok;
		free(copy);
	}
	/* only the cuts at a message boundary (after the schema, after the batch: no EOS) are
	 * streams; a cut inside a message or inside the EOS marker is refused */
	CHECK_EQ_U64(refused, 454);
	for (size_t i = 0; i < 456; i++) {
		uint8_t copy[456];
		memcpy(copy, stream, 456);
		copy[i] ^= 0x80;
		read_all(copy, 456);
	}
	free(file);
}
