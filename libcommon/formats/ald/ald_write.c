/* Writing .ald: header and card patched once the payload is known, the payload compressed as
 * it is produced (bounded memory), STREAMING chunks spilled to a temporary file until the index
 * that precedes them is complete, and the CRC-32 trailer kept over the bytes after the card as
 * they are written (the sink's tap), combined with the header's and card's read back. On two
 * threads or more the payload's IPC bytes are compressed and written on a thread of their own
 * while the caller hashes them and encodes the next batch: the same bytes in the same order into
 * the one compression stream, so the file is the same for any -T. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/arrow.h"
#include "fmt/checked.h"
#include "fmt/crypto.h"
#include "fmt/dataset.h"
#include "fmt/thread.h"
#include "compress.h"
#include "ald_internal.h"

#define HEADER 32
#define PIPE_STACK (1u << 20)
/* The payload's zstd frames (level 3) each compress this much of the IPC stream. */
#define ALD_ZSTD_FRAME_INPUT (1u << 20)

/* The payload thread: one buffer of IPC bytes at a time (the caller fills and hashes the other). */
typedef struct pipe_state {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	fmt_sb job;                /* bytes being compressed and written */
	int busy, stop;
	fmt_kind k;                /* the first failure, e */
	fmt_err e;
} pipe_state;

typedef struct writer {
	const ald_opts *o;
	const fmt_schema *schema;
	fmt_sink *k;
	ald_enc *enc;              /* encrypting: the payload goes through it */
	FILE *spill;               /* STREAMING: chunk bytes until the index is written */
	fmt_compressor comp;
	fmt_sha256 sha;
	uint32_t crc;              /* of the bytes after the card (the sink's tap) */
	uint64_t stored, raw, rows;
	/* STREAMING */
	ald_chunk *chunks;
	size_t n_chunks, cap_chunks;
	uint64_t chunk_rows, chunk_stored, chunk_raw;
	fmt_ipc_writer ipc;
	int ipc_open;
	fmt_sb sb;
	const struct fmt_ed25519_secret *sign; /* the signature block's key, or NULL */
	pipe_state *pipe;          /* NULL: the payload is compressed on the calling thread */
} writer;

#define CHUNK_SPILL "a temporary file for the chunks"

static fmt_kind emit(void *ctx, const uint8_t *p, size_t n, fmt_err *e)
{
	writer *w = ctx;
	w->stored += n;
	w->chunk_stored += n;
	if (!w->spill)
		return w->enc ? fmt_ald_enc_write(w->enc, w->k, p, n, e) : fmt_sink_write(w->k, p, n, e);
	return fmt_temp_file_write(w->spill, CHUNK_SPILL, p, n, e);
}

static fmt_kind hash_and_compress(writer *w, const fmt_sb *sb, fmt_err *e)
{
	fmt_kind k = fmt_sha256_update(&w->sha, sb->p, sb->len, e);
	if (k == FMT_OK)
		k = fmt_compressor_feed(&w->comp, (const uint8_t *)sb->p, sb->len, e);
	return k;
}

static void *pipe_thread(void *arg)
{
	writer *w = arg;
	pipe_state *p = w->pipe;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->busy && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->busy)
			break;
		int failed = p->k != FMT_OK;
		pthread_mutex_unlock(&p->lock);
		fmt_err e;
		fmt_kind k = failed ? FMT_OK : fmt_compressor_feed(&w->comp, (const uint8_t *)p->job.p, p->job.len, &e);
		pthread_mutex_lock(&p->lock);
		if (k != FMT_OK) {
			p->k = k;
			p->e = e;
		}
		p->busy = 0;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Wait for the thread's buffer to be done (the caller holds p->lock). */
static fmt_kind pipe_wait_locked(pipe_state *p, fmt_err *e)
{
	while (p->busy)
		pthread_cond_wait(&p->cond, &p->lock);
	if (p->k != FMT_OK)
		*e = p->e;
	return p->k;
}

/* Everything handed over is compressed and written: the compressor, the sink and the counts
 * it updates are the caller's again. */
static fmt_kind pipe_sync(writer *w, fmt_err *e)
{
	if (!w->pipe)
		return FMT_OK;
	pthread_mutex_lock(&w->pipe->lock);
	fmt_kind k = pipe_wait_locked(w->pipe, e);
	pthread_mutex_unlock(&w->pipe->lock);
	return k;
}

/* The payload thread, when there are threads to spare; without one (it could not start) the
 * caller compresses. */
static fmt_kind pipe_start(writer *w, int threads, fmt_err *e)
{
	if (threads < 2)
		return FMT_OK;
	pipe_state *p = calloc(1, sizeof *p);
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	w->pipe = p;
	if (fmt_thread_start(&p->thread, PIPE_STACK, pipe_thread, w) != 0) {
		w->pipe = NULL;
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p);
	}
	return FMT_OK;
}

static void pipe_stop(writer *w)
{
	pipe_state *p = w->pipe;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	fmt_sb_free(&p->job);
	free(p);
	w->pipe = NULL;
}

/* Hand w->sb to the payload thread and take its finished buffer (kept allocated) to fill next. */
static fmt_kind pipe_hand(writer *w, fmt_err *e)
{
	pipe_state *p = w->pipe;
	pthread_mutex_lock(&p->lock);
	fmt_kind k = pipe_wait_locked(p, e);
	if (k == FMT_OK) {
		fmt_sb done = p->job;
		p->job = w->sb;
		w->sb = done;
		p->busy = 1;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return k;
}

/* Fewer bytes than this are compressed on the calling thread: handing them over and waiting for
 * them costs more than compressing them (two thread wake-ups; a STREAMING chunk of 10 rows is
 * handed three buffers of a few hundred bytes: 30,000 such chunks took 1.7 s on two threads,
 * 0.46 s on one). */
#define PIPE_LEAST (64u << 10)

/* Uncompressed IPC bytes in w->sb: hash, count, compress (here or on the payload thread), and
 * empty the buffer. */
static fmt_kind drain(writer *w, fmt_err *e)
{
	if (w->sb.oom)
		return fmt_fail(e, FMT_IO, "out of memory");
	w->raw += w->sb.len;
	w->chunk_raw += w->sb.len;
	fmt_kind k;
	if (w->pipe && w->sb.len >= PIPE_LEAST) { /* the hash here: compressing alone keeps the payload
						   * thread the busier one */
		k = fmt_sha256_update(&w->sha, w->sb.p, w->sb.len, e);
		if (k == FMT_OK)
			k = pipe_hand(w, e);
	} else { /* once the thread has done what it holds: the compressor takes the bytes in order */
		k = pipe_sync(w, e);
		if (k == FMT_OK)
			k = hash_and_compress(w, &w->sb, e);
	}
	w->sb.len = 0;
	return k;
}

static fmt_kind stream_begin(writer *w, fmt_err *e)
{
	fmt_kind k = fmt_ipc_writer_begin(&w->ipc, w->schema, 0, &w->sb, e);
	if (k != FMT_OK)
		return k;
	w->ipc_open = 1;
	w->chunk_rows = w->chunk_stored = w->chunk_raw = 0;
	return drain(w, e);
}

static fmt_kind add_chunk(writer *w, fmt_err *e)
{
	if (w->chunk_stored > UINT32_MAX || w->chunk_raw > UINT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "a chunk above 4 GiB does not fit the chunk index (use a smaller --chunk-rows)");
	if (fmt_grow_array(&w->chunks, &w->cap_chunks, w->n_chunks + 1, sizeof *w->chunks, 64))
		return fmt_fail(e, FMT_IO, "out of memory");
	ald_chunk *c = &w->chunks[w->n_chunks];
	c->row_offset = w->rows - w->chunk_rows;
	c->num_rows = (uint32_t)w->chunk_rows;
	c->byte_offset = w->stored - w->chunk_stored;
	c->csize = (uint32_t)w->chunk_stored;
	c->usize = (uint32_t)w->chunk_raw;
	w->n_chunks++;
	return FMT_OK;
}

static fmt_kind stream_end(writer *w, fmt_err *e)
{
	w->ipc_open = 0;
	fmt_kind k = fmt_ipc_writer_end(&w->ipc, &w->sb, e);
	if (k == FMT_OK)
		k = drain(w, e);
	if (k == FMT_OK)
		k = pipe_sync(w, e);
	if (k == FMT_OK)
		k = fmt_compressor_end(&w->comp, e);
	if (k == FMT_OK && w->spill)
		k = add_chunk(w, e);
	return k;
}

static fmt_kind put_batch(writer *w, const fmt_batch *b, fmt_err *e)
{
	fmt_kind k = fmt_ipc_writer_batch(&w->ipc, b, &w->sb, e);
	if (k == FMT_OK)
		k = drain(w, e);
	w->rows += b->n_rows;
	w->chunk_rows += b->n_rows;
	return k;
}

/* A batch into the payload; with STREAMING cut at chunk boundaries, a new IPC stream each. */
static fmt_kind add_batch(writer *w, const fmt_batch *b, fmt_err *e)
{
	if (!w->spill)
		return b->n_rows ? put_batch(w, b, e) : FMT_OK;
	uint64_t at = 0;
	while (at < b->n_rows) {
		fmt_kind k;
		if (!w->ipc_open && (k = stream_begin(w, e)) != FMT_OK)
			return k;
		uint64_t take = b->n_rows - at, room = w->o->chunk_rows - w->chunk_rows;
		if (take > room)
			take = room;
		if (at == 0 && take == b->n_rows) {
			k = put_batch(w, b, e);
		} else {
			fmt_batch part;
			k = fmt_batch_slice(w->schema, b, at, take, &part, e);
			if (k == FMT_OK) {
				k = put_batch(w, &part, e);
				fmt_batch_free(&part);
			}
		}
		if (k == FMT_OK && w->chunk_rows == w->o->chunk_rows)
			k = stream_end(w, e);
		if (k != FMT_OK)
			return k;
		at += take;
	}
	return FMT_OK;
}

static fmt_kind schema_block(const fmt_schema *s, fmt_sb *out, fmt_err *e)
{
	fmt_ipc_writer w;
	fmt_kind k = fmt_ipc_writer_begin(&w, s, 0, out, e);
	if (k == FMT_OK)
		k = fmt_ipc_writer_end(&w, out, e);
	if (k == FMT_OK && out->len > UINT16_MAX)
		k = fmt_fail(e, FMT_UNSUPPORTED, "the schema block is %zu bytes; the header holds at most 65535",
			     out->len);
	return k;
}

static fmt_kind put_spilled(void *ctx, const void *p, size_t n, fmt_err *e)
{
	writer *w = ctx;
	return w->enc ? fmt_ald_enc_write(w->enc, w->k, p, n, e) : fmt_sink_write(w->k, p, n, e);
}

static fmt_kind copy_spill(writer *w, fmt_err *e)
{
	return fmt_temp_file_replay(w->spill, CHUNK_SPILL, put_spilled, w, e);
}

static fmt_kind write_index(writer *w, fmt_err *e)
{
	uint8_t n[4], entry[28];
	fmt_wr_u32(n, (uint32_t)w->n_chunks);
	fmt_kind k = fmt_sink_write(w->k, n, 4, e);
	for (size_t i = 0; i < w->n_chunks && k == FMT_OK; i++) {
		const ald_chunk *c = &w->chunks[i];
		fmt_wr_u64(entry, c->row_offset);
		fmt_wr_u32(entry + 8, c->num_rows);
		fmt_wr_u64(entry + 12, c->byte_offset);
		fmt_wr_u32(entry + 20, c->csize);
		fmt_wr_u32(entry + 24, c->usize);
		k = fmt_sink_write(w->k, entry, sizeof entry, e);
	}
	return k;
}

static fmt_kind finish(writer *w, size_t meta_len, uint16_t schema_len,
		       uint8_t flags, fmt_err *e)
{
	const ald_opts *o = w->o;
	uint8_t h[HEADER], digest[FMT_SHA256_LEN];
	char hex[FMT_SHA256_HEX + 1];
	fmt_kind k = fmt_sha256_final(&w->sha, digest, e);
	if (k != FMT_OK)
		return k;
	if (w->stored > UINT32_MAX || w->raw > UINT32_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "the payload is above 4 GiB, which the header's 32-bit sizes cannot hold");
	memcpy(h, "ALDF", 4);
	h[4] = 1;
	h[5] = 2;
	fmt_wr_u16(h + 6, o->dataset_type ? o->dataset_type : 1);
	fmt_wr_u32(h + 8, (uint32_t)meta_len);
	fmt_wr_u32(h + 12, (uint32_t)w->stored);
	fmt_wr_u32(h + 16, (uint32_t)w->raw);
	h[20] = (uint8_t)o->compression;
	h[21] = flags;
	fmt_wr_u16(h + 22, schema_len);
	fmt_wr_u64(h + 24, w->rows);
	if ((k = fmt_sink_pwrite(w->k, 0, h, HEADER, e)) != FMT_OK)
		return k;
	if (!o->compat_alimentar) {
		uint8_t *meta;
		size_t n;
		fmt_hex(digest, FMT_SHA256_LEN, hex);
		if ((k = fmt_card_encode(o->card, hex, 0, &meta, &n, e)) != FMT_OK)
			return k;
		if (n != meta_len)
			k = fmt_fail(e, FMT_INTERNAL, "card changed size when the digest was filled in");
		else
			k = fmt_sink_pwrite(w->k, HEADER, meta, n, e);
		free(meta);
		if (k != FMT_OK)
			return k;
	}
	if (w->sign && (k = fmt_ald_append_signature(w->k, w->sign, e)) != FMT_OK)
		return k;
	return fmt_ald_sink_append_crc(w->k, o->compat_alimentar, &w->crc, e);
}

/* The value of the input's metadata key, or NULL. */
static const char *carried(const fmt_schema *s, const char *key)
{
	for (size_t i = 0; i < s->n_meta; i++)
		if (strcmp(s->meta[i].key, key) == 0)
			return s->meta[i].value;
	return NULL;
}

/* The dataset type the input carries (FMT_ALD_TYPE_KEY) into opts when no --type is given. */
static fmt_kind carried_type(const fmt_schema *s, ald_opts *opts, fmt_err *e)
{
	const char *name = carried(s, FMT_ALD_TYPE_KEY);
	if (opts->dataset_type || !name)
		return FMT_OK;
	int id = fmt_ald_type_by_name(name);
	if (id < 0)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the input's %s metadata names no dataset type: '%.64s'",
				FMT_ALD_TYPE_KEY, name);
	opts->dataset_type = (uint16_t)id;
	return FMT_OK;
}

/* "/a, /b, /c, /d and 5 more" of the pointers in nonfinite (FMT_ALD_CARD_NONFINITE_KEY's
 * {"count","at"}) into b; *count how many. A value that is no such object (a bare pointer, as
 * fmtkit 0.x wrote it there) is taken as one pointer. */
static void nonfinite_where(const char *nonfinite, fmt_sb *b, uint64_t *count)
{
	enum { SHOWN = 4 };
	json_t *v = json_loads(nonfinite, 0, NULL), *at = json_object_get(v, "at"), *x;
	json_int_t n = json_integer_value(json_object_get(v, "count"));
	size_t i, shown = json_array_size(at) < SHOWN ? json_array_size(at) : SHOWN;
	if (!json_is_array(at) || n < (json_int_t)json_array_size(at) || !shown) {
		json_decref(v);
		*count = 1;
		fmt_sb_put(b, nonfinite, strnlen(nonfinite, 200));
		return;
	}
	*count = (uint64_t)n;
	json_array_foreach(at, i, x) {
		if (i == shown)
			break;
		if (i)
			fmt_sb_puts(b, i + 1 == *count ? " and " : ", ");
		const char *p = json_is_string(x) ? json_string_value(x) : "?";
		fmt_sb_put(b, p, strnlen(p, 200));
	}
	if (*count > shown) {
		fmt_sb_puts(b, " and ");
		fmt_sb_u64(b, *count - shown);
		fmt_sb_puts(b, " more");
	}
	json_decref(v);
}

static fmt_kind refuse_nonfinite(const char *nonfinite, fmt_err *e)
{
	fmt_sb where = { 0 };
	uint64_t n;
	nonfinite_where(nonfinite, &where, &n);
	fmt_kind k = n == 1 ? fmt_fail(e, FMT_UNSUPPORTED, "the input's card holds a NaN or infinite float at %s, which its "
				       "JSON (%s) can only keep as a string: not carried into a new .ald (--card FILE "
				       "gives it another card)", where.p ? where.p : "?", FMT_ALD_CARD_KEY)
			    : fmt_fail(e, FMT_UNSUPPORTED, "the input's card holds %llu NaN or infinite floats, at %s, which "
				       "its JSON (%s) can only keep as strings: not carried into a new .ald (--card "
				       "FILE gives it another card)", (unsigned long long)n, where.p ? where.p : "?",
				       FMT_ALD_CARD_KEY);
	fmt_sb_free(&where);
	return k;
}

/* --compat alimentar: the card keys its positional array leaves out, told to the caller. */
static void warn_dropped(const json_t *card, const fmt_write_opts *wo)
{
	char names[FMT_ERR_MSG_MAX / 2], msg[FMT_ERR_MSG_MAX];
	size_t n = card && wo && wo->warning ? fmt_card_array_dropped(card, names, sizeof names) : 0;
	if (!n)
		return;
	snprintf(msg, sizeof msg, "--compat alimentar: the card's %s %s left out (alimentar's card array holds only "
		 "name, version, license, tags, description, citation and created_at)", names, n == 1 ? "is" : "are");
	wo->warning(wo->warning_ctx, msg);
}

static fmt_kind write_ald(fmt_table *in, fmt_sink *k, const fmt_write_opts *wo, json_t *carried_card, fmt_err *e)
{
	ald_enc enc;
	int encrypting = 0;
	ald_opts opts;
	fmt_ald_opts_of(wo, &opts);
	fmt_kind tk = carried_type(&in->schema, &opts, e);
	if (tk != FMT_OK)
		return tk;
	const char *nonfinite = carried(&in->schema, FMT_ALD_CARD_NONFINITE_KEY);
	if (!opts.card && carried_card && nonfinite)
		return refuse_nonfinite(nonfinite, e);
	if (!opts.card)
		opts.card = carried_card;
	writer w = { .o = &opts, .schema = &in->schema, .k = k, .sign = wo ? wo->keys.ed25519_secret : NULL };
	const ald_opts *o = w.o;
	fmt_sb block = { 0 };
	uint8_t *meta = NULL;
	size_t meta_len = 0;
	uint8_t flags = (uint8_t)((o->chunk_rows ? FMT_ALD_STREAMING : 0) | (w.sign ? FMT_ALD_SIGNED : 0));
	static const char zero_hex[FMT_SHA256_HEX + 1] =
		"0000000000000000000000000000000000000000000000000000000000000000";
	fmt_kind r;
	if (k->is_stdout)
		return fmt_fail(e, FMT_USAGE, ".ald cannot be written to %s (its header is completed last)",
				fmt_sink_stream_name(k));
	if ((r = fmt_ald_native_check_opts(o, e)) != FMT_OK)
		return r;
	const fmt_field *u = fmt_schema_unsupported(&in->schema);
	if (u)
		return fmt_fail(e, FMT_UNSUPPORTED, "column '%s' has type %s, which fmtkit does not convert",
				u->name, u->type_name);
	if ((r = fmt_ald_enc_begin(&enc, wo ? &wo->keys : NULL, &encrypting, e)) != FMT_OK)
		return r;
	if (encrypting) {
		w.enc = &enc;
		flags |= FMT_ALD_ENCRYPTED;
	}
	if (encrypting && o->trueno_native) { /* its arrays are read in place through the mapping */
		r = fmt_fail(e, FMT_USAGE, "TRUENO_NATIVE arrays are read in place and cannot be encrypted: "
			     "give --trueno-native or an encryption option, not both");
		goto out;
	}
	if ((r = fmt_card_encode(o->card, o->compat_alimentar ? NULL : zero_hex, o->compat_alimentar, &meta,
				 &meta_len, e)) != FMT_OK)
		goto out;
	if (o->compat_alimentar)
		warn_dropped(o->card, wo);
	if ((r = schema_block(&in->schema, &block, e)) != FMT_OK)
		goto out;
	if ((r = fmt_sha256_init(&w.sha, e)) != FMT_OK)
		goto out;
	if ((r = fmt_compressor_init(&w.comp, o->compression, emit, &w, e)) != FMT_OK)
		goto out;
	/* zstd-max keeps one frame (the ratio is what it is asked for); STREAMING chunks are one
	 * frame each (specs/ald.md §11) */
	if (o->compression == FMT_ALD_ZSTD && !o->chunk_rows &&
	    (r = fmt_compressor_split_frames(&w.comp, ALD_ZSTD_FRAME_INPUT, e)) != FMT_OK)
		goto out;
	if ((r = fmt_sink_zeros(k, HEADER, e)) != FMT_OK || (r = fmt_sink_write(k, meta, meta_len, e)) != FMT_OK)
		goto out;
	if (!o->compat_alimentar) /* the CRC of what follows the header and card, patched last */
		fmt_sink_tap(k, fmt_ald_crc_tap, &w.crc);
	if ((r = fmt_sink_write(k, block.p, block.len, e)) != FMT_OK)
		goto out;
	if (o->trueno_native) { /* the arrays and an uncompressed payload of the other columns */
		flags |= FMT_ALD_TRUENO_NATIVE;
		if ((r = fmt_ald_native_body(in, k, &w.sha, &w.stored, &w.rows, e)) == FMT_OK) {
			w.raw = w.stored;
			r = finish(&w, meta_len, (uint16_t)block.len, flags, e);
		}
		goto out;
	}
	if (flags & FMT_ALD_STREAMING) {
		w.spill = fmt_temp_file(CHUNK_SPILL, e);
		if (!w.spill) {
			r = e->kind;
			goto out;
		}
	} else if (encrypting && (r = fmt_sink_write(k, enc.header, enc.header_len, e)) != FMT_OK) {
		goto out;
	}
	if ((r = pipe_start(&w, wo ? wo->threads : 1, e)) != FMT_OK ||
	    (!w.spill && (r = stream_begin(&w, e)) != FMT_OK))
		goto out;
	for (;;) {
		fmt_batch b;
		int done;
		if ((r = fmt_table_next(in, &b, &done, e)) != FMT_OK)
			goto out;
		if (done) {
			fmt_batch_free(&b);
			break;
		}
		r = add_batch(&w, &b, e);
		fmt_batch_free(&b);
		if (r != FMT_OK)
			goto out;
	}
	if (w.spill && !w.ipc_open && w.rows == 0)
		r = stream_begin(&w, e); /* an empty dataset still has one chunk: its schema */
	if (r == FMT_OK && w.ipc_open)
		r = stream_end(&w, e);
	if (r == FMT_OK && w.spill && (r = write_index(&w, e)) == FMT_OK &&
	    (!encrypting || (r = fmt_sink_write(k, enc.header, enc.header_len, e)) == FMT_OK))
		r = copy_spill(&w, e);
	if (r == FMT_OK && encrypting && (r = fmt_ald_enc_end(&enc, k, e)) == FMT_OK)
		w.stored += FMT_AEAD_TAG;
	if (r == FMT_OK)
		r = finish(&w, meta_len, (uint16_t)block.len, flags, e);
out:
	pipe_stop(&w);
	fmt_sink_tap(k, NULL, NULL);
	if (w.ipc_open)
		fmt_ipc_writer_free(&w.ipc);
	if (w.spill)
		fclose(w.spill);
	fmt_compressor_free(&w.comp);
	fmt_sha256_free(&w.sha);
	if (encrypting)
		fmt_ald_enc_free(&enc);
	free(w.chunks);
	free(meta);
	fmt_sb_free(&block);
	fmt_sb_free(&w.sb);
	return r;
}

/* The card an input carries in its schema metadata (FMT_ALD_CARD_KEY: a Parquet file written
 * from an .ald keeps it there), checked as --card's; NULL when it has none. */
static fmt_kind carried_card(const fmt_schema *s, json_t **card, fmt_err *e)
{
	*card = NULL;
	for (size_t i = 0; i < s->n_meta; i++) {
		if (strcmp(s->meta[i].key, FMT_ALD_CARD_KEY) != 0)
			continue;
		json_error_t je;
		*card = json_loads(s->meta[i].value, JSON_REJECT_DUPLICATES, &je);
		fmt_kind k = *card && json_is_object(*card) ? fmt_card_check_carried(*card, e) :
			     fmt_fail(e, FMT_INVALID_FORMAT, "the card in the input's %s metadata is not a JSON object",
				      FMT_ALD_CARD_KEY);
		if (k != FMT_OK) {
			json_decref(*card);
			*card = NULL;
		}
		return k;
	}
	return FMT_OK;
}

fmt_kind fmt_ald_write(fmt_table *in, fmt_sink *k, const fmt_write_opts *wo, fmt_err *e)
{
	json_t *card = NULL;
	ald_opts given;
	fmt_ald_opts_of(wo, &given);
	fmt_kind r = given.card ? FMT_OK : carried_card(&in->schema, &card, e); /* --card replaces it unread */
	if (r == FMT_OK)
		r = write_ald(in, k, wo, card, e);
	json_decref(card);
	return r;
}
