/* Arrow IPC files (.arrow, .feather v2) and streams (.arrows) as table drivers. Either driver
 * reads both layouts; they differ in what they write. */
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/out.h"
#include "fmt/registry.h"

typedef struct arrow_state {
	fmt_ipc_reader r;
	fmt_ipc_passed passed; /* the mapped file's bytes read whose pages may be resident */
	fmt_ipc_survey survey; /* the batches' headers, read at open */
	int surveyed;          /* 0: a header the reading will refuse (it says why) */
	fmt_batch_slicer slicer; /* a record batch over FMT_SLICE_OVER, handed on in slices */
} arrow_state;

static int probe_file(const uint8_t *head, size_t n, uint64_t size)
{
	(void)size;
	return n >= 8 && memcmp(head, "ARROW1", 6) == 0 ? 100 : 0;
}

static int probe_stream(const uint8_t *head, size_t n, uint64_t size)
{
	(void)size;
	return !probe_file(head, n, size) && fmt_ipc_probe(head, n) ? 80 : 0;
}

static fmt_kind arrow_open(fmt_table *t, fmt_err *e)
{
	const uint8_t *d;
	arrow_state *s = calloc(1, sizeof *s);
	if (!s)
		return fmt_fail(e, FMT_IO, "out of memory");
	t->format_state = s;
	fmt_kind k = fmt_source_view(&t->source, 0, t->source.size, &d, e);
	if (k == FMT_OK && t->source.size > SIZE_MAX)
		k = fmt_fail(e, FMT_IO, "file too large to map");
	if (k == FMT_OK)
		k = fmt_ipc_open(&s->r, d, (size_t)t->source.size, e);
	if (k != FMT_OK) {
		free(s);
		t->format_state = NULL;
		return k;
	}
	s->r.source = &t->source;
	for (size_t i = 0; i < s->r.schema.n_fields && k == FMT_OK; i++)
		k = fmt_schema_add_field(&t->schema, &s->r.schema.fields[i], e);
	if (k != FMT_OK)
		return k;
	s->surveyed = fmt_ipc_survey_batches(&s->r, &s->survey);
	t->n_rows = s->surveyed ? s->survey.rows : FMT_ROWS_UNKNOWN;
	return FMT_OK;
}

/* Where the buffers of the batch read last lie that are read from a file: a compressed batch's
 * spill file (fmt_ipc_next), else the file's mapping. */
static const fmt_source *batch_source(const fmt_table *t, const arrow_state *s)
{
	return s->r.spilled ? &s->r.spill : &t->source;
}

static fmt_kind arrow_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	arrow_state *s = t->format_state;
	int sliced;
	*done = 0;
	fmt_kind k = fmt_batch_slicer_next(&s->slicer, &s->r.schema, batch_source(t, s), b, &sliced, e);
	if (k != FMT_OK || sliced)
		return k;
	/* The last batch is done with: the pages of the messages read leave the resident set once
	 * they are a MiB, so that reading holds a batch and a MiB, not the file (a madvise a batch
	 * was 60 % of the CPU of a file of 30,000 small batches to CSV). */
	fmt_ipc_drop_passed(&s->r, &s->passed, 0);
	k = fmt_ipc_next(&s->r, b, done, e);
	if (k != FMT_OK || *done)
		return k;
	/* a big record batch goes on in slices read from the file, none of its pages mapped but
	 * those its decoding touched, which leave now */
	if (s->r.spilled) /* its buffers in the spill file, which the next read unmaps */
		k = fmt_batch_slicer_take_out_of(&s->slicer, &s->r.schema, batch_source(t, s), b, e);
	else
		k = fmt_batch_slicer_take(&s->slicer, &s->r.schema, &t->source, b, e);
	if (k == FMT_OK && s->slicer.whole)
		fmt_source_drop(&t->source, s->r.data + s->r.last_lo, s->r.last_hi - s->r.last_lo);
	return k;
}

static void arrow_close(fmt_table *t)
{
	arrow_state *s = t->format_state;
	if (s) {
		fmt_batch_slicer_free(&s->slicer);
		fmt_ipc_close(&s->r);
		free(s);
	}
	t->format_state = NULL;
}

/* ---- writing ---- */

typedef struct arrow_write_opts {
	int codec, level;      /* FMT_IPC_*, 0: the codec's default level */
} arrow_write_opts;

/* The codecs as -c names them, in the order of FMT_IPC_UNCOMPRESSED, FMT_IPC_LZ4_FRAME,
 * FMT_IPC_ZSTD, with their highest level. */
static const fmt_codec_name codec_names[] = { { "none", 0 }, { "lz4", 12 }, { "zstd", 22 } };
#define N_CODECS (sizeof codec_names / sizeof codec_names[0])

static int parse_compression(void *v, const char *arg, fmt_err *e)
{
	arrow_write_opts *o = v;
	int i = fmt_codec_name_parse(arg, codec_names, N_CODECS, &o->level);
	if (i < 0)
		return fmt_fail(e, FMT_USAGE, "--compression takes none (default), lz4[:1-12], zstd[:1-22] or zstd-max "
				"for Arrow IPC"), -1;
	o->codec = i;
	return i == FMT_IPC_UNCOMPRESSED ? FMT_DRVOPT_NEUTRAL : FMT_DRVOPT_GIVEN;
}

static const fmt_drvopt arrow_option_list[] = {
	{ "compression", "CODEC", "record batches compressed buffer by buffer: none (default),\nlz4[:1-12] (LZ4 frames), "
	  "zstd[:1-22], zstd-max", FMT_DRVOPT_WRITE, FMT_DRVOPT_WORDS, "none lz4 zstd zstd-max", .parse = parse_compression },
	{ .name = NULL }
};

static const fmt_drvopts arrow_options = { .list = arrow_option_list, .size = sizeof(arrow_write_opts) };

static fmt_kind write_ipc(fmt_table *in, fmt_sink *k, int file, const fmt_write_opts *o, fmt_err *e)
{
	const arrow_write_opts *given = fmt_drvopt_values(o ? o->options : NULL, &arrow_options);
	fmt_ipc_writer w;
	fmt_sb sb = { 0 };
	fmt_kind r = fmt_ipc_writer_begin(&w, &in->schema, file, &sb, e);
	if (r != FMT_OK)
		return r;
	if (given) {
		w.codec = given->codec;
		w.level = given->level;
	}
	for (;;) {
		fmt_batch b;
		int done;
		if ((r = fmt_sink_write(k, sb.p, sb.len, e)) != FMT_OK)
			break;
		sb.len = 0;
		if ((r = fmt_table_next(in, &b, &done, e)) != FMT_OK)
			break;
		if (done) {
			fmt_batch_free(&b);
			r = fmt_ipc_writer_end(&w, &sb, e);
			if (r == FMT_OK)
				r = fmt_sink_write(k, sb.p, sb.len, e);
			fmt_sb_free(&sb);
			return r;
		}
		r = fmt_ipc_writer_batch(&w, &b, &sb, e);
		fmt_batch_free(&b);
		if (r != FMT_OK)
			break;
	}
	fmt_ipc_writer_free(&w);
	fmt_sb_free(&sb);
	return r;
}

static fmt_kind write_file(fmt_table *in, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	return write_ipc(in, k, 1, o, e);
}

static fmt_kind write_stream(fmt_table *in, fmt_sink *k, const fmt_write_opts *o, fmt_err *e)
{
	return write_ipc(in, k, 0, o, e);
}

/* The codec of the record batches as fmt-convert's -c names it, "mixed" when they differ. */
static const char *batch_codec(const fmt_ipc_survey *s)
{
	for (size_t i = 0; i < N_CODECS; i++)
		if (s->by_codec[i] == s->batches)
			return codec_names[i].name;
	return "mixed";
}

static json_t *describe(const fmt_table *t)
{
	const arrow_state *s = t->format_state;
	json_t *o = json_object();
	json_object_set_new(o, "ipc", json_string(s->r.is_file ? "file" : "stream"));
	if (s->surveyed) {
		json_object_set_new(o, "record_batches", fmt_json_u64(s->survey.batches));
		if (s->survey.batches)
			json_object_set_new(o, "compression", json_string(batch_codec(&s->survey)));
	} else if (s->r.is_file) {
		json_object_set_new(o, "record_batches", json_integer(s->r.n_blocks));
	}
	return o;
}

static int can_hold(const fmt_field *f)
{
	return f->type != FMT_C_OTHER;
}

/* Feather v2 is the IPC file format under another name. */
static const char *const file_extensions[] = { ".feather", NULL };

const fmt_table_driver fmt_table_driver_arrow = {
	.name = "arrow",
	.extension = ".arrow",
	.more_extensions = file_extensions,
	.probe = probe_file,
	.open = arrow_open,
	.next = arrow_next,
	.verify = fmt_table_verify_rows,
	.write = write_file,
	.options = &arrow_options,
	.can_hold = can_hold,
	.close = arrow_close,
	.describe = describe,
};

const fmt_table_driver fmt_table_driver_arrow_stream = {
	.name = "arrow-stream",
	.extension = ".arrows",
	.probe = probe_stream,
	.open = arrow_open,
	.next = arrow_next,
	.verify = fmt_table_verify_rows,
	.write = write_stream,
	.options = &arrow_options,
	.can_hold = can_hold,
	.close = arrow_close,
	.describe = describe,
};
