/* The terminal prompts of the CLI layer: a secret typed without echo on /dev/tty (the terminal
 * restored on a signal). libcommon below never asks anyone: the tools hand these to it as
 * hooks (fmt_key_opts.secret_prompt, fmt_pass_opts.ask, fmt_decrypt_opts.ask). */
#ifndef FMT_PROMPT_H
#define FMT_PROMPT_H

#include "fmt/crypto.h"
#include "fmt/encrypt.h"
#include "fmt/err.h"

/* Ask with prompt and read one line without echo (UsageError when there is no terminal or
 * nothing was typed). */
fmt_kind fmt_secret_from_prompt(const char *prompt, fmt_hmac_key *out, fmt_err *e);

/* A secret key's passphrase, typed twice when confirm (fmt_pass_opts.ask). */
fmt_kind fmt_prompt_passphrase(int confirm, fmt_hmac_key *pw, fmt_err *e);

/* The password of encrypted data (fmt_decrypt_opts.ask): asked only when standard input is a
 * terminal; otherwise nothing is asked (out->bytes NULL, FMT_OK). */
fmt_kind fmt_prompt_password(fmt_password *out, fmt_err *e);

#endif
