/* fmt/msgpack_json.h: the one MessagePack -> JSON converter under the two formats' rules
 * (APR v1 metadata, .ald cards), on the values where those rules differ. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/msgpack_json.h"
#include "fmt/tree_budget.h"
#include "unit.h"

static const fmt_mp_json_opts apr_rules = { .max_depth = 32,
					    .flags = FMT_MPJ_NONFINITE_TEXT | FMT_MPJ_BIG_AS_REAL | FMT_MPJ_RAW_STRINGS };
static const fmt_mp_json_opts card_rules = { .max_depth = 16, .flags = FMT_MPJ_STRICT_KEYS | FMT_MPJ_NONFINITE_TEXT };

/* The JSON text of the MessagePack value sb holds under opts, or "NULL" (into out). */
static void as_json(const msgpack_sbuffer *sb, const fmt_mp_json_opts *opts, char *out, size_t n)
{
	msgpack_unpacked u;
	size_t off = 0;
	msgpack_unpacked_init(&u);
	CHECK(msgpack_unpack_next(&u, sb->data, sb->size, &off) == MSGPACK_UNPACK_SUCCESS);
	json_t *j = fmt_mp_to_json(&u.data, opts);
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
	snprintf(out, n, "%s", j ? (text ? text : "UNDUMPABLE") : "NULL");
	free(text);
	json_decref(j);
	msgpack_unpacked_destroy(&u);
}

static void pack_key(msgpack_packer *pk, const char *s, size_t n)
{
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

TEST(msgpack_json_rules)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char got[1024];
	/* common ground: both give the same text */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	pack_key(&pk, "a", 1), msgpack_pack_int64(&pk, -3);
	pack_key(&pk, "b", 1), msgpack_pack_double(&pk, 0.5);
	pack_key(&pk, "c", 1), msgpack_pack_array(&pk, 2), msgpack_pack_nil(&pk), msgpack_pack_true(&pk);
	pack_key(&pk, "", 0), pack_key(&pk, "", 0);
	pack_key(&pk, "e", 1), msgpack_pack_bin(&pk, 2), msgpack_pack_bin_body(&pk, "hi", 2);
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "{\"a\":-3,\"b\":0.5,\"c\":[null,true],\"\":\"\",\"e\":\"hi\"}");
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "{\"a\":-3,\"b\":0.5,\"c\":[null,true],\"\":\"\",\"e\":\"hi\"}");
	msgpack_sbuffer_destroy(&sb);

	/* NaN: "nan" for both (a card's reader also notes where it was); refused without the flag */
	msgpack_sbuffer_init(&sb);
	msgpack_pack_double(&pk, NAN);
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "\"nan\"");
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "\"nan\"");
	const fmt_mp_json_opts no_text = { .max_depth = 16, .flags = FMT_MPJ_STRICT_KEYS };
	as_json(&sb, &no_text, got, sizeof got);
	CHECK_STR(got, "NULL");
	msgpack_sbuffer_destroy(&sb);

	/* 2^64-1: a real for APR, its decimal string in a card */
	msgpack_sbuffer_init(&sb);
	msgpack_pack_uint64(&pk, UINT64_MAX);
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "1.8446744073709552e19");
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "\"18446744073709551615\"");
	msgpack_sbuffer_destroy(&sb);

	/* invalid UTF-8: raw for APR (json_dumps then refuses it), U+FFFD in a card */
	msgpack_sbuffer_init(&sb);
	pack_key(&pk, "a\xff", 2);
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "UNDUMPABLE");
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "\"a\xEF\xBF\xBD\"");
	msgpack_sbuffer_destroy(&sb);

	/* a key holding a NUL: cut there for APR, refused in a card; a 256-byte key likewise */
	char longkey[256];
	memset(longkey, 'k', sizeof longkey);
	msgpack_sbuffer_init(&sb);
	msgpack_pack_map(&pk, 1), pack_key(&pk, "x\0y", 3), msgpack_pack_true(&pk);
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "{\"x\":true}");
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "NULL");
	msgpack_sbuffer_destroy(&sb);
	msgpack_sbuffer_init(&sb);
	msgpack_pack_map(&pk, 1), pack_key(&pk, longkey, 256), msgpack_pack_true(&pk);
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "NULL");
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK(strlen(got) == 256 + 9);
	msgpack_sbuffer_destroy(&sb);

	/* a key that is not a string, and nesting past the depth: NULL in both */
	msgpack_sbuffer_init(&sb);
	msgpack_pack_map(&pk, 1), msgpack_pack_int(&pk, 1), msgpack_pack_true(&pk);
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "NULL");
	msgpack_sbuffer_destroy(&sb);
	msgpack_sbuffer_init(&sb);
	for (int i = 0; i < 18; i++)
		msgpack_pack_array(&pk, 1);
	msgpack_pack_nil(&pk);
	as_json(&sb, &card_rules, got, sizeof got);
	CHECK_STR(got, "NULL");
	as_json(&sb, &apr_rules, got, sizeof got);
	CHECK_STR(got, "[[[[[[[[[[[[[[[[[[null]]]]]]]]]]]]]]]]]]");
	msgpack_sbuffer_destroy(&sb);
}

/* fmt_mp_check, the walk before msgpack-c, under each format's rules: the depth (a container
 * with items at max_depth fails, an empty one there does not), bytes after the value (refused
 * when whole), the tree-budget count, and the first claim past the bytes named. */
TEST(mp_check_depth_whole_and_claims)
{
	static const fmt_mp_check_opts v1 = { .what = "v1 metadata", .max_depth = 32, .whole = 1 };
	static const fmt_mp_check_opts card = { .what = "metadata", .max_depth = 16 };
	uint8_t b[64];
	uint64_t values;
	fmt_err e = { 0 };
	memset(b, 0x91, 16);   /* 16 arrays of one item, then nil: values at depth 16 */
	b[16] = 0xc0;
	CHECK(fmt_mp_check(b, 17, &card, &values, &e) == FMT_OK);
	CHECK_EQ_U64(values, 17 + 16 * (FMT_TREE_ARRAY_VALUES - 1));
	b[16] = 0x90;          /* an empty array there: still no value at depth 17 */
	CHECK(fmt_mp_check(b, 17, &card, &values, &e) == FMT_OK);
	b[16] = 0x91, b[17] = 0xc0;
	CHECK(fmt_mp_check(b, 18, &card, &values, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "metadata: an array at byte 16 is nested more than 16 deep");
	CHECK(fmt_mp_check(b, 18, &v1, &values, &e) == FMT_OK);
	/* bytes after the value: fine for a card (msgpack-c reads the first), not for v1 */
	b[0] = 0xc3;
	CHECK(fmt_mp_check(b, 3, &card, &values, &e) == FMT_OK);
	CHECK_EQ_U64(values, 1);
	CHECK(fmt_mp_check(b, 3, &v1, &values, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "v1 metadata: 2 bytes follow its MessagePack value");
	/* a map16 claiming 65535 entries in 3 bytes */
	const uint8_t big[] = { 0xde, 0xff, 0xff, 0xc0, 0xc0, 0xc0 };
	CHECK(fmt_mp_check(big, sizeof big, &v1, &values, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "v1 metadata: a map at byte 0 claims 65535 entries, only 3 bytes follow");
	CHECK(fmt_mp_check((const uint8_t *)"\xc1", 1, &card, &values, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "metadata: byte 0 (0xc1) is not a MessagePack type");
}

static void *no_memory(size_t n)
{
	(void)n;
	return NULL;
}

/* jansson out of memory before it parsed anything leaves the text empty and the code (the text's
 * last byte) unset: fmt_json_nomem must not read the code then (valgrind saw it:
 * scripts/valgrind-check --unit json_nomem). */
TEST(json_nomem_reads_no_code_jansson_left_unset)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	json_get_alloc_funcs(&jmalloc, &jfree);
	json_set_alloc_funcs(no_memory, jfree);
	json_error_t je;
	json_t *v = json_loadb("[1]", 3, 0, &je);
	json_set_alloc_funcs(jmalloc, jfree);
	CHECK(v == NULL);
	CHECK(je.text[0] == '\0');
	CHECK(fmt_json_nomem(&je));
	json_error_t syntax;
	CHECK(json_loadb("[1", 2, 0, &syntax) == NULL);
	CHECK(!fmt_json_nomem(&syntax));
}
