/* fmt_nameset (core/nameset.c) and the model's look-ups by name through it (tensor/model.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/model.h"
#include "fmt/nameset.h"
#include "fmt/qtensor.h"
#include "unit.h"

TEST(nameset_ordinals_duplicates_prefixes_and_growth)
{
	fmt_nameset s = { 0 };
	CHECK_EQ_U64(fmt_nameset_find(&s, "a") == -1, 1);
	static char names[10000][8];
	for (int i = 0; i < 10000; i++) {
		snprintf(names[i], sizeof names[i], "n%d", i);
		CHECK_EQ_U64(fmt_nameset_add(&s, names[i]), 1);
	}
	CHECK_EQ_U64(fmt_nameset_add(&s, "n17"), 0);   /* a copy of a name held: there already */
	CHECK_EQ_U64(s.used, 10000);
	for (int i = 0; i < 10000; i += 997)
		CHECK_EQ_U64((uint64_t)fmt_nameset_find(&s, names[i]), (uint64_t)i);
	CHECK_EQ_U64(fmt_nameset_find(&s, "n10000") == -1, 1);
	CHECK_EQ_U64(fmt_nameset_find(&s, "") == -1, 1);
	CHECK_EQ_U64((uint64_t)fmt_nameset_find_prefix(&s, "n42__qscale", 3), 42);
	CHECK_EQ_U64((uint64_t)fmt_nameset_find_prefix(&s, "n42", 2), 4);   /* "n4" */
	CHECK_EQ_U64(fmt_nameset_find_prefix(&s, "n99999x", 6) == -1, 1);  /* "n99999": not held */
	fmt_nameset_free(&s);
	CHECK_EQ_U64(s.cap, 0);
}

static void add_tensor(fmt_model *m, const char *name)
{
	fmt_err e;
	fmt_err_clear(&e);
	fmt_tensor t;
	memset(&t, 0, sizeof t);
	t.name = (char *)name;
	t.dtype = FMT_DT_F32;
	CHECK_EQ_U64(fmt_model_add_tensor(m, &t, NULL, &e), FMT_OK);
}

TEST(model_finds_tensors_by_name_also_once_reordered_or_doubled)
{
	fmt_model m;
	fmt_model_init(&m);
	add_tensor(&m, "a");
	add_tensor(&m, "b");
	add_tensor(&m, "c");
	CHECK_STR(fmt_model_find_tensor(&m, "b")->name, "b");
	CHECK(fmt_model_find_tensor(&m, "d") == NULL);
	fmt_tensor t = m.tensors[0];   /* reordered in place, as gguf_split.c's front_to_back does */
	m.tensors[0] = m.tensors[2];
	m.tensors[2] = t;
	CHECK(fmt_model_find_tensor(&m, "a") == &m.tensors[2]);
	CHECK(fmt_model_find_tensor(&m, "c") == &m.tensors[0]);
	add_tensor(&m, "b");            /* a name twice: the first, as a search in order finds */
	CHECK(fmt_model_find_tensor(&m, "b") == &m.tensors[1]);
	CHECK(fmt_model_find_tensor(&m, "e") == NULL);
	fmt_model_free(&m);
}

TEST(qtensor_scales_named_by_default_or_given)
{
	fmt_err e;
	fmt_err_clear(&e);
	fmt_model m;
	fmt_model_init(&m);
	fmt_qtensor q;
	memset(&q, 0, sizeof q);
	q.name = "w";
	q.format = FMT_Q_INT8;
	CHECK_EQ_U64(fmt_model_add_qtensor(&m, &q, &e), FMT_OK);
	q.name = "v";
	q.scales = "v.scales";
	CHECK_EQ_U64(fmt_model_add_qtensor(&m, &q, &e), FMT_OK);
	q.name = "h";
	q.scales = NULL;
	q.format = FMT_Q_BF16;
	CHECK_EQ_U64(fmt_model_add_qtensor(&m, &q, &e), FMT_OK);
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "w__qscale"), 1);
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "v.scales"), 1);
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "v__qscale"), 0);   /* v names its own */
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "h__qscale"), 0);   /* BF16 has none */
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "x__qscale"), 0);
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "__qscale"), 0);
	CHECK_EQ_U64(fmt_qtensor_is_scales(&m, "w"), 0);
	CHECK(fmt_model_find_qtensor(&m, "v") == &m.qtensors[1]);
	fmt_model_free(&m);
}

TEST(nameset_add_at_keeps_the_first_place_of_a_name_twice)
{
	fmt_nameset s = { 0 };
	CHECK_EQ_U64(fmt_nameset_add_at(&s, "a", 0), 1);
	CHECK_EQ_U64(fmt_nameset_add_at(&s, "b", 1), 1);
	CHECK_EQ_U64(fmt_nameset_add_at(&s, "a", 2), 0);
	CHECK_EQ_U64(fmt_nameset_add_at(&s, "c", 3), 1);
	CHECK_EQ_U64(s.used, 3);
	CHECK_EQ_U64(s.offered, 4);
	CHECK_EQ_U64((uint64_t)fmt_nameset_find(&s, "a"), 0);
	CHECK_EQ_U64((uint64_t)fmt_nameset_find(&s, "c"), 3);
	fmt_nameset_free(&s);
}

/* A name twice (a shard set before its check refuses it) leaves the index right for the rest:
 * each look-up was a scan of all the names from then on. */
TEST(model_look_ups_after_a_name_twice_find_their_own_place)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_model_init(&m);
	const int8_t dims[FMT_UNIT_DIMS] = { 1 };
	const char *names[] = { "a", "b", "a", "c", "d" };
	for (int i = 0; i < 5; i++) {
		add_tensor(&m, names[i]);
		CHECK_EQ_U64(fmt_model_add_unit(&m, names[i], dims, &e), FMT_OK);
	}
	CHECK_EQ_U64(m.tensor_names.offered, 5);
	CHECK(fmt_model_find_tensor(&m, "a") == &m.tensors[0]);
	CHECK(fmt_model_find_tensor(&m, "c") == &m.tensors[3]);
	CHECK(fmt_model_find_tensor(&m, "d") == &m.tensors[4]);
	CHECK(fmt_model_find_tensor(&m, "e") == NULL);
	CHECK(fmt_model_find_unit(&m, "a") == &m.units[0]);
	CHECK(fmt_model_find_unit(&m, "d") == &m.units[4]);
	CHECK(fmt_model_find_unit(&m, "e") == NULL);
	fmt_model_free(&m);
}
