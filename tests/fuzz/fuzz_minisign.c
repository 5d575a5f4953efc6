/* Fuzz the minisign parsers (libcommon/crypto/minisign.c): .minisig signature files, public key
 * files and bare public keys, secret key files (unencrypted ones parse fully; encrypted ones
 * stop before scrypt, whose limits are checked first), X25519 public key files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fmt_err e;
	fmt_err_clear(&e);
	fmt_ms_sig *sig = malloc(sizeof *sig);
	fmt_ms_public pub;
	fmt_ms_secret sec;
	uint8_t x[32];
	if (!sig)
		return 0;
	fmt_err_clear(&e);
	(void)fmt_ms_sig_parse((const char *)data, size, sig, &e);
	free(sig);
	(void)fmt_ms_public_parse((const char *)data, size, 0, &pub, &e);
	(void)fmt_ms_public_parse((const char *)data, size, 1, &pub, &e);
	(void)fmt_x25519_public_parse((const char *)data, size, x, &e);
	if (fmt_ms_secret_encrypted(data, size) == 0 &&
	    fmt_ms_secret_parse(data, size, NULL, 0, &sec, &e) == FMT_OK)
		fmt_ms_secret_free(&sec);
	return 0;
}
