/* libFuzzer target: the dataset readers (.ald container and card, Arrow IPC stream and file and
 * their flatbuffers, encryption header and payload, licence block, CSV, JSON Lines). The first
 * byte chooses the driver; every batch a reader
 * gives is checked (fmt_table_next), then written back as an Arrow stream and read again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/arrow.h"
#include "fmt/cell.h"
#include "fmt/dataset.h"
#include "fmt/encrypt.h"
#include "fmt/minisign.h"
#include "fmt/registry.h"

static void reread(const fmt_schema *s, const fmt_batch *b)
{
	fmt_ipc_writer w;
	fmt_ipc_reader r;
	fmt_sb out = { 0 };
	fmt_err e;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *names[] = { "ald", "arrow", "arrow-stream", "csv", "jsonl" };
	if (size < 1)
		return 0;
	const fmt_table_driver *d = fmt_table_driver_by_name(names[data[0] % 5]);
	fmt_dataset_opts o = { .batch_rows = 7 };
	fmt_table t;
	fmt_err e;
	/* An X25519 identity (secret 32 x 0x42), so that payloads encrypted to it (corpus files
	 * *-recipient.ald) are decrypted and read; password mode would cost Argon2 per input. */
	static uint8_t sk[32];
	static fmt_x25519_pair id = { .sk = sk };
	static fmt_keyset keys = { .x25519 = &id };
	if (!sk[0]) {
		memset(sk, 0x42, sizeof sk);
		fmt_x25519_public_of(sk, id.pk);
	}
	if (fmt_table_open_memory(&t, "fuzz", data + 1, size - 1, d, &e) != FMT_OK)
		return 0;
	t.opts = &o;
	t.keys = &keys;
	t.allow_expired = 1; /* the rows of an expired licence are read too (the gate is a date test) */
	fmt_table_verify(&t, NULL, &e);
	/* with a trusted Ed25519 key: the .ald signature block */
	static const fmt_ms_public trusted = { .keynum = { 1 } };
	fmt_verify_opts keyed = { .threads = 1, .keys = { .trusted = &trusted, .n_trusted = 1 } };
	fmt_table_verify(&t, &keyed, &e);
	/* without keys, as fmt-verify FILE: every layer, the .ald payload's sizes and digest too */
	fmt_verify_opts bare = { .threads = 1 };
	fmt_table_verify(&t, &bare, &e);
	json_t *facts = d->describe ? d->describe(&t) : NULL;
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
			fmt_row_json_text(&t.schema, &b, r, &cell, &scratch);
		fmt_sb_free(&cell);
		fmt_sb_free(&scratch);
		reread(&t.schema, &b);
		fmt_batch_free(&b);
	}
	fmt_table_free(&t);
	return 0;
}
