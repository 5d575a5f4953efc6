/* Reading one column chunk: its pages one after another (dictionary, data v1 and v2), each read
 * from the file and decompressed into buffers the cursor reuses (from one chunk to the next),
 * or, a page of PLAIN fixed-width values or of dictionary indices, decompressed as a stream and
 * decoded a slice at a time; its definition levels and values decoded, and the rows handed out in
 * the column's Arrow layout. What a row group's cursors hold is charged to its budget. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "fmt/checked.h"
#include "fmt/half.h"
#include "pq_internal.h"

/* The cursors' spill files open in the process, the bytes of pages decompressed whole they
 * read from memory (read_decompressed), and the bytes of their windows (rbuf); atomic. */
static unsigned spill_files;
static uint64_t pages_held, windows_held;

/* c's page decompressed whole no longer counted as held. */
static void release_page(pq_cursor *c)
{
	if (c->page_held)
		__atomic_sub_fetch(&pages_held, c->page_held, __ATOMIC_RELAXED);
	c->page_held = 0;
}

/* A page holding more values than this is refused (its levels would take this many bytes). */
#define MAX_PAGE_VALUES (1u << 24)
#define MAX_PAGE_BYTES (1u << 28)
/* The bytes a DELTA_BYTE_ARRAY page's values may rebuild to beyond 16 times its stored bytes. */
#define DELTA_BUDGET (64u << 20)
/* Bytes read past a page, so that the next page header is usually read with it: as many as
 * were read of the chunk before, up to this (the first batches read no more than they use). */
#define READ_AHEAD (64u << 10)
/* The bytes a page header is first looked for in (more when it is longer). */
#define HEADER_GUESS (4u << 10)

static fmt_kind oom(fmt_err *e)
{
	return fmt_fail(e, FMT_IO, "out of memory");
}

static fmt_kind bad_page(const pq_cursor *c, fmt_err *e, const char *what)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': %s", c->leaf->path, what);
}

static int grow(void **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	void *q = realloc(*p, n);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* ---- what a row group's columns hold decoded (fmtkit(7), SAFETY) ----
 *
 * Each buffer of a cursor is charged, before it grows, with the most it has needed for its chunk;
 * the charges of a row group's chunks add up in the group's budget (shared by the cursors of its
 * columns, which may decode on threads of their own). A chunk is held to its own rules too, but
 * only the budget keeps many columns, each within those, from holding their sum. */

void fmt_pq_budget_open(pq_budget *b, const pq_meta *m, size_t g)
{
	const pq_rowgroup *rg = &m->groups[g];
	b->group = g;
	b->stored = rg->stored;
	b->rows = rg->num_rows > 0 ? (uint64_t)rg->num_rows : 0;
	b->limit = fmt_decode_budget(b->stored, b->rows);
	b->held = 0;
	b->over = 0;
}

/* need bytes of c's buffer which charged to c's budget: refused when the group's charges pass its
 * limit (nothing allocated yet). */
static fmt_kind charge(pq_cursor *c, int which, uint64_t need, fmt_err *e)
{
	if (need <= c->peak[which])
		return FMT_OK;
	uint64_t more = need - c->peak[which];
	c->peak[which] = need;
	pq_budget *b = c->budget;
	if (!b || __atomic_add_fetch(&b->held, more, __ATOMIC_RELAXED) <= b->limit)
		return FMT_OK;
	__atomic_store_n(&b->over, 1, __ATOMIC_RELAXED);
	char rule[160];
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: row group %zu: its columns would hold more than %llu bytes "
			"decoded, at column '%s' (%s)", b->group, (unsigned long long)b->limit, c->leaf->path,
			fmt_decode_budget_rule(rule, sizeof rule, b->stored, b->rows));
}

/* Room for need bytes in c's buffer which (*p of *cap): charged, then grown. */
static fmt_kind room(pq_cursor *c, int which, void **p, size_t *cap, size_t need, fmt_err *e)
{
	fmt_kind k = charge(c, which, need, e);
	if (k != FMT_OK)
		return k;
	return grow(p, cap, need) ? oom(e) : FMT_OK;
}
#define ROOM(c, which, buf, cap, need, e) room((c), (which), (void **)&(c)->buf, &(c)->cap, (need), (e))

/* The codec's state (a ZSTD window, allocated by the decoder as a frame asks: charged once made). */
static fmt_kind charge_codec(pq_cursor *c, fmt_err *e)
{
	return charge(c, B_CODEC, fmt_pq_inflow_bytes(&c->in), e);
}

uint64_t fmt_pq_cursor_kept(const pq_cursor *c)
{
	return (uint64_t)c->rbuf_cap + c->dict_cap + c->dict_spans_cap + c->page_cap + c->defs_cap + c->vals_cap +
	       c->spans_cap + c->scratch_cap + c->idx_cap + c->prefix_cap + c->reps_cap + c->lvl_cap + fmt_pq_inflow_bytes(&c->in);
}

static int physical_width(const pq_leaf *l)
{
	switch (l->ptype) {
	case PT_BOOLEAN: return 1; /* one byte per value once decoded */
	case PT_INT32: case PT_FLOAT: return 4;
	case PT_INT64: case PT_DOUBLE: return 8;
	case PT_INT96: return 12;
	case PT_FLBA: return l->type_length;
	default: return 0;          /* BYTE_ARRAY: spans */
	}
}

fmt_kind fmt_pq_cursor_open(pq_cursor *c, const pq_leaf *leaf, const pq_chunk *chunk, const pq_file *file,
			pq_budget *budget, int verify_crc, int headers_only, fmt_err *e)
{
	pq_cursor kept = *c;
	memset(c, 0, sizeof *c);
#define KEEP(buf, cap) (c->buf = kept.buf, c->cap = kept.cap)
	KEEP(rbuf, rbuf_cap), KEEP(dict_buf, dict_cap), KEEP(dict_spans, dict_spans_cap), KEEP(page_buf, page_cap);
	KEEP(defs, defs_cap), KEEP(vals, vals_cap), KEEP(spans, spans_cap), KEEP(scratch, scratch_cap);
	KEEP(idx, idx_cap), KEEP(prefix, prefix_cap), KEEP(reps, reps_cap), KEEP(lvl_buf, lvl_cap);
#undef KEEP
	c->in = kept.in;            /* its buffer and codec states (reset for each page) */
	c->spill = kept.spill;
	release_page(&kept);
	c->headers_only = headers_only;
	c->budget = budget;
	c->leaf = leaf;
	c->chunk = chunk;
	c->file = file;
	c->len = chunk->end - chunk->start;
	if (file->data) {           /* the whole chunk is at hand */
		c->win = file->data + chunk->start;
		c->win_len = c->len;
	}
	c->width = physical_width(leaf);
	c->verify_crc = verify_crc;
	if (leaf->max_rep > 0 && !headers_only && !(leaf->list && leaf->max_rep == 1))
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s' is nested (repeated); fmtkit reads flat columns",
				leaf->path);
	return FMT_OK;
}

void fmt_pq_cursor_free(pq_cursor *c)
{
	__atomic_sub_fetch(&windows_held, c->rbuf_cap, __ATOMIC_RELAXED);
	free(c->rbuf);
	free(c->dict_buf);
	free(c->dict_spans);
	free(c->page_buf);
	free(c->defs);
	free(c->vals);
	free(c->spans);
	free(c->scratch);
	free(c->idx);
	free(c->prefix);
	free(c->reps);
	free(c->lvl_buf);
	fmt_pq_inflow_free(&c->in);
	release_page(c);
	if (c->spill) {
		fmt_spill_close(&c->spill->src);
		free(c->spill);
		__atomic_sub_fetch(&spill_files, 1, __ATOMIC_RELAXED);
	}
	memset(c, 0, sizeof *c);
}

void fmt_pq_cursor_rows(pq_cursor *c, uint64_t first_row, uint64_t rows)
{
	c->first_row = first_row;
	c->group_rows = rows;
	c->rows_begun = 0;
}

/* Chunk bytes [pos, pos + n) (n <= len - pos) in the window: read from the file when they are
 * not there, with some bytes after them (READ_AHEAD); what the window holds of them is kept. */
static fmt_kind window(pq_cursor *c, uint64_t pos, uint64_t n, fmt_err *e)
{
	if (pos >= c->win_off && n <= c->win_len && pos - c->win_off <= c->win_len - n)
		return FMT_OK;
	uint64_t ahead = pos < READ_AHEAD ? pos : READ_AHEAD, kept = 0;
	uint64_t end = c->len - pos - n < ahead ? c->len : pos + n + ahead;
	if (end - pos > SIZE_MAX)
		return oom(e);
	if (pos >= c->win_off && pos - c->win_off < c->win_len) {
		kept = c->win_len - (pos - c->win_off);
		memmove(c->rbuf, c->rbuf + (pos - c->win_off), (size_t)kept);
	}
	c->win_len = 0;
	size_t before = c->rbuf_cap;
	fmt_kind k = ROOM(c, B_RBUF, rbuf, rbuf_cap, (size_t)(end - pos), e);
	__atomic_add_fetch(&windows_held, c->rbuf_cap - before, __ATOMIC_RELAXED);
	if (k != FMT_OK)
		return k;
	k = fmt_pq_file_read(c->file, c->chunk->start + pos + kept, c->rbuf + kept, (size_t)(end - pos - kept), e);
	if (k != FMT_OK)
		return k;
	c->win = c->rbuf;
	c->win_off = pos;
	c->win_len = end - pos;
	return FMT_OK;
}

/* The window's buffer, once what it holds is used (a page decompressed whole) and it is large:
 * freed, so that a row group's columns do not each keep their last page twice (compressed here,
 * decompressed in page_buf: 400 SNAPPY pages of 1 MB, as DuckDB writes 400 DOUBLE columns, held
 * 0.8 GB). Its charge stays: the next window grows it again within it. */
#define WINDOW_KEPT (256u << 10)

static void free_window(pq_cursor *c)
{
	__atomic_sub_fetch(&windows_held, c->rbuf_cap, __ATOMIC_RELAXED);
	free(c->rbuf);
	c->rbuf = NULL;
	c->rbuf_cap = 0;
	c->win = NULL;
	c->win_off = 0;
	c->win_len = 0;
}

static void drop_window(pq_cursor *c)
{
	if (c->file->data || c->rbuf_cap <= WINDOW_KEPT)
		return;
	free_window(c);
}

/* ---- the page header ---- */

typedef struct page_hdr {
	int32_t type, uncompressed, compressed, crc;
	int has_crc;
	int32_t num_values, encoding, def_encoding, rep_encoding, num_nulls, num_rows, def_len, rep_len;
	int is_compressed;
} page_hdr;

static int read_sub(tc_in *r, int t, page_hdr *h, int v2)
{
	int16_t last = 0, id;
	int ft, f;
	if (fmt_pq_tc_enter(r, t))
		return -1;
	while ((f = fmt_pq_tc_field(r, &last, &ft, &id)) == 1) {
		int err;
		if (id == 1)
			err = fmt_pq_tc_i32(r, ft, &h->num_values);
		else if (!v2 && id == 2)
			err = fmt_pq_tc_i32(r, ft, &h->encoding);
		else if (!v2 && id == 3)
			err = fmt_pq_tc_i32(r, ft, &h->def_encoding);
		else if (!v2 && id == 4)
			err = fmt_pq_tc_i32(r, ft, &h->rep_encoding);
		else if (v2 && id == 2)
			err = fmt_pq_tc_i32(r, ft, &h->num_nulls);
		else if (v2 && id == 3)
			err = fmt_pq_tc_i32(r, ft, &h->num_rows);
		else if (v2 && id == 4)
			err = fmt_pq_tc_i32(r, ft, &h->encoding);
		else if (v2 && id == 5)
			err = fmt_pq_tc_i32(r, ft, &h->def_len);
		else if (v2 && id == 6)
			err = fmt_pq_tc_i32(r, ft, &h->rep_len);
		else if (v2 && id == 7)
			err = fmt_pq_tc_bool(r, ft, &h->is_compressed);
		else
			err = fmt_pq_tc_skip(r, ft);
		if (err)
			return -1;
	}
	fmt_pq_tc_leave(r);
	return f;
}

static int read_header(tc_in *r, page_hdr *h)
{
	int16_t last = 0, id;
	int t, f, sub = 0;
	memset(h, 0, sizeof *h);
	h->type = -1;
	h->uncompressed = h->compressed = -1;
	h->is_compressed = 1;
	h->def_encoding = h->rep_encoding = ENC_RLE;
	while ((f = fmt_pq_tc_field(r, &last, &t, &id)) == 1) {
		int err;
		switch (id) {
		case 1: err = fmt_pq_tc_i32(r, t, &h->type); break;
		case 2: err = fmt_pq_tc_i32(r, t, &h->uncompressed); break;
		case 3: err = fmt_pq_tc_i32(r, t, &h->compressed); break;
		case 4: err = fmt_pq_tc_i32(r, t, &h->crc); h->has_crc = 1; break;
		case 5: case 7: case 8:
			if ((id == 5 && h->type != PAGE_DATA) || (id == 7 && h->type != PAGE_DICTIONARY) ||
			    (id == 8 && h->type != PAGE_DATA_V2))
				err = fmt_pq_tc_skip(r, t);
			else
				err = read_sub(r, t, h, id == 8), sub = 1;
			break;
		default: err = fmt_pq_tc_skip(r, t);
		}
		if (err)
			return -1;
	}
	if (f < 0 || h->type < 0 || h->uncompressed < 0 || h->compressed < 0)
		return -1;
	return h->type == PAGE_INDEX || sub ? 0 : -1;
}

/* ---- values ---- */

/* n PLAIN BYTE_ARRAY values of d[0..len) as spans. */
static fmt_kind plain_spans(pq_cursor *c, const uint8_t *d, size_t len, pq_span *out, size_t n, fmt_err *e)
{
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		if (len - at < 4)
			return bad_page(c, e, "PLAIN byte arrays run past the page");
		uint32_t l = fmt_rd_u32(d + at);
		at += 4;
		if (l > len - at)
			return bad_page(c, e, "a PLAIN byte array runs past the page");
		out[i] = (pq_span){ d + at, l };
		at += l;
	}
	return FMT_OK;
}

/* Spans for n FIXED_LEN_BYTE_ARRAY values of width w laid end to end. */
static void fixed_spans(const uint8_t *d, int w, pq_span *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (pq_span){ d + i * (size_t)w, (uint32_t)w };
}

static fmt_kind need_spans(pq_cursor *c, size_t n, fmt_err *e)
{
	return ROOM(c, B_SPANS, spans, spans_cap, (n ? n : 1) * sizeof(pq_span), e);
}

static fmt_kind need_vals(pq_cursor *c, size_t bytes, fmt_err *e)
{
	return ROOM(c, B_VALS, vals, vals_cap, bytes ? bytes : 1, e);
}

static fmt_kind need_idx(pq_cursor *c, size_t n, fmt_err *e)
{
	return ROOM(c, B_IDX, idx, idx_cap, (n ? n : 1) * sizeof(uint32_t), e);
}

static fmt_kind decode_plain(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	if (c->leaf->ptype == PT_BYTE_ARRAY) {
		fmt_kind k = need_spans(c, n, e);
		return k != FMT_OK ? k : plain_spans(c, d, len, c->spans, n, e);
	}
	if (c->leaf->ptype == PT_BOOLEAN) {
		if ((n + 7) / 8 > len)
			return bad_page(c, e, "PLAIN booleans run past the page");
		fmt_kind k = need_vals(c, n, e);
		for (size_t i = 0; k == FMT_OK && i < n; i++)
			c->vals[i] = d[i >> 3] >> (i & 7) & 1;
		c->fixed = c->vals;
		return k;
	}
	uint64_t need;
	if (fmt_mul_u64(n, (uint64_t)c->width, &need) || need > len)
		return bad_page(c, e, "PLAIN values run past the page");
	c->fixed = d;               /* taken from where they lie */
	fmt_kind k = FMT_OK;
	if (c->leaf->ptype == PT_FLBA && (k = need_spans(c, n, e)) == FMT_OK)
		fixed_spans(d, c->width, c->spans, n);
	return k;
}

static fmt_kind dict_values(pq_cursor *c, size_t n, fmt_err *e);

static fmt_kind decode_dict_indices(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	if (!c->has_dict)
		return bad_page(c, e, "dictionary-encoded page without a dictionary page");
	if (len < 1 || d[0] > 32)
		return bad_page(c, e, "dictionary index width");
	fmt_kind k = need_idx(c, n, e);
	if (k != FMT_OK)
		return k;
	if (fmt_pq_rle_decode(d + 1, len - 1, d[0], c->idx, n))
		return bad_page(c, e, "malformed dictionary indices");
	return dict_values(c, n, e);
}

/* The n dictionary indices at c->idx as the values they stand for: byte arrays read through
 * them (no span a value), fixed-width values copied out. */
static fmt_kind dict_values(pq_cursor *c, size_t n, fmt_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (c->idx[i] >= c->dict_n)
			return bad_page(c, e, "a dictionary index past the dictionary");
	if (c->leaf->ptype == PT_BYTE_ARRAY) {
		c->by_index = 1;
		return FMT_OK;
	}
	size_t w = (size_t)c->width;
	fmt_kind k = need_vals(c, n * w, e);
	if (k != FMT_OK)
		return k;
	if (w == 4)
		for (size_t i = 0; i < n; i++)
			memcpy(c->vals + i * 4, c->dict_fixed + (size_t)c->idx[i] * 4, 4);
	else if (w == 8)
		for (size_t i = 0; i < n; i++)
			memcpy(c->vals + i * 8, c->dict_fixed + (size_t)c->idx[i] * 8, 8);
	else
		for (size_t i = 0; i < n; i++)
			memcpy(c->vals + i * w, c->dict_fixed + (size_t)c->idx[i] * w, w);
	c->fixed = c->vals;
	return FMT_OK;
}

static fmt_kind decode_rle_bools(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	if (len < 4 || fmt_rd_u32(d) > len - 4)
		return bad_page(c, e, "RLE booleans' length");
	fmt_kind k = need_idx(c, n, e);
	if (k == FMT_OK && (k = need_vals(c, n, e)) == FMT_OK && fmt_pq_rle_decode(d + 4, fmt_rd_u32(d), 1, c->idx, n))
		k = bad_page(c, e, "malformed RLE booleans");
	for (size_t i = 0; k == FMT_OK && i < n; i++)
		c->vals[i] = (uint8_t)c->idx[i];
	c->fixed = c->vals;
	return k;
}

static fmt_kind decode_delta(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	size_t used;
	int is64 = c->leaf->ptype == PT_INT64;
	if (c->leaf->ptype != PT_INT32 && !is64)
		return bad_page(c, e, "DELTA_BINARY_PACKED on a type that is not INT32 or INT64");
	fmt_kind k = need_vals(c, n * (size_t)c->width, e);
	if (k == FMT_OK && fmt_pq_delta_decode(d, len, is64, c->vals, n, &used))
		k = bad_page(c, e, "malformed DELTA_BINARY_PACKED values");
	c->fixed = c->vals;
	return k;
}

/* n lengths (DELTA_BINARY_PACKED int32) into c->idx; *used: their bytes. */
static fmt_kind delta_lengths(pq_cursor *c, const uint8_t *d, size_t len, size_t n, size_t *used, fmt_err *e)
{
	fmt_kind k = need_idx(c, n, e);
	if (k == FMT_OK && fmt_pq_delta_decode(d, len, 0, c->idx, n, used))
		k = bad_page(c, e, "malformed DELTA lengths");
	for (size_t i = 0; k == FMT_OK && i < n; i++)
		if ((int32_t)c->idx[i] < 0)
			k = bad_page(c, e, "a negative DELTA length");
	return k;
}

static fmt_kind delta_length_spans(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	size_t used = 0;
	fmt_kind k = delta_lengths(c, d, len, n, &used, e);
	if (k == FMT_OK)
		k = need_spans(c, n, e);
	size_t at = used;
	for (size_t i = 0; k == FMT_OK && i < n; i++) {
		if (c->idx[i] > len - at)
			return bad_page(c, e, "DELTA_LENGTH_BYTE_ARRAY data runs past the page");
		c->spans[i] = (pq_span){ d + at, c->idx[i] };
		at += c->idx[i];
	}
	return k;
}

static fmt_kind decode_delta_length(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	if (c->leaf->ptype != PT_BYTE_ARRAY)
		return bad_page(c, e, "DELTA_LENGTH_BYTE_ARRAY on a type that is not BYTE_ARRAY");
	return delta_length_spans(c, d, len, n, e);
}

/* DELTA_BYTE_ARRAY: prefix lengths, then the suffixes as DELTA_LENGTH_BYTE_ARRAY; each value
 * is the previous one's prefix and its suffix, rebuilt into c->scratch. */
static fmt_kind decode_delta_byte_array(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	size_t used;
	if (c->leaf->ptype != PT_BYTE_ARRAY && c->leaf->ptype != PT_FLBA)
		return bad_page(c, e, "DELTA_BYTE_ARRAY on a type that is not a byte array");
	fmt_kind k = delta_lengths(c, d, len, n, &used, e);
	if (k != FMT_OK)
		return k;
	if ((k = ROOM(c, B_PREFIX, prefix, prefix_cap, (n ? n : 1) * sizeof *c->prefix, e)) != FMT_OK)
		return k;
	uint32_t *prefix = c->prefix;
	memcpy(prefix, c->idx, n * sizeof *prefix);
	k = delta_length_spans(c, d + used, len - used, n, e);
	uint64_t total = 0, prev = 0;
	for (size_t i = 0; k == FMT_OK && i < n; i++) {
		if (prefix[i] > prev)
			k = bad_page(c, e, "a DELTA_BYTE_ARRAY prefix longer than the value before it");
		prev = (uint64_t)prefix[i] + c->spans[i].n;
		if (prev > UINT32_MAX || fmt_add_u64(total, prev, &total) || total > MAX_PAGE_BYTES)
			k = bad_page(c, e, "DELTA_BYTE_ARRAY values too long");
	}
	/* the values are rebuilt whole: from a few bytes repeated through prefixes, no more than the
	 * page's bytes in the file allow (DELTA_BUDGET and 16 times them) */
	if (k == FMT_OK && total > DELTA_BUDGET && (total - DELTA_BUDGET) / 16 > c->page_stored)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': a DELTA_BYTE_ARRAY page of %llu bytes rebuilds "
			     "%llu bytes of values (at most %u MiB and 16 times the page)", c->leaf->path,
			     (unsigned long long)c->page_stored, (unsigned long long)total, DELTA_BUDGET >> 20);
	if (k == FMT_OK)
		k = ROOM(c, B_SCRATCH, scratch, scratch_cap, total ? (size_t)total : 1, e);
	size_t at = 0;
	const uint8_t *before = NULL;
	for (size_t i = 0; k == FMT_OK && i < n; i++) {
		uint8_t *dst = c->scratch + at;
		if (prefix[i])
			memcpy(dst, before, prefix[i]);
		memcpy(dst + prefix[i], c->spans[i].p, c->spans[i].n);
		uint32_t l = prefix[i] + c->spans[i].n;
		c->spans[i] = (pq_span){ dst, l };
		before = dst;
		at += l;
	}
	if (k == FMT_OK && c->leaf->ptype == PT_FLBA) {
		for (size_t i = 0; i < n; i++)
			if (c->spans[i].n != (uint32_t)c->width)
				return bad_page(c, e, "a DELTA_BYTE_ARRAY value of the wrong fixed length");
		if ((k = need_vals(c, n * (size_t)c->width, e)) == FMT_OK)
			memcpy(c->vals, c->scratch, n * (size_t)c->width);
		c->fixed = c->vals;
	}
	return k;
}

static fmt_kind decode_byte_stream_split(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	size_t w = (size_t)c->width;
	uint64_t need;
	if (c->leaf->ptype == PT_BYTE_ARRAY || c->leaf->ptype == PT_BOOLEAN || c->leaf->ptype == PT_INT96)
		return bad_page(c, e, "BYTE_STREAM_SPLIT on a type it does not apply to");
	if (fmt_mul_u64(n, w, &need) || need > len)
		return bad_page(c, e, "BYTE_STREAM_SPLIT values run past the page");
	fmt_kind k = need_vals(c, (size_t)need, e);
	for (size_t b = 0; k == FMT_OK && b < w; b++)
		for (size_t i = 0; i < n; i++)
			c->vals[i * w + b] = d[b * n + i];
	c->fixed = c->vals;
	if (k == FMT_OK && c->leaf->ptype == PT_FLBA && (k = need_spans(c, n, e)) == FMT_OK)
		fixed_spans(c->vals, c->width, c->spans, n);
	return k;
}

static fmt_kind decode_values(pq_cursor *c, int enc, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	c->by_index = 0;
	switch (enc) {
	case ENC_PLAIN: return decode_plain(c, d, len, n, e);
	case ENC_PLAIN_DICTIONARY: case ENC_RLE_DICTIONARY: return decode_dict_indices(c, d, len, n, e);
	case ENC_RLE:
		if (c->leaf->ptype != PT_BOOLEAN)
			return bad_page(c, e, "RLE values on a type that is not BOOLEAN");
		return decode_rle_bools(c, d, len, n, e);
	case ENC_DELTA_BINARY_PACKED: return decode_delta(c, d, len, n, e);
	case ENC_DELTA_LENGTH_BYTE_ARRAY: return decode_delta_length(c, d, len, n, e);
	case ENC_DELTA_BYTE_ARRAY: return decode_delta_byte_array(c, d, len, n, e);
	case ENC_BYTE_STREAM_SPLIT: return decode_byte_stream_split(c, d, len, n, e);
	default:
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': encoding %s (%d) is not supported",
				c->leaf->path, fmt_pq_encoding_name(enc), enc);
	}
}

/* ---- pages ---- */

/* A writer builds a chunk's dictionary from its values: no more entries than the chunk has values.
 * One that writes a dictionary it was given (pyarrow's DictionaryArray, fastparquet's pandas
 * Categorical) may hold entries no value uses; such a dictionary is read when what it takes
 * decoded (its bytes, and a span of 16 bytes an entry of byte arrays) is within 16 times its
 * chunk's bytes in the file. Past both, it is refused before anything is decompressed: the
 * entries of a small page of repeated bytes (2^24 empty strings: 64 KB as GZIP, 320 MB read). */
static fmt_kind dictionary_fits(const pq_cursor *c, const page_hdr *h, fmt_err *e)
{
	uint64_t n = (uint64_t)h->num_values, spans = c->leaf->ptype == PT_BYTE_ARRAY ? n * sizeof(pq_span) : 0;
	uint64_t decoded = (uint64_t)h->uncompressed + spans, stored = c->chunk->end - c->chunk->start;
	if (n <= (uint64_t)c->chunk->num_values || stored >= UINT64_MAX / 16 || decoded <= 16 * stored)
		return FMT_OK;
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': a dictionary of %llu entries for a chunk of %lld "
			"values (%llu bytes decoded from a chunk of %llu)", c->leaf->path, (unsigned long long)n,
			(long long)c->chunk->num_values, (unsigned long long)decoded, (unsigned long long)stored);
}

static fmt_kind load_dictionary(pq_cursor *c, const page_hdr *h, const uint8_t *raw, fmt_err *e)
{
	if (c->has_dict || c->values_seen)
		return bad_page(c, e, "a dictionary page that is not the chunk's first page");
	if (c->leaf->ptype == PT_BOOLEAN)
		return bad_page(c, e, "a dictionary of booleans");
	if (h->num_values < 0 || (uint64_t)h->num_values > MAX_PAGE_VALUES)
		return bad_page(c, e, "dictionary size");
	if (h->encoding != ENC_PLAIN && h->encoding != ENC_PLAIN_DICTIONARY)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': dictionary encoding %s", c->leaf->path,
				fmt_pq_encoding_name(h->encoding));
	fmt_kind k = dictionary_fits(c, h, e);
	if (k != FMT_OK)
		return k;
	if ((k = ROOM(c, B_DICT, dict_buf, dict_cap, h->uncompressed ? (size_t)h->uncompressed : 1, e)) != FMT_OK)
		return k;
	c->has_dict = 1;
	k = fmt_pq_decompress(c->leaf->path, c->chunk->codec, raw, (size_t)h->compressed, c->dict_buf,
			      (size_t)h->uncompressed, e);
	if (k != FMT_OK)
		return k;
	size_t n = (size_t)h->num_values;
	if (c->headers_only)
		return FMT_OK;
	k = decode_plain(c, c->dict_buf, (size_t)h->uncompressed, n, e);
	if (k != FMT_OK)
		return k;
	/* the byte arrays' spans move to the dictionary's; fixed-width values stay in dict_buf */
	if (c->leaf->ptype == PT_BYTE_ARRAY || c->leaf->ptype == PT_FLBA) {
		pq_span *spans = c->dict_spans;
		size_t cap = c->dict_spans_cap;
		uint64_t peak = c->peak[B_DICT_SPANS];
		c->dict_spans = c->spans;
		c->dict_spans_cap = c->spans_cap;
		c->peak[B_DICT_SPANS] = c->peak[B_SPANS];
		c->spans = spans;
		c->spans_cap = cap;
		c->peak[B_SPANS] = peak;
	}
	c->dict_fixed = c->fixed;
	c->dict_n = (uint32_t)n;
	return FMT_OK;
}

static fmt_kind count_defs(pq_cursor *c, size_t n, uint64_t *defined, fmt_err *e);
static fmt_kind check_reps(pq_cursor *c, size_t n, fmt_err *e);

/* Definition levels of n values into c->defs (a flat column's 1 for a value, 0 for a null; a
 * list leaf's levels as they are); *defined: how many are values. */
static fmt_kind decode_defs(pq_cursor *c, const uint8_t *d, size_t len, size_t n, int msb_packed, uint64_t *defined,
			    fmt_err *e)
{
	int width = fmt_pq_bit_width((uint64_t)c->leaf->max_def);
	fmt_kind k = ROOM(c, B_DEFS, defs, defs_cap, n ? n : 1, e);
	if (k != FMT_OK)
		return k;
	if (msb_packed) { /* the deprecated BIT_PACKED: width bits per level, most significant first */
		if ((uint64_t)n * (uint64_t)width > (uint64_t)len * 8)
			return bad_page(c, e, "BIT_PACKED definition levels run past the page");
		for (size_t i = 0; i < n; i++) {
			uint32_t v = 0;
			for (int b = 0; b < width; b++) {
				uint64_t bit = (uint64_t)i * (uint64_t)width + (uint64_t)b;
				v = v << 1 | (uint32_t)(d[bit >> 3] >> (7 - (bit & 7)) & 1);
			}
			c->defs[i] = (uint8_t)v;
		}
	} else if (fmt_pq_rle_decode8(d, len, width, c->defs, n)) {
		return bad_page(c, e, "malformed definition levels");
	}
	return count_defs(c, n, defined, e);
}

/* The n definition levels at c->defs checked, a flat column's made 1 for a value and 0 for a
 * null; *defined: how many are values. */
static fmt_kind count_defs(pq_cursor *c, size_t n, uint64_t *defined, fmt_err *e)
{
	uint64_t count = 0;
	for (size_t i = 0; i < n; i++) {
		if (c->defs[i] > c->leaf->max_def)
			return bad_page(c, e, "a definition level above the column's maximum");
		int value = c->defs[i] == c->leaf->max_def;
		if (!c->leaf->list)
			c->defs[i] = (uint8_t)value;
		count += (uint64_t)value;
	}
	*defined = count;
	return FMT_OK;
}

/* A list leaf's repetition levels of n values (RLE, len bytes at d) into c->reps. */
static fmt_kind decode_reps(pq_cursor *c, const uint8_t *d, size_t len, size_t n, fmt_err *e)
{
	fmt_kind k = ROOM(c, B_REPS, reps, reps_cap, n ? n : 1, e);
	if (k != FMT_OK)
		return k;
	if (fmt_pq_rle_decode8(d, len, fmt_pq_bit_width((uint64_t)c->leaf->max_rep), c->reps, n))
		return bad_page(c, e, "malformed repetition levels");
	return check_reps(c, n, e);
}

static fmt_kind check_reps(pq_cursor *c, size_t n, fmt_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (c->reps[i] > c->leaf->max_rep)
			return bad_page(c, e, "a repetition level above the column's maximum");
	return FMT_OK;
}

/* A v1 page's repetition levels (a list leaf's: 4 bytes of length, then RLE) at *d of *len:
 * decoded, and *d and *len moved past them. */
static fmt_kind v1_reps(pq_cursor *c, const page_hdr *h, const uint8_t **d, size_t *len, size_t n, fmt_err *e)
{
	if (h->rep_encoding != ENC_RLE)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': repetition levels encoded %s", c->leaf->path,
				fmt_pq_encoding_name(h->rep_encoding));
	if (*len < 4 || fmt_rd_u32(*d) > *len - 4)
		return bad_page(c, e, "repetition levels' length");
	size_t rl = fmt_rd_u32(*d);
	fmt_kind k = decode_reps(c, *d + 4, rl, n, e);
	*d += 4 + rl;
	*len -= 4 + rl;
	return k;
}

/* The most bytes n values take in the RLE/bit-packed hybrid of width bits, the worst a writer
 * does (a run of one value each: its header and the value) with room for headers of 5 bytes. */
static uint64_t rle_most(uint64_t n, int width)
{
	return n * (5 + ((uint64_t)width + 7) / 8) + 16;
}

/* The most bytes the values of page h (n of them, nulls included) take in its encoding, the
 * levels apart; UINT64_MAX: no bound from n (byte arrays, the DELTA encodings). */
static uint64_t values_most(const pq_cursor *c, const page_hdr *h, uint64_t n)
{
	switch (h->encoding) {
	case ENC_PLAIN:
		if (c->leaf->ptype == PT_BOOLEAN)
			return (n + 7) / 8;
		return c->width > 0 ? n * (uint64_t)c->width : UINT64_MAX;
	case ENC_PLAIN_DICTIONARY: case ENC_RLE_DICTIONARY: return 1 + rle_most(n, 32);
	case ENC_RLE: return 4 + rle_most(n, 1);
	case ENC_BYTE_STREAM_SPLIT: return c->width > 0 ? n * (uint64_t)c->width : UINT64_MAX;
	default: return UINT64_MAX;
	}
}

/* A page whose size uncompressed is more than its values and levels can take (a value followed
 * by 256 MiB of zeros, a few hundred KB compressed) is refused before it is decompressed. */
static fmt_kind page_size_fits(const pq_cursor *c, const page_hdr *h, fmt_err *e)
{
	uint64_t n = (uint64_t)h->num_values, most = values_most(c, h, n);
	int rw = fmt_pq_bit_width((uint64_t)c->leaf->max_rep), dw = fmt_pq_bit_width((uint64_t)c->leaf->max_def);
	if (most == UINT64_MAX)
		return FMT_OK;
	if (h->type == PAGE_DATA_V2) {
		most += (uint64_t)h->rep_len + (uint64_t)h->def_len;
		if ((c->leaf->max_rep > 0 && (uint64_t)h->rep_len > rle_most(n, rw)) ||
		    (c->leaf->max_def > 0 && (uint64_t)h->def_len > rle_most(n, dw)))
			most = 0;           /* levels longer than they can be */
	} else {
		most += c->leaf->max_rep > 0 ? 4 + rle_most(n, rw) : 0;
		most += c->leaf->max_def > 0 ? 4 + rle_most(n, dw) : 0;
	}
	if ((uint64_t)h->uncompressed <= most + 64)
		return FMT_OK;
	return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': a %s page of %d values says %d bytes uncompressed "
			"(its values and levels take at most %llu)", c->leaf->path,
			fmt_pq_encoding_name(h->encoding), h->num_values, h->uncompressed, (unsigned long long)most + 64);
}

/* A data page's value count and (v2) level lengths checked; *levels: a v2 page's levels'
 * bytes (stored as they are before its body). */
static fmt_kind data_page_checks(pq_cursor *c, const page_hdr *h, size_t *levels, fmt_err *e)
{
	size_t n = (size_t)h->num_values, ulen = (size_t)h->uncompressed, clen = (size_t)h->compressed;
	if (h->num_values < 0 || n > MAX_PAGE_VALUES)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': a page of %d values (at most %u are read)",
				c->leaf->path, h->num_values, MAX_PAGE_VALUES);
	if (n > (uint64_t)c->chunk->num_values - c->values_seen)
		return bad_page(c, e, "pages hold more values than the chunk");
	*levels = 0;
	if (h->type == PAGE_DATA_V2) {
		if (h->def_len < 0 || h->rep_len < 0 || (size_t)h->def_len + (size_t)h->rep_len > clen ||
		    (size_t)h->def_len + (size_t)h->rep_len > ulen || h->num_nulls < 0 || h->num_nulls > h->num_values)
			return bad_page(c, e, "v2 page level lengths");
		*levels = (size_t)h->def_len + (size_t)h->rep_len;
	}
	fmt_kind k = page_size_fits(c, h, e);
	if (k != FMT_OK)
		return k;
	c->pages_read++;
	return FMT_OK;
}

static fmt_kind load_data(pq_cursor *c, const page_hdr *h, const uint8_t *raw, fmt_err *e)
{
	int v2 = h->type == PAGE_DATA_V2;
	size_t n = (size_t)h->num_values, ulen = (size_t)h->uncompressed, clen = (size_t)h->compressed;
	size_t levels;
	fmt_kind k = data_page_checks(c, h, &levels, e);
	if (k != FMT_OK)
		return k;
	release_page(c);            /* page_buf holds this page now, read whole */
	c->whole = 1;
	c->page_stored = clen;
	/* a page stored as it is is read where it lies; another is decompressed into page_buf */
	const uint8_t *d = raw;
	if (c->chunk->codec == CODEC_NONE || (v2 && !h->is_compressed)) {
		if (clen != ulen)
			return bad_page(c, e, "an uncompressed page whose two sizes differ");
	} else {
		if ((k = ROOM(c, B_PAGE, page_buf, page_cap, ulen ? ulen : 1, e)) != FMT_OK)
			return k;
		memcpy(c->page_buf, raw, levels);
		k = fmt_pq_decompress(c->leaf->path, c->chunk->codec, raw + levels, clen - levels, c->page_buf + levels,
				      ulen - levels, e);
		d = c->page_buf;
	}
	if (k != FMT_OK)
		return k;
	if (c->headers_only) {
		c->page_values = c->page_at = n;
		c->values_seen += n;
		return FMT_OK;
	}
	const uint8_t *values;
	size_t vlen;
	uint64_t defined = n;
	if (c->leaf->list && v2 && (k = decode_reps(c, d, (size_t)h->rep_len, n, e)) != FMT_OK)
		return k;
	if (c->leaf->list && !v2 && (k = v1_reps(c, h, &d, &ulen, n, e)) != FMT_OK)
		return k;
	if (v2) {
		if (c->leaf->max_def > 0 && (k = decode_defs(c, d + h->rep_len, (size_t)h->def_len, n, 0, &defined, e)) != FMT_OK)
			return k;
		values = d + levels;
		vlen = ulen - levels;
	} else if (c->leaf->max_def > 0) {
		if (h->def_encoding != ENC_RLE && h->def_encoding != ENC_BIT_PACKED)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': definition levels encoded %s",
					c->leaf->path, fmt_pq_encoding_name(h->def_encoding));
		/* RLE levels have their length first; BIT_PACKED ones take ceil(n * width / 8) bytes */
		int packed = h->def_encoding == ENC_BIT_PACKED;
		size_t skip = packed ? 0 : 4;
		uint64_t dl = packed ? ((uint64_t)n * (uint64_t)fmt_pq_bit_width((uint64_t)c->leaf->max_def) + 7) / 8 :
			      ulen < 4 ? UINT64_MAX : fmt_rd_u32(d);
		if (ulen < skip || dl > ulen - skip)
			return bad_page(c, e, "definition levels' length");
		if ((k = decode_defs(c, d + skip, (size_t)dl, n, packed, &defined, e)) != FMT_OK)
			return k;
		values = d + skip + dl;
		vlen = ulen - skip - (size_t)dl;
	} else {
		values = d;
		vlen = ulen;
	}
	c->page_values = n;
	c->page_at = 0;
	c->page_defined_at = 0;
	c->values_seen += n;
	return decode_values(c, h->encoding, values, vlen, (size_t)defined, e);
}

/* ---- pages of PLAIN fixed-width values and of dictionary indices, a slice at a time ----
 *
 * Such a page (the common page of numbers and of lists of them, and of dictionary-encoded
 * columns, which a writer like DuckDB makes as large as its column chunk) is not held whole: its
 * body is decompressed as it is read (ZSTD, GZIP; read from the file as it is when uncompressed),
 * its levels' bytes are kept (their RLE runs: a few bits a value at most) and read a slice at a
 * time, and each slice's values (about SLICE_BYTES) are read after them; dictionary indices are
 * kept as stored after the levels (a few bits a value too) and read SLICE_INDICES at a time.
 * SNAPPY and LZ4_RAW have no stream: their page is decompressed whole (the page held compressed
 * and decompressed), then read the same way. PLAIN strings are not: one value may be the page. */
#define SLICE_BYTES (1u << 20)
/* The values of a slice of dictionary indices: what each column holds of them (4 bytes an index,
 * and its value decoded). */
#define SLICE_INDICES 1024u

static int is_dict_page(const page_hdr *h)
{
	return h->encoding == ENC_RLE_DICTIONARY || h->encoding == ENC_PLAIN_DICTIONARY;
}

static int sliceable(const pq_cursor *c, const page_hdr *h)
{
	if (c->headers_only || c->leaf->ptype == PT_BOOLEAN ||
	    !(is_dict_page(h) || (h->encoding == ENC_PLAIN && c->width > 0)))
		return 0;
	if (h->type == PAGE_DATA_V2)
		return 1;
	return h->type == PAGE_DATA && (c->leaf->max_def == 0 || h->def_encoding == ENC_RLE) &&
	       (!c->leaf->list || h->rep_encoding == ENC_RLE);
}

/* The CRC of the page body of n bytes at chunk byte pos, read a slice at a time (none read when
 * the window holds them). */
static fmt_kind crc_pieces(pq_cursor *c, uint64_t pos, uint64_t n, uint32_t want, fmt_err *e)
{
	uLong crc = crc32(0, NULL, 0);
	while (n) {
		uint64_t take = n < SLICE_BYTES ? n : SLICE_BYTES;
		fmt_kind k = window(c, pos, take, e);
		if (k != FMT_OK)
			return k;
		crc = crc32(crc, c->win + (pos - c->win_off), (uInt)take);
		pos += take;
		n -= take;
	}
	return (uint32_t)crc == want ? FMT_OK :
	       fmt_fail(e, FMT_CHECKSUM, "Parquet: column '%s': page CRC differs", c->leaf->path);
}

/* A v1 page's levels of one kind from its body: their length (4 bytes), then that many bytes
 * appended to c->lvl_buf at *at. */
static fmt_kind v1_levels_read(pq_cursor *c, size_t *at, size_t *len, const char *what, fmt_err *e)
{
	uint8_t l4[4];
	if (c->in.out_left < 4)
		return bad_page(c, e, what);
	fmt_kind k = fmt_pq_inflow_read(&c->in, l4, 4, e);
	if (k != FMT_OK)
		return k;
	*len = fmt_rd_u32(l4);
	if (*len > c->in.out_left)
		return bad_page(c, e, what);
	if ((k = ROOM(c, B_LVL, lvl_buf, lvl_cap, *at + *len + 1, e)) != FMT_OK)
		return k;
	k = fmt_pq_inflow_read(&c->in, c->lvl_buf + *at, *len, e);
	*at += *len;
	return k;
}

/* The page's next slice of values: its levels read, its values after them. */
static fmt_kind next_slice(pq_cursor *c, fmt_err *e)
{
	size_t n = c->dict_page ? SLICE_INDICES : SLICE_BYTES / (size_t)c->width;
	if (c->slice_max && n > c->slice_max)
		n = (size_t)c->slice_max;
	if (n == 0)
		n = 1;
	if (n > c->slice_left)
		n = (size_t)c->slice_left;
	uint64_t defined = n;
	fmt_kind k = ROOM(c, B_DEFS, defs, defs_cap, n ? n : 1, e);
	if (k == FMT_OK && c->leaf->list)
		k = ROOM(c, B_REPS, reps, reps_cap, n ? n : 1, e);
	if (k != FMT_OK)
		return k;
	if (c->leaf->list && fmt_pq_rle_next8(&c->rep_rd, c->reps, n))
		return bad_page(c, e, "malformed repetition levels");
	if (c->leaf->list && (k = check_reps(c, n, e)) != FMT_OK)
		return k;
	if (c->leaf->max_def > 0) {
		if (fmt_pq_rle_next8(&c->def_rd, c->defs, n))
			return bad_page(c, e, "malformed definition levels");
		if ((k = count_defs(c, n, &defined, e)) != FMT_OK)
			return k;
	}
	c->by_index = 0;
	if (c->dict_page) {         /* the indices of the slice's values */
		if ((k = need_idx(c, (size_t)defined, e)) != FMT_OK)
			return k;
		if (fmt_pq_rle_next32(&c->idx_rd, c->idx, (size_t)defined))
			return bad_page(c, e, "malformed dictionary indices");
		if ((k = dict_values(c, (size_t)defined, e)) != FMT_OK)
			return k;
	} else {
		size_t bytes = (size_t)defined * (size_t)c->width;
		if (bytes > c->in.out_left)
			return bad_page(c, e, "PLAIN values run past the page");
		if ((k = need_vals(c, bytes, e)) != FMT_OK || (k = fmt_pq_inflow_read(&c->in, c->vals, bytes, e)) != FMT_OK ||
		    (k = decode_plain(c, c->vals, bytes, (size_t)defined, e)) != FMT_OK)
			return k;
	}
	if ((k = charge_codec(c, e)) != FMT_OK)
		return k;
	c->page_values = n;
	c->page_at = 0;
	c->page_defined_at = 0;
	c->values_seen += n;
	c->slice_left -= n;
	if (c->slice_left == 0) {
		c->sliced = 0;
		return c->dict_page ? FMT_OK : fmt_pq_inflow_end(&c->in, e);  /* indices: read to its end */
	}
	return FMT_OK;
}

/* A dictionary-encoded page's indices (its body after the levels, which the levels' *got bytes
 * of c->lvl_buf hold): kept after them, the stream read to its end, and their reader set. */
static fmt_kind dict_indices_read(pq_cursor *c, size_t got, fmt_err *e)
{
	size_t len = (size_t)c->in.out_left;
	if (!c->has_dict)
		return bad_page(c, e, "dictionary-encoded page without a dictionary page");
	fmt_kind k = ROOM(c, B_LVL, lvl_buf, lvl_cap, got + len + 1, e);
	if (k == FMT_OK && (k = fmt_pq_inflow_read(&c->in, c->lvl_buf + got, len, e)) == FMT_OK)
		k = fmt_pq_inflow_end(&c->in, e);
	if (k != FMT_OK)
		return k;
	if (len < 1 || c->lvl_buf[got] > 32)
		return bad_page(c, e, "dictionary index width");
	fmt_pq_rle_init(&c->idx_rd, c->lvl_buf + got + 1, len - 1, c->lvl_buf[got]);
	return FMT_OK;
}

/* A page's body of n bytes decompressed whole in page_buf, to be read a slice at a time: from
 * there, or from the cursor's spill file (page_buf freed) when it is larger than SPILL_PAGE and
 * other cursors hold pages so read already, PAGES_HELD with it: a row group's columns would
 * each hold theirs for the batches it spans (a file of one column, or fmt-verify's one cursor
 * at a time, spills nothing). A spill file that cannot be made or written (no TMPDIR, disk
 * full, no descriptor left) leaves the page in memory, as before; so do the columns past
 * SPILL_FILES with spill files open in the process, which leave descriptors for the rest (a
 * sink's temporary file, the writer's). */
#define SPILL_PAGE (256u << 10)
#define PAGES_HELD (1u << 20)
#define SPILL_FILES 256

static void open_spill(pq_cursor *c)
{
	fmt_err ignored = { 0 };
	pq_page_spill *sp = NULL;
	if (__atomic_add_fetch(&spill_files, 1, __ATOMIC_RELAXED) <= SPILL_FILES && (sp = malloc(sizeof *sp)) &&
	    fmt_spill_open(&sp->src, "a temporary file for decompressed Parquet pages", &ignored) == FMT_OK) {
		c->spill = sp;
		return;
	}
	free(sp);
	__atomic_sub_fetch(&spill_files, 1, __ATOMIC_RELAXED);
}

static fmt_kind read_decompressed(pq_cursor *c, size_t n, fmt_err *e)
{
	fmt_err ignored = { 0 };
	release_page(c);
	uint64_t others = __atomic_load_n(&pages_held, __ATOMIC_RELAXED);
	int spill = n > SPILL_PAGE && !c->headers_only && others && others + n > PAGES_HELD;
	if (spill && !c->spill)
		open_spill(c);
	if (!spill || !c->spill || fmt_spill_write(&c->spill->src, 0, c->page_buf, n, &ignored) != FMT_OK) {
		c->page_held = n;
		__atomic_add_fetch(&pages_held, n, __ATOMIC_RELAXED);
		return fmt_pq_inflow_open(&c->in, c->leaf->path, CODEC_NONE, NULL, c->page_buf, 0, n, n, e);
	}
	fmt_spill_set_length(&c->spill->src, n);
	c->spill->file = (pq_file){ .src = &c->spill->src, .data = NULL, .size = n };
	free(c->page_buf);
	c->page_buf = NULL;
	c->page_cap = 0;
	return fmt_pq_inflow_open(&c->in, c->leaf->path, CODEC_NONE, &c->spill->file, NULL, 0, n, n, e);
}

/* ---- what a batch leaves of a page, put aside until the next one ----
 *
 * A cursor's page is read a slice at a time over the batches its rows span; between them, each
 * column of a row group would hold what its page has left (a wide table's 4000 columns, their
 * 3 KB SNAPPY pages decompressed whole and their windows: 25 MB). Once the process's cursors hold
 * more than HELD_BETWEEN of such pages and windows, a column whose batch is over puts its page's
 * rest in its reader's spill file (one for all its columns: no descriptor a column) and frees the
 * page; a page stored as it is is read on from the file; a window nothing reads any more is freed.
 * So a row group's columns hold about HELD_BETWEEN between batches, whatever their count and the
 * size of their pages. Below it (a narrow table) nothing changes. A spill file that cannot be
 * made or written (no TMPDIR, disk full) leaves the rest in memory, as before. */
#define HELD_BETWEEN (256u << 10)

void fmt_pq_spill_init(pq_spill *s)
{
	memset(s, 0, sizeof *s);
	s->src.fd = -1;
	pthread_mutex_init(&s->lock, NULL);
}

void fmt_pq_spill_rewind(pq_spill *s)
{
	__atomic_store_n(&s->at, 0, __ATOMIC_RELAXED);
}

void fmt_pq_spill_free(pq_spill *s)
{
	if (s->state == 1)
		fmt_spill_close(&s->src);
	pthread_mutex_destroy(&s->lock);
	memset(s, 0, sizeof *s);
}

/* Whether s is open: made at the first call (-1 for good when it cannot be). */
static int spill_ready(pq_spill *s)
{
	int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (state)
		return state > 0;
	pthread_mutex_lock(&s->lock);
	if (!s->state) {
		fmt_err ignored = { 0 };
		int ok = fmt_spill_open(&s->src, "a temporary file for decompressed Parquet pages", &ignored) == FMT_OK;
		if (ok) {           /* read where written: any offset a cursor was given */
			fmt_spill_set_length(&s->src, UINT64_MAX);
			s->file = (pq_file){ .src = &s->src, .data = NULL, .size = UINT64_MAX };
		}
		__atomic_store_n(&s->state, ok ? 1 : -1, __ATOMIC_RELEASE);
	}
	state = s->state;
	pthread_mutex_unlock(&s->lock);
	return state > 0;
}

/* The page's rest (out_left bytes) written to c's reader's spill file and read from there;
 * -1: kept in memory. */
static int spill_rest(pq_cursor *c)
{
	fmt_err ignored = { 0 };
	uint64_t n = c->in.out_left, at;
	if (!spill_ready(c->shared))
		return -1;
	at = __atomic_fetch_add(&c->shared->at, n, __ATOMIC_RELAXED);
	if (fmt_spill_write(&c->shared->src, at, fmt_pq_inflow_unread(&c->in), (size_t)n, &ignored) != FMT_OK)
		return -1;
	fmt_pq_inflow_move(&c->in, &c->shared->file, at);
	return 0;
}

/* c's batch is over: what it holds until the next put aside, when the process's cursors hold
 * more than HELD_BETWEEN. */
static void put_aside(pq_cursor *c)
{
	if (!c->shared || __atomic_load_n(&pages_held, __ATOMIC_RELAXED) +
	    __atomic_load_n(&windows_held, __ATOMIC_RELAXED) <= HELD_BETWEEN)
		return;
	if (c->page_held) {         /* a page decompressed whole, read from page_buf */
		if (c->sliced && c->in.out_left && spill_rest(c))
			return;
		release_page(c);
		free(c->page_buf);
		c->page_buf = NULL;
		c->page_cap = 0;
	} else if (c->sliced && c->in.codec == CODEC_NONE && fmt_pq_inflow_in_memory(&c->in) && !c->file->data) {
		/* a page stored as it is, read from the window: read on from the file */
		fmt_pq_inflow_move(&c->in, c->file, c->chunk->start + c->win_off +
				   (uint64_t)(fmt_pq_inflow_unread(&c->in) - c->win));
	}
	/* the window is read from: by the page's stream, or where a page read whole lies */
	int reading = c->sliced ? fmt_pq_inflow_in_memory(&c->in) : c->whole && c->page_at < c->page_values;
	if (!c->file->data && c->rbuf && !reading)
		free_window(c);
}

/* A small ZSTD or GZIP page (a wide table's: 4,000 columns of 2.8 KB pages) is decompressed whole
 * and read as a SNAPPY page is (read_decompressed, put_aside), not streamed through a codec state
 * of its column's own: the codec's state (a ZSTD context of about 95 KB and its buffers, zlib's
 * 40 KiB) is larger than the page, and a row group's columns each held theirs between batches
 * (its budget refused fmtkit's own ZSTD files of 350 columns and more). A larger page is streamed
 * as before: its state is less than the page. */
#define SMALL_PAGE (64u << 10)

/* The n bytes of a ZSTD or GZIP page's body (clen bytes at src) into page_buf (grown, not charged):
 * fmt_pq_inflow_whole's 0 or -1. */
static int decompress_small(pq_cursor *c, int codec, const uint8_t *src, size_t clen, size_t n)
{
	if (grow((void **)&c->page_buf, &c->page_cap, n ? n : 1))
		return -1;
	return fmt_pq_inflow_whole(c->leaf->path, codec, src, clen, c->page_buf, n);
}

/* The data page h whose body is at chunk byte pos, read as slices. */
static fmt_kind load_sliced(pq_cursor *c, const page_hdr *h, uint64_t pos, fmt_err *e)
{
	int v2 = h->type == PAGE_DATA_V2;
	size_t levels, clen = (size_t)h->compressed, ulen = (size_t)h->uncompressed;
	fmt_kind k = data_page_checks(c, h, &levels, e);
	if (k != FMT_OK)
		return k;
	release_page(c);
	c->whole = 0;
	if ((k = ROOM(c, B_LVL, lvl_buf, lvl_cap, levels + 1, e)) != FMT_OK)
		return k;
	uint64_t at = c->chunk->start + pos;
	if (v2 && (k = window(c, pos, levels, e)) != FMT_OK)
		return k;
	if (v2)
		memcpy(c->lvl_buf, c->win + (pos - c->win_off), levels);
	int codec = c->chunk->codec == CODEC_NONE || (v2 && !h->is_compressed) ? CODEC_NONE : c->chunk->codec;
	if (codec == CODEC_NONE && clen != ulen)
		return bad_page(c, e, "an uncompressed page whose two sizes differ");
	if (fmt_pq_can_stream(codec) && clen > SLICE_BYTES && !c->file->data) {
		k = fmt_pq_inflow_open(&c->in, c->leaf->path, codec, c->file, NULL, at + levels, clen - levels,
				       ulen - levels, e);
	} else if ((k = window(c, pos, clen, e)) != FMT_OK) {
		return k;
	} else if (fmt_pq_can_stream(codec)) {  /* at hand: the window holds it (with the next header) */
		const uint8_t *src = c->win + (pos - c->win_off) + levels;
		if (codec != CODEC_NONE && ulen - levels <= SMALL_PAGE && decompress_small(c, codec, src, clen - levels,
											ulen - levels) == 0) {
			drop_window(c);
			k = charge(c, B_PAGE, ulen - levels ? ulen - levels : 1, e);
			if (k == FMT_OK)
				k = read_decompressed(c, ulen - levels, e);
		} else {
			k = fmt_pq_inflow_open(&c->in, c->leaf->path, codec, NULL, src, 0, clen - levels, ulen - levels, e);
		}
	} else {                    /* decompressed whole, then read from memory or the spill file */
		if ((k = ROOM(c, B_PAGE, page_buf, page_cap, ulen - levels ? ulen - levels : 1, e)) != FMT_OK)
			return k;
		k = fmt_pq_decompress(c->leaf->path, codec, c->win + (pos - c->win_off) + levels, clen - levels,
				      c->page_buf, ulen - levels, e);
		drop_window(c);
		if (k == FMT_OK)
			k = read_decompressed(c, ulen - levels, e);
	}
	if (k != FMT_OK)
		return k;
	size_t rl = v2 ? (size_t)h->rep_len : 0, dl = v2 ? (size_t)h->def_len : 0, got = v2 ? levels : 0;
	if (!v2 && c->leaf->list && (k = v1_levels_read(c, &got, &rl, "repetition levels' length", e)) != FMT_OK)
		return k;
	if (!v2 && c->leaf->max_def > 0 && (k = v1_levels_read(c, &got, &dl, "definition levels' length", e)) != FMT_OK)
		return k;
	c->dict_page = is_dict_page(h);
	if (c->dict_page && (k = dict_indices_read(c, got, e)) != FMT_OK)
		return k;
	fmt_pq_rle_init(&c->rep_rd, c->lvl_buf, rl, fmt_pq_bit_width((uint64_t)c->leaf->max_rep));
	fmt_pq_rle_init(&c->def_rd, c->lvl_buf + rl, dl, fmt_pq_bit_width((uint64_t)c->leaf->max_def));
	c->sliced = 1;
	c->slice_left = (uint64_t)h->num_values;
	if (c->slice_left == 0) {   /* no value: the page is its levels */
		c->sliced = 0;
		c->page_values = c->page_at = 0;
		return c->dict_page ? FMT_OK : fmt_pq_inflow_end(&c->in, e);
	}
	return next_slice(c, e);
}

/* The header of the page at c->pos into h, *len: its bytes (looked for in more of the chunk
 * while it runs past what was read). */
static fmt_kind page_header(pq_cursor *c, page_hdr *h, uint64_t *len, fmt_err *e)
{
	uint64_t left = c->len - c->pos, want = left < HEADER_GUESS ? left : HEADER_GUESS;
	for (;;) {
		fmt_kind k = window(c, c->pos, want, e);
		if (k != FMT_OK)
			return k;
		const uint8_t *p = c->win + (c->pos - c->win_off);
		uint64_t avail = c->win_len - (c->pos - c->win_off);
		tc_in r = { p, p + avail, 0, 0 };
		if (read_header(&r, h) == 0) {
			*len = (uint64_t)(r.p - p);
			return FMT_OK;
		}
		if (avail >= left)
			return bad_page(c, e, "malformed page header");
		want = avail < left / 2 ? avail * 2 : left;
	}
}

/* The next page (dictionary pages are taken on the way); *none: the chunk's bytes are over. */
fmt_kind fmt_pq_cursor_next_page(pq_cursor *c, int *none, fmt_err *e)
{
	*none = 0;
	if (c->sliced)
		return next_slice(c, e);
	for (;;) {
		if (c->pos >= c->len) {
			*none = 1;
			return FMT_OK;
		}
		page_hdr h;
		uint64_t hdr_len = 0;
		fmt_kind k = page_header(c, &h, &hdr_len, e);
		if (k != FMT_OK)
			return k;
		if ((uint64_t)h.compressed > c->len - c->pos - hdr_len)
			return bad_page(c, e, "a page runs past its column chunk");
		if ((uint64_t)h.uncompressed > MAX_PAGE_BYTES)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': a page of %d bytes uncompressed",
					c->leaf->path, h.uncompressed);
		/* a page is read whole unless it is walked (headers and CRCs) or read a slice at a time */
		int sliced = !c->walk_only && sliceable(c, &h);
		uint64_t body = c->pos + hdr_len;
		const uint8_t *raw = NULL;
		if (!c->walk_only && !sliced) {
			if ((k = window(c, c->pos, hdr_len + (uint64_t)h.compressed, e)) != FMT_OK)
				return k;
			raw = c->win + (body - c->win_off);
		}
		c->pos = body + (uint64_t)h.compressed;
		if (c->verify_crc && h.has_crc && (k = crc_pieces(c, body, (uint64_t)h.compressed, (uint32_t)h.crc, e)) != FMT_OK)
			return k;
		if (sliced)
			return load_sliced(c, &h, body, e);
		if (c->walk_only && (h.type == PAGE_DATA || h.type == PAGE_DATA_V2)) {
			if (h.num_values < 0 || (uint64_t)h.num_values > (uint64_t)c->chunk->num_values - c->values_seen)
				return bad_page(c, e, "pages hold more values than the chunk");
			c->values_seen += (uint64_t)h.num_values;
			c->page_values = c->page_at = (uint64_t)h.num_values;
			c->pages_read++;
			return FMT_OK;
		}
		if (c->walk_only)
			continue;
		if (h.type == PAGE_DICTIONARY) {
			k = load_dictionary(c, &h, raw, e);
			if (k != FMT_OK)
				return k;
			continue;
		}
		if (h.type == PAGE_DATA || h.type == PAGE_DATA_V2)
			return load_data(c, &h, raw, e);
		if (h.type != PAGE_INDEX)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': page type %d", c->leaf->path, h.type);
	}
}

/* ---- rows out ---- */

static void set_bit(uint8_t *bits, uint64_t i, int v)
{
	if (v)
		bits[i >> 3] |= (uint8_t)(1u << (i & 7));
	else
		bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* One defined physical value p as the column's value at out (width ow). */
void fmt_pq_convert_value(const pq_cursor *c, const uint8_t *p, uint8_t *out, size_t ow)
{
	if (c->leaf->conv == CONV_INT96_NS) {
		uint64_t nanos = fmt_rd_u64(p);
		int64_t day = (int64_t)fmt_rd_u32(p + 8) - 2440588;
		uint64_t v = (uint64_t)day * 86400000000000ull + nanos;
		memcpy(out, &v, 8);
		return;
	}
	memcpy(out, p, ow);         /* little-endian: the low bytes of a wider integer */
}

/* A column being filled: its buffers from fmt_batch_buffer. */
typedef struct out_col {
	uint8_t *validity, *values;
	int32_t *offsets;
	uint8_t *bytes;
	size_t bytes_len, bytes_cap;
	uint64_t nulls;
} out_col;

static void out_free(out_col *o)
{
	fmt_batch_buffer_free(o->validity);
	fmt_batch_buffer_free(o->values);
	fmt_batch_buffer_free(o->offsets);
	fmt_batch_buffer_free(o->bytes);
}

/* Room for need string bytes (a larger buffer, the bytes so far copied over). */
static int out_bytes(out_col *o, size_t need)
{
	if (need <= o->bytes_cap)
		return 0;
	size_t cap = o->bytes_cap + o->bytes_cap / 2 > need ? o->bytes_cap + o->bytes_cap / 2 : need;
	uint8_t *p = fmt_batch_buffer(cap);
	if (!p)
		return -1;
	if (o->bytes_len)
		memcpy(p, o->bytes, o->bytes_len);
	fmt_batch_buffer_free(o->bytes);
	o->bytes = p;
	o->bytes_cap = cap;
	return 0;
}

/* The page's defined byte array j (of the page's, or of the dictionary through its index). */
static pq_span span_of(const pq_cursor *c, uint64_t j)
{
	return c->by_index ? c->dict_spans[c->idx[j]] : c->spans[j];
}

static fmt_kind take_strings(pq_cursor *c, out_col *o, uint64_t row, uint64_t k, fmt_err *e)
{
	const uint8_t *defs = c->leaf->max_def > 0 ? c->defs + c->page_at : NULL;
	uint64_t total = o->bytes_len, defined = 0, at = c->page_defined_at;
	for (uint64_t i = 0; i < k; i++)
		if (!defs || defs[i])
			total += span_of(c, at + defined++).n;
	if (total > INT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': over 2 GiB of strings in one batch",
				c->leaf->path);
	if (out_bytes(o, (size_t)total + 1))
		return oom(e);
	uint8_t *dst = o->bytes + o->bytes_len;
	int32_t *off = o->offsets + row + 1;
	for (uint64_t i = 0; i < k; i++) {
		if (!defs || defs[i]) {
			pq_span s = span_of(c, at++);
			memcpy(dst, s.p, s.n);
			dst += s.n;
		} else {
			set_bit(o->validity, row + i, 0);
			o->nulls++;
		}
		off[i] = (int32_t)(dst - o->bytes);
	}
	o->bytes_len = (size_t)total;
	c->page_defined_at += defined;
	return FMT_OK;
}

/* k values of a leaf read as text (pq_text.c): each defined one's text appended. */
static fmt_kind take_text(pq_cursor *c, out_col *o, uint64_t row, uint64_t k, fmt_err *e)
{
	const uint8_t *defs = c->leaf->max_def > 0 ? c->defs + c->page_at : NULL;
	char text[PQ_TEXT_MAX];
	for (uint64_t i = 0; i < k; i++) {
		if (defs && !defs[i]) {
			set_bit(o->validity, row + i, 0);
			o->nulls++;
			o->offsets[row + i + 1] = (int32_t)o->bytes_len;
			continue;
		}
		const uint8_t *p;
		size_t n = (size_t)c->width;
		if (c->leaf->ptype == PT_BYTE_ARRAY) { /* spans only: no fixed-width values */
			pq_span s = span_of(c, c->page_defined_at);
			p = s.p, n = s.n;
		}
		else
			p = c->fixed + c->page_defined_at * n;
		c->page_defined_at++;
		int len = fmt_pq_text(c->leaf, p, n, text);
		if (len < 0)
			return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': row %llu holds a %s value out of range",
					c->leaf->path, (unsigned long long)(c->first_row + c->values_seen - c->page_values +
									    c->page_at + i), c->leaf->logical);
		if (o->bytes_len + (size_t)len > INT32_MAX)
			return fmt_fail(e, FMT_UNSUPPORTED, "Parquet: column '%s': over 2 GiB of strings in one batch",
					c->leaf->path);
		if (out_bytes(o, o->bytes_len + (size_t)len + 1))
			return oom(e);
		memcpy(o->bytes + o->bytes_len, text, (size_t)len);
		o->bytes_len += (size_t)len;
		o->offsets[row + i + 1] = (int32_t)o->bytes_len;
	}
	return FMT_OK;
}

static void take_fixed(pq_cursor *c, const fmt_field *f, out_col *o, uint64_t row, uint64_t k)
{
	size_t ow = fmt_ctype_width(f->type), pw = (size_t)c->width;
	if (f->type == FMT_C_BOOL) {
		for (uint64_t i = 0; i < k; i++) {
			int def = c->leaf->max_def == 0 || c->defs[c->page_at + i];
			int v = def ? c->fixed[c->page_defined_at++] : 0;
			set_bit(o->values, row + i, v);
			if (!def) {
				set_bit(o->validity, row + i, 0);
				o->nulls++;
			}
		}
		return;
	}
	if (c->leaf->max_def == 0 && ow == pw && c->leaf->conv == CONV_PLAIN) {
		memcpy(o->values + row * ow, c->fixed + c->page_defined_at * pw, k * ow);
		c->page_defined_at += k;
		return;
	}
	for (uint64_t i = 0; i < k; i++) {
		uint8_t *out = o->values + (row + i) * ow;
		if (c->leaf->max_def == 0 || c->defs[c->page_at + i]) {
			fmt_pq_convert_value(c, c->fixed + c->page_defined_at++ * pw, out, ow);
		} else {
			memset(out, 0, ow);
			set_bit(o->validity, row + i, 0);
			o->nulls++;
		}
	}
}

static int is_string(fmt_ctype t)
{
	return t == FMT_C_UTF8 || t == FMT_C_BINARY;
}

/* Bytes rounded up to a multiple of 64 (a cache line). */
static uint64_t line_up(uint64_t n)
{
	return (n + 63) & ~(uint64_t)63;
}

uint64_t fmt_pq_take_bytes(const pq_cursor *c, const fmt_field *f, uint64_t n)
{
	if (c->leaf->list || is_string(f->type) || f->type == FMT_C_OTHER || f->type == FMT_C_LARGE_UTF8 ||
	    f->type == FMT_C_FIXED_SIZE_LIST)
		return 0;
	uint64_t bitmap = (n + 7) / 8, values = f->type == FMT_C_BOOL ? bitmap : n * fmt_ctype_width(f->type);
	return (c->leaf->max_def > 0 ? line_up(bitmap ? bitmap : 1) : 0) + line_up(values ? values : 1);
}

/* The buffers of n rows of f (in mem, of fmt_pq_take_bytes, when it is not NULL): a bitmap's
 * last byte cleared past its rows, as calloc gave it. */
static fmt_kind out_open(pq_cursor *c, const fmt_field *f, uint64_t n, uint8_t *mem, out_col *o, fmt_err *e)
{
	size_t bitmap = (size_t)((n + 7) / 8);
	if (c->leaf->max_def > 0) {
		o->validity = mem ? mem : fmt_batch_buffer(bitmap ? bitmap : 1);
		if (!o->validity)
			return oom(e);
		memset(o->validity, 0xff, bitmap);
		mem = mem ? mem + line_up(bitmap ? bitmap : 1) : NULL;
	}
	if (is_string(f->type)) {
		/* as many bytes a row as the last batch had, and an eighth more */
		uint64_t like = c->rows_taken && n <= UINT32_MAX ? c->bytes_taken * n / c->rows_taken : 4096;
		uint64_t guess = like + like / 8 + 64;
		if (!(o->offsets = fmt_batch_buffer(((size_t)n + 1) * sizeof(int32_t))) ||
		    out_bytes(o, guess < (1u << 30) ? (size_t)guess : 1u << 30))
			return oom(e);
		o->offsets[0] = 0;
		return FMT_OK;
	}
	size_t bytes = f->type == FMT_C_BOOL ? bitmap : (size_t)n * fmt_ctype_width(f->type);
	if (!(o->values = mem ? mem : fmt_batch_buffer(bytes ? bytes : 1)))
		return oom(e);
	if (f->type == FMT_C_BOOL)
		memset(o->values, 0, bitmap);
	return FMT_OK;
}

fmt_kind fmt_pq_cursor_take(pq_cursor *c, const fmt_field *f, uint64_t n, fmt_column *col, fmt_batch *b, fmt_err *e)
{
	return fmt_pq_cursor_take_into(c, f, n, NULL, col, b, e);
}

static fmt_kind take_flat(pq_cursor *c, const fmt_field *f, uint64_t n, uint8_t *mem, fmt_column *col, fmt_batch *b,
			  fmt_err *e);

fmt_kind fmt_pq_cursor_take_into(pq_cursor *c, const fmt_field *f, uint64_t n, uint8_t *mem, fmt_column *col,
				 fmt_batch *b, fmt_err *e)
{
	fmt_kind k = c->leaf->list ? fmt_pq_list_take(c, f, n, col, b, e) : take_flat(c, f, n, mem, col, b, e);
	if (k == FMT_OK)
		put_aside(c);
	return k;
}

static fmt_kind take_flat(pq_cursor *c, const fmt_field *f, uint64_t n, uint8_t *mem, fmt_column *col, fmt_batch *b,
			  fmt_err *e)
{
	out_col o = { 0 };
	size_t bitmap = (size_t)((n + 7) / 8);
	int strings = is_string(f->type);
	mem = fmt_pq_take_bytes(c, f, n) ? mem : NULL;
	fmt_kind k = out_open(c, f, n, mem, &o, e);
	for (uint64_t row = 0; k == FMT_OK && row < n;) {
		if (c->page_at == c->page_values) {
			int none;
			if ((k = fmt_pq_cursor_next_page(c, &none, e)) != FMT_OK)
				break;
			if (none) {
				k = bad_page(c, e, "the chunk's pages end before its rows");
				break;
			}
			continue;
		}
		uint64_t take = c->page_values - c->page_at;
		if (take > n - row)
			take = n - row;
		if (strings && fmt_pq_is_text(c->leaf))
			k = take_text(c, &o, row, take, e);
		else if (strings)
			k = take_strings(c, &o, row, take, e);
		else
			take_fixed(c, f, &o, row, take);
		c->page_at += take;
		row += take;
	}
	if (k != FMT_OK) {
		if (!mem)
			out_free(&o);
		return k;
	}
	col->null_count = o.nulls;
	if (o.nulls == 0) {
		if (!mem)
			fmt_batch_buffer_free(o.validity);
		o.validity = NULL;
	}
	col->validity = o.validity;
	if (strings) {
		c->bytes_taken = o.bytes_len;
		c->rows_taken = n;
		col->offsets = o.offsets;
		col->values = o.bytes;
		col->values_len = o.bytes_len;
	} else {
		col->values = o.values;
		col->values_len = f->type == FMT_C_BOOL ? bitmap : (uint64_t)n * fmt_ctype_width(f->type);
	}
	if (mem)                    /* the block is the batch's */
		return FMT_OK;
	if (o.validity && (k = fmt_batch_own_buffer(b, o.validity, e)) != FMT_OK) {
		o.validity = NULL;
		out_free(&o);
		return k;
	}
	if (strings) {
		if ((k = fmt_batch_own_buffer(b, o.offsets, e)) != FMT_OK) {
			fmt_batch_buffer_free(o.bytes);
			return k;
		}
		return fmt_batch_own_buffer(b, o.bytes, e);
	}
	return fmt_batch_own_buffer(b, o.values, e);
}

fmt_kind fmt_pq_cursor_check_all(pq_cursor *c, uint64_t *pages, fmt_err *e)
{
	uint64_t before = c->pages_read;
	for (;;) {
		int none;
		fmt_kind k = fmt_pq_cursor_next_page(c, &none, e);
		if (k != FMT_OK)
			return k;
		if (none)
			break;
		c->page_at = c->page_values;
	}
	*pages += c->pages_read - before;
	if (c->values_seen != (uint64_t)c->chunk->num_values)
		return fmt_fail(e, FMT_INVALID_FORMAT, "Parquet: column '%s': the pages hold %llu values, the chunk says "
				"%lld", c->leaf->path, (unsigned long long)c->values_seen, (long long)c->chunk->num_values);
	return FMT_OK;
}
