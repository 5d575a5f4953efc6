/* The buyers registry: a JSON Lines file, one object per embed --registry, which maps the
 * buyer hash an extraction recovers back to the buyer id. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "fmt/out.h"
#include "wm.h"

#define REGISTRY_MAX (256u << 20)

void wm_utc_now(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The registry's line for this embed (newline included), time of now. */
static char *registry_line(const char *buyer, const uint8_t hash[32], uint64_t payload, const char *output)
{
	char hex[65], pay[17], when[32];
	fmt_hex(hash, 32, hex);
	snprintf(pay, sizeof pay, "%016llx", (unsigned long long)payload);
	wm_utc_now(when);
	json_t *o = json_pack("{s:o, s:s, s:s, s:o, s:s}", "buyer", fmt_json_string(buyer, strlen(buyer)),
			      "buyer_hash", hex, "payload", pay, "file", fmt_json_string(output, strlen(output)),
			      "time", when);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	char *line = NULL;
	if (text && asprintf(&line, "%s\n", text) < 0)
		line = NULL;
	free(text);
	return line;
}

/* Why path cannot be the registry, after open failed with errno err (or fstat found no regular
 * file: err 0). */
static fmt_kind refuse(const char *path, int err, fmt_err *e)
{
	struct stat st;
	int there = lstat(path, &st) == 0;
	if (there && S_ISLNK(st.st_mode))
		return fmt_fail_file(e, FMT_IO, path, "the registry is a symbolic link (it must be a regular file)");
	if (there && S_ISDIR(st.st_mode))
		return fmt_fail_file(e, FMT_IO, path, "the registry is a directory (it must be a regular file)");
	if (err == 0 || err == ENXIO || (there && !S_ISREG(st.st_mode)))
		return fmt_fail_file(e, FMT_IO, path, "the registry is not a regular file (a FIFO, device or socket)");
	return fmt_fail_file(e, FMT_IO, path, "cannot open the registry: %s", strerror(err));
}

/* Open path for appending without following a symbolic link or waiting on a FIFO; create it
 * (0600) when it does not exist (*created). */
static int open_registry(const char *path, int *created)
{
	int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	int fd = open(path, flags);
	*created = 0;
	if (fd < 0 && errno == ENOENT) {
		fd = open(path, flags | O_CREAT | O_EXCL, 0600);
		*created = fd >= 0;
	}
	return fd;
}

fmt_kind wm_registry_open(wm_registry *r, const char *path, const char *buyer, const uint8_t hash[32],
			  uint64_t payload, const char *output, fmt_err *e)
{
	struct stat st;
	memset(r, 0, sizeof *r);
	r->path = path;
	r->fd = open_registry(path, &r->created);
	if (r->fd < 0)
		return refuse(path, errno, e);
	fmt_kind k = FMT_OK;
	if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode))
		k = refuse(path, 0, e);
	else if (flock(r->fd, LOCK_EX | LOCK_NB) != 0)
		k = errno == EWOULDBLOCK ? fmt_fail(e, FMT_IO, "the registry is locked by another embed (one at a time)")
					 : fmt_fail(e, FMT_IO, "cannot lock the registry: %s", strerror(errno));
	else if (!(r->line = registry_line(buyer, hash, payload, output)))
		k = fmt_fail(e, FMT_IO, "out of memory");
	else
		r->size = st.st_size;
	/* Reserve the line's bytes now: a full disk refuses the embed before OUT is written. */
	if (k == FMT_OK && fallocate(r->fd, FALLOC_FL_KEEP_SIZE, r->size, (off_t)strlen(r->line)) != 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS)
		k = fmt_fail(e, FMT_IO, "no room to append to the registry: %s", strerror(errno));
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		wm_registry_close(r);
	}
	return k;
}

fmt_kind wm_registry_commit(wm_registry *r, fmt_err *e)
{
	size_t n = strlen(r->line);
	ssize_t put = write(r->fd, r->line, n);
	int err = put < 0 ? errno : put != (ssize_t)n ? ENOSPC : fsync(r->fd) != 0 ? errno : 0;
	if (err == 0) {
		r->created = 0;   /* it holds a line now: keep it */
		return FMT_OK;
	}
	int uncut = ftruncate(r->fd, r->size) != 0;
	return fmt_fail_file(e, FMT_IO, r->path, "cannot append to the registry: %s%s", strerror(err),
			     uncut ? " (and it could not be cut back to its size)" : "");
}

void wm_registry_close(wm_registry *r)
{
	if (r->created)   /* made by this embed, which recorded nothing */
		unlink(r->path);
	if (r->fd >= 0)
		close(r->fd);
	free(r->line);
	memset(r, 0, sizeof *r);
	r->fd = -1;
}

fmt_kind wm_registry_lookup(const char *path, uint64_t payload, char **buyer, fmt_err *e)
{
	char *text;
	size_t n;
	*buyer = NULL;
	fmt_kind k = fmt_read_file(path, REGISTRY_MAX, &text, &n, e);
	if (k != FMT_OK)
		return k;
	char prefix[13];
	snprintf(prefix, sizeof prefix, "%012llx", (unsigned long long)(payload >> 16));
	k = fmt_wm_registry_find(text, n, prefix, buyer, e);
	free(text);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}
