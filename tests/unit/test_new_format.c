/* Adding a format: the dummy driver (dummy_driver.c, the whole of it) plus one registration is
 * all it takes for the registry, the probe, the messages that list formats, the capability
 * questions, conversion through the neutral model and the conformance suite to know it. The
 * same dry run through the tools, in a copy of the tree: tests/cli/new-format.bats. */
#include <stdlib.h>
#include <unistd.h>
#include "conformance.h"
#include "fmt/registry.h"
#include "unit.h"

extern const fmt_driver fmt_driver_dummy;

static void register_dummy(void)
{
	fmt_err e = { 0 };
	if (!fmt_driver_by_name("dummy"))
		CHECK(fmt_driver_register(&fmt_driver_dummy, &e) == FMT_OK);
}

TEST(new_format_is_known_to_the_registry_once_registered)
{
	char names[512];
	fmt_err e = { 0 };
	register_dummy();
	CHECK(fmt_driver_by_name("dummy") == &fmt_driver_dummy);
	CHECK(fmt_driver_by_extension("out/model.dmy") == &fmt_driver_dummy);
	fmt_driver_names(names, sizeof names);
	CHECK(strstr(names, ", dummy") != NULL);
	fmt_driver_writer_names(names, sizeof names);
	/* the built-in writers in registry order, then the one registered last */
	CHECK(strncmp(names, "safetensors, gguf, apsim", 24) == 0);
	CHECK(strlen(names) > 9 && strcmp(names + strlen(names) - 9, " or dummy") == 0);
	/* The capability questions answer for it from its table alone. */
	CHECK(fmt_driver_holds_dtype(&fmt_driver_dummy, FMT_DT_F32));
	CHECK(!fmt_driver_holds_dtype(&fmt_driver_dummy, FMT_DT_F16));
	CHECK(!fmt_driver_can(&fmt_driver_dummy, FMT_CAP_TYPED_META));
	CHECK(fmt_driver_holding(FMT_DT_Q8_0) == fmt_driver_by_name("gguf"));
	/* Unrecognised input names it among the formats. */
	fmt_model m;
	CHECK(fmt_model_open_memory(&m, "junk", "junk bytes", 10, NULL, &e) == FMT_INVALID_FORMAT);
	CHECK(strstr(e.msg, "dummy") != NULL);
}

/* How many times word stands as a space-separated word in list. */
static int word_count(const char *list, const char *word)
{
	int n = 0;
	size_t len = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += len)
		n += (p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0');
	return n;
}

/* The completion words of --arch: every architecture a driver names, once, however many name it. */
TEST(arch_words_name_each_architecture_once)
{
	char words[1024];
	int archs = 0;
	fmt_driver_arch_words(words, sizeof words);
	for (const fmt_driver *const *d = fmt_drivers(); *d; d++)
		for (const char *const *a = (*d)->archs; a && *a; a++, archs++)
			CHECK(word_count(words, *a) == 1);
	CHECK(archs > 0);
	CHECK(words[0] != ' ' && words[strlen(words) - 1] != ' ' && !strstr(words, "  "));
}

TEST(new_format_converts_through_the_neutral_model)
{
	register_dummy();
	char dir[] = "/tmp/fmtkit-newfmt-XXXXXX", st[64], dmy[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(st, sizeof st, "%s/m.safetensors", dir);
	snprintf(dmy, sizeof dmy, "%s/m.dmy", dir);
	/* A safetensors model with two F32 tensors, written by its driver... */
	static const float w[6] = { 1, 2, 3, 4, 5, 6 };
	fmt_model m, in, back;
	fmt_sink k;
	fmt_err e = { 0 };
	fmt_model_init(&m);
	fmt_tensor t = { .name = "w", .dtype = FMT_DT_F32, .ndim = 2, .shape = { 2, 3 }, .nelems = 6,
			 .nbytes = sizeof w, .source = -1, .data = (const uint8_t *)w };
	CHECK(fmt_model_add_tensor(&m, &t, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_open(&k, st, 0, &e) == FMT_OK);
	CHECK(fmt_driver_by_name("safetensors")->write(&m, &k, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	fmt_model_free(&m);
	/* ...becomes a dummy file chosen by its extension, which the probe recognises. */
	const fmt_driver *to = fmt_driver_by_extension(dmy);
	CHECK(to == &fmt_driver_dummy);
	CHECK(fmt_model_open(&in, st, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_open(&k, dmy, 0, &e) == FMT_OK);
	CHECK(to->write(&in, &k, NULL, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	CHECK(fmt_model_open(&back, dmy, NULL, &e) == FMT_OK);
	CHECK(back.driver == &fmt_driver_dummy);
	CHECK_EQ_U64(back.n_tensors, 1);
	const uint8_t *bytes = NULL;
	uint8_t *to_free = NULL;
	CHECK(fmt_tensor_load(&back, &back.tensors[0], &bytes, &to_free, &e) == FMT_OK);
	CHECK(bytes && memcmp(bytes, w, sizeof w) == 0);
	CHECK(back.tensors[0].shape[0] == 2 && back.tensors[0].shape[1] == 3);
	free(to_free);
	fmt_model_free(&back);
	fmt_model_free(&in);
	unlink(st);
	unlink(dmy);
	rmdir(dir);
}

TEST(new_format_gets_the_conformance_suite)
{
	register_dummy();
	char dir[] = "/tmp/fmtkit-newfmt-XXXXXX", path[256];
	CHECK(mkdtemp(dir) != NULL);
	CHECK(conform_model_sample(&fmt_driver_dummy, dir, path, sizeof path));
	conform_model_driver(&fmt_driver_dummy, path);
	unlink(path);
	rmdir(dir);
}

/* The dummy driver with its errors reported as internal ones: the suite must catch it. */
static fmt_kind brittle_open(fmt_model *m, fmt_err *e)
{
	fmt_kind k = fmt_driver_dummy.open(m, e);
	if (k != FMT_INVALID_FORMAT)
		return k;
	char why[FMT_ERR_MSG_MAX];
	snprintf(why, sizeof why, "%s", e->msg);
	return fmt_fail(e, FMT_INTERNAL, "brittle: %.900s", why);
}

TEST(conformance_suite_catches_a_driver_that_fails_internally)
{
	register_dummy();
	fmt_driver brittle = fmt_driver_dummy;
	brittle.name = "brittle";
	brittle.open = brittle_open;
	char dir[] = "/tmp/fmtkit-newfmt-XXXXXX", path[256];
	CHECK(mkdtemp(dir) != NULL);
	CHECK(conform_model_sample(&fmt_driver_dummy, dir, path, sizeof path));
	unit_failures[0] = '\0';
	unit_quiet = 1;
	conform_model_driver(&brittle, path);
	unit_quiet = 0;
	int caught = unit_current_failed;
	unit_current_failed = 0;
	CHECK(caught);
	CHECK(strstr(unit_failures, "driver brittle: truncated to 0 bytes: internal error: brittle: ") != NULL);
	CHECK(strstr(unit_failures, "driver brittle: byte 0 XOR 0x01: internal error: brittle: no DUMMYFMT magic") != NULL);
	unlink(path);
	rmdir(dir);
}
