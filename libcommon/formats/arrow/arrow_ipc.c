/* Arrow IPC stream and file formats: Schema, RecordBatch and Message flatbuffers (Schema.fbs,
 * Message.fbs, File.fbs), read with every offset checked and written as arrow-rs writes them. */
#include <errno.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"
#include "fmt/decode_budget.h"
#include "fmt/zstd_thread.h"
#include "flatbuf.h"

/* Message.fbs / Schema.fbs numbering. */
enum { HDR_SCHEMA = 1, HDR_DICTIONARY = 2, HDR_RECORD_BATCH = 3 };
enum { META_V4 = 3, META_V5 = 4 };
enum { TY_NULL = 1, TY_INT, TY_FLOAT, TY_BINARY, TY_UTF8, TY_BOOL, TY_DECIMAL, TY_DATE, TY_TIME,
       TY_TIMESTAMP, TY_INTERVAL, TY_LIST, TY_STRUCT, TY_UNION, TY_FIXED_SIZE_BINARY,
       TY_FIXED_SIZE_LIST, TY_MAP, TY_DURATION, TY_LARGE_BINARY, TY_LARGE_UTF8, TY_LARGE_LIST,
       TY_RUN_END_ENCODED, TY_BINARY_VIEW, TY_UTF8_VIEW, TY_LIST_VIEW, TY_LARGE_LIST_VIEW };

#define IPC_ALIGN 64
#define MAX_FIELDS FMT_TABLE_MAX_COLUMNS
#define MAX_UNCOMPRESSED ((uint64_t)1 << 31) /* a compressed buffer's declared length */
static const uint8_t file_magic[6] = { 'A', 'R', 'R', 'O', 'W', '1' };

static fmt_kind bad(fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: %s", what);
}

static fmt_kind oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

/* ---- schema ---- */

static const char *time_unit(int16_t u)
{
	static const char *n[] = { "s", "ms", "us", "ns" };
	return u >= 0 && u < 4 ? n[u] : "?";
}

/* The display name of a type this build does not convert. */
static void unsupported_name(const fmt_fb_table *ty, int has_type, uint8_t tt, char *buf, size_t n)
{
	static const char *plain[] = {
		[TY_NULL] = "null", [TY_INTERVAL] = "interval", [TY_LIST] = "list",
		[TY_STRUCT] = "struct", [TY_UNION] = "union", [TY_MAP] = "map",
		[TY_LARGE_BINARY] = "large_binary", [TY_LARGE_LIST] = "large_list",
		[TY_RUN_END_ENCODED] = "run_end_encoded", [TY_BINARY_VIEW] = "binary_view",
		[TY_UTF8_VIEW] = "utf8_view", [TY_LIST_VIEW] = "list_view",
		[TY_LARGE_LIST_VIEW] = "large_list_view",
	};
	int32_t a = 0, b = 0, w = 0;
	int16_t u = 0;
	switch (has_type ? tt : 0) {
	case TY_DECIMAL:
		fmt_fb_i32(ty, 0, 0, &a);
		fmt_fb_i32(ty, 1, 0, &b);
		fmt_fb_i32(ty, 2, 128, &w);
		snprintf(buf, n, "decimal%d(%d, %d)", (int)w, (int)a, (int)b);
		return;
	case TY_DATE:
		snprintf(buf, n, "date64");
		return;
	case TY_TIME:
		fmt_fb_i16(ty, 0, 1, &u);
		fmt_fb_i32(ty, 1, 32, &w);
		snprintf(buf, n, "time%d[%s]", (int)w, time_unit(u));
		return;
	case TY_DURATION:
		fmt_fb_i16(ty, 0, 1, &u);
		snprintf(buf, n, "duration[%s]", time_unit(u));
		return;
	case TY_FIXED_SIZE_BINARY:
		fmt_fb_i32(ty, 0, 0, &w);
		snprintf(buf, n, "fixed_size_binary(%d)", (int)w);
		return;
	default:
		break;
	}
	if (has_type && tt < sizeof plain / sizeof plain[0] && plain[tt])
		snprintf(buf, n, "%s", plain[tt]);
	else
		snprintf(buf, n, "type id %u", (unsigned)tt);
}

static fmt_kind decode_field(const fmt_fb_table *ft, fmt_field *f, int depth, fmt_err *e);

static void field_clear(fmt_field *f)
{
	free(f->name);
	free(f->timezone);
	free(f->type_name);
	memset(f, 0, sizeof *f);
}

static int is_numeric(fmt_ctype t)
{
	return (t >= FMT_C_I8 && t <= FMT_C_F64);
}

/* A supported type into f; *known = 0 leaves it for unsupported_name. */
static fmt_kind decode_type(const fmt_fb_table *ft, uint8_t tt, const fmt_fb_table *ty, fmt_field *f,
			    int *known, int depth, fmt_err *e)
{
	int32_t width = 0;
	uint8_t is_signed = 0;
	int16_t v = 0;
	*known = 1;
	switch (tt) {
	case TY_INT: {
		static const fmt_ctype s[] = { FMT_C_I8, FMT_C_I16, FMT_C_I32, FMT_C_I64 };
		static const fmt_ctype us[] = { FMT_C_U8, FMT_C_U16, FMT_C_U32, FMT_C_U64 };
		if (fmt_fb_i32(ty, 0, 0, &width) || fmt_fb_u8(ty, 1, 0, &is_signed))
			return bad(e, "malformed Int type");
		int k = width == 8 ? 0 : width == 16 ? 1 : width == 32 ? 2 : width == 64 ? 3 : -1;
		if (k < 0)
			return bad(e, "Int type with a bit width other than 8, 16, 32, 64");
		f->type = is_signed ? s[k] : us[k];
		return FMT_OK;
	}
	case TY_FLOAT:
		if (fmt_fb_i16(ty, 0, 0, &v) || v < 0 || v > 2)
			return bad(e, "malformed FloatingPoint type");
		f->type = v == 0 ? FMT_C_F16 : v == 1 ? FMT_C_F32 : FMT_C_F64;
		return FMT_OK;
	case TY_BINARY: f->type = FMT_C_BINARY; return FMT_OK;
	case TY_UTF8: f->type = FMT_C_UTF8; return FMT_OK;
	case TY_LARGE_UTF8: f->type = FMT_C_LARGE_UTF8; return FMT_OK;
	case TY_BOOL: f->type = FMT_C_BOOL; return FMT_OK;
	case TY_DATE:
		if (fmt_fb_i16(ty, 0, 1, &v))
			return bad(e, "malformed Date type");
		*known = v == 0;
		f->type = FMT_C_DATE32;
		return FMT_OK;
	case TY_TIMESTAMP: {
		const char *tz;
		uint32_t n;
		if (fmt_fb_i16(ty, 0, 0, &v) || v < 0 || v > 3)
			return bad(e, "malformed Timestamp type");
		int r = fmt_fb_string(ty, 1, &tz, &n);
		if (r < 0 || (r == 1 && memchr(tz, 0, n)))
			return bad(e, "malformed Timestamp time zone");
		if (r == 1 && n > 0 && !(f->timezone = strndup(tz, n)))
			return oom(e);
		f->unit = (fmt_time_unit)v;
		f->type = FMT_C_TIMESTAMP;
		return FMT_OK;
	}
	case TY_FIXED_SIZE_LIST: {
		size_t at;
		uint32_t n;
		fmt_fb_table ct;
		if (fmt_fb_i32(ty, 0, 0, &width) || width < 0)
			return bad(e, "malformed FixedSizeList type");
		if (fmt_fb_vector(ft, 5, 4, &at, &n) != 1 || n != 1 || fmt_fb_vector_table(ft, at, 0, &ct))
			return bad(e, "FixedSizeList without exactly one child field");
		fmt_field child = { 0 };
		fmt_kind k = decode_field(&ct, &child, depth + 1, e);
		if (k == FMT_OK && is_numeric(child.type) && width > 0) {
			f->type = FMT_C_FIXED_SIZE_LIST;
			f->list_size = (uint32_t)width;
			f->elem = child.type;
		} else if (k == FMT_OK) {
			char inner[160], buf[256];
			fmt_field_type_name(&child, inner, sizeof inner);
			snprintf(buf, sizeof buf, "fixed_size_list<%s>[%d]", inner, (int)width);
			f->type = FMT_C_OTHER;
			if (!(f->type_name = strdup(buf)))
				k = oom(e);
		}
		field_clear(&child);
		return k;
	}
	default:
		*known = 0;
		return FMT_OK;
	}
}

static fmt_kind decode_field(const fmt_fb_table *ft, fmt_field *f, int depth, fmt_err *e)
{
	const char *name = "";
	uint32_t name_len = 0;
	uint8_t nullable, tt;
	fmt_fb_table ty, dict;
	if (depth > 2)
		return bad(e, "fields nested too deep");
	if (fmt_fb_string(ft, 0, &name, &name_len) < 0 || fmt_fb_u8(ft, 1, 0, &nullable) ||
	    fmt_fb_u8(ft, 2, 0, &tt))
		return bad(e, "malformed Field");
	if (memchr(name, 0, name_len))
		return bad(e, "field name with a NUL byte");
	if (!(f->name = strndup(name, name_len)))
		return oom(e);
	f->nullable = nullable != 0;
	int has_type = fmt_fb_table_field(ft, 3, &ty);
	int has_dict = fmt_fb_table_field(ft, 4, &dict);
	if (has_type < 0 || has_dict < 0)
		return bad(e, "malformed Field type");
	int known = 0;
	if (has_type == 1) {
		fmt_kind k = decode_type(ft, tt, &ty, f, &known, depth, e);
		if (k != FMT_OK)
			return k;
	}
	if ((known && has_dict == 0) || f->type == FMT_C_OTHER)
		return FMT_OK;
	char buf[128], d[160];
	if (known)
		fmt_field_type_name(f, buf, sizeof buf); /* a dictionary's value type */
	else
		unsupported_name(&ty, has_type == 1, tt, buf, sizeof buf);
	if (has_dict == 1)
		snprintf(d, sizeof d, "dictionary<%s>", buf);
	free(f->type_name);
	f->type = FMT_C_OTHER;
	if (!(f->type_name = strdup(has_dict == 1 ? d : buf)))
		return oom(e);
	return FMT_OK;
}

/* ---- what a column takes of a RecordBatch ---- */

/* The field nodes and buffers of one field's column (the columnar format's "Buffer listing for
 * each layout"; a node per field of its subtree, in pre-order), so that a column this build
 * does not convert can be stepped over. */
typedef struct ipc_shape {
	uint32_t nodes, buffers;
	uint32_t unions;       /* each takes one buffer more, a validity bitmap, in a V4 message */
	uint32_t views;        /* each takes as many more as the batch's variadicBufferCounts says */
	int countable;         /* 0: a type id Arrow does not define, or nesting past MAX_DEPTH */
	int dictionary;        /* a field of the tree is dictionary-encoded: a stream then carries
				* dictionary batches */
} ipc_shape;

#define MAX_DEPTH 64
#define SHAPE_BUDGET (1u << 20) /* fields visited per schema: children may be shared tables */

/* The buffers of a type's own layout, its children aside; -1 for a type id Arrow lacks. */
static int own_buffers(uint8_t tt, const fmt_fb_table *ty, ipc_shape *s)
{
	int16_t mode = 0;
	switch (tt) {
	case TY_NULL: case TY_RUN_END_ENCODED:
		return 0;
	case TY_STRUCT: case TY_FIXED_SIZE_LIST:
		return 1;
	case TY_INT: case TY_FLOAT: case TY_BOOL: case TY_DECIMAL: case TY_DATE: case TY_TIME:
	case TY_TIMESTAMP: case TY_INTERVAL: case TY_FIXED_SIZE_BINARY: case TY_DURATION:
	case TY_LIST: case TY_LARGE_LIST: case TY_MAP:
		return 2;
	case TY_BINARY: case TY_UTF8: case TY_LARGE_BINARY: case TY_LARGE_UTF8:
	case TY_LIST_VIEW: case TY_LARGE_LIST_VIEW:
		return 3;
	case TY_BINARY_VIEW: case TY_UTF8_VIEW:
		s->views++;
		return 2;
	case TY_UNION: /* sparse: type ids; dense: type ids and offsets */
		s->unions++;
		return fmt_fb_i16(ty, 0, 0, &mode) == 0 && mode == 1 ? 2 : 1;
	default:
		return -1;
	}
}

static int is_nested(uint8_t tt)
{
	return tt == TY_LIST || tt == TY_STRUCT || tt == TY_UNION || tt == TY_FIXED_SIZE_LIST || tt == TY_MAP ||
	       tt == TY_LARGE_LIST || tt == TY_RUN_END_ENCODED || tt == TY_LIST_VIEW || tt == TY_LARGE_LIST_VIEW;
}

static void field_shape(const fmt_fb_table *ft, int depth, uint32_t *budget, ipc_shape *s)
{
	uint8_t tt = 0;
	fmt_fb_table ty, dict;
	size_t at;
	uint32_t n = 0;
	if (!s->countable)
		return;
	if (depth > MAX_DEPTH || *budget == 0 || fmt_fb_u8(ft, 2, 0, &tt)) {
		s->countable = 0;
		return;
	}
	--*budget;
	s->nodes++;
	int has_type = fmt_fb_table_field(ft, 3, &ty), has_dict = fmt_fb_table_field(ft, 4, &dict);
	if (has_dict == 1) { /* the batch holds the indices only: validity and values */
		s->dictionary = 1;
		s->buffers += 2;
		return;
	}
	int own = has_type == 1 && has_dict == 0 ? own_buffers(tt, &ty, s) : -1;
	if (own < 0 || (is_nested(tt) && fmt_fb_vector(ft, 5, 4, &at, &n) < 0)) {
		s->countable = 0;
		return;
	}
	s->buffers += (uint32_t)own;
	for (uint32_t i = 0; is_nested(tt) && i < n && s->countable; i++) {
		fmt_fb_table ct;
		if (fmt_fb_vector_table(ft, at, i, &ct))
			s->countable = 0;
		else
			field_shape(&ct, depth + 1, budget, s);
	}
}

static fmt_kind decode_schema(const fmt_fb_table *st, fmt_ipc_reader *r, fmt_err *e)
{
	int16_t endianness;
	size_t at;
	uint32_t n = 0, budget = SHAPE_BUDGET;
	if (fmt_fb_i16(st, 0, 0, &endianness))
		return bad(e, "malformed Schema");
	if (endianness != 0)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: big-endian data is not supported");
	int res = fmt_fb_vector(st, 1, 4, &at, &n);
	if (res < 0)
		return bad(e, "malformed Schema fields");
	if (n > MAX_FIELDS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: more than %d fields", MAX_FIELDS);
	if (!(r->shapes = calloc(n ? n : 1, sizeof *r->shapes)))
		return oom(e);
	for (uint32_t i = 0; i < n; i++) {
		fmt_fb_table ft;
		fmt_field f = { 0 };
		if (fmt_fb_vector_table(st, at, i, &ft))
			return bad(e, "malformed Schema field");
		fmt_kind k = decode_field(&ft, &f, 0, e);
		if (k == FMT_OK)
			k = fmt_schema_add_field(&r->schema, &f, e);
		field_clear(&f);
		if (k != FMT_OK)
			return k;
		r->shapes[i].countable = 1;
		field_shape(&ft, 0, &budget, &r->shapes[i]);
		r->has_dictionary |= r->shapes[i].dictionary;
	}
	return FMT_OK;
}

/* ---- messages ---- */

typedef struct ipc_msg {
	fmt_fb_table msg;
	int16_t version;
	uint8_t type;
	fmt_fb_table header;
	const uint8_t *body;
	uint64_t body_len;
} ipc_msg;

/* The Message flatbuffer in meta[0..n) with its body at body (avail bytes there). */
static fmt_kind parse_message(const uint8_t *meta, size_t n, const uint8_t *body, uint64_t avail,
			      ipc_msg *m, fmt_err *e)
{
	int64_t body_len;
	if (fmt_fb_root(meta, n, &m->msg) || fmt_fb_i16(&m->msg, 0, 0, &m->version) ||
	    fmt_fb_u8(&m->msg, 1, 0, &m->type) || fmt_fb_i64(&m->msg, 3, 0, &body_len))
		return bad(e, "malformed Message");
	if (m->version < META_V4)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: metadata version V%d is not supported (V4, V5 are)",
				m->version + 1);
	if (fmt_fb_table_field(&m->msg, 2, &m->header) != 1)
		return bad(e, "Message without a header");
	if (body_len < 0 || (uint64_t)body_len > avail)
		return bad(e, "message body runs past the end of the data");
	m->body = body;
	m->body_len = (uint64_t)body_len;
	return FMT_OK;
}

/* The message at *pos of a stream: *end = 1 at EOS or the end of the bytes. */
static fmt_kind next_stream_message(const uint8_t *d, size_t len, size_t *pos, ipc_msg *m, int *end,
				    fmt_err *e)
{
	size_t p = *pos;
	*end = 0;
	if (p == len) {
		*end = 1;
		return FMT_OK;
	}
	if (len - p < 4)
		return bad(e, "truncated message length");
	uint32_t v = fmt_rd_u32(d + p);
	p += 4;
	if (v == 0xFFFFFFFFu) {
		if (len - p < 4)
			return bad(e, "truncated message length");
		v = fmt_rd_u32(d + p);
		p += 4;
	}
	if (v == 0) {
		*pos = p;
		*end = 1;
		return FMT_OK;
	}
	if (v > 0x7FFFFFFFu || v > len - p)
		return bad(e, "message metadata runs past the end of the data");
	fmt_kind k = parse_message(d + p, v, d + p + v, len - p - v, m, e);
	if (k != FMT_OK)
		return k;
	*pos = p + v + (size_t)m->body_len;
	return FMT_OK;
}

fmt_kind fmt_ipc_message_head(const uint8_t *d, size_t avail, size_t *pre, size_t *head, int *eos, fmt_err *e)
{
	*eos = 0;
	*pre = avail >= 4 && fmt_rd_u32(d) == 0xFFFFFFFFu ? 8 : 4;
	if (avail < *pre) {
		*head = avail == 0 ? 0 : *pre;
		*eos = avail == 0;
		return FMT_OK;
	}
	uint32_t mlen = fmt_rd_u32(d + *pre - 4);
	*eos = mlen == 0;
	if (mlen > FMT_IPC_MAX_META)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: message metadata of %u bytes (at most %u)", mlen,
				FMT_IPC_MAX_META);
	*head = *pre + mlen;
	return FMT_OK;
}

/* ---- record batches ---- */

typedef struct span {
	const uint8_t *p;
	uint64_t len;
	uint32_t i;            /* the buffer's index in the RecordBatch */
} span;

static int bit(const uint8_t *bits, uint64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

/* What the rows of one buffer use: bytes, or (a string column's data) what its offsets say. */
typedef struct buf_use {
	uint64_t bytes;
	uint32_t offsets;      /* data: 1 + the index of its offsets buffer; 0 otherwise */
	uint32_t width;        /* of those offsets */
	uint64_t rows;
} buf_use;

/* A RecordBatch's nodes and buffers, taken in schema order. With use set the walk only plans:
 * it records what each buffer's rows use instead of checking the (absent) body. */
typedef struct walk {
	const uint8_t *nodes, *buffers;
	uint32_t n_nodes, n_buffers, node_i, buf_i;
	const uint8_t *variadic;  /* variadicBufferCounts: one per view-typed field */
	uint32_t n_variadic, variadic_i;
	int v4;                   /* a metadata V4 message: a union has a validity bitmap */
	int codec;                /* FMT_IPC_*: the buffers are compressed one by one */
	uint64_t batch_need;      /* bytes the rows of the data buffers taken so far use */
	uint64_t unpacked;        /* bytes their compressed buffers said they hold */
	uint64_t batch, rows;     /* the record batch's number in the file (from 0) and its rows */
	fmt_batch *own;           /* takes the buffers decompressed */
	const fmt_source *source; /* whose mapping a compressed buffer leaves once decompressed */
	const fmt_source *spill;  /* or NULL: a big batch's buffers decompress into this spill file
				   * (mapped), a piece at a time, at spill_at on (unpack_to_spill) */
	uint64_t spill_at;
	uint8_t *bounce;
	const uint8_t *body;
	uint64_t body_len;
	buf_use *use;
} walk;

static fmt_kind take_node(walk *w, uint64_t *length, uint64_t *nulls, fmt_err *e)
{
	if (w->node_i >= w->n_nodes)
		return bad(e, "RecordBatch has fewer field nodes than the schema needs");
	const uint8_t *p = w->nodes + 16 * (size_t)w->node_i++;
	int64_t l = (int64_t)fmt_rd_u64(p), n = (int64_t)fmt_rd_u64(p + 8);
	if (l < 0 || n < 0 || n > l)
		return bad(e, "field node with a negative length or more nulls than rows");
	*length = (uint64_t)l;
	*nulls = (uint64_t)n;
	return FMT_OK;
}

static fmt_kind take_buffer(walk *w, span *s, fmt_err *e)
{
	if (w->buf_i >= w->n_buffers)
		return bad(e, "RecordBatch has fewer buffers than the schema needs");
	const uint8_t *p = w->buffers + 16 * (size_t)w->buf_i++;
	int64_t off = (int64_t)fmt_rd_u64(p), len = (int64_t)fmt_rd_u64(p + 8);
	uint64_t end;
	if (off < 0 || len < 0 || fmt_add_u64((uint64_t)off, (uint64_t)len, &end) || end > w->body_len)
		return bad(e, "buffer outside the message body");
	s->p = w->body ? w->body + off : NULL;
	s->len = (uint64_t)len;
	s->i = w->buf_i - 1;
	return FMT_OK;
}

static fmt_kind longer(fmt_err *e, int64_t want)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: a compressed buffer decompresses to more than the %lld bytes "
			"its length says", (long long)want);
}

/* One whole LZ4 frame of exactly want bytes. */
static fmt_kind unlz4_frame(const uint8_t *src, size_t n, uint8_t *dst, size_t want, size_t *got, fmt_err *e)
{
	LZ4F_dctx *dctx;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return oom(e);
	size_t in = 0, out = 0, r = 1;
	while (r != 0 && in < n) {
		size_t src_size = n - in, dst_size = want - out;
		r = LZ4F_decompress(dctx, dst + out, &dst_size, src + in, &src_size, NULL);
		if (LZ4F_isError(r) || (src_size == 0 && dst_size == 0))
			break;
		in += src_size;
		out += dst_size;
	}
	LZ4F_freeDecompressionContext(dctx);
	*got = out;
	if (LZ4F_isError(r))
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: a compressed buffer: LZ4 frame: %s", LZ4F_getErrorName(r));
	if (r != 0 && out == want)
		return longer(e, (int64_t)want);
	if (r != 0 || in != n)
		return bad(e, "a compressed buffer is not one whole LZ4 frame");
	return FMT_OK;
}

static uint64_t need_of_items(uint64_t count, uint64_t width)
{
	uint64_t need;
	return fmt_mul_u64(count, width, &need) ? UINT64_MAX : need;
}

/* What a record batch's compressed buffers may say they hold, altogether: 8 times what its rows
 * use, and 16 MiB. Writers keep more than the rows use (apache-arrow writes a builder's
 * capacity: 384 bytes of validity for 1000 rows), but a length far beyond it would have the
 * reader allocate and decompress what no row reads: a 60 KB file saying 2 GiB of zeros for one
 * row. */
#define UNPACKED_SLACK ((uint64_t)16 << 20)
#define UNPACKED_FACTOR 8

static int within_unpacked_budget(walk *w, uint64_t want)
{
	uint64_t room;
	if (fmt_mul_u64(w->batch_need, UNPACKED_FACTOR, &room) || fmt_add_u64(room, UNPACKED_SLACK, &room))
		room = UINT64_MAX;
	return fmt_add_u64(w->unpacked, want, &w->unpacked) == 0 && w->unpacked <= room;
}

/* The batch is decompressed whole: what its buffers hold decompressed together is held to the
 * memory budget of a unit of a columnar file (fmt/decode_budget.h: its body's bytes and its rows),
 * as a Parquet row group's columns are, so that rows its buffers truly hold, a few KB of ZSTD
 * each, cannot take gigabytes. w->unpacked counts want already (within_unpacked_budget). */
static fmt_kind within_decode_budget(const walk *w, const char *name, fmt_err *e)
{
	uint64_t limit = fmt_decode_budget(w->body_len, w->rows);
	if (w->unpacked <= limit)
		return FMT_OK;
	char rule[160];
	return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: record batch %llu: its buffers would hold more than %llu "
			"bytes decompressed, at field \"%s\" (%s)", (unsigned long long)w->batch, (unsigned long long)limit,
			name, fmt_decode_budget_rule(rule, sizeof rule, w->body_len, w->rows));
}

#define SPILL_BOUNCE ((size_t)1 << 20)

/* The n bytes at p, decompressed so far (*done of them), to the spill file at w->spill_at +
 * *done; more than want in all is the error a one-shot decompression into want bytes gives. */
static fmt_kind spill_out(walk *w, const uint8_t *p, size_t n, uint64_t want, uint64_t *done, fmt_err *e)
{
	if (n > want - *done)
		return longer(e, (int64_t)want);
	fmt_kind k = n ? fmt_spill_write(w->spill, w->spill_at + *done, p, n, e) : FMT_OK;
	*done += n;
	return k;
}

/* zstd frames of want bytes in all, decompressed a piece at a time into the spill file: memory is
 * the frames' window (a large buffer compressed in one call has the level's: 512 KiB at level 1,
 * 8 MiB at 19), not the buffer. Any window is taken, as the one-shot decompression takes it. */
static fmt_kind unzstd_to_spill(walk *w, const uint8_t *src, size_t n, uint64_t want, uint64_t *got, fmt_err *e)
{
	ZSTD_DCtx *dctx = fmt_zstd_dctx_take();
	if (!dctx)
		return oom(e);
	ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, ZSTD_dParam_getBounds(ZSTD_d_windowLogMax).upperBound);
	ZSTD_inBuffer in = { src, n, 0 };
	size_t r = 1;
	fmt_kind k = FMT_OK;
	int full = 1;
	while (k == FMT_OK && (in.pos < in.size || full)) {
		ZSTD_outBuffer out = { w->bounce, SPILL_BOUNCE, 0 };
		size_t before = in.pos;
		r = ZSTD_decompressStream(dctx, &out, &in);
		if (ZSTD_isError(r))
			k = fmt_fail(e, fmt_zstd_kind(r, FMT_INVALID_FORMAT), "Arrow IPC: a compressed buffer: zstd: %s", ZSTD_getErrorName(r));
		else
			k = spill_out(w, w->bounce, out.pos, want, got, e);
		full = out.pos == out.size;
		if (k == FMT_OK && !full && in.pos == before && in.pos < in.size)
			break; /* no progress: cannot happen with input left, but never loop */
	}
	fmt_zstd_dctx_give(dctx);
	if (k == FMT_OK && r != 0) /* the input ends inside a frame */
		k = fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: a compressed buffer: zstd: %s",
			     ZSTD_getErrorName((size_t)0 - (size_t)ZSTD_error_srcSize_wrong));
	return k;
}

/* One whole LZ4 frame of want bytes, decompressed a piece at a time into the spill file (memory:
 * a block, at most 4 MiB), with unlz4_frame's errors. */
static fmt_kind unlz4_to_spill(walk *w, const uint8_t *src, size_t n, uint64_t want, uint64_t *got, fmt_err *e)
{
	LZ4F_dctx *dctx;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return oom(e);
	size_t in = 0, r = 1;
	fmt_kind k = FMT_OK;
	while (k == FMT_OK && r != 0 && in < n) {
		size_t src_size = n - in, dst_size = SPILL_BOUNCE;
		r = LZ4F_decompress(dctx, w->bounce, &dst_size, src + in, &src_size, NULL);
		if (LZ4F_isError(r) || (src_size == 0 && dst_size == 0))
			break;
		in += src_size;
		k = spill_out(w, w->bounce, dst_size, want, got, e);
	}
	/* what a full output buffer leaves to flush */
	while (k == FMT_OK && !LZ4F_isError(r) && r != 0 && in == n) {
		size_t src_size = 0, dst_size = SPILL_BOUNCE;
		r = LZ4F_decompress(dctx, w->bounce, &dst_size, src + in, &src_size, NULL);
		if (LZ4F_isError(r) || dst_size == 0)
			break;
		k = spill_out(w, w->bounce, dst_size, want, got, e);
	}
	LZ4F_freeDecompressionContext(dctx);
	if (k != FMT_OK)
		return k;
	if (LZ4F_isError(r))
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: a compressed buffer: LZ4 frame: %s", LZ4F_getErrorName(r));
	if (r != 0 || in != n)
		return bad(e, "a compressed buffer is not one whole LZ4 frame");
	return FMT_OK;
}

/* A compressed buffer's frames into the spill file at w->spill_at (8-byte aligned after it): its
 * bytes then lie in the spill's mapping at *dst. */
static fmt_kind unpack_to_spill(walk *w, const uint8_t *src, size_t n, uint64_t want, const uint8_t **dst,
				size_t *got, fmt_err *e)
{
	uint64_t done = 0;
	fmt_kind k = w->codec == FMT_IPC_LZ4_FRAME ? unlz4_to_spill(w, src, n, want, &done, e)
						    : unzstd_to_spill(w, src, n, want, &done, e);
	*got = (size_t)done;
	*dst = (const uint8_t *)w->spill->map + w->spill_at;
	w->spill_at += (want + 7) & ~(uint64_t)7;
	return k;
}

/* A compressed buffer (BodyCompression, method BUFFER): its uncompressed length (int64; -1: the
 * bytes follow as they are; within the batch's budget), then an LZ4 frame or zstd frames of
 * exactly that many bytes, decompressed into memory the batch owns. */
static fmt_kind uncompress(walk *w, span *s, const char *name, fmt_err *e)
{
	if (s->len < 8)
		return bad(e, "a compressed buffer shorter than its length");
	int64_t want = (int64_t)fmt_rd_u64(s->p);
	const uint8_t *src = s->p + 8;
	size_t n = (size_t)s->len - 8, got = 0;
	if (want == -1) {
		s->p = src;
		s->len = n;
		return FMT_OK;
	}
	if (want < 0)
		return bad(e, "a compressed buffer of a negative length");
	if (!within_unpacked_budget(w, (uint64_t)want))
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"Arrow IPC: field \"%s\": a compressed buffer says it holds %lld bytes, where the record batch's rows use %llu so far (its buffers may hold 8 times that and 16 MiB)",
				name, (long long)want, (unsigned long long)w->batch_need);
	fmt_kind k = within_decode_budget(w, name, e);
	if (k != FMT_OK)
		return k;
	if ((uint64_t)want > MAX_UNCOMPRESSED)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: a compressed buffer of %lld bytes (at most 2 GiB)",
				(long long)want);
	const uint8_t *out = NULL;
	uint8_t *dst = NULL;
	if (w->spill && (uint64_t)want <= w->spill->size - w->spill_at) {
		k = unpack_to_spill(w, src, n, (uint64_t)want, &out, &got, e);
	} else if (!(dst = malloc(want ? (size_t)want : 1)) || fmt_batch_own(w->own, dst, e) != FMT_OK) {
		return dst ? e->kind : oom(e);
	} else if (w->codec == FMT_IPC_LZ4_FRAME) {
		k = unlz4_frame(src, n, dst, (size_t)want, &got, e);
	} else {
		got = fmt_zstd_decompress(dst, (size_t)want, src, n);
		if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
			k = longer(e, want);
		else if (ZSTD_isError(got))
			k = fmt_fail(e, fmt_zstd_kind(got, FMT_INVALID_FORMAT), "Arrow IPC: a compressed buffer: zstd: %s", ZSTD_getErrorName(got));
	}
	if (k == FMT_OK && got != (size_t)want)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: a compressed buffer decompresses to %zu bytes, its length says %lld",
			     got, (long long)want);
	if (w->source)
		fmt_source_drop(w->source, s->p, (size_t)s->len);
	s->p = dst ? dst : out;
	s->len = (uint64_t)want;
	return k;
}

/* A buffer whose bytes are read, of which field name's rows use need: decompressed when the
 * batch is compressed. */
static fmt_kind take_data(walk *w, span *s, uint64_t need, const char *name, fmt_err *e)
{
	fmt_kind k = take_buffer(w, s, e);
	if (k != FMT_OK || !w->codec)
		return k;
	if (fmt_add_u64(w->batch_need, need, &w->batch_need))
		w->batch_need = UINT64_MAX;
	return s->len == 0 ? k : uncompress(w, s, name, e);
}

static fmt_kind need_bytes(walk *w, const span *s, uint64_t count, uint64_t width, const char *name,
			   const char *what, fmt_err *e)
{
	uint64_t need;
	int short_buf = fmt_mul_u64(count, width, &need) || s->len < need;
	if (w->use) {
		w->use[s->i].bytes = short_buf ? s->len : need;
		return FMT_OK;
	}
	if (short_buf)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: field \"%s\": %s buffer too short", name, what);
	return FMT_OK;
}

/* The validity bitmap of length values (NULL when there are no nulls). */
static fmt_kind take_validity(walk *w, uint64_t length, uint64_t nulls, const uint8_t **v,
			      const char *name, fmt_err *e)
{
	span s;
	fmt_kind k = nulls ? take_data(w, &s, (length + 7) / 8, name, e) : take_buffer(w, &s, e);
	if (k != FMT_OK)
		return k;
	*v = NULL;
	if (nulls == 0)
		return FMT_OK;
	k = need_bytes(w, &s, (length + 7) / 8, 1, name, "validity", e);
	*v = s.p;
	return k;
}

/* Offsets as the table wants them: starting at 0 (rebased into a copy the batch owns when a
 * writer sliced them), checked in order and within the data. */
static fmt_kind take_offsets(walk *w, fmt_batch *b, fmt_column *c, const fmt_field *f, uint64_t rows,
			     fmt_err *e)
{
	static const uint8_t zero[8];
	int large = f->type == FMT_C_LARGE_UTF8;
	size_t width = large ? 8 : 4;
	span offs, vals;
	int64_t first = 0, last = 0;
	fmt_kind k = take_data(w, &offs, need_of_items(rows + 1, width), f->name, e);
	int no_offsets = rows == 0 && offs.len == 0;
	if (k == FMT_OK && !no_offsets)
		k = need_bytes(w, &offs, rows + 1, width, f->name, "offsets", e);
	if (k != FMT_OK)
		return k;
	if (!no_offsets && !w->use) {
		first = large ? (int64_t)fmt_rd_u64(offs.p) : (int32_t)fmt_rd_u32(offs.p);
		last = large ? (int64_t)fmt_rd_u64(offs.p + width * rows) : (int32_t)fmt_rd_u32(offs.p + width * rows);
		if (first < 0 || last < first)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: field \"%s\": offsets outside the data", f->name);
	}
	/* the data of the rows: up to the last offset */
	if ((k = take_data(w, &vals, (uint64_t)last, f->name, e)) != FMT_OK)
		return k;
	c->values = vals.p;
	c->values_len = vals.len;
	if (w->use)
		w->use[vals.i] = (buf_use){ .offsets = offs.i + 1, .width = (uint32_t)width, .rows = rows };
	if (no_offsets) {
		c->offsets = zero;
		return FMT_OK;
	}
	if (w->use)
		return FMT_OK;
	if ((uint64_t)last > vals.len)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: field \"%s\": offsets outside the data", f->name);
	c->offsets = offs.p;
	if (first == 0)
		return FMT_OK;
	uint8_t *copy = malloc((size_t)((rows + 1) * width));
	if (!copy || fmt_batch_own(b, copy, e) != FMT_OK)
		return copy ? e->kind : oom(e);
	for (uint64_t i = 0; i <= rows; i++) {
		if (large)
			fmt_wr_u64(copy + 8 * i, fmt_rd_u64(offs.p + 8 * i) - (uint64_t)first);
		else
			fmt_wr_u32(copy + 4 * i, fmt_rd_u32(offs.p + 4 * i) - (uint32_t)first);
	}
	c->offsets = copy;
	c->values = vals.p + first;
	c->values_len = vals.len - (uint64_t)first;
	return FMT_OK;
}

static fmt_kind check_length(uint64_t length, uint64_t rows, const fmt_field *f, fmt_err *e)
{
	if (length != rows)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: field \"%s\" has %llu rows, the batch %llu",
				f->name, (unsigned long long)length, (unsigned long long)rows);
	return FMT_OK;
}

/* The column of a field this build does not convert: its nodes and buffers are taken (each
 * checked within the body), its values left out. */
static fmt_kind skip_column(walk *w, const ipc_shape *sh, const fmt_field *f, uint64_t rows, fmt_err *e)
{
	uint64_t length, nulls, buffers = sh->buffers + (w->v4 ? sh->unions : 0);
	span s;
	if (!sh->countable)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: column '%s' (%s): fmtkit cannot count its buffers to step over it",
				f->name, f->type_name);
	fmt_kind k = take_node(w, &length, &nulls, e);
	if (k == FMT_OK)
		k = check_length(length, rows, f, e);
	for (uint32_t i = 1; k == FMT_OK && i < sh->nodes; i++)
		k = take_node(w, &length, &nulls, e);
	for (uint32_t i = 0; k == FMT_OK && i < sh->views; i++) {
		if (w->variadic_i >= w->n_variadic)
			return bad(e, "RecordBatch has fewer variadic buffer counts than the schema needs");
		int64_t more = (int64_t)fmt_rd_u64(w->variadic + 8 * (size_t)w->variadic_i++);
		if (more < 0 || (uint64_t)more > w->n_buffers)
			return bad(e, "variadic buffer count out of range");
		buffers += (uint64_t)more;
	}
	for (uint64_t i = 0; k == FMT_OK && i < buffers; i++)
		k = take_buffer(w, &s, e);
	return k;
}

static fmt_kind decode_column(walk *w, fmt_batch *b, const fmt_field *f, const ipc_shape *sh, fmt_column *c,
			      fmt_err *e)
{
	uint64_t rows = b->n_rows, length, nulls;
	span vals;
	*c = (fmt_column){ 0 };
	if (f->type == FMT_C_OTHER)
		return skip_column(w, sh, f, rows, e);
	fmt_kind k = take_node(w, &length, &nulls, e);
	if (k == FMT_OK)
		k = check_length(length, rows, f, e);
	if (k != FMT_OK)
		return k;
	c->null_count = nulls;
	if ((k = take_validity(w, rows, nulls, &c->validity, f->name, e)) != FMT_OK)
		return k;
	switch (f->type) {
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8: case FMT_C_BINARY:
		return take_offsets(w, b, c, f, rows, e);
	case FMT_C_FIXED_SIZE_LIST: {
		uint64_t items, item_len, item_nulls;
		if (fmt_mul_u64(rows, f->list_size, &items))
			return bad(e, "list length overflows");
		if ((k = take_node(w, &item_len, &item_nulls, e)) != FMT_OK)
			return k;
		if (item_len < items)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Arrow IPC: field \"%s\": fewer list items than rows x size",
					f->name);
		if ((k = take_validity(w, items, item_nulls, &c->elem_validity, f->name, e)) != FMT_OK ||
		    (k = take_data(w, &vals, need_of_items(items, fmt_ctype_width(f->elem)), f->name, e)) != FMT_OK)
			return k;
		c->values = vals.p;
		c->values_len = vals.len;
		return need_bytes(w, &vals, items, fmt_ctype_width(f->elem), f->name, "values", e);
	}
	default:
		if ((k = take_data(w, &vals, f->type == FMT_C_BOOL ? (rows + 7) / 8
				   : need_of_items(rows, fmt_ctype_width(f->type)), f->name, e)) != FMT_OK)
			return k;
		c->values = vals.p;
		c->values_len = vals.len;
		if (f->type == FMT_C_BOOL)
			return need_bytes(w, &vals, (rows + 7) / 8, 1, f->name, "values", e);
		return need_bytes(w, &vals, rows, fmt_ctype_width(f->type), f->name, "values", e);
	}
}

/* The RecordBatch header of m: its length and the walk over its nodes and buffers. */
static fmt_kind batch_walk(const ipc_msg *m, walk *w, int64_t *length, fmt_err *e)
{
	const fmt_fb_table *rb = &m->header;
	size_t nodes_at, bufs_at;
	fmt_fb_table comp;
	size_t variadic_at;
	*w = (walk){ .body = m->body, .body_len = m->body_len, .v4 = m->version == META_V4 };
	if (fmt_fb_i64(rb, 0, 0, length) || *length < 0)
		return bad(e, "malformed RecordBatch length");
	w->rows = (uint64_t)*length;
	if (fmt_fb_vector(rb, 1, 16, &nodes_at, &w->n_nodes) < 0 || fmt_fb_vector(rb, 2, 16, &bufs_at, &w->n_buffers) < 0)
		return bad(e, "malformed RecordBatch nodes or buffers");
	if (fmt_fb_vector(rb, 4, 8, &variadic_at, &w->n_variadic) < 0)
		return bad(e, "malformed RecordBatch variadic buffer counts");
	int has_comp = fmt_fb_table_field(rb, 3, &comp);
	if (has_comp < 0)
		return bad(e, "malformed RecordBatch compression");
	if (has_comp == 1) {
		uint8_t codec = 0, method = 0;
		if (fmt_fb_u8(&comp, 0, 0, &codec) || fmt_fb_u8(&comp, 1, 0, &method))
			return bad(e, "malformed RecordBatch compression");
		if (codec > 1)
			return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: buffer compression codec %u is not supported (LZ4_FRAME, ZSTD are)",
					codec);
		if (method != 0)
			return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: body compression method %u is not supported (BUFFER is)",
					method);
		w->codec = FMT_IPC_LZ4_FRAME + codec;
	}
	w->nodes = w->n_nodes ? m->msg.buf + nodes_at : NULL;
	w->variadic = w->n_variadic ? m->msg.buf + variadic_at : NULL;
	w->buffers = w->n_buffers ? m->msg.buf + bufs_at : NULL;
	return FMT_OK;
}

static fmt_kind decode_columns(const fmt_ipc_reader *r, walk *w, int64_t length, fmt_batch *b, fmt_err *e)
{
	const fmt_schema *s = &r->schema;
	if (b->n_columns != s->n_fields)
		return fmt_fail(e, FMT_INTERNAL, "batch not initialised for the schema");
	b->n_rows = (uint64_t)length;
	w->own = b;
	for (size_t i = 0; i < s->n_fields; i++) {
		fmt_kind k = decode_column(w, b, &s->fields[i], &r->shapes[i], &b->columns[i], e);
		if (k != FMT_OK)
			return k;
	}
	return FMT_OK;
}

static void unmap_spill(fmt_ipc_reader *r);

/* A compressed body of at most this many bytes has its buffers' lengths read where they lie:
 * its decompression reads those pages next (a spilled one's too), and they are within 1 MiB. */
#define HEADS_IN_PLACE ((uint64_t)1 << 20)

/* What a compressed batch's buffers say they hold decompressed, each 8-byte aligned (buffers the
 * walk will refuse count for nothing). The lengths of a larger body are read with pread where
 * they lie in the source's mapping: a fault would map each buffer's first folio (up to 2 MiB)
 * until it is decompressed. (A pread a buffer was half the CPU of a file of 30,000 small batches
 * to CSV.) */
static uint64_t unpacked_total(const walk *w)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < w->n_buffers; i++) {
		const uint8_t *p = w->buffers + 16 * (size_t)i;
		int64_t off = (int64_t)fmt_rd_u64(p), len = (int64_t)fmt_rd_u64(p + 8);
		if (off < 0 || len < 8 || (uint64_t)off > w->body_len || (uint64_t)len > w->body_len - (uint64_t)off)
			continue;
		uint8_t head[8];
		uint64_t at = w->source && w->body_len > HEADS_IN_PLACE ? fmt_source_mapped_at(w->source, w->body + off, 8)
									  : UINT64_MAX;
		fmt_err ignored;
		if (at == UINT64_MAX)
			memcpy(head, w->body + off, 8);
		else if (fmt_source_pread(w->source, at, head, 8, &ignored) != FMT_OK)
			continue;
		int64_t want = (int64_t)fmt_rd_u64(head);
		if (want > 0 && (uint64_t)want <= MAX_UNCOMPRESSED)
			total = fmt_sat_add_u64(total, ((uint64_t)want + 7) & ~(uint64_t)7);
	}
	return total;
}

/* The reader's spill file, made at its first use. */
static fmt_kind spill_ready(fmt_ipc_reader *r, fmt_err *e)
{
	if (r->spill_open)
		return FMT_OK;
	fmt_kind k = fmt_spill_open(&r->spill, "a temporary file for a record batch", e);
	r->spill_open = k == FMT_OK;
	return k;
}

/* A compressed batch of a table's file whose buffers say they hold more than FMT_IPC_SPILL_MIN
 * decompressed (within the decode budget, which a larger one fails as before) is decompressed
 * a piece at a time into the reader's spill file, mapped: r->spilled, and the memory it takes is
 * a frame's window and a MiB, not the batch (the memory rule, issue 26). */
static fmt_kind spill_compressed(fmt_ipc_reader *r, walk *w, fmt_err *e)
{
	uint64_t total = r->source ? unpacked_total(w) : 0;
	const uint8_t *map;
	if (total <= FMT_IPC_SPILL_MIN || total > fmt_decode_budget(w->body_len, w->rows))
		return FMT_OK;
	fmt_kind k = spill_ready(r, e);
	if (k != FMT_OK)
		return k;
	k = fmt_spill_map(&r->spill, total, &map, e);
	if (k == FMT_OK && !(w->bounce = malloc(SPILL_BOUNCE)))
		k = oom(e);
	if (k != FMT_OK)
		return k;
	r->spilled = 1;
	w->spill = &r->spill;
	return FMT_OK;
}

static fmt_kind decode_batch(fmt_ipc_reader *r, const ipc_msg *m, fmt_batch *b, fmt_err *e)
{
	walk w;
	int64_t length;
	unmap_spill(r);
	fmt_kind k = batch_walk(m, &w, &length, e);
	w.batch = r->batches;
	w.source = r->source;
	w.spill = NULL;
	w.spill_at = 0;
	w.bounce = NULL;
	if (k == FMT_OK && w.codec)
		k = spill_compressed(r, &w, e);
	if (k == FMT_OK)
		k = decode_columns(r, &w, length, b, e);
	free(w.bounce);
	if (r->spilled) /* what decoding read (string offsets) leaves the resident set */
		fmt_source_drop(&r->spill, r->spill.map, (size_t)r->spill.size);
	return k;
}

/* ---- reader ---- */

int fmt_ipc_probe(const uint8_t *head, size_t n)
{
	if (n >= 8 && memcmp(head, file_magic, 6) == 0)
		return 1;
	/* A stream: continuation, a metadata length, and a Message whose header is a Schema. */
	if (n < 16 || fmt_rd_u32(head) != 0xFFFFFFFFu)
		return 0;
	uint32_t mlen = fmt_rd_u32(head + 4);
	if (mlen < 8 || mlen > n - 8)
		return mlen >= 8 && mlen < (1u << 24); /* longer than the head: trust the framing */
	fmt_fb_table t;
	uint8_t type;
	return fmt_fb_root(head + 8, mlen, &t) == 0 && fmt_fb_u8(&t, 1, 0, &type) == 0 && type == HDR_SCHEMA;
}

static fmt_kind open_file(fmt_ipc_reader *r, fmt_err *e)
{
	const uint8_t *d = r->data;
	size_t len = r->len;
	if (len < 6 + 2 + 4 + 6 || memcmp(d + len - 6, file_magic, 6) != 0)
		return bad(e, "IPC file without the closing ARROW1 magic (truncated?)");
	uint32_t flen = fmt_rd_u32(d + len - 10);
	if (flen > 0x7FFFFFFFu || flen > len - 18)
		return bad(e, "footer length out of range");
	const uint8_t *footer = d + len - 10 - flen;
	fmt_fb_table ft, st;
	int16_t version;
	if (fmt_fb_root(footer, flen, &ft) || fmt_fb_i16(&ft, 0, 0, &version))
		return bad(e, "malformed footer");
	if (version < META_V4)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: metadata version V%d is not supported", version + 1);
	if (fmt_fb_table_field(&ft, 1, &st) != 1)
		return bad(e, "footer without a schema");
	fmt_kind k = decode_schema(&st, r, e);
	if (k != FMT_OK)
		return k;
	size_t at;
	int res = fmt_fb_vector(&ft, 3, 24, &at, &r->n_blocks);
	if (res < 0)
		return bad(e, "malformed record batch blocks");
	r->blocks_at = res == 1 ? (size_t)(footer - d) + at : 0;
	if (res == 0)
		r->n_blocks = 0;
	r->is_file = 1;
	return FMT_OK;
}

static fmt_kind schema_message(fmt_ipc_reader *r, const ipc_msg *m, fmt_err *e)
{
	if (m->type != HDR_SCHEMA)
		return bad(e, "the first message is not a Schema");
	return decode_schema(&m->header, r, e);
}

fmt_kind fmt_ipc_open(fmt_ipc_reader *r, const uint8_t *data, size_t len, fmt_err *e)
{
	memset(r, 0, sizeof *r);
	fmt_schema_init(&r->schema);
	r->data = data;
	r->len = len;
	fmt_kind k;
	if (len >= 6 && memcmp(data, file_magic, 6) == 0) {
		k = open_file(r, e);
	} else {
		ipc_msg m;
		int end;
		k = next_stream_message(data, len, &r->pos, &m, &end, e);
		if (k == FMT_OK && end)
			k = bad(e, "stream without a Schema message");
		if (k == FMT_OK)
			k = schema_message(r, &m, e);
	}
	if (k != FMT_OK)
		fmt_ipc_close(r);
	return k;
}

static fmt_kind next_file_message(fmt_ipc_reader *r, ipc_msg *m, int *end, fmt_err *e)
{
	if (r->next_block >= r->n_blocks) {
		*end = 1;
		return FMT_OK;
	}
	*end = 0;
	const uint8_t *blk = r->data + r->blocks_at + 24 * (size_t)r->next_block++;
	int64_t off = (int64_t)fmt_rd_u64(blk), body = (int64_t)fmt_rd_u64(blk + 16);
	int32_t mlen = (int32_t)fmt_rd_u32(blk + 8);
	uint64_t end_meta;
	if (off < 0 || mlen < 8 || body < 0 || fmt_add_u64((uint64_t)off, (uint64_t)mlen, &end_meta) ||
	    end_meta > r->len || (uint64_t)body > r->len - end_meta)
		return bad(e, "record batch block outside the file");
	const uint8_t *p = r->data + off;
	size_t skip = fmt_rd_u32(p) == 0xFFFFFFFFu ? 8 : 4;
	uint32_t flen = fmt_rd_u32(p + skip - 4);
	if (flen > (uint32_t)mlen - skip)
		return bad(e, "block metadata length out of range");
	fmt_kind k = parse_message(p + skip, flen, r->data + end_meta, (uint64_t)body, m, e);
	r->last_lo = (size_t)off;
	r->last_hi = (size_t)(end_meta + (uint64_t)body);
	if (k == FMT_OK && m->type != HDR_RECORD_BATCH)
		return bad(e, "a record batch block that is not a RecordBatch");
	return k;
}

/* A message the reader can decode: a RecordBatch. */
static fmt_kind check_batch_message(const ipc_msg *m, fmt_err *e)
{
	if (m->type == HDR_DICTIONARY)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: dictionary batches are not supported");
	if (m->type == HDR_SCHEMA)
		return bad(e, "a second Schema message");
	if (m->type != HDR_RECORD_BATCH)
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: message type %u is not supported", m->type);
	return FMT_OK;
}

/* The next message of the file's blocks or the stream, past the dictionary batches of a stream
 * whose dictionary-encoded columns are stepped over (a file lists them apart). */
static fmt_kind next_message(fmt_ipc_reader *r, ipc_msg *m, int *end, fmt_err *e)
{
	for (;;) {
		size_t from = r->pos;
		fmt_kind k = r->is_file ? next_file_message(r, m, end, e)
					: next_stream_message(r->data, r->len, &r->pos, m, end, e);
		if (!r->is_file) {
			r->last_lo = from;
			r->last_hi = r->pos;
		}
		if (k != FMT_OK || *end || m->type != HDR_DICTIONARY || !r->has_dictionary)
			return k;
	}
}

fmt_kind fmt_ipc_next(fmt_ipc_reader *r, fmt_batch *b, int *done, fmt_err *e)
{
	ipc_msg m;
	int end;
	*done = 0;
	fmt_kind k = next_message(r, &m, &end, e);
	if (k != FMT_OK)
		return k;
	if (end) {
		*done = 1;
		return FMT_OK;
	}
	if ((k = check_batch_message(&m, e)) != FMT_OK)
		return k;
	k = decode_batch(r, &m, b, e);
	if (k == FMT_OK)
		r->batches++;
	return k;
}

void fmt_ipc_drop_passed(const fmt_ipc_reader *r, fmt_ipc_passed *p, int end)
{
	if (r->last_hi > r->last_lo) {
		p->lo = r->last_lo < p->lo ? r->last_lo : p->lo;
		p->hi = r->last_hi > p->hi ? r->last_hi : p->hi;
	}
	if (!r->source || p->hi <= p->lo || (!end && p->hi - p->lo < ((size_t)1 << 20)))
		return;
	fmt_source_drop(r->source, r->data + p->lo, p->hi - p->lo);
	p->lo = p->hi > (64u << 10) ? p->hi - (64u << 10) : 0;
}

int fmt_ipc_survey_batches(const fmt_ipc_reader *r, fmt_ipc_survey *s)
{
	fmt_ipc_reader c = *r; /* its positions move; what it points to is only read */
	fmt_err e;
	fmt_ipc_passed passed = { 0, 0 };
	memset(s, 0, sizeof *s);
	for (;;) {
		ipc_msg m;
		walk w;
		int64_t length;
		int end;
		if (next_message(&c, &m, &end, &e) != FMT_OK)
			return 0;
		fmt_ipc_drop_passed(&c, &passed, end);
		if (end)
			return 1;
		if (check_batch_message(&m, &e) != FMT_OK || batch_walk(&m, &w, &length, &e) != FMT_OK ||
		    fmt_add_u64(s->rows, (uint64_t)length, &s->rows))
			return 0;
		s->batches++;
		s->by_codec[w.codec]++;
	}
}

/* The last spilled body's mapping goes. */
static void unmap_spill(fmt_ipc_reader *r)
{
	fmt_spill_unmap(&r->spill);
	r->spilled = 0;
}

void fmt_ipc_close(fmt_ipc_reader *r)
{
	fmt_schema_free(&r->schema);
	free(r->shapes);
	r->shapes = NULL;
	free(r->msg_meta);
	free(r->msg_body);
	free(r->msg_bufs);
	r->msg_meta = r->msg_body = r->msg_bufs = NULL;
	r->msg_meta_cap = r->msg_body_cap = r->msg_bufs_cap = 0;
	unmap_spill(r);
	if (r->spill_open)
		fmt_spill_close(&r->spill);
	r->spill_open = 0;
}

/* ---- one message at a time (a forward-only source: a decompressing window) ---- */

fmt_kind fmt_ipc_open_message(fmt_ipc_reader *r, const uint8_t *meta, size_t n, uint64_t *body, fmt_err *e)
{
	ipc_msg m;
	memset(r, 0, sizeof *r);
	fmt_schema_init(&r->schema);
	*body = 0;
	fmt_kind k = parse_message(meta, n, NULL, UINT64_MAX, &m, e);
	if (k == FMT_OK)
		k = schema_message(r, &m, e);
	if (k != FMT_OK) {
		fmt_ipc_close(r);
		return k;
	}
	*body = m.body_len;
	return FMT_OK;
}

static fmt_kind grow(uint8_t **p, size_t *cap, uint64_t n, fmt_err *e)
{
	if (n <= *cap)
		return FMT_OK;
	if (n > SIZE_MAX / 2)
		return oom(e);
	uint8_t *q = realloc(*p, (size_t)n);
	if (!q)
		return oom(e);
	*p = q;
	*cap = (size_t)n;
	return FMT_OK;
}

/* n bytes at offset at of the kept body (in r->msg_body, or the spill file) into dst. */
static fmt_kind kept_read(const fmt_ipc_reader *r, uint64_t at, uint8_t *dst, size_t n, fmt_err *e)
{
	if (r->spilled)
		return fmt_source_pread(&r->spill, at, dst, n, e);
	memcpy(dst, r->msg_body + at, n);
	return FMT_OK;
}

/* The next n bytes of pull kept at offset at: into r->msg_body, or through it (1 MiB at a time)
 * into the spill file. */
static fmt_kind keep(fmt_ipc_reader *r, fmt_ipc_pull_fn pull, void *ctx, uint64_t at, uint64_t n, fmt_err *e)
{
	if (!r->spilled) {
		fmt_kind k = grow(&r->msg_body, &r->msg_body_cap, at + n ? at + n : 1, e);
		return k == FMT_OK ? pull(ctx, r->msg_body + at, n, e) : k;
	}
	fmt_kind k = grow(&r->msg_body, &r->msg_body_cap, SPILL_BOUNCE, e);
	while (k == FMT_OK && n > 0) {
		size_t part = n < SPILL_BOUNCE ? (size_t)n : SPILL_BOUNCE;
		if ((k = pull(ctx, r->msg_body, part, e)) != FMT_OK ||
		    (k = fmt_spill_write(&r->spill, at, r->msg_body, part, e)) != FMT_OK)
			return k;
		at += part;
		n -= part;
	}
	return k;
}

/* What a string column's data buffer uses (*use): up to its last offset, when the offsets kept
 * are whole and in order (when they are not, decoding says so and nothing is needed here). */
static fmt_kind data_use(const fmt_ipc_reader *r, const buf_use *u, const uint8_t *bufs, uint64_t len,
			 uint64_t *use, fmt_err *e)
{
	const uint8_t *o = bufs + 16 * (size_t)(u->offsets - 1);
	uint64_t at = fmt_rd_u64(o), kept = fmt_rd_u64(o + 8), need;
	uint8_t p[16];
	*use = 0;
	if (fmt_mul_u64(u->rows + 1, u->width, &need) || kept < need)
		return FMT_OK;
	fmt_kind k = kept_read(r, at, p, u->width, e);
	if (k == FMT_OK)
		k = kept_read(r, at + u->width * u->rows, p + 8, u->width, e);
	if (k != FMT_OK)
		return k;
	int64_t first = u->width == 8 ? (int64_t)fmt_rd_u64(p) : (int32_t)fmt_rd_u32(p);
	int64_t last = u->width == 8 ? (int64_t)fmt_rd_u64(p + 8) : (int32_t)fmt_rd_u32(p + 8);
	if (first >= 0 && last >= first)
		*use = (uint64_t)last < len ? (uint64_t)last : len;
	return FMT_OK;
}

/* Whether the buffers may keep more than FMT_IPC_SPILL_MIN bytes: then the spill file is made
 * ready (once a reader) and r->spilled set. */
static fmt_kind spill_if_big(fmt_ipc_reader *r, const walk *w, const buf_use *use, fmt_err *e)
{
	uint64_t most = 0;
	for (uint32_t i = 0; i < w->buf_i && most <= FMT_IPC_SPILL_MIN; i++)
		most += use[i].offsets ? fmt_rd_u64(w->buffers + 16 * (size_t)i + 8) : use[i].bytes;
	if (most <= FMT_IPC_SPILL_MIN)
		return FMT_OK;
	fmt_kind k = spill_ready(r, e);
	if (k != FMT_OK)
		return k;
	r->spilled = 1;
	return FMT_OK;
}

/* Take the body from pull in order: of each buffer the bytes its rows use are kept (8-byte
 * aligned: keep), the rest is dropped; r->msg_bufs gets the buffers as they are kept. */
static fmt_kind pull_body(fmt_ipc_reader *r, const walk *w, const buf_use *use, fmt_ipc_pull_fn pull,
			  void *ctx, uint64_t *kept, fmt_err *e)
{
	uint64_t cursor = 0, out = 0;
	fmt_kind k = grow(&r->msg_bufs, &r->msg_bufs_cap, 16 * (uint64_t)(w->buf_i ? w->buf_i : 1), e);
	if (k == FMT_OK)
		k = spill_if_big(r, w, use, e);
	for (uint32_t i = 0; k == FMT_OK && i < w->buf_i; i++) {
		const uint8_t *p = w->buffers + 16 * (size_t)i;
		uint64_t off = fmt_rd_u64(p), len = fmt_rd_u64(p + 8), n = use[i].bytes;
		out = (out + 7) & ~(uint64_t)7;
		if (use[i].offsets && (k = data_use(r, &use[i], r->msg_bufs, len, &n, e)) != FMT_OK)
			return k;
		fmt_wr_u64(r->msg_bufs + 16 * (size_t)i, len ? out : 0);
		fmt_wr_u64(r->msg_bufs + 16 * (size_t)i + 8, len ? n : 0);
		if (len == 0)
			continue;
		if (off < cursor)
			return bad(e, "buffers out of order or overlapping in the message body");
		if ((k = pull(ctx, NULL, off - cursor, e)) != FMT_OK || (k = keep(r, pull, ctx, out, n, e)) != FMT_OK)
			return k;
		k = pull(ctx, NULL, len - n, e);
		out += n;
		cursor = off + len;
	}
	if (k == FMT_OK)
		k = pull(ctx, NULL, w->body_len - cursor, e);
	*kept = out;
	return k;
}

fmt_kind fmt_ipc_next_message(fmt_ipc_reader *r, const uint8_t *meta, size_t n, fmt_ipc_pull_fn pull, void *ctx,
			      fmt_batch *b, fmt_err *e)
{
	ipc_msg m;
	walk w;
	int64_t length;
	fmt_kind k = grow(&r->msg_meta, &r->msg_meta_cap, n ? n : 1, e);
	if (k != FMT_OK)
		return k;
	memcpy(r->msg_meta, meta, n);
	const fmt_field *u = fmt_schema_unsupported(&r->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	if ((k = parse_message(r->msg_meta, n, NULL, UINT64_MAX, &m, e)) != FMT_OK ||
	    (k = check_batch_message(&m, e)) != FMT_OK || (k = batch_walk(&m, &w, &length, e)) != FMT_OK)
		return k;
	if (w.codec) /* an .ald's IPC is not compressed: its payload is */
		return fmt_fail(e, FMT_UNSUPPORTED, "Arrow IPC: a compressed record batch in a payload read one message at a time");
	/* a field takes at most 4 buffers (a list's validity, its items' validity and values) */
	uint64_t planned = 4 * (uint64_t)r->schema.n_fields + 1;
	if (w.n_buffers < planned)
		planned = w.n_buffers;
	w.use = calloc(planned ? planned : 1, sizeof *w.use);
	if (!w.use)
		return oom(e);
	w.n_buffers = (uint32_t)planned;
	uint64_t kept = 0;
	const uint8_t *body = NULL;
	unmap_spill(r);
	k = decode_columns(r, &w, length, b, e);
	if (k == FMT_OK)
		k = pull_body(r, &w, w.use, pull, ctx, &kept, e);
	free(w.use);
	if (k == FMT_OK && r->spilled)
		k = fmt_spill_map(&r->spill, kept, &body, e); /* the kept bytes as the batch's body */
	else if (k == FMT_OK)
		body = r->msg_body ? r->msg_body : (const uint8_t *)"";
	if (k != FMT_OK)
		return k;
	walk d = { .nodes = w.nodes, .n_nodes = w.n_nodes, .buffers = r->msg_bufs, .n_buffers = w.buf_i,
		   .body = body, .body_len = kept };
	k = decode_columns(r, &d, length, b, e);
	if (r->spilled) /* what decoding read (string offsets) leaves the resident set */
		fmt_source_drop(&r->spill, r->spill.map, (size_t)kept);
	if (k == FMT_OK)
		r->batches++;
	return k;
}

/* ---- writer ---- */

static fmt_fb_ref encode_type(fmt_fb_builder *fb, fmt_ctype t, const fmt_field *f, uint8_t *tt)
{
	int16_t prec;
	fmt_fb_ref tz = 0;
	switch (t) {
	case FMT_C_BOOL: *tt = TY_BOOL; break;
	case FMT_C_UTF8: *tt = TY_UTF8; break;
	case FMT_C_LARGE_UTF8: *tt = TY_LARGE_UTF8; break;
	case FMT_C_BINARY: *tt = TY_BINARY; break;
	case FMT_C_F16: case FMT_C_F32: case FMT_C_F64:
		prec = t == FMT_C_F16 ? 0 : t == FMT_C_F32 ? 1 : 2;
		*tt = TY_FLOAT;
		fmt_fb_start_table(fb);
		fmt_fb_slot_i16(fb, 0, prec, 0);
		return fmt_fb_end_table(fb);
	case FMT_C_DATE32:
		*tt = TY_DATE;
		fmt_fb_start_table(fb);
		fmt_fb_slot_i16(fb, 0, 0, 1);
		return fmt_fb_end_table(fb);
	case FMT_C_TIMESTAMP:
		*tt = TY_TIMESTAMP;
		if (f->timezone)
			tz = fmt_fb_create_string(fb, f->timezone, strlen(f->timezone));
		fmt_fb_start_table(fb);
		fmt_fb_slot_i16(fb, 0, (int16_t)f->unit, 0);
		if (f->timezone)
			fmt_fb_slot_ref(fb, 1, tz);
		return fmt_fb_end_table(fb);
	default: {
		/* integers: arrow-rs adds is_signed before bitWidth (see the §10 example) */
		int width = (int)fmt_ctype_width(t) * 8;
		*tt = TY_INT;
		fmt_fb_start_table(fb);
		fmt_fb_slot_u8(fb, 1, t >= FMT_C_I8 && t <= FMT_C_I64, 0);
		fmt_fb_slot_i32(fb, 0, width, 0);
		return fmt_fb_end_table(fb);
	}
	}
	fmt_fb_start_table(fb);
	return fmt_fb_end_table(fb);
}

static fmt_fb_ref encode_field(fmt_fb_builder *fb, const char *name, fmt_ctype t, int nullable, const fmt_field *f)
{
	fmt_fb_ref nm = fmt_fb_create_string(fb, name, strlen(name));
	fmt_fb_ref children, type;
	uint8_t tt;
	if (t == FMT_C_FIXED_SIZE_LIST) {
		/* the child as arrow-rs and arrow-js name it: "item", nullable */
		fmt_fb_ref child = encode_field(fb, "item", f->elem, 1, f);
		fmt_fb_start_table(fb);
		fmt_fb_slot_i32(fb, 0, (int32_t)f->list_size, 0);
		type = fmt_fb_end_table(fb);
		tt = TY_FIXED_SIZE_LIST;
		children = fmt_fb_create_ref_vector(fb, &child, 1);
	} else {
		children = fmt_fb_create_ref_vector(fb, NULL, 0);
		type = encode_type(fb, t, f, &tt);
	}
	fmt_fb_start_table(fb);
	fmt_fb_slot_ref(fb, 0, nm);
	fmt_fb_slot_u8(fb, 2, tt, 0);
	fmt_fb_slot_u8(fb, 1, (uint8_t)(nullable != 0), 0);
	fmt_fb_slot_ref(fb, 5, children);
	fmt_fb_slot_ref(fb, 3, type);
	return fmt_fb_end_table(fb);
}

static fmt_fb_ref encode_schema(fmt_fb_builder *fb, const fmt_schema *s, fmt_err *e)
{
	fmt_fb_ref *refs = malloc((s->n_fields ? s->n_fields : 1) * sizeof *refs);
	if (!refs) {
		oom(e);
		return 0;
	}
	for (size_t i = 0; i < s->n_fields; i++) {
		const fmt_field *f = &s->fields[i];
		refs[i] = encode_field(fb, f->name, f->type, f->nullable, f);
	}
	fmt_fb_ref fields = fmt_fb_create_ref_vector(fb, refs, (uint32_t)s->n_fields);
	free(refs);
	fmt_fb_start_table(fb);
	fmt_fb_slot_ref(fb, 1, fields);
	fmt_fb_ref schema = fmt_fb_end_table(fb);
	if (!schema)
		oom(e);
	return schema;
}

static void sb_zeros(fmt_sb *out, size_t n)
{
	static const char zeros[IPC_ALIGN];
	while (n) {
		size_t k = n < sizeof zeros ? n : sizeof zeros;
		fmt_sb_put(out, zeros, k);
		n -= k;
	}
}

/* Continuation, length and the flatbuffer padded so that the whole is a multiple of 64. */
static uint64_t frame_message(fmt_ipc_writer *w, fmt_fb_ref header, uint8_t type, int64_t body_len,
			      fmt_sb *out, fmt_err *e)
{
	fmt_fb_builder *fb = w->fb;
	const uint8_t *data;
	size_t len;
	fmt_fb_start_table(fb);
	fmt_fb_slot_i16(fb, 0, META_V5, 0);
	fmt_fb_slot_u8(fb, 1, type, 0);
	fmt_fb_slot_i64(fb, 3, body_len, 0);
	fmt_fb_slot_ref(fb, 2, header);
	fmt_fb_ref root = fmt_fb_end_table(fb);
	if (fmt_fb_finish(fb, root, &data, &len) || len > 0x7FFFFF00u) {
		oom(e);
		return 0;
	}
	size_t total = (len + 8 + IPC_ALIGN - 1) & ~(size_t)(IPC_ALIGN - 1);
	uint8_t pre[8];
	fmt_wr_u32(pre, 0xFFFFFFFFu);
	fmt_wr_u32(pre + 4, (uint32_t)(total - 8));
	fmt_sb_put(out, (const char *)pre, 8);
	fmt_sb_put(out, (const char *)data, len);
	sb_zeros(out, total - 8 - len);
	w->pos += total;
	return total;
}

fmt_kind fmt_ipc_writer_begin(fmt_ipc_writer *w, const fmt_schema *s, int file, fmt_sb *out, fmt_err *e)
{
	memset(w, 0, sizeof *w);
	const fmt_field *u = fmt_schema_unsupported(s);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	w->fb = malloc(sizeof *w->fb);
	if (!w->fb)
		return oom(e);
	fmt_fb_builder_init(w->fb);
	w->schema = s;
	w->file = file;
	if (file) {
		static const char magic[8] = { 'A', 'R', 'R', 'O', 'W', '1', 0, 0 };
		fmt_sb_put(out, magic, 8);
		w->pos = 8;
	}
	fmt_fb_builder_reset(w->fb);
	fmt_fb_ref sch = encode_schema(w->fb, s, e);
	if (!sch || !frame_message(w, sch, HDR_SCHEMA, 0, out, e) || out->oom) {
		fmt_ipc_writer_free(w);
		return oom(e);
	}
	return FMT_OK;
}

/* One body buffer: bytes as they are, or an all-valid bitmap. */
typedef struct out_buf {
	enum { OB_BYTES, OB_ONES } kind;
	const uint8_t *p;
	uint64_t len;
	uint8_t *owned;    /* p's bytes when the writer made them (compressed) */
} out_buf;

typedef struct batch_plan {
	out_buf *bufs;
	uint8_t *nodes;    /* FieldNode structs */
	uint8_t *layout;   /* Buffer structs */
	size_t n_bufs, n_nodes;
	uint64_t body;
} batch_plan;

/* A body buffer of len bytes with its padding to the alignment. */
static uint64_t padded(uint64_t len)
{
	return (len + IPC_ALIGN - 1) & ~(uint64_t)(IPC_ALIGN - 1);
}

/* Buffer i's Buffer struct: at the body's end so far, which it then extends. */
static void place_buf(batch_plan *p, size_t i)
{
	fmt_wr_u64(p->layout + 16 * i, p->body);
	fmt_wr_u64(p->layout + 16 * i + 8, p->bufs[i].len);
	p->body += padded(p->bufs[i].len);
}

static void plan_buf(batch_plan *p, int kind, const uint8_t *data, uint64_t len)
{
	p->bufs[p->n_bufs] = (out_buf){ kind, data, len, NULL };
	place_buf(p, p->n_bufs++);
}

static void plan_node(batch_plan *p, uint64_t length, uint64_t nulls)
{
	fmt_wr_u64(p->nodes + 16 * p->n_nodes, length);
	fmt_wr_u64(p->nodes + 16 * p->n_nodes + 8, nulls);
	p->n_nodes++;
}

static uint64_t zero_bits(const uint8_t *bits, uint64_t n)
{
	uint64_t zeros = 0;
	for (uint64_t i = 0; bits && i < n; i++)
		zeros += !bit(bits, i);
	return zeros;
}

static void plan_validity(batch_plan *p, uint64_t n, uint64_t nulls, const uint8_t *v)
{
	if (nulls)
		plan_buf(p, OB_BYTES, v, (n + 7) / 8);
	else
		plan_buf(p, OB_ONES, NULL, (n + 7) / 8);
}

static void plan_column(batch_plan *p, const fmt_field *f, const fmt_column *c, uint64_t n)
{
	plan_node(p, n, c->null_count);
	plan_validity(p, n, c->validity ? c->null_count : 0, c->validity);
	switch (f->type) {
	case FMT_C_UTF8: case FMT_C_BINARY: case FMT_C_LARGE_UTF8: {
		int large = f->type == FMT_C_LARGE_UTF8;
		const uint8_t *o = c->offsets;
		uint64_t last = large ? fmt_rd_u64(o + 8 * n) : fmt_rd_u32(o + 4 * n);
		plan_buf(p, OB_BYTES, o, (n + 1) * (large ? 8 : 4));
		plan_buf(p, OB_BYTES, c->values, last);
		break;
	}
	case FMT_C_BOOL:
		plan_buf(p, OB_BYTES, c->values, (n + 7) / 8);
		break;
	case FMT_C_FIXED_SIZE_LIST: {
		uint64_t items = n * (uint64_t)f->list_size;
		uint64_t item_nulls = zero_bits(c->elem_validity, items);
		plan_node(p, items, item_nulls);
		plan_validity(p, items, item_nulls, c->elem_validity);
		plan_buf(p, OB_BYTES, c->values, items * fmt_ctype_width(f->elem));
		break;
	}
	default:
		plan_buf(p, OB_BYTES, c->values, n * fmt_ctype_width(f->type));
	}
}

static void write_buf(const out_buf *b, fmt_sb *out)
{
	static const char ones[IPC_ALIGN] = { [0 ... IPC_ALIGN - 1] = (char)0xFF };
	if (b->kind == OB_BYTES) {
		if (b->len)
			fmt_sb_put(out, (const char *)b->p, b->len);
	} else {
		for (uint64_t left = b->len; left;) {
			size_t k = left < sizeof ones ? (size_t)left : sizeof ones;
			fmt_sb_put(out, ones, k);
			left -= k;
		}
	}
	sb_zeros(out, (size_t)(padded(b->len) - b->len));
}

/* b's bytes compressed (an LZ4 frame, or zstd at level) after their length, or stored after -1
 * where that is not smaller: into memory b owns. */
static fmt_kind compress_buf(out_buf *b, int codec, int level, fmt_err *e)
{
	uint8_t *ones = NULL;
	const uint8_t *src = b->p;
	size_t n = (size_t)b->len;
	if (b->kind == OB_ONES) {
		if (!(ones = malloc(n)))
			return oom(e);
		memset(ones, 0xFF, n);
		src = ones;
	}
	LZ4F_preferences_t prefs = { .compressionLevel = level };
	size_t cap = codec == FMT_IPC_LZ4_FRAME ? LZ4F_compressFrameBound(n, &prefs) : ZSTD_compressBound(n);
	uint8_t *out = malloc(8 + (cap > n ? cap : n));
	if (!out) {
		free(ones);
		return oom(e);
	}
	size_t got = codec == FMT_IPC_LZ4_FRAME ? LZ4F_compressFrame(out + 8, cap, src, n, &prefs)
						: ZSTD_compress(out + 8, cap, src, n, level ? level : ZSTD_CLEVEL_DEFAULT);
	int failed = codec == FMT_IPC_LZ4_FRAME ? LZ4F_isError(got) : ZSTD_isError(got);
	if (failed || got >= n) { /* stored */
		fmt_wr_u64(out, UINT64_MAX);
		memcpy(out + 8, src, n);
		got = n;
	} else {
		fmt_wr_u64(out, n);
	}
	free(ones);
	*b = (out_buf){ OB_BYTES, out, 8 + got, out };
	return FMT_OK;
}

/* Every buffer of the plan compressed, and the body laid out again. */
static fmt_kind compress_plan(batch_plan *p, int codec, int level, fmt_err *e)
{
	p->body = 0;
	for (size_t i = 0; i < p->n_bufs; i++) {
		fmt_kind k = p->bufs[i].len ? compress_buf(&p->bufs[i], codec, level, e) : FMT_OK;
		if (k != FMT_OK)
			return k;
		place_buf(p, i);
	}
	return FMT_OK;
}

static fmt_kind add_block(fmt_ipc_writer *w, uint64_t off, uint64_t meta, uint64_t body, fmt_err *e)
{
	if (w->n_blocks == w->cap_blocks) {
		size_t cap = w->cap_blocks ? 2 * w->cap_blocks : 16;
		uint64_t *p = realloc(w->blocks, cap * 3 * sizeof *p);
		if (!p)
			return oom(e);
		w->blocks = p;
		w->cap_blocks = cap;
	}
	w->blocks[3 * w->n_blocks] = off;
	w->blocks[3 * w->n_blocks + 1] = meta;
	w->blocks[3 * w->n_blocks + 2] = body;
	w->n_blocks++;
	return FMT_OK;
}

fmt_kind fmt_ipc_writer_batch(fmt_ipc_writer *w, const fmt_batch *b, fmt_sb *out, fmt_err *e)
{
	const fmt_schema *s = w->schema;
	size_t max = 3 * s->n_fields + 1;
	batch_plan p = { 0 };
	p.bufs = malloc(max * sizeof *p.bufs);
	p.nodes = malloc(max * 16);
	p.layout = malloc(max * 16);
	fmt_kind k = FMT_OK;
	if (!p.bufs || !p.nodes || !p.layout) {
		k = oom(e);
		goto done;
	}
	if (b->n_columns != s->n_fields) {
		k = fmt_fail(e, FMT_INTERNAL, "batch has %zu columns, schema %zu", b->n_columns, s->n_fields);
		goto done;
	}
	for (size_t i = 0; i < s->n_fields; i++)
		plan_column(&p, &s->fields[i], &b->columns[i], b->n_rows);
	if (w->codec && (k = compress_plan(&p, w->codec, w->level, e)) != FMT_OK)
		goto done;
	fmt_fb_builder_reset(w->fb);
	fmt_fb_ref bufs = fmt_fb_create_struct_vector(w->fb, p.layout, (uint32_t)p.n_bufs, 16, 8);
	fmt_fb_ref nodes = fmt_fb_create_struct_vector(w->fb, p.nodes, (uint32_t)p.n_nodes, 16, 8);
	fmt_fb_ref comp = 0;
	if (w->codec) { /* BodyCompression: the codec, method BUFFER (the default) */
		fmt_fb_start_table(w->fb);
		fmt_fb_slot_u8(w->fb, 0, (uint8_t)(w->codec - FMT_IPC_LZ4_FRAME), 0);
		comp = fmt_fb_end_table(w->fb);
	}
	fmt_fb_start_table(w->fb);
	fmt_fb_slot_i64(w->fb, 0, (int64_t)b->n_rows, 0);
	fmt_fb_slot_ref(w->fb, 1, nodes);
	fmt_fb_slot_ref(w->fb, 2, bufs);
	if (w->codec)
		fmt_fb_slot_ref(w->fb, 3, comp);
	fmt_fb_ref rb = fmt_fb_end_table(w->fb);
	uint64_t at = w->pos;
	uint64_t meta = frame_message(w, rb, HDR_RECORD_BATCH, (int64_t)p.body, out, e);
	if (!meta) {
		k = e->kind ? e->kind : oom(e);
		goto done;
	}
	for (size_t i = 0; i < p.n_bufs; i++)
		write_buf(&p.bufs[i], out);
	w->pos += p.body;
	if (w->file)
		k = add_block(w, at, meta, p.body, e);
	if (k == FMT_OK && out->oom)
		k = oom(e);
done:
	for (size_t i = 0; p.bufs && i < p.n_bufs; i++)
		free(p.bufs[i].owned);
	free(p.bufs);
	free(p.nodes);
	free(p.layout);
	return k;
}

static fmt_kind write_footer(fmt_ipc_writer *w, fmt_sb *out, fmt_err *e)
{
	fmt_fb_builder *fb = w->fb;
	fmt_fb_builder_reset(fb);
	uint8_t *blocks = calloc(w->n_blocks ? w->n_blocks : 1, 24);
	if (!blocks)
		return oom(e);
	for (size_t i = 0; i < w->n_blocks; i++) {
		fmt_wr_u64(blocks + 24 * i, w->blocks[3 * i]);
		fmt_wr_u32(blocks + 24 * i + 8, (uint32_t)w->blocks[3 * i + 1]);
		fmt_wr_u64(blocks + 24 * i + 16, w->blocks[3 * i + 2]);
	}
	fmt_fb_ref dicts = fmt_fb_create_struct_vector(fb, NULL, 0, 24, 8);
	fmt_fb_ref recs = fmt_fb_create_struct_vector(fb, blocks, (uint32_t)w->n_blocks, 24, 8);
	free(blocks);
	fmt_fb_ref sch = encode_schema(fb, w->schema, e);
	if (!sch)
		return e->kind;
	fmt_fb_start_table(fb);
	fmt_fb_slot_i16(fb, 0, META_V5, 0);
	fmt_fb_slot_ref(fb, 1, sch);
	fmt_fb_slot_ref(fb, 2, dicts);
	fmt_fb_slot_ref(fb, 3, recs);
	fmt_fb_ref root = fmt_fb_end_table(fb);
	const uint8_t *data;
	size_t len;
	if (fmt_fb_finish(fb, root, &data, &len))
		return oom(e);
	uint8_t n[4];
	fmt_wr_u32(n, (uint32_t)len);
	fmt_sb_put(out, (const char *)data, len);
	fmt_sb_put(out, (const char *)n, 4);
	fmt_sb_put(out, (const char *)file_magic, 6);
	w->pos += len + 10;
	return FMT_OK;
}

fmt_kind fmt_ipc_writer_end(fmt_ipc_writer *w, fmt_sb *out, fmt_err *e)
{
	static const uint8_t eos[8] = { 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0 };
	fmt_sb_put(out, (const char *)eos, 8);
	w->pos += 8;
	fmt_kind k = w->file ? write_footer(w, out, e) : FMT_OK;
	if (k == FMT_OK && out->oom)
		k = oom(e);
	fmt_ipc_writer_free(w);
	return k;
}

void fmt_ipc_writer_free(fmt_ipc_writer *w)
{
	if (w->fb) {
		fmt_fb_builder_free(w->fb);
		free(w->fb);
	}
	free(w->blocks);
	w->fb = NULL;
	w->blocks = NULL;
}
