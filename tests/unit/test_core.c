/* Unit tests for libcommon/core: errors, sizes, escaping, sources and the atomic sink. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>
#include "fmt/cli.h"
#include "fmt/env.h"
#include "fmt/io.h"
#include "fmt/meter.h"
#include "fmt/out.h"
#include "fmt/strbuf.h"
#include "fmt/thread.h"
#include "fmt/tree_budget.h"
#include "fmt/xxh3.h"
#include "fmt/zstd_thread.h"
#include "helpers.h"
#include "unit.h"

TEST(err_kinds_are_exit_codes)
{
	CHECK_EQ_U64(fmt_kind_exit(FMT_INVALID_FORMAT), 4);
	CHECK_EQ_U64(fmt_kind_exit(FMT_SCHEMA), 9);
	CHECK_EQ_U64(fmt_kind_exit(FMT_INTERNAL), 70);
	CHECK_STR(fmt_kind_name(FMT_CHECKSUM), "ChecksumMismatch");
	CHECK_STR(fmt_kind_name(FMT_UNSUPPORTED), "UnsupportedVersion");
}

TEST(err_prefix_and_file)
{
	fmt_err e;
	fmt_err_clear(&e);
	CHECK_EQ_U64(fmt_fail(&e, FMT_IO, "read %d", 7), FMT_IO);
	fmt_err_prefix(&e, "tensor '%s'", "w");
	CHECK_STR(e.msg, "tensor 'w': read 7");
	fmt_err_file(&e, "a");
	fmt_err_file(&e, "b");
	CHECK_STR(e.file, "a");
}

/* A record used again: the second failure is a new error, not the first one's file with the
 * second one's message (fmt_err_file only names a file when none is set). */
TEST(err_fail_starts_a_clean_record)
{
	fmt_err e;
	fmt_err_clear(&e);
	fmt_fail(&e, FMT_IO, "cannot open");
	fmt_err_file(&e, "first.gguf");
	CHECK_EQ_U64(fmt_fail(&e, FMT_INVALID_FORMAT, "bad magic"), FMT_INVALID_FORMAT);
	CHECK_STR(e.file, "");
	fmt_err_file(&e, "second.gguf");
	CHECK_STR(e.file, "second.gguf");
	CHECK_STR(e.msg, "bad magic");
	/* the same with the file given at once, over a stale one */
	CHECK_EQ_U64(fmt_fail_file(&e, FMT_USAGE, "third.gguf", "output exists (%s)", "x"), FMT_USAGE);
	CHECK_STR(e.file, "third.gguf");
	CHECK_STR(e.msg, "output exists (x)");
	CHECK_EQ_U64(e.kind, FMT_USAGE);
	fmt_fail_file(&e, FMT_IO, NULL, "full");
	CHECK_STR(e.file, "");
	/* what adds to an error keeps its file */
	fmt_err_file(&e, "fourth.gguf");
	fmt_err_prefix(&e, "tensor 'w'");
	CHECK_STR(e.file, "fourth.gguf");
	CHECK_STR(e.msg, "tensor 'w': full");
}

TEST(parse_size_units)
{
	fmt_err e = { 0 };
	uint64_t v = 0;
	CHECK(fmt_parse_size("4GB", &v, &e) == FMT_OK && v == 4000000000ULL);
	CHECK(fmt_parse_size("500MB", &v, &e) == FMT_OK && v == 500000000ULL);
	CHECK(fmt_parse_size("2GiB", &v, &e) == FMT_OK && v == 2147483648ULL);
	CHECK(fmt_parse_size("123", &v, &e) == FMT_OK && v == 123);
	CHECK(fmt_parse_size("7KiB", &v, &e) == FMT_OK && v == 7168);
	CHECK(fmt_parse_size("", &v, &e) == FMT_USAGE);
	CHECK(fmt_parse_size("-1", &v, &e) == FMT_USAGE);
	CHECK(fmt_parse_size("4XB", &v, &e) == FMT_USAGE);
	CHECK(fmt_parse_size("99999999999999999999", &v, &e) == FMT_USAGE);
	CHECK(fmt_parse_size("20000000000TB", &v, &e) == FMT_USAGE);
}

TEST(utf8_validation)
{
	CHECK(fmt_utf8_valid("h\xc3\xa9", 3));
	CHECK(!fmt_utf8_valid("\xc3", 1));              /* truncated */
	CHECK(!fmt_utf8_valid("\xc0\xaf", 2));          /* overlong */
	CHECK(!fmt_utf8_valid("\xed\xa0\x80", 3));      /* surrogate */
	CHECK(!fmt_utf8_valid("\xf4\x90\x80\x80", 4));  /* > U+10FFFF */
	CHECK(fmt_utf8_valid("\xf0\x9f\x98\x80", 4));
}

TEST(escaping_neutralises_control_bytes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fmt_out_escaped(f, "a\x1b[0m\n\xff\\", 8);
	fclose(f);
	CHECK_STR(buf, "a\\x1b[0m\\n\\xff\\\\");
	free(buf);
}

TEST(json_string_replaces_invalid_utf8)
{
	json_t *j = fmt_json_string("a\xffz", 3);
	CHECK_STR(json_string_value(j), "a\xef\xbf\xbdz");
	json_decref(j);
}

/* 1 when fmt_json_put_string writes s as fmt_json_text(fmt_json_string(s)) does. */
static int put_string_matches(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fmt_json_put_string(f, s, n);
	fclose(f);
	json_t *j = fmt_json_string(s, n);
	char *want = fmt_json_text(j);
	int same = want && strcmp(buf, want) == 0;
	if (!same)
		printf("  put_string: '%s' where jansson writes '%s'\n", buf, want ? want : "(null)");
	json_decref(j);
	free(want);
	free(buf);
	return same;
}

TEST(json_put_string_writes_what_the_normal_path_writes)
{
	/* the report's writer when memory ran out replaced every byte above 0x7F of a string that
	 * was not UTF-8: "é\xff€" lost its é and € too */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fmt_json_put_string(f, "\xc3\xa9\xff\xe2\x82\xac\n\"", 8);
	fclose(f);
	CHECK_STR(buf, "\"\xc3\xa9\xef\xbf\xbd\xe2\x82\xac\\n\\\"\"");
	free(buf);
	/* every byte alone and between two multibyte characters, every pair of bytes, and the
	 * sequences that are almost UTF-8 (cut short, overlong, surrogates, past U+10FFFF) */
	int bad = 0;
	for (unsigned a = 1; a < 256; a++) {
		char s[8] = { (char)0xc3, (char)0xa9, (char)a, (char)0xe2, (char)0x82, (char)0xac };
		bad += !put_string_matches(s + 2, 1) + !put_string_matches(s, 6);
		for (unsigned b = 1; b < 256 && bad < 5; b++) {
			char pair[2] = { (char)a, (char)b };
			bad += !put_string_matches(pair, 2);
		}
	}
	static const char *const near[] = { "\xe2\x82", "\xf0\x9f\x98", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
					    "\xf4\x90\x80\x80", "\xf0\x9f\x98\x80", "\xc2\x9b[0m", "a\x7f\x1b\x01/" };
	for (size_t i = 0; i < sizeof near / sizeof near[0]; i++)
		bad += !put_string_matches(near[i], strlen(near[i]));
	CHECK(bad == 0);
}

TEST(source_reads_and_bounds)
{
	char *dir = unit_tmp_dir(), path[128];
	snprintf(path, sizeof path, "%s/f", dir);
	FILE *f = fopen(path, "wb");
	fwrite("0123456789", 1, 10, f);
	fclose(f);
	fmt_source s;
	fmt_err e = { 0 };
	uint8_t buf[4];
	const uint8_t *view;
	CHECK(fmt_source_open(&s, path, &e) == FMT_OK);
	CHECK_EQ_U64(s.size, 10);
	CHECK(fmt_source_read(&s, 6, buf, 4, &e) == FMT_OK && memcmp(buf, "6789", 4) == 0);
	CHECK(fmt_source_read(&s, 7, buf, 4, &e) == FMT_INVALID_FORMAT);
	CHECK(fmt_source_read(&s, UINT64_MAX, buf, 2, &e) == FMT_INVALID_FORMAT);
	CHECK(fmt_source_view(&s, 2, 3, &view, &e) == FMT_OK && memcmp(view, "234", 3) == 0);
	fmt_source_close(&s);
	CHECK(fmt_source_open(&s, dir, &e) == FMT_IO);
	unlink(path);
	rmdir(dir);
}

static fmt_kind replay_put(void *ctx, const void *p, size_t n, fmt_err *e)
{
	(void)e;
	fmt_sb_put(ctx, p, n);
	return FMT_OK;
}

/* A temporary stdio file on a full disk (RLIMIT_FSIZE 0, SIGXFSZ ignored: write() fails with
 * EFBIG): a write that stays in stdio's buffer succeeds, its flush on replay is the IoError
 * naming what, the directory and the error (was: 'cannot read back'); one past the buffer fails
 * at once. Under no limit the bytes come back. */
TEST(temp_file_writes_on_a_full_disk_are_io_errors_naming_the_directory)
{
	struct rlimit old, none = { 0, 0 };
	fmt_err e = { 0 };
	fmt_sb back = { 0 };
	static uint8_t big[1 << 16];
	void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
	FILE *f = fmt_temp_file("a test spill", &e);
	CHECK(f != NULL);
	none.rlim_max = old.rlim_max;
	CHECK(setrlimit(RLIMIT_FSIZE, &none) == 0);
	CHECK(fmt_temp_file_write(f, "a test spill", "abc", 3, &e) == FMT_OK);
	fmt_kind k = fmt_temp_file_replay(f, "a test spill", replay_put, &back, &e);
	fmt_kind k_big = fmt_temp_file_write(f, "a test spill", big, sizeof big, &e);
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
	signal(SIGXFSZ, was);
	CHECK(k == FMT_IO && k_big == FMT_IO);
	CHECK(strstr(e.msg, "cannot write a test spill in ") != NULL && strstr(e.msg, "File too large") != NULL);
	CHECK_EQ_U64(back.len, 0);
	fclose(f);
	f = fmt_temp_file("a test spill", &e);
	CHECK(f != NULL);
	CHECK(fmt_temp_file_write(f, "a test spill", "abc", 3, &e) == FMT_OK);
	CHECK(fmt_temp_file_replay(f, "a test spill", replay_put, &back, &e) == FMT_OK);
	CHECK(back.len == 3 && memcmp(back.p, "abc", 3) == 0);
	fclose(f);
	fmt_sb_free(&back);
}

/* A spill file: written at offsets, mapped as a source (pread and drop work on it), mapped
 * again larger, nothing left in TMPDIR; one TMPDIR cannot take is IoError naming it. */
TEST(spill_file_written_mapped_and_gone)
{
	char *dir = strdup(unit_tmp_dir()), missing[160];
	const char *old = getenv("TMPDIR");
	char *saved = old ? strdup(old) : NULL;
	fmt_source s, never;
	fmt_err e = { 0 };
	const uint8_t *p = NULL;
	uint8_t buf[4];
	setenv("TMPDIR", dir, 1);
	CHECK(fmt_spill_open(&s, "a spill for a test", &e) == FMT_OK);
	CHECK(fmt_spill_write(&s, 4, "4567", 4, &e) == FMT_OK);
	CHECK(fmt_spill_write(&s, 0, "0123", 4, &e) == FMT_OK);
	CHECK(fmt_spill_map(&s, 6, &p, &e) == FMT_OK && memcmp(p, "012345", 6) == 0);
	CHECK_EQ_U64(fmt_source_mapped_at(&s, p + 2, 3), 2);
	fmt_source_drop(&s, p, 6);
	CHECK(memcmp(p, "012345", 6) == 0); /* dropped pages come back from the file */
	CHECK(fmt_source_pread(&s, 5, buf, 3, &e) == FMT_OK && memcmp(buf, "567", 3) == 0);
	CHECK(fmt_spill_map(&s, 8, &p, &e) == FMT_OK && memcmp(p, "01234567", 8) == 0);
	CHECK(fmt_spill_map(&s, 0, &p, &e) == FMT_OK && s.map == NULL && *p == '\0');
	CHECK(unit_dir_entries(dir) == 0);
	fmt_spill_close(&s);
	fmt_spill_close(&s); /* closed already: nothing */
	memset(&never, 0, sizeof never);
	fmt_spill_close(&never); /* never opened: nothing (fd 0 is not closed) */
	CHECK(fcntl(0, F_GETFD) != -1 || errno != EBADF);
	snprintf(missing, sizeof missing, "%s/none", dir);
	setenv("TMPDIR", missing, 1);
	CHECK(fmt_spill_open(&s, "a spill for a test", &e) == FMT_IO);
	CHECK(strstr(e.msg, "cannot create a spill for a test in ") != NULL && strstr(e.msg, "/none (TMPDIR)") != NULL);
	fmt_spill_close(&s);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	rmdir(dir);
	free(dir);
}

/* Small files: read by counting bytes up to the limit; a FIFO or a device is refused unless the
 * user named it (then a FIFO is read), and never waited on. */
TEST(small_files_bounded_and_typed)
{
	char *dir = unit_tmp_dir(), path[128], fifo[128];
	snprintf(path, sizeof path, "%s/f", dir);
	snprintf(fifo, sizeof fifo, "%s/p", dir);
	FILE *f = fopen(path, "wb");
	fwrite("0123456789", 1, 10, f);
	fclose(f);
	char *text = NULL;
	size_t len = 0;
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(fmt_read_small(path, 0, 10, &text, &len, &e) == FMT_OK);
	CHECK_EQ_U64(len, 10);
	CHECK_STR(text, "0123456789");
	free(text);
	CHECK(fmt_read_small(path, 0, 9, &text, &len, &e) == FMT_INVALID_FORMAT);
	CHECK_STR(e.msg, "more than 9 bytes (the limit for this file)");
	CHECK_STR(e.file, path);
	fmt_err_clear(&e);
	CHECK(fmt_read_small("/dev/zero", FMT_SMALL_NAMED, 1u << 20, &text, &len, &e) == FMT_IO);
	CHECK_STR(e.msg, "is a character device (expected a regular file or a pipe)");
	fmt_err_clear(&e);
	CHECK(fmt_read_small(dir, 0, 16, &text, &len, &e) == FMT_IO);
	CHECK_STR(e.msg, "is a directory (expected a regular file)");
	CHECK(mkfifo(fifo, 0600) == 0);
	fmt_err_clear(&e);
	CHECK(fmt_read_small(fifo, 0, 16, &text, &len, &e) == FMT_IO);
	CHECK_STR(e.msg, "is a FIFO (expected a regular file)");
	/* named, with no writer: opens at once and reads as empty */
	CHECK(fmt_read_small(fifo, FMT_SMALL_NAMED, 16, &text, &len, &e) == FMT_OK);
	CHECK_EQ_U64(len, 0);
	free(text);
	struct stat st;
	CHECK(stat("/dev/null", &st) == 0);
	fmt_err_clear(&e);
	CHECK(fmt_input_check(&st, &e) == FMT_IO);
	CHECK_STR(e.msg, "is a character device (expected a regular file or a pipe)");
	CHECK(stat(path, &st) == 0 && fmt_input_check(&st, &e) == FMT_OK);
	unlink(fifo);
	unlink(path);
	rmdir(dir);
}

/* Pieces of every size, small ones buffered and large ones written as they are, land in the
 * order they were given: around half the buffer (FMT_SINK_PIECE), the whole of it and more. */
TEST(sink_pieces_of_every_size_keep_their_order)
{
	char *dir = unit_tmp_dir(), path[128];
	snprintf(path, sizeof path, "%s/out.bin", dir);
	const size_t P = FMT_SINK_PIECE;
	const size_t sizes[] = { 3, P / 2, 5, P / 2 - 1, P / 2 - 1, 1, P, P + 17, P / 2 + 1, 7, P - 3, 2, 3 * P };
	size_t total = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		total += sizes[i];
	uint8_t *want = malloc(total);
	CHECK(want != NULL);
	if (!want)
		return;
	for (size_t i = 0; i < total; i++)
		want[i] = (uint8_t)(i * 131 + (i >> 11));
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	for (size_t i = 0, at = 0; i < sizeof sizes / sizeof sizes[0]; at += sizes[i++])
		CHECK(fmt_sink_write(&k, want + at, sizes[i], &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	size_t len = 0;
	uint8_t *back = unit_read_file(path, total + 1, &len);
	CHECK(back && len == total && memcmp(back, want, total) == 0);
	free(back);
	free(want);
	unlink(path);
	rmdir(dir);
}

TEST(sink_is_atomic_and_refuses_existing)
{
	char *dir = unit_tmp_dir(), path[128];
	snprintf(path, sizeof path, "%s/out.bin", dir);
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "abc", 3, &e) == FMT_OK);
	CHECK(fmt_sink_zeros(&k, 5, &e) == FMT_OK);
	CHECK(access(path, F_OK) != 0);           /* nothing at the destination before commit */
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	struct stat st;
	CHECK(stat(path, &st) == 0 && st.st_size == 8);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_USAGE);
	CHECK(fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "0123456789", 10, &e) == FMT_OK);
	CHECK(fmt_sink_pwrite(&k, 2, "ab", 2, &e) == FMT_OK);
	CHECK(fmt_sink_pwrite(&k, 9, "ab", 2, &e) == FMT_INTERNAL);
	CHECK(fmt_sink_write(&k, "x", 1, &e) == FMT_OK);
	fmt_sink_abort(&k);
	CHECK(stat(path, &st) == 0 && st.st_size == 8);  /* abort left the old file alone */
	CHECK(fmt_sink_open(&k, path, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "0123456789", 10, &e) == FMT_OK);
	CHECK(fmt_sink_pwrite(&k, 8, "XY", 2, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "!", 1, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	char *back;
	size_t len;
	CHECK(fmt_read_file(path, 100, &back, &len, &e) == FMT_OK && len == 11 && memcmp(back, "01234567XY!", 11) == 0);
	free(back);
	CHECK_EQ_U64(unit_dir_entries(dir), 1);              /* and no temporary file behind */
	CHECK(fmt_check_distinct(path, path, &e) == FMT_USAGE);
	unlink(path);
	rmdir(dir);
}

/* fmt_same_path: one file by device and inode when both exist (a hard link), by the resolved
 * directory and the name when one does not exist yet. */
TEST(same_path_by_inode_or_resolved_name)
{
	char *dir = unit_tmp_dir(), a[128], b[128], hard[128], dotted[160], missing[128];
	snprintf(a, sizeof a, "%s/a", dir);
	snprintf(b, sizeof b, "%s/b", dir);
	snprintf(hard, sizeof hard, "%s/h", dir);
	snprintf(missing, sizeof missing, "%s/new", dir);
	snprintf(dotted, sizeof dotted, "%s/./x/../new", dir);
	FILE *f = fopen(a, "w");
	CHECK(f && fclose(f) == 0);
	f = fopen(b, "w");
	CHECK(f && fclose(f) == 0);
	CHECK(link(a, hard) == 0);
	char xdir[140];
	snprintf(xdir, sizeof xdir, "%s/x", dir);
	CHECK(mkdir(xdir, 0700) == 0);
	CHECK(fmt_same_path(a, hard) == 1);
	CHECK(fmt_same_path(a, b) == 0);
	CHECK(fmt_same_path(missing, dotted) == 1);
	CHECK(fmt_same_path(missing, a) == 0);
	unlink(a);
	unlink(b);
	unlink(hard);
	rmdir(xdir);
	rmdir(dir);
}

/* fmt_sink_copy_range: bytes of another file appended after what was written (the buffered
 * bytes first); a source that ends early is an I/O error. */
TEST(sink_copy_range_appends_file_bytes)
{
	char *dir = unit_tmp_dir(), src[128], path[128];
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(path, sizeof path, "%s/out", dir);
	size_t n = (1u << 20) + 77;
	uint8_t *data = malloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 13 + 5);
	FILE *f = fopen(src, "wb");
	CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0);
	int fd = open(src, O_RDONLY);
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "head", 4, &e) == FMT_OK);
	CHECK(fmt_sink_copy_range(&k, fd, 100, n - 100, &e) == FMT_OK);
	CHECK(fmt_sink_pwrite(&k, 0, "HE", 2, &e) == FMT_OK);       /* the copy counts as written */
	CHECK(fmt_sink_write(&k, "!", 1, &e) == FMT_OK);
	CHECK(fmt_sink_copy_range(&k, fd, n - 1, 2, &e) == FMT_IO); /* past the source's end */
	fmt_sink_abort(&k);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "head", 4, &e) == FMT_OK);
	CHECK(fmt_sink_copy_range(&k, fd, 100, n - 100, &e) == FMT_OK);
	CHECK(fmt_sink_pwrite(&k, 0, "HE", 2, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, "!", 1, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	char *back;
	size_t len;
	CHECK(fmt_read_file(path, n + 8, &back, &len, &e) == FMT_OK && len == n - 100 + 5);
	CHECK(back && memcmp(back, "HEad", 4) == 0 && memcmp(back + 4, data + 100, n - 100) == 0 && back[len - 1] == '!');
	free(back);
	close(fd);
	CHECK(unlink(path) == 0 && unlink(src) == 0);
	free(data);
	rmdir(dir);
}

/* n bytes of a pattern that repeats only every 4093 x 256 bytes (NULL: out of memory). */
static uint8_t *patterned(size_t n)
{
	uint8_t *data = malloc(n);
	for (size_t i = 0; data && i < n; i++)
		data[i] = (uint8_t)(i * 131 + i / 4093);
	return data;
}

TEST(sink_large_writes_bypass_buffer)
{
	char *dir = unit_tmp_dir(), path[128];
	snprintf(path, sizeof path, "%s/big", dir);
	size_t n = 3u << 20;
	uint8_t *data = patterned(n);
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, data, 10, &e) == FMT_OK);
	CHECK(fmt_sink_write(&k, data + 10, n - 10, &e) == FMT_OK);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	char *back;
	size_t len;
	CHECK(fmt_read_file(path, n, &back, &len, &e) == FMT_OK);
	CHECK(len == n && memcmp(back, data, n) == 0);
	free(back);
	CHECK(fmt_read_file(path, n - 1, &back, &len, &e) == FMT_INVALID_FORMAT);
	free(data);
	unlink(path);
	rmdir(dir);
}

/* Two threads placing 1 MiB pieces of a 40 MiB file at once (as fmt_model_write_tensors
 * does): the first to pass 4 MiB starts the sink's flusher, once (a 3 MiB file has none);
 * commit stops it and the file holds every byte; abort stops it too and leaves nothing. */
typedef struct placer {
	fmt_sink *k;
	const uint8_t *data;
	size_t first, pieces;      /* pieces first, first + 2, ... */
	fmt_kind r;
} placer;

static void *place_every_other(void *arg)
{
	placer *p = arg;
	fmt_err e = { 0 };
	p->r = FMT_OK;
	for (size_t i = p->first; i < p->pieces && p->r == FMT_OK; i += 2)
		p->r = fmt_sink_write_at(p->k, (uint64_t)i << 20, p->data + (i << 20), 1u << 20, &e);
	return NULL;
}

static fmt_kind place_in_two_threads(fmt_sink *k, const uint8_t *data, size_t pieces)
{
	placer a = { k, data, 0, pieces, FMT_OK }, b = { k, data, 1, pieces, FMT_OK };
	pthread_t t;
	if (pthread_create(&t, NULL, place_every_other, &a) != 0)
		return FMT_IO;
	place_every_other(&b);
	pthread_join(t, NULL);
	return a.r != FMT_OK ? a.r : b.r;
}

TEST(sink_flushes_as_it_goes_and_stops_flushing_at_commit_or_abort)
{
	char *dir = unit_tmp_dir(), path[128];
	snprintf(path, sizeof path, "%s/flushed", dir);
	size_t n = 40u << 20;
	uint8_t *data = patterned(n);
	fmt_sink k;
	fmt_err e = { 0 };
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(k.flusher == NULL);
	CHECK(place_in_two_threads(&k, data, n >> 20) == FMT_OK);
	CHECK(k.flusher != NULL);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	CHECK(k.flusher == NULL);
	char *back;
	size_t len;
	CHECK(fmt_read_file(path, n, &back, &len, &e) == FMT_OK);
	CHECK(len == n && memcmp(back, data, n) == 0);
	free(back);
	unlink(path);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(place_in_two_threads(&k, data, 3) == FMT_OK);
	CHECK(k.flusher == NULL);
	CHECK(place_in_two_threads(&k, data, 2) == FMT_OK);   /* pieces 0-1 again: 5 MiB handed */
	CHECK(k.flusher != NULL);
	CHECK(fmt_sink_commit(&k, &e) == FMT_OK);
	unlink(path);
	CHECK(fmt_sink_open(&k, path, 0, &e) == FMT_OK);
	CHECK(place_in_two_threads(&k, data, 20) == FMT_OK);
	CHECK(k.flusher != NULL);
	fmt_sink_abort(&k);
	CHECK(k.flusher == NULL);
	CHECK(unit_dir_entries(dir) == 0);
	free(data);
	rmdir(dir);
}

/* ---- sequential sources (a pipe read front to back) ---- */

#include <sys/wait.h>

static uint8_t pattern_byte(size_t i)
{
	return (uint8_t)(i * 7 + i / 251);
}

/* A pipe whose other end a child fills with n pattern bytes; the path names the read end. */
static pid_t pipe_of(size_t n, char *path, size_t cap, int *rfd)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		uint8_t buf[4096];
		for (size_t at = 0; at < n;) {
			size_t part = n - at < sizeof buf ? n - at : sizeof buf;
			for (size_t j = 0; j < part; j++)
				buf[j] = pattern_byte(at + j);
			ssize_t w = write(fds[1], buf, part);
			if (w <= 0)
				_exit(1);
			at += (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	*rfd = fds[0];
	snprintf(path, cap, "/proc/self/fd/%d", fds[0]);
	return pid;
}

typedef struct counted {
	uint64_t n, sum;
} counted;

static void count_bytes(void *ctx, const uint8_t *p, size_t n)
{
	counted *c = ctx;
	for (size_t i = 0; i < n; i++)
		c->sum += (uint64_t)p[i] * (c->n + i + 1);
	c->n += n;
}

TEST(sequential_source_reads_forward_and_observes_every_byte)
{
	const size_t total = (3u << 20) + 123;
	char path[64];
	int rfd;
	pid_t pid = pipe_of(total, path, sizeof path, &rfd);
	CHECK(pid > 0);
	fmt_source s;
	fmt_err e = { 0 };
	CHECK(fmt_source_open_sequential(&s, path, &e) == FMT_OK);
	close(rfd);
	CHECK(s.sequential);
	CHECK(s.size == FMT_SIZE_UNKNOWN);
	counted c = { 0, 0 };
	CHECK(fmt_source_observe(&s, count_bytes, &c, &e) == FMT_OK);
	CHECK_EQ_U64(c.n, FMT_SOURCE_HEAD);             /* the head, shown at once */
	uint8_t small[16], *big = malloc(2u << 20);
	CHECK(fmt_source_read(&s, 0, small, sizeof small, &e) == FMT_OK && small[5] == pattern_byte(5));
	CHECK(fmt_source_read(&s, 10000, small, sizeof small, &e) == FMT_OK && small[3] == pattern_byte(10003));
	CHECK(fmt_source_read(&s, 5000, small, sizeof small, &e) == FMT_UNSUPPORTED);   /* passed already */
	CHECK(fmt_source_read(&s, 100, small, sizeof small, &e) == FMT_OK);             /* the head is kept */
	CHECK(fmt_source_read(&s, 20000, big, 2u << 20, &e) == FMT_OK);                 /* a large direct read */
	int same = 1;
	for (size_t i = 0; i < (2u << 20); i++)
		same &= big[i] == pattern_byte(20000 + i);
	CHECK(same);
	size_t got = 0;
	CHECK(fmt_source_read_upto(&s, s.pos, big, 2u << 20, &got, &e) == FMT_OK);
	CHECK_EQ_U64(got, total - 20000 - (2u << 20));
	CHECK(s.eof && s.size == total);
	CHECK_EQ_U64(c.n, total);                        /* every byte, once, in order */
	counted ref = { 0, 0 };
	for (size_t i = 0; i < total; i++) {
		uint8_t b = pattern_byte(i);
		count_bytes(&ref, &b, 1);
	}
	CHECK_EQ_U64(c.sum, ref.sum);
	CHECK(fmt_source_read(&s, total - 4, small, 8, &e) == FMT_INVALID_FORMAT);      /* past the end */
	free(big);
	fmt_source_close(&s);
	waitpid(pid, NULL, 0);
}

TEST(sequential_source_small_or_made_whole)
{
	char path[64];
	int rfd;
	fmt_source s;
	fmt_err e = { 0 };
	pid_t pid = pipe_of(100, path, sizeof path, &rfd);
	CHECK(fmt_source_open_sequential(&s, path, &e) == FMT_OK);
	close(rfd);
	CHECK(!s.sequential && s.size == 100);           /* all of it in the head: in memory */
	fmt_source_close(&s);
	waitpid(pid, NULL, 0);
	pid = pipe_of(50000, path, sizeof path, &rfd);
	CHECK(fmt_source_open(&s, path, &e) == FMT_OK);  /* fmt_source_open: read whole */
	close(rfd);
	uint8_t b[8];
	CHECK(!s.sequential && s.size == 50000);
	CHECK(fmt_source_read(&s, 49990, b, 8, &e) == FMT_OK && b[0] == pattern_byte(49990));
	CHECK(fmt_source_read(&s, 10, b, 8, &e) == FMT_OK && b[7] == pattern_byte(17));
	fmt_source_close(&s);
	waitpid(pid, NULL, 0);
}

/* The fuzzing hook: memory fed as a pipe feeds it, with a small head. */
TEST(sequential_source_from_memory_with_a_small_head)
{
	enum { N = 3000 };
	uint8_t *data = malloc(N), b[16];
	for (size_t i = 0; i < N; i++)
		data[i] = pattern_byte(i);
	fmt_source s;
	fmt_err e = { 0 };
	counted c = { 0, 0 };
	CHECK(fmt_source_stream_memory(&s, "-", data, N, 64, 7, &e) == FMT_OK);
	CHECK(s.sequential && s.head_len == 64 && s.size == FMT_SIZE_UNKNOWN);
	CHECK(fmt_source_observe(&s, count_bytes, &c, &e) == FMT_OK);
	CHECK(fmt_source_read(&s, 60, b, 10, &e) == FMT_OK && b[9] == pattern_byte(69));  /* head, then stream */
	CHECK(fmt_source_read(&s, 65, b, 4, &e) == FMT_UNSUPPORTED);                       /* passed already */
	CHECK(fmt_source_read(&s, 2990, b, 10, &e) == FMT_OK && b[0] == pattern_byte(2990));
	size_t got = 1;
	CHECK(fmt_source_read_upto(&s, s.pos, b, sizeof b, &got, &e) == FMT_OK && got == 0);
	CHECK(s.eof && s.size == N);
	CHECK_EQ_U64(c.n, N);
	fmt_source_close(&s);
	CHECK(fmt_source_stream_memory(&s, "-", data, 50, 64, 7, &e) == FMT_OK);
	CHECK(!s.sequential && s.size == 50);             /* all of it in the head: in memory */
	CHECK(fmt_source_read(&s, 10, b, 8, &e) == FMT_OK && b[7] == pattern_byte(17));
	fmt_source_close(&s);
	free(data);
}

TEST(join_words_and_lists)
{
	const char *const w[] = { "gguf", "apr", "safetensors" };
	char b[64], small[8];
	fmt_join_words(w, 3, " or ", b, sizeof b);
	CHECK_STR(b, "gguf, apr or safetensors");
	fmt_join_words(w, 2, " and ", b, sizeof b);
	CHECK_STR(b, "gguf and apr");
	fmt_join_words(w, 1, " and ", b, sizeof b);
	CHECK_STR(b, "gguf");
	fmt_join_words(w, 0, " and ", b, sizeof b);
	CHECK_STR(b, "");
	fmt_join_sep(w, 3, ",", ",", b, sizeof b);
	CHECK_STR(b, "gguf,apr,safetensors");
	fmt_join_words(w, 3, " or ", small, sizeof small);   /* cut short, still a string */
	CHECK_STR(small, "gguf, a");
}

/* best of names[0..n) for typed, or NULL */
static const char *nearest_of(const char *typed, const char *const *names, size_t n)
{
	static fmt_nearest near;
	fmt_nearest_init(&near, typed);
	for (size_t i = 0; i < n; i++)
		fmt_nearest_offer(&near, names[i]);
	return fmt_nearest_best(&near);
}

TEST(nearest_name_for_did_you_mean)
{
	const char *const dtypes[] = { "q8_0", "q4_0", "q4_1", "Q4_K_M", "Q4_K_S", "keep" };
	const char *const tools[] = { "keygen", "sign", "key-id", "verify", "license" };
	const char *const formats[] = { "safetensors", "gguf", "apr", "nk", "parquet" };
	CHECK_STR(nearest_of("q4km", dtypes, 6), "Q4_K_M");        /* case and '_' ignored */
	CHECK_STR(nearest_of("Q4-K-S", dtypes, 6), "Q4_K_S");
	CHECK_STR(nearest_of("q8", dtypes, 6), "q8_0");            /* one letter dropped */
	CHECK(nearest_of("q4_2", dtypes, 6) == NULL);             /* q4_0 and q4_1 as near: no guess */
	CHECK(nearest_of("Q4_K_X", dtypes, 6) == NULL);
	CHECK(nearest_of("q8_0", dtypes, 6) == NULL);             /* a name itself is no typo */
	CHECK_STR(nearest_of("keygn", tools, 5), "keygen");
	CHECK_STR(nearest_of("sgin", tools, 5), "sign");           /* two letters swapped */
	CHECK_STR(nearest_of("lisence", tools, 5), "license");     /* two changes in 7 letters */
	CHECK_STR(nearest_of("vrfy", tools, 5), "verify");         /* two letters dropped from six */
	CHECK(nearest_of("kgn", tools, 5) == NULL);               /* three: too far */
	CHECK(nearest_of("sg", tools, 5) == NULL);                /* two changes to a four-letter name */
	CHECK(nearest_of("bogus", tools, 5) == NULL);
	CHECK_STR(nearest_of("ggfu", formats, 5), "gguf");
	CHECK_STR(nearest_of("SafeTensor", formats, 5), "safetensors");
	CHECK(nearest_of("", formats, 5) == NULL);
	char word[300];
	memset(word, 'a', sizeof word - 1);
	word[sizeof word - 1] = '\0';
	CHECK(nearest_of(word, formats, 5) == NULL);              /* longer than compared */
	char b[128];
	CHECK_STR(fmt_not_word(b, sizeof b, "ggfu", "gguf"), "not 'ggfu'; did you mean 'gguf'?");
	CHECK_STR(fmt_not_word(b, sizeof b, "xyz", NULL), "not 'xyz'");
}

TEST(integer_text)
{
	char b[24];
	CHECK_EQ_U64(fmt_u64_text(0, b), 1);
	CHECK_STR(b, "0");
	fmt_u64_text(9, b);
	CHECK_STR(b, "9");
	fmt_u64_text(10, b);
	CHECK_STR(b, "10");
	fmt_u64_text(99, b);
	CHECK_STR(b, "99");
	fmt_u64_text(100, b);
	CHECK_STR(b, "100");
	fmt_u64_text(1005, b);
	CHECK_STR(b, "1005");
	CHECK_EQ_U64(fmt_u64_text(UINT64_MAX, b), 20);
	CHECK_STR(b, "18446744073709551615");
	CHECK_EQ_U64(fmt_i64_text(INT64_MIN, b), 20);
	CHECK_STR(b, "-9223372036854775808");
	fmt_i64_text(-7, b);
	CHECK_STR(b, "-7");
	fmt_i64_text(INT64_MAX, b);
	CHECK_STR(b, "9223372036854775807");
	for (int64_t v = -100000; v <= 100000; v += 7) {
		char want[24];
		snprintf(want, sizeof want, "%lld", (long long)v);
		fmt_i64_text(v, b);
		CHECK_STR(b, want);
	}
	/* each length's edges (the digit count's table and the eight-digit pieces) */
	uint64_t p10 = 1;
	for (int k = 0; k < 20; k++, p10 *= 10) {
		uint64_t vs[] = { p10 - 1, p10, p10 + 1, p10 * 2 - 1, p10 + p10 / 2 };
		for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
			char want[24];
			int n = snprintf(want, sizeof want, "%llu", (unsigned long long)vs[i]);
			CHECK_EQ_U64(fmt_u64_text(vs[i], b), (uint64_t)n);
			CHECK_STR(b, want);
			CHECK_EQ_U64((uint64_t)fmt_digit_count(vs[i]), (uint64_t)n);
		}
	}
	CHECK_EQ_U64((uint64_t)fmt_digit_count(0), 1);
	CHECK_EQ_U64((uint64_t)fmt_digit_count(UINT64_MAX), 20);
	/* exactly n digits, zero-padded */
	CHECK(fmt_put_digits(b, 42, 5) == b + 5 && memcmp(b, "00042", 5) == 0);
	CHECK(fmt_put_digits(b, 0, 9) == b + 9 && memcmp(b, "000000000", 9) == 0);
	CHECK(fmt_put_digits(b, 12345678901234567890u, 20) == b + 20 && memcmp(b, "12345678901234567890", 20) == 0);
	CHECK_EQ_U64(fmt_i64_text(-1, b), 2);
	CHECK_STR(b, "-1");
	CHECK_EQ_U64(fmt_i64_text(0, b), 1);
	CHECK_STR(b, "0");
}

typedef struct meter_seen {
	uint64_t planned, done;
	int calls;
} meter_seen;

static void meter_count(void *ctx, uint64_t planned, uint64_t done)
{
	meter_seen *s = ctx;
	s->planned += planned;
	s->done += done;
	s->calls++;
}

TEST(meter_tells_its_follower_until_unfollowed)
{
	meter_seen seen = { 0 }, other = { 0 };
	fmt_meter_planned(5); /* nobody follows: nothing happens */
	fmt_meter_follow(meter_count, &seen);
	fmt_meter_planned(100);
	fmt_meter_done(30);
	fmt_meter_done(0);
	CHECK_EQ_U64(seen.planned, 100);
	CHECK_EQ_U64(seen.done, 30);
	CHECK_EQ_U64(seen.calls, 3);
	fmt_meter_unfollow(&other); /* not the one followed: still told */
	fmt_meter_done(2);
	CHECK_EQ_U64(seen.done, 32);
	fmt_meter_unfollow(&seen);
	fmt_meter_done(7);
	fmt_meter_planned(7);
	CHECK_EQ_U64(seen.done, 32);
	CHECK_EQ_U64(seen.planned, 100);
	CHECK_EQ_U64(seen.calls, 4);
	CHECK_EQ_U64(other.calls, 0);
}

TEST(keeper_keeps_the_largest_buffers_within_its_bytes)
{
	fmt_keep k = FMT_KEEP_INIT(2, 1000, 1500);
	unsigned char *a = fmt_keep_take(&k, 600), *b = fmt_keep_take(&k, 800), *c = fmt_keep_take(&k, 700);
	unsigned char *big = fmt_keep_take(&k, 1001);
	CHECK(a && b && c && big);
	fmt_keep_give(&k, big);                 /* over keep_max: freed */
	CHECK_EQ_U64(k.bytes, 0);
	fmt_keep_give(&k, a);
	fmt_keep_give(&k, b);                   /* 1400 bytes kept */
	CHECK_EQ_U64(k.bytes, 1400);
	fmt_keep_give(&k, c);                   /* would take the place of a: 1500 bytes, kept */
	CHECK_EQ_U64(k.bytes, 1500);
	CHECK(fmt_keep_take(&k, 650) == c);     /* a was freed: c and b are what is kept */
	CHECK_EQ_U64(k.bytes, 800);
	CHECK(fmt_keep_take(&k, 1) == b);
	CHECK_EQ_U64(k.bytes, 0);
	fmt_keep_give(&k, b);
	fmt_keep_give(&k, c);
	unsigned char *d = fmt_keep_take(&k, 900);  /* none holds 900: a new one */
	CHECK(d != NULL && d != b && d != c);
	fmt_keep_give(&k, d);                   /* 2400 bytes would be over 1500: d freed */
	CHECK_EQ_U64(k.bytes, 1500);
	fmt_keep none = FMT_KEEP_INIT(0, 0, 0); /* keeps nothing: frees what it is given */
	fmt_keep_give(&none, fmt_keep_take(&k, 1));
	fmt_keep_give(&none, fmt_keep_take(&k, 1));
	CHECK_EQ_U64(k.bytes, 0);
	CHECK_EQ_U64(none.bytes, 0);
}

TEST(scratch_buffers_are_kept_and_reused)
{
	/* hold what earlier tests left kept (any kept buffer holds a byte), so that none is */
	void *held[4];
	for (int i = 0; i < 4; i++)
		CHECK((held[i] = fmt_scratch_take(1)) != NULL);
	/* a buffer given back is the next one taken for a size it holds, on any thread */
	unsigned char *a = fmt_scratch_take(300000);
	CHECK(a != NULL);
	memset(a, 0x5a, 300000);
	fmt_scratch_give(a);
	unsigned char *b = fmt_scratch_take(1000);
	CHECK(b == a);
	CHECK(b[999] == 0x5a);   /* kept, not freed and not cleared */
	/* one too small for the size asked is not taken: a new buffer */
	unsigned char *c = fmt_scratch_take(300001);
	CHECK(c != NULL && c != a);
	memset(c, 1, 300001);
	fmt_scratch_give(b);
	fmt_scratch_give(c);
	/* the smallest kept buffer that holds the size */
	CHECK(fmt_scratch_take(200000) == a);
	CHECK(fmt_scratch_take(200000) == c);
	fmt_scratch_give(a);
	fmt_scratch_give(c);
	fmt_scratch_give(NULL);
	/* larger than what is kept: freed (a new block each time; ASan checks the free) */
	unsigned char *big = fmt_scratch_take((size_t)8 << 20);
	CHECK(big != NULL);
	big[((size_t)8 << 20) - 1] = 1;
	fmt_scratch_give(big);
	for (int i = 0; i < 4; i++)
		fmt_scratch_give(held[i]);
}

/* XXH3-64 (core/xxh3.c) against xxhsum -H3 of the same bytes, through every vector unit this CPU
 * has, fed whole and in uneven pieces that cross the 64-byte stripes and 1 KiB blocks. */
static uint64_t xxh3_pieces(const uint8_t *p, size_t n, size_t piece, int level)
{
	XXH3_state_t *h = XXH3_createState();
	CHECK(h && XXH3_64bits_reset(h) == XXH_OK);
	for (size_t at = 0; at < n; at += piece)
		CHECK(fmt_xxh3_update_level(h, p + at, n - at < piece ? n - at : piece, level) == XXH_OK);
	uint64_t d = XXH3_64bits_digest(h);
	XXH3_freeState(h);
	return d;
}

TEST(xxh3_every_vector_unit_matches_xxhsum)
{
	enum { N = 100003 };
	static uint8_t p[N];
	for (uint64_t i = 0; i < N; i++)
		p[i] = (uint8_t)(((i * i * 31 + i * 7 + 3) >> 3) & 255);
	/* xxhsum -H3 of these bytes: all 100003, the first 200, none */
	const uint64_t whole = 0x13f3976104289c67ull, first200 = 0x1ee42f783232f6ebull, empty = 0x2d06800538d394c2ull;
	CHECK_EQ_U64(XXH3_64bits(p, N), whole);
	CHECK_EQ_U64(XXH3_64bits(p, 200), first200);
	CHECK_EQ_U64(XXH3_64bits(p, 0), empty);
	const size_t pieces[] = { N, 1, 63, 64, 1000, 1024, 4097 };
	for (int level = 0; level <= fmt_xxh3_level(); level++)
		for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
			CHECK_EQ_U64(xxh3_pieces(p, N, pieces[i], level), whole);
			CHECK_EQ_U64(xxh3_pieces(p, 200, pieces[i], level), first200);
		}
	XXH3_state_t *h = XXH3_createState();
	CHECK(h && XXH3_64bits_reset(h) == XXH_OK && fmt_xxh3_update(h, p, N) == XXH_OK);
	CHECK_EQ_U64(XXH3_64bits_digest(h), whole);
	XXH3_freeState(h);
}

/* fmt_xxh3_read's reader: bytes from memory; a read at or past fail_at fails, naming its offset. */
typedef struct mem_reader {
	const uint8_t *p;
	uint64_t fail_at;
} mem_reader;

static fmt_kind read_mem(void *ctx, uint64_t off, void *dst, size_t n, fmt_err *e)
{
	const mem_reader *r = ctx;
	if (off + n > r->fail_at)
		return fmt_fail(e, FMT_IO, "read at %llu failed", (unsigned long long)off);
	memcpy(dst, r->p + off, n);
	return FMT_OK;
}

/* The same digest on one thread and pipelined on two and three (a batch read while the one
 * before is hashed), at every length around the batches' edges. */
TEST(xxh3_read_pipelined_matches_the_whole)
{
	const uint64_t B = FMT_XXH3_READ_BATCH;
	const uint64_t lengths[] = { 0, 1, 100003, B - 1, B, B + 1, 2 * B + 7, 3 * B + 262144 + 5 };
	uint64_t most = 3 * B + 262144 + 5;
	uint8_t *p = malloc(most);
	CHECK(p != NULL);
	if (!p)
		return;
	for (uint64_t i = 0; i < most; i++)
		p[i] = (uint8_t)((i * 2654435761u) >> 13);
	mem_reader r = { p, UINT64_MAX };
	fmt_err e = { 0 };
	for (int threads = 0; threads <= 3; threads++) {
		fmt_pool *pool = NULL;
		CHECK(threads == 0 || fmt_pool_create(&pool, threads, &e) == FMT_OK);
		for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
			XXH3_state_t *h = XXH3_createState();
			CHECK(h && XXH3_64bits_reset(h) == XXH_OK);
			CHECK(fmt_xxh3_read(h, lengths[i], read_mem, &r, pool, &e) == FMT_OK);
			CHECK_EQ_U64(XXH3_64bits_digest(h), XXH3_64bits(p, lengths[i]));
			XXH3_freeState(h);
		}
		if (pool)
			fmt_pool_destroy(pool);
	}
	free(p);
}

/* A failed read ends the hash with its error: on two threads, the failure of the lowest piece
 * of the batch where reads start failing (all pieces after it fail too), as on one. */
TEST(xxh3_read_reports_the_first_failed_read)
{
	const uint64_t B = FMT_XXH3_READ_BATCH, n = 3 * B;
	uint8_t *p = calloc(1, n);
	CHECK(p != NULL);
	if (!p)
		return;
	mem_reader r = { p, B + 3 * 262144 + 10 };
	fmt_err e = { 0 };
	fmt_pool *pool = NULL;
	CHECK(fmt_pool_create(&pool, 2, &e) == FMT_OK);
	XXH3_state_t *h = XXH3_createState();
	CHECK(h && XXH3_64bits_reset(h) == XXH_OK);
	CHECK(fmt_xxh3_read(h, n, read_mem, &r, pool, &e) == FMT_IO);
	CHECK_STR(e.msg, "read at 2883584 failed");   /* B + 3 pieces of 256 KiB */
	XXH3_64bits_reset(h);
	fmt_err_clear(&e);
	CHECK(fmt_xxh3_read(h, n, read_mem, &r, NULL, &e) == FMT_IO);
	CHECK_STR(e.msg, "read at 2883584 failed");   /* the 128 KiB read holding fail_at */
	XXH3_freeState(h);
	fmt_pool_destroy(pool);
	free(p);
}

TEST(env_levels_in_any_case_and_unknown_values_refused)
{
	const char *saved = getenv("NK_KERNELS");
	char *keep = saved ? strdup(saved) : NULL;
	fmt_err e = { 0 };
	unsetenv("NK_KERNELS");
	CHECK(fmt_env_level(FMT_ENV_NK_KERNELS) == -1);
	setenv("NK_KERNELS", "", 1);
	CHECK(fmt_env_level(FMT_ENV_NK_KERNELS) == -1);
	setenv("NK_KERNELS", "Portable", 1);
	CHECK(fmt_env_level(FMT_ENV_NK_KERNELS) == 0);
	setenv("NK_KERNELS", "AVX512", 1);
	CHECK(fmt_env_level(FMT_ENV_NK_KERNELS) == 2);
	fmt_err_clear(&e);
	CHECK(fmt_env_check(&e) == FMT_OK);
	setenv("NK_KERNELS", "avx2 ", 1);
	CHECK(fmt_env_level(FMT_ENV_NK_KERNELS) == -1);
	CHECK(fmt_env_check(&e) == FMT_USAGE);
	CHECK_STR(e.msg, "NK_KERNELS='avx2 ' in the environment: unknown value (expected generic, portable, avx2 or "
			 "avx512; case ignored)");
	if (keep)
		setenv("NK_KERNELS", keep, 1);
	else
		unsetenv("NK_KERNELS");
	free(keep);
}

TEST(tree_budget_counts_json_values)
{
	fmt_err e = { 0 };
	const char *s = "{\"a\":[0,1,{}],\"b:[,{\":\"x\\\",\"}";
	CHECK(fmt_json_values("0", 1) == 1);
	CHECK(fmt_json_values("[]", 2) == 1 + FMT_TREE_ARRAY_VALUES);
	/* one plus { : [ , , { , : outside strings (two objects, one array, five , and :): the
	 * brackets, commas and colons inside the strings "b:[,{" and "x\"," do not count */
	CHECK(fmt_json_values(s, strlen(s)) == 1 + 2 * FMT_TREE_OBJECT_VALUES + FMT_TREE_ARRAY_VALUES + 5);
	CHECK(fmt_json_values("\"[,,,", 5) == 1);   /* an unterminated string: nothing after it counts */
	CHECK(fmt_tree_max_values(0, 64) == (32u << 20) / 64);
	CHECK(fmt_tree_max_values(64, 128) == ((32u << 20) + 512) / 128);
	CHECK(fmt_tree_max_values(SIZE_MAX, 64) == UINT64_MAX / 64);
	CHECK(fmt_tree_check("x", (32u << 20) / 64, 0, 64, &e) == FMT_OK);
	CHECK(fmt_tree_check("x", (32u << 20) / 64 + 1, 0, 64, &e) == FMT_INVALID_FORMAT);
	CHECK(strcmp(e.msg, "x holds more than 524288 values, the most 0 bytes may hold (fmtkit(7), SAFETY)") == 0);
}

/* ---- a mapped input truncated (fmt_cli_catch_truncation) ---- */

static void *touch_past_end(void *arg)
{
	const volatile uint8_t *p = arg;
	return (void *)(uintptr_t)p[40000];
}

static void *note_copy(const char *path)
{
	return strdup(path);
}

/* More mappings than a block of slots holds (a merge of 100 Arrow files maps them all): each
 * is listed with its own note, and none after fmt_map_unwatch. */
TEST(map_watch_lists_any_number_of_mappings)
{
	enum { N = 200 };
	static uint8_t ranges[N][16];
	char name[16];
	fmt_map_notes(note_copy);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "f%d", i);
		fmt_map_watch(ranges[i], sizeof ranges[i], name);
	}
	fmt_map_notes(NULL);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof name, "f%d", i);
		const char *note = fmt_map_note_at(&ranges[i][15]);
		CHECK(note && strcmp(note, name) == 0);
	}
	for (int i = 0; i < N; i++)
		fmt_map_unwatch(ranges[i]);
	for (int i = 0; i < N; i++)
		CHECK(fmt_map_note_at(ranges[i]) == NULL);
}

static volatile sig_atomic_t alarm_seen;

static void on_alarm(int sig)
{
	(void)sig;
	alarm_seen = 1;
}

/* In a child: a signal the program handles itself stays its own once a temporary file is
 * tracked (the cleanup handler takes only signals at their default), and one at its default
 * still removes the file and ends the process with that signal. */
TEST(tmp_cleanup_leaves_handled_signals_alone)
{
	char dir[64], path[96];
	CHECK(unit_scratch_dir(dir) != NULL);
	snprintf(path, sizeof path, "%s/part.tmp", dir);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGALRM, on_alarm);
		char *p = strdup(path);
		FILE *f = p ? fopen(p, "w") : NULL;
		if (!f || fclose(f) != 0 || fmt_tmp_track(p) != 0)
			_exit(91);
		raise(SIGALRM);
		if (!alarm_seen || access(p, F_OK) != 0)
			_exit(92);
		raise(SIGUSR1);
		_exit(93);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
	CHECK(access(path, F_OK) != 0);
	unit_rm_dir(dir);
}

/* In a child: a 64 KiB file viewed (mapped), truncated to 4 KiB, then read past its new end on
 * a thread fmt_thread_start made (it blocks the other signals): the SIGBUS reaches the handler,
 * which writes the note and exits 3; a temporary file that a sink holds is removed. */
TEST(truncated_mapping_is_io_error_on_any_thread)
{
	char dir[64], path[96], out[96], err[96];
	CHECK(unit_scratch_dir(dir) != NULL);
	snprintf(path, sizeof path, "%s/in.bin", dir);
	snprintf(out, sizeof out, "%s/out.bin", dir);
	snprintf(err, sizeof err, "%s/err", dir);
	static uint8_t zeros[65536];
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros && fclose(f) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		int efd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (efd < 0 || dup2(efd, STDERR_FILENO) < 0)
			_exit(90);
		fmt_cli_catch_truncation("unit", 0);
		fmt_source s;
		fmt_sink k;
		fmt_err e = { 0 };
		const uint8_t *p;
		if (fmt_sink_open(&k, out, 0, &e) != FMT_OK || fmt_source_open(&s, path, &e) != FMT_OK ||
		    fmt_source_view(&s, 0, s.size, &p, &e) != FMT_OK || truncate(path, 4096) != 0)
			_exit(91);
		pthread_t t;
		if (fmt_thread_start(&t, 0, touch_past_end, (void *)p) != 0)
			_exit(92);
		pthread_join(t, NULL);
		_exit(93);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	size_t n = 0;
	uint8_t *text = unit_read_file(err, 4096, &n);
	char want[256];
	snprintf(want, sizeof want,
		 "unit: error: %s: " FMT_MSG_SHRANK "\n", path);
	CHECK(text && n == strlen(want) && memcmp(text, want, n) == 0);
	free(text);
	/* in.bin and err only: the sink's temporary file is gone */
	char ls[160];
	snprintf(ls, sizeof ls, "test $(ls -A %s | wc -l) -eq 2", dir);
	CHECK(system(ls) == 0);
	unit_rm_dir(dir);
}

/* 256 KiB of text-like bytes as one zstd frame without its size (window 2^18: a context limited
 * to 2^10 refuses it); the caller frees both. */
static uint8_t *zstd_sample(size_t *raw_n, uint8_t **frame, size_t *frame_n)
{
	size_t n = 256u << 10;
	uint8_t *raw = malloc(n);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	*frame = malloc(ZSTD_compressBound(n));
	if (!raw || !c || !*frame) {
		ZSTD_freeCCtx(c);
		return raw;
	}
	for (size_t i = 0; i < n; i++)
		raw[i] = (uint8_t)("fmtkit zstd contexts "[i % 21] + (i / 4096) % 7);
	ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 18);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0); /* a streamed frame: the window checked */
	*frame_n = ZSTD_compress2(c, *frame, ZSTD_compressBound(n), raw, n);
	ZSTD_freeCCtx(c);
	*raw_n = n;
	return raw;
}

/* Streams the frame through d into out (raw_n bytes); 1 when it decoded to exactly those. */
static int zstd_stream_ok(ZSTD_DCtx *d, const uint8_t *frame, size_t frame_n, const uint8_t *raw, size_t raw_n)
{
	uint8_t *out = malloc(raw_n);
	ZSTD_inBuffer in = { frame, frame_n, 0 };
	ZSTD_outBuffer o = { out, raw_n, 0 };
	size_t r = out ? ZSTD_decompressStream(d, &o, &in) : 1;
	int ok = r == 0 && o.pos == raw_n && memcmp(out, raw, raw_n) == 0;
	free(out);
	return ok;
}

/* fmt_zstd_decompress of the whole frame; 1 when it gave exactly raw. */
static int zstd_whole_ok(const uint8_t *frame, size_t frame_n, const uint8_t *raw, size_t raw_n)
{
	uint8_t *out = malloc(raw_n);
	int ok = out && fmt_zstd_decompress(out, raw_n, frame, frame_n) == raw_n && memcmp(out, raw, raw_n) == 0;
	free(out);
	return ok;
}

TEST(zstd_context_given_back_is_lent_again_as_new)
{
	size_t raw_n = 0, frame_n = 0;
	uint8_t *frame = NULL, *raw = zstd_sample(&raw_n, &frame, &frame_n);
	CHECK(raw && frame && !ZSTD_isError(frame_n));
	ZSTD_DCtx *d = fmt_zstd_dctx_take();
	CHECK(d && zstd_stream_ok(d, frame, frame_n, raw, raw_n));
	/* given back with a window too small for the frame: lent again with zstd's default */
	CHECK(!ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 10)));
	CHECK(!zstd_stream_ok(d, frame, frame_n, raw, raw_n));
	fmt_zstd_dctx_give(d);
	ZSTD_DCtx *again = fmt_zstd_dctx_take();
	CHECK(again == d);                      /* the thread's own, kept */
	CHECK(zstd_stream_ok(again, frame, frame_n, raw, raw_n));
	/* given back mid-frame: lent again at a frame's start */
	ZSTD_inBuffer in = { frame, frame_n, 0 };
	uint8_t small[100];
	ZSTD_outBuffer o = { small, sizeof small, 0 };
	size_t r = ZSTD_decompressStream(again, &o, &in);
	CHECK(!ZSTD_isError(r) && r != 0 && o.pos == sizeof small);
	fmt_zstd_dctx_give(again);
	again = fmt_zstd_dctx_take();
	CHECK(again == d && zstd_stream_ok(again, frame, frame_n, raw, raw_n));
	fmt_zstd_dctx_give(again);
	fmt_zstd_dctx_give(NULL);
	CHECK(zstd_whole_ok(frame, frame_n, raw, raw_n));
	uint8_t *whole = malloc(raw_n);
	CHECK(whole && ZSTD_isError(fmt_zstd_decompress(whole, raw_n, frame, frame_n - 1)));
	free(whole);
	free(frame);
	free(raw);
}

typedef struct zstd_lend {
	ZSTD_DCtx *d[12];
	const uint8_t *frame, *raw;
	size_t frame_n, raw_n;
	int ok;
} zstd_lend;

static void *give_elsewhere(void *p)
{
	zstd_lend *l = p;
	for (size_t i = 0; i < 12; i++)
		fmt_zstd_dctx_give(l->d[i]);
	return NULL;
}

static void *decompress_many(void *p)
{
	zstd_lend *l = p;
	l->ok = 1;
	for (int i = 0; i < 50 && l->ok; i++) {
		l->ok = zstd_whole_ok(l->frame, l->frame_n, l->raw, l->raw_n);
		ZSTD_DCtx *d = fmt_zstd_dctx_take();
		l->ok = l->ok && d && zstd_stream_ok(d, l->frame, l->frame_n, l->raw, l->raw_n);
		fmt_zstd_dctx_give(d);
	}
	return NULL;
}

/* Contexts taken on one thread and given back on another (more than are kept: the rest freed,
 * which ASan's leak check sees), then lent to threads decompressing at once. */
TEST(zstd_contexts_lent_across_threads)
{
	size_t raw_n = 0, frame_n = 0;
	uint8_t *frame = NULL, *raw = zstd_sample(&raw_n, &frame, &frame_n);
	CHECK(raw && frame && !ZSTD_isError(frame_n));
	zstd_lend l = { .frame = frame, .raw = raw, .frame_n = frame_n, .raw_n = raw_n };
	for (size_t i = 0; i < 12; i++)
		CHECK((l.d[i] = fmt_zstd_dctx_take()) != NULL);
	pthread_t t;
	CHECK(fmt_thread_start(&t, 0, give_elsewhere, &l) == 0);
	pthread_join(t, NULL);
	zstd_lend each[3];
	pthread_t ts[3];
	for (int i = 0; i < 3; i++) {
		each[i] = l;
		CHECK(fmt_thread_start(&ts[i], 0, decompress_many, &each[i]) == 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(ts[i], NULL);
		CHECK(each[i].ok);
	}
	free(frame);
	free(raw);
}
