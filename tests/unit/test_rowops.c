/* The row operations (fmt/rowops.h), the external sort (fmt/extsort.h) and the quality report
 * (fmt/quality.h) on tables read from CSV in memory. */
#include <math.h>
#include <stdlib.h>
#include "unit.h"
#include "fmt/cell.h"
#include "fmt/extsort.h"
#include "fmt/quality.h"
#include "fmt/rowops.h"
#include "fmt/table.h"

static const char csv[] = "id,name,score\n"
			  "3,cc,0.5\n"
			  "1,aa,\n"
			  "2,bb,1.5\n"
			  "1,aa,\n"
			  "5,,-2\n"
			  "4,dd,0.25\n";

/* Every row of t as "a|b|c;" text (nulls empty). */
static void rows_text(fmt_table *t, fmt_sb *out)
{
	fmt_err e = { 0 };
	int done = 0;
	while (!done) {
		fmt_batch b;
		if (fmt_table_next(t, &b, &done, &e) != FMT_OK) {
			fmt_sb_puts(out, "ERROR");
			return;
		}
		for (uint64_t r = 0; r < b.n_rows; r++) {
			for (size_t c = 0; c < t->schema.n_fields; c++) {
				if (c)
					fmt_sb_puts(out, "|");
				fmt_cell_text(&t->schema.fields[c], &b.columns[c], r, out);
			}
			fmt_sb_puts(out, ";");
		}
		fmt_batch_free(&b);
	}
}

/* The rows of csv through o, as text; or the error message. */
static void run_ops(const fmt_rowops_opts *o, char *buf, size_t n)
{
	fmt_table t;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_sb out = { 0 };
	if (fmt_table_open_memory(&t, "t.csv", csv, strlen(csv), fmt_table_driver_by_name("csv"), &e) != FMT_OK) {
		snprintf(buf, n, "open: %.400s", e.msg);
		return;
	}
	if (fmt_table_rowops(&t, o, &e) != FMT_OK) {
		snprintf(buf, n, "%.400s", e.msg);
		fmt_table_free(&t);
		return;
	}
	rows_text(&t, &out);
	snprintf(buf, n, "%s", out.p ? out.p : "");
	fmt_sb_free(&out);
	fmt_table_free(&t);
}

TEST(rowops_where_compares_by_the_column_type_and_combines_as_and)
{
	char got[512];
	const char *w1[] = { "score > 0.3" };
	run_ops(&(fmt_rowops_opts){ .where = w1, .n_where = 1 }, got, sizeof got);
	CHECK_STR(got, "3|cc|0.5;2|bb|1.5;");
	/* 10 > 9 as numbers, not as text */
	const char *w2[] = { "id >= 2", "name is not null", "id != 4" };
	run_ops(&(fmt_rowops_opts){ .where = w2, .n_where = 3 }, got, sizeof got);
	CHECK_STR(got, "3|cc|0.5;2|bb|1.5;");
	const char *w3[] = { "score is null" };
	run_ops(&(fmt_rowops_opts){ .where = w3, .n_where = 1 }, got, sizeof got);
	CHECK_STR(got, "1|aa|;1|aa|;");
	const char *w4[] = { "name = 'aa'" };
	run_ops(&(fmt_rowops_opts){ .where = w4, .n_where = 1 }, got, sizeof got);
	CHECK_STR(got, "1|aa|;1|aa|;");
	const char *bad[] = { "idd = 1" };
	run_ops(&(fmt_rowops_opts){ .where = bad, .n_where = 1 }, got, sizeof got);
	CHECK_STR(got, "--where 'idd = 1': no column 'idd' (the columns: id, name, score)");
	const char *bad2[] = { "id = x" };
	run_ops(&(fmt_rowops_opts){ .where = bad2, .n_where = 1 }, got, sizeof got);
	CHECK_STR(got, "--where 'id = x': 'x' is not a value of column 'id' (int64)");
}

TEST(rowops_sort_is_stable_with_nulls_last_and_spills_beyond_memory)
{
	char got[512], small[512];
	const char *s1[] = { "score:desc" };
	run_ops(&(fmt_rowops_opts){ .sort = s1, .n_sort = 1 }, got, sizeof got);
	CHECK_STR(got, "2|bb|1.5;3|cc|0.5;4|dd|0.25;5||-2.0;1|aa|;1|aa|;");
	const char *s2[] = { "name", "id:desc" };
	run_ops(&(fmt_rowops_opts){ .sort = s2, .n_sort = 2 }, got, sizeof got);
	CHECK_STR(got, "1|aa|;1|aa|;2|bb|1.5;3|cc|0.5;4|dd|0.25;5||-2.0;");
	/* the same with a few bytes of memory: one run per row, merged */
	run_ops(&(fmt_rowops_opts){ .sort = s2, .n_sort = 2, .memory = 1 }, small, sizeof small);
	CHECK_STR(small, got);
}

TEST(rowops_dedupe_rows_range_and_sample_are_reproducible)
{
	char got[512], again[512];
	run_ops(&(fmt_rowops_opts){ .dedupe = 1 }, got, sizeof got);
	CHECK_STR(got, "3|cc|0.5;1|aa|;2|bb|1.5;5||-2.0;4|dd|0.25;");
	run_ops(&(fmt_rowops_opts){ .dedupe = 1, .has_range = 1, .row_start = 1, .row_end = 3 }, got, sizeof got);
	CHECK_STR(got, "1|aa|;2|bb|1.5;");
	run_ops(&(fmt_rowops_opts){ .sample_n = 3, .seed = 9 }, got, sizeof got);
	run_ops(&(fmt_rowops_opts){ .sample_n = 3, .seed = 9, .memory = 1 }, again, sizeof again);
	CHECK_STR(got, again);
	size_t rows = 0;
	for (const char *p = got; *p; p++)
		rows += *p == ';';
	CHECK_EQ_U64(rows, 3);
	run_ops(&(fmt_rowops_opts){ .shuffle = 1, .seed = 4 }, got, sizeof got);
	run_ops(&(fmt_rowops_opts){ .shuffle = 1, .seed = 4, .memory = 1 }, again, sizeof again);
	CHECK_STR(got, again);
}

TEST(rows_range_and_sample_arguments)
{
	uint64_t a, b, n;
	double f;
	fmt_err e = { 0 };
	CHECK(fmt_rows_range_parse("10:20", &a, &b, &e) == FMT_OK && a == 10 && b == 20);
	CHECK(fmt_rows_range_parse(":5", &a, &b, &e) == FMT_OK && a == 0 && b == 5);
	CHECK(fmt_rows_range_parse("7:", &a, &b, &e) == FMT_OK && a == 7 && b == UINT64_MAX);
	CHECK(fmt_rows_range_parse("5:2", &a, &b, &e) == FMT_USAGE);
	CHECK(fmt_rows_range_parse("-1:2", &a, &b, &e) == FMT_USAGE);
	CHECK(fmt_rows_range_parse("1:2:3", &a, &b, &e) == FMT_USAGE);
	CHECK(fmt_sample_parse("100", &n, &f, &e) == FMT_OK && n == 100 && f == 0);
	CHECK(fmt_sample_parse("0.25", &n, &f, &e) == FMT_OK && n == 0 && f == 0.25);
	CHECK(fmt_sample_parse("0", &n, &f, &e) == FMT_USAGE);
	CHECK(fmt_sample_parse("1.0", &n, &f, &e) == FMT_USAGE);
	CHECK(fmt_sample_parse("x", &n, &f, &e) == FMT_USAGE);
}

TEST(extsort_merges_runs_in_order_and_stably)
{
	fmt_extsort *s;
	fmt_err e = { 0 };
	CHECK(fmt_extsort_new(200, &s, &e) == FMT_OK);
	uint64_t state = 1;
	for (uint32_t i = 0; i < 500; i++) {
		state = state * 6364136223846793005ull + 1442695040888963407ull;
		uint8_t key = (uint8_t)(state >> 60); /* 16 keys: many ties */
		uint8_t payload[4] = { (uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i };
		CHECK(fmt_extsort_add(s, &key, 1, payload, 4, &e) == FMT_OK);
	}
	CHECK(fmt_extsort_finish(s, &e) == FMT_OK);
	CHECK(fmt_extsort_runs(s) > 10);
	int done = 0, last_key = -1;
	long last_seq = -1, n = 0;
	while (1) {
		const uint8_t *k, *p;
		size_t kl, pl;
		CHECK(fmt_extsort_next(s, &k, &kl, &p, &pl, &done, &e) == FMT_OK);
		if (done)
			break;
		long seq = (long)p[0] << 24 | (long)p[1] << 16 | (long)p[2] << 8 | p[3];
		CHECK(kl == 1 && pl == 4);
		CHECK(k[0] > last_key || (k[0] == last_key && seq > last_seq));
		last_key = k[0];
		last_seq = seq;
		n++;
	}
	CHECK_EQ_U64(n, 500);
	fmt_extsort_free(s);
}

TEST(row_key_orders_values_as_the_values)
{
	/* int64 -5 < 3, float -0 == 0 and NaN above infinity, strings with a NUL byte */
	int64_t iv[2] = { -5, 3 };
	double fv[4] = { -0.0, 0.0, INFINITY, NAN };
	fmt_field fi = { .name = "i", .type = FMT_C_I64 }, ff = { .name = "f", .type = FMT_C_F64 };
	fmt_column ci = { .values = (const uint8_t *)iv, .values_len = 16 };
	fmt_column cf = { .values = (const uint8_t *)fv, .values_len = 32 };
	fmt_sb a = { 0 }, b = { 0 };
	fmt_row_key(&fi, &ci, 0, 0, &a);
	fmt_row_key(&fi, &ci, 1, 0, &b);
	CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) < 0);
	a.len = b.len = 0;
	fmt_row_key(&ff, &cf, 0, 0, &a);
	fmt_row_key(&ff, &cf, 1, 0, &b);
	CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
	a.len = b.len = 0;
	fmt_row_key(&ff, &cf, 2, 0, &a);
	fmt_row_key(&ff, &cf, 3, 0, &b);
	CHECK(memcmp(a.p, b.p, a.len) < 0);
	a.len = b.len = 0;
	fmt_row_key(&ff, &cf, 2, 1, &a); /* descending: reversed */
	fmt_row_key(&ff, &cf, 3, 1, &b);
	CHECK(memcmp(a.p, b.p, a.len) > 0);
	const char text[] = "a\0ba";
	int32_t offs[4] = { 0, 1, 3, 4 }; /* "a", "\0b", "a"... */
	fmt_field fs = { .name = "s", .type = FMT_C_BINARY };
	fmt_column cs = { .values = (const uint8_t *)text, .values_len = 4, .offsets = offs };
	a.len = b.len = 0;
	fmt_row_key(&fs, &cs, 1, 0, &a); /* "\0b" */
	fmt_row_key(&fs, &cs, 0, 0, &b); /* "a" */
	CHECK(memcmp(a.p, b.p, a.len < b.len ? a.len : b.len) < 0);
	fmt_sb_free(&a);
	fmt_sb_free(&b);
}

/* A range of two values of type t at m (fixed width) or of two strings (offsets mo). */
static fmt_col_range range_of(const fmt_field *f, const void *m, const int32_t *mo)
{
	fmt_col_range r = { .field = f, .has_range = 1, .nulls = -1 };
	r.minmax.values = m;
	r.minmax.offsets = mo;
	return r;
}

TEST(range_first_outside_finds_the_first_value_beyond_the_bounds)
{
	/* int64 in [-5, 3]: row 3 (4) is the first outside; a null (row 1, value 99) is not */
	int64_t iv[5] = { -5, 99, 3, 4, -6 }, ib[2] = { -5, 3 };
	uint8_t valid = 0x1d;       /* rows 0, 2, 3, 4 */
	fmt_field fi = { .name = "i", .type = FMT_C_I64 };
	fmt_column ci = { .values = (const uint8_t *)iv, .values_len = 40, .validity = &valid, .null_count = 1 };
	fmt_col_range r = range_of(&fi, ib, NULL);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &ci, 5), 3);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &ci, 3), 3);  /* none within the first 3 */
	r.has_range = 0;
	CHECK_EQ_U64(fmt_range_first_outside(&r, &ci, 5), 5);
	/* uint64 above INT64_MAX: unsigned order */
	uint64_t uv[2] = { UINT64_MAX - 1, 1 }, ub[2] = { 2, UINT64_MAX };
	fmt_field fu = { .name = "u", .type = FMT_C_U64 };
	fmt_column cu = { .values = (const uint8_t *)uv, .values_len = 16 };
	r = range_of(&fu, ub, NULL);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &cu, 2), 1);
	/* doubles in [-0, 0]: 0 and -0 are within, NaN is within (a range leaves it out), 1e-300 not */
	double dv[4] = { 0.0, -0.0, NAN, 1e-300 }, db[2] = { 0.0, -0.0 };
	fmt_field fd = { .name = "d", .type = FMT_C_F64 };
	fmt_column cd = { .values = (const uint8_t *)dv, .values_len = 32 };
	r = range_of(&fd, db, NULL);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &cd, 4), 3);
	/* FLOAT16 in [-2, 1]: 65504 (row 1) is outside */
	uint16_t hv[2] = { 0xC000, 0x7BFF }, hb[2] = { 0xC000, 0x3C00 };
	fmt_field fh = { .name = "h", .type = FMT_C_F16 };
	fmt_column ch = { .values = (const uint8_t *)hv, .values_len = 4 };
	r = range_of(&fh, hb, NULL);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &ch, 2), 1);
	/* strings in ["app", "bb"] (truncated bounds): "apple" and "b" within; "ap" (a prefix of
	 * the least: shorter first) and "bba" and "\xc3\xa9" (unsigned bytes) outside */
	const char sb[] = "appbb", sv[] = "appleb" "ap" "bba" "\xc3\xa9";
	int32_t sbo[3] = { 0, 3, 5 }, svo[6] = { 0, 5, 6, 8, 11, 13 };
	fmt_field fs = { .name = "s", .type = FMT_C_UTF8 };
	fmt_column cs = { .values = (const uint8_t *)sv, .values_len = 13, .offsets = svo };
	r = range_of(&fs, sb, sbo);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &cs, 2), 2);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &cs, 5), 2);
	int32_t svo2[3] = { 8, 11, 13 };  /* "bba", "\xc3\xa9" */
	cs.offsets = svo2;
	CHECK_EQ_U64(fmt_range_first_outside(&r, &cs, 2), 0);
	/* booleans in [true, true]: the false at row 1 */
	uint8_t bv = 0x1, bb = 0x3;
	fmt_field fb = { .name = "b", .type = FMT_C_BOOL };
	fmt_column cb = { .values = &bv, .values_len = 1 };
	r = range_of(&fb, &bb, NULL);
	CHECK_EQ_U64(fmt_range_first_outside(&r, &cb, 2), 1);
}

TEST(split_counts_are_exact_by_largest_remainders)
{
	uint64_t c[3];
	fmt_split_counts(10, (double[]){ 0.8, 0.1, 0.1 }, 3, c);
	CHECK(c[0] == 8 && c[1] == 1 && c[2] == 1);
	fmt_split_counts(7, (double[]){ 0.5, 0.5 }, 2, c);
	CHECK(c[0] == 4 && c[1] == 3);
	fmt_split_counts(2, (double[]){ 0.6, 0.2, 0.2 }, 3, c);
	CHECK(c[0] + c[1] + c[2] == 2 && c[0] == 1);
}

/* A small generator for random shapes (xorshift64). */
static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x >> 8;
}

/* fmt_split_allocate on one shape: each part its total, each stratum its rows, each cell its
 * ideal share rounded down or up; 0 when all hold. */
static int allocation_holds(const uint64_t *rows, size_t n, const uint64_t *parts, size_t k, uint64_t *counts)
{
	fmt_err e = { 0 };
	uint64_t total = 0, got[16] = { 0 };
	if (fmt_split_allocate(rows, n, parts, k, counts, &e) != FMT_OK)
		return -1;
	for (size_t s = 0; s < n; s++)
		total += rows[s];
	for (size_t s = 0; s < n; s++) {
		uint64_t sum = 0;
		for (size_t j = 0; j < k; j++) {
			uint64_t c = counts[s * k + j], lo = total ? rows[s] * parts[j] / total : 0;
			int exact = total == 0 || rows[s] * parts[j] % total == 0;
			if (c != lo && (exact || c != lo + 1))
				return -2;
			sum += c;
			got[j] += c;
		}
		if (sum != rows[s])
			return -3;
	}
	for (size_t j = 0; j < k; j++)
		if (got[j] != parts[j])
			return -4;
	return 0;
}

TEST(split_allocation_keeps_the_part_totals_and_splits_each_stratum_evenly)
{
	uint64_t c[64];
	/* two strata of 3 at 0.5/0.5: 2/1 and 1/2 (was 2/1 and 2/1: 4/2), the tie to the first stratum */
	CHECK(allocation_holds((uint64_t[]){ 3, 3 }, 2, (uint64_t[]){ 3, 3 }, 2, c) == 0);
	CHECK(c[0] == 2 && c[1] == 1 && c[2] == 1 && c[3] == 2);
	/* 7/5/1 at 0.8/0.1/0.1 of 13: parts 11/1/1, the largest remainders first */
	CHECK(allocation_holds((uint64_t[]){ 7, 5, 1 }, 3, (uint64_t[]){ 11, 1, 1 }, 3, c) == 0);
	CHECK(c[0] == 6 && c[1] == 1 && c[2] == 0 && c[3] == 4 && c[4] == 0 && c[5] == 1 && c[6] == 1);
	/* distinct values, one row each: 2 and 2 */
	CHECK(allocation_holds((uint64_t[]){ 1, 1, 1, 1 }, 4, (uint64_t[]){ 2, 2 }, 2, c) == 0);
	CHECK(c[0] == 1 && c[2] == 1 && c[5] == 1 && c[7] == 1);
	/* no rows; totals that differ */
	CHECK(allocation_holds((uint64_t[]){ 0 }, 1, (uint64_t[]){ 0, 0 }, 2, c) == 0);
	fmt_err e = { 0 };
	CHECK(fmt_split_allocate((uint64_t[]){ 3, 3 }, 2, (uint64_t[]){ 3, 2 }, 2, c, &e) == FMT_INTERNAL);
	/* many random shapes: up to 8 strata of up to 12 rows, 2 to 6 parts of random totals */
	uint64_t seed = 7;
	for (int round = 0; round < 20000; round++) {
		uint64_t rows[8], parts[6] = { 0 }, total = 0;
		size_t n = 1 + next_random(&seed) % 8, k = 2 + next_random(&seed) % 5;
		for (size_t s = 0; s < n; s++)
			total += rows[s] = next_random(&seed) % 13;
		for (uint64_t r = 0; r < total; r++)
			parts[next_random(&seed) % k]++;
		int got = allocation_holds(rows, n, parts, k, c);
		if (got != 0)
			fprintf(stderr, "round %d: %d\n", round, got);
		CHECK(got == 0);
		if (got != 0)
			break;
	}
}

TEST(split_parts_are_disjoint_cover_the_input_and_repeat)
{
	fmt_err e = { 0 };
	fmt_table t;
	char parts[2][512], again[512];
	CHECK(fmt_table_open_memory(&t, "t.csv", csv, strlen(csv), fmt_table_driver_by_name("csv"), &e) == FMT_OK);
	fmt_split_plan *plan;
	CHECK(fmt_split_plan_count(&t, (double[]){ 0.5, 0.5 }, 2, "name", 3, &plan, &e) == FMT_OK);
	fmt_table_free(&t);
	CHECK_EQ_U64(fmt_split_plan_strata(plan), 5); /* aa, bb, cc, dd and null */
	CHECK_EQ_U64(fmt_split_plan_rows(plan, 0) + fmt_split_plan_rows(plan, 1), 6);
	for (size_t p = 0; p < 2; p++)
		run_ops(&(fmt_rowops_opts){ .split = plan, .split_part = p }, parts[p], sizeof parts[p]);
	run_ops(&(fmt_rowops_opts){ .split = plan, .split_part = 0 }, again, sizeof again);
	CHECK_STR(parts[0], again);
	/* the two "1|aa|" rows are one stratum of two: one in each part */
	CHECK(strstr(parts[0], "1|aa|;") && strstr(parts[1], "1|aa|;"));
	size_t n = 0;
	for (size_t p = 0; p < 2; p++)
		for (const char *c = parts[p]; *c; c++)
			n += *c == ';';
	CHECK_EQ_U64(n, 6);
	fmt_split_plan_free(plan);
}

TEST(quality_reports_nulls_distinct_duplicates_and_quantiles)
{
	fmt_err e = { 0 };
	fmt_table t;
	fmt_quality *q;
	CHECK(fmt_table_open_memory(&t, "t.csv", csv, strlen(csv), fmt_table_driver_by_name("csv"), &e) == FMT_OK);
	CHECK(fmt_quality_new(&t.schema, &q, &e) == FMT_OK);
	int done = 0;
	while (!done) {
		fmt_batch b;
		CHECK(fmt_table_next(&t, &b, &done, &e) == FMT_OK);
		if (!done)
			CHECK(fmt_quality_add(q, &b, &e) == FMT_OK);
		fmt_batch_free(&b);
	}
	json_t *r = fmt_quality_json(q);
	CHECK_EQ_U64(json_integer_value(json_object_get(r, "rows")), 6);
	CHECK_EQ_U64(json_integer_value(json_object_get(r, "duplicate_rows")), 1);
	json_t *id = json_array_get(json_object_get(r, "columns"), 0);
	CHECK_EQ_U64(json_integer_value(json_object_get(id, "distinct")), 5);
	CHECK_EQ_U64(json_integer_value(json_object_get(id, "p50")), 2);
	CHECK_EQ_U64(json_integer_value(json_object_get(id, "max")), 5);
	json_t *score = json_array_get(json_object_get(r, "columns"), 2);
	CHECK_EQ_U64(json_integer_value(json_object_get(score, "nulls")), 2);
	CHECK(json_real_value(json_object_get(score, "mean")) == 0.0625);
	json_decref(r);
	fmt_quality_free(q);
	fmt_table_free(&t);
}

TEST(quality_distinct_beyond_the_exact_bound_is_within_the_stated_error)
{
	enum { N = 200000 };
	int64_t *v = malloc(N * sizeof *v);
	fmt_field f = { .name = "x", .type = FMT_C_I64 };
	fmt_schema s = { .fields = &f, .n_fields = 1 };
	fmt_column c;
	fmt_batch b = { .n_rows = N, .columns = &c, .n_columns = 1 };
	fmt_quality *q;
	fmt_err e = { 0 };
	for (int i = 0; i < N; i++)
		v[i] = i % 150000;
	c = (fmt_column){ .values = (const uint8_t *)v, .values_len = N * 8 };
	CHECK(fmt_quality_new(&s, &q, &e) == FMT_OK);
	CHECK(fmt_quality_add(q, &b, &e) == FMT_OK);
	json_t *r = fmt_quality_json(q);
	json_t *x = json_array_get(json_object_get(r, "columns"), 0);
	double d = (double)json_integer_value(json_object_get(x, "distinct"));
	CHECK(json_is_false(json_object_get(x, "distinct_exact")));
	CHECK(fabs(d - 150000) / 150000 < 4 * 0.0081); /* 4 standard errors */
	CHECK(json_is_false(json_object_get(x, "quantiles_exact")));
	double p50 = (double)json_integer_value(json_object_get(x, "p50"));
	/* 0..49999 twice then 50000..149999 once: the median is 50000, and a rank error of at most
	 * 0.64 % of 200000 rows is at most 1280 values off (one row per value above it) */
	CHECK(fabs(p50 - 50000) <= 0.0064 * N);
	json_decref(r);
	fmt_quality_free(q);
	free(v);
}
