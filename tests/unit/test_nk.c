/* The .nk loader (libcommon/formats/nk): the §16.1 example field by field, the §4.3 decoding
 * of the depthwise width byte, UIB geometry, and the error messages that name a layer. */
#include <stdlib.h>
#include "fmt/checked.h"
#include "fmt/nk.h"
#include "unit.h"

/* specs/nk.md §16.1: MLP 2 -> 2, one dense layer, 136 bytes (test_nk_write.c writes it too). */
const uint8_t unit_nk_example[136] = {
	0x4e, 0x4b, 0x49, 0x54, 0x03, 0, 0, 0, 0x01, 0x02, 0, 0, 0x01, 0, 0, 0,
	0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0,
	0x01, 0, 0, 0, 0x01, 0, 0, 0, 0x10, 0, 0, 0, 0x08, 0, 0, 0,
	0x01, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0xd7, 0x23, 0x3c,
	0x02, 0x01, 0, 0, 0x02, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0x04, 0, 0, 0, 0x01, 0x01, 0, 0, 0x02, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0,
	0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40,
	0, 0, 0, 0x3f, 0, 0, 0, 0xbf,
};

/* A parse of a copy in 4-aligned memory. */
static fmt_kind parse(nk_model *nm, const uint8_t *bytes, size_t n, uint32_t **buf, fmt_err *e)
{
	*buf = calloc(n / 4 + 1, 4);
	memcpy(*buf, bytes, n);
	return fmt_nk_parse(nm, *buf, n, e);
}

TEST(nk_example_16_1)
{
	nk_model nm;
	fmt_err e = { 0 };
	uint32_t *buf;
	CHECK_EQ_U64(parse(&nm, unit_nk_example, sizeof unit_nk_example, &buf, &e), FMT_OK);
	CHECK_EQ_U64(nm.version, 3);
	CHECK_EQ_U64(nm.network, NK_MLP);
	CHECK_EQ_U64(nm.n_layers, 1);
	CHECK_EQ_U64(nm.layers[0].units, 2);
	CHECK_EQ_U64(nm.layers[0].act, NK_ACT_NONE);
	CHECK_EQ_U64(nm.meta_end, 112);
	CHECK_EQ_U64(nm.payload_offset, 112);
	CHECK_EQ_U64(nm.weights[0].offset, 112);
	CHECK_EQ_U64(nm.biases[0].offset, 128);
	CHECK(((const float *)nm.weights[0].data)[3] == 4.0f);
	CHECK(((const float *)nm.biases[0].data)[1] == -0.5f);
	CHECK_EQ_U64(nm.input_count, 2);
	CHECK_EQ_U64(nm.output_count, 2);
	CHECK_STR(fmt_nk_kind_name(nm.layers[0].kind), "dense");
	fmt_nk_free(&nm);
	free(buf);
}

TEST(nk_example_truncated_everywhere)
{
	/* every prefix of the file is refused with InvalidFormat, never accepted */
	for (size_t n = 0; n < sizeof unit_nk_example; n++) {
		nk_model nm;
		fmt_err e = { 0 };
		uint32_t *buf;
		fmt_kind k = parse(&nm, unit_nk_example, n, &buf, &e);
		CHECK_EQ_U64(k, FMT_INVALID_FORMAT);
		free(buf);
	}
}

/* A CNN with one depthwise layer over 6x6x2 whose kw byte is b and whose weight tensor holds
 * count values. */
static fmt_kind depthwise_file(uint32_t kh, uint8_t b, uint32_t count, nk_model *nm, uint32_t **buf, fmt_err *e)
{
	uint8_t f[1024] = { 0 }; /* up to 162 weights: 120 + 648 + 8 bytes */
	size_t n = 0;
	memcpy(f, "NKIT", 4);
	fmt_wr_u32(f + 4, 3);
	f[8] = NK_CNN;
	f[9] = 3;
	fmt_wr_u32(f + 12, 6);
	fmt_wr_u32(f + 16, 6);
	fmt_wr_u32(f + 20, 2);
	fmt_wr_u32(f + 28, 1);
	fmt_wr_u32(f + 32, 1);
	fmt_wr_u32(f + 36, 1);
	fmt_wr_u32(f + 40, count * 4);
	fmt_wr_u32(f + 44, 8);
	n = 48;
	f[n] = NK_DEPTHWISE;
	fmt_wr_u32(f + n + 4, kh);
	fmt_wr_u32(f + n + 8, 1);
	fmt_wr_u32(f + n + 12, 2);
	f[n + 17] = 1; /* pad_h */
	f[n + 18] = 1; /* pad_w */
	f[n + 19] = b;
	n += 24;
	f[n] = 1, f[n + 1] = NK_F32, fmt_wr_u32(f + n + 4, count), fmt_wr_u32(f + n + 20, count);
	n += 24;
	f[n] = 1, f[n + 1] = NK_F32, fmt_wr_u32(f + n + 4, 2), fmt_wr_u32(f + n + 20, 2);
	n += 24;
	n += count * 4 + 8;
	return parse(nm, f, n, buf, e);
}

TEST(nk_depthwise_width_byte)
{
	static const struct { uint32_t kh; uint8_t b; uint32_t count, kw, pb, pr; } cases[] = {
		{ 3, 3, 18, 3, 1, 1 },       /* rule 1: the byte is the width */
		{ 3, 0x01, 18, 3, 2, 1 },    /* rule 2: shipped import_asym_depthwise_conv.nk */
		{ 3, 0x21, 18, 3, 2, 3 },    /* rule 2: both nibbles */
		{ 3, 2, 12, 2, 1, 1 },       /* rule 3: non-square 3x2 */
		{ 2, 0x11, 12, 3, 2, 2 },    /* rule 4: width 3 from the count, nibble pads */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		nk_model nm;
		fmt_err e = { 0 };
		uint32_t *buf;
		fmt_kind k = depthwise_file(cases[i].kh, cases[i].b, cases[i].count, &nm, &buf, &e);
		CHECK_EQ_U64(k, FMT_OK);
		if (k == FMT_OK) {
			CHECK_EQ_U64(nm.layers[0].kw, cases[i].kw);
			CHECK_EQ_U64(nm.layers[0].pad_b, cases[i].pb);
			CHECK_EQ_U64(nm.layers[0].pad_r, cases[i].pr);
			fmt_nk_free(&nm);
		}
		free(buf);
	}
}

TEST(nk_errors_name_the_layer)
{
	nk_model nm;
	fmt_err e = { 0 };
	uint32_t *buf;
	/* 3x3 kernel, 2 channels, but 17 weights: no decoding fits */
	CHECK_EQ_U64(depthwise_file(3, 3, 17, &nm, &buf, &e), FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "layer 0 (depthwise_conv2d): size mismatch in pair 0") != NULL);
	free(buf);
	/* kernel 9 on a 6-high input padded by 1 + 1 */
	CHECK_EQ_U64(depthwise_file(9, 9, 162, &nm, &buf, &e), FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "layer 0 (depthwise_conv2d): kernel height 9 is larger than the padded input (6 + 1 + 1)") != NULL);
	free(buf);
}

/* The work counts saturate at UINT64_MAX (a pooling window of 2^32-1 x 2^32-1 taps over 2^26
 * values is 2^90), and the limit message says "more than" then. */
TEST(nk_work_saturates)
{
	nk_layer layers[3] = { 0 };
	nk_model nm = { .n_layers = 3, .layers = layers };
	layers[0] = (nk_layer){ .kind = NK_FLATTEN };
	layers[1] = (nk_layer){ .kind = NK_MAXPOOL, .kh = UINT32_MAX, .kw = UINT32_MAX,
				.out = { 1u << 13, 1u << 13, 1, 0 } };
	layers[2] = (nk_layer){ .kind = NK_AVGPOOL, .kh = 2, .kw = 2, .out = { 1, 1, 1, 0 } };
	fmt_nk_count_work(&nm);
	CHECK_EQ_U64(layers[0].work, 0);
	CHECK_EQ_U64(layers[1].work, UINT64_MAX);
	CHECK_EQ_U64(layers[2].work, 4);
	CHECK_EQ_U64(nm.work, UINT64_MAX);
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_check_work(&nm, UINT64_MAX - 1, &e), FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "layer 1 (max_pool2d): more than 18446744073709551614 multiply-adds, more than "
		  "18446744073709551614 for the network up to it: above the work limit of 18446744073709551614 "
		  "(--max-work raises it)");
	CHECK_EQ_U64(fmt_nk_check_work(&nm, UINT64_MAX, &e), FMT_OK);
	/* 2^63 + 2^63 overflows the sum: it saturates too */
	layers[1] = (nk_layer){ .kind = NK_MAXPOOL, .kh = 1u << 31, .kw = 1u << 31, .out = { 2, 1, 1, 0 } };
	layers[2] = layers[1];
	fmt_nk_count_work(&nm);
	CHECK_EQ_U64(layers[1].work, 1ull << 63);
	CHECK_EQ_U64(nm.work, UINT64_MAX);
	CHECK_EQ_U64(fmt_nk_check_work(&nm, (1ull << 63) + 5, &e), FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "layer 2 (max_pool2d): 9223372036854775808 multiply-adds, more than 18446744073709551614 for "
		  "the network up to it: above the work limit of 9223372036854775813 (--max-work raises it)");
}
