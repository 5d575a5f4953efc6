/* The option-table fragments of the key options, which tools share so that each takes keys
 * with the same words: the key options (fmt_key_opts), the trust options (fmt_trust_opts) and
 * the decryption options (fmt_decrypt_opts), with the handlers that fill those structs, and the
 * passphrase options' struct with the CLI layer's terminal prompt and notice. */
#ifndef FMT_CLI_KEYS_H
#define FMT_CLI_KEYS_H

#include "fmt/cli.h"
#include "fmt/crypto.h"
#include "fmt/encrypt.h"
#include "fmt/minisign.h"

/* Handle a key option (the ids FMT_OPT_HMAC_KEY... of fmt/cli.h, given to a tool's on_option);
 * returns 1 if c was one, 0 if not. --secret-prompt asks at the terminal (fmt/prompt.h). */
int fmt_cli_key_option(int c, const char *arg, fmt_key_opts *o);

/* The trust options (fmt_trust_opts, fmt/minisign.h): their option ids and their handler, 1 if
 * id was one (call it first thing in on_option). */
enum { FMT_OPT_PUBKEY = 'p', FMT_OPT_PUBKEY_BASE64 = 'P', FMT_OPT_TRUSTED_KEYS = 0x10D0 };
int fmt_cli_trust_option(int id, const char *arg, fmt_trust_opts *o);

/* Their entries in a tool's option table (fmt/cli.h), the same words in every tool that checks
 * Ed25519 signatures with trusted keys; cmds is the .commands mask (0: a tool without
 * subcommands):  { FMT_CLI_OPT("json", ...) }, FMT_CLI_TRUST_OPTIONS(0), { FMT_CLI_OPT(...) }, */
#define FMT_CLI_TRUST_OPTIONS(cmds)                                                                      \
	{ FMT_CLI_OPT("pubkey", FMT_OPT_PUBKEY, "FILE", "trust the Ed25519 public key in FILE (minisign format)"), \
	  .commands = (cmds), .complete = FMT_COMPLETE_FILE, .words = "*.pub" },                          \
	{ FMT_CLI_OPT("pubkey-base64", FMT_OPT_PUBKEY_BASE64, "BASE64",                                  \
		      "trust the Ed25519 public key given as its base64 line"), .commands = (cmds) },        \
	{ FMT_CLI_OPT("trusted-keys", FMT_OPT_TRUSTED_KEYS, "DIR", "trust every *.pub key file in DIR"), \
	  .commands = (cmds), .complete = FMT_COMPLETE_DIR }

/* The decryption options (fmt_decrypt_opts, fmt/encrypt.h): their option ids and their
 * handler, 1 if id was one (call it first thing in on_option). A tool that reads encrypted
 * data sets fmt_decrypt_opts.ask to fmt_prompt_password (fmt/prompt.h). */
enum { FMT_OPT_PASSWORD_FILE = 0x10C0, FMT_OPT_PASSWORD_ENV, FMT_OPT_IDENTITY,
       FMT_OPT_PASSPHRASE_FILE, FMT_OPT_PASSPHRASE_ENV };
int fmt_cli_decrypt_option(int id, const char *arg, fmt_decrypt_opts *o);

/* Once the command line is read: the password prompt (fmt_prompt_password) and the identity's
 * passphrase options (o->passphrase.file / .env, which the tool's --passphrase-file and
 * --passphrase-env set) with the terminal prompt, as for every secret key (fmt_cli_pass_opts).
 * Every tool that takes --identity calls it. */
void fmt_cli_decrypt_prompts(fmt_decrypt_opts *o, const fmt_common_opts *common);

/* Their entries in a tool's option table (fmt/cli.h), the same words in every tool that reads
 * encrypted data:  { FMT_CLI_OPT("head", ...) }, FMT_CLI_DECRYPT_OPTIONS, { FMT_CLI_OPT(...) }, */
#define FMT_CLI_DECRYPT_OPTIONS                                                                          \
	{ FMT_CLI_OPT("password-file", FMT_OPT_PASSWORD_FILE, "FILE", "decrypt an encrypted .ald with the password in FILE\n" \
		      "(default: ask on the terminal)"), .complete = FMT_COMPLETE_FILE },                     \
	{ FMT_CLI_OPT("password-env", FMT_OPT_PASSWORD_ENV, "NAME", "the same with the password in variable NAME"),    \
	  .complete = FMT_COMPLETE_ENV },                                                                 \
	{ FMT_CLI_OPT("identity", FMT_OPT_IDENTITY, "SECKEY", "the same with the X25519 secret key SECKEY"),           \
	  .complete = FMT_COMPLETE_FILE, .words = "*.key" }

/* The identity's passphrase options, for a tool that has no other secret key to unlock (one that
 * has, fmt-convert's --sign-key, copies its own --passphrase-file/-env into
 * fmt_decrypt_opts.passphrase):  FMT_CLI_DECRYPT_OPTIONS, FMT_CLI_IDENTITY_PASS_OPTIONS, */
#define FMT_CLI_IDENTITY_PASS_OPTIONS                                                                    \
	{ FMT_CLI_OPT("passphrase-file", FMT_OPT_PASSPHRASE_FILE, "FILE",                                \
		      "--identity's passphrase from FILE when it is encrypted\n(default: ask on the terminal)"), \
	  .complete = FMT_COMPLETE_FILE },                                                              \
	{ FMT_CLI_OPT("passphrase-env", FMT_OPT_PASSPHRASE_ENV, "NAME",                                  \
		      "the same with the passphrase in variable NAME"), .complete = FMT_COMPLETE_ENV }

/* The passphrase options once the command line is read (every tool that takes them asks it):
 * NULL when sound, else the usage message. file, env: --passphrase-file and --passphrase-env
 * as given; keys: how many secret keys they unlock on this command line (--sign-key and
 * --identity: 2). Both options is refused (one of them would be ignored), and so is
 * --passphrase-file - for two keys: standard input can be read once. */
const char *fmt_cli_pass_check(const char *file, const char *env, int keys);

/* A secret key's passphrase options: from file or env, else the terminal prompt
 * (fmt_prompt_passphrase), with the notice "deriving the key from the passphrase…" on stderr
 * when the tool shows progress there (no --quiet, --json or --no-progress, stderr a terminal). */
fmt_pass_opts fmt_cli_pass_opts(const char *file, const char *env, const fmt_common_opts *common);

#endif
