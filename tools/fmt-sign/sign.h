/* fmt-sign's subcommands: each loads what it needs, does the work and prints the result. */
#ifndef FMT_SIGN_H
#define FMT_SIGN_H

#include "fmt/cli.h"
#include "fmt/crypto.h"
#include "fmt/minisign.h"
#include "fmt/out.h"

#define TOOL "fmt-sign"

typedef struct sign_opts {
	fmt_common_opts common;
	fmt_key_opts key;   /* sign, key-id: which key (none given: the per-user key) */
	int hmac;           /* keygen --hmac */
	int force;          /* keygen --force: rotate an existing key */
	int x25519;         /* keygen --x25519 */
	int watermark;      /* keygen --watermark */
	int no_passphrase;  /* keygen -W */
	int embed;          /* sign --embed */
	const char *pubkey;          /* -p FILE */
	const char *pubkey_b64;      /* -P BASE64 */
	const char *seckey;          /* -s FILE */
	const char *sigfile;         /* -x FILE */
	int sig_on_stdout;           /* sign -x -: standard output carries the signature, so no
				      * report goes there (no record, no "signed" line) */
	const char *trusted_comment; /* -t TEXT */
	const char *trusted_dir;     /* --trusted-keys DIR */
	const char *passphrase_file;
	const char *passphrase_env;
	/* license */
	const char *licensee;        /* --licensee ID */
	uint64_t expires_at;         /* --expires DATE; 0 = never */
	uint16_t seats;              /* --seats N */
	const char *terms_file;      /* --terms FILE.json */
	char **files;                /* the subcommand's FILE operands */
	int n_files;
} sign_opts;

/* An error: on stderr, and with --json the failure record on stdout (not with -q): of file, or
 * when file is NULL (before any file was opened) of each FILE operand, or of the operation
 * (file null) when there are none. Returns the exit status. */
int sign_fail(const sign_opts *o, const char *file, const fmt_err *e);
/* A keygen that failed on the key file path: the error names it, the record is the operation's
 * ("file":null, as fmt-sign(1) has it for keygen and key-id). */
int sign_keygen_fail(const sign_opts *o, const char *path, fmt_err *e);
/* obj (its reference taken) as one JSON line on stdout: 0, or, when it could not be made or
 * written (out of memory, a write error), that error reported as sign_fail does (of file). */
int sign_print_json(const sign_opts *o, const char *file, json_t *obj);
/* Whether the command's result is a JSON record on stdout (--json, not -q, not -x -). */
int sign_json_record(const sign_opts *o);
/* The record of a command that writes a file, made (fmt_json_rec_make) before the file is in
 * place, written once it is: 0, or a failed write reported as sign_fail does (of file). */
int sign_put_record(const sign_opts *o, const char *file, fmt_json_rec *rec);
/* file is the input read now: its record if a signal ends the process (fmt_report_input). */
void sign_input(const sign_opts *o, const char *file);
/* Refuse (UsageError, before anything is written) an output that is the same file (device and
 * inode) as one of the n files the command reads; NULL entries are skipped. */
fmt_kind sign_check_output(const char *output, const char *const *inputs, size_t n, fmt_err *e);
/* The passphrase options, with the terminal to say "deriving the key..." on (progress rules). */
fmt_pass_opts sign_pass_opts(const sign_opts *o);

/* Each returns the exit status after reporting any error on stderr. */
int sign_cmd_keygen(const sign_opts *o);
/* watermark.c: the seller's watermark key (specs/watermark.md §1). */
int sign_cmd_keygen_watermark(const sign_opts *o);
int sign_cmd_sign(const char *path, const sign_opts *o);
int sign_cmd_key_id(const sign_opts *o);

/* minisign.c's side: Ed25519 (minisign formats) and X25519 keys, detached signatures. */
int sign_cmd_keygen_keypair(const sign_opts *o);
int sign_cmd_key_id_ed25519(const sign_opts *o);
int sign_cmd_sign_minisig(char **files, int n, const sign_opts *o);
int sign_cmd_verify(char **files, int n, const sign_opts *o);
int sign_cmd_sign_embed(char **files, int n, const sign_opts *o);
/* licence.c: fmt-sign license FILE... */
int sign_cmd_license(char **files, int n, const sign_opts *o);

#endif
