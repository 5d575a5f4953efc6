/* The key options' handlers (fmt/cli_keys.h). */
#include <string.h>
#include "fmt/cli_keys.h"
#include "fmt/progress.h"
#include "fmt/prompt.h"

int fmt_cli_key_option(int c, const char *arg, fmt_key_opts *o)
{
	switch (c) {
	case FMT_OPT_HMAC_KEY: o->hmac_key = 1; return 1;
	case FMT_OPT_SECRET_FILE: o->secret_file = arg; return 1;
	case FMT_OPT_SECRET_ENV: o->secret_env = arg; return 1;
	case FMT_OPT_SECRET_PROMPT: o->secret_prompt = fmt_secret_from_prompt; return 1;
	default: return 0;
	}
}

int fmt_cli_trust_option(int id, const char *arg, fmt_trust_opts *o)
{
	switch (id) {
	case FMT_OPT_PUBKEY: o->pubkey = arg; return 1;
	case FMT_OPT_PUBKEY_BASE64: o->pubkey_b64 = arg; return 1;
	case FMT_OPT_TRUSTED_KEYS: o->trusted_dir = arg; return 1;
	default: return 0;
	}
}

int fmt_cli_decrypt_option(int id, const char *arg, fmt_decrypt_opts *o)
{
	switch (id) {
	case FMT_OPT_PASSWORD_FILE: o->password_file = arg; return 1;
	case FMT_OPT_PASSWORD_ENV: o->password_env = arg; return 1;
	case FMT_OPT_IDENTITY: o->identity = arg; return 1;
	case FMT_OPT_PASSPHRASE_FILE: o->passphrase.file = arg; return 1;
	case FMT_OPT_PASSPHRASE_ENV: o->passphrase.env = arg; return 1;
	default: return 0;
	}
}

const char *fmt_cli_pass_check(const char *file, const char *env, int keys)
{
	if (file && env)
		return "--passphrase-file and --passphrase-env: give one";
	if (file && strcmp(file, "-") == 0 && keys > 1)
		return "--passphrase-file - would unlock both --sign-key and --identity, but standard input "
		       "can be read only once: give the passphrase in a file or with --passphrase-env";
	return NULL;
}

fmt_pass_opts fmt_cli_pass_opts(const char *file, const char *env, const fmt_common_opts *common)
{
	int quiet = common->quiet || common->json;
	fmt_pass_opts po = { .file = file, .env = env, .ask = fmt_prompt_passphrase };
	if (fmt_progress_wanted(stderr, quiet, common->no_progress))
		po.notice = fmt_progress_notice;
	return po;
}

void fmt_cli_decrypt_prompts(fmt_decrypt_opts *o, const fmt_common_opts *common)
{
	o->ask = fmt_prompt_password;
	o->passphrase = fmt_cli_pass_opts(o->passphrase.file, o->passphrase.env, common);
}
