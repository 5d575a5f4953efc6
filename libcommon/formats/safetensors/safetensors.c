/* safetensors reader and writer (specs/safetensors.md).
 *
 * Reader policy (the spec leaves these to us, §3, §5, §9):
 *  - The header must begin with '{' (README rule; the Rust reader also accepts leading JSON
 *    whitespace). Trailing JSON whitespace (space, tab, CR, LF) after the object is accepted.
 *  - A tensor object must hold exactly dtype, shape and data_offsets: unknown fields are
 *    rejected by name (the reference ignores them; the schema forbids them).
 *  - Numbers must be plain non-negative integers: a sign (even "-0"), fraction or exponent is
 *    rejected. jansson cannot hold integers >= 2^63, so those are rejected too (serde accepts
 *    up to 2^64-1; no valid file needs them: offsets and sizes are bounded by the file).
 *  - Duplicate keys anywhere (tensor names, __metadata__, fields) are rejected.
 *  - "\u0000" in any string is rejected; raw control characters and lone surrogates too.
 *  - More than FMT_MAX_DIMS dimensions is Unsupported (exit 5), not InvalidFormat.
 *  - probe answers strongly for a plausible length followed by '{' (after optional
 *    whitespace), weakly for an oversized length before '{' or a length that fits the file
 *    before something else, so that open can name the broken rule.
 * Writer policy: only string metadata is written (keys sorted bytewise, §6.4); other types
 * are skipped and counted; strings with NUL bytes, non-UTF-8 names/values, duplicate names
 * and dtypes safetensors has no name for are refused.
 * Open reads only the 8-byte length and the header; tensor data is never touched.
 * Checks run in the order of §5: length, cap, header within file, UTF-8, JSON and structure,
 * then in data-offset order: END >= BEGIN, no hole, no overlap, size, and finally coverage. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "fmt/checked.h"
#include "fmt/dtype.h"
#include "fmt/json_text.h"
#include "fmt/out.h"
#include "fmt/safetensors.h"
#include "fmt/strbuf.h"
#include "fmt/tree_budget.h"

/* Names from files are cut in messages (the message buffer is bounded; the tool escapes). */
#define NM "'%.200s'"

typedef struct st_state {
	uint64_t header_len;
} st_state;

typedef struct st_entry {
	char *name;                   /* the decoded key (owned) */
	size_t at;                    /* header byte of the key, for messages */
	fmt_dtype dtype;
	int ndim;
	uint64_t shape[FMT_MAX_DIMS];
	uint64_t begin, end;
} st_entry;

/* ---- probe ---- */

static int st_probe(const uint8_t *head, size_t n, uint64_t file_size)
{
	if (n < 10)
		return 0;
	uint64_t len = fmt_rd_u64(head);
	if (len < 2)
		return 0;
	size_t i = fmt_json_skip_ws((const char *)head, n, 8);
	if (i < n && head[i] == '{')
		return len <= FMT_ST_HEADER_MAX ? 90 : 40; /* oversized: open says what is wrong */
	/* A length that fits the file but a header not starting with '{' (a BOM, a JSON array):
	 * answer weakly so that open reports the header rule rather than "unrecognised". */
	if (file_size >= 8 && len <= FMT_ST_HEADER_MAX && len <= file_size - 8)
		return 10;
	return 0;
}

/* ---- header checks ---- */

/* Offset of the first byte that does not start a valid UTF-8 sequence (s is known invalid). */
static size_t utf8_first_bad(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (len > n - i)
			len = n - i;
		if (!fmt_utf8_valid(s + i, len))
			return i;
		i += len;
	}
	return n;
}

/* jansson reports a duplicate key with the position just past the repeated key's closing
 * quote; recover the key's raw text from the header for the message. */
static fmt_kind fail_duplicate(const char *h, size_t n, const json_error_t *je, fmt_err *e)
{
	size_t end = je->position > 0 ? (size_t)je->position : 0;
	if (end >= 2 && end <= n && h[end - 1] == '"') {
		size_t j = end - 1;
		while (j > 0) {
			j--;
			if (h[j] != '"')
				continue;
			size_t slashes = 0;
			while (j > slashes && h[j - 1 - slashes] == '\\')
				slashes++;
			if (slashes % 2 == 0) {
				int klen = (int)(end - 1 - (j + 1));
				return fmt_fail(e, FMT_INVALID_FORMAT, "duplicate key '%.*s' in header (byte %zu)",
						klen > 200 ? 200 : klen, h + j + 1, j);
			}
		}
	}
	return fmt_fail(e, FMT_INVALID_FORMAT, "duplicate key in header: %s", je->text);
}

/* After a successful parse, a '-' outside strings can only be a number's sign; jansson turns
 * "-0" into 0, so the sign has to be found in the text. */
static fmt_kind reject_signs(const char *h, size_t n, fmt_err *e)
{
	for (size_t i = 0; i < n; i++) {
		if (h[i] == '"')
			i = fmt_json_string_end(h, n, i, 0, NULL);
		else if (h[i] == '-')
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"negative number at header byte %zu (only non-negative integers are allowed)", i);
	}
	return FMT_OK;
}

static fmt_kind get_u64(const json_t *v, const char *tensor, const char *what, size_t idx,
			uint64_t *out, fmt_err *e)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return FMT_OK;
	}
	if (json_is_real(v))
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"tensor " NM ": %s[%zu] has a fraction or exponent (expected an integer)",
				tensor, what, idx);
	return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": %s[%zu] is not a non-negative integer",
			tensor, what, idx);
}

static fmt_kind parse_tensor(const char *name, json_t *v, st_entry *t, fmt_err *e)
{
	const char *field;
	json_t *fv;
	if (!json_is_object(v))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": entry is not an object", name);
	json_object_foreach(v, field, fv) {
		if (strcmp(field, "dtype") && strcmp(field, "shape") && strcmp(field, "data_offsets"))
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"tensor " NM ": unknown field '%.100s' (expected only dtype, shape, data_offsets)",
					name, field);
	}
	json_t *dtype = json_object_get(v, "dtype");
	json_t *shape = json_object_get(v, "shape");
	json_t *offs = json_object_get(v, "data_offsets");
	if (!dtype || !shape || !offs)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": missing '%s'", name,
				!dtype ? "dtype" : !shape ? "shape" : "data_offsets");
	if (!json_is_string(dtype))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": dtype is not a string", name);
	t->dtype = fmt_dtype_from_st_name(json_string_value(dtype));
	if (t->dtype == FMT_DT_INVALID)
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": unknown dtype '%.64s'", name,
				json_string_value(dtype));
	if (!json_is_array(shape))
		return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": shape is not an array", name);
	size_t rank = json_array_size(shape);
	if (rank > FMT_MAX_DIMS)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor " NM ": rank %zu is above the supported %d dimensions",
				name, rank, FMT_MAX_DIMS);
	t->ndim = (int)rank;
	for (size_t i = 0; i < rank; i++) {
		fmt_kind k = get_u64(json_array_get(shape, i), name, "shape", i, &t->shape[i], e);
		if (k != FMT_OK)
			return k;
	}
	if (!json_is_array(offs) || json_array_size(offs) != 2)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"tensor " NM ": data_offsets is not an array of exactly two integers", name);
	fmt_kind k = get_u64(json_array_get(offs, 0), name, "data_offsets", 0, &t->begin, e);
	if (k == FMT_OK)
		k = get_u64(json_array_get(offs, 1), name, "data_offsets", 1, &t->end, e);
	return k;
}

static fmt_kind check_metadata(json_t *md, fmt_err *e)
{
	const char *key;
	json_t *v;
	if (!json_is_object(md))
		return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ is not an object");
	json_object_foreach(md, key, v) {
		if (!json_is_string(v))
			return fmt_fail(e, FMT_INVALID_FORMAT, "__metadata__ value for " NM " is not a string", key);
	}
	return FMT_OK;
}

static int cmp_entry_offsets(const void *pa, const void *pb)
{
	const st_entry *a = pa, *b = pb;
	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	if (a->end != b->end)
		return a->end < b->end ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* §5.6 on the tensors sorted by offsets; fills each nbytes/nelems into sizes. */
static fmt_kind check_layout(st_entry *t, size_t n, uint64_t *nelems, uint64_t *nbytes,
			     uint64_t *data_len, fmt_err *e)
{
	uint64_t prev_end = 0;
	const char *prev = NULL;
	for (size_t i = 0; i < n; i++) {
		if (t[i].end < t[i].begin)
			return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM ": data_offsets end %llu < begin %llu",
					t[i].name, (unsigned long long)t[i].end, (unsigned long long)t[i].begin);
		if (t[i].begin > prev_end) {
			if (!prev)
				return fmt_fail(e, FMT_INVALID_FORMAT,
						"tensor " NM ": data_offsets begin %llu leaves a hole at the start of the data (the first tensor must begin at 0)",
						t[i].name, (unsigned long long)t[i].begin);
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"tensor " NM ": data_offsets begin %llu leaves a hole after %llu",
					t[i].name, (unsigned long long)t[i].begin, (unsigned long long)prev_end);
		}
		if (t[i].begin < prev_end)
			return fmt_fail(e, FMT_INVALID_FORMAT, "tensor " NM " overlaps " NM " (begin %llu < end %llu)",
					t[i].name, prev, (unsigned long long)t[i].begin,
					(unsigned long long)prev_end);
		fmt_kind k = fmt_dtype_nbytes(t[i].dtype, t[i].shape, t[i].ndim, &nelems[i], &nbytes[i], e);
		if (k != FMT_OK) {
			fmt_err_prefix(e, "tensor " NM, t[i].name);
			return k;
		}
		if (t[i].end - t[i].begin != nbytes[i])
			return fmt_fail(e, FMT_INVALID_FORMAT,
					"tensor " NM ": data_offsets [%llu, %llu] hold %llu bytes but %llu %s elements need %llu",
					t[i].name, (unsigned long long)t[i].begin, (unsigned long long)t[i].end,
					(unsigned long long)(t[i].end - t[i].begin), (unsigned long long)nelems[i],
					fmt_dtype_name(t[i].dtype), (unsigned long long)nbytes[i]);
		prev_end = t[i].end;
		prev = t[i].name;
	}
	*data_len = prev_end;
	return FMT_OK;
}

/* Length, cap and header-within-file checks, then the header bytes (§5.1-5.3). */
static fmt_kind read_header(fmt_source *s, char **header, uint64_t *len, fmt_err *e)
{
	uint8_t raw[8];
	if (s->size < 8)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"file is %llu bytes, too small for the 8-byte header length",
				(unsigned long long)s->size);
	fmt_kind k = fmt_source_read(s, 0, raw, sizeof raw, e);
	if (k != FMT_OK)
		return k;
	uint64_t n = fmt_rd_u64(raw);
	if (n > FMT_ST_HEADER_MAX)
		return fmt_fail(e, FMT_INVALID_FORMAT, "header length %llu exceeds the %u-byte cap",
				(unsigned long long)n, FMT_ST_HEADER_MAX);
	if (n > s->size - 8)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"header length %llu runs past the end of the file (%llu bytes after the length field)",
				(unsigned long long)n, (unsigned long long)(s->size - 8));
	char *h = malloc((size_t)n + 1);
	if (!h)
		return fmt_fail(e, FMT_IO, "out of memory for a %llu-byte header", (unsigned long long)n);
	k = fmt_source_read(s, 8, h, (size_t)n, e);
	if (k != FMT_OK) {
		free(h);
		return k;
	}
	h[n] = '\0';
	*header = h;
	*len = n;
	return FMT_OK;
}

/* ---- the header, one member at a time ----
 * A hostile header of a million empty tensors must not become a million-node JSON tree: the
 * top-level object is split into members by a scanner that only follows strings and brackets,
 * and each member's value is parsed by jansson on its own and dropped once read, so memory is
 * the small per-tensor records plus one member. Duplicate names are found by sorting. */

typedef struct st_scan {
	const char *h;
	size_t n;
	st_entry *t;
	size_t nt, cap;
	json_t *meta;                 /* the __metadata__ object, if any */
	size_t meta_at;
	fmt_err bad;                  /* the first member that is valid JSON but not a valid entry */
	int has_bad;
} st_scan;

/* h[i] is '"': the index just past the closing quote, or n + 1 when there is none. */
static size_t skip_string(const char *h, size_t n, size_t i)
{
	size_t end = fmt_json_string_end(h, n, i, 0, NULL);
	return end < n ? end + 1 : n + 1;
}

/* The end of the value starting at h[i], following only strings and brackets (jansson checks
 * the value itself); n + 1 when it runs off the end. */
static size_t skip_value(const char *h, size_t n, size_t i)
{
	size_t depth = 0;
	while (i < n) {
		char c = h[i];
		if (c == '"') {
			i = skip_string(h, n, i);
			if (i > n || depth == 0)
				return i;
		} else if (c == '{' || c == '[') {
			depth++;
			i++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return i;
			i++;
			if (--depth == 0)
				return i;
		} else if (depth == 0 && (c == ',' || fmt_json_ws((unsigned char)c))) {
			return i;
		} else {
			i++;
		}
	}
	return depth ? n + 1 : i;
}

static fmt_kind bad_json(size_t at, const char *what, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "header is not valid JSON at byte %zu: %s", at, what);
}

/* Parse h[from, to) alone; jansson's positions are made header-relative. */
static fmt_kind parse_span(const st_scan *sc, size_t from, size_t to, size_t flags, json_t **out, fmt_err *e)
{
	json_error_t je;
	char what[64];
	snprintf(what, sizeof what, "the header's member at byte %zu", from);
	*out = NULL;
	fmt_kind k = fmt_json_budget(what, sc->h + from, to - from, FMT_TREE_COST_JSON, e);
	if (k != FMT_OK)
		return k;
	*out = fmt_json_loadb(sc->h + from, to - from, JSON_REJECT_DUPLICATES | flags, &je);
	if (*out)
		return FMT_OK;
	if (fmt_json_nomem(&je))
		return fmt_fail_nomem(e, "the header");
	je.position += (int)from;
	if (strncmp(je.text, "duplicate object key", 20) == 0)
		return fail_duplicate(sc->h, sc->n, &je, e);
	return bad_json((size_t)je.position, je.text, e);
}

/* A key without escapes or control bytes is its own text (the header is valid UTF-8). */
static fmt_kind decode_key(const st_scan *sc, size_t from, size_t to, char **out, fmt_err *e)
{
	int plain = 1;
	for (size_t i = from + 1; i + 1 < to && plain; i++)
		plain = sc->h[i] != '\\' && (uint8_t)sc->h[i] >= 0x20;
	if (plain) {
		*out = strndup(sc->h + from + 1, to - from - 2);
		return *out ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	}
	json_t *j;
	fmt_kind k = parse_span(sc, from, to, JSON_DECODE_ANY, &j, e);
	if (k != FMT_OK)
		return k;
	*out = strdup(json_string_value(j));
	json_decref(j);
	return *out ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
}

/* JSON errors (syntax, duplicate keys) come before entry errors, as when the whole header was
 * one jansson parse: the first entry error is kept and the scan goes on. */
static void keep_entry_error(st_scan *sc, fmt_kind k, const fmt_err *err)
{
	if (k != FMT_OK && !sc->has_bad) {
		sc->bad.kind = err->kind; /* err's file was never set */
		memcpy(sc->bad.msg, err->msg, sizeof sc->bad.msg);
		sc->has_bad = 1;
	}
}

static fmt_kind take_member(st_scan *sc, char *key, size_t key_at, size_t from, size_t to, fmt_err *e)
{
	if (strcmp(key, "__metadata__") == 0) {
		if (sc->meta) {
			free(key);
			return fmt_fail(e, FMT_INVALID_FORMAT, "duplicate key '__metadata__' in header (byte %zu)", key_at);
		}
		free(key);
		sc->meta_at = key_at;
		fmt_kind k = parse_span(sc, from, to, JSON_DECODE_ANY, &sc->meta, e);
		if (k == FMT_OK) {
			fmt_err me;
			keep_entry_error(sc, check_metadata(sc->meta, &me), &me);
		}
		return k;
	}
	if (sc->nt == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 64;
		st_entry *bigger = realloc(sc->t, cap * sizeof *bigger);
		if (!bigger) {
			free(key);
			return fmt_fail(e, FMT_IO, "out of memory for %zu tensor entries", cap);
		}
		sc->t = bigger;
		sc->cap = cap;
	}
	st_entry *t = &sc->t[sc->nt++];
	memset(t, 0, sizeof *t);
	t->name = key;
	t->at = key_at;
	json_t *v;
	fmt_kind k = parse_span(sc, from, to, JSON_DECODE_ANY, &v, e);
	if (k == FMT_OK) {
		fmt_err te;
		keep_entry_error(sc, parse_tensor(key, v, t, &te), &te);
		json_decref(v);
	}
	return k;
}

static int cmp_entry_names(const void *pa, const void *pb)
{
	const st_entry *a = *(const st_entry *const *)pa, *b = *(const st_entry *const *)pb;
	int c = strcmp(a->name, b->name);
	return c ? c : a->at < b->at ? -1 : a->at > b->at;
}

/* The first repeated name in file order, as jansson would report it. */
static fmt_kind reject_duplicate_names(const st_scan *sc, fmt_err *e)
{
	if (sc->nt < 2)
		return FMT_OK;
	const st_entry **by_name = malloc(sc->nt * sizeof *by_name);
	if (!by_name)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < sc->nt; i++)
		by_name[i] = &sc->t[i];
	qsort(by_name, sc->nt, sizeof *by_name, cmp_entry_names);
	const st_entry *first = NULL;
	for (size_t i = 1; i < sc->nt; i++)
		if (strcmp(by_name[i]->name, by_name[i - 1]->name) == 0 && (!first || by_name[i]->at < first->at))
			first = by_name[i];
	fmt_kind k = FMT_OK;
	if (first) { /* named by its text in the header, as jansson's position gives it */
		size_t len = skip_string(sc->h, sc->n, first->at) - first->at - 2;
		k = fmt_fail(e, FMT_INVALID_FORMAT, "duplicate key '%.*s' in header (byte %zu)",
			     (int)(len > 200 ? 200 : len), sc->h + first->at + 1, first->at);
	}
	free(by_name);
	return k;
}

static fmt_kind scan_members(st_scan *sc, fmt_err *e)
{
	const char *h = sc->h;
	size_t n = sc->n, i = fmt_json_skip_ws(h, n, 1);
	if (i < n && h[i] == '}')
		return (i = fmt_json_skip_ws(h, n, i + 1)) == n ? FMT_OK : bad_json(i, "end of file expected", e);
	for (;;) {
		if (i >= n || h[i] != '"')
			return bad_json(i, "string or '}' expected", e);
		size_t key_end = skip_string(h, n, i);
		if (key_end > n)
			return bad_json(i, "unterminated string", e);
		char *key;
		fmt_kind k = decode_key(sc, i, key_end, &key, e);
		if (k != FMT_OK)
			return k;
		size_t key_at = i;
		i = fmt_json_skip_ws(h, n, key_end);
		if (i >= n || h[i] != ':') {
			free(key);
			return bad_json(i, "':' expected", e);
		}
		size_t from = fmt_json_skip_ws(h, n, i + 1), to = skip_value(h, n, from);
		if (to > n || to == from) {
			free(key);
			return bad_json(from, "unexpected end of the header or an invalid value", e);
		}
		if ((k = take_member(sc, key, key_at, from, to, e)) != FMT_OK)
			return k;
		i = fmt_json_skip_ws(h, n, to);
		if (i < n && h[i] == ',') {
			i = fmt_json_skip_ws(h, n, i + 1);
			continue;
		}
		if (i < n && h[i] == '}')
			break;
		return bad_json(i, "',' or '}' expected", e);
	}
	i = fmt_json_skip_ws(h, n, i + 1);
	return i == n ? FMT_OK : bad_json(i, "end of file expected", e);
}

static void scan_free(st_scan *sc)
{
	for (size_t i = 0; i < sc->nt; i++)
		free(sc->t[i].name);
	free(sc->t);
	json_decref(sc->meta);
	memset(sc, 0, sizeof *sc);
}

/* Text-level checks, then the members (§5.4-5.5). */
static fmt_kind parse_header(const char *h, size_t n, st_scan *sc, fmt_err *e)
{
	memset(sc, 0, sizeof *sc);
	sc->h = h;
	sc->n = n;
	if (!fmt_utf8_valid(h, n)) {
		size_t at = utf8_first_bad(h, n);
		return fmt_fail(e, FMT_INVALID_FORMAT, "header is not valid UTF-8 at byte %zu (file offset %zu)",
				at, at + 8);
	}
	if (n == 0 || h[0] != '{')
		return fmt_fail(e, FMT_INVALID_FORMAT, "header must begin with '{' (found %s)",
				n == 0 ? "an empty header" : fmt_json_ws((unsigned char)h[0]) ? "whitespace" : "another byte");
	/* A sign is found in the text (jansson turns "-0" into 0); before the members, so that it
	 * is named as such rather than as a bad value. */
	fmt_kind k = reject_signs(h, n, e);
	if (k == FMT_OK)
		k = scan_members(sc, e);
	if (k == FMT_OK)
		k = reject_duplicate_names(sc, e);
	if (k == FMT_OK && sc->has_bad)
		k = fmt_fail(e, sc->bad.kind, "%s", sc->bad.msg);
	return k;
}

static fmt_kind add_metadata(fmt_model *m, json_t *md, fmt_err *e)
{
	const char *key;
	json_t *v;
	json_object_foreach(md, key, v) {
		fmt_value val = fmt_value_str(json_string_value(v), json_string_length(v));
		if (!val.v.str.ptr)
			return fmt_fail(e, FMT_IO, "out of memory");
		fmt_kind k = fmt_model_add_meta(m, key, &val, e);
		fmt_value_free(&val);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind add_tensors(fmt_model *m, int source, uint64_t data_start, const st_entry *t,
			    size_t n, const uint64_t *nelems, const uint64_t *nbytes, fmt_err *e)
{
	for (size_t i = 0; i < n; i++) {
		fmt_tensor ft;
		memset(&ft, 0, sizeof ft);
		ft.name = (char *)t[i].name;
		ft.dtype = t[i].dtype;
		ft.ndim = t[i].ndim;
		memcpy(ft.shape, t[i].shape, sizeof ft.shape);
		ft.nelems = nelems[i];
		ft.nbytes = nbytes[i];
		ft.source = source;
		ft.offset = data_start + t[i].begin; /* within the file: coverage was checked */
		ft.file_offset = t[i].begin;
		fmt_kind k = fmt_model_add_tensor(m, &ft, NULL, e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static fmt_kind check_coverage(uint64_t size, uint64_t header_len, uint64_t data_len, fmt_err *e)
{
	uint64_t expected;
	if (fmt_add_u64(8 + header_len, data_len, &expected) || expected > size)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"file is truncated: the tensors end at byte %llu but the file has %llu bytes",
				(unsigned long long)(8 + header_len) + (unsigned long long)data_len,
				(unsigned long long)size);
	if (expected < size)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"file has %llu byte%s after the last tensor (expected %llu bytes, found %llu)",
				(unsigned long long)(size - expected), size - expected == 1 ? "" : "s",
				(unsigned long long)expected,
				(unsigned long long)size);
	return FMT_OK;
}

/* The tensors of a parsed header sorted by offsets and checked (check_layout): *sizes (freed
 * by the caller, also on failure) gets their element counts then their byte sizes. */
static fmt_kind layout_parsed(st_scan *sc, uint64_t **sizes, uint64_t *data_len, fmt_err *e)
{
	if (sc->nt)
		qsort(sc->t, sc->nt, sizeof *sc->t, cmp_entry_offsets);
	*data_len = 0;
	*sizes = malloc(2 * (sc->nt ? sc->nt : 1) * sizeof **sizes);
	if (!*sizes)
		return fmt_fail(e, FMT_IO, "out of memory");
	return check_layout(sc->t, sc->nt, *sizes, *sizes + sc->nt, data_len, e);
}

static fmt_kind open_parsed(fmt_model *m, int source, int with_meta, uint64_t n, st_scan *sc, fmt_err *e)
{
	st_entry *t = sc->t;
	size_t nt = sc->nt;
	uint64_t *sizes, data_len;
	fmt_kind k = layout_parsed(sc, &sizes, &data_len, e);
	if (k == FMT_OK)
		k = check_coverage(m->sources[source].size, n, data_len, e);
	if (k == FMT_OK && with_meta && sc->meta)
		k = add_metadata(m, sc->meta, e);
	if (k == FMT_OK)
		k = add_tensors(m, source, 8 + n, t, nt, sizes, sizes + nt, e);
	free(sizes);
	return k;
}

fmt_kind fmt_st_open_source(fmt_model *m, int source, int with_meta, fmt_err *e)
{
	if (source < 0 || (size_t)source >= m->n_sources)
		return fmt_fail(e, FMT_INTERNAL, "safetensors: no source %d", source);
	char *h = NULL;
	uint64_t n = 0;
	st_scan sc;
	fmt_kind k = read_header(&m->sources[source], &h, &n, e);
	if (k != FMT_OK)
		return k;
	k = parse_header(h, (size_t)n, &sc, e);
	if (k == FMT_OK)
		k = open_parsed(m, source, with_meta, n, &sc, e);
	scan_free(&sc);
	free(h);
	return k;
}

/* A stream's header, from its first 8 + length bytes: the checks of open up to the layout of
 * the tensors (their coverage of the file needs its size, known once it is read whole). */
static fmt_kind st_check_head(fmt_source *s, fmt_err *e)
{
	uint8_t raw[8];
	char *h = NULL;
	uint64_t n = 0;
	fmt_kind k = fmt_source_keep(s, 8, e);
	if (k == FMT_OK && s->head_len >= 8 && fmt_source_read(s, 0, raw, 8, e) == FMT_OK &&
	    fmt_rd_u64(raw) <= FMT_ST_HEADER_MAX)
		k = fmt_source_keep(s, 8 + (size_t)fmt_rd_u64(raw), e);
	if (k != FMT_OK || !s->sequential || s->head_len < 8)
		return k;     /* a short stream: open says what is wrong */
	if ((k = read_header(s, &h, &n, e)) != FMT_OK)
		return k;
	st_scan sc;
	uint64_t *sizes = NULL, data_len;
	k = parse_header(h, (size_t)n, &sc, e);
	if (k == FMT_OK)
		k = layout_parsed(&sc, &sizes, &data_len, e);
	free(sizes);
	scan_free(&sc);
	free(h);
	return k;
}

static fmt_kind st_open(fmt_model *m, fmt_err *e)
{
	m->version = 0;
	fmt_kind k = fmt_st_open_source(m, 0, 1, e);
	if (k != FMT_OK)
		return k;
	uint8_t raw[8];
	st_state *st = calloc(1, sizeof *st);
	if (!st)
		return fmt_fail(e, FMT_IO, "out of memory");
	k = fmt_source_read(&m->sources[0], 0, raw, sizeof raw, e);
	st->header_len = fmt_rd_u64(raw);
	m->format_state = st;
	return k;
}

static void st_close(fmt_model *m)
{
	free(m->format_state);
	m->format_state = NULL;
}

uint64_t fmt_st_header_len(const fmt_model *m)
{
	if (m->driver != &fmt_driver_safetensors || !m->format_state)
		return 0;
	return ((const st_state *)m->format_state)->header_len;
}

/* ---- writer ---- */


/* Sorting works on arrays of pointers into the model (qsort has no context argument). */
static int cmp_write_order(const void *pa, const void *pb)
{
	const fmt_tensor *a = *(const fmt_tensor *const *)pa, *b = *(const fmt_tensor *const *)pb;
	int ra = fmt_dtype_get(a->dtype)->st_rank, rb = fmt_dtype_get(b->dtype)->st_rank;
	if (ra != rb)
		return ra > rb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_tensor_names(const void *pa, const void *pb)
{
	const fmt_tensor *a = *(const fmt_tensor *const *)pa, *b = *(const fmt_tensor *const *)pb;
	return strcmp(a->name, b->name);
}

static int cmp_meta_keys(const void *pa, const void *pb)
{
	const fmt_meta *a = *(const fmt_meta *const *)pa, *b = *(const fmt_meta *const *)pb;
	return strcmp(a->key, b->key);
}

static fmt_kind check_writable_tensor(const fmt_tensor *t, fmt_err *e)
{
	const fmt_dtype_info *info = fmt_dtype_get(t->dtype);
	uint64_t nelems, nbytes;
	if (!info || !info->in_safetensors || info->st_rank < 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor " NM ": dtype %s cannot be stored in safetensors",
				t->name, info ? info->name : "?");
	if (!fmt_utf8_valid(t->name, strlen(t->name)))
		return fmt_fail(e, FMT_UNSUPPORTED, "tensor " NM ": name is not valid UTF-8", t->name);
	if (strcmp(t->name, "__metadata__") == 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "a tensor named '__metadata__' cannot be stored in safetensors");
	if (t->ndim < 0 || t->ndim > FMT_MAX_DIMS)
		return fmt_fail(e, FMT_INTERNAL, "tensor " NM ": rank %d", t->name, t->ndim);
	fmt_kind k = fmt_dtype_nbytes(t->dtype, t->shape, t->ndim, &nelems, &nbytes, e);
	if (k != FMT_OK) {
		fmt_err_prefix(e, "tensor " NM, t->name);
		return k;
	}
	if (nbytes != t->nbytes)
		return fmt_fail(e, FMT_INTERNAL, "tensor " NM ": holds %llu bytes, its shape needs %llu",
				t->name, (unsigned long long)t->nbytes, (unsigned long long)nbytes);
	return FMT_OK;
}

fmt_kind fmt_st_tensor_order(const fmt_model *m, size_t **order, fmt_err *e)
{
	size_t n = m->n_tensors;
	const fmt_tensor **ptr = malloc((n ? n : 1) * sizeof *ptr);
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	fmt_kind k = FMT_OK;
	if (!ptr || !idx) {
		k = fmt_fail(e, FMT_IO, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		k = check_writable_tensor(&m->tensors[i], e);
		ptr[i] = &m->tensors[i];
	}
	if (k != FMT_OK)
		goto out;
	qsort(ptr, n, sizeof *ptr, cmp_tensor_names);
	for (size_t i = 1; i < n; i++)
		if (strcmp(ptr[i - 1]->name, ptr[i]->name) == 0) {
			k = fmt_fail(e, FMT_INVALID_FORMAT, "duplicate tensor name " NM, ptr[i]->name);
			goto out;
		}
	qsort(ptr, n, sizeof *ptr, cmp_write_order);
	for (size_t i = 0; i < n; i++)
		idx[i] = (size_t)(ptr[i] - m->tensors);
	*order = idx;
	idx = NULL;
out:
	free(ptr);
	free(idx);
	return k;
}

/* The string metadata entries sorted by key; *skipped counts the others. */
static fmt_kind string_meta(const fmt_model *m, const fmt_meta ***out, size_t *n_out, size_t *skipped,
			    fmt_err *e)
{
	const fmt_meta **md = malloc((m->n_meta ? m->n_meta : 1) * sizeof *md);
	size_t n = 0;
	if (!md)
		return fmt_fail(e, FMT_IO, "out of memory");
	*skipped = 0;
	for (size_t i = 0; i < m->n_meta; i++) {
		const fmt_meta *x = &m->meta[i];
		if (x->val.type != FMT_V_STR) {
			(*skipped)++;
			continue;
		}
		const char *why = !fmt_utf8_valid(x->key, strlen(x->key)) ? "key is not valid UTF-8"
				: !fmt_utf8_valid(x->val.v.str.ptr, x->val.v.str.len) ? "value is not valid UTF-8"
				: memchr(x->val.v.str.ptr, 0, x->val.v.str.len) ? "value contains a NUL byte"
				: NULL;
		if (why) {
			free(md);
			return fmt_fail(e, FMT_UNSUPPORTED, "metadata " NM ": %s", x->key, why);
		}
		md[n++] = x;
	}
	qsort(md, n, sizeof *md, cmp_meta_keys);
	for (size_t i = 1; i < n; i++)
		if (strcmp(md[i - 1]->key, md[i]->key) == 0) {
			const char *key = md[i]->key;
			free(md);
			return fmt_fail(e, FMT_INVALID_FORMAT, "duplicate metadata key " NM, key);
		}
	*out = md;
	*n_out = n;
	return FMT_OK;
}

static void sb_tensor(fmt_sb *b, const fmt_tensor *t, uint64_t begin)
{
	fmt_sb_json_str(b, t->name, strlen(t->name));
	fmt_sb_puts(b, ":{\"dtype\":\"");
	fmt_sb_puts(b, fmt_dtype_name(t->dtype));
	fmt_sb_puts(b, "\",\"shape\":[");
	for (int d = 0; d < t->ndim; d++) {
		if (d)
			fmt_sb_put(b, ",", 1);
		fmt_sb_u64(b, t->shape[d]);
	}
	fmt_sb_puts(b, "],\"data_offsets\":[");
	fmt_sb_u64(b, begin);
	fmt_sb_put(b, ",", 1);
	fmt_sb_u64(b, begin + t->nbytes);
	fmt_sb_puts(b, "]}");
}

/* The compact header JSON (§6.2) for the tensors in order. */
static fmt_kind build_header(const fmt_model *m, const size_t *order, fmt_sb *b, size_t *skipped,
			     fmt_err *e)
{
	const fmt_meta **meta = NULL;
	size_t n_meta = 0;
	fmt_kind k = string_meta(m, &meta, &n_meta, skipped, e);
	if (k != FMT_OK)
		return k;
	int first = 1;
	fmt_sb_put(b, "{", 1);
	if (n_meta) {
		fmt_sb_puts(b, "\"__metadata__\":{");
		for (size_t i = 0; i < n_meta; i++) {
			const fmt_meta *md = meta[i];
			if (i)
				fmt_sb_put(b, ",", 1);
			fmt_sb_json_str(b, md->key, strlen(md->key));
			fmt_sb_put(b, ":", 1);
			fmt_sb_json_str(b, md->val.v.str.ptr, md->val.v.str.len);
		}
		fmt_sb_put(b, "}", 1);
		first = 0;
	}
	free(meta);
	uint64_t offset = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[order[i]];
		if (!first)
			fmt_sb_put(b, ",", 1);
		first = 0;
		sb_tensor(b, t, offset);
		if (fmt_add_u64(offset, t->nbytes, &offset))
			return fmt_fail(e, FMT_UNSUPPORTED, "total tensor size overflows 64 bits");
	}
	fmt_sb_put(b, "}", 1);
	if (b->oom)
		return fmt_fail(e, FMT_IO, "out of memory building the safetensors header");
	return FMT_OK;
}

fmt_kind fmt_st_header_json(const fmt_model *m, char **json, size_t *len, fmt_err *e)
{
	size_t *order = NULL, skipped;
	fmt_sb b = { 0 };
	fmt_kind k = fmt_st_tensor_order(m, &order, e);
	if (k != FMT_OK)
		return k;
	k = build_header(m, order, &b, &skipped, e);
	free(order);
	if (k != FMT_OK) {
		free(b.p);
		return k;
	}
	*json = b.p;
	*len = b.len;
	return FMT_OK;
}

/* The header's length as written: padded with blanks to 8 bytes, within the format's cap. */
static fmt_kind padded_header_len(size_t len, uint64_t *padded, fmt_err *e)
{
	if (fmt_align_up_u64(len, 8, padded) || *padded > FMT_ST_HEADER_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "header would be %zu bytes, above the %u-byte safetensors cap",
				len, FMT_ST_HEADER_MAX);
	return FMT_OK;
}

fmt_kind fmt_st_file_bytes(const fmt_model *m, uint64_t *bytes, fmt_err *e)
{
	char *json = NULL;
	size_t len = 0;
	uint64_t padded = 0;
	fmt_kind k = fmt_st_header_json(m, &json, &len, e);
	free(json);
	if (k == FMT_OK)
		k = padded_header_len(len, &padded, e);
	uint64_t n = 8 + padded;   /* the header is capped far below overflow */
	for (size_t i = 0; k == FMT_OK && i < m->n_tensors; i++)
		if (fmt_add_u64(n, m->tensors[i].nbytes, &n))
			k = fmt_fail(e, FMT_UNSUPPORTED, "total tensor size overflows 64 bits");
	if (k == FMT_OK)
		*bytes = n;
	return k;
}

static fmt_kind write_tensors(const fmt_model *m, const size_t *order, fmt_sink *k, int threads, fmt_err *e)
{
	return fmt_model_write_tensors(m, order, m->n_tensors, k, threads, e);
}

static fmt_kind st_write_threads(const fmt_model *m, fmt_sink *k, size_t *skipped_meta, int threads, fmt_err *e)
{
	size_t *order = NULL, skipped = 0;
	fmt_sb b = { 0 };
	fmt_kind r = fmt_st_tensor_order(m, &order, e);
	if (r != FMT_OK)
		return r;
	r = build_header(m, order, &b, &skipped, e);
	uint64_t padded = 0;
	if (r == FMT_OK)
		r = padded_header_len(b.len, &padded, e);
	if (r == FMT_OK) {
		uint8_t len_le[8];
		fmt_wr_u64(len_le, padded);
		while (b.len < padded)
			fmt_sb_put(&b, " ", 1);
		r = b.oom ? fmt_fail(e, FMT_IO, "out of memory") : fmt_sink_write(k, len_le, 8, e);
	}
	if (r == FMT_OK)
		r = fmt_sink_write(k, b.p, b.len, e);
	free(b.p);
	if (r == FMT_OK)
		r = write_tensors(m, order, k, threads, e);
	free(order);
	if (r == FMT_OK && skipped_meta)
		*skipped_meta = skipped;
	return r;
}

fmt_kind fmt_st_write_ex(const fmt_model *m, fmt_sink *k, size_t *skipped_meta, fmt_err *e)
{
	return st_write_threads(m, k, skipped_meta, 1, e);
}

fmt_kind fmt_st_write(const fmt_model *m, fmt_sink *k, fmt_err *e)
{
	return fmt_st_write_ex(m, k, NULL, e);
}

static fmt_kind st_write(const fmt_model *m, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	return st_write_threads(m, k, NULL, o ? o->threads : 1, e);
}

const fmt_driver fmt_driver_safetensors = {
	.name = "safetensors",
	.extension = ".safetensors",
	.title = "safetensors",
	.probe = st_probe,
	.open = st_open,
	.check_head = st_check_head,
	.verify = NULL,
	.set_driver = &fmt_driver_st_index,
	.write = st_write,
	.plan_shards = fmt_st_plan_shards,
	.write_sharded = fmt_st_write_sharded,
	.shard_limits = FMT_ST_SHARD_LIMITS,
	.default_shard_bytes = 5000000000ull,   /* Hugging Face's max_shard_size, decimal */
	.close = st_close,
};
