/* libFuzzer target: every registered driver, model and table. An input is the name of a driver,
 * a newline, and the file: NAME is looked up in the registry at run time (fmt_driver_by_name,
 * fmt_table_driver_by_name), so a driver registered later is fuzzed with no edit here, and each
 * corpus input stays with the driver it was made for whatever the order of the registry.
 * A model is opened forced to the driver, then probed; what opens is verified and every tensor
 * read; a driver that writes must write what it opened, and what it wrote must open again with
 * the same tensors; a driver that converts its graph into a network format (ONNX -> .nk) must
 * write what that format opens. An internal error (kind 70) anywhere is a finding. Set drivers look for the
 * files an index names in a directory that does not exist, so runs never depend on the current
 * one. A table (.ald container and card, Arrow IPC stream and file and their flatbuffers,
 * encryption header and payload, licence block, CSV, JSON Lines) is opened forced to the driver;
 * every batch a reader gives is checked (fmt_table_next), then written back as an
 * Arrow stream and read again; read again letting the reader type columns from a 64-byte
 * sample, it gives the same schema and rows or fails having sampled. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "fmt/arrow.h"
#include "fmt/cell.h"
#include "fmt/dataset.h"
#include "fmt/encrypt.h"
#include "fmt/minisign.h"
#include "fmt/registry.h"
#include "fmt/table.h"
#include "touch_chunk.h"

#define NAME "/nonexistent-fmtkit-fuzz/input"

static void no_internal(fmt_kind k)
{
	if (k == FMT_INTERNAL)
		abort();
}

/* Every tensor's bytes in bounded chunks, as the tools stream them: a tensor may declare far more
 * decoded bytes than the input holds (a compressed frame), which must fail, not be allocated.
 * 1 when every tensor was read. */
static int read_all(const fmt_model *m)
{
	fmt_err e;
	fmt_err_clear(&e);
	volatile uint8_t sink = 0;
	int all = 1;
	for (size_t i = 0; i < m->n_tensors; i++) {
		fmt_kind k = fmt_tensor_each_chunk(m, &m->tensors[i], touch_chunk, (void *)&sink, &e);
		no_internal(k);
		all &= k == FMT_OK;
	}
	return all;
}

/* Write m with the driver into a file in /dev/shm (or /tmp) and open it again. */
static void write_and_reopen(const fmt_driver *d, const fmt_model *m)
{
	char path[160];
	fmt_sink k;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_model back;
	snprintf(path, sizeof path, "%s/fmtkit-fuzz-%ld-%s%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
		 (long)getpid(), d->name, d->extension ? d->extension : "");
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1 };
	if (fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) != FMT_OK)
		return;
	fmt_kind r = d->write(m, &k, &o, &e);
	no_internal(r);
	if (r != FMT_OK) {
		fmt_sink_abort(&k);
		return;
	}
	if (fmt_sink_commit(&k, &e) != FMT_OK)
		return;
	if (fmt_model_open(&back, path, d, &e) != FMT_OK || back.n_tensors != m->n_tensors)
		abort(); /* the driver wrote what it cannot read */
	for (size_t i = 0; i < m->n_tensors; i++)
		if (!fmt_model_find_tensor(&back, m->tensors[i].name))
			abort();
	fmt_model_free(&back);
	unlink(path);
}

/* A graph the driver converts (ONNX -> .nk) into every network format: what it writes must open
 * with that format's reader. */
static void write_networks(const fmt_model *m)
{
	for (const fmt_driver *const *to = fmt_drivers(); *to; to++) {
		if (!fmt_driver_can(*to, FMT_CAP_NETWORK))
			continue;
		char path[160];
		fmt_sink k;
		fmt_err e;
		fmt_err_clear(&e);
		fmt_model back;
		snprintf(path, sizeof path, "%s/fmtkit-fuzz-%ld-net%s", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
			 (long)getpid(), (*to)->extension ? (*to)->extension : "");
		fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1 };
		if (fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) != FMT_OK)
			continue;
		fmt_kind r = m->driver->write_network(m, *to, &k, &o, &e);
		no_internal(r);
		if (r != FMT_OK || fmt_sink_commit(&k, &e) != FMT_OK) {
			if (r != FMT_OK)
				fmt_sink_abort(&k);
			continue;
		}
		if (fmt_model_open(&back, path, *to, &e) != FMT_OK)
			abort(); /* the network written is not one its format reads */
		fmt_model_free(&back);
		unlink(path);
	}
}

/* The input as a model: forced to d (and written back when d writes), or probed when d is NULL. */
static void read_model(const fmt_driver *d, const uint8_t *data, size_t size)
{
	fmt_model m;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_kind k = fmt_model_open_memory(&m, NAME, data, size, d, &e);
	no_internal(k);
	if (k != FMT_OK)
		return;
	no_internal(fmt_model_verify(&m, NULL, &e));
	/* with a trusted Ed25519 key: the embedded signature paths (.apsim, APR v1) */
	static const fmt_ms_public trusted = { .keynum = { 1, 2, 3, 4, 5, 6, 7, 8 } };
	fmt_verify_opts keyed = { .threads = 1, .keys = { .trusted = &trusted, .n_trusted = 1 } };
	no_internal(fmt_model_verify(&m, &keyed, &e));
	/* as `fmt-verify FILE`: what it passes, the tools read */
	fmt_verify_opts bare = { .threads = 1 };
	fmt_kind verified = fmt_model_verify(&m, &bare, &e);
	no_internal(verified);
	if (!read_all(&m) && verified == FMT_OK)
		abort();
	if (d && d->write)
		write_and_reopen(d, &m);
	if (d && d->write_network)
		write_networks(&m);
	fmt_model_free(&m);
}

/* A batch written as an Arrow stream must read back with its rows. */
static void reread(const fmt_schema *s, const fmt_batch *b)
{
	fmt_ipc_writer w;
	fmt_ipc_reader r;
	fmt_sb out = { 0 };
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_ipc_writer_begin(&w, s, 0, &out, &e) != FMT_OK)
		return;
	if (fmt_ipc_writer_batch(&w, b, &out, &e) != FMT_OK || fmt_ipc_writer_end(&w, &out, &e) != FMT_OK) {
		fmt_ipc_writer_free(&w);
		fmt_sb_free(&out);
		return;
	}
	if (fmt_ipc_open(&r, (const uint8_t *)out.p, out.len, &e) != FMT_OK)
		abort(); /* what we write we must read */
	fmt_batch again;
	int done;
	fmt_batch_init(&again, s->n_fields, &e);
	if (fmt_ipc_next(&r, &again, &done, &e) != FMT_OK || done || again.n_rows != b->n_rows ||
	    fmt_batch_check(s, &again, &e) != FMT_OK)
		abort();
	fmt_batch_free(&again);
	fmt_ipc_close(&r);
	fmt_sb_free(&out);
}

/* The input as a table, forced to d. */
static void read_table(const fmt_table_driver *d, const uint8_t *data, size_t size)
{
	fmt_dataset_opts o = { .batch_rows = 7 };
	fmt_table t;
	fmt_err e;
	fmt_err_clear(&e);
	/* An X25519 identity (secret 32 x 0x42), so that payloads encrypted to it (corpus files
	 * *-recipient.ald) are decrypted and read; password mode would cost Argon2 per input. */
	static uint8_t sk[32];
	static fmt_x25519_pair id = { .sk = sk };
	static fmt_keyset keys = { .x25519 = &id };
	if (!sk[0]) {
		memset(sk, 0x42, sizeof sk);
		fmt_x25519_public_of(sk, id.pk);
	}
	if (fmt_table_open_memory(&t, "fuzz", data, size, d, &e) != FMT_OK)
		return;
	t.opts = &o;
	t.keys = &keys;
	t.allow_expired = 1; /* the rows of an expired licence are read too (the gate is a date test) */
	fmt_table_verify(&t, NULL, &e);
	/* with a trusted Ed25519 key: the .ald signature block */
	static const fmt_ms_public trusted = { .keynum = { 1 } };
	fmt_verify_opts keyed = { .threads = 1, .keys = { .trusted = &trusted, .n_trusted = 1 } };
	fmt_table_verify(&t, &keyed, &e);
	json_t *facts = t.driver->describe ? t.driver->describe(&t) : NULL;
	json_decref(facts);
	for (int i = 0; i < 64; i++) {
		fmt_batch b;
		int done;
		if (fmt_table_next(&t, &b, &done, &e) != FMT_OK || done) {
			fmt_batch_free(&b);
			break;
		}
		fmt_sb cell = { 0 }, scratch = { 0 };
		for (uint64_t r = 0; r < b.n_rows && r < 16; r++)
			fmt_row_json_text(&t.schema, &b, r, &cell, &scratch, FMT_JSON_DATA);
		fmt_sb_free(&cell);
		fmt_sb_free(&scratch);
		reread(&t.schema, &b);
		fmt_batch_free(&b);
	}
	/* without keys, as fmt-verify FILE: every layer, the .ald payload's sizes and digest too,
	 * and the rows (after the reads above: those left, read on from where they stopped) */
	fmt_verify_opts bare = { .threads = 1 };
	fmt_table_verify(&t, &bare, &e);
	fmt_table_free(&t);
}

/* Every row of the input opened as a table with o, as JSON text after its schema's, onto out;
 * 0 when opening or a read failed (*sampled: the reader had typed the columns from a sample). */
static int table_text(const fmt_table_driver *d, const uint8_t *data, size_t size, const fmt_dataset_opts *o,
		      fmt_sb *out, int *sampled)
{
	fmt_table t;
	fmt_err e;
	fmt_err_clear(&e);
	*sampled = 0;
	if (fmt_table_open_memory_opts(&t, "fuzz", data, size, d, o, &e) != FMT_OK)
		return 0;
	t.allow_expired = 1;
	uint64_t declared = t.n_rows, rows = 0;
	json_t *schema = fmt_schema_json(&t.schema);
	char *text = schema ? json_dumps(schema, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (text)
		fmt_sb_put(out, text, strlen(text));
	free(text);
	json_decref(schema);
	fmt_sb scratch = { 0 };
	int ok = 1;
	for (;;) {
		fmt_batch b;
		int done;
		int failed = fmt_table_next(&t, &b, &done, &e) != FMT_OK;
		if (failed || done) {
			ok = !failed;
			fmt_batch_free(&b);
			break;
		}
		/* rows without columns have no text (the tools refuse to write it): their count is
		 * compared, not 2^33 empty lines built */
		for (uint64_t r = 0; r < b.n_rows && t.schema.n_fields; r++) {
			fmt_sb_put(out, "\n", 1);
			fmt_row_json_text(&t.schema, &b, r, out, &scratch, FMT_JSON_DATA);
		}
		rows += b.n_rows;
		fmt_batch_free(&b);
	}
	/* a row count known at open (a header's, a footer's, a scan's) is what reading gives */
	if (ok && declared != FMT_ROWS_UNKNOWN && rows != declared)
		abort();
	fmt_sb_free(&scratch);
	*sampled = t.types_sampled;
	fmt_table_free(&t);
	return ok;
}

/* Whether `fmt-verify FILE` would pass the table and the tools then read it all: no key is
 * needed and every column is of a type they convert (fmt-verify steps over the others). */
static int verified_readable(const fmt_table_driver *d, const uint8_t *data, size_t size)
{
	fmt_table t;
	fmt_err e;
	fmt_err_clear(&e);
	if (fmt_table_open_memory(&t, "fuzz", data, size, d, &e) != FMT_OK)
		return 0;
	t.allow_expired = 1;
	fmt_verify_opts bare = { .threads = 1 };
	int ok = fmt_table_secret(&t) == FMT_SECRET_NONE && !fmt_schema_unsupported(&t.schema) &&
		 fmt_table_verify(&t, &bare, &e) == FMT_OK;
	fmt_table_free(&t);
	return ok;
}

/* A reader let type the columns from a sample (as conversions let it: fmt_dataset_opts.
 * sample_bytes, here 64 bytes) either fails having sampled (the conversion then starts again
 * without the sample), or gives what it gives when it infers from every row first: the same
 * schema and rows, or the same failure. And what fmt-verify passes, the tools read. */
static void sampled_as_whole(const fmt_table_driver *d, const uint8_t *data, size_t size)
{
	const fmt_dataset_opts whole = { 0 }, sample = { .sample_bytes = 64 };
	fmt_sb a = { 0 }, b = { 0 };
	int sampled_a, sampled_b;
	int ok_a = table_text(d, data, size, &whole, &a, &sampled_a);
	int ok_b = table_text(d, data, size, &sample, &b, &sampled_b);
	if (sampled_a || (ok_b && (!ok_a || a.len != b.len || memcmp(a.p, b.p, a.len) != 0)) ||
	    (!ok_b && !sampled_b && ok_a))
		abort();
	if (!ok_a && verified_readable(d, data, size))
		abort();
	fmt_sb_free(&a);
	fmt_sb_free(&b);
}

/* The longest driver name an input may start with. */
#define NAME_MAX_LEN 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *newline = size ? memchr(data, '\n', size < NAME_MAX_LEN ? size : NAME_MAX_LEN) : NULL;
	if (!newline)
		return 0;
	char name[NAME_MAX_LEN];
	size_t len = (size_t)(newline - data);
	memcpy(name, data, len);
	name[len] = '\0';
	const uint8_t *file = newline + 1;
	size_t file_size = size - len - 1;
	const fmt_driver *model = fmt_driver_by_name(name);
	const fmt_table_driver *table = fmt_table_driver_by_name(name);
	if (model) {
		read_model(model, file, file_size);
		read_model(NULL, file, file_size);
	}
	if (table) {
		read_table(table, file, file_size);
		sampled_as_whole(table, file, file_size);
	}
	return 0;
}
