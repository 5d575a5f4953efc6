/* The .ald helpers: CRC-32 variants (specs/ald.md §8 vectors), the card (§3 bytes), dataset
 * type and compression names; text values for type inference. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "unit.h"

TEST(ald_crc_vectors_of_spec_8)
{
	CHECK_EQ_U64(fmt_crc32_ieee(0, "123456789", 9), 0xCBF43926u);
	CHECK_EQ_U64(fmt_crc32_alimentar(0, "123456789", 9), 0xCBF43926u);
	CHECK_EQ_U64(fmt_crc32_ieee(0, "!", 1), 0x9E6BFFD3u);
	CHECK_EQ_U64(fmt_crc32_alimentar(0, "!", 1), 0x9E69FFD3u);
	CHECK_EQ_U64(fmt_crc32_alimentar(0, "", 0), 0);
	/* running values chain like zlib's */
	CHECK_EQ_U64(fmt_crc32_alimentar(fmt_crc32_alimentar(0, "1234", 4), "56789", 5), 0xCBF43926u);
}

TEST(ald_card_upstream_array_bytes_of_spec_3)
{
	static const uint8_t want[] = { 0x97, 0xA4, 'i', 'r', 'i', 's', 0xA5, '1', '.', '0', '.', '0', 0xA3, 'M', 'I', 'T',
		0x91, 0xA2, 'm', 'l', 0xC0, 0xC0, 0xB4, '2', '0', '2', '5', '-', '0', '1', '-', '0', '1', 'T', '0', '0', ':',
		'0', '0', ':', '0', '0', 'Z' };
	static const uint8_t empty[] = { 0x97, 0xC0, 0xC0, 0xC0, 0x90, 0xC0, 0xC0, 0xC0 };
	json_error_t je;
	json_t *card = json_loads("{\"name\":\"iris\",\"version\":\"1.0.0\",\"license\":\"MIT\",\"tags\":[\"ml\"],"
				  "\"created_at\":\"2025-01-01T00:00:00Z\"}", 0, &je);
	uint8_t *out;
	size_t n;
	fmt_err e = { 0 };
	CHECK(fmt_card_encode(card, NULL, 1, &out, &n, &e) == FMT_OK);
	CHECK_EQ_U64(n, sizeof want);
	CHECK(n == sizeof want && memcmp(out, want, n) == 0);
	json_t *back;
	const char *form;
	char *nonfinite;
	CHECK(fmt_card_decode(out, n, &back, &form, &nonfinite, &e) == FMT_OK && !nonfinite);
	CHECK_STR(form, "array");
	CHECK(json_equal(back, card));
	json_decref(back);
	free(out);
	CHECK(fmt_card_encode(NULL, NULL, 1, &out, &n, &e) == FMT_OK);
	CHECK(n == sizeof empty && memcmp(out, empty, n) == 0);
	free(out);
	/* the map form carries sha256 after created_at, keys in the decisions table's order */
	CHECK(fmt_card_encode(card, "ab", 0, &out, &n, &e) == FMT_OK);
	CHECK_EQ_U64(out[0], 0x86);
	CHECK(fmt_card_decode(out, n, &back, &form, &nonfinite, &e) == FMT_OK && !nonfinite);
	CHECK_STR(form, "map");
	CHECK_STR(json_string_value(json_object_get(back, "sha256")), "ab");
	json_decref(back);
	free(out);
	json_decref(card);
}

TEST(ald_names)
{
	char names[512];
	CHECK_EQ_U64(fmt_ald_type_by_name("image_classification"), 0x20);
	CHECK_STR(fmt_ald_type_name(0xFF), "custom");
	CHECK(fmt_ald_type_name(0x77) == NULL);
	CHECK(fmt_ald_type_by_name("nosuch") == -1);
	fmt_ald_type_names(names, sizeof names);
	CHECK(strncmp(names, "tabular, time_series, graph, spatial, text_corpus", 49) == 0);
	CHECK_EQ_U64(fmt_ald_compression_by_name("zstd-max"), 2);
	CHECK_STR(fmt_ald_compression_name(3), "lz4");
	CHECK(fmt_ald_compression_by_name("gzip") == -1);
}

/* The rows gate (an expired .ald licence): fmt_table_next runs the driver's gate once, before
 * the first batch; its refusal names the file; what it lets through is left in rows_note. */
static int gate_calls;

static fmt_kind gate_open(fmt_table *t, fmt_err *e)
{
	(void)t, (void)e;
	return FMT_OK;
}

static fmt_kind gate_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	(void)t, (void)b, (void)e;
	*done = 1;
	return FMT_OK;
}

static fmt_kind gate(fmt_table *t, fmt_err *e)
{
	gate_calls++;
	if (!t->allow_expired)
		return fmt_fail(e, FMT_LICENSE, "expired");
	snprintf(t->rows_note, sizeof t->rows_note, "read anyway");
	return FMT_OK;
}

TEST(table_rows_gate_runs_once_before_the_first_batch)
{
	static const fmt_table_driver d = { .name = "gated", .open = gate_open, .next = gate_next, .rows_gate = gate };
	fmt_table t;
	fmt_batch b;
	fmt_err e;
	int done = 0;
	gate_calls = 0;
	fmt_err_clear(&e);
	CHECK(fmt_table_open_memory(&t, "g.ald", "x", 1, &d, &e) == FMT_OK);
	CHECK(fmt_table_next(&t, &b, &done, &e) == FMT_LICENSE);
	CHECK_STR(e.file, "g.ald");
	CHECK_STR(e.msg, "expired");
	CHECK_EQ_U64(gate_calls, 1);
	CHECK(fmt_table_next(&t, &b, &done, &e) == FMT_LICENSE); /* refused every time */
	fmt_table_free(&t);
	CHECK(fmt_table_open_memory(&t, "g.ald", "x", 1, &d, &e) == FMT_OK);
	t.allow_expired = 1;
	CHECK(fmt_table_rows_gate(&t, &e) == FMT_OK);
	CHECK_STR(t.rows_note, "read anyway");
	CHECK(fmt_table_next(&t, &b, &done, &e) == FMT_OK && done);
	fmt_batch_free(&b);
	CHECK_EQ_U64(gate_calls, 3);
	fmt_table_free(&t);
}

/* The text of a timestamp as printf wrote it before the digits were written by hand. */
static void timestamp_by_printf(int64_t v, fmt_time_unit unit, int zoned, char *out, size_t n)
{
	static const int64_t per_sec[] = { 1, 1000, 1000000, 1000000000 };
	static const int digits[] = { 0, 3, 6, 9 };
	int64_t ps = per_sec[unit], secs = v / ps - (v % ps < 0), frac = v - secs * ps;
	int64_t days = secs / 86400 - (secs % 86400 < 0), sod = secs - days * 86400, y;
	unsigned m, d;
	size_t at;
	fmt_civil_from_days(days, &y, &m, &d);
	/* ISO 8601's expanded years: a '-' and at least 4 digits before 0000 */
	at = (size_t)snprintf(out, n, "%s%04" PRId64 "-%02u-%02uT%02d:%02d:%02d", y < 0 ? "-" : "", y < 0 ? -y : y,
			      m, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60));
	if (digits[unit] && frac)
		at += (size_t)snprintf(out + at, n - at, ".%0*" PRId64, digits[unit], frac);
	snprintf(out + at, n - at, "%s", zoned ? "Z" : "");
}

/* The first and last timestamps of each unit (found by fuzz_driver: the seconds of INT64_MIN
 * microseconds, times 10^6, do not fit in an int64, which the remainder was computed from). */
TEST(cell_text_of_timestamps_at_the_ends_of_int64)
{
	static const char *const want[4][2] = {
		{ "-292277022657-01-27T08:29:52", "292277026596-12-04T15:30:07" },
		{ "-292275055-05-16T16:47:04.192", "292278994-08-17T07:12:55.807" },
		{ "-290308-12-21T19:59:05.224192", "294247-01-10T04:00:54.775807" },
		{ "1677-09-21T00:12:43.145224192", "2262-04-11T23:47:16.854775807" },
	};
	for (int unit = FMT_TU_S; unit <= FMT_TU_NS; unit++)
		for (int end = 0; end < 2; end++) {
			uint8_t le[8];
			fmt_wr_u64(le, end ? (uint64_t)INT64_MAX : (uint64_t)INT64_MIN);
			fmt_field f = { .name = "t", .type = FMT_C_TIMESTAMP, .unit = (fmt_time_unit)unit };
			fmt_column c = { .values = le, .values_len = 8 };
			fmt_sb got = { 0 };
			fmt_cell_text(&f, &c, 0, &got);
			fmt_sb_put(&got, "", 1);
			CHECK_STR(got.p, want[unit][end]);
			fmt_sb_free(&got);
		}
}

TEST(cell_text_of_dates_and_timestamps_as_printf_wrote_them)
{
	static const int64_t edges[] = { 0, 1, -1, 999, -999, 86399, 86400, -86400, 253402300799LL, 253402300800LL,
		-62135596800LL, -62167219200LL, -62167219201LL, 4102444800LL, 1709290800LL, INT64_C(-377705116800) };
	uint64_t state = 24;
	for (int unit = FMT_TU_S; unit <= FMT_TU_NS; unit++)
		for (int i = 0; i < 2000 + (int)(sizeof edges / sizeof edges[0]); i++) {
			int64_t v;
			if (i < (int)(sizeof edges / sizeof edges[0])) {
				v = edges[i] * (unit == FMT_TU_S ? 1 : unit == FMT_TU_MS ? 1000 : 1000000) + (i % 3) * 7;
			} else {
				state = state * 6364136223846793005ULL + 1442695040888963407ULL;
				v = (int64_t)(state >> 20) - (INT64_C(1) << 43);
				v *= unit == FMT_TU_S ? 1 : unit == FMT_TU_MS ? 1 : unit == FMT_TU_US ? 1000 : 1000000;
			}
			uint8_t le[8];
			fmt_wr_u64(le, (uint64_t)v);
			fmt_field f = { .name = "t", .type = FMT_C_TIMESTAMP, .unit = (fmt_time_unit)unit,
					.timezone = i % 2 ? "UTC" : NULL };
			fmt_column c = { .values = le, .values_len = 8 };
			fmt_sb got = { 0 };
			char want[96];
			fmt_cell_text(&f, &c, 0, &got);
			timestamp_by_printf(v, (fmt_time_unit)unit, i % 2, want, sizeof want);
			fmt_sb_put(&got, "", 1);
			CHECK_STR(got.p, want);
			fmt_sb_free(&got);
		}
}
