/* CSV (RFC 4180) as a table driver: a header row (or none), a delimiter, quoting, type inference
 * over the whole file in a first pass, then batches of rows in a second; both passes read the
 * file in blocks, so memory stays bounded whatever its size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/cell.h"
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/half.h"
#include "fmt/registry.h"
#include "fmt/shortest.h"
#include "fmt/builder.h"
#include "fmt/textio.h"
#include "fmt/textval.h"
#include "csv_internal.h"

#define MAX_COLUMNS FMT_TABLE_MAX_COLUMNS
#define DEFAULT_BATCH 65536

/* The values of the CSV options (csv_options, at the driver). */
typedef struct csv_opts {
	char delimiter;            /* 0: detected when reading, ',' when writing */
	int no_header;             /* name columns column_1, column_2, ... */
	const char *null_value;    /* a field equal to this is null (empty fields always are) */
	const char *schema_file;   /* {"column": "type"}: types to use instead of inferring them */
	json_t *schema;            /* ... as loaded before the input is opened */
} csv_opts;

static const fmt_drvopts csv_options;
static const csv_opts csv_defaults;

static const csv_opts *csv_opts_of(const fmt_drvopt_sets *s)
{
	const csv_opts *o = fmt_drvopt_values(s, &csv_options);
	return o ? o : &csv_defaults;
}

static fmt_kind refill(csv_state *s, fmt_err *e)
{
	s->scan_at = s->scan_end = 0;
	return fmt_text_in_refill(&s->in, s->line, "a record longer than 64 MiB", e);
}

void fmt_csv_state_seek(csv_state *s, uint64_t off, uint64_t line)
{
	fmt_text_in_seek(&s->in, off);
	s->line = line;
	s->scan_at = s->scan_end = 0;
}

/* fmt_csv_special_byte from pos to the end of the buffer, a 64-byte mask at a time: fields are
 * short, and one mask serves the several that start in it. */
static size_t next_special(csv_state *s, size_t pos)
{
	for (;;) {
		if (pos >= s->scan_at && pos < s->scan_end) {
			uint64_t m = s->scan_mask >> (pos - s->scan_at);
			if (m)
				return pos + (size_t)__builtin_ctzll(m);
			pos = s->scan_end;
		}
		if (pos >= s->in.end)
			return s->in.end;
		size_t n = s->in.end - pos < 64 ? s->in.end - pos : 64;
		s->scan_mask = fmt_csv_special_mask(s->in.buf + pos, n, s->delim);
		s->scan_at = pos;
		s->scan_end = pos + n;
	}
}

uint64_t fmt_csv_state_offset(const csv_state *s)
{
	return fmt_text_in_offset(&s->in);
}

int fmt_csv_record_cuts(const csv_state *s)
{
	return fmt_text_record_cuts(s->rec_off - s->data_off, fmt_csv_state_offset(s) - s->data_off);
}

fmt_kind fmt_csv_state_clone(csv_state *w, const csv_state *proto, uint64_t off, uint64_t line, fmt_err *e)
{
	memset(w, 0, sizeof *w);
	w->delim = proto->delim;
	w->null_value = proto->null_value;
	w->n_cols = proto->n_cols;
	w->batch_rows = proto->batch_rows;
	w->data_off = proto->data_off;
	w->limit = UINT64_MAX;
	w->threads = 1;
	fmt_kind k = fmt_text_in_init(&w->in, proto->in.src, e);
	if (k != FMT_OK)
		return k;
	fmt_csv_state_seek(w, off, line);
	return FMT_OK;
}

void fmt_csv_state_free(csv_state *s)
{
	for (size_t i = 0; s->cols && i < s->n_cols; i++)
		fmt_cb_free(&s->cols[i]);
	free(s->cols);
	s->cols = NULL;
	fmt_text_in_free(&s->in);
	free(s->fields);
	s->fields = NULL;
	free(s->sample);
	s->sample = NULL;
	fmt_sb_free(&s->rec);
}

static fmt_kind add_field(csv_state *s, size_t off, size_t len, int quoted, int in_rec, fmt_err *e)
{
	if (s->n_fields == MAX_COLUMNS)
		return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu: more than %d fields", (unsigned long long)s->rec_line,
				MAX_COLUMNS);
	if (s->n_fields == s->cap_fields) {
		size_t cap = s->cap_fields ? 2 * s->cap_fields : 64;
		if (cap > MAX_COLUMNS)
			cap = MAX_COLUMNS;
		field_ref *p = realloc(s->fields, cap * sizeof *p);
		if (!p)
			return fmt_fail(e, FMT_IO, "out of memory");
		s->fields = p;
		s->cap_fields = cap;
	}
	s->fields[s->n_fields++] = (field_ref){ off, len, quoted, in_rec };
	return FMT_OK;
}

static fmt_kind syntax(csv_state *s, uint64_t line, size_t column, const char *what, fmt_err *e)
{
	(void)s;
	return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: %s", (unsigned long long)line, column, what);
}

/* The line feeds in p[0..n): quoted runs are mostly short and without one. */
static uint64_t count_lf(const char *p, size_t n)
{
	uint64_t lines = 0;
	for (const char *lf = memchr(p, '\n', n); lf; lf = memchr(lf + 1, '\n', (size_t)(p + n - lf - 1)))
		lines++;
	return lines;
}

/* A quoted field without a doubled quote (the usual one) is read in place: from pos (past the
 * opening quote) to the closing quote. 1 when it is one (*end at its closing quote), 0 when it
 * needs unescaping or more data first. */
static int quoted_in_place(const csv_state *s, size_t pos, size_t *end)
{
	const char *q = memchr(s->in.buf + pos, '"', s->in.end - pos);
	if (!q)
		return 0;
	size_t at = (size_t)(q - s->in.buf);
	if (at + 1 < s->in.end ? s->in.buf[at + 1] == '"' : !s->in.eof)
		return 0;
	*end = at;
	return 1;
}

/* The next record into s->fields (*got = 0 at the end of the data). Empty lines are skipped. */
fmt_kind fmt_csv_next_record(csv_state *s, int *got, fmt_err *e)
{
	fmt_kind k;
restart:
	*got = 0;
	s->n_fields = 0;
	s->rec.len = 0;
	s->rec_line = s->line;
	s->rec_off = fmt_csv_state_offset(s);
	size_t pos = s->in.start;
	uint64_t line = s->line;
	if (fmt_csv_state_offset(s) >= s->limit)
		return FMT_OK;
	if (pos == s->in.end) {
		if (s->in.eof)
			return FMT_OK;
		if ((k = refill(s, e)) != FMT_OK)
			return k;
		goto restart;
	}
	for (;;) {
		size_t column = s->n_fields + 1, off = s->rec.len, len, close;
		int quoted = 0, in_rec = 0;
		if (pos < s->in.end && s->in.buf[pos] == '"' && quoted_in_place(s, pos + 1, &close)) {
			quoted = 1;
			off = pos + 1;
			len = close - off;
			line += count_lf(s->in.buf + off, len);
			pos = close + 1;
		} else if (pos < s->in.end && s->in.buf[pos] == '"') {
			uint64_t qline = line;
			quoted = in_rec = 1;
			pos++;
			for (;;) {
				if (pos == s->in.end) {
					if (!s->in.eof)
						goto more;
					return syntax(s, qline, column, "a quoted field is not closed", e);
				}
				char c = s->in.buf[pos];
				if (c == '"') {
					if (pos + 1 == s->in.end && !s->in.eof)
						goto more;
					if (pos + 1 < s->in.end && s->in.buf[pos + 1] == '"') {
						fmt_sb_put(&s->rec, "\"", 1);
						pos += 2;
						continue;
					}
					pos++;
					break;
				}
				/* a run up to the next quote in one copy */
				const char *q = memchr(s->in.buf + pos, '"', s->in.end - pos);
				size_t run = q ? (size_t)(q - (s->in.buf + pos)) : s->in.end - pos;
				line += count_lf(s->in.buf + pos, run);
				fmt_sb_put(&s->rec, s->in.buf + pos, run);
				pos += run;
			}
			len = s->rec.len - off;
		} else {
			/* in place: buf moves only in refill, which starts the record again */
			off = pos;
			pos = next_special(s, pos);
			if (pos < s->in.end && s->in.buf[pos] == '"')
				return syntax(s, line, column, "a quote inside an unquoted field", e);
			if (pos == s->in.end && !s->in.eof)
				goto more;
			len = pos - off;
		}
		if (quoted && pos < s->in.end && s->in.buf[pos] != s->delim && s->in.buf[pos] != '\n' &&
		    s->in.buf[pos] != '\r')
			return syntax(s, line, column, "characters after a closing quote", e);
		if ((k = add_field(s, off, len, quoted, in_rec, e)) != FMT_OK)
			return k;
		if (pos < s->in.end && s->in.buf[pos] == s->delim) {
			pos++;
			continue;
		}
		if (pos < s->in.end && s->in.buf[pos] == '\r') {
			if (pos + 1 == s->in.end && !s->in.eof)
				goto more;
			if (pos + 1 == s->in.end || s->in.buf[pos + 1] != '\n')
				return syntax(s, line, column, "a carriage return without a line feed", e);
			pos++;
		}
		if (pos < s->in.end && s->in.buf[pos] == '\n') {
			pos++;
			line++;
		}
		break;
	}
	if (s->rec.oom)
		return fmt_fail(e, FMT_IO, "out of memory");
	s->in.start = pos;
	s->line = line;
	if (s->n_fields == 1 && s->fields[0].len == 0 && !s->fields[0].quoted)
		goto restart; /* an empty line */
	*got = 1;
	return FMT_OK;
more:
	if ((k = refill(s, e)) != FMT_OK)
		return k;
	goto restart;
}

static const char *field_ptr(const csv_state *s, size_t i)
{
	const field_ref *f = &s->fields[i];
	return !f->in_rec ? s->in.buf + f->off : s->rec.p ? s->rec.p + f->off : "";
}

static int is_null(const csv_state *s, size_t i)
{
	const field_ref *f = &s->fields[i];
	if (f->len == 0 && !f->quoted)
		return 1;
	return s->null_value && !f->quoted && strlen(s->null_value) == f->len &&
	       memcmp(field_ptr(s, i), s->null_value, f->len) == 0;
}

static fmt_kind count_check(csv_state *s, fmt_err *e)
{
	if (s->n_fields != s->n_cols)
		return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: %zu fields, the header has %zu",
				(unsigned long long)s->rec_line, s->n_fields < s->n_cols ? s->n_fields + 1 : s->n_cols + 1,
				s->n_fields, s->n_cols);
	return FMT_OK;
}

/* A type named in a --schema file: "int64", "timestamp[ms]" (zone-less), "timestamp[ms, UTC]"
 * (any zone name after the comma), or "timestamp": microseconds, the zone as the values say
 * (zoned is what inference found). */
static int forced_type(const char *name, fmt_field *f, int zoned, char *zone_buf, size_t zone_size)
{
	static const char *units[] = { "s", "ms", "us", "ns" };
	if (strncmp(name, "timestamp", 9) == 0) {
		f->type = FMT_C_TIMESTAMP;
		f->unit = FMT_TU_US;
		f->timezone = zoned ? "UTC" : NULL;
		if (!name[9])
			return 1;
		f->timezone = NULL;
		for (int u = 0; u < 4; u++) {
			size_t n = strlen(units[u]);
			const char *p = name + 10;
			if (name[9] != '[' || strncmp(p, units[u], n) != 0)
				continue;
			p += n;
			f->unit = (fmt_time_unit)u;
			if (!strcmp(p, "]"))
				return 1;
			if (strncmp(p, ", ", 2) != 0 || strlen(p + 2) < 2 || strlen(p + 2) > zone_size ||
			    p[strlen(p) - 1] != ']')
				return 0;
			snprintf(zone_buf, zone_size, "%.*s", (int)strlen(p + 2) - 1, p + 2);
			f->timezone = zone_buf;
			return 1;
		}
		return 0;
	}
	for (int t = FMT_C_BOOL; t <= FMT_C_DATE32; t++)
		if (!strcmp(fmt_ctype_name((fmt_ctype)t), name)) {
			f->type = (fmt_ctype)t;
			return 1;
		}
	return 0;
}

int fmt_csv_checkpoint_add(csv_checkpoints *cps, uint64_t row, uint64_t off, uint64_t line, int cut)
{
	if (fmt_grow_array(&cps->v, &cps->cap, cps->n + 1, sizeof *cps->v, 64))
		return 0;
	cps->v[cps->n++] = (csv_checkpoint){ row, off, line, cut };
	return 1;
}

fmt_kind fmt_csv_infer_range(csv_state *s, fmt_tv_infer *inf, uint64_t *rows, csv_checkpoints *cps, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	uint64_t local = 0;
	int got = 1;
	for (;;) {
		if (cps && local % CSV_CHECKPOINT_ROWS == 0 &&
		    !fmt_csv_checkpoint_add(cps, local, fmt_csv_state_offset(s), s->line, 0))
			return fmt_fail(e, FMT_IO, "out of memory");
		if ((k = fmt_csv_next_record(s, &got, e)) != FMT_OK || !got)
			break;
		if ((k = count_check(s, e)) != FMT_OK)
			break;
		local++;
		if (cps && fmt_csv_record_cuts(s) &&
		    !fmt_csv_checkpoint_add(cps, local, fmt_csv_state_offset(s), s->line, 1))
			return fmt_fail(e, FMT_IO, "out of memory");
		for (size_t i = 0; inf && i < s->n_cols; i++) {
			if (is_null(s, i))
				inf[i].nulls = 1;
			else if (inf[i].can)
				fmt_tv_infer_add(&inf[i], field_ptr(s, i), s->fields[i].len);
			else
				inf[i].seen = 1;
		}
	}
	*rows += local;
	return k;
}

/* Whether the types may come from the first rows only: the caller starts again when a read
 * fails (fmt_dataset_opts.sample_bytes), the file can be read again, and no --schema names
 * types (a forced timestamp takes its zone from the inference). */
static int may_sample(const fmt_table *t, const csv_state *s, const csv_opts *o)
{
	return t->opts && t->opts->sample_bytes && !o->schema && !s->in.src->sequential && !s->in.src->observe;
}

/* The inference of the rows in the first sample bytes; *sampled = 1 when rows follow them.
 * When the record after them is malformed, the rest is inferred as well (*sampled = 0), so that
 * the error is the one a whole pass reports. */
static fmt_kind infer_sample(csv_state *s, uint64_t sample, fmt_tv_infer *inf, uint64_t *rows, int *sampled,
			     fmt_err *e)
{
	fmt_err peek_err;
	int more = 0;
	*sampled = 0;
	s->limit = fmt_add_u64(s->data_off, sample, &s->limit) ? UINT64_MAX : s->limit;
	fmt_kind k = fmt_csv_infer_range(s, inf, rows, NULL, e);
	s->limit = UINT64_MAX;
	if (k != FMT_OK)
		return k;
	uint64_t off = fmt_csv_state_offset(s), line = s->line;
	if (fmt_csv_next_record(s, &more, &peek_err) == FMT_OK) {
		*sampled = more;
		return FMT_OK;
	}
	fmt_csv_state_seek(s, off, line);
	return fmt_csv_infer_range(s, inf, rows, NULL, e);
}

static fmt_kind infer(fmt_table *t, csv_state *s, char **names, fmt_err *e)
{
	const csv_opts *o = csv_opts_of(t->opts ? t->opts->options : NULL);
	fmt_tv_infer *inf = calloc(s->n_cols ? s->n_cols : 1, sizeof *inf);
	fmt_kind k = FMT_OK;
	uint64_t rows = 0;
	int sampled = 0;
	if (!inf)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < s->n_cols; i++)
		fmt_tv_infer_init(&inf[i]);
	if (fmt_csv_par_wanted(s) && may_sample(t, s, o)) {
		/* the types from the sample; the threads only count the records, for the batches'
		 * checkpoints (fmt_csv_par_infer without inferences: nothing parsed) */
		k = infer_sample(s, t->opts->sample_bytes, inf, &rows, &sampled, e);
		if (k == FMT_OK && sampled) {
			rows = 0;
			k = fmt_csv_par_infer(s, NULL, &rows, e);
		}
	} else if (fmt_csv_par_wanted(s)) {
		k = fmt_csv_par_infer(s, inf, &rows, e);
	} else if (may_sample(t, s, o)) {
		k = infer_sample(s, t->opts->sample_bytes, inf, &rows, &sampled, e);
	} else
		k = fmt_csv_infer_range(s, inf, &rows, NULL, e);
	for (size_t i = 0; k == FMT_OK && i < s->n_cols; i++) {
		fmt_field f = { .name = names[i] };
		char zone[64];
		fmt_tv_infer_field(&inf[i], &f);
		const json_t *want = o->schema ? json_object_get(o->schema, names[i]) : NULL;
		if (want && !(json_is_string(want) && forced_type(json_string_value(want), &f, inf[i].zoned, zone,
								   sizeof zone)))
			k = fmt_fail(e, FMT_USAGE, "--schema: column '%s': unknown type (bool, int8..int64, uint8..uint64, float16/32/64, utf8, large_utf8, binary, date32, timestamp, timestamp[s|ms|us|ns], timestamp[s|ms|us|ns, ZONE])",
				     names[i]);
		if (k == FMT_OK)
			k = fmt_schema_add_field(&t->schema, &f, e);
	}
	if (k == FMT_OK && o->schema) {
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)o->schema, key, v)
			if (fmt_schema_find(&t->schema, key) < 0 && k == FMT_OK)
				k = fmt_fail(e, FMT_USAGE, "--schema names column '%s', which the file does not have", key);
	}
	if (k == FMT_OK && sampled) { /* the reads check the rest */
		s->sample = inf;
		t->types_sampled = 1;
		if (s->par)
			t->n_rows = s->rows = rows;
		return k;
	}
	free(inf);
	t->n_rows = s->rows = rows;
	return k;
}

/* Delimiters (',', tab or ';') outside quotes in the line at p, and where it ends (NULL when
 * the head ends first). */
static const uint8_t *line_delims(const uint8_t *p, const uint8_t *end, size_t count[3])
{
	static const char cands[] = { ',', '\t', ';' };
	int quoted = 0;
	for (; p < end; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (*p == '\n' && !quoted)
			return p;
		for (int c = 0; c < 3 && !quoted; c++)
			count[c] += *p == cands[c];
	}
	return NULL;
}

/* One column: text without any delimiter, control byte or NUL in the head, a header line that
 * does not start like JSON, markup or a comment, and at least one record after it (the last one
 * may end with the file). The weakest claim of all (5). */
static int probe_one_column(const uint8_t *head, size_t n, uint64_t size)
{
	const uint8_t *nl = memchr(head, '\n', n);
	if (!nl || nl == head || strchr("{[#<\r", head[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((head[i] < 0x20 && head[i] != '\n' && head[i] != '\r') || head[i] == 0x7f ||
		    head[i] == ',' || head[i] == ';')
			return 0;
	const uint8_t *rec = nl + 1;
	while (rec < head + n && (*rec == '\n' || *rec == '\r'))
		rec++;
	if (rec == head + n)
		return 0;
	return memchr(rec, '\n', (size_t)(head + n - rec)) || (uint64_t)n == size ? 5 : 0;
}

/* A first line longer than the head (a header of thousands of columns: 3,000 names take about
 * 18 KB) that reads as one: text without control bytes, a delimiter every 64 bytes or more
 * often, and at most three spaces a name (a line of prose has a comma every hundred bytes or so,
 * and a space every six). */
static int long_header(const uint8_t *head, size_t n, const size_t count[3])
{
	size_t spaces = 0;
	for (size_t i = 0; i < n; i++) {
		if ((head[i] < 0x20 && head[i] != '\t' && head[i] != '\r') || head[i] == 0x7f)
			return 0;
		spaces += head[i] == ' ';
	}
	for (int c = 0; c < 3; c++)
		if (count[c] >= n / 64 && 3 * count[c] >= spaces)
			return 1;
	return 0;
}

static int probe(const uint8_t *head, size_t n, uint64_t size)
{
	/* text whose first line has a delimiter and whose second line (when the head holds one)
	 * has as many: a weak claim, any more specific driver wins (other delimiters: --from csv) */
	size_t first[3] = { 0 }, second[3] = { 0 };
	size_t bom = fmt_text_bom(head, n);
	head += bom, n -= bom, size -= bom;
	if (n == 0 || memchr(head, 0, n) || head[0] == '{' || head[0] == '[') /* JSON, not a header */
		return 0;
	const uint8_t *nl = line_delims(head, head + n, first);
	if (!nl)
		return (uint64_t)n < size && long_header(head, n, first) ? 10 : 0;
	const uint8_t *nl2 = line_delims(nl + 1, head + n, second);
	int any = 0;
	for (int c = 0; c < 3; c++)
		any |= first[c] > 0;
	if (!any)
		return probe_one_column(head, n, size);
	if (nl2 || (uint64_t)n == size)
		if (nl2 || nl + 1 < head + n)
			for (int c = 0; c < 3; c++)
				if (first[c] && first[c] != second[c])
					return 0;
	return 10;
}

/* The delimiter the first line uses most: ',', tab or ';' (',' when none). */
static fmt_kind detect_delimiter(csv_state *s, fmt_err *e)
{
	static const char cands[] = { ',', '\t', ';' };
	size_t count[3] = { 0 };
	fmt_kind k = refill(s, e);
	if (k != FMT_OK)
		return k;
	int quoted = 0;
	for (size_t i = s->in.start; i < s->in.end && (quoted || s->in.buf[i] != '\n'); i++) {
		if (s->in.buf[i] == '"')
			quoted = !quoted;
		for (int c = 0; c < 3 && !quoted; c++)
			count[c] += s->in.buf[i] == cands[c];
	}
	int best = 0;
	for (int c = 1; c < 3; c++)
		if (count[c] > count[best])
			best = c;
	s->delim = cands[best];
	return FMT_OK;
}

static fmt_kind csv_open(fmt_table *t, fmt_err *e)
{
	const csv_opts *o = csv_opts_of(t->opts ? t->opts->options : NULL);
	csv_state *s = calloc(1, sizeof *s);
	char **names = NULL;
	fmt_kind k;
	int got;
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	s->delim = o->delimiter ? o->delimiter : ',';
	s->null_value = o->null_value;
	s->limit = UINT64_MAX;
	s->threads = t->opts && t->opts->threads > 1 ? t->opts->threads : 1;
	s->batch_rows = t->opts && t->opts->batch_rows ? t->opts->batch_rows : DEFAULT_BATCH;
	if ((k = fmt_text_in_init(&s->in, &t->source, e)) != FMT_OK)
		return k;
	fmt_csv_state_seek(s, s->in.text_off, 1);
	if (!o->delimiter && (k = detect_delimiter(s, e)) != FMT_OK)
		return k;
	if ((k = fmt_csv_next_record(s, &got, e)) != FMT_OK)
		return k;
	if (!got)
		return fmt_fail(e, FMT_INVALID_FORMAT, "no header row (the file is empty)");
	s->n_cols = s->n_fields;
	s->batch_rows = fmt_text_batch_rows(s->batch_rows, s->n_cols);
	names = calloc(s->n_cols, sizeof *names);
	if (!names)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < s->n_cols && k == FMT_OK; i++) {
		/* an empty name (pandas' to_csv writes one over its index) as --no-header names it */
		if (o->no_header || s->fields[i].len == 0) {
			if (asprintf(&names[i], "column_%zu", i + 1) < 0)
				names[i] = NULL;
		} else {
			names[i] = strndup(field_ptr(s, i), s->fields[i].len);
		}
		if (!names[i])
			k = fmt_fail(e, FMT_IO, "out of memory");
		else if (memchr(field_ptr(s, i), 0, s->fields[i].len))
			k = fmt_fail(e, FMT_INVALID_FORMAT, "line 1, column %zu: a NUL byte in a column name", i + 1);
	}
	if (k == FMT_OK) {
		if (o->no_header)
			fmt_csv_state_seek(s, s->in.text_off, 1);
		s->data_off = s->in.next_off - (s->in.end - s->in.start);
		s->data_line = s->line;
		k = infer(t, s, names, e);
	}
	for (size_t i = 0; i < s->n_cols; i++)
		free(names[i]);
	free(names);
	if (k == FMT_OK) {
		fmt_csv_state_seek(s, s->data_off, s->data_line);
		s->cols = calloc(s->n_cols ? s->n_cols : 1, sizeof *s->cols);
		if (!s->cols)
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	return k;
}

static fmt_kind bad_value(const csv_state *s, size_t i, const fmt_field *f, fmt_err *e)
{
	char type[64];
	fmt_field_type_name(f, type, sizeof type);
	/* Of the type names only int8 ... int64 start with a vowel sound ("a uint8", "a utf8"). */
	return fmt_fail(e, FMT_INVALID_FORMAT, "line %llu, column %zu: \"%.*s\" is not %s %s",
			(unsigned long long)s->rec_line, i + 1, (int)(s->fields[i].len > 40 ? 40 : s->fields[i].len),
			field_ptr(s, i), type[0] == 'i' ? "an" : "a", type);
}

static int unhex(const char *p, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n / 2; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = p[2 * i + (size_t)k];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
				: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
			if (d < 0)
				return 0;
			v = v * 16 + d;
		}
		out[i] = (uint8_t)v;
	}
	return n % 2 == 0;
}

/* d as a value of the float type t into le (d from fmt_tv_float_narrowable: one rounding from
 * the text); 0 when a finite d would become an infinity (too large for the type: as an integer
 * too large is, not a value of it). A value too small for the type rounds to a subnormal or
 * zero, as any value rounds. */
static int narrow_float(double d, fmt_ctype t, uint8_t le[8])
{
	if (t == FMT_C_F64) {
		fmt_wr_u64(le, fmt_f64_bits(d));
		return 1;
	}
	if (t == FMT_C_F16) {
		uint16_t h = fmt_f64_to_f16(d);      /* rounded once: not through a float */
		fmt_wr_u16(le, h);
		return isinf(d) || (h & 0x7FFF) != 0x7C00;
	}
	float x = (float)d;
	fmt_wr_u32(le, fmt_f32_bits(x));
	return isinf(d) || !isinf(x);
}

/* Field i of the record, parsed as f's type, onto builder b. */
static fmt_kind put_value(csv_state *s, size_t i, const fmt_field *f, col_builder *b, fmt_err *e)
{
	const char *p = field_ptr(s, i);
	size_t n = s->fields[i].len;
	uint8_t le[8];
	int64_t v;
	double d;
	int bv;
	if (is_null(s, i)) {
		fmt_cb_null(b, f);
		return FMT_OK;
	}
	switch (f->type) {
	case FMT_C_BOOL:
		if (!fmt_tv_bool(p, n, &bv))
			return bad_value(s, i, f, e);
		fmt_cb_bool(b, bv);
		return FMT_OK;
	case FMT_C_UTF8: case FMT_C_LARGE_UTF8:
		fmt_cb_bytes(b, f, p, n);
		return FMT_OK;
	case FMT_C_BINARY: {
		uint8_t *tmp = malloc(n / 2 + 1);
		if (!tmp)
			return fmt_fail(e, FMT_IO, "out of memory");
		int ok = unhex(p, n, tmp);
		if (ok)
			fmt_cb_bytes(b, f, tmp, n / 2);
		free(tmp);
		return ok ? FMT_OK : bad_value(s, i, f, e);
	}
	case FMT_C_F16: case FMT_C_F32: case FMT_C_F64:
		if (!fmt_tv_float(p, n, &d) || !narrow_float(fmt_tv_float_narrowable(p, n, d, f->type), f->type, le))
			return bad_value(s, i, f, e);
		fmt_cb_fixed(b, le, fmt_ctype_width(f->type));
		return FMT_OK;
	case FMT_C_TIMESTAMP:
		if (!fmt_tv_timestamp_as(p, n, f, &v))
			return bad_value(s, i, f, e);
		fmt_wr_u64(le, (uint64_t)v);
		fmt_cb_fixed(b, le, 8);
		return FMT_OK;
	case FMT_C_DATE32: {
		int32_t days;
		if (!fmt_tv_date(p, n, &days))
			return bad_value(s, i, f, e);
		fmt_wr_u32(le, (uint32_t)days);
		fmt_cb_fixed(b, le, 4);
		return FMT_OK;
	}
	default: {
		size_t w = fmt_ctype_width(f->type);
		int is_unsigned = f->type >= FMT_C_U8 && f->type <= FMT_C_U64;
		uint64_t u = 0;
		if (f->type == FMT_C_U64) {
			if (!fmt_tv_uint64(p, n, &u))
				return bad_value(s, i, f, e);
		} else {
			if (!fmt_tv_int64(p, n, &v))
				return bad_value(s, i, f, e);
			int bits = (int)w * 8;
			if (is_unsigned ? (v < 0 || (bits < 64 && v >= ((int64_t)1 << bits)))
					: (bits < 64 && (v < -((int64_t)1 << (bits - 1)) || v >= ((int64_t)1 << (bits - 1)))))
				return bad_value(s, i, f, e);
			u = (uint64_t)v;
		}
		fmt_wr_u64(le, u);
		fmt_cb_fixed(b, le, w);
		return FMT_OK;
	}
	}
}

/* put_value with the types met most (and no null) appended inline. */
static inline fmt_kind put_cell(csv_state *s, size_t i, const fmt_field *f, col_builder *b, fmt_err *e)
{
	const field_ref *r = &s->fields[i];
	const char *p = field_ptr(s, i);
	int64_t v;
	double d;
	uint64_t u;
	int bv;
	if ((r->len == 0 && !r->quoted) || s->null_value)
		return put_value(s, i, f, b, e);
	switch (f->type) {
	case FMT_C_I64:
		if (!fmt_tv_int64(p, r->len, &v))
			return bad_value(s, i, f, e);
		fmt_cb_u64(b, (uint64_t)v);
		return FMT_OK;
	case FMT_C_F64:
		if (!fmt_tv_float(p, r->len, &d))
			return bad_value(s, i, f, e);
		memcpy(&u, &d, 8);
		fmt_cb_u64(b, u);
		return FMT_OK;
	case FMT_C_UTF8:
		fmt_cb_utf8(b, f, p, r->len);
		return FMT_OK;
	case FMT_C_BOOL:
		if (!fmt_tv_bool(p, r->len, &bv))
			return bad_value(s, i, f, e);
		fmt_cb_bool1(b, bv);
		return FMT_OK;
	default:
		return put_value(s, i, f, b, e);
	}
}

/* Whether a value that parses as f's type leaves inf, the column's inference, as it is: a
 * boolean, an integer or a number with a fraction seen (fmt_tv_infer_add keeps BOOL, INT and
 * UINT possible for the values that parse as them, and FLOAT for any value fmt_tv_float reads:
 * the text that float_syntax turns down has no float reading either), or text that nothing but
 * text is possible for. */
static int type_settled(const fmt_tv_infer *inf, const fmt_field *f)
{
	return f->type == FMT_C_BOOL || f->type == FMT_C_I64 || f->type == FMT_C_U64 || f->type == FMT_C_F64 ||
	       (inf->seen && !inf->can);
}

/* The record just read into the inference that goes on after the sample: a null in a column
 * that had none fails at once (the schema says not nullable), a value that the column's type
 * cannot hold fails as put_cell parses it. */
static fmt_kind sample_record(csv_state *s, const fmt_schema *schema, fmt_err *e)
{
	for (size_t i = 0; i < s->n_cols; i++) {
		fmt_tv_infer *inf = &s->sample[i];
		if (is_null(s, i)) {
			if (!schema->fields[i].nullable)
				return fmt_fail(e, FMT_SCHEMA, "line %llu, column %zu: a null in a column whose first rows had none",
						(unsigned long long)s->rec_line, i + 1);
		} else if (!type_settled(inf, &schema->fields[i])) {
			if (inf->can)
				fmt_tv_infer_add(inf, field_ptr(s, i), s->fields[i].len);
			else
				inf->seen = 1;
		}
	}
	s->rows_read++;
	return FMT_OK;
}

/* At the end of a sampled read: the schema a whole pass infers is the one given (else the
 * caller starts again), and the rows are counted. */
static fmt_kind sample_held(fmt_table *t, csv_state *s, fmt_err *e)
{
	for (size_t i = 0; i < s->n_cols; i++) {
		fmt_field all = { .name = t->schema.fields[i].name };
		fmt_tv_infer_field(&s->sample[i], &all);
		fmt_kind k = fmt_field_expect(&t->schema.fields[i], &all, e);
		if (k != FMT_OK)
			return k;
	}
	t->n_rows = s->rows = s->rows_read;
	return FMT_OK;
}

fmt_kind fmt_csv_row(void *ctx, const fmt_schema *schema, int *got, fmt_err *e)
{
	csv_state *s = ctx;
	fmt_kind k;
	if ((k = fmt_csv_next_record(s, got, e)) != FMT_OK || !*got)
		return k;
	if ((k = count_check(s, e)) != FMT_OK)
		return k;
	if (s->sample && (k = sample_record(s, schema, e)) != FMT_OK)
		return k;
	for (size_t i = 0; i < s->n_cols && k == FMT_OK; i++)
		k = put_cell(s, i, &schema->fields[i], &s->cols[i], e);
	return k;
}

/* fmt_csv_record_cuts as a fmt_text_cuts_fn. */
static int record_cuts(const void *ctx)
{
	return fmt_csv_record_cuts(ctx);
}

static fmt_kind csv_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	csv_state *s = t->format_state;
	fmt_kind k;
	if (s->par)
		k = fmt_csv_par_next(s, &t->schema, b, done, e);
	else
		k = fmt_text_next_batch(fmt_csv_row, record_cuts, s, s->batch_rows, s->cols, &t->schema, b, done, e);
	if (k == FMT_OK && *done && s->sample)
		k = sample_held(t, s, e);
	return k;
}

static void csv_close(fmt_table *t)
{
	csv_state *s = t->format_state;
	if (!s)
		return;
	fmt_csv_par_free(s);
	fmt_csv_state_free(s);
	free(s);
	t->format_state = NULL;
}

/* ---- writing ---- */

/* For a field of at most 16 bytes: bit 0 set when it holds the delimiter, a quote or a line
 * break (it needs quotes), bit 1 when it holds a quote (one to double). Two overlapping
 * eight-byte words (one zero-padded below eight; a zero byte matches none of the four), each
 * byte equal to c detected as a zero byte of w ^ c*0x0101.. */
static unsigned short_field_specials(const char *p, size_t n, char delim)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	const uint64_t d = ones * (unsigned char)delim, dq = ones * '"', lf = ones * '\n', cr = ones * '\r';
	uint64_t w0 = 0, w1 = 0, q, x;
	if (n >= 8) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + n - 8, 8);
	} else if (n >= 4) { /* two overlapping four-byte loads: a byte seen twice changes nothing */
		uint32_t a, b;
		memcpy(&a, p, 4);
		memcpy(&b, p + n - 4, 4);
		w0 = a | (uint64_t)b << 32;
	} else {
		w0 = (unsigned char)p[0] | (unsigned)(unsigned char)p[n / 2] << 8 | (unsigned)(unsigned char)p[n - 1] << 16;
	}
#define ZERO_BYTE(v) (((v) - ones) & ~(v) & highs)
	q = ZERO_BYTE(w0 ^ dq) | ZERO_BYTE(w1 ^ dq);
	x = q | ZERO_BYTE(w0 ^ d) | ZERO_BYTE(w1 ^ d) | ZERO_BYTE(w0 ^ lf) | ZERO_BYTE(w1 ^ lf) |
	    ZERO_BYTE(w0 ^ cr) | ZERO_BYTE(w1 ^ cr);
#undef ZERO_BYTE
	return (x != 0) | (unsigned)(q != 0) << 1;
}

/* p as one CSV field: quoted (inner quotes doubled) when it holds the delimiter, a quote or a
 * line break, or when it is empty and quote_empty is set. */
static void put_field(fmt_sb *line, const char *p, size_t n, char delim, int quote_empty)
{
	unsigned sp;
	if (n == 0)
		sp = quote_empty ? 1 : 0;
	else if (n <= 16)
		sp = short_field_specials(p, n, delim);
	else
		sp = fmt_csv_special_byte(p, n, delim) < n ? 3 : 0; /* 3: look for quotes */
	if (!sp) {
		fmt_sb_add(line, p, n);
		return;
	}
	if (!(sp & 2)) { /* quoted as it is: one reservation */
		char *at = fmt_sb_reserve(line, n + 2);
		if (!at)
			return;
		at[0] = '"';
		fmt_copy_short(at + 1, p, n);
		at[n + 1] = '"';
		fmt_sb_commit(line, n + 2);
		return;
	}
	fmt_sb_add(line, "\"", 1);
	for (const char *end = p + n; p < end;) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		size_t run = q ? (size_t)(q - p) + 1 : (size_t)(end - p);
		fmt_sb_add(line, p, run);
		if (q)
			fmt_sb_add(line, "\"", 1);
		p += run;
	}
	fmt_sb_add(line, "\"", 1);
}

/* How csv_put_row writes a column: decided once per schema, not per cell. */
enum csv_kind {
	CSV_F64,    /* shortest text, no quoting check */
	CSV_I64,
	CSV_BOOL,
	CSV_PLAIN,  /* fmt_cell_text without a quoting check: other numbers, dates, timestamps */
	CSV_UTF8,   /* the bytes, quoted when needed */
	CSV_LARGE_UTF8,
	CSV_OTHER   /* fmt_cell_text, quoted when needed */
};

typedef struct csv_out {
	const fmt_schema *s;
	char delim;
	unsigned char *kind; /* enum csv_kind per column */
} csv_out;

static int null_at(const fmt_column *c, uint64_t row)
{
	return c->validity && !((c->validity[row >> 3] >> (row & 7)) & 1);
}

static void put_text(fmt_sb *line, const fmt_column *c, int large, uint64_t row, char delim)
{
	uint64_t a, z;
	if (large) {
		int64_t v[2];
		memcpy(v, (const uint8_t *)c->offsets + row * 8, 16);
		a = (uint64_t)v[0];
		z = (uint64_t)v[1];
	} else {
		int32_t v[2];
		memcpy(v, (const uint8_t *)c->offsets + row * 4, 8);
		a = (uint64_t)(int64_t)v[0];
		z = (uint64_t)(int64_t)v[1];
	}
	/* fmt_table_next checked the offsets: in order and inside the values */
	put_field(line, (const char *)c->values + a, (size_t)(z - a), delim, 1);
}

/* One row as a CSV line (fmt_text_put_row_fn). */
static int csv_put_row(const void *ctx, const fmt_batch *b, uint64_t row, fmt_sb *line, fmt_sb *cell)
{
	const csv_out *o = ctx;
	const fmt_schema *s = o->s;
	/* one reservation for the numbers of the row (FMT_SHORTEST_MAX + 1 bytes each at most),
	 * made again after a text, which takes its own room and may move the buffer */
	size_t room = 0;
	for (size_t i = 0; i < s->n_fields; i++) {
		const fmt_column *c = &b->columns[i];
		if (room < FMT_SHORTEST_MAX + 1) {
			if (!fmt_sb_reserve(line, (s->n_fields - i) * (FMT_SHORTEST_MAX + 1)))
				return 0;
			room = (s->n_fields - i) * (FMT_SHORTEST_MAX + 1);
		}
		room -= FMT_SHORTEST_MAX + 1;
		char *at = line->p + line->len;
		if (i)
			*at++ = o->delim, line->len++;
		if (null_at(c, row))
			continue;
		switch (o->kind[i]) {
		case CSV_F64: {
			uint64_t u = fmt_rd_u64(c->values + 8 * row);
			double d;
			memcpy(&d, &u, sizeof d);
			line->len += fmt_shortest_f64(d, at);
			break;
		}
		case CSV_I64: {
			int64_t v = (int64_t)fmt_rd_u64(c->values + 8 * row);
			uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
			*at = '-';
			at += v < 0;
			line->len = (size_t)(fmt_put_digits(at, m, fmt_digit_count(m)) - line->p);
			break;
		}
		case CSV_BOOL:
			if ((c->values[row >> 3] >> (row & 7)) & 1)
				memcpy(at, "true", 5), line->len += 4;
			else
				memcpy(at, "false", 6), line->len += 5;
			break;
		case CSV_PLAIN:
			fmt_cell_text(&s->fields[i], c, row, line);
			room = 0;
			break;
		case CSV_UTF8: case CSV_LARGE_UTF8:
			put_text(line, c, o->kind[i] == CSV_LARGE_UTF8, row, o->delim);
			room = 0;
			break;
		default:
			cell->len = 0;
			fmt_cell_text(&s->fields[i], c, row, cell);
			put_field(line, cell->p ? cell->p : "", cell->len, o->delim, 1);
			room = 0;
		}
	}
	fmt_sb_add(line, "\n", 1);
	return !cell->oom && !line->oom;
}

static fmt_kind csv_write(fmt_table *in, fmt_sink *k, const fmt_write_opts *wo, fmt_err *e)
{
	const fmt_schema cols = in->schema; /* not &in->schema: fmt_text_write's note */
	const fmt_schema *s = &cols;
	const csv_opts *opts = csv_opts_of(wo ? wo->options : NULL);
	csv_out o = { s, opts->delimiter ? opts->delimiter : ',', NULL };
	fmt_sb head = { 0 };
	fmt_kind r;
	const fmt_field *u = fmt_schema_unsupported(s);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	/* numbers and booleans go without a look for what needs quoting when the delimiter cannot
	 * occur in their text */
	char d = o.delim;
	int delim_in_numbers = (d >= '0' && d <= '9') || (d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') ||
			       d == '.' || d == '-' || d == '+';
	if (!(o.kind = calloc(s->n_fields ? s->n_fields : 1, 1)))
		return fmt_fail(e, FMT_IO, "out of memory");
	/* dates and timestamps: digits, '-', ':', 'T', '.' and 'Z' */
	int delim_in_times = (d >= '0' && d <= '9') || d == '-' || d == ':' || d == 'T' || d == '.' || d == 'Z';
	for (size_t i = 0; i < s->n_fields; i++) {
		fmt_ctype t = s->fields[i].type;
		int plain = !delim_in_numbers && t >= FMT_C_BOOL && t <= FMT_C_F64; /* enum order */
		plain |= !delim_in_times && (t == FMT_C_DATE32 || t == FMT_C_TIMESTAMP);
		o.kind[i] = t == FMT_C_UTF8 ? CSV_UTF8 : t == FMT_C_LARGE_UTF8 ? CSV_LARGE_UTF8
			  : !plain ? CSV_OTHER : t == FMT_C_F64 ? CSV_F64 : t == FMT_C_I64 ? CSV_I64
			  : t == FMT_C_BOOL ? CSV_BOOL : CSV_PLAIN;
		if (i)
			fmt_sb_put(&head, &d, 1);
		put_field(&head, s->fields[i].name, strlen(s->fields[i].name), d, 1);
	}
	fmt_sb_put(&head, "\n", 1);
	r = head.oom ? fmt_fail(e, FMT_IO, "out of memory")
		     : fmt_text_write(in, k, head.p, head.len, csv_put_row, &o, wo ? wo->threads : 1, e);
	free(o.kind);
	fmt_sb_free(&head);
	return r;
}

static int can_hold(const fmt_field *f)
{
	return f->type != FMT_C_OTHER;
}

static int parse_delimiter(void *v, const char *arg, fmt_err *e)
{
	csv_opts *o = v;
	if (!strcmp(arg, "tab"))
		o->delimiter = '\t';
	else if (strlen(arg) == 1 && arg[0] != '"' && arg[0] != '\n' && arg[0] != '\r')
		o->delimiter = arg[0];
	else
		return fmt_fail(e, FMT_USAGE, "--delimiter takes one character (or 'tab'), not a quote or a newline"), -1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_no_header(void *v, const char *arg, fmt_err *e)
{
	(void)arg, (void)e;
	((csv_opts *)v)->no_header = 1;
	return FMT_DRVOPT_GIVEN;
}

static int parse_null_value(void *v, const char *arg, fmt_err *e)
{
	(void)e;
	((csv_opts *)v)->null_value = arg;
	return FMT_DRVOPT_GIVEN;
}

static int parse_schema(void *v, const char *arg, fmt_err *e)
{
	(void)e;
	((csv_opts *)v)->schema_file = arg;
	return FMT_DRVOPT_GIVEN;
}

static fmt_kind load_schema(void *v, fmt_err *e)
{
	csv_opts *o = v;
	return o->schema_file ? fmt_drvopt_load_json(o->schema_file, "--schema", &o->schema, e) : FMT_OK;
}

static void free_schema(void *v)
{
	csv_opts *o = v;
	json_decref(o->schema);
	o->schema = NULL;
}

static const fmt_drvopt csv_option_list[] = {
	{ "delimiter", "C", "field delimiter (default: detected from , tab ;), 'tab'\nfor a tab", FMT_DRVOPT_READ | FMT_DRVOPT_WRITE,
	  .parse = parse_delimiter },
	{ "no-header", NULL, "no header row (columns column_1, column_2, ...)", FMT_DRVOPT_READ, .parse = parse_no_header },
	{ "null-value", "S", "fields equal to S are null (empty ones always are)", FMT_DRVOPT_READ,
	  .parse = parse_null_value },
	{ "schema", "FILE", "force column types, {\"column\": \"int32\", ...}", FMT_DRVOPT_READ,
	  FMT_DRVOPT_FILE, "*.json", .parse = parse_schema },
	{ .name = NULL }
};

static const fmt_drvopts csv_options = {
	.list = csv_option_list, .size = sizeof(csv_opts), .load = load_schema, .free = free_schema,
};

const fmt_table_driver fmt_table_driver_csv = {
	.name = "csv",
	.writes_text = 1,
	.extension = ".csv",
	.probe = probe,
	.open = csv_open,
	.next = csv_next,
	.verify = fmt_table_verify_rows,
	.write = csv_write,
	.can_hold = can_hold,
	.close = csv_close,
	.options = &csv_options,
};
