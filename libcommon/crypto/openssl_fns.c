/* libcrypto loaded on first use (openssl_fns.h). */
#include "fmt/lazylib.h"
#include "openssl_fns.h"

static const char *const names[] = { OPENSSL_FUNCTIONS(FMT_LAZY_NAME) };

fmt_openssl_fns fmt_openssl;
FMT_LAZY_CHECK(fmt_openssl);

static fmt_lazylib lib = { "libcrypto.so.3", names, fmt_openssl.slot, sizeof names / sizeof names[0], 0 };

fmt_kind fmt_openssl_load(fmt_err *e)
{
	fmt_kind k = fmt_lazylib_load(&lib, e);
	if (k != FMT_OK)
		return k;
	/* libcrypto initialises itself once, on first use, and remembers a failure (memory ran
	 * out): its later calls then fail, or crash on the default context's lock, which its
	 * initialisation left NULL (OpenSSL 3.0). Asked here, before every use, both say so. */
	if (OSSL(OPENSSL_init_crypto)(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1 ||
	    !OSSL(OSSL_LIB_CTX_get0_global_default)())
		return fmt_fail(e, FMT_IO, "out of memory initialising libcrypto");
	return FMT_OK;
}
