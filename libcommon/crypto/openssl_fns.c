/* libcrypto loaded on first use (openssl_fns.h). */
#include "fmt/lazylib.h"
#include "openssl_fns.h"

static const char *const names[] = { OPENSSL_FUNCTIONS(FMT_LAZY_NAME) };

fmt_openssl_fns fmt_openssl;
FMT_LAZY_CHECK(fmt_openssl);

static fmt_lazylib lib = { "libcrypto.so.3", names, fmt_openssl.slot, sizeof names / sizeof names[0], 0 };

fmt_kind fmt_openssl_load(fmt_err *e)
{
	return fmt_lazylib_load(&lib, e);
}
