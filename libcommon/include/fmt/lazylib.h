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

/* lib loaded and its slots filled, once whatever the threads; a library or a function missing
 * is Unsupported naming it (and a later call tries again). */
fmt_kind fmt_lazylib_load(fmt_lazylib *lib, fmt_err *e);

#endif
