/*
 * Allocation-failure injector for the tests (tests/oom/run, tests/cli/oom.bats): an LD_PRELOAD
 * object whose malloc, calloc, realloc, reallocarray, aligned_alloc, posix_memalign, memalign,
 * valloc and pvalloc count the calls and make chosen ones fail (NULL, errno ENOMEM), passing the
 * others to glibc's own allocator (__libc_malloc and friends: no dlsym, which allocates itself).
 *
 *   FMTKIT_FAIL_ALLOC_AT=N      the Nth counted call fails (1-based; unset or 0: none fails)
 *   FMTKIT_FAIL_ALLOC_AFTER=1   and every counted call after it fails too
 *   FMTKIT_FAIL_ALLOC_COUNT=F   at exit, write the number of counted calls to file F
 *
 * Counting starts in this object's constructor: before it, the dynamic loader and libc set
 * themselves up (their failures are not the tools' to handle). The constructors of the program
 * and everything after are counted, main's calls included. glibc's own functions that allocate
 * (strdup, strndup, asprintf, realpath, fopen, open_memstream, ...) call malloc through the
 * symbol the program sees, so they are counted and fail here too; dlopen's allocations as well.
 * The tools link their libraries statically except libc and libm, and their calls to malloc go
 * through libc's dynamic symbol, which this object interposes. free is glibc's, untouched.
 *
 * Only for dynamically linked programs without a sanitizer (an ASan build's allocator is in the
 * executable, which comes before any preloaded object).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static atomic_int counting;
static atomic_ulong calls;
static unsigned long fail_at;
static int fail_after;

static unsigned long env_number(const char *name)
{
	const char *s = getenv(name);
	unsigned long v = 0;

	if (!s)
		return 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (unsigned long)(*s - '0');
	return v;
}

__attribute__((constructor)) static void failalloc_start(void)
{
	fail_at = env_number("FMTKIT_FAIL_ALLOC_AT");
	fail_after = env_number("FMTKIT_FAIL_ALLOC_AFTER") != 0;
	atomic_store(&counting, 1);
}

static void put_number(int fd, unsigned long v)
{
	char buf[32];
	size_t i = sizeof buf;

	buf[--i] = '\n';
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (write(fd, buf + i, sizeof buf - i) < 0)
		return;
}

__attribute__((destructor)) static void failalloc_end(void)
{
	const char *path = getenv("FMTKIT_FAIL_ALLOC_COUNT");
	int fd;

	if (!path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	put_number(fd, atomic_load(&calls));
	close(fd);
}

/* 1 when this call is to fail (errno set). */
static int fail_now(void)
{
	unsigned long n;

	if (!atomic_load_explicit(&counting, memory_order_relaxed))
		return 0;
	n = atomic_fetch_add(&calls, 1) + 1;
	if (fail_at && (n == fail_at || (fail_after && n > fail_at))) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	return fail_now() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	/* realloc(p, 0) frees p (glibc): not an allocation that can fail */
	if (p && n == 0)
		return __libc_realloc(p, n);
	return fail_now() ? NULL : __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes);
}

void *memalign(size_t align, size_t n)
{
	return fail_now() ? NULL : __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}

void *valloc(size_t n)
{
	return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return memalign(page, (n + page - 1) & ~(page - 1));
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	if (fail_now())
		return ENOMEM;
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
