/* fmt/dtype.h: the table against specs/safetensors.md §4 and specs/gguf.md §9, and the
 * checked size computation. */
#include "fmt/dtype.h"
#include "unit.h"

TEST(dtype_safetensors_names_and_ranks)
{
	/* the writer sort order of safetensors.md §4, ascending */
	static const char *order[] = {
		"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
		"F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
		"C64", "F64", "I64", "U64",
	};
	static const unsigned bits[] = {
		8, 4, 6, 6, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 32, 32, 32, 64, 64, 64, 64,
	};
	int n_st = 0;
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		fmt_dtype t = fmt_dtype_from_st_name(order[i]);
		CHECK(t != FMT_DT_INVALID);
		CHECK_STR(fmt_dtype_name(t), order[i]);
		CHECK_EQ_U64(fmt_dtype_get(t)->st_rank, i);
		CHECK_EQ_U64(fmt_dtype_get(t)->block_elems, 1);
		CHECK_EQ_U64(fmt_dtype_get(t)->block_bits, bits[i]);
		CHECK(fmt_dtype_get(t)->in_safetensors);
	}
	for (int t = 1; t < FMT_DT_COUNT; t++)
		n_st += fmt_dtype_get((fmt_dtype)t)->in_safetensors;
	CHECK_EQ_U64(n_st, 22);
	CHECK(fmt_dtype_from_st_name("Q4_0") == FMT_DT_INVALID);
	CHECK(fmt_dtype_from_name("Q4_0") == FMT_DT_Q4_0);
	CHECK(fmt_dtype_from_st_name("f32") == FMT_DT_INVALID);
	CHECK(fmt_dtype_from_st_name("") == FMT_DT_INVALID);
	CHECK(fmt_dtype_from_name("INVALID") == FMT_DT_INVALID);
	CHECK(fmt_dtype_get(FMT_DT_F32)->is_float && !fmt_dtype_get(FMT_DT_F32)->is_int);
	CHECK(fmt_dtype_get(FMT_DT_BOOL)->is_int && !fmt_dtype_get(FMT_DT_BOOL)->is_float);
	CHECK(!fmt_dtype_get(FMT_DT_C64)->is_float && !fmt_dtype_get(FMT_DT_C64)->is_int);
	CHECK(!fmt_dtype_get(FMT_DT_Q8_0)->is_float && !fmt_dtype_get(FMT_DT_Q8_0)->is_int);
	CHECK(fmt_dtype_get(FMT_DT_Q8_0)->st_rank == -1);
	CHECK(fmt_dtype_get((fmt_dtype)999) == fmt_dtype_get(FMT_DT_INVALID));
}

TEST(dtype_ggml_table)
{
	/* id, name, block elements, type size; NULL name: removed id */
	static const struct { int id; const char *name; unsigned blck, size; } ggml[] = {
		{ 0, "F32", 1, 4 }, { 1, "F16", 1, 2 }, { 2, "Q4_0", 32, 18 }, { 3, "Q4_1", 32, 20 },
		{ 4, NULL, 0, 0 }, { 5, NULL, 0, 0 }, { 6, "Q5_0", 32, 22 }, { 7, "Q5_1", 32, 24 },
		{ 8, "Q8_0", 32, 34 }, { 9, "Q8_1", 32, 36 }, { 10, "Q2_K", 256, 84 },
		{ 11, "Q3_K", 256, 110 }, { 12, "Q4_K", 256, 144 }, { 13, "Q5_K", 256, 176 },
		{ 14, "Q6_K", 256, 210 }, { 15, "Q8_K", 256, 292 }, { 16, "IQ2_XXS", 256, 66 },
		{ 17, "IQ2_XS", 256, 74 }, { 18, "IQ3_XXS", 256, 98 }, { 19, "IQ1_S", 256, 50 },
		{ 20, "IQ4_NL", 32, 18 }, { 21, "IQ3_S", 256, 110 }, { 22, "IQ2_S", 256, 82 },
		{ 23, "IQ4_XS", 256, 136 }, { 24, "I8", 1, 1 }, { 25, "I16", 1, 2 }, { 26, "I32", 1, 4 },
		{ 27, "I64", 1, 8 }, { 28, "F64", 1, 8 }, { 29, "IQ1_M", 256, 56 }, { 30, "BF16", 1, 2 },
		{ 31, NULL, 0, 0 }, { 32, NULL, 0, 0 }, { 33, NULL, 0, 0 }, { 34, "TQ1_0", 256, 54 },
		{ 35, "TQ2_0", 256, 66 }, { 36, NULL, 0, 0 }, { 37, NULL, 0, 0 }, { 38, NULL, 0, 0 },
		{ 39, "MXFP4", 32, 17 }, { 40, "NVFP4", 64, 36 }, { 41, "Q1_0", 128, 18 },
		{ 42, "Q2_0", 64, 18 },
	};
	for (size_t i = 0; i < sizeof ggml / sizeof ggml[0]; i++) {
		CHECK_EQ_U64(ggml[i].id, i);
		fmt_dtype t = fmt_dtype_from_ggml(ggml[i].id);
		if (!ggml[i].name) {
			CHECK(t == FMT_DT_INVALID);
			continue;
		}
		const fmt_dtype_info *info = fmt_dtype_get(t);
		CHECK_STR(info->name, ggml[i].name);
		CHECK_EQ_U64(info->ggml_id, ggml[i].id);
		CHECK_EQ_U64(info->block_elems, ggml[i].blck);
		CHECK_EQ_U64(info->block_bits, ggml[i].size * 8);
	}
	CHECK(fmt_dtype_from_ggml(43) == FMT_DT_INVALID);
	CHECK(fmt_dtype_from_ggml(-1) == FMT_DT_INVALID);
	CHECK(fmt_dtype_from_ggml(INT64_MAX) == FMT_DT_INVALID);
	/* safetensors-only types have no ggml id */
	CHECK(fmt_dtype_get(FMT_DT_U8)->ggml_id == -1);
	CHECK(fmt_dtype_get(FMT_DT_BOOL)->ggml_id == -1);
	CHECK(fmt_dtype_get(FMT_DT_F8_E4M3)->ggml_id == -1);
	/* every ggml id in the table is unique */
	for (int a = 1; a < FMT_DT_COUNT; a++)
		for (int b = a + 1; b < FMT_DT_COUNT; b++)
			if (fmt_dtype_get((fmt_dtype)a)->ggml_id >= 0)
				CHECK(fmt_dtype_get((fmt_dtype)a)->ggml_id != fmt_dtype_get((fmt_dtype)b)->ggml_id);
}

static fmt_kind nbytes_of(fmt_dtype t, const uint64_t *shape, int ndim, uint64_t *ne, uint64_t *nb,
			  fmt_err *e)
{
	fmt_err_clear(e);
	*ne = *nb = 12345;
	return fmt_dtype_nbytes(t, shape, ndim, ne, nb, e);
}

TEST(dtype_nbytes)
{
	fmt_err e = { 0 };
	uint64_t ne, nb;
	CHECK(nbytes_of(FMT_DT_F32, NULL, 0, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(ne, 1);
	CHECK_EQ_U64(nb, 4);
	uint64_t s23[] = { 2, 3 };
	CHECK(nbytes_of(FMT_DT_F16, s23, 2, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(ne, 6);
	CHECK_EQ_U64(nb, 12);
	uint64_t q[] = { 4, 64 };
	CHECK(nbytes_of(FMT_DT_Q4_0, q, 2, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(ne, 256);
	CHECK_EQ_U64(nb, 8 * 18);
	uint64_t k[] = { 3, 256 };
	CHECK(nbytes_of(FMT_DT_Q6_K, k, 2, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(nb, 3 * 210);
	uint64_t four[] = { 4 };
	CHECK(nbytes_of(FMT_DT_F4, four, 1, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(nb, 2);
	CHECK(nbytes_of(FMT_DT_F6_E2M3, four, 1, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(nb, 3);
	uint64_t empty[] = { 0, 7 };
	CHECK(nbytes_of(FMT_DT_Q8_0, empty, 2, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(ne, 0);
	CHECK_EQ_U64(nb, 0);
	/* a zero dimension makes the tensor empty even when the others would overflow */
	uint64_t empty_huge[] = { UINT64_MAX, UINT64_MAX, 0 };
	CHECK(nbytes_of(FMT_DT_F32, empty_huge, 3, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(nb, 0);
	/* sub-byte types near the top of the range: the byte count fits though the bit count
	 * would not */
	uint64_t big4[] = { 1ull << 63 };
	CHECK(nbytes_of(FMT_DT_F4, big4, 1, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(nb, 1ull << 62);
	CHECK(nbytes_of(FMT_DT_F6_E3M2, big4, 1, &ne, &nb, &e) == FMT_OK);
	CHECK_EQ_U64(nb, 6ull << 60);
}

TEST(dtype_nbytes_errors)
{
	fmt_err e = { 0 };
	uint64_t ne, nb;
	uint64_t s460[] = { 460 };
	CHECK(nbytes_of(FMT_DT_Q8_0, s460, 1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "460 elements is not a multiple of the Q8_0 block size 32");
	uint64_t s3[] = { 3 };
	CHECK(nbytes_of(FMT_DT_F4, s3, 1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "misaligned: 3 F4 elements is 12 bits, not whole bytes");
	CHECK(nbytes_of(FMT_DT_F6_E2M3, s3, 1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "misaligned: 3 F6_E2M3 elements is 18 bits, not whole bytes");
	uint64_t odd_big[] = { UINT64_MAX };
	CHECK(nbytes_of(FMT_DT_F4, odd_big, 1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "misaligned: 18446744073709551615 F4 elements is not a whole number of bytes");
	uint64_t over[] = { 1ull << 32, 1ull << 32 };
	CHECK(nbytes_of(FMT_DT_U8, over, 2, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "element count overflows 64 bits");
	uint64_t bytes_over[] = { 1ull << 62 };
	CHECK(nbytes_of(FMT_DT_F32, bytes_over, 1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "byte size of 4611686018427387904 F32 elements overflows 64 bits");
	uint64_t q_over[] = { UINT64_MAX - 31 };
	CHECK(nbytes_of(FMT_DT_Q8_0, q_over, 1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK(nbytes_of(FMT_DT_INVALID, NULL, 0, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	CHECK(nbytes_of(FMT_DT_F32, NULL, -1, &ne, &nb, &e) == FMT_INVALID_FORMAT);
	/* outputs untouched on failure */
	CHECK_EQ_U64(ne, 12345);
	CHECK_EQ_U64(nb, 12345);
}

TEST(dtype_row_ok)
{
	CHECK(fmt_dtype_row_ok(FMT_DT_Q8_0, 64));
	CHECK(fmt_dtype_row_ok(FMT_DT_Q8_0, 0));
	CHECK(!fmt_dtype_row_ok(FMT_DT_Q8_0, 33));
	CHECK(!fmt_dtype_row_ok(FMT_DT_Q4_K, 128));
	CHECK(fmt_dtype_row_ok(FMT_DT_Q4_K, 512));
	CHECK(fmt_dtype_row_ok(FMT_DT_F32, 7));
	CHECK(!fmt_dtype_row_ok(FMT_DT_INVALID, 32));
}
