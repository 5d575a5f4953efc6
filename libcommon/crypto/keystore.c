/* The per-user HMAC key ($XDG_CONFIG_HOME/fmtkit/hmac.key) and the key options that name a
 * key on the command line. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crypto_internal.h"
#include "fmt/io.h"

#define USER_KEY_LEN 32u
#define KEYGEN_HINT "create one with `fmt-sign keygen --hmac`"

fmt_kind fmt_hmac_key_path(char **path, fmt_err *e)
{
	return fmt_key_file_path("hmac.key", path, e);
}

fmt_kind fmt_key_file_path(const char *name, char **path, fmt_err *e)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	const char *base, *sub;
	*path = NULL;
	/* The XDG spec: a relative XDG_CONFIG_HOME is invalid and must be ignored. */
	if (xdg && xdg[0] == '/') {
		base = xdg;
		sub = "/fmtkit/";
	} else if (home && home[0]) {
		base = home;
		sub = "/.config/fmtkit/";
	} else {
		return fmt_fail(e, FMT_USAGE, "neither XDG_CONFIG_HOME nor HOME is set: "
				"cannot tell where the keys live");
	}
	size_t n = strlen(base) + strlen(sub) + strlen(name) + 1;
	char *p = malloc(n);
	if (!p)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(p, n, "%s%s%s", base, sub, name);
	*path = p;
	return FMT_OK;
}

/* Keep dir in made and track it for removal on a signal; 0, or -1 when out of memory. */
static int key_dir_made(fmt_key_dirs *made, const char *dir)
{
	char *copy = strdup(dir);
	if (!copy)
		return -1;
	made->path[made->n++] = copy;
	return fmt_tmp_track_dir(copy);
}

/* mkdir -p of the directory part of path; directories it creates are 0700, each kept in *made
 * (shallowest first; every directory below the first it made on the way to path was made too),
 * also when a later mkdir fails. */
fmt_kind fmt_crypto_make_key_dir(const char *path, fmt_key_dirs *made, fmt_err *e)
{
	size_t depth = 0;
	for (const char *c = path; *c; c++)
		depth += *c == '/';
	made->n = 0;
	made->path = calloc(depth ? depth : 1, sizeof *made->path);
	char *dir = made->path ? strdup(path) : NULL;
	if (!dir)
		return fmt_fail(e, FMT_IO, "out of memory");
	char *slash = strrchr(dir, '/');
	fmt_kind k = FMT_OK;
	if (slash && slash != dir) {
		*slash = '\0';
		for (char *p = dir + 1; k == FMT_OK; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			char was = *p;
			*p = '\0';
			if (mkdir(dir, 0700) == 0) {
				if (key_dir_made(made, dir) != 0)
					k = fmt_fail(e, FMT_IO, "out of memory");
			} else if (errno != EEXIST) {
				k = fmt_fail(e, FMT_IO, "cannot create the directory %s: %s", dir, strerror(errno));
			}
			*p = was;
			if (was == '\0')
				break;
		}
	}
	free(dir);
	return k;
}

void fmt_crypto_remove_key_dir(const fmt_key_dirs *made)
{
	/* rmdir removes only an empty directory: one that something else put a file in stays. */
	for (size_t i = made->n; i > 0; i--)
		if (rmdir(made->path[i - 1]) != 0)
			break;
}

void fmt_crypto_key_dirs_done(fmt_key_dirs *made)
{
	for (size_t i = 0; i < made->n; i++) {
		fmt_tmp_untrack_dir(made->path[i]);
		free(made->path[i]);
	}
	free(made->path);
	made->path = NULL;
	made->n = 0;
}

static fmt_kind write_all_fd(int fd, const uint8_t *p, size_t n, fmt_err *e)
{
	int failed = fmt_fd_write_all(fd, p, n);
	return failed ? fmt_fail(e, FMT_IO, "write: %s", strerror(failed)) : FMT_OK;
}

/* Rename an existing key to path.old (replacing an older one); *old_path is
 * its new name, or NULL when there was no key. */
fmt_kind fmt_crypto_keep_old_key(const char *path, char **old_path, fmt_err *e)
{
	struct stat st;
	*old_path = NULL;
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return FMT_OK;
		return fmt_fail(e, FMT_IO, "cannot stat the key file: %s", strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return fmt_fail(e, FMT_USAGE, "the key path is not a regular file; not rotating it");
	size_t n = strlen(path) + sizeof ".old";
	char *old = malloc(n);
	if (!old)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(old, n, "%s.old", path);
	if (rename(path, old) != 0) {
		fmt_fail(e, FMT_IO, "cannot rename the key to %s: %s", old, strerror(errno));
		free(old);
		return FMT_IO;
	}
	*old_path = old;
	return FMT_OK;
}

fmt_kind fmt_hmac_key_random(fmt_hmac_key *key, fmt_err *e)
{
	fmt_kind k = fmt_crypto_key_alloc(USER_KEY_LEN, key, e);
	if (k != FMT_OK)
		return k;
	randombytes_buf(key->bytes, key->len);
	k = fmt_crypto_user_key_id(key, e);
	if (k != FMT_OK)
		fmt_hmac_key_free(key);
	return k;
}

fmt_kind fmt_hmac_keygen(const char *path, int rotate, fmt_hmac_key *out, fmt_err *e)
{
	fmt_hmac_key key;
	memset(out, 0, sizeof *out);
	fmt_kind k = fmt_hmac_key_random(&key, e);
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		return k;
	}
	k = fmt_hmac_key_store(path, rotate, &key, e);
	if (k != FMT_OK) {
		fmt_hmac_key_free(&key);
		return k;
	}
	*out = key;
	return FMT_OK;
}

fmt_kind fmt_hmac_key_store(const char *path, int rotate, const fmt_hmac_key *key, fmt_err *e)
{
	fmt_kind k = fmt_key_file_create(path, key->bytes, key->len, rotate, 1, e);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

fmt_kind fmt_key_mode_check(const struct stat *st, const char *what, fmt_err *e)
{
	if (st->st_mode & 077)
		return fmt_fail(e, FMT_USAGE, "%s is readable by others (mode %04o); chmod 600 it", what,
				(unsigned)(st->st_mode & 07777));
	return FMT_OK;
}

fmt_kind fmt_key_path_check(const char *path, const char *what, fmt_err *e)
{
	if (strcmp(path, "-") == 0)
		return fmt_fail(e, FMT_USAGE, "%s is read from a file (its mode is checked), not standard input", what);
	return FMT_OK;
}

static fmt_kind check_key_file(int fd, const char *name, fmt_err *e)
{
	struct stat st;
	fmt_kind k = fmt_small_check(fd, 0, "the HMAC key", &st, e);
	if (k != FMT_OK)
		return k;
	if (fmt_key_mode_check(&st, name, e) != FMT_OK)
		return e->kind;
	if (st.st_size != (off_t)USER_KEY_LEN)
		return fmt_fail(e, FMT_INVALID_FORMAT, "an HMAC key file holds %u bytes, this one %lld",
				USER_KEY_LEN, (long long)st.st_size);
	return FMT_OK;
}

fmt_kind fmt_hmac_key_load(const char *path, fmt_hmac_key *out, fmt_err *e)
{
	memset(out, 0, sizeof *out);
	if (fmt_key_path_check(path, "the HMAC key", e) != FMT_OK)
		return e->kind;
	/* Non-blocking, so that a FIFO planted at the key path cannot hang the open (it is then
	 * refused as not a regular file); never through a symbolic link. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) /* cannot open: I/O, as a missing ed25519.key */
			fmt_fail(e, FMT_IO, "no HMAC key here; " KEYGEN_HINT);
		else if (errno == ELOOP)
			fmt_fail(e, FMT_USAGE, "the HMAC key is a symbolic link (refused: key files are opened only as regular files)");
		else
			fmt_fail(e, FMT_IO, "cannot open the HMAC key: %s", strerror(errno));
		fmt_err_file(e, path);
		return e->kind;
	}
	fmt_kind k = check_key_file(fd, fmt_base_name(path), e);
	if (k == FMT_OK)
		k = fmt_crypto_key_alloc(USER_KEY_LEN, out, e);
	size_t got = 0;
	if (k == FMT_OK && (k = fmt_small_read(fd, out->bytes, out->len, &got, e)) == FMT_OK && got != out->len)
		k = fmt_fail(e, FMT_IO, FMT_MSG_SHRANK);
	if (k == FMT_OK)
		k = fmt_crypto_user_key_id(out, e);
	close(fd);
	if (k != FMT_OK) {
		fmt_hmac_key_free(out);
		fmt_err_file(e, path);
	}
	return k;
}

int fmt_key_opts_given(const fmt_key_opts *o)
{
	return o->hmac_key || o->secret_file || o->secret_env || o->secret_prompt;
}

static fmt_kind user_key(fmt_hmac_key *out, fmt_err *e)
{
	char *path;
	fmt_kind k = fmt_hmac_key_path(&path, e);
	if (k != FMT_OK)
		return k;
	k = fmt_hmac_key_load(path, out, e);
	free(path);
	return k;
}

fmt_kind fmt_key_from_opts(const fmt_key_opts *o, fmt_hmac_key *out, fmt_err *e)
{
	int n = (o->hmac_key != 0) + (o->secret_file != NULL) + (o->secret_env != NULL) +
		(o->secret_prompt != NULL);
	memset(out, 0, sizeof *out);
	if (n > 1)
		return fmt_fail(e, FMT_USAGE,
				"give only one of --hmac-key, --secret-file, --secret-env, --secret-prompt");
	if (o->secret_file)
		return fmt_secret_from_file(o->secret_file, out, e);
	if (o->secret_env)
		return fmt_secret_from_env(o->secret_env, out, e);
	if (o->secret_prompt)
		return o->secret_prompt("Shared secret: ", out, e);
	/* --hmac-key, or no option at all: the per-user key. */
	return user_key(out, e);
}

/* May a new key be put at path: nothing there, or (rotate) a regular file to move aside? */
static fmt_kind key_path_usable(const char *path, int rotate, fmt_err *e)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return FMT_OK;
	/* e->file names path (the callers put it there): the message does not name it again */
	if (!rotate) {
		const char *base = strrchr(path, '/');
		return fmt_fail(e, FMT_USAGE, "already exists; --force replaces it and keeps the old one as %s.old",
				base ? base + 1 : path);
	}
	if (!S_ISREG(st.st_mode))
		return fmt_fail(e, FMT_USAGE, "the key path is not a regular file; not rotating it");
	return FMT_OK;
}

/* One new key file: a temporary file beside path ("PATH.new", created with O_EXCL, so a
 * leftover one from a crash is refused rather than followed), removed on failure and, until it
 * is renamed to path, on a signal (fmt_tmp_track, as the sinks' temporary files). */
typedef struct key_file {
	const char *path;
	const void *bytes;
	size_t len;
	mode_t mode;
	char *tmp, *old;             /* malloc'd; old: where the previous key went (rotate) */
	fmt_key_dirs made;           /* the directories made for it (removed on failure and on a signal) */
	int tracked, placed;
} key_file;

/* Create f->tmp (O_EXCL, never through a link, its mode) with the bytes, fsync'd. */
static fmt_kind key_write_tmp_file(key_file *f, fmt_err *e)
{
	int fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, f->mode);
	if (fd < 0 && errno == EEXIST)
		return fmt_fail(e, FMT_USAGE, "%s exists (left by an interrupted keygen?); remove it", f->tmp);
	if (fd < 0)
		return fmt_fail(e, FMT_IO, "cannot create the key file %s: %s", f->tmp, strerror(errno));
	f->tracked = fmt_tmp_track(f->tmp) == 0;
	fmt_kind k = f->tracked ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	fmt_test_stop_hook();
	if (k == FMT_OK)
		k = write_all_fd(fd, f->bytes, f->len, e);
	if (k == FMT_OK && fsync(fd) != 0)
		k = fmt_fail(e, FMT_IO, "fsync: %s", strerror(errno));
	if (close(fd) != 0 && k == FMT_OK)
		k = fmt_fail(e, FMT_IO, "close: %s", strerror(errno));
	if (k != FMT_OK)
		unlink(f->tmp);
	return k;
}

static fmt_kind key_write_tmp(key_file *f, fmt_err *e)
{
	size_t n = strlen(f->path) + sizeof ".new";
	f->tmp = malloc(n);
	if (!f->tmp)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(f->tmp, n, "%s.new", f->path);
	fmt_kind k = fmt_crypto_make_key_dir(f->path, &f->made, e);
	if (k == FMT_OK)
		k = key_write_tmp_file(f, e);
	if (k != FMT_OK && !f->tracked) { /* (a tracked one is freed once untracked) */
		free(f->tmp);
		f->tmp = NULL;
	}
	return k;
}

/* Move the previous key aside (rotate) and the new one in; undone by key_undo. */
static fmt_kind key_place(key_file *f, int rotate, fmt_err *e)
{
	fmt_kind k = rotate ? fmt_crypto_keep_old_key(f->path, &f->old, e) : FMT_OK;
	if (k == FMT_OK && rename(f->tmp, f->path) != 0) {
		k = fmt_fail(e, FMT_IO, "cannot rename %s to the key file: %s", f->tmp, strerror(errno));
		if (f->old && rename(f->old, f->path) != 0)
			fmt_err_prefix(e, "the previous key is now %s", f->old);
	}
	f->placed = k == FMT_OK;
	return k;
}

static void key_undo(key_file *f, fmt_err *e)
{
	if (f->tmp && !f->placed)
		unlink(f->tmp);
	if (f->placed) {
		unlink(f->path);
		if (f->old && rename(f->old, f->path) != 0)
			fmt_err_prefix(e, "the previous key %s is now %s", f->path, f->old);
	}
}

/* The n files of f, all or none; *failed: the path the error is about (NULL on success). */
static fmt_kind key_files_create(key_file *f, int n, int rotate, const char **failed, fmt_err *e)
{
	fmt_kind k = FMT_OK;
	int i, bad = -1;
	/* Everything that can be checked is checked before anything is written. */
	for (i = 0; i < n && bad < 0; i++)
		if ((k = key_path_usable(f[i].path, rotate, e)) != FMT_OK)
			bad = i;
	for (i = 0; i < n && bad < 0; i++)
		if ((k = key_write_tmp(&f[i], e)) != FMT_OK)
			bad = i;
	/* The last first: a pair's public key, whose rename is the one a protected old .pub makes fail. */
	for (i = n - 1; i >= 0 && bad < 0; i--)
		if ((k = key_place(&f[i], rotate, e)) != FMT_OK)
			bad = i;
	*failed = bad < 0 ? NULL : f[bad].path;
	for (i = 0; i < n; i++) {
		if (k != FMT_OK)
			key_undo(&f[i], e);
		if (f[i].tracked)
			fmt_tmp_untrack(f[i].tmp);
		free(f[i].tmp);
		free(f[i].old);
	}
	/* The directories made for them, the last made first (a pair's public key may lie below
	 * the directory made for its secret key). */
	for (i = n - 1; i >= 0; i--) {
		if (k != FMT_OK)
			fmt_crypto_remove_key_dir(&f[i].made);
		fmt_crypto_key_dirs_done(&f[i].made);
	}
	return k;
}

fmt_kind fmt_key_file_create(const char *path, const void *bytes, size_t len, int rotate,
			     int secret, fmt_err *e)
{
	key_file f = { .path = path, .bytes = bytes, .len = len, .mode = secret ? 0600 : 0644 };
	const char *failed;
	return key_files_create(&f, 1, rotate, &failed, e);
}

fmt_kind fmt_key_pair_create(const char *pub_path, const void *pub, size_t pub_len,
			     const char *sec_path, const void *sec, size_t sec_len, int rotate,
			     const char **failed, fmt_err *e)
{
	key_file f[2] = { { .path = sec_path, .bytes = sec, .len = sec_len, .mode = 0600 },
			  { .path = pub_path, .bytes = pub, .len = pub_len, .mode = 0644 } };
	return key_files_create(f, 2, rotate, failed, e);
}
