/* Arrow IPC: the flatbuffer codec and the stream/file reader and writer. */
#include <stdlib.h>
#include "fmt/arrow.h"
#include "fmt/io.h"
#include "fmt/checked.h"
#include "unit.h"

static uint8_t *read_fixture(const char *path, size_t *n)
{
	char *data;
	fmt_err e;
	if (fmt_read_file(path, 1 << 20, &data, n, &e) != FMT_OK)
		return NULL;
	return (uint8_t *)data;
}

static void int32_schema(fmt_schema *s, fmt_field *f)
{
	*f = (fmt_field){ .name = "x", .type = FMT_AT_INT32, .type_name = "int32" };
	*s = (fmt_schema){ 1, f };
}

/* The payload of specs/ald.md §10 (arrow-rs bytes) is reproduced exactly. */
TEST(arrow_ipc_writes_spec_example_stream)
{
	size_t n;
	uint8_t *file = read_fixture("tests/data/ald/spec-example.ald", &n);
	CHECK(file && n == 636);
	if (!file)
		return;
	fmt_field f;
	fmt_schema s;
	int32_schema(&s, &f);
	uint8_t vals[12] = { 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0 };
	fmt_column c = { .length = 3, .values = { vals, 12 } };
	fmt_batch b = { 3, 1, &c };
	fmt_ipc_writer w;
	fmt_sb out = { 0 };
	fmt_err e;
	CHECK(fmt_ipc_writer_begin(&w, &s, 0, &out, &e) == FMT_OK);
	CHECK_EQ_U64(out.len, 128);
	CHECK(fmt_ipc_writer_batch(&w, &b, &out, &e) == FMT_OK);
	CHECK(fmt_ipc_writer_end(&w, &out, &e) == FMT_OK);
	CHECK_EQ_U64(out.len, 456);
	if (out.len == 456)
		for (size_t i = 0; i < 456; i++)
			if (out.p[i] != (char)file[0xB0 + i]) {
				CHECK_EQ_U64(i, 0xFFFF);
				break;
			}
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
	fmt_err e;
	fmt_batch b;
	int got;
	CHECK(fmt_ipc_open(&r, file + 0xB0, 456, &e) == FMT_OK);
	CHECK_EQ_U64(r.schema.n_fields, 1);
	CHECK_STR(r.schema.fields[0].name, "x");
	CHECK_STR(r.schema.fields[0].type_name, "int32");
	CHECK(!r.schema.fields[0].nullable);
	CHECK(fmt_ipc_next(&r, &b, &got, &e) == FMT_OK && got);
	CHECK_EQ_U64(b.num_rows, 3);
	CHECK_EQ_U64(fmt_rd_u32(b.cols[0].values.p + 8), 3);
	fmt_batch_free(&b);
	CHECK(fmt_ipc_next(&r, &b, &got, &e) == FMT_OK && !got);
	fmt_ipc_close(&r);
	free(file);
}

/* Every supported type, with nulls, through the stream and the file format. */
TEST(arrow_ipc_round_trip_all_types)
{
	fmt_field f[6] = {
		{ .name = "b", .type = FMT_AT_BOOL, .nullable = 1 },
		{ .name = "s", .type = FMT_AT_UTF8, .nullable = 1 },
		{ .name = "t", .type = FMT_AT_TIMESTAMP, .unit = FMT_TU_MILLI, .timezone = "UTC" },
		{ .name = "v", .type = FMT_AT_FIXED_SIZE_LIST, .list_size = 2, .item_type = FMT_AT_FLOAT32,
		  .item_nullable = 1, .item_name = "item" },
		{ .name = "h", .type = FMT_AT_FLOAT16 },
		{ .name = "u", .type = FMT_AT_UINT64, .nullable = 1 },
	};
	for (int i = 0; i < 6; i++)
		fmt_field_set_type_name(&f[i]);
	fmt_schema s = { 6, f };
	uint8_t valid = 0x5, bools = 0x4;
	uint8_t offs[16] = { 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0 };
	uint8_t ts[24] = { 1 }, vec[24] = { 0 }, half[6] = { 0, 0x3c }, u64s[24] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	fmt_column c[6] = {
		{ .length = 3, .null_count = 1, .validity = { &valid, 1 }, .values = { &bools, 1 } },
		{ .length = 3, .null_count = 1, .validity = { &valid, 1 }, .offsets = { offs, 16 }, .values = { (const uint8_t *)"hiabc", 5 } },
		{ .length = 3, .values = { ts, 24 } },
		{ .length = 3, .values = { vec, 24 } },
		{ .length = 3, .values = { half, 6 } },
		{ .length = 3, .null_count = 1, .validity = { &valid, 1 }, .values = { u64s, 24 } },
	};
	fmt_batch b = { 3, 6, c };
	for (int file = 0; file < 2; file++) {
		fmt_ipc_writer w;
		fmt_sb out = { 0 };
		fmt_err e;
		CHECK(fmt_ipc_writer_begin(&w, &s, file, &out, &e) == FMT_OK);
		CHECK(fmt_ipc_writer_batch(&w, &b, &out, &e) == FMT_OK);
		CHECK(fmt_ipc_writer_batch(&w, &b, &out, &e) == FMT_OK);
		CHECK(fmt_ipc_writer_end(&w, &out, &e) == FMT_OK);
		fmt_ipc_reader r;
		CHECK(fmt_ipc_open(&r, (uint8_t *)out.p, out.len, &e) == FMT_OK);
		CHECK(fmt_schema_expect(&s, &r.schema, &e) == FMT_OK);
		CHECK_STR(r.schema.fields[2].type_name, "timestamp[ms, UTC]");
		CHECK_STR(r.schema.fields[3].type_name, "fixed_size_list<float32>[2]");
		int got, batches = 0;
		fmt_batch rb;
		while (fmt_ipc_next(&r, &rb, &got, &e) == FMT_OK && got) {
			batches++;
			CHECK_EQ_U64(rb.num_rows, 3);
			CHECK_EQ_U64(rb.cols[1].null_count, 1);
			const uint8_t *p;
			uint64_t len;
			fmt_column_bytes(&rb.cols[1], FMT_AT_UTF8, 2, &p, &len);
			CHECK(len == 3 && memcmp(p, "abc", 3) == 0);
			CHECK(!fmt_column_valid(&rb.cols[1], 1));
			CHECK(fmt_bit(rb.cols[0].values.p, 2));
			CHECK_EQ_U64(fmt_rd_u64(rb.cols[5].values.p), UINT64_MAX >> 0 & 0xFFFFFFFFFFFFFFFFull);
			fmt_batch_free(&rb);
		}
		CHECK_EQ_U64(batches, 2);
		fmt_ipc_close(&r);
		fmt_sb_free(&out);
	}
	for (int i = 0; i < 6; i++)
		free(f[i].type_name);
}

/* Every truncation and every single-byte change of a valid stream is refused or read safely. */
TEST(arrow_ipc_hostile_bytes)
{
	size_t n;
	uint8_t *file = read_fixture("tests/data/ald/spec-example.ald", &n);
	if (!file)
		return;
	const uint8_t *stream = file + 0xB0;
	for (size_t cut = 0; cut < 456; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, stream, cut);
		fmt_ipc_reader r;
		fmt_err e;
		if (fmt_ipc_open(&r, copy, cut, &e) == FMT_OK) {
			fmt_batch b;
			int got;
			while (fmt_ipc_next(&r, &b, &got, &e) == FMT_OK && got)
				fmt_batch_free(&b);
			fmt_ipc_close(&r);
		}
		free(copy);
	}
	for (size_t i = 0; i < 456; i++) {
		uint8_t copy[456];
		memcpy(copy, stream, 456);
		copy[i] ^= 0x80;
		fmt_ipc_reader r;
		fmt_err e;
		if (fmt_ipc_open(&r, copy, 456, &e) == FMT_OK) {
			fmt_batch b;
			int got;
			while (fmt_ipc_next(&r, &b, &got, &e) == FMT_OK && got)
				fmt_batch_free(&b);
			fmt_ipc_close(&r);
		}
	}
	free(file);
}
