/* APR v1 (`APRN`, specs/apr.md Part B §16): aprender's classic single-model files. The payload
 * is a bincode serialisation of a Rust struct, so fmtkit shows the framing and metadata and
 * checks the CRC32 trailer, but hands out no tensors. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <msgpack.h>
#include <zlib.h>
#include <stdio.h>
#include "fmt/checked.h"
#include "fmt/minisign.h"
#include "fmt/msgpack_json.h"
#include "fmt/out.h"
#include "apr_internal.h"
#include "fmt/tree_budget.h"

#define V1_MAX_UNCOMPRESSED (1ull << 30)
#define V1_SIGNATURE 96u               /* Ed25519 signature (64) and public key (32) */
#define V1_MAX_DEPTH 32

static int known_model_type(uint16_t t)
{
	return (t >= 0x0001 && t <= 0x000A) || (t >= 0x0010 && t <= 0x0012) || t == 0x0020 || t == 0x0021 ||
	       t == 0x0030 || t == 0x0040 || t == 0x00FF;
}

/* ---- MessagePack metadata as JSON ---- */

/* As upstream's JSON view: NaN/Inf as fmtkit spells them, integers over INT64_MAX as reals,
 * strings as their bytes (json_dumps refuses what is not UTF-8), any string key. */
static const fmt_mp_json_opts v1_json = { .max_depth = V1_MAX_DEPTH,
					  .flags = FMT_MPJ_NONFINITE_TEXT | FMT_MPJ_BIG_AS_REAL | FMT_MPJ_RAW_STRINGS };

/* The pre-walk of the metadata (fmt_mp_check under v1's rules), then the tree budget. */
static fmt_kind mp_check(const uint8_t *p, size_t n, fmt_err *e)
{
	/* one value, the whole of the metadata; 32 deep is msgpack-c's limit too */
	static const fmt_mp_check_opts rules = { .what = "v1 metadata", .max_depth = V1_MAX_DEPTH, .whole = 1 };
	uint64_t values;
	fmt_kind k = fmt_mp_check(p, n, &rules, &values, e);
	return k != FMT_OK ? k : fmt_tree_check("v1 metadata", values, n, FMT_TREE_COST_MSGPACK, e);
}

static fmt_kind read_metadata(fmt_model *m, apr_state *st, const uint8_t *p, size_t n, fmt_err *e)
{
	msgpack_unpacked u;
	size_t off = 0;
	fmt_kind k = mp_check(p, n, e);
	if (k != FMT_OK)
		return k;
	msgpack_unpacked_init(&u);
	msgpack_unpack_return r = msgpack_unpack_next(&u, (const char *)p, n, &off);
	if (r == MSGPACK_UNPACK_NOMEM_ERROR)
		k = fmt_fail_nomem(e, "v1 metadata");
	else if (r != MSGPACK_UNPACK_SUCCESS || off != n || u.data.type != MSGPACK_OBJECT_MAP)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "v1 metadata is not one MessagePack map of %zu bytes", n);
	errno = 0;   /* ENOMEM after a NULL: memory ran out, the metadata may be fine */
	json_t *j = k == FMT_OK ? fmt_mp_to_json(&u.data, &v1_json) : NULL;
	if (k == FMT_OK && !j)
		k = errno == ENOMEM ? fmt_fail_nomem(e, "v1 metadata")
		  : fmt_fail(e, FMT_INVALID_FORMAT, "v1 metadata: a map key that is not a string, or nesting too deep");
	msgpack_unpacked_destroy(&u);
	errno = 0;
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (k == FMT_OK && !text)
		k = errno == ENOMEM ? fmt_fail_nomem(e, "v1 metadata")
		  : fmt_fail(e, FMT_INVALID_FORMAT, "v1 metadata holds strings that are not UTF-8");
	if (k == FMT_OK)
		k = fmt_apr_meta_read(m, text, strlen(text), APR_V1, NULL, e);
	free(text);
	if (k == FMT_OK)
		st->v1_meta = j;
	else
		json_decref(j);
	return k;
}

/* A stream (v1 is read whole): the n bytes its header describes into memory, as they arrive
 * (a hostile size costs no more than the bytes really there), then the stream must end; the
 * source becomes an in-memory one. */
static fmt_kind stream_into_memory(fmt_source *s, uint64_t n, fmt_err *e)
{
	uint8_t *buf = NULL, extra;
	size_t more = 0;
	fmt_kind k = fmt_apr_read_grow(s, 0, n, &buf, e);
	if (k == FMT_OK)
		k = fmt_source_read_upto(s, n, &extra, 1, &more, e);
	if (k == FMT_OK && more)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "the header describes %llu bytes, the stream has more",
			     (unsigned long long)n);
	char *path = k == FMT_OK ? strdup(s->path) : NULL;
	if (k == FMT_OK && !path)
		k = fmt_fail(e, FMT_IO, "out of memory");
	if (k != FMT_OK) {
		free(buf);
		return k;
	}
	fmt_source_close(s);
	s->path = path;
	s->buf = buf;
	s->size = n;
	return FMT_OK;
}

fmt_kind fmt_apr_v1_open(fmt_model *m, apr_state *st, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	uint8_t h[APR_V1_HEADER];
	if (s->size < APR_V1_HEADER + 4)
		return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %llu bytes, an APR v1 file has at least 36",
				(unsigned long long)s->size);
	fmt_kind k = fmt_source_read(s, 0, h, sizeof h, e);
	if (k != FMT_OK)
		return k;
	st->layout = APR_V1;
	st->version_major = h[4];
	st->version_minor = h[5];
	st->model_type = fmt_rd_u16(h + 6);
	st->metadata_size = fmt_rd_u32(h + 8);
	st->payload_size = fmt_rd_u32(h + 12);
	st->uncompressed_size = fmt_rd_u32(h + 16);
	st->v1_compression = h[20];
	st->v1_flags = h[21] & 0x7F;
	st->v1_quality = h[22];
	m->version = 1;
	m->opaque = "APR v1 holds a serialised Rust model, not tensors (fmtkit inspects and verifies it only)";
	if (st->version_major != 1)
		return fmt_fail(e, FMT_UNSUPPORTED, "APR v1 file of version %u.%u (this build reads 1.x)", h[4], h[5]);
	if (!known_model_type(st->model_type))
		return fmt_fail(e, FMT_UNSUPPORTED, "APR v1 model type 0x%04x is not one aprender defines", st->model_type);
	if (st->v1_compression > 3)
		return fmt_fail(e, FMT_UNSUPPORTED, "APR v1 compression %u is not one aprender defines", st->v1_compression);
	if (st->uncompressed_size > V1_MAX_UNCOMPRESSED)
		return fmt_fail(e, FMT_INVALID_FORMAT, "uncompressed_size %u is above aprender's 1 GiB limit",
				st->uncompressed_size);
	uint64_t expect = (uint64_t)APR_V1_HEADER + st->metadata_size + st->payload_size +
			  ((st->v1_flags & 0x2) ? V1_SIGNATURE : 0) + 4;
	if (s->sequential && (k = stream_into_memory(s, expect, e)) != FMT_OK)
		return k;
	if (expect != s->size)
		return fmt_fail(e, FMT_INVALID_FORMAT, "the header describes %llu bytes, the file has %llu",
				(unsigned long long)expect, (unsigned long long)s->size);
	const uint8_t *meta;
	k = fmt_source_view(s, APR_V1_HEADER, st->metadata_size, &meta, e);
	if (k == FMT_OK)
		k = read_metadata(m, st, meta, st->metadata_size, e);
	uint8_t f[4];
	if (k == FMT_OK)
		k = fmt_source_read(s, s->size - 4, f, 4, e);
	if (k == FMT_OK)
		st->checksum = fmt_rd_u32(f);
	return k;
}

/* The signature block of §16.2: Ed25519 over header, metadata and payload, then the signer's
 * public key; trusted only when that key is one the user gave. */
static fmt_kind check_signature(const apr_state *st, const uint8_t *p, const fmt_verify_opts *o, fmt_err *e)
{
	uint64_t body = (uint64_t)APR_V1_HEADER + st->metadata_size + st->payload_size;
	int is_signed = (st->v1_flags & 0x2) != 0;  /* then open checked the 96 bytes are there */
	const uint8_t *sig = p + body;
	return fmt_verify_signature_block(o, is_signed, is_signed ? sig + FMT_MS_SIG : NULL, p, (size_t)body, sig, e);
}

fmt_kind fmt_apr_v1_verify(fmt_model *m, const apr_state *st, const fmt_verify_opts *o, fmt_err *e)
{
	fmt_source *s = &m->sources[0];
	const uint8_t *p;
	uint64_t n = s->size - 4;
	fmt_kind k = fmt_source_view(s, 0, n, &p, e);
	if (k != FMT_OK)
		return k;
	uint32_t c = 0;
	for (uint64_t off = 0; off < n;) {
		uInt part = n - off > (1u << 30) ? (1u << 30) : (uInt)(n - off);
		c = (uint32_t)crc32(c, p + off, part);
		off += part;
	}
	if (c != (uint32_t)st->checksum)
		return fmt_fail(e, FMT_CHECKSUM, "CRC32 trailer mismatch: the file gives %08x, the trailer says %08x", c,
				(unsigned)st->checksum);
	return check_signature(st, p, o, e);
}
