/* Unit tests for libcommon/core/stagedir.c: private, committed together, rolled back whole. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/stagedir.h"
#include "unit.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int holds(const char *path, const char *text)
{
	char buf[64] = { 0 };
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static void stage_file(fmt_stagedir *s, size_t i, const char *text)
{
	fmt_err e = { 0 };
	int fd = fmt_stagedir_create_file(s, i, &e);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
		close(fd);
	}
}

static int count_entries(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

TEST(stagedir_private_and_removed)
{
	char dir[] = "/tmp/fmtkit-stage-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	const char *names[] = { "a", "b" };
	fmt_stagedir s;
	fmt_err e = { 0 };
	CHECK_EQ_U64(fmt_stagedir_create(&s, dir, ".x-", names, 2, &e), FMT_OK);
	struct stat st;
	CHECK(stat(s.path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	stage_file(&s, 0, "A");
	/* A name is created once: O_EXCL. */
	CHECK(fmt_stagedir_create_file(&s, 0, &e) < 0);
	char *p = fmt_stagedir_file_path(&s, 0);
	CHECK(p && holds(p, "A"));
	free(p);
	fmt_stagedir_remove(&s);
	CHECK_EQ_U64(count_entries(dir), 0);
	rmdir(dir);
}

TEST(stagedir_commit_replaces_and_rolls_back)
{
	char dir[] = "/tmp/fmtkit-stage-XXXXXX", path[128];
	CHECK(mkdtemp(dir) != NULL);
	const char *names[] = { "a", "b", "c" };
	fmt_stagedir s;
	fmt_err e = { 0 };
	snprintf(path, sizeof path, "%s/a", dir);
	put(path, "old a");
	snprintf(path, sizeof path, "%s/b", dir);
	put(path, "old b");
	/* Without replace: refused, nothing moves. */
	CHECK_EQ_U64(fmt_stagedir_create(&s, dir, ".x-", names, 3, &e), FMT_OK);
	stage_file(&s, 0, "new a");
	stage_file(&s, 1, "new b");
	stage_file(&s, 2, "new c");
	CHECK_EQ_U64(fmt_stagedir_commit(&s, dir, 0, &e), FMT_USAGE);
	fmt_stagedir_remove(&s);
	CHECK_EQ_U64(count_entries(dir), 2);
	/* The third file vanishes from the staging directory: its move fails after a and b were
	 * replaced; both old files come back, nothing new stays. */
	CHECK_EQ_U64(fmt_stagedir_create(&s, dir, ".x-", names, 3, &e), FMT_OK);
	stage_file(&s, 0, "new a");
	stage_file(&s, 1, "new b");
	CHECK_EQ_U64(fmt_stagedir_commit(&s, dir, 1, &e), FMT_IO);
	fmt_stagedir_remove(&s);
	snprintf(path, sizeof path, "%s/a", dir);
	CHECK(holds(path, "old a"));
	snprintf(path, sizeof path, "%s/b", dir);
	CHECK(holds(path, "old b"));
	CHECK_EQ_U64(count_entries(dir), 2);
	/* A directory in the way is refused before anything moves. */
	snprintf(path, sizeof path, "%s/c", dir);
	CHECK(mkdir(path, 0700) == 0);
	CHECK_EQ_U64(fmt_stagedir_create(&s, dir, ".x-", names, 3, &e), FMT_OK);
	stage_file(&s, 0, "new a");
	stage_file(&s, 1, "new b");
	stage_file(&s, 2, "new c");
	CHECK_EQ_U64(fmt_stagedir_commit(&s, dir, 1, &e), FMT_IO);
	fmt_stagedir_remove(&s);
	snprintf(path, sizeof path, "%s/a", dir);
	CHECK(holds(path, "old a"));
	CHECK_EQ_U64(count_entries(dir), 3);
	snprintf(path, sizeof path, "%s/c", dir);
	rmdir(path);
	/* Success: all replaced, nothing else left. */
	CHECK_EQ_U64(fmt_stagedir_create(&s, dir, ".x-", names, 3, &e), FMT_OK);
	stage_file(&s, 0, "new a");
	stage_file(&s, 1, "new b");
	stage_file(&s, 2, "new c");
	CHECK_EQ_U64(fmt_stagedir_commit(&s, dir, 1, &e), FMT_OK);
	fmt_stagedir_remove(&s);
	snprintf(path, sizeof path, "%s/a", dir);
	CHECK(holds(path, "new a"));
	unlink(path);
	snprintf(path, sizeof path, "%s/b", dir);
	CHECK(holds(path, "new b"));
	unlink(path);
	snprintf(path, sizeof path, "%s/c", dir);
	CHECK(holds(path, "new c"));
	unlink(path);
	CHECK_EQ_U64(count_entries(dir), 0);
	rmdir(dir);
}
