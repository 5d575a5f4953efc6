/* fmt-sign: Ed25519 (minisign formats), X25519 and HMAC keys; detached .minisig signatures of
 * any file; HMAC signatures of Apsi checkpoints in place (specs/apsim.md §6). */
#include <stdio.h>
#include <string.h>
#include "fmt/cli_keys.h"
#include "fmt/dataset.h"
#include "fmt/out.h"
#include "sign.h"

enum {
	OPT_HMAC = FMT_OPT_FIRST_TOOL_OPTION, OPT_X25519, OPT_WATERMARK, OPT_TRUSTED_KEYS, OPT_PASS_FILE, OPT_PASS_ENV,
	OPT_EMBED, OPT_LICENSEE, OPT_EXPIRES, OPT_SEATS, OPT_TERMS, OPT_SIGN_KEY
};

/* Subcommands, in the order of their bits in fmt_cli_option.commands. */
enum { CMD_KEYGEN, CMD_SIGN, CMD_KEY_ID, CMD_VERIFY, CMD_LICENSE };
#define ONLY(cmd) (1u << (cmd))

static const fmt_cli_command commands[] = {
	{ "keygen", "create an Ed25519 key pair (minisign's formats), an X25519 pair or the HMAC key" },
	{ "sign", "with -s: write FILE.minisig for each FILE (--embed: sign .apsim/.ald FILEs in place); with an HMAC key: sign an .apsim FILE in place" },
	{ "key-id", "print the id of the key the options name" },
	{ "verify", "check FILE.minisig for each FILE and print its trusted comment (no FILE.minisig: its embedded signature)" },
	{ "license", "add a signed licence to each .ald FILE" },
	{ NULL, NULL }
};

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("hmac", OPT_HMAC, NULL, "keygen: make an HMAC-SHA256 key (32 random bytes)"),
	  .commands = ONLY(CMD_KEYGEN) },
	{ FMT_CLI_OPT("x25519", OPT_X25519, NULL, "keygen: make an X25519 key pair (dataset recipients)"),
	  .commands = ONLY(CMD_KEYGEN) },
	{ FMT_CLI_OPT("watermark", OPT_WATERMARK, NULL, "keygen: make a seller's watermark key (32 random bytes,\n"
		      "default $XDG_CONFIG_HOME/fmtkit/watermark.key, or -s FILE)"),
	  .commands = ONLY(CMD_KEYGEN) },
	{ FMT_CLI_OPT("force", 'f', NULL, "keygen: replace existing key files, keeping each as FILE.old"),
	  .commands = ONLY(CMD_KEYGEN) },
	{ FMT_CLI_OPT("pubkey", 'p', "FILE", "the public key file (default $XDG_CONFIG_HOME/fmtkit/ed25519.pub)"),
	  .commands = ONLY(CMD_KEYGEN) | ONLY(CMD_KEY_ID) | ONLY(CMD_VERIFY), .complete = FMT_COMPLETE_FILE,
	  .words = "*.pub" },
	{ FMT_CLI_OPT("pubkey-base64", 'P', "BASE64", "verify, key-id: the public key itself (its base64 line)"),
	  .commands = ONLY(CMD_KEY_ID) | ONLY(CMD_VERIFY) },
	{ FMT_CLI_OPT("seckey", 's', "FILE", "the secret key file (default $XDG_CONFIG_HOME/fmtkit/ed25519.key)"),
	  .commands = ONLY(CMD_KEYGEN) | ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID) | ONLY(CMD_LICENSE), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("sign-key", OPT_SIGN_KEY, "SECKEY", "license: seller key (as -s)"),
	  .commands = ONLY(CMD_LICENSE), .complete = FMT_COMPLETE_FILE, .words = "*.key" },
	{ FMT_CLI_OPT("licensee", OPT_LICENSEE, "ID", "license: licensee (stored hashed)"),
	  .commands = ONLY(CMD_LICENSE) },
	{ FMT_CLI_OPT("expires", OPT_EXPIRES, "DATE", "license: YYYY-MM-DD[THH:MM:SSZ] UTC"),
	  .commands = ONLY(CMD_LICENSE) },
	{ FMT_CLI_OPT("seats", OPT_SEATS, "N", "license: seat limit (1-65535)"),
	  .commands = ONLY(CMD_LICENSE) },
	{ FMT_CLI_OPT("terms", OPT_TERMS, "FILE", "license: terms (JSON object)"),
	  .commands = ONLY(CMD_LICENSE), .complete = FMT_COMPLETE_FILE, .words = "*.json" },
	{ FMT_CLI_OPT("no-passphrase", 'W', NULL, "keygen: leave the secret key unencrypted"),
	  .commands = ONLY(CMD_KEYGEN) },
	{ FMT_CLI_OPT("passphrase-file", OPT_PASS_FILE, "FILE", "the secret key's passphrase from FILE (one final newline removed)"),
	  .commands = ONLY(CMD_KEYGEN) | ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID) | ONLY(CMD_LICENSE), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("passphrase-env", OPT_PASS_ENV, "NAME", "the secret key's passphrase from the environment variable NAME"),
	  .commands = ONLY(CMD_KEYGEN) | ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID) | ONLY(CMD_LICENSE), .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("sigfile", 'x', "FILE", "sign, verify: the signature file (default FILE.minisig; one FILE only)"),
	  .commands = ONLY(CMD_SIGN) | ONLY(CMD_VERIFY), .complete = FMT_COMPLETE_FILE, .words = "*.minisig" },
	{ FMT_CLI_OPT("embed", OPT_EMBED, NULL, "sign: put the Ed25519 signature inside each FILE (.apsim, its index,\n"
		      ".ald), atomically in place, instead of writing FILE.minisig"),
	  .commands = ONLY(CMD_SIGN) },
	{ FMT_CLI_OPT("trusted-comment", 't', "TEXT", "sign: the trusted comment (default timestamp:T<tab>file:NAME<tab>hashed)"),
	  .commands = ONLY(CMD_SIGN) },
	{ FMT_CLI_OPT("trusted-keys", OPT_TRUSTED_KEYS, "DIR", "verify: trust every *.pub in DIR"),
	  .commands = ONLY(CMD_VERIFY), .complete = FMT_COMPLETE_DIR },
	{ FMT_CLI_OPT("hmac-key", FMT_OPT_HMAC_KEY, NULL, "the per-user key (the default when no key option is given)"),
	  .commands = ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID) },
	{ FMT_CLI_OPT("secret-file", FMT_OPT_SECRET_FILE, "FILE", "a team shared secret read from FILE (one final newline removed)"),
	  .commands = ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("key-secret-file", FMT_OPT_SECRET_FILE, "FILE", "the same as --secret-file"),
	  .commands = ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID), .complete = FMT_COMPLETE_FILE },
	{ FMT_CLI_OPT("secret-env", FMT_OPT_SECRET_ENV, "NAME", "a team shared secret from the environment variable NAME"),
	  .commands = ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID), .complete = FMT_COMPLETE_ENV },
	{ FMT_CLI_OPT("secret-prompt", FMT_OPT_SECRET_PROMPT, NULL, "a team shared secret typed at the terminal without echo"),
	  .commands = ONLY(CMD_SIGN) | ONLY(CMD_KEY_ID) },
	{ FMT_CLI_OPT("threads", 'T', "N", "sign: threads checking digests (default: all cores)"),
	  .commands = ONLY(CMD_SIGN) },
	{ FMT_CLI_OPT("json", 'j', NULL, "the result as one JSON object") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "print nothing on success") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "sign: also print the signature") },
	{ .name = NULL }
};

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	sign_opts *o = ctx;
	if (fmt_cli_key_option(id, arg, &o->key))
		return 0;
	switch (id) {
	case OPT_HMAC: o->hmac = 1; return 0;
	case 'f': o->force = 1; return 0;
	case OPT_X25519: o->x25519 = 1; return 0;
	case OPT_WATERMARK: o->watermark = 1; return 0;
	case 'W': o->no_passphrase = 1; return 0;
	case OPT_EMBED: o->embed = 1; return 0;
	case 'p': o->pubkey = arg; return 0;
	case 'P': o->pubkey_b64 = arg; return 0;
	case 's': o->seckey = arg; return 0;
	case 'x': o->sigfile = arg; return 0;
	case 't': o->trusted_comment = arg; return 0;
	case OPT_TRUSTED_KEYS: o->trusted_dir = arg; return 0;
	case OPT_PASS_FILE: o->passphrase_file = arg; return 0;
	case OPT_PASS_ENV: o->passphrase_env = arg; return 0;
	case OPT_SIGN_KEY: o->seckey = arg; return 0;
	case OPT_LICENSEE: o->licensee = arg; return 0;
	case OPT_TERMS: o->terms_file = arg; return 0;
	case OPT_EXPIRES:
		if (fmt_parse_utc_date(arg, &o->expires_at) != 0 || o->expires_at == 0)
			return fmt_fail(e, FMT_USAGE, "--expires takes a date, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC)"), -1;
		return 0;
	case OPT_SEATS: {
		uint64_t v;
		if (fmt_parse_u64(arg, 65535, &v, e) != FMT_OK || v == 0)
			return fmt_fail(e, FMT_USAGE, "--seats takes a seat count from 1 to 65535"), -1;
		o->seats = (uint16_t)v;
		return 0;
	}
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "keygen --hmac [--force] [OPTIONS]\n"
		    "keygen [-p PUBKEY] [-s SECKEY] [-W | --passphrase-file F | --passphrase-env NAME] [--force]\n"
		    "keygen --x25519 [-p PUBKEY] [-s SECKEY] [-W | --passphrase-file F | --passphrase-env NAME] [--force]\n"
		    "keygen --watermark [-s KEYFILE] [--force]\n"
		    "sign -s SECKEY [-x SIGFILE] [-t COMMENT] FILE...\n"
		    "sign --embed [-s SECKEY] FILE...\n"
		    "sign FILE [KEY OPTION] [-T N] [OPTIONS]\n"
		    "verify -p PUBKEY | -P BASE64 | --trusted-keys DIR [-x SIGFILE] [-q] FILE...\n"
		    "key-id [-p PUBKEY | -P BASE64 | -s SECKEY | KEY OPTION] [OPTIONS]\n"
		    "license --licensee ID [--expires D] [--seats N] [--terms F] -s K FILE...",
	.about = "Create Ed25519 key pairs in minisign's formats (minisign reads them and fmt-sign\n"
		 "reads minisign's), sign any file with a detached FILE.minisig and verify it;\n"
		 "create X25519 key pairs; create the per-user HMAC key and sign Apsi checkpoints\n"
		 "(.apsim files and NAME.apsim.index.json sets) in place with HMAC-SHA256.\n"
		 "sign with -s makes .minisig files; sign with no -s takes an HMAC key option.",
	.commands = commands,
	.options = options,
	.footer = "Secrets are never option values: there is no --secret VALUE.\n"
		  "Exit status: 0 ok, 2 usage (also a key file others can read, no key), 3 I/O error,\n"
		  "4 invalid format, 5 unsupported version, 6 checksum mismatch (a file changed before\n"
		  "--embed signs it), 7 signature missing or invalid (no signature, wrong key id, bad\n"
		  "signature, bad global signature, untrusted key), 8 wrong passphrase.",
	.on_option = on_option,
};

/* The combinations the option table cannot express; NULL when the command line is sound. */
static const char *check_usage(const sign_opts *o, const fmt_cli *cli)
{
	int hmac_key = fmt_key_opts_given(&o->key);
	int passphrase = o->passphrase_file || o->passphrase_env;
	const char *pass_bad = fmt_cli_pass_check(o->passphrase_file, o->passphrase_env, 1);
	if (pass_bad)
		return pass_bad;
	switch (cli->command) {
	case CMD_KEYGEN:
		if (cli->n_operands != 0)
			return "keygen takes no file";
		if (o->hmac + o->x25519 + o->watermark > 1)
			return "--hmac, --x25519 and --watermark are different kinds of key: give one";
		if (o->watermark && o->pubkey)
			return "a watermark key has no public half: -s names its file";
		if ((o->hmac || o->watermark) && (o->no_passphrase || passphrase))
			return "only Ed25519 and X25519 secret keys have a passphrase (-W, --passphrase-*)";
		if (o->hmac && (o->pubkey || o->seckey))
			return "the HMAC key has one place; -p and -s name key pair files";
		if (o->no_passphrase && passphrase)
			return "-W (no passphrase) and a --passphrase option contradict each other";
		break;
	case CMD_SIGN:
		if ((o->seckey || o->embed) && hmac_key)
			return "-s (Ed25519) and an HMAC key option are different signatures: give one";
		if (o->embed && (o->sigfile || o->trusted_comment))
			return "--embed signs inside the file: -x and -t belong to .minisig files";
		if (!o->seckey && !o->embed) {
			if (cli->n_operands != 1)
				return "sign with an HMAC key takes one FILE (an .apsim file or NAME.apsim.index.json); "
				       "-s SECKEY signs any files with .minisig";
			if (o->sigfile || o->trusted_comment || passphrase)
				return "-x, -t and --passphrase-* need -s SECKEY";
		}
		if (cli->n_operands < 1)
			return "sign needs at least one FILE";
		if (o->sigfile && cli->n_operands != 1)
			return "-x names the signature of one FILE";
		break;
	case CMD_LICENSE:
		if (cli->n_operands < 1)
			return "license needs at least one FILE.ald";
		if (!o->licensee || !*o->licensee)
			return "license needs --licensee ID";
		if (!o->seckey)
			return "license needs the seller's key: --sign-key SECKEY";
		if (hmac_key)
			return "a licence is signed with the seller's Ed25519 key, not an HMAC key";
		break;
	case CMD_VERIFY:
		if (cli->n_operands < 1)
			return "verify needs at least one FILE";
		if (o->pubkey && o->pubkey_b64)
			return "-p and -P both name the public key: give one";
		if (o->sigfile && cli->n_operands != 1)
			return "-x names the signature of one FILE";
		break;
	default:
		if (cli->n_operands != 0)
			return "key-id takes no file";
		if ((o->pubkey != NULL) + (o->pubkey_b64 != NULL) + (o->seckey != NULL) + hmac_key > 1)
			return "key-id shows one key: give one of -p, -P, -s or an HMAC key option";
	}
	return NULL;
}

int main(int argc, char **argv)
{
	sign_opts o;
	fmt_cli cli;
	memset(&o, 0, sizeof o);
	if (!fmt_cli_parse(&tool, argc, argv, &o, &cli))
		return cli.exit_code;
	o.common = cli.common;
	o.files = cli.operands;
	o.n_files = cli.n_operands;
	const char *bad = check_usage(&o, &cli);
	if (bad)
		return fmt_cli_usage_error(&tool, bad);
	int ed = o.seckey || o.pubkey || o.pubkey_b64;
	o.sig_on_stdout = cli.command == CMD_SIGN && o.sigfile && strcmp(o.sigfile, "-") == 0;
	int status;
	switch (cli.command) {
	case CMD_KEYGEN:
		status = o.hmac ? sign_cmd_keygen(&o) : o.watermark ? sign_cmd_keygen_watermark(&o)
								    : sign_cmd_keygen_keypair(&o);
		break;
	case CMD_SIGN:
		status = o.embed ? sign_cmd_sign_embed(cli.operands, cli.n_operands, &o)
			 : o.seckey ? sign_cmd_sign_minisig(cli.operands, cli.n_operands, &o)
				    : sign_cmd_sign(cli.operands[0], &o);
		break;
	case CMD_VERIFY:
		status = sign_cmd_verify(cli.operands, cli.n_operands, &o);
		break;
	case CMD_LICENSE:
		status = sign_cmd_license(cli.operands, cli.n_operands, &o);
		break;
	default:
		status = ed ? sign_cmd_key_id_ed25519(&o) : sign_cmd_key_id(&o);
	}
	return fmt_cli_finish(&tool, &cli, status);
}
