/* fmt-sign's subcommands: each loads what it needs, does the work and prints the result. */
#ifndef FMT_SIGN_H
#define FMT_SIGN_H

#include "fmt/cli.h"
#include "fmt/crypto.h"

#define TOOL "fmt-sign"

typedef struct sign_opts {
	fmt_common_opts common;
	fmt_key_opts key;   /* sign, key-id: which key (none given: the per-user key) */
	int hmac;           /* keygen --hmac */
	int force;          /* keygen --force: rotate an existing key */
} sign_opts;

/* Each returns the exit status after reporting any error on stderr. */
int sign_cmd_keygen(const sign_opts *o);
int sign_cmd_sign(const char *path, const sign_opts *o);
int sign_cmd_key_id(const sign_opts *o);

#endif
