/* SHA-256 through OpenSSL's EVP interface (CPU SHA instructions where available) and hex. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/crypto.h"
#include "fmt/meter.h"
#include "openssl_fns.h"

/* Large enough that per-call overhead vanishes, small enough to stay in the L2 cache. */
#define SHA256_CHUNK (1u << 20)

fmt_kind fmt_sha256_init(fmt_sha256 *h, fmt_err *e)
{
	h->ctx = NULL;
	fmt_kind loaded = fmt_openssl_load(e);
	if (loaded != FMT_OK)
		return loaded;
	EVP_MD_CTX *ctx = OSSL(EVP_MD_CTX_new)();
	if (!ctx)
		return fmt_fail(e, FMT_IO, "SHA-256: out of memory");
	if (OSSL(EVP_DigestInit_ex)(ctx, OSSL(EVP_sha256)(), NULL) != 1) {
		OSSL(EVP_MD_CTX_free)(ctx);
		/* the digest is fetched from libcrypto's providers here: only memory can run out */
		return fmt_fail(e, FMT_IO, "SHA-256: out of memory (OpenSSL could not initialise the digest)");
	}
	h->ctx = ctx;
	return FMT_OK;
}

fmt_kind fmt_sha256_update(fmt_sha256 *h, const void *data, size_t n, fmt_err *e)
{
	if (!h->ctx)
		return fmt_fail(e, FMT_INTERNAL, "SHA-256: update without init");
	if (n > 0 && OSSL(EVP_DigestUpdate)(h->ctx, data, n) != 1)
		return fmt_fail(e, FMT_INTERNAL, "SHA-256: OpenSSL digest update failed");
	fmt_meter_done(n);
	return FMT_OK;
}

fmt_kind fmt_sha256_final(fmt_sha256 *h, uint8_t out[FMT_SHA256_LEN], fmt_err *e)
{
	unsigned int len = 0;
	if (!h->ctx)
		return fmt_fail(e, FMT_INTERNAL, "SHA-256: final without init");
	if (OSSL(EVP_DigestFinal_ex)(h->ctx, out, &len) != 1 || len != FMT_SHA256_LEN)
		return fmt_fail(e, FMT_INTERNAL, "SHA-256: OpenSSL digest final failed");
	return FMT_OK;
}

void fmt_sha256_free(fmt_sha256 *h)
{
	if (h && h->ctx) {
		OSSL(EVP_MD_CTX_free)(h->ctx);
		h->ctx = NULL;
	}
}

/* In-memory sources (stdin, or an already mapped file) are hashed where they lie. */
static fmt_kind sha256_view(fmt_sha256 *h, fmt_source *s, uint64_t off, uint64_t n, fmt_err *e)
{
	const uint8_t *p;
	fmt_kind k = fmt_source_view(s, off, n, &p, e);
	while (k == FMT_OK && n > 0) {
		size_t step = n < SHA256_CHUNK ? (size_t)n : SHA256_CHUNK;
		k = fmt_sha256_update(h, p, step, e);
		p += step;
		n -= step;
	}
	return k;
}

fmt_kind fmt_sha256_source(fmt_sha256 *h, fmt_source *s, uint64_t off, uint64_t n, fmt_err *e)
{
	if (s->buf || s->map)
		return sha256_view(h, s, off, n, e);
	uint8_t *chunk = malloc(SHA256_CHUNK);
	if (!chunk)
		return fmt_fail(e, FMT_IO, "SHA-256: out of memory for a %u-byte buffer", SHA256_CHUNK);
	if (s->fd >= 0)
		(void)posix_fadvise(s->fd, (off_t)off, (off_t)n, POSIX_FADV_SEQUENTIAL);
	fmt_kind k = FMT_OK;
	while (k == FMT_OK && n > 0) {
		size_t step = n < SHA256_CHUNK ? (size_t)n : SHA256_CHUNK;
		k = fmt_source_read(s, off, chunk, step, e);
		if (k == FMT_OK)
			k = fmt_sha256_update(h, chunk, step, e);
		off += step;
		n -= step;
	}
	free(chunk);
	return k;
}

fmt_kind fmt_sha256_buf(const void *data, size_t n, uint8_t out[FMT_SHA256_LEN], fmt_err *e)
{
	fmt_sha256 h;
	fmt_kind k = fmt_sha256_init(&h, e);
	if (k == FMT_OK)
		k = fmt_sha256_update(&h, data, n, e);
	if (k == FMT_OK)
		k = fmt_sha256_final(&h, out, e);
	fmt_sha256_free(&h);
	return k;
}

void fmt_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int fmt_unhex(const char *hex, size_t hex_len, uint8_t *out, size_t n)
{
	if (hex_len != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
