/* .ald TRUENO_NATIVE: the arrays are read in place. A 64 MiB float64 column is written as
 * TRUENO_NATIVE, then read back batch by batch: every batch's values point into the file's
 * mapping at a 64-byte-aligned offset, and reading all of it grows the process's anonymous
 * resident memory (RssAnon, the copies) by almost nothing while its file-backed resident memory
 * (RssFile, the mapped pages touched) grows by the column's size. */
#include <stdlib.h>
#include <unistd.h>
#include "unit.h"
#include "fmt/arrow.h"
#include "fmt/dataset.h"
#include "fmt/format_options.h"
#include "fmt/io.h"
#include "fmt/table.h"

#define ROWS (8u << 20)      /* 64 MiB of float64 */

/* RssAnon and RssFile of this process, in KiB (/proc/self/status). */
static void rss_kib(long *anon, long *file)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	*anon = *file = -1;
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		sscanf(line, "RssAnon: %ld", anon);
		sscanf(line, "RssFile: %ld", file);
	}
	fclose(f);
}

/* An Arrow IPC stream of one float64 column x = 0, 1, 2, ... in one batch. */
static void make_stream(fmt_sb *out)
{
	fmt_schema s;
	fmt_err e = { 0 };
	fmt_schema_init(&s);
	fmt_field f = { .name = "x", .type = FMT_C_F64 };
	CHECK(fmt_schema_add_field(&s, &f, &e) == FMT_OK);
	double *v = malloc((size_t)ROWS * sizeof *v);
	CHECK(v != NULL);
	for (uint32_t i = 0; i < ROWS; i++)
		v[i] = i;
	fmt_column c = { .values = (const uint8_t *)v, .values_len = (uint64_t)ROWS * 8 };
	fmt_batch b = { .n_rows = ROWS, .columns = &c, .n_columns = 1 };
	fmt_ipc_writer w;
	CHECK(fmt_ipc_writer_begin(&w, &s, 0, out, &e) == FMT_OK);
	CHECK(fmt_ipc_writer_batch(&w, &b, out, &e) == FMT_OK);
	CHECK(fmt_ipc_writer_end(&w, out, &e) == FMT_OK);
	free(v);
	fmt_schema_free(&s);
}

static void write_native(const char *path)
{
	fmt_sb stream = { 0 };
	fmt_drvopt_sets sets = { 0 };
	fmt_write_opts wo = { .options = &sets };
	fmt_table src;
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_format_option_parse(&sets, "compression", FMT_FOPT_TABLES, "none", &e) == 0);
	CHECK(fmt_format_option_parse(&sets, "trueno-native", FMT_FOPT_TABLES, NULL, &e) == 0);
	make_stream(&stream);
	CHECK(fmt_table_open_memory(&src, "x.arrows", stream.p, stream.len, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(fmt_table_driver_by_name("ald")->write(&src, &k, &wo, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	fmt_table_free(&src);
	fmt_sb_free(&stream);
	fmt_drvopt_sets_free(&sets);
}

TEST(ald_trueno_native_reads_in_place)
{
	char path[256];
	snprintf(path, sizeof path, "%s/x.ald", unit_tmp_dir());
	write_native(path);

	fmt_table t;
	fmt_err e = { 0 };
	const uint8_t *base;
	long anon0, file0, anon1, file1;
	CHECK(fmt_table_open(&t, path, NULL, &e) == FMT_OK);
	CHECK(fmt_source_view(&t.source, 0, t.source.size, &base, &e) == FMT_OK);
	rss_kib(&anon0, &file0);
	uint64_t rows = 0, outside = 0, misaligned = 0;
	double sum = 0;
	for (;;) {
		fmt_batch b;
		int done;
		CHECK(fmt_table_next(&t, &b, &done, &e) == FMT_OK);
		if (done) {
			fmt_batch_free(&b);
			break;
		}
		const uint8_t *v = b.columns[0].values;
		if (v < base || v + b.n_rows * 8 > base + t.source.size)
			outside++;
		else if (rows == 0 && (uint64_t)(v - base) % 64 != 0)
			misaligned++;
		for (uint64_t i = 0; i < b.n_rows; i++) {
			double d;
			memcpy(&d, v + 8 * i, 8);
			sum += d;
		}
		rows += b.n_rows;
		fmt_batch_free(&b);
	}
	rss_kib(&anon1, &file1);
	CHECK_EQ_U64(rows, ROWS);
	CHECK(sum == (double)ROWS * (ROWS - 1) / 2);
	CHECK_EQ_U64(outside, 0);
	CHECK_EQ_U64(misaligned, 0);
	/* 64 MiB read: the mapped pages are resident (file-backed), no copy of them is (a sanitizer's
	 * shadow of them is: 8 MiB, against 64 for a copy). */
#ifdef UNIT_SANITIZED
	const long shadow_kib = (long)(t.source.size / 8 / 1024);
#else
	const long shadow_kib = 0;
#endif
	CHECK(anon0 >= 0 && file0 >= 0);
	CHECK(anon1 - anon0 < 4096 + shadow_kib);
	CHECK(file1 - file0 > 48 * 1024);
	fmt_table_free(&t);
	unlink(path);
}
