/* The .nk writer (libcommon/formats/nk/nk_write.c) and the packager passes (nk_optimize.c): the
 * §16.1 example written byte for byte, a depthwise conv's asymmetric pads in its width byte and
 * read back by the loader, fields that do not fit refused, and each pass's arithmetic. */
#include <stdlib.h>
#include "fmt/nk.h"
#include "unit.h"

extern const uint8_t unit_nk_example[136];

static void add_layer_pair(nk_spec *s, nk_spec_layer l, uint8_t wrank, const uint32_t wdims[4], const float *w,
			   uint32_t nb, const float *b)
{
	fmt_err e = { 0 };
	uint32_t bdims[4] = { nb };
	CHECK_EQ_U64(fmt_nk_spec_add_layer(s, &l, &e), FMT_OK);
	nk_spec_tensor wt = fmt_nk_spec_tensor(wrank, wdims), bt = fmt_nk_spec_tensor(1, bdims);
	memcpy(wt.data, w, wt.count * sizeof(float));
	memcpy(bt.data, b, nb * sizeof(float));
	CHECK_EQ_U64(fmt_nk_spec_add_pair(s, &wt, &bt, &e), FMT_OK);
}

TEST(nk_write_example_16_1)
{
	/* specs/nk.md §16.1 (test_nk.c): MLP 2 -> 2, W = [[1,2],[3,4]], b = [0.5, -0.5], 136 bytes */
	nk_spec s = { .network = NK_MLP, .input_shape = { 1, 2 } };
	static const float w[4] = { 1, 2, 3, 4 }, b[2] = { 0.5f, -0.5f };
	static const uint32_t dims[4] = { 2, 2 };
	add_layer_pair(&s, (nk_spec_layer){ .kind = NK_DENSE, .units = 2, .alpha = 0.01f }, 2, dims, w, 2, b);
	uint8_t *out;
	size_t n;
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_write_bytes(&s, &out, &n, &e), FMT_OK);
	CHECK_EQ_U64(n, sizeof unit_nk_example);
	CHECK_MEM(out, unit_nk_example, sizeof unit_nk_example);
	free(out);
	fmt_nk_spec_free(&s);
}

TEST(nk_write_depthwise_asymmetric_pads_read_back)
{
	nk_spec s = { .network = NK_CNN, .input_shape = { 6, 6, 2 } };
	float w[18] = { 0 }, b[2] = { 0 };
	static const uint32_t dims[4] = { 2, 3, 3 };
	nk_spec_layer l = { .kind = NK_DEPTHWISE, .kh = 3, .kw = 3, .stride = 1, .units = 2, .alpha = 0.01f,
			    .pad_t = 1, .pad_l = 1, .pad_b = 2, .pad_r = 1 };
	add_layer_pair(&s, l, 3, dims, w, 2, b);
	uint8_t *out;
	size_t n;
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_write_bytes(&s, &out, &n, &e), FMT_OK);
	CHECK_EQ_U64(out[48 + 19], 0x01);   /* the width byte holds the bottom pad's extra 1 */
	nk_model nm;
	uint32_t *aligned = calloc(n / 4 + 1, 4);
	memcpy(aligned, out, n);
	CHECK_EQ_U64(fmt_nk_parse(&nm, aligned, n, &e), FMT_OK);
	CHECK_EQ_U64(nm.layers[0].kw, 3);
	CHECK_EQ_U64(nm.layers[0].pad_b, 2);
	CHECK_EQ_U64(nm.layers[0].pad_r, 1);
	CHECK_EQ_U64(nm.output.h, 7);
	fmt_nk_free(&nm);
	free(aligned);
	free(out);
	/* 16 more at the bottom does not fit the nibble */
	s.layers[0].pad_b = 17;
	CHECK_EQ_U64(fmt_nk_write_bytes(&s, &out, &n, &e), FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "layer 0 (depthwise_conv2d): a pad, kernel or stride does not fit its .nk field (pads up "
		  "to 255, bottom/right at most 15 more than top/left)");
	fmt_nk_spec_free(&s);
}

TEST(nk_optimize_folds_and_merges)
{
	/* conv 1x1 (2 -> 2) then batch norm: folded, w * scale, b * scale + shift */
	nk_spec s = { .network = NK_CNN, .input_shape = { 1, 1, 2 } };
	static const float cw[4] = { 1, 2, 3, 4 }, cb[2] = { 0.5f, -1 }, scale[2] = { 2, 0.25f }, shift[2] = { 1, 3 };
	static const uint32_t cdims[4] = { 2, 1, 1, 2 }, bdims[4] = { 2 };
	add_layer_pair(&s, (nk_spec_layer){ .kind = NK_CONV2D, .kh = 1, .kw = 1, .stride = 1, .units = 2 }, 4, cdims,
		       cw, 2, cb);
	add_layer_pair(&s, (nk_spec_layer){ .kind = NK_BATCHNORM, .units = 2 }, 1, bdims, scale, 2, shift);
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_optimize(&s, &e), FMT_OK);
	CHECK_EQ_U64(s.n_layers, 1);
	CHECK_EQ_U64(s.n_pairs, 1);
	CHECK(s.weights[0].data[1] == 4.0f && s.weights[0].data[3] == 1.0f);
	CHECK(s.biases[0].data[0] == 2.0f && s.biases[0].data[1] == 2.75f);
	fmt_nk_spec_free(&s);

	/* dense (no activation) then dense: W2 W1, W2 b1 + b2; an identity batch norm goes */
	nk_spec m = { .network = NK_MLP, .input_shape = { 1, 2 } };
	static const float w1[4] = { 1, 0, 0, 2 }, b1[2] = { 1, 1 }, w2[2] = { 3, 4 }, b2[1] = { 0.5f };
	static const uint32_t d1[4] = { 2, 2 }, d2[4] = { 1, 2 };
	add_layer_pair(&m, (nk_spec_layer){ .kind = NK_DENSE, .units = 2 }, 2, d1, w1, 2, b1);
	add_layer_pair(&m, (nk_spec_layer){ .kind = NK_DENSE, .units = 1, .act = NK_ACT_RELU }, 2, d2, w2, 1, b2);
	CHECK_EQ_U64(fmt_nk_optimize(&m, &e), FMT_OK);
	CHECK_EQ_U64(m.n_layers, 1);
	CHECK_EQ_U64(m.layers[0].act, NK_ACT_RELU);
	CHECK_EQ_U64(m.weights[0].dims[0], 1);
	CHECK_EQ_U64(m.weights[0].dims[1], 2);
	CHECK(m.weights[0].data[0] == 3.0f && m.weights[0].data[1] == 8.0f);
	CHECK(m.biases[0].data[0] == 7.5f);
	fmt_nk_spec_free(&m);
}
