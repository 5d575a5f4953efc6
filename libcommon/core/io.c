#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "fmt/checked.h"
#include "fmt/io.h"
#include "fmt/out.h"
#include "fmt/thread.h"

/* Test hooks (documented in io.h): stop the process with SIGSTOP at the Nth time it reaches
 * the point that variable names, so a test can deliver a signal there deterministically. */
typedef struct test_stop {
	const char *var;
	long reached, stop_at;         /* stop_at -1: the variable not read yet */
} test_stop;

static test_stop stop_at_sink = { "FMTKIT_TEST_STOP_AT_SINK", 0, -1 };
static test_stop stop_in_commit = { "FMTKIT_TEST_STOP_IN_COMMIT", 0, -1 };
static test_stop stop_at_map = { "FMTKIT_TEST_STOP_AT_MAP", 0, -1 };

static void test_stop_hook(test_stop *t)
{
	if (t->stop_at < 0) {
		const char *v = getenv(t->var);
		t->stop_at = v ? strtol(v, NULL, 10) : 0;
		if (t->stop_at < 0)
			t->stop_at = 0;
	}
	if (t->stop_at > 0 && ++t->reached == t->stop_at)
		raise(SIGSTOP);
}

/* ---- sources ---- */

static fmt_kind io_fail(fmt_err *e, const char *path, const char *what)
{
	return fmt_fail_file(e, FMT_IO, path, "%s: %s", what, strerror(errno));
}

/* What a file that is not a regular file is, for messages. */
static const char *type_name(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
	     : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/* The one refusal of a file of a kind a reader does not take (a device, a directory, a FIFO
 * found where a file was looked for), whoever reads it (an input FILE, a key, a secret, the file
 * an option names): it cannot be read as a file, IoError (exit 3) in every tool. what names it
 * ("the identity"), or NULL. */
static fmt_kind not_readable(mode_t mode, const char *expected, const char *what, fmt_err *e)
{
	if (what)
		return fmt_fail(e, FMT_IO, "%s is not %s (it is %s)", what, expected, type_name(mode));
	return fmt_fail(e, FMT_IO, "is %s (expected %s)", type_name(mode), expected);
}

/* ---- sequential sources ---- */

#define SEQ_BUF (1u << 20)

static const char *stream_name(const fmt_source *s)
{
	return strcmp(s->path, "-") == 0 ? "standard input" : "the stream";
}

static fmt_kind seq_truncated(fmt_source *s, uint64_t want, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "truncated: %s ends at byte %llu, %llu more bytes were expected",
			stream_name(s), (unsigned long long)s->pos,
			(unsigned long long)want);
}

/* read(2) of up to n bytes, 0 at the end (then the size is known). */
static fmt_kind seq_read_fd(fmt_source *s, uint8_t *dst, size_t n, size_t *got, fmt_err *e)
{
	for (;;) {
		ssize_t r;
		if (s->feed) {     /* fmt_source_stream_memory: a pipe's short reads, from memory */
			size_t part = s->feed_len - s->feed_pos;
			if (part > n)
				part = n;
			if (part > s->feed_chunk)
				part = s->feed_chunk;
			memcpy(dst, s->feed + s->feed_pos, part);
			s->feed_pos += part;
			r = (ssize_t)part;
		} else {
			r = read(s->fd, dst, n);
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return io_fail(e, s->path, "read");
		*got = (size_t)r;
		if (r == 0 && !s->eof) {
			s->eof = 1;
			s->size = s->pos + (s->rlen - s->rpos);
		}
		return FMT_OK;
	}
}

static void seq_pass(fmt_source *s, const uint8_t *p, size_t n)
{
	if (s->observe && n)
		s->observe(s->observe_ctx, p, n);
	s->pos += n;
}

/* Pass n bytes at the position, into dst (NULL: skip them); *got < n only at the end. */
static fmt_kind seq_take(fmt_source *s, uint8_t *dst, uint64_t n, uint64_t *got, fmt_err *e)
{
	*got = 0;
	while (n > 0) {
		if (s->rpos == s->rlen) {
			size_t r;
			fmt_kind k;
			if (dst && n >= SEQ_BUF) {      /* large reads go straight to their destination */
				k = seq_read_fd(s, dst, n > SSIZE_MAX ? SSIZE_MAX : (size_t)n, &r, e);
				if (k != FMT_OK || r == 0)
					return k;
				seq_pass(s, dst, r);
				dst += r;
				n -= r;
				*got += r;
				continue;
			}
			s->rpos = s->rlen = 0;
			k = seq_read_fd(s, s->rbuf, SEQ_BUF, &r, e);
			if (k != FMT_OK || r == 0)
				return k;
			s->rlen = r;
		}
		size_t part = s->rlen - s->rpos;
		if (part > n)
			part = (size_t)n;
		if (dst) {
			memcpy(dst, s->rbuf + s->rpos, part);
			dst += part;
		}
		seq_pass(s, s->rbuf + s->rpos, part);
		s->rpos += part;
		n -= part;
		*got += part;
	}
	return FMT_OK;
}

static fmt_kind seq_read(fmt_source *s, uint64_t off, uint8_t *dst, size_t n, size_t *got, fmt_err *e)
{
	*got = 0;
	if (off < s->head_len) {
		size_t part = s->head_len - off < n ? (size_t)(s->head_len - off) : n;
		memcpy(dst, s->head + off, part);
		dst += part;
		off += part;
		n -= part;
		*got += part;
	}
	if (n == 0)
		return FMT_OK;
	if (off < s->pos)
		return fmt_fail(e, FMT_UNSUPPORTED, "%s is read front to back: bytes at offset %llu were passed already "
				"(read a file instead)", strcmp(s->path, "-") == 0 ? "standard input" : "this stream",
				(unsigned long long)off);
	uint64_t gap = off - s->pos, skipped, taken = 0;
	fmt_kind k = seq_take(s, NULL, gap, &skipped, e);
	if (k == FMT_OK && skipped == gap)
		k = seq_take(s, dst, n, &taken, e);
	*got += (size_t)taken;
	return k;
}

static fmt_kind seq_start(fmt_source *s, size_t head, fmt_err *e);

static const char *stdin_reader;   /* fmt_stdin_claim's: what reads it, NULL: nothing yet */
static unsigned stdin_flags;

fmt_kind fmt_stdin_claim(const char *as, unsigned flags, fmt_err *e)
{
	if (stdin_reader && ((flags | stdin_flags) & FMT_STDIN_ONCE || strcmp(stdin_reader, as) != 0))
		return fmt_fail(e, FMT_USAGE, "standard input (-) is named twice: as %s and as %s", stdin_reader, as);
	stdin_reader = as;
	stdin_flags = flags;
	return FMT_OK;
}

/* Open path (a found file: only a regular file, opened without blocking) into s. */
static fmt_kind source_open(fmt_source *s, const char *path, int found, fmt_err *e)
{
	struct stat st;
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->path = strdup(path);
	if (!s->path)
		return fmt_fail(e, FMT_IO, "out of memory");
	int is_stdin = !found && strcmp(path, "-") == 0;
	if (is_stdin && fmt_stdin_claim("IN", 0, e) != FMT_OK) {
		fmt_source_close(s);
		return e->kind;
	}
	s->fd = is_stdin ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC | (found ? O_NONBLOCK : 0));
	if (s->fd < 0) {
		fmt_kind k = io_fail(e, path, "cannot open");
		fmt_source_close(s);
		return k;
	}
	if (fstat(s->fd, &st) != 0) {
		fmt_kind k = io_fail(e, path, "cannot stat");
		fmt_source_close(s);
		return k;
	}
	fmt_kind k = fmt_input_check(&st, e);
	if (k == FMT_OK && found && !S_ISREG(st.st_mode))
		k = not_readable(st.st_mode, "a regular file", NULL, e);
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		fmt_source_close(s);
		return k;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	if (S_ISREG(st.st_mode)) {
		s->size = (uint64_t)st.st_size;
		return FMT_OK;
	}
	return seq_start(s, FMT_SOURCE_HEAD, e);
}

fmt_kind fmt_source_open_sequential(fmt_source *s, const char *path, fmt_err *e)
{
	return source_open(s, path, 0, e);
}

fmt_kind fmt_source_open_found(fmt_source *s, const char *path, fmt_err *e)
{
	return source_open(s, path, 1, e);
}

/* A stream that keeps its first head bytes: read them (all of a short input is then held in
 * memory, an ordinary source). */
static fmt_kind seq_start(fmt_source *s, size_t head, fmt_err *e)
{
	const char *path = s->path;
	s->sequential = 1;
	s->size = FMT_SIZE_UNKNOWN;
	s->head = malloc(FMT_SOURCE_HEAD);
	s->rbuf = malloc(SEQ_BUF);
	uint64_t got = 0;
	fmt_kind k = s->head && s->rbuf ? seq_take(s, s->head, head, &got, e)
					: fmt_fail(e, FMT_IO, "out of memory");
	s->head_len = (size_t)got;
	if (k == FMT_OK && s->eof) {     /* all of it is in the head: an ordinary source */
		s->buf = s->head;
		s->head = NULL;
		s->size = s->head_len;
		s->head_len = 0;
		s->sequential = 0;
		free(s->rbuf);
		s->rbuf = NULL;
	}
	if (k != FMT_OK) {
		fmt_err_file(e, path);
		fmt_source_close(s);
	}
	return k;
}

fmt_kind fmt_source_stream_memory(fmt_source *s, const char *name, const void *data, size_t n, size_t head,
				  size_t chunk, fmt_err *e)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->path = strdup(name);
	if (!s->path)
		return fmt_fail(e, FMT_IO, "out of memory");
	s->feed = n ? data : (const uint8_t *)"";
	s->feed_len = n;
	s->feed_chunk = chunk ? chunk : 1;
	return seq_start(s, head < 1 ? 1 : head > FMT_SOURCE_HEAD ? FMT_SOURCE_HEAD : head, e);
}

fmt_kind fmt_source_keep(fmt_source *s, size_t n, fmt_err *e)
{
	if (!s->sequential || n <= s->head_len)
		return FMT_OK;
	if (s->pos != s->head_len)
		return fmt_fail(e, FMT_INTERNAL, "a stream read past its head cannot be read again");
	uint8_t *head = realloc(s->head, n);
	if (!head)
		return fmt_fail(e, FMT_IO, "out of memory reading %s", s->path);
	s->head = head;
	uint64_t got;
	fmt_kind k = seq_take(s, head + s->head_len, n - s->head_len, &got, e);
	s->head_len += (size_t)got;     /* what was read is kept, even on an error */
	if (k != FMT_OK)
		fmt_err_file(e, s->path);
	return k;
}

const char *fmt_temp_dir(void)
{
	const char *dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

/* IoError for a temporary file in dir that could not be made or written. */
static fmt_kind temp_fail(const char *what, const char *doing, const char *dir, int err, fmt_err *e)
{
	const char *env = getenv("TMPDIR");
	return fmt_fail(e, FMT_IO, "cannot %s %s in %s (%s): %s", doing, what, dir,
			env && *env ? "TMPDIR" : "TMPDIR is not set; set it to use another directory", strerror(err));
}

int fmt_temp_fd(const char *what, fmt_err *e)
{
	const char *dir = fmt_temp_dir();
	int fd = -1;
#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	/* file systems without O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels) take the other way */
	if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
		temp_fail(what, "create", dir, errno, e);
		return -1;
	}
#endif
	if (fd < 0) {
		char *path = NULL;
		if (asprintf(&path, "%s/fmtkit-XXXXXX", dir) < 0) {
			fmt_fail(e, FMT_IO, "out of memory");
			return -1;
		}
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			temp_fail(what, "create", dir, errno, e);
		else
			unlink(path);
		free(path);
	}
	return fd;
}

FILE *fmt_temp_file(const char *what, fmt_err *e)
{
	int fd = fmt_temp_fd(what, e);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w+b");
	if (!f) {
		temp_fail(what, "open", fmt_temp_dir(), errno, e);
		close(fd);
	}
	return f;
}

fmt_kind fmt_temp_file_write(FILE *f, const char *what, const void *p, size_t n, fmt_err *e)
{
	errno = 0;
	if (n && fwrite(p, 1, n, f) != n)
		return temp_fail(what, "write", fmt_temp_dir(), errno ? errno : ENOSPC, e);
	return FMT_OK;
}

fmt_kind fmt_temp_file_flush(FILE *f, const char *what, fmt_err *e)
{
	errno = 0;
	if (fflush(f) != 0)
		return temp_fail(what, "write", fmt_temp_dir(), errno ? errno : ENOSPC, e);
	return FMT_OK;
}

fmt_kind fmt_temp_file_replay(FILE *f, const char *what, fmt_kind (*put)(void *ctx, const void *p, size_t n, fmt_err *e),
			      void *ctx, fmt_err *e)
{
	enum { REPLAY_PIECE = 1u << 20 };
	fmt_kind flushed = fmt_temp_file_flush(f, what, e);
	if (flushed != FMT_OK)
		return flushed;
	if (fseek(f, 0, SEEK_SET) != 0)
		return fmt_fail(e, FMT_IO, "cannot read back %s", what);
	uint8_t *buf = malloc(REPLAY_PIECE);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = FMT_OK;
	size_t n;
	while (k == FMT_OK && (n = fread(buf, 1, REPLAY_PIECE, f)) > 0)
		k = put(ctx, buf, n, e);
	if (k == FMT_OK && ferror(f))
		k = fmt_fail(e, FMT_IO, "cannot read back %s", what);
	free(buf);
	return k;
}

int fmt_fd_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *at = p;
	while (n > 0) {
		ssize_t put = write(fd, at, n);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return errno;
		at += put;
		n -= (size_t)put;
	}
	return 0;
}

/* All of fd's n bytes at p written (a temporary file: the failure names where it is). */
static fmt_kind temp_write(int fd, const uint8_t *p, size_t n, const char *what, fmt_err *e)
{
	int failed = fmt_fd_write_all(fd, p, n);
	return failed ? temp_fail(what, "write", fmt_temp_dir(), failed, e) : FMT_OK;
}

/* ---- spill files ---- */

fmt_kind fmt_spill_open(fmt_source *s, const char *what, fmt_err *e)
{
	memset(s, 0, sizeof *s);
	s->path = (char *)what;
	s->fd = fmt_temp_fd(what, e);
	return s->fd < 0 ? e->kind : FMT_OK;
}

fmt_kind fmt_spill_write(const fmt_source *s, uint64_t at, const void *p, size_t n, fmt_err *e)
{
	const uint8_t *from = p;
	while (n > 0) {
		ssize_t put = pwrite(s->fd, from, n, (off_t)at);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return temp_fail(s->path, "write", fmt_temp_dir(), put < 0 ? errno : ENOSPC, e);
		from += put;
		at += (uint64_t)put;
		n -= (size_t)put;
	}
	return FMT_OK;
}

fmt_kind fmt_spill_map(fmt_source *s, uint64_t n, const uint8_t **p, fmt_err *e)
{
	struct stat st;
	fmt_spill_unmap(s);
	if (n > SIZE_MAX || n > (uint64_t)INT64_MAX)
		return fmt_fail(e, FMT_IO, "out of memory");
	/* a file shorter than n grows (sparse) to it: bytes not written yet read as zeros */
	if (n && (fstat(s->fd, &st) != 0 || ((uint64_t)st.st_size < n && ftruncate(s->fd, (off_t)n) != 0)))
		return temp_fail(s->path, "write", fmt_temp_dir(), errno, e);
	void *m = n ? mmap(NULL, (size_t)n, PROT_READ, MAP_SHARED, s->fd, 0) : NULL;
	if (m == MAP_FAILED)
		return fmt_fail(e, FMT_IO, "cannot map %s: %s", s->path, strerror(errno));
	s->map = m;
	s->size = n;
	*p = m ? m : (const uint8_t *)"";
	return FMT_OK;
}

void fmt_spill_set_length(fmt_source *s, uint64_t n)
{
	s->size = n;
}

void fmt_spill_unmap(fmt_source *s)
{
	if (s->map)
		munmap(s->map, (size_t)s->size);
	s->map = NULL;
	s->size = 0;
}

void fmt_spill_close(fmt_source *s)
{
	fmt_spill_unmap(s);
	if (s->path && s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* fmt_source_make_whole of a source over memory (fmt_source_stream_memory): the rest of it read
 * into memory. */
static fmt_kind make_whole_memory(fmt_source *s, fmt_err *e)
{
	size_t rest = s->feed_len - s->feed_pos + (s->rlen - s->rpos);
	if (rest > SIZE_MAX - s->head_len)
		return fmt_fail(e, FMT_IO, "input too large");
	uint8_t *buf = malloc(s->head_len + rest + 1);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory reading %s", s->path);
	memcpy(buf, s->head, s->head_len);
	uint64_t got;
	fmt_kind k = seq_take(s, buf + s->head_len, rest, &got, e);
	if (k != FMT_OK) {
		free(buf);
		return k;
	}
	s->buf = buf;
	s->size = s->head_len + got;
	return FMT_OK;
}

/* fmt_source_make_whole of a stream: its head and the rest of it copied to a temporary file,
 * which becomes s->fd. */
static fmt_kind make_whole_spool(fmt_source *s, fmt_err *e)
{
	char what[64];
	snprintf(what, sizeof what, "a copy of %s", stream_name(s));
	int fd = fmt_temp_fd(what, e);
	if (fd < 0)
		return e->kind;
	uint8_t *chunk = malloc(SEQ_BUF);
	fmt_kind k = chunk ? temp_write(fd, s->head, s->head_len, what, e) : fmt_fail(e, FMT_IO, "out of memory");
	uint64_t size = s->head_len, got = SEQ_BUF;
	while (k == FMT_OK && got == SEQ_BUF) {
		k = seq_take(s, chunk, SEQ_BUF, &got, e);
		if (k == FMT_OK)
			k = temp_write(fd, chunk, (size_t)got, what, e);
		size += got;
	}
	free(chunk);
	if (k != FMT_OK) {
		close(fd);
		return k;
	}
	close(s->fd);
	s->fd = fd;
	s->size = size;
	return FMT_OK;
}

/* A stream can be made whole only while no read has gone past its head. */
static fmt_kind stream_rewindable(const fmt_source *s, fmt_err *e)
{
	return s->pos == s->head_len ? FMT_OK
				     : fmt_fail(e, FMT_INTERNAL, "a stream read past its head cannot be read again");
}

/* s, whose bytes a make_whole strategy has put in s->buf or s->fd (and s->size), reads as a
 * whole source from now on: its stream state goes. */
static void stream_made_whole(fmt_source *s)
{
	free(s->head);
	free(s->rbuf);
	s->head = s->rbuf = NULL;
	s->head_len = s->rlen = s->rpos = 0;
	s->feed = NULL;
	s->sequential = 0;
	s->observe = NULL;
	s->pos = 0;
}

fmt_kind fmt_source_make_whole(fmt_source *s, fmt_err *e)
{
	if (!s->sequential)
		return FMT_OK;
	fmt_kind k = stream_rewindable(s, e);
	if (k == FMT_OK)
		k = s->feed ? make_whole_memory(s, e) : make_whole_spool(s, e);
	if (k != FMT_OK) {
		fmt_err_file(e, s->path);
		return k;
	}
	stream_made_whole(s);
	return FMT_OK;
}

fmt_kind fmt_source_observe(fmt_source *s, fmt_source_observer fn, void *ctx, fmt_err *e)
{
	if (!s->sequential) {     /* a file: bytes are observed as reads reach them, from 0 */
		s->observe = fn;
		s->observe_ctx = ctx;
		s->pos = 0;
		return FMT_OK;
	}
	if (fn && s->pos > s->head_len)
		return fmt_fail(e, FMT_UNSUPPORTED, "the stream has passed bytes that were not kept");
	if (fn && s->pos)
		fn(ctx, s->head, (size_t)s->pos);
	s->observe = fn;
	s->observe_ctx = ctx;
	return FMT_OK;
}

fmt_kind fmt_source_open(fmt_source *s, const char *path, fmt_err *e)
{
	fmt_kind k = fmt_source_open_sequential(s, path, e);
	if (k == FMT_OK && s->sequential && (k = fmt_source_make_whole(s, e)) != FMT_OK)
		fmt_source_close(s);
	return k;
}

fmt_kind fmt_source_from_memory(fmt_source *s, const char *name, const void *data, size_t n, fmt_err *e)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	s->path = strdup(name);
	s->buf = malloc(n ? n : 1);
	if (!s->path || !s->buf) {
		fmt_source_close(s);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	if (n)
		memcpy(s->buf, data, n);
	s->size = n;
	return FMT_OK;
}

fmt_kind fmt_source_adopt_memory(fmt_source *s, const char *name, void *data, size_t n, fmt_err *e)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
	if (!(s->path = strdup(name)))
		return fmt_fail(e, FMT_IO, "out of memory");
	s->buf = data;
	s->size = n;
	return FMT_OK;
}

/* The block after the one whose next link is *next, in a chain of fixed blocks that a signal
 * handler walks with atomic loads only: linked here (size bytes, zeroed) when there is none yet,
 * NULL when out of memory. Blocks are never freed, so a handler never reads freed memory. */
static void *chain_next(_Atomic(void *) *next, size_t size)
{
	void *b = atomic_load(next);
	if (b)
		return b;
	void *fresh = calloc(1, size);
	if (!fresh)
		return NULL;
	if (atomic_compare_exchange_strong(next, &b, fresh))
		return fresh;
	free(fresh); /* another thread linked one: use it */
	return b;
}

/* ---- mappings a SIGBUS is reported for ----
 * A mapped file that another process truncates raises SIGBUS at the first access past its new
 * end. The mappings of sources are listed here with a note (fmt_map_notes) for the handler of
 * the CLI layer to write: slots in blocks of 64 linked as more mappings are live at once (a
 * merge of 100 Arrow files maps all of them), claimed and released with atomic operations, so
 * that the handler (fmt_map_note_at: loads and compares only) sees a consistent table whatever
 * thread it interrupts. A mapping is not listed only when no block can be allocated: a SIGBUS
 * in it kills the process as before. */
#define WATCH_BLOCK_SLOTS 64
typedef struct watched_map {
	_Atomic(const uint8_t *) start;  /* NULL: a free slot */
	_Atomic size_t len;              /* 0 (matches nothing) until the note is set */
	_Atomic(void *) note;
} watched_map;
typedef struct watch_block {
	watched_map slot[WATCH_BLOCK_SLOTS];
	_Atomic(void *) next;            /* the next watch_block */
} watch_block;
static watch_block watch_first;
static void *(*_Atomic map_note_fn)(const char *path);

void fmt_map_notes(void *(*note)(const char *path))
{
	atomic_store(&map_note_fn, note);
}

void fmt_map_watch(const void *p, size_t len, const char *path)
{
	void *(*fn)(const char *) = atomic_load(&map_note_fn);
	void *note = fn ? fn(path) : NULL;
	if (!note)
		return;
	for (watch_block *b = &watch_first; b; b = chain_next(&b->next, sizeof *b))
		for (size_t i = 0; i < WATCH_BLOCK_SLOTS; i++) {
			const uint8_t *expected = NULL;
			watched_map *w = &b->slot[i];
			if (atomic_compare_exchange_strong(&w->start, &expected, (const uint8_t *)p)) {
				atomic_store(&w->note, note);
				atomic_store(&w->len, len);
				return;
			}
		}
	free(note);
}

void fmt_map_unwatch(const void *p)
{
	for (watch_block *b = &watch_first; b; b = atomic_load(&b->next))
		for (size_t i = 0; i < WATCH_BLOCK_SLOTS; i++) {
			watched_map *w = &b->slot[i];
			if (atomic_load(&w->start) != p)
				continue;
			atomic_store(&w->len, 0);
			void *note = atomic_exchange(&w->note, NULL);
			atomic_store(&w->start, NULL);
			free(note);
			return;
		}
}

const void *fmt_map_note_at(const void *addr)
{
	const uint8_t *a = addr;
	for (const watch_block *b = &watch_first; b; b = atomic_load(&b->next))
		for (size_t i = 0; i < WATCH_BLOCK_SLOTS; i++) {
			const watched_map *w = &b->slot[i];
			const uint8_t *start = atomic_load(&w->start);
			size_t len = atomic_load(&w->len);
			void *note = atomic_load(&w->note);
			/* start read again: the slot was not released and claimed anew meanwhile */
			if (start && a >= start && (size_t)(a - start) < len && atomic_load(&w->start) == start)
				return note;
		}
	return NULL;
}

void fmt_source_close(fmt_source *s)
{
	if (s->map) {
		fmt_map_unwatch(s->map);
		munmap(s->map, (size_t)s->size);
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s->buf);
	free(s->head);
	free(s->rbuf);
	free(s->path);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

static fmt_kind source_range(const fmt_source *s, uint64_t off, uint64_t n, fmt_err *e)
{
	uint64_t end;
	if (fmt_add_u64(off, n, &end) || end > s->size)
		return fmt_fail(e, FMT_INVALID_FORMAT,
				"truncated: %llu bytes at offset %llu run past the end of the file (%llu bytes)",
				(unsigned long long)n, (unsigned long long)off, (unsigned long long)s->size);
	return FMT_OK;
}

static fmt_kind read_at(fmt_source *s, uint64_t off, void *dst, size_t n, fmt_err *e);

/* An observed file: the bytes of a read that continue what was observed go to the observer,
 * after a small gap (padding between tensors) is read to join them (reads from several threads
 * take turns here; a read past a larger gap is not observed, and fmt_source_observe_to reads
 * what is left). */
#define OBSERVE_GAP (1u << 20)

static void observe_read(fmt_source *s, uint64_t off, const uint8_t *p, size_t n)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	if (s->observe && off > s->pos && off - s->pos <= OBSERVE_GAP) {
		size_t gap = (size_t)(off - s->pos);
		uint8_t *g = malloc(gap);
		fmt_err e;
		if (g && read_at(s, s->pos, g, gap, &e) == FMT_OK) {
			s->observe(s->observe_ctx, g, gap);
			s->pos = off;
		}
		free(g);
	}
	if (s->observe && off <= s->pos && off + n > s->pos) {
		s->observe(s->observe_ctx, p + (s->pos - off), (size_t)(off + n - s->pos));
		s->pos = off + n;
	}
	pthread_mutex_unlock(&lock);
}

fmt_kind fmt_source_observe_to(fmt_source *s, uint64_t end, fmt_err *e)
{
	enum { CHUNK = 256u << 10 };
	if (s->sequential || s->pos >= end)
		return FMT_OK;
	uint8_t *buf = malloc(CHUNK);
	fmt_kind k = buf ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	while (k == FMT_OK && s->pos < end) {
		size_t part = end - s->pos < CHUNK ? (size_t)(end - s->pos) : CHUNK;
		k = fmt_source_read(s, s->pos, buf, part, e);
	}
	free(buf);
	return k;
}

fmt_kind fmt_source_read(fmt_source *s, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	fmt_kind k = source_range(s, off, n, e);
	if (k != FMT_OK)
		return k;
	if (s->sequential) {
		size_t got;
		k = seq_read(s, off, dst, n, &got, e);
		return k != FMT_OK || got == n ? k : seq_truncated(s, n - got, e);
	}
	k = read_at(s, off, dst, n, e);
	if (k == FMT_OK && s->observe)
		observe_read(s, off, dst, n);
	return k;
}

static fmt_kind read_at(fmt_source *s, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	if (s->buf || s->map) {
		memcpy(dst, (s->buf ? s->buf : (const uint8_t *)s->map) + off, n);
		return FMT_OK;
	}
	return fmt_source_pread(s, off, dst, n, e);
}

/* Whether [p, p + n) lies in s's mapping. */
static int in_mapping(const fmt_source *s, const uint8_t *from, size_t n)
{
	const uint8_t *map = s->map;
	return map && from >= map && from <= map + s->size && n <= (size_t)(map + s->size - from);
}

uint64_t fmt_source_mapped_at(const fmt_source *s, const void *p, size_t n)
{
	return s->fd >= 0 && in_mapping(s, p, n) ? (uint64_t)((const uint8_t *)p - (const uint8_t *)s->map) : UINT64_MAX;
}

/* n bytes of fd at off, however many reads it takes: 0; 1 when the file ends first; -1 when a
 * read fails (errno says why). */
static int pread_full(int fd, void *dst, size_t n, uint64_t off)
{
	uint8_t *p = dst;
	while (n > 0) {
		ssize_t got = pread(fd, p, n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -1 : 1;
		p += got;
		n -= (size_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

fmt_kind fmt_source_pread(const fmt_source *s, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	int r = pread_full(s->fd, dst, n, off);
	if (r < 0)
		return io_fail(e, s->path, "read");
	return r ? fmt_fail(e, FMT_IO, FMT_MSG_SHRANK) : FMT_OK;
}

fmt_kind fmt_source_read_upto(fmt_source *s, uint64_t off, void *dst, size_t n, size_t *got, fmt_err *e)
{
	*got = 0;
	if (s->sequential)
		return seq_read(s, off, dst, n, got, e);
	if (off >= s->size)
		return FMT_OK;
	size_t part = s->size - off < n ? (size_t)(s->size - off) : n;
	fmt_kind k = fmt_source_read(s, off, dst, part, e);
	if (k == FMT_OK)
		*got = part;
	return k;
}

fmt_kind fmt_source_view(fmt_source *s, uint64_t off, uint64_t n, const uint8_t **out, fmt_err *e)
{
	fmt_kind k = source_range(s, off, n, e);
	if (k != FMT_OK)
		return k;
	if (s->sequential) {
		if (off + n > s->head_len)
			return fmt_fail(e, FMT_UNSUPPORTED, "%s is read front to back and cannot be mapped",
					strcmp(s->path, "-") == 0 ? "standard input" : "this stream");
		*out = s->head + off;
		return FMT_OK;
	}
	if (s->buf) {
		*out = s->buf + off;
		return FMT_OK;
	}
	if (n == 0) {
		static const uint8_t nothing[1];
		*out = nothing;
		return FMT_OK;
	}
	if (!__atomic_load_n(&s->map, __ATOMIC_ACQUIRE)) {
		if (s->size > SIZE_MAX)
			return fmt_fail(e, FMT_IO, "file too large to map");
		void *p = mmap(NULL, (size_t)s->size, PROT_READ, MAP_SHARED, s->fd, 0);
		if (p == MAP_FAILED)
			return io_fail(e, s->path, "cannot map");
		/* Tensors of one file may be viewed on several threads at once: one mapping wins. */
		void *none = NULL;
		if (!__atomic_compare_exchange_n(&s->map, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			munmap(p, (size_t)s->size);
		else
			fmt_map_watch(p, (size_t)s->size, s->path);
		test_stop_hook(&stop_at_map);
	}
	*out = (const uint8_t *)s->map + off;
	return FMT_OK;
}

void fmt_source_drop(const fmt_source *s, const void *p, size_t n)
{
	const uint8_t *from = p;
	if (!in_mapping(s, from, n))
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)from + page - 1) & ~(page - 1), end = ((uintptr_t)from + n) & ~(page - 1);
	if (end > start)
		(void)madvise((void *)start, end - start, MADV_DONTNEED);
}

/* A stream that holds a text of at most max bytes: read into memory up to max + 1 bytes (one
 * more says it is over the limit, and the rest is never read), then the source's bytes, an
 * ordinary source as a short stream is. It was copied whole to a temporary file first (a
 * stream of gigabytes piped to a tool that wants a 64 MiB index filled the disk before the
 * limit said no). */
static fmt_kind read_text_stream(fmt_source *s, size_t max, fmt_err *e)
{
	size_t len = 0, cap = 0, got = 1, want = max < SIZE_MAX - 1 ? max + 1 : max;
	uint8_t *buf = NULL;
	fmt_kind k = stream_rewindable(s, e);
	while (k == FMT_OK && got > 0 && len < want) {
		if (len == cap) {
			size_t next = cap ? (cap > want / 2 ? want : 2 * cap) : (s->head_len + SEQ_BUF < want ? s->head_len + SEQ_BUF : want);
			uint8_t *p = realloc(buf, next + 1);
			if (!p) {
				k = fmt_fail(e, FMT_IO, "out of memory reading %s", s->path);
				break;
			}
			buf = p;
			cap = next;
		}
		k = fmt_source_read_upto(s, len, buf + len, cap - len, &got, e);
		len += got;
	}
	if (k == FMT_OK && len > max)
		k = fmt_fail(e, FMT_INVALID_FORMAT, "%s is more than the %zu-byte limit", stream_name(s), max);
	if (k == FMT_OK && !buf && !(buf = calloc(1, 1)))
		k = fmt_fail(e, FMT_IO, "out of memory reading %s", s->path);
	if (k != FMT_OK) {
		free(buf);
		return k;
	}
	stream_made_whole(s);
	s->buf = buf;
	s->size = len;
	return FMT_OK;
}

fmt_kind fmt_source_read_text(fmt_source *s, size_t max, char **text, fmt_err *e)
{
	if (s->sequential) {
		fmt_kind k = read_text_stream(s, max, e);
		if (k != FMT_OK)
			return k;
	}
	if (s->size > max)
		return fmt_fail(e, FMT_INVALID_FORMAT, "file is %llu bytes, more than the %zu-byte limit",
				(unsigned long long)s->size, max);
	char *buf = malloc((size_t)s->size + 1);
	if (!buf)
		return fmt_fail(e, FMT_IO, "out of memory");
	fmt_kind k = fmt_source_read(s, 0, buf, (size_t)s->size, e);
	if (k != FMT_OK) {
		free(buf);
		return k;
	}
	buf[s->size] = '\0';
	*text = buf;
	return FMT_OK;
}

/* ---- small files ---- */

fmt_kind fmt_input_check(const struct stat *st, fmt_err *e)
{
	if (S_ISDIR(st->st_mode))
		return fmt_fail(e, FMT_IO, "is a directory");
	/* A device reports no size and may never end (/dev/zero): it is not a model or a dataset. */
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return not_readable(st->st_mode, "a regular file or a pipe", NULL, e);
	return FMT_OK;
}

fmt_kind fmt_small_check(int fd, unsigned flags, const char *what, struct stat *st, fmt_err *e)
{
	if (fstat(fd, st) != 0)
		return fmt_fail(e, FMT_IO, "cannot stat%s%s: %s", what ? " " : "", what ? what : "", strerror(errno));
	if (S_ISREG(st->st_mode))
		return FMT_OK;
	int named = (flags & FMT_SMALL_NAMED) != 0;
	/* A pipe ends when its writer says so. */
	if (named && S_ISFIFO(st->st_mode)) {
		/* Opened without blocking (a FIFO with no writer opens at once and reads as empty);
		 * the reads block: a writer (pass asking for a passphrase) may take its time. */
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
			return fmt_fail(e, FMT_IO, "fcntl: %s", strerror(errno));
		return FMT_OK;
	}
	return not_readable(st->st_mode, named ? "a regular file or a pipe" : "a regular file", what, e);
}

fmt_kind fmt_small_read(int fd, void *buf, size_t cap, size_t *len, fmt_err *e)
{
	uint8_t *p = buf;
	*len = 0;
	while (*len < cap) {
		ssize_t got = read(fd, p + *len, cap - *len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return fmt_fail(e, FMT_IO, "read: %s", strerror(errno));
		if (got == 0)
			break;
		*len += (size_t)got;
	}
	return FMT_OK;
}

static fmt_kind text_too_large(size_t max, fmt_err *e)
{
	return fmt_fail(e, FMT_INVALID_FORMAT, "more than %zu bytes (the limit for this file)", max);
}

/* The whole of fd, at most max bytes (max + 1 read means "too large"), growing the buffer as
 * bytes arrive: a size the file system reports is a first guess only. */
static fmt_kind read_small_fd(int fd, const struct stat *st, size_t max, char **out, size_t *len, fmt_err *e)
{
	size_t limit = max < SIZE_MAX ? max + 1 : max, cap = S_ISREG(st->st_mode) && (uint64_t)st->st_size < limit
		? (size_t)st->st_size + 1 : limit < 4096 ? limit : 4096;
	char *buf = NULL;
	*len = 0;
	for (;;) {
		char *bigger = realloc(buf, cap + 1);
		if (!bigger) {
			free(buf);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		buf = bigger;
		size_t got;
		fmt_kind k = fmt_small_read(fd, buf + *len, cap - *len, &got, e);
		*len += got;
		if (k == FMT_OK && *len == limit)
			k = text_too_large(max, e);
		if (k != FMT_OK) {
			free(buf);
			return k;
		}
		if (*len < cap)
			break;
		cap = cap > limit / 2 ? limit : cap * 2;
	}
	buf[*len] = '\0';
	*out = buf;
	return FMT_OK;
}

fmt_kind fmt_read_small(const char *path, unsigned flags, size_t max, char **out, size_t *len, fmt_err *e)
{
	struct stat st;
	int is_stdin = (flags & FMT_SMALL_NAMED) && strcmp(path, "-") == 0;
	if (is_stdin && fmt_stdin_claim("a file an option names", FMT_STDIN_ONCE, e) != FMT_OK)
		return e->kind;
	int fd = is_stdin ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0) : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return io_fail(e, path, "cannot open");
	/* "-" may be the terminal (nk-run --input-file - typed in): it ends at ^D. A secret is
	 * never read this way (fmt_secret_from_file): it would echo. */
	fmt_kind k = is_stdin && isatty(fd) ? (fstat(fd, &st) == 0 ? FMT_OK : io_fail(e, path, "cannot stat"))
					    : fmt_small_check(fd, flags, NULL, &st, e);
	if (k == FMT_OK)
		k = read_small_fd(fd, &st, max, out, len, e);
	close(fd);
	if (k != FMT_OK)
		fmt_err_file(e, path);
	return k;
}

fmt_kind fmt_read_file(const char *path, size_t max, char **out, size_t *len, fmt_err *e)
{
	return fmt_read_small(path, FMT_SMALL_NAMED, max, out, len, e);
}

const char *fmt_unsafe_file_name(const char *name, size_t len)
{
	if (len == 0)
		return "is empty";
	if (memchr(name, '\0', len))
		return "contains a NUL byte";
	if (memchr(name, '/', len) || memchr(name, '\\', len))
		return "contains a path separator";
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return "is a directory reference";
	return NULL;
}

char *fmt_dir_prefix(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash && strcmp(path, "-") != 0 ? (size_t)(slash - path) + 1 : 0;
	return strndup(path, n);
}

const char *fmt_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

int fmt_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0)
		return 0;
	if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* path with its directory resolved (realpath) and its name as given (malloc'd); NULL when the
 * directory cannot be resolved or memory runs out. */
static char *resolved_dir_path(const char *path)
{
	char *dir = fmt_dir_prefix(path);
	char *real = dir ? realpath(*dir ? dir : ".", NULL) : NULL;
	char *out = NULL;
	if (real) {
		size_t n = strlen(real) + strlen(fmt_base_name(path)) + 2;
		if ((out = malloc(n)))
			snprintf(out, n, "%s/%s", real, fmt_base_name(path));
	}
	free(dir);
	free(real);
	return out;
}

int fmt_same_path(const char *a, const char *b)
{
	if (fmt_same_file(a, b))
		return 1;
	char *ra = resolved_dir_path(a), *rb = resolved_dir_path(b);
	int same = ra && rb && strcmp(ra, rb) == 0;
	free(ra);
	free(rb);
	return same;
}

fmt_kind fmt_check_distinct(const char *input, const char *output, fmt_err *e)
{
	if (fmt_same_file(input, output))
		return fmt_fail_file(e, FMT_USAGE, output, "output is the same file as input %s", input);
	return FMT_OK;
}

/* ---- atomic sinks ---- */

/* Temporary files that a signal must remove, any number of them (an unpack of a large bundle or
 * a set of thousands of shards keeps every temporary until the last is written). Slots live in
 * blocks that are linked once and never freed; a slot is claimed and released with atomic
 * compare-and-swap, so the handler, which only walks the blocks and calls unlink (both
 * async-signal-safe), always sees a consistent list whatever thread it interrupts. */
#define LIVE_BLOCK_SLOTS 64
typedef struct live_block {
	_Atomic(char *) slot[LIVE_BLOCK_SLOTS];
	_Atomic(void *) next;            /* the next live_block (chain_next) */
} live_block;
static live_block live_first;
/* The directories made for them (a new key's, fmt_tmp_track_dir), in slots of the same kind. */
static live_block dirs_first;

void fmt_tmp_remove_all(void)
{
	for (live_block *b = &live_first; b; b = atomic_load(&b->next))
		for (int i = 0; i < LIVE_BLOCK_SLOTS; i++) {
			char *path = atomic_load(&b->slot[i]);
			if (path)
				unlink(path);
		}
	/* Then the directories, with rmdir (async-signal-safe, and only an empty one goes), the
	 * deepest first whatever order their slots are in: another pass while one went (each goes
	 * once, so the passes end). */
	for (int removed = 1; removed;) {
		removed = 0;
		for (live_block *b = &dirs_first; b; b = atomic_load(&b->next))
			for (int i = 0; i < LIVE_BLOCK_SLOTS; i++) {
				char *path = atomic_load(&b->slot[i]);
				if (path && rmdir(path) == 0)
					removed = 1;
			}
	}
}

static void remove_live_and_reraise(int sig)
{
	fmt_tmp_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Every signal whose default ends the process and that a user, a shell, a batch scheduler
 * (SIGXCPU at ulimit -t, SIGUSR1/2 before a kill) or the kernel (SIGXFSZ past ulimit -f) sends. */
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2,
				       SIGXCPU, SIGXFSZ, SIGVTALRM };

/* Called at every temporary: a signal a prompt handled the last time (fmt/prompt.h: its handler
 * lasts while the user types) is taken once it is back at its default. */
static void install_handlers(void)
{
	struct sigaction sa, was;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = remove_live_and_reraise;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++)
		/* only a signal that would end the process as it is: one the caller ignores (nohup:
		 * SIGHUP) stays ignored, and one it handles stays its own (this handler would end the
		 * process instead: libFuzzer's SIGALRM, its unit timer, killed the fuzz targets once
		 * they had written a file) */
		if (sigaction(cleanup_signals[i], NULL, &was) == 0 && !(was.sa_flags & SA_SIGINFO) &&
		    was.sa_handler == SIG_DFL)
			sigaction(cleanup_signals[i], &sa, NULL);
}

/* Track path in the slots from first on for removal on a signal; 0, or -1 when out of memory. */
static int track_in(live_block *first, char *path)
{
	for (live_block *b = first; b; b = chain_next(&b->next, sizeof *b))
		for (int i = 0; i < LIVE_BLOCK_SLOTS; i++) {
			char *expected = NULL;
			if (atomic_compare_exchange_strong(&b->slot[i], &expected, path))
				return 0;
		}
	return -1;
}

static void untrack_in(live_block *first, char *path)
{
	for (live_block *b = first; b; b = atomic_load(&b->next))
		for (int i = 0; i < LIVE_BLOCK_SLOTS; i++) {
			char *expected = path;
			if (atomic_compare_exchange_strong(&b->slot[i], &expected, NULL))
				return;
		}
}

static int track_tmp(char *path)
{
	return track_in(&live_first, path);
}

static void untrack_tmp(char *path)
{
	untrack_in(&live_first, path);
}

int fmt_tmp_track(char *path)
{
	install_handlers();
	return track_tmp(path);
}

void fmt_tmp_untrack(char *path)
{
	untrack_tmp(path);
}

int fmt_tmp_track_dir(char *path)
{
	install_handlers();
	return track_in(&dirs_first, path);
}

void fmt_tmp_untrack_dir(char *path)
{
	untrack_in(&dirs_first, path);
}

void fmt_test_stop_hook(void)
{
	test_stop_hook(&stop_at_sink);
}

#define SINK_BUF_SIZE FMT_SINK_PIECE
/* A piece of half the buffer or more is written as it is, after what is buffered: copying it
 * into the buffer first cost a -T 2 zstd .apr write (1 GB, jobs of 1 MiB compressing to 0.92
 * MiB each) 0.07 s of CPU for nothing (perf: the memcpy in fmt_sink_write, 4 % of its samples). */
#define SINK_DIRECT (SINK_BUF_SIZE / 2)

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* A FIFO or a character device (/dev/null) at an output's path is written into as standard
 * output is: renaming a file over it (--force) replaced /dev/null itself when run as root. */
static int is_stream_node(mode_t mode)
{
	return S_ISFIFO(mode) || S_ISCHR(mode);
}

fmt_kind fmt_sink_may_create(const char *path, unsigned flags, fmt_err *e)
{
	struct stat st;
	if (strcmp(path, "-") == 0 || lstat(path, &st) != 0)
		return FMT_OK;
	/* --force replaces a file; a directory could not be renamed over at the end of the work. */
	if (S_ISDIR(st.st_mode))
		return fmt_fail_file(e, FMT_USAGE, path, "is a directory (expected the output file's name)");
	if (is_stream_node(st.st_mode) && !(flags & FMT_SINK_FILE))
		return FMT_OK;
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		return fmt_fail_file(e, FMT_USAGE, path, "is %s; %s", type_name(st.st_mode),
				flags & FMT_SINK_FILE ? "the files of a set are created and renamed into place"
						      : "only a file, a FIFO or a character device is written");
	}
	if (flags & FMT_SINK_FORCE)
		return FMT_OK;
	return fmt_fail_file(e, FMT_USAGE, path, "output exists (use --force to overwrite)");
}

const char *fmt_sink_stream_name(const fmt_sink *k)
{
	return k->own_fd ? "a FIFO or device" : "standard output";
}

fmt_kind fmt_sink_open(fmt_sink *k, const char *path, unsigned flags, fmt_err *e)
{
	memset(k, 0, sizeof *k);
	k->fd = -1;
	struct stat st;
	if (strcmp(path, "-") == 0) {
		if (!(flags & FMT_SINK_TEXT) && isatty(STDOUT_FILENO))
			return fmt_fail(e, FMT_USAGE, "refusing to write binary output to a terminal");
		k->is_stdout = 1;
		k->fd = STDOUT_FILENO;
	} else if (fmt_sink_may_create(path, flags, e) != FMT_OK) {
		return e->kind;
	} else if (lstat(path, &st) == 0 && is_stream_node(st.st_mode)) {
		k->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (k->fd < 0)
			return io_fail(e, path, "cannot open");
		k->is_stdout = 1;
		k->own_fd = 1;
		if (!(k->path = strdup(path))) {
			fmt_sink_abort(k);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		if (!(flags & FMT_SINK_TEXT) && isatty(k->fd)) {
			fmt_sink_abort(k);
			return fmt_fail_file(e, FMT_USAGE, path, "refusing to write binary output to a terminal");
		}
	} else {
		char *dir = dir_of(path);
		k->path = strdup(path);
		if (!dir || !k->path || asprintf(&k->tmp_path, "%s/.fmtkit-tmp-XXXXXX", dir) < 0) {
			free(dir);
			k->tmp_path = NULL;
			fmt_sink_abort(k);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		free(dir);
		install_handlers();
		k->fd = mkostemp(k->tmp_path, O_CLOEXEC);
		if (k->fd < 0) {
			fmt_kind r = io_fail(e, path, "cannot create a temporary file beside the output");
			free(k->tmp_path);
			k->tmp_path = NULL;
			fmt_sink_abort(k);
			return r;
		}
		if (track_tmp(k->tmp_path) != 0) {
			fmt_sink_abort(k);
			return fmt_fail(e, FMT_IO, "out of memory");
		}
		test_stop_hook(&stop_at_sink);
	}
	k->buf = malloc(SINK_BUF_SIZE);
	if (!k->buf) {
		fmt_sink_abort(k);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

/* Start writing back what the kernel holds every WRITEBACK_STEP bytes, so that the disk works
 * while we compute and the fsync before the rename waits for the tail only (it waited for the
 * whole file: 0.3 s of a 1.4 s conversion of 1 GB; with a 16 MiB step, 5-10 ms of a 90 ms
 * Q4_0 conversion on every thread count, the part that threads cannot shorten; 1-3 ms at 1 MiB).
 * Advisory: a failure changes nothing. */
#define WRITEBACK_STEP (1u << 20)

/* Written back is not yet kept: a disk (or a virtual disk whose host caches what the guest
 * writes back) holds the data until it is asked to flush, and the fsync before the rename then
 * waited for that in one go however early the writeback started (0.1 s of a 265 MB Q8_0
 * conversion on this project's 2-core VM, the same on one thread and two). A thread of the
 * sink's own asks with fdatasync at every step while the work goes on; the fsync waits for the
 * last step only. The steps are FLUSH_STEP_SMALL apart over the first FLUSH_SMALL_UNTIL bytes,
 * FLUSH_STEP after: a 26 MB Q4_0 output then waits for at most 4 MiB at the end, not 10 (183 MB
 * llama on two threads, medians of 7 runs: 0.053 s instead of 0.058), and a large output is not
 * asked for a flush four times as often (1 GB zstd .apr on two threads: 1.04-1.09 s with 4 MiB
 * steps throughout, 1.00-1.01 with 16). Its first failure is kept for that fsync, which would
 * not see it again (a file's writeback error is reported once per open file). */
#define FLUSH_STEP_SMALL (4u << 20)
#define FLUSH_SMALL_UNTIL (64u << 20)
#define FLUSH_STEP (16u << 20)

/* How many flush steps the first `bytes` bytes of output pass. */
static uint64_t flush_steps(uint64_t bytes)
{
	if (bytes < FLUSH_SMALL_UNTIL)
		return bytes / FLUSH_STEP_SMALL;
	return FLUSH_SMALL_UNTIL / FLUSH_STEP_SMALL + (bytes - FLUSH_SMALL_UNTIL) / FLUSH_STEP;
}

struct fmt_sink_flusher {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	int fd;
	uint64_t asked, served;    /* steps asked for, steps whose flush has started */
	int stop;
	int error;                 /* errno of the first failed fdatasync, or 0 */
};

static void *flusher_main(void *arg)
{
	struct fmt_sink_flusher *f = arg;
	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		if (f->served == f->asked) {
			pthread_cond_wait(&f->wake, &f->lock);
			continue;
		}
		f->served = f->asked;
		pthread_mutex_unlock(&f->lock);
		int failed = fdatasync(f->fd) != 0 ? errno : 0;
		pthread_mutex_lock(&f->lock);
		if (failed && !f->error)
			f->error = failed;
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* The sink's flusher, started by the first of its writers to need it (NULL when it cannot
 * start: the fsync then does it all, as before). */
static struct fmt_sink_flusher *flusher_of(fmt_sink *k)
{
	static pthread_mutex_t starting = PTHREAD_MUTEX_INITIALIZER;
	struct fmt_sink_flusher *f = __atomic_load_n(&k->flusher, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	pthread_mutex_lock(&starting);
	f = k->flusher;
	if (!f && (f = calloc(1, sizeof *f)) != NULL) {
		pthread_mutex_init(&f->lock, NULL);
		pthread_cond_init(&f->wake, NULL);
		f->fd = k->fd;
		if (fmt_thread_start(&f->thread, 64u << 10, flusher_main, f) != 0) {
			pthread_cond_destroy(&f->wake);
			pthread_mutex_destroy(&f->lock);
			free(f);
			f = NULL;
		} else {
			__atomic_store_n(&k->flusher, f, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&starting);
	return f;
}

static void ask_flush(fmt_sink *k)
{
	struct fmt_sink_flusher *f = flusher_of(k);
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->asked++;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
}

/* Stop the sink's flusher (after the flush it is in, if any): the errno of its first failure,
 * or 0. */
static int stop_flusher(fmt_sink *k)
{
	struct fmt_sink_flusher *f = k->flusher;
	if (!f)
		return 0;
	pthread_mutex_lock(&f->lock);
	f->stop = 1;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	int error = f->error;
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	free(f);
	k->flusher = NULL;
	return error;
}

static void start_writeback(fmt_sink *k, size_t n)
{
	if (k->is_stdout)
		return;
	uint64_t before = __atomic_fetch_add(&k->handed, n, __ATOMIC_RELAXED);
	if (before / WRITEBACK_STEP != (before + n) / WRITEBACK_STEP)
		(void)sync_file_range(k->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	if (k->tmp_path && flush_steps(before) != flush_steps(before + n))
		ask_flush(k);
}

/* The output as messages name it: as the user gave it (an in-place sink writes the resolved path). */
static const char *sink_name(const fmt_sink *k)
{
	return k->name ? k->name : k->path;
}

/* A write failed: a reader that closed its end of the pipe ends the process by SIGPIPE,
 * whichever thread wrote (fmt_thread_broken_pipe); otherwise (SIGPIPE ignored too) an IoError
 * about path, or about standard output when path is NULL (fmt_stdout_fail). */
static fmt_kind write_fail(fmt_err *e, const char *path)
{
	if (errno == EPIPE) {
		fmt_thread_broken_pipe();
		errno = EPIPE;
	}
	return path ? io_fail(e, path, "write") : fmt_stdout_fail(e, errno);
}

fmt_kind fmt_stdout_fail(fmt_err *e, int err)
{
	if (err)
		return fmt_fail(e, FMT_IO, "cannot write to standard output: %s", strerror(err));
	return fmt_fail(e, FMT_IO, "cannot write to standard output");
}

static fmt_kind write_all(fmt_sink *k, const uint8_t *p, size_t n, fmt_err *e)
{
	start_writeback(k, n);
	while (n > 0) {
		ssize_t put = write(k->fd, p, n);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return write_fail(e, k->path ? sink_name(k) : NULL);
		p += put;
		n -= (size_t)put;
	}
	return FMT_OK;
}

static fmt_kind sink_flush(fmt_sink *k, fmt_err *e)
{
	fmt_kind r = write_all(k, k->buf, k->buf_len, e);
	k->buf_len = 0;
	return r;
}

static void (*write_hook)(void *ctx, uint64_t n);
static void *write_hook_ctx;

void fmt_sink_set_write_hook(void (*hook)(void *ctx, uint64_t n), void *ctx)
{
	write_hook = hook;
	write_hook_ctx = ctx;
}

fmt_kind fmt_sink_write(fmt_sink *k, const void *data, size_t n, fmt_err *e)
{
	const uint8_t *p = data;
	k->written += n;
	if (write_hook)
		write_hook(write_hook_ctx, n);
	if (k->tap)
		k->tap(k->tap_ctx, p, n);
	if (n < SINK_DIRECT && k->buf_len + n <= SINK_BUF_SIZE) {
		memcpy(k->buf + k->buf_len, p, n);
		k->buf_len += n;
		return FMT_OK;
	}
	fmt_kind r = k->buf_len ? sink_flush(k, e) : FMT_OK;
	if (r != FMT_OK)
		return r;
	if (n >= SINK_DIRECT)
		return write_all(k, p, n, e);
	memcpy(k->buf, p, n);
	k->buf_len = n;
	return FMT_OK;
}

void fmt_sink_tap(fmt_sink *k, void (*tap)(void *ctx, const void *p, size_t n), void *ctx)
{
	k->tap = tap;
	k->tap_ctx = ctx;
	k->tap_from = k->written;
	k->tap_missed = 0;
}

fmt_kind fmt_sink_zeros(fmt_sink *k, uint64_t n, fmt_err *e)
{
	static const uint8_t zeros[4096];
	while (n > 0) {
		size_t chunk = n < sizeof zeros ? (size_t)n : sizeof zeros;
		fmt_kind r = fmt_sink_write(k, zeros, chunk, e);
		if (r != FMT_OK)
			return r;
		n -= chunk;
	}
	return FMT_OK;
}

/* mkostemp creates 0600; a finished output gets the mode a plain creat() would give. */
static mode_t creation_mode(void)
{
	mode_t mask = umask(0);
	umask(mask);
	return (mode_t)(0666 & ~mask);
}

void fmt_sink_set_mode(fmt_sink *k, mode_t mode)
{
	k->keep_mode = 1;
	k->mode = mode & 07777;
}

fmt_kind fmt_sink_open_in_place(fmt_sink *k, const char *path, fmt_err *e)
{
	struct stat st;
	char *target = realpath(path, NULL);
	if (!target || stat(target, &st) != 0) {
		free(target);
		return fmt_fail(e, FMT_IO, "cannot resolve %s: %s", path, strerror(errno));
	}
	fmt_kind r = fmt_sink_open(k, target, FMT_SINK_FORCE, e);
	free(target);
	if (r == FMT_OK && strcmp(path, k->path) != 0 && !(k->name = strdup(path))) {
		fmt_sink_abort(k);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	if (r == FMT_OK)
		fmt_sink_set_mode(k, st.st_mode);
	return r;
}

/* Flush what is buffered, then write n bytes at off. */
static fmt_kind flush_and_pwrite(fmt_sink *k, uint64_t off, const uint8_t *p, size_t n, fmt_err *e)
{
	fmt_kind r = sink_flush(k, e);
	start_writeback(k, n);
	while (r == FMT_OK && n > 0) {
		ssize_t put = pwrite(k->fd, p, n, (off_t)off);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return write_fail(e, sink_name(k));
		p += put;
		n -= (size_t)put;
		off += (uint64_t)put;
	}
	return r;
}

fmt_kind fmt_sink_pwrite(fmt_sink *k, uint64_t off, const void *data, size_t n, fmt_err *e)
{
	uint64_t end;
	if (k->is_stdout)
		return fmt_fail(e, FMT_USAGE, "this format cannot be streamed to %s", fmt_sink_stream_name(k));
	if (fmt_add_u64(off, n, &end) || end > k->written)
		return fmt_fail(e, FMT_INTERNAL, "patch at %llu past the %llu bytes written",
				(unsigned long long)off, (unsigned long long)k->written);
	if (k->tap && end > k->tap_from)
		k->tap_missed = 1;
	return flush_and_pwrite(k, off, data, n, e);
}

fmt_kind fmt_sink_write_at(fmt_sink *k, uint64_t off, const void *data, size_t n, fmt_err *e)
{
	uint64_t end;
	if (k->is_stdout)
		return fmt_fail(e, FMT_USAGE, "this output cannot be written in this order to %s", fmt_sink_stream_name(k));
	if (fmt_add_u64(off, n, &end) || end > INT64_MAX)
		return fmt_fail(e, FMT_INTERNAL, "write at %llu past the largest file", (unsigned long long)off);
	/* Several threads may place bytes at once (fmt_model_write_tensors): the buffer, the hook
	 * and the end are shared, the writes themselves are not. */
	static pthread_mutex_t placing = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&placing);
	if (write_hook)
		write_hook(write_hook_ctx, n);
	k->tap_missed = 1;
	fmt_kind r = sink_flush(k, e);
	pthread_mutex_unlock(&placing);
	if (r == FMT_OK)
		r = flush_and_pwrite(k, off, data, n, e);   /* the buffer is empty: a plain pwrite */
	pthread_mutex_lock(&placing);
	if (r == FMT_OK && end > k->written) {
		k->written = end;
		if (lseek(k->fd, (off_t)end, SEEK_SET) < 0)
			r = io_fail(e, sink_name(k), "seek");
	}
	pthread_mutex_unlock(&placing);
	return r;
}

/* The rest of n bytes from fd at off, read and written (copy_file_range could not). */
static fmt_kind copy_by_reads(fmt_sink *k, int fd, uint64_t off, uint64_t n, fmt_err *e)
{
	while (n > 0) {
		size_t chunk = n < SINK_BUF_SIZE ? (size_t)n : SINK_BUF_SIZE;
		ssize_t got = pread(fd, k->buf, chunk, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? io_fail(e, sink_name(k), "read") : fmt_fail(e, FMT_IO, FMT_MSG_SHRANK);
		fmt_kind r = write_all(k, k->buf, (size_t)got, e);
		if (r != FMT_OK)
			return r;
		off += (uint64_t)got;
		n -= (uint64_t)got;
	}
	return FMT_OK;
}

fmt_kind fmt_sink_copy_range(fmt_sink *k, int fd, uint64_t off, uint64_t n, fmt_err *e)
{
	uint64_t end;
	if (k->is_stdout)
		return fmt_fail(e, FMT_USAGE, "this output cannot be written to %s", fmt_sink_stream_name(k));
	if (fmt_add_u64(off, n, &end) || end > INT64_MAX || fmt_add_u64(k->written, n, &end) || end > INT64_MAX)
		return fmt_fail(e, FMT_INTERNAL, "copy of %llu bytes at %llu past the largest file",
				(unsigned long long)n, (unsigned long long)off);
	fmt_kind r = sink_flush(k, e);
	if (r != FMT_OK)
		return r;
	k->written = end;
	k->tap_missed = 1;
	if (write_hook)
		write_hook(write_hook_ctx, n);
	loff_t in = (loff_t)off;
	while (n > 0) {
		size_t chunk = n < (1u << 30) ? (size_t)n : (1u << 30);
		ssize_t got = copy_file_range(fd, &in, k->fd, NULL, chunk, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL))
			return copy_by_reads(k, fd, (uint64_t)in, n, e);
		if (got <= 0)
			return got < 0 ? io_fail(e, sink_name(k), "copy") : fmt_fail(e, FMT_IO, FMT_MSG_SHRANK);
		n -= (uint64_t)got;
	}
	return FMT_OK;
}

static void fsync_dir_of(const char *path)
{
	char *dir = dir_of(path);
	if (!dir)
		return;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

fmt_kind fmt_sink_finish(fmt_sink *k, fmt_err *e)
{
	if (k->is_stdout || k->fd < 0)
		return k->is_stdout ? sink_flush(k, e) : FMT_OK; /* stdout, or finished already */
	fmt_kind r = sink_flush(k, e);
	int flush_error = stop_flusher(k);
	/* jansson drops what it cannot allocate: the run ends with exit 3 (fmt_cli_finish), and an
	 * output built from a tree it dropped a member of is not put in place */
	if (r == FMT_OK && fmt_json_memory_failed())
		r = fmt_fail_file(e, FMT_IO, sink_name(k), "out of memory building the output (not written)");
	if (r == FMT_OK && flush_error) {
		errno = flush_error;
		r = io_fail(e, sink_name(k), "fsync");
	}
	if (r == FMT_OK && fsync(k->fd) != 0)
		r = io_fail(e, sink_name(k), "fsync");
	if (r == FMT_OK && fchmod(k->fd, k->keep_mode ? k->mode : creation_mode()) != 0)
		r = io_fail(e, sink_name(k), "chmod");
	if (close(k->fd) != 0 && r == FMT_OK)
		r = io_fail(e, sink_name(k), "close");
	k->fd = -1;
	free(k->buf);
	k->buf = NULL;
	if (r != FMT_OK)
		fmt_sink_abort(k);
	return r;
}

/* Forget a sink whose file is in place. */
static void sink_release(fmt_sink *k)
{
	if (k->tmp_path)
		untrack_tmp(k->tmp_path);
	free(k->tmp_path);
	free(k->path);
	free(k->name);
	free(k->buf);
	memset(k, 0, sizeof *k);
	k->fd = -1;
}

fmt_kind fmt_sink_commit(fmt_sink *k, fmt_err *e)
{
	fmt_kind r = fmt_sink_finish(k, e);
	if (r != FMT_OK)
		return r;
	if (k->is_stdout) {
		if (k->own_fd && close(k->fd) != 0)
			r = io_fail(e, sink_name(k), "close");
		sink_release(k);
		return r;
	}
	if (rename(k->tmp_path, k->path) != 0) {
		r = io_fail(e, sink_name(k), "cannot rename the temporary file over");
		fmt_sink_abort(k);
		return r;
	}
	fsync_dir_of(k->path);
	sink_release(k);
	return FMT_OK;
}

/* Move an existing path out of the way to a fresh name beside it (*aside, malloc'd; NULL when
 * nothing was there), so that it can be put back if the commit of a set fails. */
static fmt_kind move_aside(const char *path, char **aside, fmt_err *e)
{
	struct stat st;
	*aside = NULL;
	if (lstat(path, &st) != 0)
		return FMT_OK;
	char *dir = dir_of(path);
	if (!dir || asprintf(aside, "%s/.fmtkit-old-XXXXXX", dir) < 0) {
		free(dir);
		*aside = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	free(dir);
	int fd = mkostemp(*aside, O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (fd < 0 || rename(path, *aside) != 0) {
		fmt_kind r = io_fail(e, path, "cannot replace");
		if (fd >= 0)
			unlink(*aside);
		free(*aside);
		*aside = NULL;
		return r;
	}
	return FMT_OK;
}

fmt_kind fmt_sinks_commit(fmt_sink *ks, size_t n, fmt_err *e)
{
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++)
		sigaddset(&block, cleanup_signals[i]);
	char **aside = calloc(n ? n : 1, sizeof *aside);
	fmt_kind r = aside ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < n && r == FMT_OK; i++) {
		if (ks[i].is_stdout)
			r = fmt_fail(e, FMT_INTERNAL, "a set of files cannot go to standard output");
		else
			r = fmt_sink_finish(&ks[i], e);
	}
	/* From here to the end the set changes on disk: a signal waits until it is complete or
	 * rolled back (worker threads block these signals: fmt_pool_create). */
	pthread_sigmask(SIG_BLOCK, &block, &old);
	size_t done = 0;
	for (; done < n && r == FMT_OK; done++) {
		r = move_aside(ks[done].path, &aside[done], e);
		if (r == FMT_OK && rename(ks[done].tmp_path, ks[done].path) != 0) {
			r = io_fail(e, ks[done].path, "cannot rename the temporary file over");
			if (aside[done] && rename(aside[done], ks[done].path) == 0) {
				free(aside[done]);
				aside[done] = NULL;
			}
		}
		if (r != FMT_OK)
			break;
		test_stop_hook(&stop_in_commit);
	}
	for (size_t i = done; r != FMT_OK && i-- > 0;) {
		/* Roll back: the old file returns, or the new one goes. */
		if (aside[i] ? rename(aside[i], ks[i].path) == 0 : unlink(ks[i].path) == 0) {
			free(aside[i]);
			aside[i] = NULL;
		}
	}
	for (size_t i = 0; aside && i < n; i++) {
		if (aside[i] && r == FMT_OK)
			unlink(aside[i]);
		free(aside[i]);
	}
	free(aside);
	char *synced = NULL;
	for (size_t i = 0; i < n; i++) {
		if (r != FMT_OK) {
			fmt_sink_abort(&ks[i]);
			continue;
		}
		char *dir = dir_of(ks[i].path);
		if (dir && (!synced || strcmp(dir, synced) != 0)) {
			fsync_dir_of(ks[i].path);
			free(synced);
			synced = dir;
		} else {
			free(dir);
		}
		sink_release(&ks[i]);
	}
	free(synced);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

void fmt_sink_abort(fmt_sink *k)
{
	(void)stop_flusher(k);
	if ((!k->is_stdout || k->own_fd) && k->fd >= 0)
		close(k->fd);
	if (k->tmp_path) {
		unlink(k->tmp_path);
		untrack_tmp(k->tmp_path);
	}
	free(k->tmp_path);
	free(k->path);
	free(k->name);
	free(k->buf);
	memset(k, 0, sizeof *k);
	k->fd = -1;
}

/* ---- room for an output ---- */

/* IoError when the file system holding fd has fewer than need bytes free for an unprivileged
 * writer (f_bavail). No answer from fstatvfs is no refusal: the writes still fail on a full
 * disk, and the temporary file goes then. */
static fmt_kind check_room(int fd, const char *path, uint64_t need, fmt_err *e)
{
	struct statvfs vfs;
	uint64_t free_bytes;
	if (fstatvfs(fd, &vfs) != 0)
		return FMT_OK;
	if (fmt_mul_u64(vfs.f_bavail, vfs.f_frsize, &free_bytes))
		free_bytes = UINT64_MAX;
	if (need <= free_bytes)
		return FMT_OK;
	return fmt_fail_file(e, FMT_IO, path, "not enough free space: the output needs at least %llu bytes, its file "
			     "system has %llu free", (unsigned long long)need, (unsigned long long)free_bytes);
}

fmt_kind fmt_sink_check_room(const fmt_sink *k, uint64_t need, fmt_err *e)
{
	return k->is_stdout || k->fd < 0 ? FMT_OK : check_room(k->fd, k->path, need, e);
}

fmt_kind fmt_check_room_beside(const char *path, uint64_t need, fmt_err *e)
{
	char *dir = dir_of(path);
	if (!dir)
		return fmt_fail(e, FMT_IO, "out of memory");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return FMT_OK;   /* creating the files will say why */
	fmt_kind k = check_room(fd, path, need, e);
	close(fd);
	return k;
}

/* ---- a sink in memory ---- */

fmt_kind fmt_sink_open_memory(fmt_sink *k, fmt_err *e)
{
	memset(k, 0, sizeof *k);
	k->fd = memfd_create("fmtkit-sink", MFD_CLOEXEC);
	if (k->fd < 0)
		return io_fail(e, "memory", "cannot create an in-memory file");
	k->path = strdup("memory");
	k->buf = malloc(SINK_BUF_SIZE);
	if (!k->path || !k->buf) {
		fmt_sink_abort(k);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

int fmt_sink_read_back(const fmt_sink *k, uint64_t off, void *dst, size_t n)
{
	return pread_full(k->fd, dst, n, off) == 0 ? 0 : -1;
}

fmt_kind fmt_sink_take_memory(fmt_sink *k, uint8_t **bytes, size_t *n, fmt_err *e)
{
	*bytes = NULL;
	*n = 0;
	fmt_kind r = sink_flush(k, e);
	uint8_t *b = r == FMT_OK && k->written <= SIZE_MAX ? malloc(k->written ? (size_t)k->written : 1) : NULL;
	if (r == FMT_OK && !b)
		r = fmt_fail(e, FMT_IO, "out of memory");
	if (r == FMT_OK && pread_full(k->fd, b, (size_t)k->written, 0) != 0)
		r = io_fail(e, "memory", "read back");
	if (r == FMT_OK) {
		*bytes = b;
		*n = (size_t)k->written;
	} else {
		free(b);
	}
	fmt_sink_abort(k);
	return r;
}
