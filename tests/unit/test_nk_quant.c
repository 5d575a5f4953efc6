/* The int8 writer (libcommon/formats/nk/nk_quant.c): per-channel weight scales and codes with
 * their edge cases (a row of zeros, halves rounded to even), asymmetric activation parameters
 * from ranges, biases, the QUAN block read back by the loader, and what has no int8 form. */
#include <math.h>
#include <stdlib.h>
#include "fmt/io.h"
#include "fmt/nk.h"
#include "fmt/nkrt.h"
#include "unit.h"

/* The .nk bytes (aligned, owned) of a float network of one layer l with weights w of dims
 * wdims (rank wrank) and biases b, over input_shape; *n their size. */
static uint32_t *one_layer_net(uint8_t network, const uint32_t input_shape[3], const nk_spec_layer *l,
			       uint8_t wrank, const uint32_t wdims[4], const float *w, const float *b, size_t *n)
{
	nk_spec s = { .network = network, .input_shape = { input_shape[0], input_shape[1], input_shape[2] } };
	fmt_err e = { 0 };
	uint32_t bdims[4] = { l->units };
	CHECK_EQ_U64(fmt_nk_spec_add_layer(&s, l, &e), FMT_OK);
	nk_spec_tensor wt = fmt_nk_spec_tensor(wrank, wdims), bt = fmt_nk_spec_tensor(1, bdims);
	memcpy(wt.data, w, wt.count * sizeof(float));
	memcpy(bt.data, b, bt.count * sizeof(float));
	CHECK_EQ_U64(fmt_nk_spec_add_pair(&s, &wt, &bt, &e), FMT_OK);
	uint8_t *out;
	CHECK_EQ_U64(fmt_nk_write_bytes(&s, &out, n, &e), FMT_OK);
	uint32_t *bytes = calloc(*n / 4 + 1, 4);
	memcpy(bytes, out, *n);
	free(out);
	fmt_nk_spec_free(&s);
	return bytes;
}

/* A float MLP 2 -> 3 (one dense of act) parsed into *nm from *bytes (aligned, owned). */
static void mlp_2_3(unsigned act, const float w[6], const float b[3], nk_model *nm, uint32_t **bytes)
{
	static const uint32_t input[3] = { 1, 2 }, wdims[4] = { 3, 2 };
	nk_spec_layer l = { .kind = NK_DENSE, .units = 3, .act = (uint8_t)act, .alpha = 0.01f };
	size_t n;
	fmt_err e = { 0 };
	*bytes = one_layer_net(NK_MLP, input, &l, 2, wdims, w, b, &n);
	CHECK_EQ_U64(fmt_nk_parse(nm, *bytes, n, &e), FMT_OK);
}

TEST(nk_quant_mlp_codes_scales_and_params)
{
	/* row 0 all zero: scale 1, codes 0; row 1: scale 1, -63.5 -> -64 (half to even);
	 * row 2: scale 2, 1 / 2 = 0.5 -> 0 */
	static const float w[6] = { 0, 0, 127, -63.5f, -254, 1 }, b[3] = { 0, 0, 0 };
	nk_model nm, nq;
	uint32_t *fb;
	mlp_2_3(NK_ACT_NONE, w, b, &nm, &fb);
	nk_range in = { -1, 3 }, out = { -2, 6 };
	uint8_t *q;
	size_t n;
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_write_int8(&nm, in, &out, &q, &n, &e), FMT_OK);
	CHECK_EQ_U64(fmt_nk_parse(&nq, q, n, &e), FMT_OK);
	CHECK_EQ_U64(nq.version, 4);
	CHECK_EQ_U64(nq.flags, NK_FLAG_QUANT);
	CHECK_EQ_U64(nq.weights[0].dtype, NK_I8);
	CHECK_EQ_U64(nq.biases[0].dtype, NK_I32);
	static const int8_t codes[6] = { 0, 0, 127, -64, -127, 0 };
	CHECK_MEM(nq.weights[0].data, codes, 6);
	const nk_quant *r = &nq.quant[0];
	/* inputs -1..3: scale 4/255, zero point -128 - round(-63.75) = -64; outputs -2..6 likewise */
	CHECK(r->in_scale == (float)(4.0 / 255.0));
	CHECK_EQ_U64((uint64_t)(int64_t)r->in_zp, (uint64_t)(int64_t)-64);
	CHECK(r->out_scale == (float)(8.0 / 255.0));
	CHECK_EQ_U64((uint64_t)(int64_t)r->out_zp, (uint64_t)(int64_t)-64);
	CHECK_EQ_U64(r->n_scales, 3);
	CHECK(r->scales[0] == 1.0f && r->scales[1] == 1.0f && r->scales[2] == 2.0f);
	CHECK(r->w_scale == 2.0f);
	CHECK(r->b_scale == r->in_scale);
	CHECK_EQ_U64(nq.weights_bytes, 8);   /* six codes and two bytes of tail pad */
	fmt_nk_free(&nq);
	free(q);
	/* a range of zeros: scale 1, zero point -128 */
	in = (nk_range){ 0, 0 };
	CHECK_EQ_U64(fmt_nk_write_int8(&nm, in, &out, &q, &n, &e), FMT_OK);
	CHECK_EQ_U64(fmt_nk_parse(&nq, q, n, &e), FMT_OK);
	CHECK(nq.quant[0].in_scale == 1.0f);
	CHECK_EQ_U64((uint64_t)(int64_t)nq.quant[0].in_zp, (uint64_t)(int64_t)-128);
	fmt_nk_free(&nq);
	free(q);
	fmt_nk_free(&nm);
	free(fb);
}

TEST(nk_quant_biases_and_refusals)
{
	static const float w[6] = { 1, 1, 1, 1, 1, 1 }, b[3] = { -3.0f / 127.0f, 0, 1e30f };
	nk_model nm;
	uint32_t *fb;
	mlp_2_3(NK_ACT_RELU, w, b, &nm, &fb);
	nk_range in = { 0, 255 }, out = { 0, 1 };
	uint8_t *q = NULL;
	size_t n = 0;
	fmt_err e = { 0 };
	/* input scale 1, weight scales 1/127: 1e30 does not fit int32 */
	CHECK_EQ_U64(fmt_nk_write_int8(&nm, in, &out, &q, &n, &e), FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "weight tensor 0: bias 2 at scale 0.00787402 does not fit int32");
	CHECK(q == NULL);
	fmt_nk_free(&nm);
	free(fb);
	/* a sigmoid has no int8 form; nor has an int8 network */
	mlp_2_3(NK_ACT_SIGMOID, w, b, &nm, &fb);
	CHECK_EQ_U64(fmt_nk_int8_check(&nm, &e), FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "layer 0 (dense, sigmoid): an int8 MLP layer is linear or relu (softmax: the last)");
	nm.quantized = 1;
	CHECK_EQ_U64(fmt_nk_int8_check(&nm, &e), FMT_UNSUPPORTED);
	fmt_nk_free(&nm);
	free(fb);
}

/* The whole of a fixture file, or NULL. */
static char *fixture(const char *path, size_t *n)
{
	char *d = NULL;
	fmt_err e = { 0 };
	return fmt_read_file(path, 1u << 24, &d, n, &e) == FMT_OK ? d : NULL;
}

TEST(nk_quant_upstream_bytes_from_its_activation_scales)
{
	/* Upstream's mnist_cnn_dw_int8.nk was calibrated on MNIST training images (the interop
	 * test nk_mnist_quant calibrates on them); given ranges that make its activation scales,
	 * the float twin quantizes to its bytes: all of them up to its test block, but for the
	 * tests flags. */
	size_t nf, n8, nq;
	char *f = fixture("tests/data/fixtures/nk/mnist_cnn_dw.nk", &nf);
	char *u = fixture("tests/data/fixtures/nk/mnist_cnn_dw_int8.nk", &n8);
	CHECK(f && u);
	nk_model nm, up;
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_parse(&nm, f, nf, &e), FMT_OK);
	CHECK_EQ_U64(fmt_nk_parse(&up, u, n8, &e), FMT_OK);
	nk_range out[6], in = { 0, 1 };   /* pixels: scale 1/255, zero point -128 */
	CHECK_EQ_U64(up.n_quant, 6);
	for (int k = 0; k < 6; k++) {
		out[k] = (nk_range){ 0, (float)((double)up.quant[k].out_scale * 255.0) };
		CHECK((float)((double)out[k].hi / 255.0) == up.quant[k].out_scale || k == 5);
	}
	uint8_t *q;
	CHECK_EQ_U64(fmt_nk_write_int8(&nm, in, out, &q, &nq, &e), FMT_OK);
	CHECK_EQ_U64(nq, up.tcas_offset);
	CHECK_MEM(q, u, 10);
	CHECK_EQ_U64(q[10] | q[11] << 8, NK_FLAG_QUANT);   /* upstream's 0x7 less its tests' bits */
	CHECK_MEM(q + 12, u + 12, nq - 12);
	free(q);
	fmt_nk_free(&nm);
	fmt_nk_free(&up);
	free(f);
	free(u);
}

/* The output scale fmt_nk_quantize gives the one-layer network net[0..n) calibrated on the
 * one input x. */
static float calibrated_out_scale(const uint32_t *net, size_t n, const double *x, size_t count)
{
	nk_embed_case c = { .name = "x", .name_len = 1, .label = -1, .values = x, .n = count };
	nk_embed_set cal = { .cases = &c, .n = 1 };
	nk_quant_report r;
	uint8_t *q;
	size_t nq;
	nk_model m;
	fmt_err e = { 0 };
	fmt_kind k = fmt_nk_quantize(net, n, &cal, &q, &nq, &r, &e);
	CHECK_STR(k == FMT_OK ? "" : e.msg, "");
	if (k != FMT_OK)
		return NAN;
	CHECK_EQ_U64(fmt_nk_parse(&m, q, nq, &e), FMT_OK);
	float scale = m.quant[0].out_scale;
	fmt_nk_free(&m);
	free(q);
	return scale;
}

TEST(nk_quant_calibration_arithmetic_is_upstreams)
{
	/* Upstream's calibration adds each convolution product rounded to float32 to a float32 sum:
	 * 1, then round(x1 w1) = 2^-24 (x1 w1 is a little over it) and 2^-24, each a tie that leaves
	 * 1. Fused multiply-adds give 1 + 2^-22, a double sum 1 + 2^-23: other output scales. */
	static const uint32_t img[3] = { 1, 1, 3 }, cdims[4] = { 1, 1, 1, 3 };
	const float cw[3] = { 1, 0x1p-24f * (1 - 0x1p-11f + 0x1p-22f), 0x1p-24f }, cb[1] = { 0 };
	const double cx[3] = { 1, 1 + 0x1p-11, 1 };
	nk_spec_layer conv = { .kind = NK_CONV2D, .kh = 1, .kw = 1, .stride = 1, .units = 1, .alpha = 0.01f };
	size_t n;
	uint32_t *net = one_layer_net(NK_CNN, img, &conv, 4, cdims, cw, cb, &n);
	CHECK(fmaf(1, cw[2], fmaf((float)cx[1], cw[1], 1.0f)) == 1 + 0x1p-22f);
	CHECK((float)(1.0 + (double)(float)cx[1] * cw[1] + 0x1p-24) == 1 + 0x1p-23f);
	CHECK((float)(1 / 255.0) != (float)((1 + 0x1p-23) / 255.0));
	CHECK(calibrated_out_scale(net, n, cx, 3) == (float)(1 / 255.0));
	free(net);
	/* and sums a dense layer's products exactly (in double): 1 + 2^-24 + 2^-24 is 1 + 2^-23,
	 * where float32 in order (each a tie to 1) gives 1 */
	static const uint32_t row[3] = { 1, 3 }, ddims[4] = { 1, 3 };
	const float dw[3] = { 1, 1, 1 }, db[1] = { 0 };
	const double dx[3] = { 1, 0x1p-24, 0x1p-24 };
	nk_spec_layer dense = { .kind = NK_DENSE, .units = 1, .alpha = 0.01f };
	net = one_layer_net(NK_MLP, row, &dense, 2, ddims, dw, db, &n);
	CHECK(calibrated_out_scale(net, n, dx, 3) == (float)((1 + 0x1p-23) / 255.0));
	free(net);
}

TEST(nk_quant_signed_range_as_upstreams_tflite_reference)
{
	/* The one signed range upstream shows: the logits of mnist_cnn_dw on x_train[:128] span
	 * -22.999523 .. 24.670221 (this calibration arithmetic), and the TFLite file upstream
	 * aligned its int8 MNIST networks with (benchmark/tflm/generated/
	 * mnist_cnn_dw_int8_tflite_quant.json, the last op's output) has scale 0.18694018 and zero
	 * point -5 for them: what (hi - lo) / 255 and -128 - round(lo / scale) give. */
	static const float w[6] = { 1, 0, 0, 1, 1, 1 }, b[3] = { 0, 0, 0 };
	nk_model nm, nq;
	uint32_t *fb;
	mlp_2_3(NK_ACT_NONE, w, b, &nm, &fb);
	nk_range in = { 0, 1 }, out = { -0x1.6ffe0cp+4f, 0x1.8ab93ap+4f };
	uint8_t *q;
	size_t n;
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_nk_write_int8(&nm, in, &out, &q, &n, &e), FMT_OK);
	CHECK_EQ_U64(fmt_nk_parse(&nq, q, n, &e), FMT_OK);
	CHECK(nq.quant[0].out_scale == 0.18694017827510834f);
	CHECK_EQ_U64((uint64_t)(int64_t)nq.quant[0].out_zp, (uint64_t)(int64_t)-5);
	fmt_nk_free(&nq);
	free(q);
	fmt_nk_free(&nm);
	free(fb);
}

TEST(nk_quant_calibration_windows_with_padding_and_stride)
{
	/* 3x3 windows, stride 2, padding 1 over a 3x3x2 input (channel 0: 1..9, channel 1: ten
	 * times it), in integers (exact in any order): the largest outputs, 374 for the conv2d
	 * (weights 1..9 on channel 0, 1 on channel 1) and 1860 for the depthwise (channel 1's 9..1),
	 * make the output scales. */
	static const uint32_t img[3] = { 3, 3, 2 }, cdims[4] = { 1, 3, 3, 2 }, ddims[4] = { 2, 3, 3 };
	double x[18];
	float cw[18], dw[18];
	const float b[2] = { 0, 0 };
	for (int i = 0; i < 9; i++) {
		x[2 * i] = i + 1;
		x[2 * i + 1] = 10 * (i + 1);
		cw[2 * i] = (float)(i + 1);
		cw[2 * i + 1] = 1;
		dw[i] = (float)(i + 1);
		dw[9 + i] = (float)(9 - i);
	}
	nk_spec_layer l = { .kind = NK_CONV2D, .kh = 3, .kw = 3, .stride = 2, .pad_t = 1, .pad_l = 1, .pad_b = 1,
			    .pad_r = 1, .units = 1, .alpha = 0.01f };
	size_t n;
	uint32_t *net = one_layer_net(NK_CNN, img, &l, 4, cdims, cw, b, &n);
	CHECK(calibrated_out_scale(net, n, x, 18) == (float)(374 / 255.0));
	free(net);
	l.kind = NK_DEPTHWISE;
	l.units = 2;
	net = one_layer_net(NK_CNN, img, &l, 3, ddims, dw, b, &n);
	CHECK(calibrated_out_scale(net, n, x, 18) == (float)(1860 / 255.0));
	free(net);
}
