/* The conversion planner asks the target format its capability questions once per conversion
 * (its profile), not once per tensor or per branch: a driver registered at run time counts the
 * questions it is asked while fmt-convert's dry run plans models of one and of several tensors. */
#include <stdlib.h>
#include <unistd.h>
#include "fmt/pipeline.h"
#include "fmt/registry.h"
#include "helpers.h"
#include "unit.h"

extern const fmt_driver fmt_driver_dummy;

static unsigned holds_asked[FMT_DT_COUNT];
static unsigned choose_asked, derive_asked, mix_asked;

static int counting_holds(fmt_dtype t)
{
	if (t > FMT_DT_INVALID && t < FMT_DT_COUNT)
		holds_asked[t]++;
	return t == FMT_DT_F32;
}

static fmt_dtype counting_choose(const fmt_tensor *t, fmt_dtype want, const char **why)
{
	(void)t;
	(void)why;
	choose_asked++;
	return want;
}

static fmt_kind counting_derive(fmt_model *out, fmt_dtype requested, const char *mix, const void *options,
			       fmt_err *e)
{
	(void)options;
	(void)out;
	(void)requested;
	(void)mix;
	(void)e;
	derive_asked++;
	return FMT_OK;
}

/* A format with per-tensor rules (GGUF's presets) is asked for them once per conversion with
 * a --dtype; this one has none to offer. */
static fmt_kind counting_mix(const fmt_model *m, const fmt_model *meta, const char *name, const void *options,
			     fmt_mix_entry *entries, const char **mix, char *note, size_t note_n, fmt_err *e)
{
	(void)note_n;
	note[0] = '\0';
	(void)m;
	(void)meta;
	(void)name;
	(void)options;
	(void)entries;
	(void)e;
	mix_asked++;
	*mix = NULL;
	return FMT_OK;
}

/* Never claims a file (its files are dummy files, which the dummy driver probes). */
static int counting_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	(void)head;
	(void)n;
	(void)file_size;
	return 0;
}

static const fmt_driver *counting_driver(void)
{
	static fmt_driver d;
	const fmt_driver *known = fmt_driver_by_name("counting");
	if (known)
		return known;
	d = fmt_driver_dummy;
	d.name = "counting";
	d.extension = ".counting";
	d.title = "counting";
	d.probe = counting_probe;
	d.holds_dtype = counting_holds;
	d.choose_dtype = counting_choose;
	d.derive_meta = counting_derive;
	d.mix_dtypes = counting_mix;
	fmt_err e = { 0 };
	CHECK(fmt_driver_register(&d, &e) == FMT_OK);
	return &d;
}

static void reset_counts(void)
{
	memset(holds_asked, 0, sizeof holds_asked);
	choose_asked = derive_asked = mix_asked = 0;
}

/* dir/NAME.safetensors with n tensors: F32, F16 and BF16 by turns, 2x3 each. */
static void write_input(const char *path, size_t n)
{
	static const float f32[6] = { 1, 2, 3, 4, 5, 6 };
	static const uint16_t f16[6] = { 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600 };
	static const uint16_t bf16[6] = { 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0 };
	static const uint64_t shape[2] = { 2, 3 };
	fmt_model m;
	fmt_sink k;
	fmt_err e = { 0 };
	char names[8][8];
	fmt_model_init(&m);
	for (size_t i = 0; i < n && i < 8; i++) {
		snprintf(names[i], sizeof names[i], "t%zu", i);
		if (i % 3 == 0)
			unit_add_tensor(&m, names[i], FMT_DT_F32, 2, shape, f32, sizeof f32);
		else
			unit_add_tensor(&m, names[i], i % 3 == 1 ? FMT_DT_F16 : FMT_DT_BF16, 2, shape,
					i % 3 == 1 ? f16 : bf16, sizeof f16);
	}
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(fmt_driver_by_name("safetensors")->write(&m, &k, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	fmt_model_free(&m);
}

/* The dry run's JSON plan of input converted to the counting format with --dtype dtype (NULL:
 * none), counting the questions; malloc'd. */
static char *dry_run(const fmt_driver *to, const char *input, const char *output, const char *dtype)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len), *err = fopen("/dev/null", "w");
	CHECK(out && err);
	fmt_convert_opts o = { .to = to, .dtype = dtype, .dry_run = 1, .json = 1, .quiet = 1, .no_progress = 1,
			       .threads = 1, .tool = "fmt-convert", .out = out, .err = err };
	fmt_err e = { 0 };
	reset_counts();
	CHECK(fmt_pipeline_run(input, output, &o, &e) == FMT_OK);
	fclose(out);
	fclose(err);
	return text;
}

/* Each dtype asked about once, whatever the number of tensors: the dtypes asked otherwise
 * ("F16 x6 F32 x0 ...") are none. */
static void check_asked_once(void)
{
	char other[1024] = "";
	for (int t = FMT_DT_INVALID + 1; t < FMT_DT_COUNT; t++) {
		size_t used = strlen(other);
		if (holds_asked[t] != 1)
			snprintf(other + used, sizeof other - used, "%s x%u ", fmt_dtype_name((fmt_dtype)t),
				 holds_asked[t]);
	}
	CHECK_STR(other, "");
	CHECK_EQ_U64(derive_asked, 1);
}

TEST(plan_asks_the_target_profile_once_per_conversion)
{
	const fmt_driver *to = counting_driver();
	char dir_buf[64], *dir = unit_scratch_dir(dir_buf), one[128], six[128], output[128];
	CHECK(dir != NULL);
	if (!dir)
		return;
	snprintf(one, sizeof one, "%s/one.safetensors", dir);
	snprintf(six, sizeof six, "%s/six.safetensors", dir);
	snprintf(output, sizeof output, "%s/out.counting", dir);
	write_input(one, 1);
	write_input(six, 6);

	/* keep: the F16 and BF16 tensors become F32, which the target holds */
	char *plan = dry_run(to, one, output, NULL);
	check_asked_once();
	CHECK_EQ_U64(choose_asked, 0);
	CHECK_EQ_U64(mix_asked, 0);   /* nothing asked that a mix could answer */
	CHECK(plan && strstr(plan, "\"tensor_count\":1,") != NULL);
	free(plan);
	plan = dry_run(to, six, output, NULL);
	check_asked_once();
	CHECK_EQ_U64(choose_asked, 0);
	CHECK(plan && strstr(plan, "\"tensor_count\":6,") != NULL);
	CHECK(plan && strstr(plan, "{\"name\":\"t1\",\"from\":\"F16\",\"to\":\"F32\",\"bytes\":24,"
				   "\"note\":\"the target cannot hold this dtype\"}") != NULL);
	CHECK(plan && strstr(plan, "{\"name\":\"t5\",\"from\":\"BF16\",\"to\":\"F32\",\"bytes\":24,"
				   "\"note\":\"the target cannot hold this dtype\"}") != NULL);
	free(plan);

	/* --dtype f32: the format's own choice is a question about each tensor, asked once each */
	plan = dry_run(to, six, output, "f32");
	check_asked_once();
	CHECK_EQ_U64(choose_asked, 6);
	CHECK_EQ_U64(mix_asked, 1);
	CHECK(plan && strstr(plan, "{\"name\":\"t4\",\"from\":\"F16\",\"to\":\"F32\",\"bytes\":24}") != NULL);
	free(plan);
	CHECK(access(output, F_OK) != 0);   /* a dry run writes nothing */
	unit_rm_dir(dir);
}
