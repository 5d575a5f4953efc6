/* The int8 writer (libcommon/formats/nk/nk_quant.c): per-channel weight scales and codes with
 * their edge cases (a row of zeros, halves rounded to even), asymmetric activation parameters
 * from ranges, biases, the QUAN block read back by the loader, and what has no int8 form. */
#include <math.h>
#include <stdlib.h>
#include "fmt/io.h"
#include "fmt/nk.h"
#include "unit.h"

/* A float MLP 2 -> 3 (one dense of act) parsed into *nm from *bytes (aligned, owned). */
static void mlp_2_3(unsigned act, const float w[6], const float b[3], nk_model *nm, uint32_t **bytes)
{
	nk_spec s = { .network = NK_MLP, .input_shape = { 1, 2 } };
	fmt_err e;
	nk_spec_layer l = { .kind = NK_DENSE, .units = 3, .act = (uint8_t)act, .alpha = 0.01f };
	uint32_t wdims[4] = { 3, 2 }, bdims[4] = { 3 };
	CHECK_EQ_U64(fmt_nk_spec_add_layer(&s, &l, &e), FMT_OK);
	nk_spec_tensor wt = fmt_nk_spec_tensor(2, wdims), bt = fmt_nk_spec_tensor(1, bdims);
	memcpy(wt.data, w, 6 * sizeof(float));
	memcpy(bt.data, b, 3 * sizeof(float));
	CHECK_EQ_U64(fmt_nk_spec_add_pair(&s, &wt, &bt, &e), FMT_OK);
	uint8_t *out;
	size_t n;
	CHECK_EQ_U64(fmt_nk_write_bytes(&s, &out, &n, &e), FMT_OK);
	*bytes = calloc(n / 4 + 1, 4);
	memcpy(*bytes, out, n);
	free(out);
	fmt_nk_spec_free(&s);
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
	fmt_err e;
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
	fmt_err e;
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
	fmt_err e;
	return fmt_read_file(path, 1u << 24, &d, n, &e) == FMT_OK ? d : NULL;
}

TEST(nk_quant_upstream_bytes_from_its_activation_scales)
{
	/* Upstream's mnist_cnn_dw_int8.nk was calibrated on MNIST training images fmtkit does not
	 * have; given ranges that make its activation scales, the float twin quantizes to its bytes:
	 * all of them up to its test block, but for the tests flags. */
	size_t nf, n8, nq;
	char *f = fixture("tests/data/fixtures/nk/mnist_cnn_dw.nk", &nf);
	char *u = fixture("tests/data/fixtures/nk/mnist_cnn_dw_int8.nk", &n8);
	CHECK(f && u);
	nk_model nm, up;
	fmt_err e;
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
