/* Rewriting an .ald: the CRC-32 trailer read back over what a sink holds (or over what precedes
 * its tap), the §6 signature block appended to it, and the in-place rewrites of signing and
 * licensing (the file reopened, checked, written beside itself and renamed over it). Below the
 * writer, the signature and the licence code, which call it; it calls none of them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <zlib.h>
#include "fmt/checked.h"
#include "fmt/dataset.h"
#include "fmt/minisign.h"
#include "ald_internal.h"

#define SIG_BLOCK 96

void fmt_ald_crc_tap(void *ctx, const void *p, size_t n)
{
	uint32_t *crc = ctx;
	*crc = fmt_crc32_ieee(*crc, p, n);
}

fmt_kind fmt_ald_sink_append_crc(fmt_sink *k, int upstream, const uint32_t *tail, fmt_err *e)
{
	enum { CHUNK = 1 << 20 };
	int tapped = tail && !upstream && k->tap && !k->tap_missed && k->written - k->tap_from <= INT64_MAX;
	uint64_t upto = tapped ? k->tap_from : k->written;
	fmt_kind r = fmt_sink_pwrite(k, 0, "", 0, e); /* flushes, for the read-back */
	if (r != FMT_OK)
		return r;
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory for the CRC read-back");
	uint64_t off = 0;
	uint32_t c = 0;
	while (r == FMT_OK && off < upto) {
		size_t want = upto - off < CHUNK ? (size_t)(upto - off) : CHUNK;
		if (fmt_sink_read_back(k, off, buf, want)) {
			r = fmt_fail(e, FMT_IO, "cannot read back the output for its CRC");
			break;
		}
		c = upstream ? fmt_crc32_alimentar(c, buf, want) : fmt_crc32_ieee(c, buf, want);
		off += want;
	}
	free(buf);
	if (r != FMT_OK)
		return r;
	if (tapped)
		c = (uint32_t)crc32_combine(c, *tail, (z_off_t)(k->written - k->tap_from));
	uint8_t crc_le[4];
	fmt_wr_u32(crc_le, c);
	return fmt_sink_write(k, crc_le, 4, e);
}

fmt_kind fmt_ald_rewrite_in_place(const char *path, const ald_state *s, fmt_ald_body_fn body, const void *ctx,
				  fmt_err *e)
{
	fmt_sink k;
	fmt_kind r = fmt_sink_open_in_place(&k, path, e);
	if (r != FMT_OK)
		return r;
	r = body(s, &k, ctx, e);
	if (r == FMT_OK)
		r = fmt_ald_sink_append_crc(&k, fmt_ald_crc_is_upstream(s), NULL, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

/* What the sink has written, mapped read-only (its buffer flushed first), for the signature. */
static fmt_kind map_sink(fmt_sink *k, const uint8_t **p, fmt_err *e)
{
	fmt_kind r = fmt_sink_pwrite(k, 0, "", 0, e); /* flushes */
	if (r != FMT_OK)
		return r;
	if (k->written > SIZE_MAX)
		return fmt_fail(e, FMT_UNSUPPORTED, "output too large to sign on this system");
	void *m = mmap(NULL, (size_t)k->written, PROT_READ, MAP_SHARED, k->fd, 0);
	if (m == MAP_FAILED)
		return fmt_fail(e, FMT_IO, "cannot map the output to sign it: %s", strerror(errno));
	*p = m;
	return FMT_OK;
}

fmt_kind fmt_ald_append_signature(fmt_sink *k, const fmt_ms_secret *sec, fmt_err *e)
{
	const uint8_t *msg = NULL;
	uint8_t block[SIG_BLOCK];
	uint64_t at = k->written;
	fmt_kind r = map_sink(k, &msg, e);
	if (r != FMT_OK)
		return r;
	r = fmt_ed25519_sign(sec, msg, (size_t)at, block, e);
	munmap((void *)msg, (size_t)at);
	memcpy(block + 64, fmt_ms_secret_pk(sec), 32);
	/* Written through pwrite, which leaves nothing buffered: writers read the file back next. */
	if (r == FMT_OK)
		r = fmt_sink_zeros(k, sizeof block, e);
	if (r == FMT_OK)
		r = fmt_sink_pwrite(k, at, block, sizeof block, e);
	return r;
}

fmt_kind fmt_ald_rewrite_checked(const fmt_table_driver *d, const char *path, int licence_replaced,
				 fmt_ald_check_fn check, fmt_ald_body_fn body, const void *ctx, fmt_err *e)
{
	fmt_table t;
	fmt_kind r = fmt_table_open_with(&t, path, d, e);
	if (r != FMT_OK)
		return r;
	/* Never sign or license what fmt-verify refuses: its checks first (no keys: the signature is
	 * not checked, it is what is replaced; nor is a licence that is replaced, expired or not). */
	ald_state *s = t.format_state;
	const fmt_verify_opts vo = { .threads = 1, .licence_replaced = licence_replaced };
	t.allow_expired = licence_replaced;
	r = fmt_table_verify(&t, &vo, e);
	if (r == FMT_OK && check)
		r = check(s, ctx, e);
	if (r == FMT_OK)
		r = fmt_ald_rewrite_in_place(path, s, body, ctx, e);
	fmt_table_free(&t);
	return r;
}
