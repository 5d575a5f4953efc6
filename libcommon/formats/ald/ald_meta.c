/* The dataset card as MessagePack (msgpack-c): the project's map, upstream's positional array;
 * dataset type and compression names; the two CRC-32 variants. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <msgpack.h>
#include <pthread.h>
#include <zlib.h>
#include "fmt/dataset.h"
#include "fmt/msgpack_json.h"
#include "fmt/out.h"
#include "fmt/strbuf.h"
#include "fmt/tree_budget.h"

static const struct { uint16_t id; const char *name; } dataset_types[] = {
	{ 0x0001, "tabular" }, { 0x0002, "time_series" }, { 0x0003, "graph" }, { 0x0004, "spatial" },
	{ 0x0010, "text_corpus" }, { 0x0011, "text_classification" }, { 0x0012, "text_pairs" },
	{ 0x0013, "sequence_labeling" }, { 0x0014, "question_answering" }, { 0x0015, "summarization" },
	{ 0x0016, "translation" }, { 0x0020, "image_classification" }, { 0x0021, "object_detection" },
	{ 0x0022, "segmentation" }, { 0x0023, "image_pairs" }, { 0x0024, "video" },
	{ 0x0030, "audio_classification" }, { 0x0031, "speech_recognition" },
	{ 0x0032, "speaker_identification" }, { 0x0040, "user_item_ratings" },
	{ 0x0041, "implicit_feedback" }, { 0x0042, "sequential_recs" }, { 0x0050, "image_text" },
	{ 0x0051, "audio_text" }, { 0x0052, "video_text" }, { 0x00FF, "custom" },
};

#define N_TYPES (sizeof dataset_types / sizeof dataset_types[0])

const char *fmt_ald_type_name(uint16_t id)
{
	for (size_t i = 0; i < N_TYPES; i++)
		if (dataset_types[i].id == id)
			return dataset_types[i].name;
	return NULL;
}

int fmt_ald_type_by_name(const char *name)
{
	for (size_t i = 0; i < N_TYPES; i++)
		if (strcmp(dataset_types[i].name, name) == 0)
			return dataset_types[i].id;
	return -1;
}

void fmt_ald_type_names(char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < N_TYPES && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", dataset_types[i].name);
}

static const char *compressions[] = { "none", "zstd", "zstd-max", "lz4" };

int fmt_ald_compression_by_name(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(compressions[i], name) == 0)
			return i;
	return -1;
}

const char *fmt_ald_compression_name(int id)
{
	return id >= 0 && id < 4 ? compressions[id] : NULL;
}

/* ---- CRC-32 ---- */

uint32_t fmt_crc32_ieee(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	while (n) {
		uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
		crc = (uint32_t)crc32(crc, p, k);
		p += k;
		n -= k;
	}
	return crc;
}

/* The standard reflected table with upstream's two altered entries (specs/ald.md §8). */
static uint32_t alimentar_table[256];

static void alimentar_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		alimentar_table[i] = c;
	}
	alimentar_table[222] = 0x6169FFD3u;
	alimentar_table[223] = 0x166ECF45u;
}

/* Same calling convention as zlib's crc32: start with 0, feed the running value back. */
uint32_t fmt_crc32_alimentar(uint32_t crc, const void *data, size_t n)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, alimentar_table_init);
	const uint8_t *p = data;
	uint32_t c = ~crc;
	for (size_t i = 0; i < n; i++)
		c = alimentar_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
	return ~c;
}

/* ---- card ---- */

/* Upstream's positional fields (§3), then the project's additions, in the order written. */
static const char *const array_keys[] = { "name", "version", "license", "tags", "description",
					  "citation", "created_at", "sha256" };
static const char *const map_keys[] = { "name", "version", "license", "tags", "description", "sources",
					"intended_uses", "limitations", "citation", "created_at", "sha256",
					"columns", "compliance", "query_pub_key", "query_protocol" };
#define N_MAP_KEYS (sizeof map_keys / sizeof map_keys[0])

enum kind { K_STR, K_STR_LIST, K_SOURCES, K_COLUMNS, K_OBJECT };

static enum kind key_kind(const char *key)
{
	if (!strcmp(key, "tags") || !strcmp(key, "intended_uses") || !strcmp(key, "limitations"))
		return K_STR_LIST;
	if (!strcmp(key, "sources"))
		return K_SOURCES;
	if (!strcmp(key, "columns"))
		return K_COLUMNS;
	if (!strcmp(key, "compliance"))
		return K_OBJECT;
	return K_STR;
}

static int known_key(const char *key)
{
	for (size_t i = 0; i < N_MAP_KEYS; i++)
		if (!strcmp(map_keys[i], key))
			return 1;
	return 0;
}

/* Whose card is checked: what the messages call it, the kind a wrong one is, and whether a key
 * the card table does not know is refused (a --card file: a typo) or kept as it is (a file's
 * card: upstream's reader ignores such keys, a later writer may add some). */
typedef struct card_subject {
	const char *what;
	fmt_kind kind;
	int strict;
} card_subject;

static fmt_kind check_str_map(const json_t *v, const char *key, const char *const *allowed, size_t n,
			      const card_subject *c, fmt_err *e)
{
	const char *k;
	json_t *x;
	if (!json_is_object(v))
		return fmt_fail(e, c->kind, "%s: every item of \"%s\" must be an object", c->what, key);
	json_object_foreach((json_t *)v, k, x) {
		size_t i = 0;
		while (i < n && strcmp(allowed[i], k))
			i++;
		if (i == n && c->strict)
			return fmt_fail(e, c->kind, "%s: \"%s\" items have no key \"%s\"", c->what, key, k);
		if (i < n && !json_is_string(x) && !json_is_null(x))
			return fmt_fail(e, c->kind, "%s: \"%s\".\"%s\" must be a string", c->what, key, k);
	}
	return FMT_OK;
}

static fmt_kind card_check(const json_t *card, const card_subject *c, fmt_err *e)
{
	static const char *const source_keys[] = { "name", "url", "license" };
	static const char *const column_keys[] = { "name", "description", "dtype", "values", "missing" };
	const char *key;
	json_t *v;
	if (!json_is_object(card))
		return fmt_fail(e, c->kind, "%s: must be a JSON object", c->what);
	json_object_foreach((json_t *)card, key, v) {
		if (!known_key(key)) {
			if (c->strict)
				return fmt_fail(e, c->kind, "%s: unknown key \"%s\"", c->what, key);
			continue;
		}
		if (!strcmp(key, "sha256") && c->strict)
			return fmt_fail(e, c->kind, "%s: \"sha256\" is filled in by the writer", c->what);
		size_t i;
		json_t *x;
		switch (key_kind(key)) {
		case K_STR:
			if (!json_is_string(v) && !json_is_null(v))
				return fmt_fail(e, c->kind, "%s: \"%s\" must be a string", c->what, key);
			break;
		case K_STR_LIST:
			if (!json_is_array(v))
				return fmt_fail(e, c->kind, "%s: \"%s\" must be an array of strings", c->what, key);
			json_array_foreach(v, i, x)
				if (!json_is_string(x))
					return fmt_fail(e, c->kind, "%s: \"%s\" must be an array of strings", c->what, key);
			break;
		case K_SOURCES: case K_COLUMNS:
			if (!json_is_array(v))
				return fmt_fail(e, c->kind, "%s: \"%s\" must be an array of objects", c->what, key);
			json_array_foreach(v, i, x) {
				fmt_kind k = key_kind(key) == K_SOURCES ? check_str_map(x, key, source_keys, 3, c, e)
									 : check_str_map(x, key, column_keys, 5, c, e);
				if (k != FMT_OK)
					return k;
			}
			break;
		case K_OBJECT:
			if (!json_is_object(v))
				return fmt_fail(e, c->kind, "%s: \"%s\" must be an object", c->what, key);
			break;
		}
	}
	return FMT_OK;
}

fmt_kind fmt_card_check(const json_t *card, fmt_err *e)
{
	static const card_subject given = { "card", FMT_USAGE, 1 };
	return card_check(card, &given, e);
}

fmt_kind fmt_card_check_carried(const json_t *card, fmt_err *e)
{
	static const card_subject carried = { "the input's card", FMT_INVALID_FORMAT, 0 };
	return card_check(card, &carried, e);
}

fmt_kind fmt_card_check_stored(const json_t *card, fmt_err *e)
{
	static const card_subject stored = { "the card", FMT_INVALID_FORMAT, 0 };
	return card_check(card, &stored, e);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

/* Any JSON value (the compliance object may hold numbers and booleans). */
static void pack_json(msgpack_packer *pk, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	switch (json_typeof(v)) {
	case JSON_STRING:
		msgpack_pack_str(pk, json_string_length(v));
		msgpack_pack_str_body(pk, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER: msgpack_pack_int64(pk, json_integer_value(v)); break;
	case JSON_REAL: msgpack_pack_double(pk, json_real_value(v)); break;
	case JSON_TRUE: msgpack_pack_true(pk); break;
	case JSON_FALSE: msgpack_pack_false(pk); break;
	case JSON_NULL: msgpack_pack_nil(pk); break;
	case JSON_ARRAY:
		msgpack_pack_array(pk, json_array_size(v));
		json_array_foreach(v, i, x)
			pack_json(pk, x);
		break;
	case JSON_OBJECT:
		msgpack_pack_map(pk, json_object_size(v));
		json_object_foreach((json_t *)v, k, x) {
			pack_str(pk, k);
			pack_json(pk, x);
		}
		break;
	}
}

static void pack_opt_str(msgpack_packer *pk, const json_t *v)
{
	if (json_is_string(v))
		pack_json(pk, v);
	else
		msgpack_pack_nil(pk);
}

/* The keys of a carried card that the card table does not know (a --card file has none): after
 * the known ones, in the card's order, as they are. */
static size_t count_unknown_keys(const json_t *card)
{
	const char *key;
	json_t *v;
	size_t n = 0;
	json_object_foreach((json_t *)card, key, v)
		n += !known_key(key);
	return n;
}

static void pack_unknown_keys(msgpack_packer *pk, const json_t *card)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)card, key, v)
		if (!known_key(key)) {
			pack_str(pk, key);
			pack_json(pk, v);
		}
}

/* A key of card that the positional array leaves out (fmt_card_array_dropped), holding something. */
static int array_drops(const char *key, const json_t *v)
{
	for (size_t i = 0; i < 8; i++) /* the positional fields and sha256 */
		if (!strcmp(array_keys[i], key))
			return 0;
	return !json_is_null(v) && !((json_is_array(v) && !json_array_size(v)) ||
				     (json_is_object(v) && !json_object_size(v)));
}

size_t fmt_card_array_dropped(const json_t *card, char *buf, size_t size)
{
	const char *key;
	json_t *v;
	size_t n = 0, used = 0;
	json_object_foreach((json_t *)card, key, v)
		n += (size_t)array_drops(key, v);
	size_t named = n <= FMT_CARD_DROPPED_NAMED ? n : FMT_CARD_DROPPED_NAMED - 1, i = 0;
	if (size)
		buf[0] = '\0';
	json_object_foreach((json_t *)card, key, v) {
		if (!array_drops(key, v) || i == named)
			continue;
		const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
		used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s\"%.64s\"", sep, key);
		used = used < size ? used : size;
		i++;
	}
	if (named < n)
		snprintf(buf + used, used < size ? size - used : 0, " and %zu more", n - named);
	return n;
}

/* The card's bytes: msgpack_sbuffer_write fails a write it cannot make room for and takes the
 * next one that fits, so a failure is remembered (else a card could lose bytes inside). */
typedef struct card_buf {
	msgpack_sbuffer sb;
	int failed;
} card_buf;

static int card_write(void *data, const char *buf, size_t len)
{
	card_buf *c = data;
	if (!c->failed && msgpack_sbuffer_write(&c->sb, buf, len) != 0)
		c->failed = 1;
	return c->failed ? -1 : 0;
}

fmt_kind fmt_card_encode(const json_t *card, const char *sha256_hex, int compat, uint8_t **out,
			 size_t *len, fmt_err *e)
{
	card_buf cb = { .failed = 0 };
	msgpack_sbuffer *const sb = &cb.sb;
	msgpack_packer pk;
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, &cb, card_write);
	json_t *empty = NULL;
	if (!card)
		card = empty = json_object();
	if (!card)
		return fmt_fail(e, FMT_IO, "out of memory");
	if (compat) {
		/* 7 elements, or 8 when a sha256 is given (§3); tags always an array */
		msgpack_pack_array(&pk, sha256_hex ? 8 : 7);
		for (size_t i = 0; i < 7; i++) {
			const json_t *v = json_object_get(card, array_keys[i]);
			if (i == 3) {
				size_t j;
				json_t *x;
				msgpack_pack_array(&pk, json_array_size(v));
				json_array_foreach(v, j, x)
					pack_json(&pk, x);
			} else {
				pack_opt_str(&pk, v);
			}
		}
		if (sha256_hex)
			pack_str(&pk, sha256_hex);
	} else {
		size_t n = 0;
		for (size_t i = 0; i < N_MAP_KEYS; i++)
			n += (!strcmp(map_keys[i], "sha256") && sha256_hex) || json_object_get(card, map_keys[i]);
		msgpack_pack_map(&pk, n + count_unknown_keys(card));
		for (size_t i = 0; i < N_MAP_KEYS; i++) {
			const json_t *v = json_object_get(card, map_keys[i]);
			if (!strcmp(map_keys[i], "sha256") && sha256_hex) {
				pack_str(&pk, "sha256");
				pack_str(&pk, sha256_hex);
			} else if (v) {
				pack_str(&pk, map_keys[i]);
				pack_json(&pk, v);
			}
		}
		pack_unknown_keys(&pk, card);
	}
	json_decref(empty);
	if (cb.failed || !sb->data) {
		msgpack_sbuffer_destroy(sb);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	*len = sb->size;
	*out = (uint8_t *)msgpack_sbuffer_release(sb);
	return FMT_OK;
}

/* ---- decoding ---- */

#define CARD_MAX_DEPTH 16

/* Cards are re-packed from JSON by the tools: NaN and infinities as "nan", "inf", "-inf" (as
 * APR v1 metadata; jansson holds no NaN, and fmt_card_decode says where they are), integers
 * over INT64_MAX as decimal strings, invalid UTF-8 as U+FFFD, keys under 256 bytes without
 * NUL. */
static const fmt_mp_json_opts card_json = { .max_depth = CARD_MAX_DEPTH,
					    .flags = FMT_MPJ_STRICT_KEYS | FMT_MPJ_NONFINITE_TEXT };

/* A JSON pointer (RFC 6901) segment: "/" and s with "~" as "~0", "/" as "~1". */
static void pointer_add(fmt_sb *b, const char *s, size_t n)
{
	fmt_sb_put(b, "/", 1);
	for (size_t i = 0; i < n; i++)
		fmt_sb_put(b, s[i] == '~' ? "~0" : s[i] == '/' ? "~1" : s + i, s[i] == '~' || s[i] == '/' ? 2 : 1);
}

static void pointer_cut(fmt_sb *b, size_t len)
{
	b->len = len;
	if (b->p)
		b->p[len] = '\0';
}

/* The NaN and infinite floats of a card: the JSON pointers of the first FMT_CARD_NONFINITE_MAX
 * (a JSON array of strings), and how many there are. */
typedef struct nonfinite_list {
	json_t *at;
	uint64_t count;
	int oom;
} nonfinite_list;

static void nonfinite_add(nonfinite_list *l, const fmt_sb *path)
{
	l->count++;
	if (json_array_size(l->at) >= FMT_CARD_NONFINITE_MAX)
		return;
	if (path->oom || json_array_append_new(l->at, json_string(path->p ? path->p : "")) != 0)
		l->oom = 1;
}

/* Every NaN or infinite float under o (converted with card_json: string keys; at path) into l. */
static void nonfinite_in(const msgpack_object *o, fmt_sb *path, nonfinite_list *l)
{
	size_t at = path->len;
	if ((o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) && !isfinite(o->via.f64))
		nonfinite_add(l, path);
	if (o->type == MSGPACK_OBJECT_ARRAY)
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			char num[16];
			pointer_add(path, num, (size_t)snprintf(num, sizeof num, "%u", i));
			nonfinite_in(&o->via.array.ptr[i], path, l);
			pointer_cut(path, at);
		}
	if (o->type == MSGPACK_OBJECT_MAP)
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;
			pointer_add(path, k->via.str.ptr ? k->via.str.ptr : "", k->via.str.size);
			nonfinite_in(&o->via.map.ptr[i].val, path, l);
			pointer_cut(path, at);
		}
}

/* The NaN and infinite floats under o (at path) into l. Out of memory: FMT_IO. */
static fmt_kind note_nonfinite(const msgpack_object *o, fmt_sb *path, nonfinite_list *l, fmt_err *e)
{
	nonfinite_in(o, path, l);
	return l->oom ? fmt_fail_nomem(e, "the metadata") : FMT_OK;
}

/* l as *out, {"count":N,"at":[the first FMT_CARD_NONFINITE_MAX pointers]}, or NULL when the
 * card has none. */
static fmt_kind nonfinite_text(const nonfinite_list *l, char **out, fmt_err *e)
{
	*out = NULL;
	if (!l->count)
		return FMT_OK;
	json_t *v = json_pack("{s:I,s:O}", "count", (json_int_t)l->count, "at", l->at);
	*out = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	return *out ? FMT_OK : fmt_fail_nomem(e, "the metadata");
}

fmt_kind fmt_card_decode(const uint8_t *data, size_t len, json_t **card, const char **form, char **nonfinite,
			 fmt_err *e)
{
	fmt_sb path = { 0 };
	nonfinite_list nf = { .at = json_array() };
	*nonfinite = NULL;
	if (!nf.at)
		return fmt_fail_nomem(e, "the metadata");
	uint64_t values = 0;
	*card = NULL;
	/* the walk's own messages (byte offsets) are not a card's: one for all */
	static const fmt_mp_check_opts card_check = { .what = "metadata", .max_depth = CARD_MAX_DEPTH };
	if (fmt_mp_check(data, len, &card_check, &values, e) != FMT_OK) {
		json_decref(nf.at);
		return fmt_fail(e, FMT_INVALID_FORMAT, "metadata is not well-formed MessagePack (or nested deeper than %d)",
				CARD_MAX_DEPTH);
	}
	fmt_kind kb = fmt_tree_check("the metadata", values, len, FMT_TREE_COST_MSGPACK, e);
	if (kb != FMT_OK) {
		json_decref(nf.at);
		return kb;
	}
	msgpack_unpacked u;
	size_t off = 0;
	msgpack_unpacked_init(&u);
	msgpack_unpack_return r = msgpack_unpack_next(&u, (const char *)data, len, &off);
	fmt_kind k = FMT_OK;
	*card = NULL;
	if (r == MSGPACK_UNPACK_NOMEM_ERROR) {
		k = fmt_fail_nomem(e, "the metadata");
	} else if (r != MSGPACK_UNPACK_SUCCESS && r != MSGPACK_UNPACK_EXTRA_BYTES) {
		k = fmt_fail(e, FMT_INVALID_FORMAT, "metadata is not MessagePack");
	} else if (u.data.type == MSGPACK_OBJECT_MAP) {
		*form = "map";
		errno = 0;   /* ENOMEM after a NULL: memory ran out, the card may be fine */
		if (!(*card = fmt_mp_to_json(&u.data, &card_json)))
			k = errno == ENOMEM ? fmt_fail_nomem(e, "the metadata")
			  : fmt_fail(e, FMT_INVALID_FORMAT, "metadata map has non-string keys or is nested too deep");
		else
			k = note_nonfinite(&u.data, &path, &nf, e);
	} else if (u.data.type == MSGPACK_OBJECT_ARRAY) {
		uint32_t n = u.data.via.array.size;
		*form = "array";
		if (n != 7 && n != 8) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "metadata array has %u elements (7 or 8 expected)", n);
		} else if (!(*card = json_object())) {
			k = fmt_fail(e, FMT_IO, "out of memory");
		} else {
			for (uint32_t i = 0; i < n && k == FMT_OK; i++) {
				const msgpack_object *x = &u.data.via.array.ptr[i];
				int ok = i == 3 ? x->type == MSGPACK_OBJECT_ARRAY
						: x->type == MSGPACK_OBJECT_STR || x->type == MSGPACK_OBJECT_NIL;
				if (!ok) {
					k = fmt_fail(e, FMT_INVALID_FORMAT, "metadata element %u (%s) has the wrong type",
						     i, array_keys[i]);
				} else if (x->type != MSGPACK_OBJECT_NIL) {
					errno = 0;
					json_t *v = fmt_mp_to_json(x, &card_json);
					if (!v)
						k = errno == ENOMEM ? fmt_fail_nomem(e, "the metadata")
						  : fmt_fail(e, FMT_INVALID_FORMAT, "metadata element %u is malformed", i);
					else if (json_object_set_new(*card, array_keys[i], v) != 0)
						k = fmt_fail_nomem(e, "the metadata");
					pointer_cut(&path, 0);
					pointer_add(&path, array_keys[i], strlen(array_keys[i]));
					if (v && k == FMT_OK)
						k = note_nonfinite(x, &path, &nf, e);
				}
			}
		}
	} else {
		k = fmt_fail(e, FMT_INVALID_FORMAT, "metadata is neither a map nor an array");
	}
	if (k == FMT_OK)
		k = nonfinite_text(&nf, nonfinite, e);
	if (k != FMT_OK) {
		json_decref(*card);
		*card = NULL;
		free(*nonfinite);
		*nonfinite = NULL;
	}
	fmt_sb_free(&path);
	json_decref(nf.at);
	msgpack_unpacked_destroy(&u);
	return k;
}
