/* Sources (what a tool reads) and sinks (what it writes, atomically). */
#ifndef FMT_IO_H
#define FMT_IO_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "fmt/err.h"

/* A source is a regular file read with pread and mapped lazily (a header-only open touches
 * nothing past the header), bytes in memory, or a sequential stream: a pipe or stdin ("-")
 * read front to back without holding it (fmt_source_open_sequential). A sequential source
 * keeps its first FMT_SOURCE_HEAD bytes (probe, headers) for re-reading; past them it hands out
 * bytes at or after its position only, skipping forward as asked; a read behind the position
 * is UnsupportedVersion ("read front to back"). Its size is FMT_SIZE_UNKNOWN until the end has
 * been reached, then the real size. An observer, when set, sees every byte the stream passes
 * (handed out or skipped), once and in order: a checksum computed on the fly. */
#define FMT_SOURCE_HEAD 4096u
#define FMT_SIZE_UNKNOWN UINT64_MAX
typedef void (*fmt_source_observer)(void *ctx, const uint8_t *bytes, size_t n);

typedef struct fmt_source {
	char *path;          /* as given; "-" for stdin */
	int fd;
	uint64_t size;
	uint8_t *buf;        /* whole content when the input is not a regular file */
	void *map;           /* lazy read-only mapping of the whole file, or NULL */
	dev_t dev;
	ino_t ino;
	/* sequential sources only */
	int sequential;
	int eof;             /* the end was reached (size is known) */
	uint64_t pos;        /* bytes passed so far: every read starts at or after it (an observed
			      * file: bytes observed so far) */
	uint8_t *head;       /* bytes [0, head_len), kept */
	size_t head_len;
	uint8_t *rbuf;       /* read-ahead: rbuf[rpos, rlen) follow pos */
	size_t rlen, rpos;
	fmt_source_observer observe;
	void *observe_ctx;
	const uint8_t *feed;  /* fmt_source_stream_memory: what reads give instead of fd's */
	size_t feed_len, feed_pos, feed_chunk;
} fmt_source;

fmt_kind fmt_source_open(fmt_source *s, const char *path, fmt_err *e);
/* A source over a copy of n bytes in memory, named name (fuzzing, and data already in hand). */
fmt_kind fmt_source_from_memory(fmt_source *s, const char *name, const void *data, size_t n, fmt_err *e);
/* The same over the n malloc'd bytes at data themselves, not a copy: once it succeeds the
 * source owns them (fmt_source_close frees them); when it fails they are still the caller's. */
fmt_kind fmt_source_adopt_memory(fmt_source *s, const char *name, void *data, size_t n, fmt_err *e);
void fmt_source_close(fmt_source *s);

/* Open path like fmt_source_open, except that a pipe or stdin becomes a sequential source (an
 * input of at most FMT_SOURCE_HEAD bytes is simply held in memory). A device (/dev/zero) or a
 * directory is IoError (fmt_input_check). */
fmt_kind fmt_source_open_sequential(fmt_source *s, const char *path, fmt_err *e);
/* Open a file the tool found, not one the user named (a shard an index names, the other parts
 * of a split set): only a regular file, opened without blocking, so that a FIFO planted there
 * is IoError at once instead of a hang. */
fmt_kind fmt_source_open_found(fmt_source *s, const char *path, fmt_err *e);
/* Test hook (fuzz targets): a sequential source over the n bytes at data (not copied: they must
 * outlive the source), handed out at most chunk bytes per read as a pipe does, that keeps its
 * first head bytes (1..FMT_SOURCE_HEAD; pipes keep FMT_SOURCE_HEAD) for re-reading: with a small
 * head, a small input is read front to back as a large one from a pipe is. An input of at most
 * head bytes is held in memory, as with fmt_source_open_sequential. Open it forced to a driver
 * when head < FMT_PROBE_BYTES (probing reads that many). */
fmt_kind fmt_source_stream_memory(fmt_source *s, const char *name, const void *data, size_t n, size_t head,
				  size_t chunk, fmt_err *e);
/* Make a sequential source keep its first n bytes (more than it keeps already) for re-reading
 * and views, reading them now (fewer at the end of the stream); only before it has passed its
 * head. No-op on other sources. What a probe reads to look further than the head without
 * holding the whole stream. */
fmt_kind fmt_source_keep(fmt_source *s, size_t n, fmt_err *e);
/* Make a sequential source an ordinary one (what a reader that needs random access gets): the
 * rest of the stream is copied to an unlinked temporary file (fmt_temp_fd) that the source then
 * reads as a file, so that memory stays bounded whatever the stream's size; only before it has
 * passed its head. No-op otherwise. A copy that cannot be written (disk full) is IoError naming
 * the directory and TMPDIR. A source over memory (fmt_source_stream_memory) stays in memory. */
fmt_kind fmt_source_make_whole(fmt_source *s, fmt_err *e);
/* The directory temporary files go to: $TMPDIR when set and not empty, else /tmp. */
const char *fmt_temp_dir(void);
/* All n bytes at p written to fd (a file, a pipe), through EINTR and short writes: 0, or the
 * errno of the write that failed. */
int fmt_fd_write_all(int fd, const void *p, size_t n);
/* A new temporary file in fmt_temp_dir(), open for reading and writing, that no name reaches
 * (O_TMPFILE, else mkstemp and unlink): it is gone when its descriptor is closed, also when the
 * process is killed. what names its use in messages ("a sorted run"). -1 with IoError in e
 * naming the directory and TMPDIR. */
int fmt_temp_fd(const char *what, fmt_err *e);
/* fmt_temp_fd as a stdio stream ("w+b"); NULL with IoError in e. */
FILE *fmt_temp_file(const char *what, fmt_err *e);
/* n bytes at p written to f (a fmt_temp_file) / f's buffered bytes flushed: IoError "cannot
 * write WHAT in DIR (TMPDIR): ERROR" (disk full, file too large) when they cannot be. */
fmt_kind fmt_temp_file_write(FILE *f, const char *what, const void *p, size_t n, fmt_err *e);
fmt_kind fmt_temp_file_flush(FILE *f, const char *what, fmt_err *e);
/* What f (a fmt_temp_file) holds, read back from its start and handed to put(ctx, ...) a piece
 * at a time; its buffered bytes flushed first (fmt_temp_file_flush's IoError when they cannot
 * be: disk full); IoError "cannot read back WHAT" when it cannot be read, else put's first
 * failure. */
fmt_kind fmt_temp_file_replay(FILE *f, const char *what, fmt_kind (*put)(void *ctx, const void *p, size_t n, fmt_err *e),
			      void *ctx, fmt_err *e);
/* A spill file: bytes too many to hold in memory (a record batch's body, a decrypted payload),
 * written to an unlinked temporary file (fmt_temp_fd) and then read through a read-only mapping
 * as a source, so that fmt_source_drop and fmt_source_pread work on it as on a mapped input.
 * fmt_spill_open makes the file (s->path is what, not copied: a string that outlives s; never
 * fmt_source_close such a source, fmt_spill_close it); fmt_spill_write puts n bytes at offset at
 * (IoError naming the directory and TMPDIR: disk full); fmt_spill_map maps its first n bytes
 * (*p; "" when n is 0), replacing an earlier mapping, the file grown (sparse) to n bytes when it
 * is shorter, so that bytes written after through fmt_spill_write are read there; fmt_spill_unmap drops the mapping (the
 * file stays open for reuse); fmt_spill_close closes the file (gone then); on a zeroed source,
 * or one closed already, it does nothing. */
fmt_kind fmt_spill_open(fmt_source *s, const char *what, fmt_err *e);
fmt_kind fmt_spill_write(const fmt_source *s, uint64_t at, const void *p, size_t n, fmt_err *e);
fmt_kind fmt_spill_map(fmt_source *s, uint64_t n, const uint8_t **p, fmt_err *e);
/* An unmapped spill file read through fmt_source_read (pread): its first n bytes are readable. */
void fmt_spill_set_length(fmt_source *s, uint64_t n);
void fmt_spill_unmap(fmt_source *s);
void fmt_spill_close(fmt_source *s);
/* Observe every byte the sequential source passes from now on, after being shown the bytes it
 * has passed already (only while those are all in its head: else UnsupportedVersion); fn NULL
 * stops observing. On a file, bytes are observed from offset 0 as reads reach them (pos says
 * how far): a checksum computed by the reads a conversion makes anyway, when it reads the file
 * in order; fmt_source_observe_to reads what no read reached. */
fmt_kind fmt_source_observe(fmt_source *s, fmt_source_observer fn, void *ctx, fmt_err *e);
/* Observe a file's bytes up to end (reading those no read reached); no-op on a stream. */
fmt_kind fmt_source_observe_to(fmt_source *s, uint64_t end, fmt_err *e);
/* Up to n bytes at off into dst, fewer only at the end of the source (*got says how many). */
fmt_kind fmt_source_read_upto(fmt_source *s, uint64_t off, void *dst, size_t n, size_t *got, fmt_err *e);

/* Copy n bytes at off into dst; an out-of-range request is InvalidFormat ("truncated"). */
fmt_kind fmt_source_read(fmt_source *s, uint64_t off, void *dst, size_t n, fmt_err *e);

/* Where [p, p + n) lies in s's mapping (its file offset), or UINT64_MAX when it does not. */
uint64_t fmt_source_mapped_at(const fmt_source *s, const void *p, size_t n);
/* Copy n bytes at off of a regular file's source into dst with pread, mapped or not: from the page
 * cache, so that a mapped file's pages are not mapped into the process (on Linux 6.18 a fault maps
 * a page's whole folio, up to 2 MiB, into the resident set). */
fmt_kind fmt_source_pread(const fmt_source *s, uint64_t off, void *dst, size_t n, fmt_err *e);

/* A pointer to n bytes at off, valid until fmt_source_close (maps the file on first use). A
 * sequential source gives views of its head only (UnsupportedVersion past it). */
fmt_kind fmt_source_view(fmt_source *s, uint64_t off, uint64_t n, const uint8_t **out, fmt_err *e);

/* The pages wholly inside [p, p + n) of s's mapping leave the process's resident set (they stay
 * in the page cache; a later access maps them again), so that a pass over a mapped file holds
 * only what it read since its last drop. Anything outside the mapping (a copy, a decrypted
 * buffer, a source that is not mapped) is left alone. */
void fmt_source_drop(const fmt_source *s, const void *p, size_t n);

/* The whole of a small source as a NUL-terminated heap string; above max bytes is
 * InvalidFormat. */
fmt_kind fmt_source_read_text(fmt_source *s, size_t max, char **text, fmt_err *e);

/* Why a file name read from a file (a shard named by an index) is unsafe to open beside it:
 * empty, a NUL, a path separator, "." or ".."; NULL when it is a plain name. */
const char *fmt_unsafe_file_name(const char *name, size_t len);

/* The directory part of path with its trailing slash ("dir/"), "" for a bare name or "-";
 * shard names are appended to it. NULL when out of memory. */
char *fmt_dir_prefix(const char *path);

/* The file name part of path: what follows its last '/', path itself when it has none. */
const char *fmt_base_name(const char *path);

/* Small files, read whole: keys, signatures, passphrases, the JSON or text an option names,
 * a registry. Every one is read here, so that none can hang or exhaust a tool: it is opened
 * without blocking (a FIFO with no writer opens at once and reads as empty), its type is
 * checked on the open descriptor, and it is read by counting bytes up to its limit, never by
 * trusting the size the file system reports (0 for /dev/zero). A regular file is read; so is,
 * when the user named the file (FMT_SMALL_NAMED: an option's value), a pipe (<(cmd), a FIFO:
 * the reads wait for its writer) or "-" for standard input (also a terminal: it ends at ^D).
 * Anything else (a device, a directory, a socket, or a pipe found in a directory or beside a
 * file) is IoError naming what it is. */
#define FMT_SMALL_NAMED 1u

/* The whole file at path as a NUL-terminated heap buffer (*len bytes); more than max bytes is
 * InvalidFormat. */
fmt_kind fmt_read_small(const char *path, unsigned flags, size_t max, char **out, size_t *len, fmt_err *e);
/* Standard input (-) is one stream: a command reads it as one thing. as names the reader in
 * messages ("IN", "a secret file"); once: a reader that cannot share it (a secret is read
 * once), else the same as may claim it again (an input reopened). UsageError when another
 * has it: "standard input (-) is named twice: as IN and as a secret file". */
#define FMT_STDIN_ONCE 1u
fmt_kind fmt_stdin_claim(const char *as, unsigned flags, fmt_err *e);
/* fmt_read_small of a file the user named (FMT_SMALL_NAMED). */
fmt_kind fmt_read_file(const char *path, size_t max, char **out, size_t *len, fmt_err *e);
/* The two steps of fmt_read_small, for readers that keep the bytes elsewhere (secrets in
 * sodium_malloc memory) or check more (a key file's mode): may fd, opened O_NONBLOCK, be read
 * as a small file (its fstat in *st; what, when not NULL, names it in messages: "the HMAC
 * key")? IoError when not: a device, a directory, a FIFO unless named (as fmt_input_check).
 * Then read up to cap bytes of it: *len < cap means the end was reached. */
fmt_kind fmt_small_check(int fd, unsigned flags, const char *what, struct stat *st, fmt_err *e);
fmt_kind fmt_small_read(int fd, void *buf, size_t cap, size_t *len, fmt_err *e);

/* A model or dataset input (fstat of its descriptor): a directory or a device (/dev/zero
 * never ends, /dev/null is no file) is IoError; a regular file or a pipe is read. */
fmt_kind fmt_input_check(const struct stat *st, fmt_err *e);

/* 1 if a and b are the same file (device and inode), 0 if not or if b does not exist. */
int fmt_same_file(const char *a, const char *b);
/* 1 if a and b name the same file: the same device and inode when both exist, otherwise the
 * same directory (resolved: "k", "./k" and "d/../k" are one) and the same name. Two outputs
 * that do not exist yet are compared this way. */
int fmt_same_path(const char *a, const char *b);

/* The atomic writer: a temporary file in the destination's directory, renamed over the
 * destination by commit after fsync; removed by abort, on error, and on SIGINT/SIGTERM/SIGHUP/
 * SIGPIPE (any number of sinks may be live at once). path "-" writes to stdout (refused when
 * stdout is a terminal).
 *
 * Test hook, for the test suites only: with FMTKIT_TEST_STOP_AT_SINK=N in the environment the
 * process stops itself (SIGSTOP) right after the Nth output it opens has been created (a
 * sink's temporary file, or a file in a staging directory, fmt/stagedir.h), so that a test can
 * send SIGTERM mid-write deterministically, then SIGCONT; with FMTKIT_TEST_STOP_IN_COMMIT=N it
 * stops after the Nth rename of a multi-file commit (fmt_sinks_commit), where signals wait
 * until the commit is complete. fmt_test_stop_hook counts one output. */
void fmt_test_stop_hook(void);

/* A temporary file that is not a sink's (a new key file's PATH.new) removed on the same signals
 * by the same handler as the sinks' (then the signal is raised again: exit 128 + its number):
 * fmt_tmp_track once the file is created (path stays allocated until untracked; 0, or -1 when
 * out of memory), fmt_tmp_untrack once it is renamed or removed. */
int fmt_tmp_track(char *path);
void fmt_tmp_untrack(char *path);
/* A directory made for such a file (a new key's: mkdir -p), removed on the same signals by the
 * same handler after the files, with rmdir (only while empty: one that got a file stays, and
 * what is above it): fmt_tmp_track_dir once made (path stays allocated until untracked; 0, or -1
 * when out of memory), fmt_tmp_untrack_dir once the file is in place or the directory removed.
 * Only a directory the process made itself is tracked, never one that was there. */
int fmt_tmp_track_dir(char *path);
void fmt_tmp_untrack_dir(char *path);
/* Remove every temporary file a sink or fmt_tmp_track holds, then every directory
 * fmt_tmp_track_dir holds (async-signal-safe: what the handlers above do, and the SIGBUS
 * handler of the CLI layer). */
void fmt_tmp_remove_all(void);

/* A file mapped into memory that another process truncates raises SIGBUS at the first access
 * past its new end. Mappings of input files (fmt_source_view's, and any other mmap of a file
 * the tool reads) are listed with fmt_map_watch (path: the file, as messages name it) until
 * fmt_map_unwatch, before munmap; any number of them (blocks of slots are linked as needed;
 * only when one cannot be allocated is a mapping not listed). Each is listed with a note,
 * what note(path) returned (one malloc'd block, freed at fmt_map_unwatch) when a note
 * function has been set with fmt_map_notes (the CLI layer sets one: the messages to write);
 * without one nothing is listed. fmt_map_note_at(addr) is the note of the mapping that holds
 * addr, or NULL: async-signal-safe, for the SIGBUS handler.
 *
 * Test hook: with FMTKIT_TEST_STOP_AT_MAP=N the process stops itself (SIGSTOP) right after
 * fmt_source_view has mapped the Nth file, so that a test can truncate it, then SIGCONT. */
void fmt_map_notes(void *(*note)(const char *path));
void fmt_map_watch(const void *p, size_t len, const char *path);
void fmt_map_unwatch(const void *p);
const void *fmt_map_note_at(const void *addr);

/* What a file that ends before the bytes a tool reads from it were read is, whether read(2)
 * found its end early or an access to its mapping raised SIGBUS (the same event: another process
 * truncated or rewrote it meanwhile; exit status 3). */
#define FMT_MSG_SHRANK "the file shrank while being read (truncated by another process?)"

typedef struct fmt_sink {
	char *path;
	char *name;              /* what messages name when not path (in place: the path as given), or NULL */
	char *tmp_path;
	int fd;
	int is_stdout;           /* a stream: standard output, or a FIFO or character device at path */
	int own_fd;              /* that FIFO or device, opened here */
	uint8_t *buf;
	size_t buf_len;
	uint64_t written;
	uint64_t handed;         /* bytes handed to the kernel (writeback starts at each MiB) */
	struct fmt_sink_flusher *flusher; /* asks the disk to keep each 16 MiB written; NULL: none yet */
	int keep_mode;           /* finish gives the file mode, not what creat() would give */
	mode_t mode;
	/* fmt_sink_tap */
	void (*tap)(void *ctx, const void *p, size_t n);
	void *tap_ctx;
	uint64_t tap_from;
	int tap_missed;
} fmt_sink;

#define FMT_SINK_FORCE 1u /* overwrite an existing destination */
#define FMT_SINK_TEXT 2u  /* text (CSV, JSON Lines): standard output may be a terminal */
#define FMT_SINK_FILE 4u  /* a file of a set: a FIFO or a device at its path is refused, not written into */

fmt_kind fmt_sink_open(fmt_sink *k, const char *path, unsigned flags, fmt_err *e);
/* A write to standard output failed with errno err (0: unknown): IoError "cannot write to
 * standard output: ERR" about no file. Every tool names standard output so (as "standard
 * input" for reads), never "-", which names standard input as a FILE. */
fmt_kind fmt_stdout_fail(fmt_err *e, int err);
/* What a stream sink writes to, for messages: "standard output", or "a FIFO or device" (one at
 * the output's path). */
const char *fmt_sink_stream_name(const fmt_sink *k);
/* A sink that replaces the existing file path in place (an edit, signing or licensing a file):
 * through a symbolic link the file it names is replaced (the link stays), and the new file
 * keeps the permission bits of the old one. */
fmt_kind fmt_sink_open_in_place(fmt_sink *k, const char *path, fmt_err *e);
/* The refusal fmt_sink_open would give an existing path without FMT_SINK_FORCE, or a directory
 * with it, for a caller that can say it before reading its input (fmt_sink_open checks again).
 * A FIFO or a character device at path is written into as standard output is (no temporary
 * file, nothing renamed over it), unless FMT_SINK_FILE; any other kind of file is refused. */
fmt_kind fmt_sink_may_create(const char *path, unsigned flags, fmt_err *e);
/* Buffered in FMT_SINK_PIECE bytes (the size the kernel copies cheapest: larger writes cost it
 * more per byte); a piece of half that or more goes to the file as it is, after what is buffered. */
#define FMT_SINK_PIECE (1u << 20)
fmt_kind fmt_sink_write(fmt_sink *k, const void *data, size_t n, fmt_err *e);
fmt_kind fmt_sink_zeros(fmt_sink *k, uint64_t n, fmt_err *e);
/* Overwrite n bytes at offset off of what was already written (a header patched once the data
 * that follows it is known); not possible on stdout (UsageError). */
fmt_kind fmt_sink_pwrite(fmt_sink *k, uint64_t off, const void *data, size_t n, fmt_err *e);
/* n bytes at off of what a file sink holds (written to it: fmt_sink_pwrite of nothing flushes
 * the buffer first), read whole: 0, or -1 when a read failed or the file ended first. */
int fmt_sink_read_back(const fmt_sink *k, uint64_t off, void *dst, size_t n);
/* Write n bytes at offset off, which may lie past what was written (the gap reads as zeros
 * until written); later fmt_sink_write calls append after the furthest byte written. Files
 * only (UsageError on stdout). */
fmt_kind fmt_sink_write_at(fmt_sink *k, uint64_t off, const void *data, size_t n, fmt_err *e);
/* Append n bytes of the file fd from offset off (copy_file_range: the kernel copies them, or
 * shares their blocks where the file system can; read and write where it cannot). Files only. */
fmt_kind fmt_sink_copy_range(fmt_sink *k, int fd, uint64_t off, uint64_t n, fmt_err *e);
/* From here on (tap_from: the bytes written so far) tap sees every byte fmt_sink_write appends,
 * in order, as it is written (a checksum of what follows a header patched later, without
 * reading the file back). tap_missed is set when a write bypasses it: a patch at or past
 * tap_from, fmt_sink_write_at or fmt_sink_copy_range. */
void fmt_sink_tap(fmt_sink *k, void (*tap)(void *ctx, const void *p, size_t n), void *ctx);
fmt_kind fmt_sink_commit(fmt_sink *k, fmt_err *e);
void fmt_sink_abort(fmt_sink *k);
/* The finished file gets these permission bits (a file replaced in place keeps its own) instead
 * of the mode a plain creat() would give; set before commit, so the rename shows no other mode. */
void fmt_sink_set_mode(fmt_sink *k, mode_t mode);

/* A sink whose bytes stay in memory (an anonymous file): fmt_sink_write and its kin work as on
 * a file; fmt_sink_take_memory, never commit, ends it with the bytes written (*bytes malloc'd),
 * fmt_sink_abort without. */
fmt_kind fmt_sink_open_memory(fmt_sink *k, fmt_err *e);
fmt_kind fmt_sink_take_memory(fmt_sink *k, uint8_t **bytes, size_t *n, fmt_err *e);

/* Everything a commit does but the rename: flush, fsync, mode, close, free the buffer. The
 * temporary file stays (and is still removed on a signal) until fmt_sinks_commit or
 * fmt_sink_abort; a sink holds no descriptor once finished. */
fmt_kind fmt_sink_finish(fmt_sink *k, fmt_err *e);

/* The multi-file commit: finish every sink of ks[0..n), then rename them all over their
 * destinations, all or none. An existing destination (FMT_SINK_FORCE) is moved aside first
 * and put back if a later rename fails; SIGINT/SIGTERM/SIGHUP/SIGPIPE wait until the set is
 * complete or rolled back. On failure every temporary file is removed and every destination
 * is as it was. Each sink is committed or aborted on return. */
fmt_kind fmt_sinks_commit(fmt_sink *ks, size_t n, fmt_err *e);

/* Before writing an output whose size is known (at least need bytes): IoError naming both sizes
 * when the file system it goes to has fewer bytes free (statvfs f_bavail * f_frsize), so that
 * nothing is written; FMT_OK on stdout and when the file system does not say. The sink's own
 * temporary file, or the directory where path would be created (a set of files). */
fmt_kind fmt_sink_check_room(const fmt_sink *k, uint64_t need, fmt_err *e);
fmt_kind fmt_check_room_beside(const char *path, uint64_t need, fmt_err *e);

/* Called with the byte count of every fmt_sink_write in the process (progress reporting);
 * NULL removes it. */
void fmt_sink_set_write_hook(void (*hook)(void *ctx, uint64_t n), void *ctx);

/* Refuse (UsageError) when output names the same file as input. */
fmt_kind fmt_check_distinct(const char *input, const char *output, fmt_err *e);

#endif
