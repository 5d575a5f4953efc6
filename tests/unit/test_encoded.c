/* Encoded tensors in the neutral model: codes + scales (named in the record) + a zero point,
 * decoded on read, as .nk's int8 weights need them; writers that store no zero point or name
 * scales their own way refuse what they cannot hold, and the quantizers name their scales. */
#include <stdlib.h>
#include <unistd.h>
#include "fmt/apsim.h"
#include "fmt/qtensor.h"
#include "fmt/registry.h"
#include "helpers.h"
#include "unit.h"

static const int8_t codes[8] = { 3, 4, 5, 2, -128, 127, 3, 0 };
static const float row_scales[2] = { 0.5f, 2.0f };

/* w: int8 codes [2, 4], one scale per row in "w.scale", zero point 3 (as a .nk driver builds). */
static void nk_style_model(fmt_model *m, int32_t zero_point)
{
	fmt_err e = { 0 };
	fmt_model_init(m);
	unit_add_tensor(m, "w", FMT_DT_I8, 2, (const uint64_t[]){ 2, 4 }, codes, sizeof codes);
	unit_add_tensor(m, "w.scale", FMT_DT_F32, 2, (const uint64_t[]){ 2, 1 }, row_scales, sizeof row_scales);
	fmt_qtensor q = { .name = (char *)"w", .scales = (char *)"w.scale", .zero_point = zero_point,
			  .format = FMT_Q_INT8, .axis = 0, .ndim = 2, .shape = { 2, 4 }, .scale_shape = { 2, 1 } };
	CHECK(fmt_model_add_qtensor(m, &q, &e) == FMT_OK);
}

TEST(encoded_tensor_decodes_with_named_scales_and_zero_point)
{
	fmt_model m, out;
	fmt_err e = { 0 };
	nk_style_model(&m, 3);
	CHECK_STR(m.qtensors[0].scales, "w.scale");
	fmt_model_init(&out);
	CHECK(fmt_model_add_dequantized(&out, &m, &m.qtensors[0], NULL, &e) == FMT_OK);
	const uint8_t *bytes;
	uint8_t *to_free = NULL;
	CHECK(fmt_tensor_load(&out, &out.tensors[0], &bytes, &to_free, &e) == FMT_OK);
	float got[8], want[8];
	memcpy(got, bytes, sizeof got);
	for (int i = 0; i < 8; i++)
		want[i] = (float)(codes[i] - 3) * row_scales[i / 4];
	CHECK(memcmp(got, want, sizeof got) == 0);
	CHECK(got[0] == 0.0f && got[1] == 0.5f && got[4] == -262.0f && got[5] == 248.0f);
	free(to_free);
	fmt_model_free(&out);
	fmt_model_free(&m);
}

TEST(encoded_tensor_zero_point_rules)
{
	fmt_model m;
	fmt_err e = { 0 };
	nk_style_model(&m, 3);
	fmt_qtensor q = m.qtensors[0];
	const fmt_tensor *c = fmt_model_find_tensor(&m, "w"), *s = fmt_model_find_tensor(&m, "w.scale");
	CHECK(fmt_qtensor_check(&q, c, s, &e) == FMT_OK);
	q.zero_point = 128;
	CHECK(fmt_qtensor_check(&q, c, s, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "zero point 128 is outside the int8 codes") != NULL);
	q.zero_point = 1;
	q.format = FMT_Q_FP8;
	CHECK(fmt_qtensor_check(&q, c, s, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "fp8 codes have no zero point") != NULL);
	/* Named scales that are not there. */
	q = m.qtensors[0];
	CHECK(fmt_qtensor_check(&q, c, NULL, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "scales tensor 'w.scale' is missing") != NULL);
	/* Only the canonical form maps onto ggml blocks or is stored by encoded-tensor writers. */
	CHECK(!fmt_qtensor_canonical(&q));
	q.zero_point = 0;
	CHECK(!fmt_qtensor_canonical(&q));
	q.scales = NULL;
	CHECK(fmt_qtensor_canonical(&q));
	fmt_model_free(&m);
}

TEST(encoded_tensor_writers_refuse_what_they_cannot_hold)
{
	char dir[] = "/tmp/fmtkit-encoded-XXXXXX", path[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/w.apsim", dir);
	fmt_model m;
	fmt_sink k;
	fmt_err e = { 0 };
	nk_style_model(&m, 3);
	CHECK(fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_driver_apsim.write(&m, &k, NULL, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "encoded tensor 'w': .apsim stores no zero point") != NULL);
	fmt_sink_abort(&k);
	CHECK(access(path, F_OK) != 0);
	fmt_model_free(&m);
	rmdir(dir);
}

TEST(encoded_tensor_quantizers_name_their_scales)
{
	static const float vals[64] = { 1.0f, -2.0f, 3.0f };
	fmt_model in, out;
	fmt_qtensor plan;
	fmt_err e = { 0 };
	fmt_model_init(&in);
	fmt_model_init(&out);
	unit_add_tensor(&in, "v", FMT_DT_F32, 1, (const uint64_t[]){ 64 }, vals, sizeof vals);
	CHECK(fmt_qtensor_plan(&in.tensors[0], FMT_Q_INT4, &plan, &e) == FMT_OK);
	CHECK(fmt_model_add_quantized(&out, &in, &in.tensors[0], &plan, NULL, &e) == FMT_OK);
	CHECK_EQ_U64(out.n_qtensors, 1);
	CHECK_STR(out.qtensors[0].scales, "v__qscale");
	CHECK(out.qtensors[0].zero_point == 0);
	CHECK(fmt_model_find_tensor(&out, "v__qscale") != NULL);
	CHECK(fmt_qtensor_canonical(&out.qtensors[0]));
	fmt_model_free(&out);
	fmt_model_free(&in);
}
