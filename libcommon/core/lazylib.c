/* Shared libraries loaded on first use (fmt/lazylib.h). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include "fmt/lazylib.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static fmt_kind load_locked(fmt_lazylib *lib, fmt_err *e)
{
	errno = 0;
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) /* the loader's allocations failed: ENOMEM (a library that is not there leaves 0) */
		return fmt_fail(e, errno == ENOMEM ? FMT_IO : FMT_UNSUPPORTED, "cannot load %s: %s", lib->soname,
				dlerror());
	for (size_t i = 0; i < lib->n; i++) {
		if (!(lib->slots[i] = dlsym(h, lib->names[i]))) {
			fmt_kind k = fmt_fail(e, FMT_UNSUPPORTED, "%s has no function %s", lib->soname, lib->names[i]);
			dlclose(h);
			return k;
		}
	}
	/* never closed: the functions stay valid to the end of the process */
	atomic_store(&lib->loaded, 1);
	return FMT_OK;
}

fmt_kind fmt_lazylib_load(fmt_lazylib *lib, fmt_err *e)
{
	if (atomic_load(&lib->loaded))
		return FMT_OK;
	pthread_mutex_lock(&lock);
	fmt_kind k = atomic_load(&lib->loaded) ? FMT_OK : load_locked(lib, e);
	pthread_mutex_unlock(&lock);
	return k;
}
