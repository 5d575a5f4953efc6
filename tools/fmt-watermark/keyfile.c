/* The seller's watermark key file (fmt-sign keygen --watermark): exactly 32 bytes, a regular
 * file opened without following links, readable by its owner only. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>
#include "fmt/io.h"
#include "wm.h"

fmt_kind wm_key_load(const char *path, fmt_wm_key **key, uint8_t raw[FMT_WM_KEY_LEN], fmt_err *e)
{
	struct stat st;
	uint8_t buf[FMT_WM_KEY_LEN + 1];
	*key = NULL;
	if (fmt_key_path_check(path, "the watermark key", e) != FMT_OK)
		return e->kind;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	fmt_kind k = FMT_OK;
	if (fd < 0)
		k = errno == ELOOP ? fmt_fail(e, FMT_USAGE, "the watermark key is a symbolic link (refused)")
				   : fmt_fail(e, FMT_IO, "cannot open the watermark key: %s", strerror(errno));
	else if (fmt_small_check(fd, 0, "the watermark key", &st, e) != FMT_OK)
		k = e->kind;
	else
		k = fmt_key_mode_check(&st, "the watermark key", e);
	size_t n = 0;
	if (k == FMT_OK && (k = fmt_small_read(fd, buf, sizeof buf, &n, e)) == FMT_OK) {
		if (n != FMT_WM_KEY_LEN)
			k = fmt_fail(e, FMT_INVALID_FORMAT, "a watermark key is 32 bytes (fmt-sign keygen --watermark)");
	}
	if (fd >= 0)
		close(fd);
	if (k == FMT_OK)
		k = fmt_wm_key_new(buf, key, e);
	if (k == FMT_OK && raw)
		memcpy(raw, buf, FMT_WM_KEY_LEN);
	sodium_memzero(buf, sizeof buf);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}
