/* The table interface (fmt/table.h) through a tiny table driver (tests/unit/ttab_driver.c):
 * "ttab", a text format of a magic line, a line of name:type[?] columns (? = nullable) and
 * comma-separated rows (an empty field is null). Registered at run time, it is chosen by the same
 * probe as the model drivers, read in batches of two rows, and written back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "conformance.h"
#include "unit.h"
#include "fmt/registry.h"
#include "fmt/table.h"

#define TTAB_MAGIC "#ttab\n"

/* The driver (tests/unit/ttab_driver.c, also the new table format of tests/cli/new-format.bats). */
extern const fmt_table_driver fmt_table_driver_ttab;
#define ttab_driver fmt_table_driver_ttab

static void register_ttab(void)
{
	if (!fmt_table_driver_by_name("ttab")) {
		fmt_err e = { 0 };
		CHECK(fmt_table_driver_register(&ttab_driver, &e) == FMT_OK);
	}
}

static const char sample[] = TTAB_MAGIC
	"id:int64,name:utf8?,ok:bool\n"
	"1,alice,true\n"
	"2,,false\n"
	"-3,carol,true\n";

TEST(table_probe_chooses_the_table_driver_and_reads_batches)
{
	register_ttab();
	fmt_table t;
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(fmt_table_open_memory(&t, "s.ttab", sample, strlen(sample), NULL, &e) == FMT_OK);
	CHECK(t.driver == &ttab_driver);
	CHECK_EQ_U64(t.schema.n_fields, 3);
	CHECK_STR(t.schema.fields[1].name, "name");
	CHECK(t.schema.fields[1].type == FMT_C_UTF8 && t.schema.fields[1].nullable);
	CHECK(t.schema.fields[0].type == FMT_C_I64 && !t.schema.fields[0].nullable);
	uint64_t rows[3] = { 0 }, batches = 0;
	int done = 0;
	while (!done && batches < 3) {
		fmt_batch b;
		CHECK(fmt_table_next(&t, &b, &done, &e) == FMT_OK);
		rows[batches++] = b.n_rows;
		if (batches == 1) {
			int64_t id;
			memcpy(&id, b.columns[0].values + 8, 8);
			CHECK_EQ_U64(id, 2);
			CHECK(fmt_column_is_null(&b.columns[1], 1) && !fmt_column_is_null(&b.columns[1], 0));
			CHECK_EQ_U64(b.columns[1].null_count, 1);
			const uint8_t *p;
			size_t n;
			fmt_column_bytes(&b.columns[1], FMT_C_UTF8, 0, &p, &n);
			CHECK(n == 5 && memcmp(p, "alice", 5) == 0);
			CHECK(fmt_column_bool(&b.columns[2], 0) && !fmt_column_bool(&b.columns[2], 1));
		}
		fmt_batch_free(&b);
	}
	CHECK(done);
	CHECK_EQ_U64(batches, 3);
	CHECK_EQ_U64(rows[0], 2);
	CHECK_EQ_U64(rows[1], 1);
	CHECK_EQ_U64(rows[2], 0);
	fmt_table_free(&t);
}

TEST(table_write_reads_back_identical)
{
	register_ttab();
	char dir[] = "/tmp/fmtkit-table-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/out.ttab", dir);
	fmt_table t;
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_table_open_memory(&t, "s.ttab", sample, strlen(sample), NULL, &e) == FMT_OK);
	const fmt_table_driver *d = fmt_table_driver_by_extension(path);
	CHECK(d == &ttab_driver);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(d->write(&t, &k, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	fmt_table_free(&t);
	char *text = NULL;
	size_t n = 0;
	CHECK(fmt_read_file(path, 4096, &text, &n, &e) == FMT_OK);
	CHECK_STR(text, sample);
	free(text);
	unlink(path);
	rmdir(dir);
}

TEST(table_open_any_tells_models_from_tables)
{
	register_ttab();
	char dir[] = "/tmp/fmtkit-table-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char tpath[64], mpath[64];
	snprintf(tpath, sizeof tpath, "%s/a.ttab", dir);
	snprintf(mpath, sizeof mpath, "%s/m.safetensors", dir);
	static const char st[] = "\x10\0\0\0\0\0\0\0{}              ";
	FILE *f = fopen(tpath, "w");
	fputs(sample, f);
	fclose(f);
	f = fopen(mpath, "w");
	fwrite(st, 1, sizeof st - 1, f);
	fclose(f);

	fmt_model m;
	fmt_table t;
	fmt_err e = { 0 };
	int is_table = -1;
	CHECK(fmt_open_any(tpath, NULL, &m, &t, &is_table, &e) == FMT_OK);
	CHECK(is_table == 1 && t.driver == &ttab_driver);
	fmt_table_free(&t);
	CHECK(fmt_open_any(mpath, NULL, &m, &t, &is_table, &e) == FMT_OK);
	CHECK(is_table == 0 && m.driver == fmt_driver_by_name("safetensors"));
	fmt_model_free(&m);
	CHECK(fmt_open_any(mpath, "ttab", &m, &t, &is_table, &e) == FMT_INVALID_FORMAT);

	/* A model is not a dataset; an unknown format name lists both kinds. */
	CHECK(fmt_table_open(&t, mpath, NULL, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "a safetensors model, not a dataset") != NULL);
	CHECK(fmt_open_any(mpath, "nosuch", &m, &t, &is_table, &e) == FMT_USAGE);
	CHECK(strstr(e.msg, "unknown format 'nosuch'") && strstr(e.msg, "gguf") && strstr(e.msg, "ttab"));
	unlink(tpath);
	unlink(mpath);
	rmdir(dir);
}

TEST(table_unrecognised_lists_every_format)
{
	register_ttab();
	fmt_table t;
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(fmt_table_open_memory(&t, "junk", "junk", 4, NULL, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "unrecognised format") && strstr(e.msg, "safetensors") && strstr(e.msg, "ttab"));
	CHECK_STR(e.file, "junk");
}

/* A one-column schema and a batch of 3 rows over caller-made buffers. */
static void one_column(fmt_schema *s, fmt_batch *b, fmt_ctype type, int nullable)
{
	fmt_err e = { 0 };
	fmt_schema_init(s);
	fmt_field f = { .name = "c", .type = type, .nullable = nullable };
	CHECK(fmt_schema_add_field(s, &f, &e) == FMT_OK);
	CHECK(fmt_batch_init(b, 1, &e) == FMT_OK);
	b->n_rows = 3;
}

TEST(batch_buffers_come_back_for_the_next_batch)
{
	fmt_err e = { 0 };
	fmt_batch b;
	CHECK(fmt_batch_init(&b, 1, &e) == FMT_OK);
	/* a size no earlier test kept a buffer of */
	unsigned char *p = fmt_batch_buffer(3000000), *q = fmt_batch_buffer(5);
	CHECK(p != NULL && q != NULL);
	memset(p, 0x7e, 3000000);
	CHECK(fmt_batch_own_buffer(&b, p, &e) == FMT_OK);
	CHECK(fmt_batch_own(&b, malloc(10), &e) == FMT_OK);   /* a plain one beside it: freed */
	CHECK(fmt_batch_own_buffer(&b, q, &e) == FMT_OK);
	fmt_batch_free(&b);
	/* the freed batch's buffer is the next one of a size it holds, not cleared */
	unsigned char *r = fmt_batch_buffer(2999999);
	CHECK(r == p);
	CHECK(r[2999998] == 0x7e);
	fmt_batch_buffer_free(r);
	fmt_batch_buffer_free(NULL);
}

TEST(batch_check_refuses_broken_offsets_and_counts)
{
	fmt_schema s;
	fmt_batch b;
	fmt_err e = { 0 };
	one_column(&s, &b, FMT_C_UTF8, 1);
	int32_t offsets[4] = { 0, 2, 5, 5 };
	uint8_t validity = 0x3; /* row 2 null */
	b.columns[0] = (fmt_column){ .null_count = 1, .validity = &validity, .offsets = offsets,
				     .values = (const uint8_t *)"abcde", .values_len = 5 };
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_OK);
	b.columns[0].null_count = 0;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "null count 0, bitmap says 1") != NULL);
	b.columns[0].null_count = 1;
	offsets[2] = 1;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "goes backwards") != NULL);
	offsets[2] = 5;
	offsets[3] = 6;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "past the 5 bytes") != NULL);
	offsets[3] = 5;
	offsets[0] = -1;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	offsets[0] = 0;
	b.columns[0].values = (const uint8_t *)"ab\xff" "de";
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "row 1 is not valid UTF-8") != NULL);
	s.fields[0].nullable = 0;
	b.columns[0].values = (const uint8_t *)"abcde";
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_SCHEMA);
	b.n_columns = 0;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_SCHEMA);
	b.n_columns = 1;
	fmt_batch_free(&b);
	fmt_schema_free(&s);
}

TEST(batch_check_sizes_fixed_width_bool_and_lists)
{
	fmt_schema s;
	fmt_batch b;
	fmt_err e = { 0 };
	static const uint8_t bytes[24];
	one_column(&s, &b, FMT_C_I64, 0);
	b.columns[0] = (fmt_column){ .values = bytes, .values_len = 24 };
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_OK);
	b.columns[0].values_len = 23;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "23 bytes of values for 3 rows, need 24") != NULL);
	s.fields[0].type = FMT_C_BOOL;
	b.columns[0].values_len = 1;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_OK);
	s.fields[0].type = FMT_C_FIXED_SIZE_LIST;
	s.fields[0].elem = FMT_C_F32;
	s.fields[0].list_size = 2;
	b.columns[0].values_len = 24;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_OK);
	s.fields[0].list_size = 3;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	s.fields[0].list_size = UINT32_MAX;
	b.n_rows = UINT64_MAX / 4;
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_INVALID_FORMAT);
	fmt_batch_free(&b);
	fmt_schema_free(&s);
}

TEST(schema_check_and_json)
{
	fmt_schema s;
	fmt_err e = { 0 };
	fmt_schema_init(&s);
	fmt_field ts = { .name = "t", .type = FMT_C_TIMESTAMP, .unit = FMT_TU_MS, .timezone = "UTC" };
	fmt_field emb = { .name = "emb", .type = FMT_C_FIXED_SIZE_LIST, .elem = FMT_C_F32, .list_size = 4,
			  .nullable = 1 };
	CHECK(fmt_schema_add_field(&s, &ts, &e) == FMT_OK);
	CHECK(fmt_schema_add_field(&s, &emb, &e) == FMT_OK);
	CHECK(fmt_schema_add_meta(&s, "source", "unit test", &e) == FMT_OK);
	CHECK(fmt_schema_check(&s, &e) == FMT_OK);
	CHECK_EQ_U64(fmt_schema_find(&s, "emb"), 1);
	CHECK(fmt_schema_find(&s, "nope") == -1);
	json_t *j = fmt_schema_json(&s);
	char *text = json_dumps(j, JSON_COMPACT);
	CHECK_STR(text, "{\"fields\":[{\"name\":\"t\",\"type\":\"timestamp\",\"nullable\":false,\"unit\":\"ms\","
			"\"timezone\":\"UTC\"},{\"name\":\"emb\",\"type\":\"fixed_size_list\",\"nullable\":true,"
			"\"element\":\"float32\",\"list_size\":4}],\"metadata\":{\"source\":\"unit test\"}}");
	free(text);
	json_decref(j);
	s.fields[1].elem = FMT_C_UTF8;
	CHECK(fmt_schema_check(&s, &e) == FMT_UNSUPPORTED);
	s.fields[1].elem = FMT_C_F32;
	free(s.fields[1].name);
	s.fields[1].name = strdup("t");
	CHECK(fmt_schema_check(&s, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "'t' appears twice") != NULL);
	fmt_schema_free(&s);
}

/* The conformance suite runs on the in-test driver too (a sample written to a file). */
TEST(table_ttab_passes_the_conformance_suite)
{
	register_ttab();
	char dir[] = "/tmp/fmtkit-table-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/sample.ttab", dir);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	fputs(sample, f);
	fclose(f);
	conform_table_driver(&ttab_driver, path);
	unlink(path);
	rmdir(dir);
}

/* A batch of 1,000,000 rows (about 36 MB: bool, int32, utf8, large_utf8 and a fixed-size list
 * of 3 float32, all with nulls) handed on in slices: each a multiple of 8 rows but the last, about
 * FMT_SLICE_BYTES, checked (null counts from the cut bitmaps, string offsets from
 * 0), and every value the batch's own. */
TEST(batch_slicer_cuts_a_big_batch_at_byte_boundaries_every_value_kept)
{
	enum { N = 1000000 };
	static const fmt_ctype types[] = { FMT_C_BOOL, FMT_C_I32, FMT_C_UTF8, FMT_C_LARGE_UTF8, FMT_C_FIXED_SIZE_LIST };
	fmt_schema s;
	fmt_batch b, part;
	fmt_err e = { 0 };
	fmt_schema_init(&s);
	for (size_t i = 0; i < 5; i++) {
		char name[8];
		snprintf(name, sizeof name, "c%zu", i);
		fmt_field f = { .name = name, .type = types[i], .nullable = 1, .elem = FMT_C_F32, .list_size = 3 };
		CHECK(fmt_schema_add_field(&s, &f, &e) == FMT_OK);
	}
	uint8_t *valid = calloc(N / 8 + 1, 1), *bools = calloc(N / 8 + 1, 1), *elem_valid = calloc(3 * N / 8 + 1, 1);
	int32_t *ints = malloc(4 * (size_t)N), *off32 = malloc(4 * ((size_t)N + 1));
	int64_t *off64 = malloc(8 * ((size_t)N + 1));
	float *floats = malloc(12 * (size_t)N);
	char *text = malloc(8 * (size_t)N);
	uint64_t nulls = 0, elem_nulls = 0, len = 0;
	off32[0] = 0;
	off64[0] = 0;
	for (uint64_t r = 0; r < N; r++) {
		int is_null = r % 7 == 3;
		if (!is_null)
			valid[r / 8] |= (uint8_t)(1u << (r % 8));
		nulls += (uint64_t)is_null;
		if (r % 3 == 0)
			bools[r / 8] |= (uint8_t)(1u << (r % 8));
		ints[r] = (int32_t)(r * 2654435761u);
		len += (uint64_t)snprintf(text + len, 8, "%llu", (unsigned long long)(r % (1 + r % 10000)));
		off32[r + 1] = (int32_t)len;
		off64[r + 1] = (int64_t)len;
		for (uint64_t k = 0; k < 3; k++) {
			floats[3 * r + k] = (float)r + (float)k / 4;
			if ((3 * r + k) % 5 != 1)
				elem_valid[(3 * r + k) / 8] |= (uint8_t)(1u << ((3 * r + k) % 8));
			else
				elem_nulls++;
		}
	}
	CHECK(fmt_batch_init(&b, 5, &e) == FMT_OK);
	b.n_rows = N;
	b.columns[0] = (fmt_column){ .null_count = nulls, .validity = valid, .values = bools, .values_len = N / 8 + 1 };
	b.columns[1] = (fmt_column){ .null_count = nulls, .validity = valid, .values = (const uint8_t *)ints, .values_len = 4 * (uint64_t)N };
	b.columns[2] = (fmt_column){ .null_count = nulls, .validity = valid, .offsets = off32, .values = (const uint8_t *)text, .values_len = len };
	b.columns[3] = (fmt_column){ .null_count = nulls, .validity = valid, .offsets = off64, .values = (const uint8_t *)text, .values_len = len };
	b.columns[4] = (fmt_column){ .null_count = nulls, .validity = valid, .values = (const uint8_t *)floats, .values_len = 12 * (uint64_t)N,
				     .elem_validity = elem_valid };
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_OK);
	fmt_batch_slicer sl = { 0 };
	CHECK(fmt_batch_slicer_take(&sl, &s, NULL, &b, &e) == FMT_OK);
	uint64_t at = 0, slices = 0, bad = 0, seen_nulls = 0, seen_elem_nulls = 0;
	int got = 1;
	part = b;
	while (got) {
		slices++;
		CHECK(fmt_batch_check_from(&s, &part, at, &e) == FMT_OK);
		CHECK(part.n_rows > 0 && (part.n_rows % 8 == 0 || at + part.n_rows == N));
		/* about 36 MB in 18 slices of about 2 MB (FMT_SLICE_BYTES) */
		CHECK(part.n_rows < N / 16);
		for (uint64_t i = 0; i < part.n_rows; i++) {
			uint64_t r = at + i;
			const uint8_t *p;
			size_t n;
			int is_null = fmt_column_is_null(&part.columns[0], i);
			seen_nulls += (uint64_t)is_null;
			bad += is_null != (r % 7 == 3) || fmt_column_is_null(&part.columns[4], i) != is_null;
			bad += fmt_column_bool(&part.columns[0], i) != (r % 3 == 0);
			bad += ((const int32_t *)part.columns[1].values)[i] != ints[r];
			fmt_column_bytes(&part.columns[2], FMT_C_UTF8, i, &p, &n);
			bad += n != (size_t)(off32[r + 1] - off32[r]) || memcmp(p, text + off32[r], n) != 0;
			fmt_column_bytes(&part.columns[3], FMT_C_LARGE_UTF8, i, &p, &n);
			bad += n != (size_t)(off64[r + 1] - off64[r]) || memcmp(p, text + off64[r], n) != 0;
			bad += memcmp(part.columns[4].values + 12 * i, floats + 3 * r, 12) != 0;
			for (uint64_t k = 0; k < 3; k++) {
				const uint8_t *ev = part.columns[4].elem_validity;
				int elem_null = ev && !((ev[(3 * i + k) / 8] >> ((3 * i + k) % 8)) & 1);
				seen_elem_nulls += (uint64_t)elem_null;
			}
		}
		at += part.n_rows;
		fmt_batch_free(&part);
		CHECK(fmt_batch_init(&part, 5, &e) == FMT_OK);
		CHECK(fmt_batch_slicer_next(&sl, &s, NULL, &part, &got, &e) == FMT_OK);
	}
	fmt_batch_free(&part);
	CHECK(at == N);
	CHECK(slices == 18);
	CHECK(bad == 0);
	CHECK(seen_nulls == nulls);
	CHECK(seen_elem_nulls == elem_nulls);
	CHECK(sl.whole == NULL);
	/* a batch of at most FMT_SLICE_OVER is left as it is */
	CHECK(fmt_batch_init(&b, 5, &e) == FMT_OK);
	b.n_rows = 1000;
	b.columns[0] = (fmt_column){ .values = bools, .values_len = 125 };
	b.columns[1] = (fmt_column){ .values = (const uint8_t *)ints, .values_len = 4000 };
	b.columns[2] = (fmt_column){ .offsets = off32, .values = (const uint8_t *)text, .values_len = len };
	b.columns[3] = (fmt_column){ .offsets = off64, .values = (const uint8_t *)text, .values_len = len };
	b.columns[4] = (fmt_column){ .values = (const uint8_t *)floats, .values_len = 12000 };
	CHECK(fmt_batch_slicer_take(&sl, &s, NULL, &b, &e) == FMT_OK);
	CHECK(sl.whole == NULL && b.n_rows == 1000 && b.columns[1].values == (const uint8_t *)ints);
	fmt_batch_free(&b);
	fmt_schema_free(&s);
	free(valid);
	free(bools);
	free(elem_valid);
	free(ints);
	free(off32);
	free(off64);
	free(floats);
	free(text);
}

/* A small batch whose buffers lie in a spill file's mapping (which the next read unmaps) is not
 * handed on as it is: fmt_batch_slicer_take_out_of makes it one slice of all its rows, read out
 * of the mapping into buffers the slice owns, valid after the spill is gone. */
TEST(batch_slicer_takes_a_small_batch_out_of_a_spill)
{
	fmt_schema s;
	fmt_batch b;
	fmt_err e = { 0 };
	fmt_source sp;
	const uint8_t *map;
	const int64_t vals[3] = { 7, -1, 42 };
	const int32_t offs[4] = { 0, 2, 2, 5 };
	fmt_schema_init(&s);
	fmt_field f0 = { .name = "x", .type = FMT_C_I64 }, f1 = { .name = "s", .type = FMT_C_UTF8 };
	CHECK(fmt_schema_add_field(&s, &f0, &e) == FMT_OK && fmt_schema_add_field(&s, &f1, &e) == FMT_OK);
	CHECK(fmt_spill_open(&sp, "a spill for a test", &e) == FMT_OK);
	CHECK(fmt_spill_write(&sp, 0, vals, sizeof vals, &e) == FMT_OK);
	CHECK(fmt_spill_write(&sp, 24, offs, sizeof offs, &e) == FMT_OK);
	CHECK(fmt_spill_write(&sp, 40, "abcde", 5, &e) == FMT_OK);
	CHECK(fmt_spill_map(&sp, 45, &map, &e) == FMT_OK);
	CHECK(fmt_batch_init(&b, 2, &e) == FMT_OK);
	b.n_rows = 3;
	b.columns[0] = (fmt_column){ .values = map, .values_len = 24 };
	b.columns[1] = (fmt_column){ .offsets = map + 24, .values = map + 40, .values_len = 5 };
	fmt_batch_slicer sl = { 0 };
	CHECK(fmt_batch_slicer_take_out_of(&sl, &s, &sp, &b, &e) == FMT_OK);
	CHECK(sl.whole == NULL && b.n_rows == 3); /* one slice, the last */
	CHECK(b.columns[0].values != map && b.columns[1].values != map + 40);
	fmt_spill_close(&sp);
	const uint8_t *p;
	size_t n;
	CHECK(memcmp(b.columns[0].values, vals, sizeof vals) == 0);
	fmt_column_bytes(&b.columns[1], FMT_C_UTF8, 2, &p, &n);
	CHECK(n == 3 && memcmp(p, "cde", 3) == 0);
	CHECK(fmt_batch_check(&s, &b, &e) == FMT_OK);
	fmt_batch_free(&b);
	/* no rows: nothing to read, left as it is */
	CHECK(fmt_batch_init(&b, 2, &e) == FMT_OK);
	CHECK(fmt_batch_slicer_take_out_of(&sl, &s, &sp, &b, &e) == FMT_OK && sl.whole == NULL && b.n_rows == 0);
	fmt_batch_free(&b);
	fmt_schema_free(&s);
}
