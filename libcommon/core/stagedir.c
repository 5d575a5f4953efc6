/* Private staging directories (fmt/stagedir.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/io.h"
#include "fmt/out.h"
#include "fmt/stagedir.h"

/* ---- cleanup on signals ----
 * The handler only reads the live directory's descriptor, path and names (set before it is
 * published, never changed while live) and calls unlinkat and rmdir, which are
 * async-signal-safe; then it hands the signal to whoever had it before (the atomic sink's
 * handler, which removes its own temporary files) and dies of it. */

static const int watched[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define N_WATCHED (sizeof watched / sizeof watched[0])
static struct sigaction previous[N_WATCHED];
static int installed[N_WATCHED];
static fmt_stagedir *volatile live;

static void remove_files(const fmt_stagedir *s)
{
	for (size_t i = 0; i < s->n_names; i++)
		unlinkat(s->fd, s->names[i], 0);
	rmdir(s->path);
}

void fmt_stagedir_remove_live(void)
{
	fmt_stagedir *s = live;
	live = NULL;
	if (s)
		remove_files(s);
}

static void on_signal(int sig)
{
	fmt_stagedir_remove_live();
	for (size_t i = 0; i < N_WATCHED; i++) {
		if (watched[i] != sig || !installed[i])
			continue;
		sigaction(sig, &previous[i], NULL);
		if (!(previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_handler != SIG_DFL &&
		    previous[i].sa_handler != SIG_IGN)
			previous[i].sa_handler(sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void watch_signals(fmt_stagedir *s)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_WATCHED; i++)
		sigaddset(&sa.sa_mask, watched[i]);
	live = s;
	for (size_t i = 0; i < N_WATCHED; i++) {
		struct sigaction cur;
		installed[i] = 0;
		if (sigaction(watched[i], NULL, &cur) != 0 || cur.sa_handler == SIG_IGN)
			continue; /* an ignored signal stays ignored */
		previous[i] = cur;
		installed[i] = sigaction(watched[i], &sa, NULL) == 0;
	}
}

static void unwatch_signals(void)
{
	for (size_t i = 0; i < N_WATCHED; i++)
		if (installed[i]) {
			sigaction(watched[i], &previous[i], NULL);
			installed[i] = 0;
		}
	live = NULL;
}

static void hold_signals(sigset_t *old)
{
	sigset_t block;
	sigemptyset(&block);
	for (size_t i = 0; i < N_WATCHED; i++)
		sigaddset(&block, watched[i]);
	pthread_sigmask(SIG_BLOCK, &block, old);
}

/* ---- the directory ---- */

static void free_names(fmt_stagedir *s)
{
	for (size_t i = 0; s->names && i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	s->names = NULL;
	s->n_names = 0;
}

fmt_kind fmt_stagedir_create(fmt_stagedir *s, const char *parent, const char *prefix,
			     const char *const *names, size_t n_names, fmt_err *e)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	if (live)
		return fmt_fail(e, FMT_INTERNAL, "a staging directory is already live");
	s->names = calloc(n_names ? n_names : 1, sizeof *s->names);
	if (!s->names)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n_names; i++) {
		if (fmt_unsafe_file_name(names[i], strlen(names[i]))) {
			free_names(s);
			return fmt_fail(e, FMT_INTERNAL, "staging: '%.200s' is not a plain file name", names[i]);
		}
		if (!(s->names[i] = strdup(names[i]))) {
			s->n_names = i;
			free_names(s);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
	}
	s->n_names = n_names;
	size_t n = strlen(parent);
	if (asprintf(&s->path, "%s%s%sXXXXXX", parent, n && parent[n - 1] == '/' ? "" : "/", prefix) < 0) {
		s->path = NULL;
		free_names(s);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	if (!mkdtemp(s->path)) {
		fmt_kind k = fmt_fail(e, FMT_IO, "cannot create a private directory in %s: %s", parent, strerror(errno));
		free(s->path);
		s->path = NULL;
		free_names(s);
		return k;
	}
	s->fd = open(s->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->fd < 0) {
		fmt_kind k = fmt_fail(e, FMT_IO, "cannot open %s: %s", s->path, strerror(errno));
		rmdir(s->path);
		free(s->path);
		s->path = NULL;
		free_names(s);
		return k;
	}
	watch_signals(s);
	return FMT_OK;
}

int fmt_stagedir_create_file(fmt_stagedir *s, size_t i, fmt_err *e)
{
	int fd = openat(s->fd, s->names[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fmt_fail(e, FMT_IO, "cannot create '%.200s' in %s: %s", s->names[i], s->path, strerror(errno));
	else
		fmt_test_stop_hook();
	return fd;
}

char *fmt_stagedir_file_path(const fmt_stagedir *s, size_t i)
{
	char via[64], *p = NULL;
	struct stat st;
	snprintf(via, sizeof via, "/proc/self/fd/%d", s->fd);
	int r = stat(via, &st) == 0 && S_ISDIR(st.st_mode) ? asprintf(&p, "%s/%s", via, s->names[i])
							   : asprintf(&p, "%s/%s", s->path, s->names[i]);
	return r < 0 ? NULL : p;
}

void fmt_stagedir_remove(fmt_stagedir *s)
{
	if (s->fd >= 0) {
		sigset_t old;
		hold_signals(&old);
		remove_files(s);
		unwatch_signals();
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(s->fd);
	}
	free(s->path);
	free_names(s);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* ---- commit ---- */

typedef struct commit_state {
	fmt_stagedir *s;
	int dest;                    /* destination directory */
	char *old_path;              /* where replaced files wait, made when one exists */
	int old;
	unsigned char *existed, *kept, *moved;
} commit_state;

/* Which names exist; a directory is never replaced. */
static fmt_kind survey(commit_state *c, const char *dest_dir, int replace, fmt_err *e)
{
	for (size_t i = 0; i < c->s->n_names; i++) {
		struct stat st;
		const char *name = c->s->names[i];
		if (fstatat(c->dest, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			return fmt_fail(e, FMT_IO, "%s/%.200s: cannot stat: %s", dest_dir, name, strerror(errno));
		}
		if (S_ISDIR(st.st_mode))
			return fmt_fail(e, FMT_IO, "%s/%.200s is a directory (not replaced)", dest_dir, name);
		if (!replace)
			return fmt_fail(e, FMT_USAGE, "%s/%.200s: output exists (use --force to overwrite)", dest_dir, name);
		c->existed[i] = 1;
	}
	return FMT_OK;
}

/* Keep every file about to be replaced: a hard link in a private directory beside them (the
 * name stays in place until the new file is renamed over it), or the file itself moved there
 * when the file system has no hard links. */
static fmt_kind keep_existing(commit_state *c, const char *dest_dir, fmt_err *e)
{
	for (size_t i = 0; i < c->s->n_names; i++) {
		if (!c->existed[i])
			continue;
		const char *name = c->s->names[i];
		if (!c->old_path) {
			if (asprintf(&c->old_path, "%s/.fmtkit-old-XXXXXX", dest_dir) < 0) {
				c->old_path = NULL;
				return fmt_fail(e, FMT_IO, "out of memory");
			}
			if (!mkdtemp(c->old_path) ||
			    (c->old = open(c->old_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
				fmt_kind k = fmt_fail(e, FMT_IO, "cannot create a directory in %s: %s", dest_dir, strerror(errno));
				free(c->old_path);
				c->old_path = NULL;
				return k;
			}
		}
		if (linkat(c->dest, name, c->old, name, 0) == 0)
			c->kept[i] = 1;
		else if (renameat(c->dest, name, c->old, name) == 0)
			c->moved[i] = 1;
		else
			return fmt_fail(e, FMT_IO, "%s/%.200s: cannot keep the existing file: %s", dest_dir, name,
					strerror(errno));
	}
	return FMT_OK;
}

static int move_in(commit_state *c, size_t i, int replace)
{
	const char *name = c->s->names[i];
	if (replace && (c->kept[i] || c->moved[i]))
		return renameat(c->s->fd, name, c->dest, name);
	/* Nothing was there: never clobber what may have appeared since. */
	int r = renameat2(c->s->fd, name, c->dest, name, RENAME_NOREPLACE);
	if (r != 0 && (errno == EINVAL || errno == ENOSYS)) { /* file system without the flag */
		struct stat st;
		if (fstatat(c->dest, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			errno = EEXIST;
			return -1;
		}
		r = renameat(c->s->fd, name, c->dest, name);
	}
	return r;
}

/* Put everything back: new files 0..done-1 return to the staging directory, kept files to
 * their names. */
static void roll_back(commit_state *c, size_t done)
{
	for (size_t i = done; i-- > 0;)
		if (!c->kept[i])
			renameat(c->dest, c->s->names[i], c->s->fd, c->s->names[i]);
	for (size_t i = 0; i < c->s->n_names; i++)
		if (c->kept[i] || c->moved[i])
			renameat(c->old, c->s->names[i], c->dest, c->s->names[i]);
}

static void drop_kept(commit_state *c)
{
	if (!c->old_path)
		return;
	for (size_t i = 0; i < c->s->n_names; i++)
		if (c->kept[i] || c->moved[i])
			unlinkat(c->old, c->s->names[i], 0);
	close(c->old);
	rmdir(c->old_path);
	free(c->old_path);
}

fmt_kind fmt_stagedir_commit(fmt_stagedir *s, const char *dest_dir, int replace, fmt_err *e)
{
	commit_state c = { .s = s, .old = -1 };
	size_t n = s->n_names ? s->n_names : 1;
	/* as fmt_sink_finish: nothing is put in place once jansson has dropped what it could not
	 * allocate (a member probed or checked with a tree short of a value; the run ends with exit 3) */
	if (fmt_json_memory_failed())
		return fmt_fail(e, FMT_IO, "out of memory building the output (not written)");
	c.dest = open(dest_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dest < 0)
		return fmt_fail(e, FMT_IO, "cannot open the directory %s: %s", dest_dir, strerror(errno));
	c.existed = calloc(3 * n, 1);
	if (!c.existed) {
		close(c.dest);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	c.kept = c.existed + n;
	c.moved = c.kept + n;
	sigset_t old_mask;
	hold_signals(&old_mask);
	fmt_kind k = survey(&c, dest_dir, replace, e);
	if (k == FMT_OK)
		k = keep_existing(&c, dest_dir, e);
	size_t done = 0;
	for (; k == FMT_OK && done < s->n_names; done++)
		if (move_in(&c, done, replace) != 0)
			k = fmt_fail(e, errno == EEXIST ? FMT_USAGE : FMT_IO, "%s/%.200s: cannot move the new file in: %s",
				     dest_dir, s->names[done], strerror(errno));
	if (k != FMT_OK)
		roll_back(&c, k == FMT_OK ? done : done > 0 ? done - 1 : 0);
	else
		fsync(c.dest);
	drop_kept(&c);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	close(c.dest);
	free(c.existed);
	return k;
}
