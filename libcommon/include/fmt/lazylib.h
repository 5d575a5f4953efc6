/* Shared libraries loaded on first use (dlopen), for a dependency that only some paths need: tar
 * bundles need libarchive, and libarchive brings libxml2, ICU and eight more libraries, which
 * every tool would otherwise map and relocate at start-up (fmt-verify --version: 22 libraries). */
#ifndef FMT_LAZYLIB_H
#define FMT_LAZYLIB_H

#include <stdatomic.h>
#include <stddef.h>
#include "fmt/err.h"

typedef struct fmt_lazylib {
	const char *soname;            /* "libarchive.so.13" */
	const char *const *names;      /* the functions wanted ... */
	void **slots;                  /* ... and where their addresses go, in the same order */
	size_t n;
	atomic_int loaded;             /* every slot filled */
} fmt_lazylib;

/* The call table of a library whose functions FUNCS(X) lists (X(name) for each): a union of
 * typed pointers, .fn.name, over the slots fmt_lazylib_load fills, .slot[i]; and their names
 * in the same order. A library's file declares `static FMT_LAZY_TABLE(FUNCS) fns;` and
 * `static const char *const names[] = { FUNCS(FMT_LAZY_NAME) };`. */
#define FMT_LAZY_SLOT(f) __typeof__(f) *f;
#define FMT_LAZY_NAME(f) #f,
#define FMT_LAZY_ONE(f) +1
#define FMT_LAZY_TABLE(FUNCS) \
	union { \
		struct { \
			FUNCS(FMT_LAZY_SLOT) \
		} fn; \
		void *slot[0 FUNCS(FMT_LAZY_ONE)]; \
	}
/* A function pointer is as wide as a void * on the platforms fmtkit builds for: one slot each. */
#define FMT_LAZY_CHECK(table) \
	_Static_assert(sizeof(table).fn == sizeof(table).slot, "one slot per function")

/* lib loaded and its slots filled, once whatever the threads; a library or a function missing
 * is Unsupported naming it (and a later call tries again). */
fmt_kind fmt_lazylib_load(fmt_lazylib *lib, fmt_err *e);

#endif
