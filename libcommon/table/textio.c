/* The reading and writing loops of the text table drivers (textio.h). */
#include <stdlib.h>
#include <string.h>
#include "fmt/textio.h"

fmt_kind fmt_text_in_init(fmt_text_in *in, fmt_source *src, fmt_err *e)
{
	memset(in, 0, sizeof *in);
	in->src = src;
	in->cap = FMT_TEXT_BLOCK;
	if (!(in->buf = malloc(in->cap)))
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_text_in_seek(in, 0);
	return FMT_OK;
}

fmt_kind fmt_text_in_refill(fmt_text_in *in, uint64_t line, const char *too_long, fmt_err *e)
{
	if (in->start > 0) {
		memmove(in->buf, in->buf + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	if (in->end == in->cap) {
		if (in->cap >= FMT_TEXT_MAX_RECORD)
			return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu: %s", (unsigned long long)line, too_long);
		char *p = realloc(in->buf, in->cap * 2);
		if (!p)
			return fmt_fail(e, FMT_IO, "out of memory");
		in->buf = p;
		in->cap *= 2;
	}
	uint64_t left = in->src->size - in->next_off;
	size_t want = in->cap - in->end < left ? in->cap - in->end : (size_t)left;
	fmt_kind k = fmt_source_read(in->src, in->next_off, in->buf + in->end, want, e);
	if (k != FMT_OK)
		return k;
	in->end += want;
	in->next_off += want;
	in->eof = in->next_off == in->src->size;
	return FMT_OK;
}

void fmt_text_in_seek(fmt_text_in *in, uint64_t off)
{
	in->next_off = off;
	in->start = in->end = 0;
	in->eof = off == in->src->size;
}

void fmt_text_in_free(fmt_text_in *in)
{
	free(in->buf);
	in->buf = NULL;
}

fmt_kind fmt_text_next_batch(fmt_text_row_fn row, void *ctx, uint64_t batch_rows, col_builder *cols,
			     const fmt_schema *s, fmt_batch *b, int *done, fmt_err *e)
{
	uint64_t rows = 0;
	int got = 1;
	fmt_kind k = FMT_OK;
	*done = 0;
	for (size_t i = 0; i < s->n_fields; i++)
		fmt_cb_prepare(&cols[i]);
	while (rows < batch_rows && (k = row(ctx, s, &got, e)) == FMT_OK && got)
		rows++;
	if (k != FMT_OK)
		return k;
	if (rows == 0) {
		*done = 1;
		return FMT_OK;
	}
	b->n_rows = rows;
	for (size_t i = 0; i < s->n_fields && k == FMT_OK; i++)
		k = fmt_cb_finish(&cols[i], &s->fields[i], b, &b->columns[i], e);
	return k;
}

fmt_kind fmt_text_write(fmt_table *in, fmt_sink *k, const char *head, size_t head_len,
			fmt_text_put_row_fn put_row, void *ctx, fmt_err *e)
{
	fmt_sb line = { 0 };
	fmt_kind r = FMT_OK;
	fmt_sb_put(&line, head, head_len);
	for (;;) {
		fmt_batch b;
		int done;
		if (line.oom) {
			r = fmt_fail(e, FMT_IO, "out of memory");
			break;
		}
		if (line.len && (r = fmt_sink_write(k, line.p, line.len, e)) != FMT_OK)
			break;
		line.len = 0;
		if ((r = fmt_table_next(in, &b, &done, e)) != FMT_OK)
			break;
		if (done) {
			fmt_batch_free(&b);
			break;
		}
		for (uint64_t row = 0; row < b.n_rows && r == FMT_OK; row++) {
			if (!put_row(ctx, &b, row, &line) || line.oom)
				r = fmt_fail(e, FMT_IO, "out of memory");
			else if (line.len >= FMT_TEXT_BLOCK) {
				r = fmt_sink_write(k, line.p, line.len, e);
				line.len = 0;
			}
		}
		fmt_batch_free(&b);
		if (r != FMT_OK)
			break;
	}
	fmt_sb_free(&line);
	return r;
}
