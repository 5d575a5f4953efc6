/* Shared secrets, never from the command line: a file or an environment variable the user
 * names (a line typed at a no-echo prompt is the CLI layer's, fmt/prompt.h). The bytes go
 * straight into sodium_malloc memory; nothing passes through stdio buffers. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crypto_internal.h"
#include "fmt/io.h"

/* A secret longer than this is more likely the wrong file than a secret. */
#define SECRET_MAX (64u * 1024u)

void fmt_crypto_strip_newline(const uint8_t *bytes, size_t *len)
{
	if (*len > 0 && bytes[*len - 1] == '\n') {
		(*len)--;
		if (*len > 0 && bytes[*len - 1] == '\r')
			(*len)--;
	}
}

/* Move the first len bytes of a scratch secret buffer into a key of exactly that size. */
static fmt_kind key_from_scratch(const uint8_t *scratch, size_t len, fmt_hmac_key *out, fmt_err *e)
{
	fmt_kind k = fmt_crypto_key_alloc(len, out, e);
	if (k == FMT_OK)
		memcpy(out->bytes, scratch, len);
	return k;
}

fmt_kind fmt_secret_from_file(const char *path, fmt_hmac_key *out, fmt_err *e)
{
	struct stat st;
	return fmt_secret_from_file_st(path, out, &st, e);
}

fmt_kind fmt_secret_from_file_st(const char *path, fmt_hmac_key *out, struct stat *st, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	memset(st, 0, sizeof *st);
	fmt_kind k = fmt_crypto_sodium_init(e);
	if (k != FMT_OK)
		return k;
	/* A regular file, or a pipe: --secret-file <(pass show team) gives one, through the
	 * /dev/fd symbolic link (so no O_NOFOLLOW here), and so does - (pass show team | ...).
	 * The open never blocks: a FIFO nobody writes to opens at once and reads as empty, so it
	 * is refused instead of hanging. */
	int is_stdin = strcmp(path, "-") == 0;
	if (is_stdin && fmt_stdin_claim("a secret file", FMT_STDIN_ONCE, e) != FMT_OK)
		return e->kind;
	if (is_stdin && isatty(STDIN_FILENO)) /* typed, it would echo */
		return fmt_fail(e, FMT_USAGE, "the secret file - is a terminal: pipe the secret in, or use a prompt option");
	int fd = is_stdin ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0) : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return fmt_fail(e, FMT_IO, "cannot open the secret file %s: %s",
				path, strerror(errno));
	char what[64 + FMT_ERR_FILE_MAX];
	snprintf(what, sizeof what, "secret file %s", path);
	k = fmt_small_check(fd, FMT_SMALL_NAMED, what, st, e);
	/* One byte more than the cap, so that a full buffer means "too long". */
	uint8_t *scratch = k == FMT_OK ? sodium_malloc(SECRET_MAX + 1) : NULL;
	if (k == FMT_OK && !scratch)
		k = fmt_fail(e, FMT_IO, "out of secure memory for the secret");
	size_t len = 0;
	if (k == FMT_OK && (k = fmt_small_read(fd, scratch, SECRET_MAX + 1, &len, e)) != FMT_OK)
		fmt_err_prefix(e, "cannot read the secret file %s", path);
	close(fd);
	if (k == FMT_OK && len > SECRET_MAX)
		k = fmt_fail(e, FMT_USAGE, "secret file %s is longer than %u bytes", path, SECRET_MAX);
	if (k == FMT_OK) {
		fmt_crypto_strip_newline(scratch, &len);
		if (len == 0)
			k = fmt_fail(e, FMT_USAGE, "secret file %s is empty", path);
	}
	if (k == FMT_OK)
		k = key_from_scratch(scratch, len, out, e);
	if (scratch)
		sodium_free(scratch);
	return k;
}

fmt_kind fmt_secret_alloc(size_t len, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_crypto_sodium_init(e);
	return k == FMT_OK ? fmt_crypto_key_alloc(len, out, e) : k;
}

fmt_kind fmt_secret_from_env(const char *name, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (!name || !*name || strchr(name, '='))
		return fmt_fail(e, FMT_USAGE, "'%s' is not an environment variable name", name ? name : "");
	const char *value = getenv(name);
	if (!value)
		return fmt_fail(e, FMT_USAGE, "environment variable %s is not set", name);
	if (!*value)
		return fmt_fail(e, FMT_USAGE, "environment variable %s is empty", name);
	return key_from_scratch((const uint8_t *)value, strlen(value), out, e);
}
