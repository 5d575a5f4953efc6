/* The footer: FileMetaData in the Thrift compact protocol, read into the schema fields, the
 * leaf columns and the row groups, every count, offset and length checked against the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "pq_internal.h"

/* the root and FMT_TABLE_MAX_COLUMNS columns of up to three elements each (a LIST: its group,
 * the repeated group and the element); fmt_schema_check counts the columns */
#define MAX_SCHEMA_ELEMENTS (1 + 3 * FMT_TABLE_MAX_COLUMNS)
#define MAX_FOOTER (256u << 20)
/* The fewest footer bytes a row group (its columns' list and rows) and a column chunk (its
 * offset and metadata) take: their structs are allocated as their lists' counts say. */
#define MIN_GROUP_BYTES 5
#define MIN_CHUNK_BYTES 8
/* What the leaf columns' paths ("a.b.c") may take together beyond the footer's bytes: a footer
 * lists every leaf's path in each row group's chunks, so a file's fit in it; a schema without row
 * groups has this much more (a name a nested column's leaves share is in each of their paths). */
#define PATH_SLACK (16u << 20)

static fmt_kind bad(fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: malformed footer (%s)", what);
}

static fmt_kind oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

/* The logical type of a schema element, from LogicalType or the older ConvertedType. */
enum { LT_NONE = 0, LT_STRING = 1, LT_MAP = 2, LT_LIST = 3, LT_ENUM = 4, LT_DECIMAL = 5, LT_DATE = 6,
       LT_TIME = 7, LT_TIMESTAMP = 8, LT_INTEGER = 10, LT_UNKNOWN = 11, LT_JSON = 12, LT_BSON = 13,
       LT_UUID = 14, LT_FLOAT16 = 15,
       LT_INTERVAL = 100 /* ConvertedType INTERVAL (21) only: LogicalType has none */ };

typedef struct element {
	int32_t type, type_length, repetition, num_children, converted, scale, precision;
	int has_type, has_converted;
	const uint8_t *name;
	uint32_t name_len;
	int lt, lt_unit, lt_utc, lt_bits, lt_signed, lt_scale, lt_precision;
} element;

/* TimeUnit: a union of empty structs, MILLIS (1), MICROS (2), NANOS (3). */
static int read_unit(tc_in *r, int type, int *unit)
{
	int16_t last = 0, id;
	int t, f;
	if (fmt_pq_tc_enter(r, type))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		if (id >= 1 && id <= 3)
			*unit = id;
		if (fmt_pq_tc_skip(r, t))
			return -1;
	}
	fmt_pq_tc_leave(r);
	return f;
}

/* The fields of TIME, TIMESTAMP, INTEGER and DECIMAL. */
static int read_lt_params(tc_in *r, int type, element *el)
{
	int16_t last = 0, id;
	int t, f, v;
	int64_t x;
	if (fmt_pq_tc_enter(r, type))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		int bad_field = 0;
		if (el->lt == LT_DECIMAL && (id == 1 || id == 2)) {
			bad_field = fmt_pq_tc_int(r, t, &x) || x < 0 || x > 1000;
			*(id == 1 ? &el->lt_scale : &el->lt_precision) = (int)x;
		} else if ((el->lt == LT_TIME || el->lt == LT_TIMESTAMP) && id == 1) {
			bad_field = fmt_pq_tc_bool(r, t, &v);
			el->lt_utc = v;
		} else if ((el->lt == LT_TIME || el->lt == LT_TIMESTAMP) && id == 2) {
			bad_field = read_unit(r, t, &el->lt_unit);
		} else if (el->lt == LT_INTEGER && id == 1) {
			bad_field = fmt_pq_tc_int(r, t, &x);
			el->lt_bits = (int)x;
		} else if (el->lt == LT_INTEGER && id == 2) {
			bad_field = fmt_pq_tc_bool(r, t, &v);
			el->lt_signed = v;
		} else {
			bad_field = fmt_pq_tc_skip(r, t);
		}
		if (bad_field)
			return -1;
	}
	fmt_pq_tc_leave(r);
	return f;
}

/* LogicalType: a union; the one field set says which. */
static int read_logical(tc_in *r, int type, element *el)
{
	int16_t last = 0, id;
	int t, f;
	if (fmt_pq_tc_enter(r, type))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		el->lt = id;
		if ((id == LT_DECIMAL || id == LT_TIME || id == LT_TIMESTAMP || id == LT_INTEGER) && t == TC_STRUCT) {
			if (read_lt_params(r, t, el))
				return -1;
		} else if (fmt_pq_tc_skip(r, t)) {
			return -1;
		}
	}
	fmt_pq_tc_leave(r);
	return f;
}

static int read_element(tc_in *r, int type, element *el)
{
	int16_t last = 0, id;
	int t, f;
	memset(el, 0, sizeof *el);
	el->repetition = REP_REQUIRED;
	if (fmt_pq_tc_enter(r, type))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		int err;
		switch (id) {
		case 1: err = fmt_pq_tc_i32(r, t, &el->type); el->has_type = 1; break;
		case 2: err = fmt_pq_tc_i32(r, t, &el->type_length); break;
		case 3: err = fmt_pq_tc_i32(r, t, &el->repetition); break;
		case 4: err = fmt_pq_tc_binary(r, t, &el->name, &el->name_len); break;
		case 5: err = fmt_pq_tc_i32(r, t, &el->num_children); break;
		case 6: err = fmt_pq_tc_i32(r, t, &el->converted); el->has_converted = 1; break;
		case 7: err = fmt_pq_tc_i32(r, t, &el->scale); break;
		case 8: err = fmt_pq_tc_i32(r, t, &el->precision); break;
		case 10: err = t == TC_STRUCT ? read_logical(r, t, el) : -1; break;
		default: err = fmt_pq_tc_skip(r, t);
		}
		if (err)
			return -1;
	}
	fmt_pq_tc_leave(r);
	return f;
}

/* The older ConvertedType as a logical type, when no LogicalType was given. */
static void converted_as_logical(element *el)
{
	static const struct { int lt, bits, sign, unit, utc; } map[] = {
		[0] = { LT_STRING, 0, 0, 0, 0 }, [1] = { LT_MAP, 0, 0, 0, 0 }, [2] = { LT_MAP, 0, 0, 0, 0 },
		[3] = { LT_LIST, 0, 0, 0, 0 }, [4] = { LT_ENUM, 0, 0, 0, 0 }, [5] = { LT_DECIMAL, 0, 0, 0, 0 },
		[6] = { LT_DATE, 0, 0, 0, 0 }, [7] = { LT_TIME, 0, 0, 1, 1 }, [8] = { LT_TIME, 0, 0, 2, 1 },
		[9] = { LT_TIMESTAMP, 0, 0, 1, 1 }, [10] = { LT_TIMESTAMP, 0, 0, 2, 1 },
		[11] = { LT_INTEGER, 8, 0, 0, 0 }, [12] = { LT_INTEGER, 16, 0, 0, 0 },
		[13] = { LT_INTEGER, 32, 0, 0, 0 }, [14] = { LT_INTEGER, 64, 0, 0, 0 },
		[15] = { LT_INTEGER, 8, 1, 0, 0 }, [16] = { LT_INTEGER, 16, 1, 0, 0 },
		[17] = { LT_INTEGER, 32, 1, 0, 0 }, [18] = { LT_INTEGER, 64, 1, 0, 0 },
		[19] = { LT_JSON, 0, 0, 0, 0 }, [20] = { LT_BSON, 0, 0, 0, 0 }, [21] = { LT_INTERVAL, 0, 0, 0, 0 },
	};
	if (el->lt != LT_NONE || !el->has_converted || el->converted < 0 ||
	    el->converted >= (int32_t)(sizeof map / sizeof map[0]))
		return;
	el->lt = map[el->converted].lt;
	el->lt_bits = map[el->converted].bits;
	el->lt_signed = map[el->converted].sign;
	el->lt_unit = map[el->converted].unit;
	el->lt_utc = map[el->converted].utc;
	el->lt_scale = el->scale;
	el->lt_precision = el->precision;
}

static const char *unit_name(int unit)
{
	return unit == 1 ? "ms" : unit == 2 ? "us" : unit == 3 ? "ns" : "?";
}

static fmt_kind set_other(fmt_field *f, const char *name, fmt_err *e)
{
	f->type = FMT_C_OTHER;
	return (f->type_name = strdup(name)) ? FMT_OK : oom(e);
}

/* A leaf whose values are read as text of logical type lt (leaf->logical named): utf8. */
static fmt_kind as_text(fmt_field *f, pq_leaf *leaf, int conv)
{
	f->type = FMT_C_UTF8;
	leaf->conv = conv;
	return FMT_OK;
}

/* A logical type on a physical type it does not apply to, or with parameters out of range. */
static fmt_kind bad_logical(const element *el, const fmt_field *f, const pq_leaf *leaf, const char *what,
			    fmt_err *e)
{
	char on[48];
	if (el->type == PT_FLBA)
		snprintf(on, sizeof on, "FIXED_LEN_BYTE_ARRAY(%d)", el->type_length);
	else
		snprintf(on, sizeof on, "%s", fmt_pq_ptype_name(el->type));
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': %s on %s%s", f->name, leaf->logical, on, what);
}

/* DECIMAL(precision, scale): exact decimal text, on INT32 (up to 9 digits), INT64 (18), a
 * fixed-length byte array (as many as its bytes hold) or a byte array. */
static fmt_kind decimal_type(const element *el, fmt_field *f, pq_leaf *leaf, fmt_err *e)
{
	int p = el->lt_precision, most;
	snprintf(leaf->logical, sizeof leaf->logical, "DECIMAL(%d, %d)", p, el->lt_scale);
	switch (el->type) {
	case PT_INT32: most = 9; break;
	case PT_INT64: most = 18; break;
	case PT_FLBA: most = fmt_pq_decimal_digits(el->type_length); break;
	case PT_BYTE_ARRAY: most = INT32_MAX; break;
	default: return bad_logical(el, f, leaf, "", e);
	}
	char why[64];
	if (p < 1 || p > most || el->lt_scale < 0 || el->lt_scale > p) {
		if (p < 1)
			snprintf(why, sizeof why, " (a precision of 1 digit at least)");
		else if (p > most)
			snprintf(why, sizeof why, " (%d digits at most)", most);
		else
			snprintf(why, sizeof why, " (a scale from 0 to the precision)");
		return bad_logical(el, f, leaf, why, e);
	}
	if (p > PQ_DECIMAL_DIGITS)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': %s has over %d digits (fmtkit reads decimals of "
				"up to %d)", f->name, leaf->logical, PQ_DECIMAL_DIGITS, PQ_DECIMAL_DIGITS);
	if (el->type == PT_FLBA && el->type_length > PQ_DECIMAL_BYTES)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': %s in %d bytes (fmtkit reads decimals of up "
				"to %d bytes)", f->name, leaf->logical, el->type_length, PQ_DECIMAL_BYTES);
	leaf->scale = el->lt_scale;
	return as_text(f, leaf, CONV_DECIMAL);
}

/* The logical types read as text: DECIMAL, TIME (INT32 in ms, INT64 in us or ns), UUID (16
 * bytes), INTERVAL (12 bytes); *done = 0 for another. */
static fmt_kind text_type(const element *el, fmt_field *f, pq_leaf *leaf, int *done, fmt_err *e)
{
	*done = 1;
	switch (el->lt) {
	case LT_DECIMAL:
		return decimal_type(el, f, leaf, e);
	case LT_TIME:
		snprintf(leaf->logical, sizeof leaf->logical, "TIME(%s%s)", unit_name(el->lt_unit), el->lt_utc ? ", UTC" : "");
		if (el->lt_unit < 1 || el->lt_unit > 3 || (el->type == PT_INT32) != (el->lt_unit == 1) ||
		    (el->type != PT_INT32 && el->type != PT_INT64))
			return bad_logical(el, f, leaf, " (TIME in ms is INT32, in us or ns INT64)", e);
		leaf->unit = el->lt_unit;
		leaf->utc = el->lt_utc;
		return as_text(f, leaf, CONV_TIME);
	case LT_UUID: case LT_INTERVAL: {
		int uuid = el->lt == LT_UUID, len = uuid ? 16 : 12;
		snprintf(leaf->logical, sizeof leaf->logical, uuid ? "UUID" : "INTERVAL");
		if (el->type != PT_FLBA || el->type_length != len) {
			char why[64];
			snprintf(why, sizeof why, " (FIXED_LEN_BYTE_ARRAY(%d) expected)", len);
			return bad_logical(el, f, leaf, why, e);
		}
		return as_text(f, leaf, uuid ? CONV_UUID : CONV_INTERVAL);
	}
	default:
		*done = 0;
		return FMT_OK;
	}
}

/* The column type of a primitive leaf, and how its values convert. */
static fmt_kind leaf_type(const element *el, fmt_field *f, pq_leaf *leaf, fmt_err *e)
{
	char buf[64];
	int done;
	leaf->conv = CONV_PLAIN;
	fmt_kind k = text_type(el, f, leaf, &done, e);
	if (done)
		return k;
	switch (el->type) {
	case PT_BOOLEAN: f->type = FMT_C_BOOL; return FMT_OK;
	case PT_FLOAT: f->type = FMT_C_F32; return FMT_OK;
	case PT_DOUBLE: f->type = FMT_C_F64; return FMT_OK;
	case PT_INT96:
		f->type = FMT_C_TIMESTAMP;
		f->unit = FMT_TU_NS;
		leaf->conv = CONV_INT96_NS;
		snprintf(leaf->logical, sizeof leaf->logical, "INT96 timestamp");
		return FMT_OK;
	case PT_INT32: case PT_INT64: {
		int is64 = el->type == PT_INT64;
		if (el->lt == LT_DATE && !is64) {
			f->type = FMT_C_DATE32;
			snprintf(leaf->logical, sizeof leaf->logical, "DATE");
			return FMT_OK;
		}
		if (el->lt == LT_TIMESTAMP && is64 && el->lt_unit >= 1 && el->lt_unit <= 3) {
			f->type = FMT_C_TIMESTAMP;
			f->unit = el->lt_unit == 1 ? FMT_TU_MS : el->lt_unit == 2 ? FMT_TU_US : FMT_TU_NS;
			if (el->lt_utc && !(f->timezone = strdup("UTC")))
				return oom(e);
			snprintf(leaf->logical, sizeof leaf->logical, "TIMESTAMP(%s%s)", unit_name(el->lt_unit),
				 el->lt_utc ? ", UTC" : "");
			return FMT_OK;
		}
		if (el->lt == LT_INTEGER) {
			static const fmt_ctype s[] = { FMT_C_I8, FMT_C_I16, FMT_C_I32, FMT_C_I64 };
			static const fmt_ctype u[] = { FMT_C_U8, FMT_C_U16, FMT_C_U32, FMT_C_U64 };
			int i = el->lt_bits == 8 ? 0 : el->lt_bits == 16 ? 1 : el->lt_bits == 32 ? 2 : el->lt_bits == 64 ? 3 : -1;
			if (i < 0 || (i == 3) != is64)
				return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': INTEGER(%d) on %s", f->name,
						el->lt_bits, fmt_pq_ptype_name(el->type));
			f->type = el->lt_signed ? s[i] : u[i];
			snprintf(leaf->logical, sizeof leaf->logical, "INTEGER(%d, %s)", el->lt_bits,
				 el->lt_signed ? "signed" : "unsigned");
			return FMT_OK;
		}
		if (el->lt != LT_NONE) {
			snprintf(buf, sizeof buf, "%s with logical type %d", fmt_pq_ptype_name(el->type), el->lt);
			return set_other(f, buf, e);
		}
		f->type = is64 ? FMT_C_I64 : FMT_C_I32;
		return FMT_OK;
	}
	case PT_BYTE_ARRAY:
		if (el->lt == LT_STRING || el->lt == LT_ENUM || el->lt == LT_JSON) {
			f->type = FMT_C_UTF8;
			snprintf(leaf->logical, sizeof leaf->logical, "%s",
				 el->lt == LT_STRING ? "STRING" : el->lt == LT_ENUM ? "ENUM" : "JSON");
		} else {
			f->type = FMT_C_BINARY;
		}
		return FMT_OK;
	case PT_FLBA:
		if (el->type_length <= 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': FIXED_LEN_BYTE_ARRAY of length %d",
					f->name, el->type_length);
		if (el->lt == LT_FLOAT16) {
			if (el->type_length != 2)
				return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': FLOAT16 of %d bytes", f->name,
						el->type_length);
			f->type = FMT_C_F16;
			leaf->conv = CONV_F16;
			snprintf(leaf->logical, sizeof leaf->logical, "FLOAT16");
			return FMT_OK;
		}
		f->type = FMT_C_BINARY;
		return FMT_OK;
	default:
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': physical type %d", f->name, el->type);
	}
}

/* ---- the schema tree ---- */

typedef struct walk {
	element *els;
	size_t n, at;
	pq_meta *m;
	fmt_schema *s;
	size_t cap_leaves;
	fmt_sb path;                /* the path of the element being walked, whole */
	uint64_t path_bytes;        /* the leaves' paths so far (with their NULs) */
} walk;

/* The path of w's element below the one walked (a '.' between them, none at the top): its name
 * up to a NUL, as printed. *at: where the path ended before (path_pop). */
static fmt_kind path_push(walk *w, const element *el, size_t *at, fmt_err *e)
{
	*at = w->path.len;
	if (*at)
		fmt_sb_put(&w->path, ".", 1);
	fmt_sb_put(&w->path, (const char *)el->name, el->name ? strnlen((const char *)el->name, el->name_len) : 0);
	return w->path.oom ? oom(e) : FMT_OK;
}

static void path_pop(walk *w, size_t at)
{
	if (w->path.p) {
		w->path.len = at;
		w->path.p[at] = '\0';
	}
}

/* path as a leaf's own: charged to what the leaves' paths may take. */
static fmt_kind leaf_path(walk *w, const char *path, char **out, fmt_err *e)
{
	size_t n = strlen(path) + 1;
	if (fmt_add_u64(w->path_bytes, n, &w->path_bytes) || w->path_bytes > (uint64_t)w->m->footer_len + PATH_SLACK)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: the leaf columns' paths take more than %llu bytes "
				"(the footer's and %u MiB)", (unsigned long long)w->m->footer_len + PATH_SLACK,
				PATH_SLACK >> 20);
	if (!(*out = malloc(n)))
		return oom(e);
	memcpy(*out, path, n);
	return FMT_OK;
}

static fmt_kind add_leaf(walk *w, const element *el, const char *path, int def, int rep, long field,
			 const pq_leaf *typed, fmt_err *e)
{
	if (w->m->n_leaves == w->cap_leaves) {
		size_t cap = w->cap_leaves ? w->cap_leaves * 2 : 16;
		pq_leaf *p = realloc(w->m->leaves, cap * sizeof *p);
		if (!p)
			return oom(e);
		w->m->leaves = p;
		w->cap_leaves = cap;
	}
	pq_leaf *l = &w->m->leaves[w->m->n_leaves];
	memset(l, 0, sizeof *l);
	if (typed)
		*l = *typed;
	fmt_kind k = leaf_path(w, path, &l->path, e);
	if (k != FMT_OK)
		return k;
	w->m->n_leaves++;
	l->ptype = el->type;
	l->type_length = el->type_length;
	l->max_def = def;
	l->max_rep = rep;
	l->field = field;
	return FMT_OK;
}

/* The element at w->at and its subtree, below w->path at levels def/rep: leaves of a nested
 * top-level field (field -1). */
static fmt_kind walk_nested(walk *w, int def, int rep, int depth, fmt_err *e)
{
	if (w->at >= w->n)
		return bad(e, "schema children past the list's end");
	if (depth > 64)
		return bad(e, "schema nested too deep");
	const element *el = &w->els[w->at++];
	size_t at;
	if (!el->name)
		return bad(e, "a schema element without a name");
	fmt_kind k = path_push(w, el, &at, e);
	def += el->repetition != REP_REQUIRED;
	rep += el->repetition == REP_REPEATED;
	if (k == FMT_OK && el->num_children <= 0)
		k = el->has_type ? add_leaf(w, el, w->path.p, def, rep, -1, NULL, e) : bad(e, "a leaf without a type");
	for (int32_t i = 0; k == FMT_OK && i < el->num_children; i++)
		k = walk_nested(w, def, rep, depth + 1, e);
	path_pop(w, at);
	return k;
}

static fmt_kind field_name(const element *el, fmt_field *f, fmt_err *e)
{
	if (!el->name)
		return bad(e, "a schema element without a name");
	if (memchr(el->name, 0, el->name_len))
		return bad(e, "a column name with a NUL byte");
	return (f->name = strndup((const char *)el->name, el->name_len)) ? FMT_OK : oom(e);
}

static void field_clear(fmt_field *f)
{
	free(f->name);
	free(f->timezone);
	free(f->type_name);
	memset(f, 0, sizeof *f);
}

static int named(const element *el, const char *name, const char *suffix)
{
	size_t n = strlen(name), m = strlen(suffix);
	return el->name_len == n + m && memcmp(el->name, name, n) == 0 && memcmp(el->name + n, suffix, m) == 0;
}

/* The shape of a list fmtkit reads, at els[w->at]: a LIST group of a repeated group of one
 * primitive element (the standard three levels), a LIST group of a repeated primitive, or a
 * repeated primitive at the top (the older two levels). *leaf: its element's index in els,
 * *span: the subtree's elements, *list_def: the definition level of an empty list. 0 for
 * another shape: a list of structs (a repeated group named "array" or "NAME_tuple" is its
 * element, as the specification's backward-compatibility rules say), of lists, a map. */
static int list_shape(const walk *w, const char *name, size_t *leaf, size_t *span, int *list_def)
{
	const element *top = &w->els[w->at], *mid, *el;
	*list_def = top->repetition == REP_OPTIONAL;
	if (top->num_children <= 0) {
		*leaf = w->at, *span = 1;
		return top->repetition == REP_REPEATED;
	}
	if (top->lt != LT_LIST || top->repetition == REP_REPEATED || top->num_children != 1 || w->n - w->at < 2)
		return 0;
	mid = &w->els[w->at + 1];
	if (mid->repetition != REP_REPEATED)
		return 0;
	if (mid->num_children <= 0) {
		*leaf = w->at + 1, *span = 2;
		return 1;
	}
	if (mid->num_children != 1 || w->n - w->at < 3 || named(mid, "array", "") || named(mid, name, "_tuple"))
		return 0;
	el = &w->els[w->at + 2];
	*leaf = w->at + 2, *span = 3;
	return el->num_children <= 0 && el->repetition != REP_REPEATED;
}

/* The list field f (named) at els[w->at] when it has a shape fmtkit reads and a numeric
 * element (an integer, float16, float32, float64; dates and timestamps are not list elements
 * in fmtkit's other formats either): its leaf added, *done = 1; else nothing (*done = 0). The list size is left 0 for the
 * reader to find. */
static fmt_kind walk_list(walk *w, fmt_field *f, long index, int *done, fmt_err *e)
{
	size_t at, span;
	int list_def;
	*done = 0;
	if (!list_shape(w, f->name, &at, &span, &list_def))
		return FMT_OK;
	const element *el = &w->els[at];
	fmt_field elem = { .name = f->name };
	pq_leaf typed = { 0 };
	if (!el->has_type || el->name == NULL)
		return FMT_OK;      /* walk_nested names what is wrong */
	fmt_kind k = leaf_type(el, &elem, &typed, e);
	if (k != FMT_OK || elem.type < FMT_C_I8 || elem.type > FMT_C_F64) { /* numbers, as Arrow's */
		free(elem.type_name);
		free(elem.timezone);
		return k;
	}
	f->type = FMT_C_FIXED_SIZE_LIST;
	f->elem = elem.type;
	f->unit = elem.unit;
	f->timezone = elem.timezone;
	f->nullable = list_def;
	typed.list = 1;
	typed.list_def = list_def;
	int max_def = list_def + 1 + (span == 3 && el->repetition == REP_OPTIONAL);
	size_t before;
	for (size_t i = w->at; i < w->at + span && k == FMT_OK; i++)
		k = path_push(w, &w->els[i], &before, e);
	if (k == FMT_OK && (k = fmt_schema_add_field(w->s, f, e)) == FMT_OK)
		k = add_leaf(w, el, w->path.p, max_def, 1, index, &typed, e);
	path_pop(w, 0);
	w->at += span;
	*done = 1;
	return k;
}

/* A top-level field: a primitive column, or a nested one fmtkit names but does not convert. */
static fmt_kind walk_top(walk *w, fmt_err *e)
{
	if (w->at >= w->n)
		return bad(e, "schema children past the list's end");
	const element *el = &w->els[w->at];
	fmt_field f = { 0 };
	fmt_kind k = field_name(el, &f, e);
	long index = (long)w->s->n_fields;
	int done = 0;
	if (k == FMT_OK && (el->num_children > 0 || el->repetition == REP_REPEATED))
		k = walk_list(w, &f, index, &done, e);
	if (done || k != FMT_OK) {
		field_clear(&f);
		return k;
	}
	if (el->num_children > 0 || el->repetition == REP_REPEATED) {
		const char *what = el->lt == LT_LIST || el->repetition == REP_REPEATED ? "list" :
				   el->lt == LT_MAP ? "map" : "struct";
		f.nullable = 1;
		k = set_other(&f, what, e);
		if (k == FMT_OK)
			k = fmt_schema_add_field(w->s, &f, e);
		if (k == FMT_OK)
			k = walk_nested(w, 0, 0, 0, e);
		field_clear(&f);
		return k;
	}
	pq_leaf typed = { 0 };
	if (k == FMT_OK && !el->has_type)
		k = bad(e, "a leaf without a type");
	if (k == FMT_OK)
		k = leaf_type(el, &f, &typed, e);
	f.nullable = el->repetition == REP_OPTIONAL;
	if (k == FMT_OK)
		k = fmt_schema_add_field(w->s, &f, e);
	if (k == FMT_OK)
		k = add_leaf(w, el, f.name, f.nullable, 0, index, &typed, e);
	w->at++;
	field_clear(&f);
	return k;
}

static fmt_kind read_schema(tc_in *r, int type, pq_meta *m, fmt_schema *s, fmt_err *e)
{
	int elem;
	uint32_t n;
	if (fmt_pq_tc_list(r, type, &elem, &n) || elem != TC_STRUCT || n == 0)
		return bad(e, "schema list");
	if (n > MAX_SCHEMA_ELEMENTS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: %u schema elements: more than %d", n, MAX_SCHEMA_ELEMENTS);
	walk w = { .n = n, .m = m, .s = s };
	if (!(w.els = calloc(n, sizeof *w.els)))
		return oom(e);
	fmt_kind k = FMT_OK;
	for (uint32_t i = 0; i < n && k == FMT_OK; i++) {
		if (read_element(r, elem, &w.els[i]) != 0)
			k = bad(e, "schema element");
		else
			converted_as_logical(&w.els[i]);
	}
	if (k == FMT_OK && (w.els[0].num_children < 0 || (uint32_t)w.els[0].num_children > n - 1))
		k = bad(e, "root's child count");
	w.at = 1;
	for (int32_t i = 0; k == FMT_OK && i < w.els[0].num_children; i++)
		k = walk_top(&w, e);
	if (k == FMT_OK && w.at != n)
		k = bad(e, "schema elements outside the tree");
	free(w.els);
	fmt_sb_free(&w.path);
	return k;
}

/* ---- row groups ---- */

static int read_stats(tc_in *r, int type, pq_stats *st)
{
	int16_t last = 0, id;
	int t, f;
	const uint8_t *p;
	uint32_t n;
	const uint8_t *old_min = NULL, *old_max = NULL;
	uint32_t old_min_len = 0, old_max_len = 0;
	if (fmt_pq_tc_enter(r, type))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		int err = 0;
		if (id == 1 || id == 2 || id == 5 || id == 6) {
			err = fmt_pq_tc_binary(r, t, &p, &n);
			if (id == 1) { old_max = p; old_max_len = n; }
			if (id == 2) { old_min = p; old_min_len = n; }
			if (id == 5) { st->max = p; st->max_len = n; }
			if (id == 6) { st->min = p; st->min_len = n; }
		} else if (id == 3) {
			err = fmt_pq_tc_int(r, t, &st->null_count);
		} else if (id == 4) {
			err = fmt_pq_tc_int(r, t, &st->distinct_count);
		} else {
			err = fmt_pq_tc_skip(r, t);
		}
		if (err)
			return -1;
	}
	fmt_pq_tc_leave(r);
	/* the deprecated min/max (signed byte order for strings in old writers): only when the
	 * newer fields are absent */
	if (!st->min && !st->max && old_min && old_max) {
		st->min = old_min, st->min_len = old_min_len;
		st->max = old_max, st->max_len = old_max_len;
		st->legacy = 1;
	}
	return f;
}

static int read_chunk_meta(tc_in *r, int type, pq_chunk *c, int *ptype)
{
	int16_t last = 0, id;
	int t, f, elem;
	uint32_t n;
	int64_t v;
	if (fmt_pq_tc_enter(r, type))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		int err = 0;
		switch (id) {
		case 1: err = fmt_pq_tc_int(r, t, &v); *ptype = (int)v; break;
		case 2:
			err = fmt_pq_tc_list(r, t, &elem, &n);
			for (uint32_t i = 0; !err && i < n; i++) {
				err = fmt_pq_tc_int(r, elem, &v);
				if (!err && v >= 0 && v < 32)
					c->encodings |= 1u << v;
			}
			break;
		case 4: err = fmt_pq_tc_int(r, t, &v); c->codec = (int)v; break;
		case 5: err = fmt_pq_tc_int(r, t, &c->num_values); break;
		case 6: err = fmt_pq_tc_int(r, t, &c->total_uncompressed); break;
		case 7: err = fmt_pq_tc_int(r, t, &c->total_compressed); break;
		case 9: err = fmt_pq_tc_int(r, t, &c->data_page_offset); break;
		case 11: err = fmt_pq_tc_int(r, t, &c->dict_page_offset); break;
		case 12: err = read_stats(r, t, &c->stats); break;
		default: err = fmt_pq_tc_skip(r, t);
		}
		if (err)
			return -1;
	}
	fmt_pq_tc_leave(r);
	return f;
}

static fmt_kind read_chunk(tc_in *r, int type, pq_chunk *c, const pq_leaf *leaf, uint64_t data_end, fmt_err *e)
{
	int16_t last = 0, id;
	int t, f, ptype = -1, has_meta = 0;
	memset(c, 0, sizeof *c);
	c->dict_page_offset = -1;
	c->codec = -1;
	c->stats.null_count = c->stats.distinct_count = -1;
	if (fmt_pq_tc_enter(r, type))
		return bad(e, "column chunk");
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		if (id == 1)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s' is stored in another file", leaf->path);
		if (id == 3) {
			if (read_chunk_meta(r, t, c, &ptype))
				return bad(e, "column metadata");
			has_meta = 1;
		} else if (fmt_pq_tc_skip(r, t)) {
			return bad(e, "column chunk");
		}
	}
	fmt_pq_tc_leave(r);
	if (f < 0 || !has_meta)
		return bad(e, "column chunk without metadata");
	if (ptype != leaf->ptype)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': chunk of type %s, schema says %s",
				leaf->path, fmt_pq_ptype_name(ptype), fmt_pq_ptype_name(leaf->ptype));
	int64_t start = c->data_page_offset;
	if (c->dict_page_offset >= 4 && c->dict_page_offset < c->data_page_offset)
		start = c->dict_page_offset;
	else
		c->dict_page_offset = -1;
	uint64_t end;
	if (start < 4 || c->total_compressed <= 0 || c->num_values < 0 ||
	    fmt_add_u64((uint64_t)start, (uint64_t)c->total_compressed, &end) || end > data_end)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': chunk at %lld of %lld bytes is outside "
				"the file's data (%llu bytes)", leaf->path, (long long)start,
				(long long)c->total_compressed, (unsigned long long)data_end);
	c->start = (uint64_t)start;
	c->end = end;
	return FMT_OK;
}

/* The chunks of a row group, n of them (the schema's leaves), into chunks; *stored: their bytes
 * in the file. */
static fmt_kind read_chunks(tc_in *r, int elem, uint32_t n, const pq_meta *m, pq_chunk *chunks, uint64_t data_end,
			    uint64_t *stored, fmt_err *e)
{
	*stored = 0;
	for (uint32_t i = 0; i < n; i++) {
		fmt_kind k = read_chunk(r, elem, &chunks[i], &m->leaves[i], data_end, e);
		if (k != FMT_OK)
			return k;
		*stored = fmt_sat_add_u64(*stored, chunks[i].end - chunks[i].start);
	}
	return FMT_OK;
}

/* A RowGroup struct: its rows and size into g, its chunks (one per leaf) into chunks. */
static fmt_kind read_group(tc_in *r, int type, const pq_meta *m, pq_rowgroup *g, pq_chunk *chunks,
			   uint64_t data_end, fmt_err *e)
{
	int16_t last = 0, id;
	int t, f, elem, has_chunks = 0;
	uint32_t n;
	if (fmt_pq_tc_enter(r, type))
		return bad(e, "row group");
	g->num_rows = -1;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		fmt_kind k = FMT_OK;
		if (id == 1) {
			if (has_chunks || fmt_pq_tc_list(r, t, &elem, &n) || elem != TC_STRUCT)
				return bad(e, "row group columns");
			if (n != m->n_leaves)
				return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: a row group has %u columns, the schema %zu",
						n, m->n_leaves);
			if ((uint64_t)n * MIN_CHUNK_BYTES > fmt_pq_tc_left(r))
				return bad(e, "row group columns run past the footer");
			has_chunks = 1;
			k = read_chunks(r, elem, n, m, chunks, data_end, &g->stored, e);
		} else if (id == 2) {
			k = fmt_pq_tc_int(r, t, &g->total_byte_size) ? bad(e, "row group size") : FMT_OK;
		} else if (id == 3) {
			k = fmt_pq_tc_int(r, t, &g->num_rows) ? bad(e, "row group rows") : FMT_OK;
		} else {
			k = fmt_pq_tc_skip(r, t) ? bad(e, "row group") : FMT_OK;
		}
		if (k != FMT_OK)
			return k;
	}
	fmt_pq_tc_leave(r);
	if (f < 0 || !has_chunks || g->num_rows < 0)
		return bad(e, "row group without columns or rows");
	return FMT_OK;
}

/* ---- the footer read a window at a time ----
 *
 * A wide file's footer of many row groups is large (19.7 MB for 75 groups of 4,000 columns,
 * 157 MB for 596): it is read through a window of FOOT_WINDOW bytes, each item (a field of
 * FileMetaData, a row group) parsed where the window holds all of it. An item is measured first
 * (skipped as Thrift, on a copy of the reader); when that fails the window moves on to the item
 * and reads more, then doubles, until the item is measured or the window reaches the footer's
 * end: an item parsed there fails where it fails in the whole footer. The window's r.after
 * counts the footer's bytes past it, so that a count checked against the bytes left is checked
 * as in the whole footer. A file in memory is its own window, whole. */
#ifndef FOOT_WINDOW               /* smaller in a test build (-DFOOT_WINDOW=64): every item slides */
#define FOOT_WINDOW (1u << 20)
#endif

typedef struct foot {
	const pq_file *f;
	uint64_t base;              /* the footer's offset in the file */
	uint32_t len;
	uint8_t *buf;               /* the window's bytes read from the file (NULL: in memory) */
	size_t cap;
	const uint8_t *win;         /* footer bytes [at, at + have) */
	uint64_t at, have;
	tc_in r;                    /* reading them */
} foot;

static void foot_set(foot *w, const uint8_t *next)
{
	w->r.p = next;
	w->r.end = w->win + w->have;
	w->r.after = w->len - w->at - w->have;
}

static fmt_kind foot_open(foot *w, const pq_file *f, uint64_t base, uint32_t len, fmt_err *e)
{
	memset(w, 0, sizeof *w);
	w->f = f;
	w->base = base;
	w->len = len;
	if (f->data) {              /* checked against the file's size */
		w->win = f->data + base;
		w->have = len;
		foot_set(w, w->win);
		return FMT_OK;
	}
	w->cap = len < FOOT_WINDOW ? len : FOOT_WINDOW;
	if (!(w->buf = malloc(w->cap)))
		return oom(e);
	w->win = w->buf;
	w->have = w->cap;
	foot_set(w, w->win);
	return fmt_pq_file_read(f, base, w->buf, w->cap, e);
}

/* The window from r.p on (what the reader has passed dropped), then as many bytes more as it
 * holds, twice as many when it held no bytes passed. */
static fmt_kind foot_more(foot *w, fmt_err *e)
{
	size_t passed = (size_t)(w->r.p - w->win), keep = (size_t)w->have - passed;
	memmove(w->buf, w->r.p, keep);
	w->at += passed;
	w->have = keep;
	foot_set(w, w->win);
	if (passed == 0) {          /* full, below len: the window does not reach the end */
		size_t cap = w->cap > w->len / 2 ? w->len : w->cap * 2;
		uint8_t *p = realloc(w->buf, cap);
		if (!p)
			return oom(e);
		w->buf = p;
		w->cap = cap;
		w->win = p;
		foot_set(w, w->win);
	}
	uint64_t rest = w->len - w->at, n = (rest < w->cap ? rest : w->cap) - keep;
	fmt_kind k = fmt_pq_file_read(w->f, w->base + w->at + keep, w->buf + keep, (size_t)n, e);
	w->have = keep + n;
	foot_set(w, w->win);
	return k;
}

/* The window holding the item at r.p, as measure says (0: measured), or the footer's end. */
static fmt_kind foot_fit(foot *w, int (*measure)(tc_in *r, const void *ctx), const void *ctx, fmt_err *e)
{
	for (;;) {
		tc_in probe = w->r;
		if (w->at + w->have == w->len || measure(&probe, ctx) == 0)
			return FMT_OK;
		fmt_kind k = foot_more(w, e);
		if (k != FMT_OK)
			return k;
	}
}

/* The footer offset of the next byte. */
static uint32_t foot_pos(const foot *w)
{
	return (uint32_t)(w->at + (uint64_t)(w->r.p - w->win));
}

/* A field of FileMetaData after the one of id *ctx: all of it, but of the row groups' list its
 * header only (each group is measured on its own). */
static int measure_field(tc_in *r, const void *ctx)
{
	int16_t last = *(const int16_t *)ctx, id;
	int t, elem;
	uint32_t n;
	int f = fmt_pq_tc_field(r, &last, &t, &id);
	if (f <= 0)
		return f;
	if (id == 4)
		return fmt_pq_tc_list(r, t, &elem, &n);
	return fmt_pq_tc_skip(r, t);
}

static int measure_group(tc_in *r, const void *ctx)
{
	(void)ctx;
	return fmt_pq_tc_skip(r, TC_STRUCT);
}

static fmt_kind read_groups(foot *w, int type, pq_meta *m, fmt_err *e)
{
	int elem;
	uint32_t n;
	tc_in *r = &w->r;
	if (m->groups || fmt_pq_tc_list(r, type, &elem, &n) || elem != TC_STRUCT)
		return bad(e, "row groups");
	/* each is allocated before it is read: no more than the footer's bytes can hold */
	if ((uint64_t)n * (MIN_GROUP_BYTES + MIN_CHUNK_BYTES * (uint64_t)m->n_leaves) > fmt_pq_tc_left(r))
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: malformed footer (%u row groups of %zu columns listed in "
				"%llu bytes)", n, m->n_leaves, (unsigned long long)fmt_pq_tc_left(r));
	pq_chunk *chunks = calloc(m->n_leaves ? m->n_leaves : 1, sizeof *chunks); /* each group's, checked */
	if (!(m->groups = calloc(n ? n : 1, sizeof *m->groups)) || !chunks) {
		free(chunks);
		return oom(e);
	}
	fmt_kind k = FMT_OK;
	for (uint32_t i = 0; i < n && k == FMT_OK; i++) {
		pq_rowgroup *g = &m->groups[i];
		if ((k = foot_fit(w, measure_group, NULL, e)) != FMT_OK)
			break;
		g->foot_off = foot_pos(w);
		k = read_group(r, elem, m, g, chunks, m->footer_at, e);
		g->foot_len = foot_pos(w) - g->foot_off;
		m->n_groups = i + 1;
	}
	free(chunks);
	return k;
}

static fmt_kind read_kv(tc_in *r, int type, fmt_schema *s, fmt_err *e)
{
	int elem;
	uint32_t n;
	if (fmt_pq_tc_list(r, type, &elem, &n) || elem != TC_STRUCT)
		return bad(e, "key/value metadata");
	for (uint32_t i = 0; i < n; i++) {
		int16_t last = 0, id;
		int t, f;
		const uint8_t *key = NULL, *val = (const uint8_t *)"";
		uint32_t key_len = 0, val_len = 0;
		if (fmt_pq_tc_enter(r, elem))
			return bad(e, "key/value");
		while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
			int err = id == 1 ? fmt_pq_tc_binary(r, t, &key, &key_len) :
				  id == 2 ? fmt_pq_tc_binary(r, t, &val, &val_len) : fmt_pq_tc_skip(r, t);
			if (err)
				return bad(e, "key/value");
		}
		fmt_pq_tc_leave(r);
		if (f < 0 || !key || memchr(key, 0, key_len) || memchr(val, 0, val_len))
			return bad(e, "key/value");
		char *k = strndup((const char *)key, key_len), *v = strndup((const char *)val, val_len);
		fmt_kind kind = k && v ? fmt_schema_add_meta(s, k, v, e) : oom(e);
		free(k);
		free(v);
		if (kind != FMT_OK)
			return kind;
	}
	return FMT_OK;
}

/* FileMetaData's fields, each in the window as it is parsed. */
static fmt_kind read_file_meta(foot *w, pq_meta *m, fmt_schema *s, fmt_err *e)
{
	int16_t last = 0, id;
	int t, f, has_schema = 0, has_rows = 0;
	const uint8_t *p;
	uint32_t n;
	tc_in *r = &w->r;
	for (;;) {
		fmt_kind k = foot_fit(w, measure_field, &last, e);
		if (k != FMT_OK)
			return k;
		if ((f = fmt_pq_tc_field(r, &last, &t, &id)) != 1)
			break;
		switch (id) {
		case 1: k = fmt_pq_tc_i32(r, t, &m->version) ? bad(e, "version") : FMT_OK; break;
		case 2:
			if (has_schema)
				return bad(e, "two schemas");
			has_schema = 1;
			k = read_schema(r, t, m, s, e);
			break;
		case 3: k = fmt_pq_tc_int(r, t, &m->num_rows) ? bad(e, "row count") : FMT_OK; has_rows = 1; break;
		case 4: k = has_schema ? read_groups(w, t, m, e) : bad(e, "row groups before the schema"); break;
		case 5: k = read_kv(r, t, s, e); break;
		case 6:
			if (fmt_pq_tc_binary(r, t, &p, &n))
				return bad(e, "created_by");
			free(m->created_by);
			if (!(m->created_by = strndup((const char *)p, n)))
				return oom(e);
			break;
		default: k = fmt_pq_tc_skip(r, t) ? bad(e, "a field") : FMT_OK;
		}
		if (k != FMT_OK)
			return k;
	}
	if (f < 0)
		return bad(e, "truncated");
	if (!has_schema || !has_rows || m->num_rows < 0)
		return bad(e, "no schema or row count");
	uint64_t sum = 0;
	for (size_t i = 0; i < m->n_groups; i++) {
		m->groups[i].first_row = sum;
		if (fmt_add_u64(sum, (uint64_t)m->groups[i].num_rows, &sum))
			return bad(e, "row counts overflow");
	}
	if (sum != (uint64_t)m->num_rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: the row groups hold %llu rows, the footer says %lld",
				(unsigned long long)sum, (long long)m->num_rows);
	return FMT_OK;
}

fmt_kind fmt_pq_file_read(const pq_file *f, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	if (f->data) {
		if (off > f->size || n > f->size - off)
			return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %zu bytes at offset %llu run past the end of the "
					"file (%llu bytes)", n, (unsigned long long)off, (unsigned long long)f->size);
		memcpy(dst, f->data + off, n);
		return FMT_OK;
	}
	return fmt_source_read(f->src, off, dst, n, e);
}

fmt_kind fmt_pq_meta_read(const pq_file *f, pq_meta *m, fmt_schema *s, fmt_err *e)
{
	uint64_t n = f->size;
	uint8_t head[4], tail[8];
	memset(m, 0, sizeof *m);
	fmt_kind k = n < 12 ? FMT_OK : fmt_pq_file_read(f, 0, head, 4, e);
	if (k == FMT_OK && n >= 8)
		k = fmt_pq_file_read(f, n - 8, tail, 8, e);
	if (k != FMT_OK)
		return k;
	if (n < 12 || memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0) {
		if (n >= 8 && memcmp(tail + 4, "PARE", 4) == 0)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: encrypted footers (PARE) are not supported");
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: no PAR1 magic at both ends (truncated?)");
	}
	uint32_t len = fmt_rd_u32(tail);
	if (len == 0 || len > n - 12 || len > MAX_FOOTER)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: footer length %u does not fit the file (%llu bytes)",
				len, (unsigned long long)n);
	m->footer_len = len;
	m->footer_at = n - 8 - len;
	foot w;
	k = foot_open(&w, f, m->footer_at, len, e);
	if (k == FMT_OK)
		k = read_file_meta(&w, m, s, e);
	free(w.buf);
	if (k == FMT_OK && m->n_groups == 0 && m->num_rows != 0)
		k = bad(e, "rows without row groups");
	return k;
}

void fmt_pq_meta_free(pq_meta *m)
{
	for (size_t i = 0; i < m->n_leaves; i++)
		free(m->leaves[i].path);
	free(m->leaves);
	free(m->groups);
	free(m->created_by);
	memset(m, 0, sizeof *m);
}

/* ---- a row group's chunks, parsed again when they are used ---- */

void fmt_pq_group_init(pq_group *v)
{
	memset(v, 0, sizeof *v);
	v->g = SIZE_MAX;
}

/* The footer bytes read at a time for row groups (theirs and those after them, which the next
 * loads in file order find there): a pread a group cost a file of many small groups as much as
 * reading their chunks. */
#define GROUP_READ (64u << 10)

/* Row group g's bytes in the footer: in the file in memory, in v->buf from a load before, or
 * read into it with those after (GROUP_READ at least). */
static fmt_kind group_bytes(pq_group *v, const pq_file *f, const pq_meta *m, const pq_rowgroup *rg,
			    const uint8_t **p, fmt_err *e)
{
	uint64_t off = rg->foot_off, end = off + rg->foot_len;  /* within the footer, checked at open */
	if (f->data) {
		*p = f->data + m->footer_at + off;
		return FMT_OK;
	}
	if (v->buf_len == 0 || off < v->buf_at || end > v->buf_at + v->buf_len) {
		uint64_t n = rg->foot_len > GROUP_READ ? rg->foot_len : GROUP_READ;
		n = n < m->footer_len - off ? n : m->footer_len - off;
		v->buf_len = 0;
		if (fmt_grow_array(&v->buf, &v->cap, (size_t)n, 1, (size_t)n))
			return oom(e);
		fmt_kind k = fmt_pq_file_read(f, m->footer_at + off, v->buf, (size_t)n, e);
		if (k != FMT_OK)
			return k;
		v->buf_at = off;
		v->buf_len = (size_t)n;
	}
	*p = v->buf + (off - v->buf_at);
	return FMT_OK;
}

fmt_kind fmt_pq_group_load(pq_group *v, const pq_file *f, const pq_meta *m, size_t g, fmt_err *e)
{
	if (v->g == g)
		return FMT_OK;
	const pq_rowgroup *rg = &m->groups[g];
	const uint8_t *p = NULL;
	v->g = SIZE_MAX;
	if (!v->chunks && !(v->chunks = calloc(m->n_leaves ? m->n_leaves : 1, sizeof *v->chunks)))
		return oom(e);
	fmt_kind k = group_bytes(v, f, m, rg, &p, e);
	if (k != FMT_OK)
		return k;
	/* as the footer's check at open read it: the same bytes, the same footer bytes after them */
	tc_in r = { p, p + rg->foot_len, 0, m->footer_len - rg->foot_off - rg->foot_len };
	pq_rowgroup again = { 0 };
	k = read_group(&r, TC_STRUCT, m, &again, v->chunks, m->footer_at, e);
	if (k == FMT_OK && (again.num_rows != rg->num_rows || again.stored != rg->stored || r.p != r.end))
		k = fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: row group %zu: its footer bytes changed since the file was "
			     "opened", g);
	if (k == FMT_OK)
		v->g = g;
	return k;
}

void fmt_pq_group_free(pq_group *v)
{
	free(v->chunks);
	free(v->buf);
	fmt_pq_group_init(v);
}

const char *fmt_pq_codec_name(int codec)
{
	static const char *const names[] = { "UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD",
					     "LZ4_RAW" };
	return codec >= 0 && codec < 8 ? names[codec] : "unknown";
}

const char *fmt_pq_encoding_name(int enc)
{
	static const char *const names[] = { "PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
					     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
					     "RLE_DICTIONARY", "BYTE_STREAM_SPLIT" };
	return enc >= 0 && enc < 10 ? names[enc] : "unknown";
}

const char *fmt_pq_ptype_name(int t)
{
	static const char *const names[] = { "BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
					     "FIXED_LEN_BYTE_ARRAY" };
	return t >= 0 && t < 8 ? names[t] : "unknown";
}
