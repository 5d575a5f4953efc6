/* fmt-sign: HMAC keys and signatures of Apsi checkpoints (specs/apsim.md §6). */
#include <stdio.h>
#include <string.h>
#include "fmt/out.h"
#include "sign.h"

enum { OPT_HMAC = FMT_OPT_FIRST_TOOL_OPTION };

/* Subcommands, in the order of their bits in fmt_cli_option.commands. */
enum { CMD_KEYGEN, CMD_SIGN, CMD_KEY_ID };
#define ONLY(cmd) (1u << (cmd))

static const fmt_cli_command commands[] = {
	{ "keygen", "create $XDG_CONFIG_HOME/fmtkit/hmac.key (mode 0600)" },
	{ "sign", "sign FILE in place, atomically, after checking its digests" },
	{ "key-id", "print the id of the key the options name" },
	{ NULL, NULL }
};

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("hmac", OPT_HMAC, NULL, "keygen: make an HMAC-SHA256 key (32 random bytes)"),
	  .commands = ONLY(CMD_KEYGEN) },
	{ FMT_CLI_OPT("force", 'f', NULL, "keygen: replace an existing key, keeping it as hmac.key.old"),
	  .commands = ONLY(CMD_KEYGEN) },
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
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool tool = {
	.name = TOOL,
	.synopsis = "keygen --hmac [--force] [OPTIONS]\n"
		    "sign FILE [KEY OPTION] [-T N] [OPTIONS]\n"
		    "key-id [KEY OPTION] [OPTIONS]",
	.about = "Create the per-user HMAC key, sign Apsi checkpoints (.apsim files and\n"
		 "NAME.apsim.index.json sets) in place with HMAC-SHA256, show key ids.",
	.commands = commands,
	.options = options,
	.footer = "Secrets are never option values: there is no --secret VALUE.\n"
		  "Exit status: 0 ok, 2 usage (also a key file others can read, no key), 3 I/O error,\n"
		  "4 invalid format, 5 unsupported version, 6 checksum mismatch (file not signed).",
	.on_option = on_option,
};

int main(int argc, char **argv)
{
	sign_opts o;
	fmt_cli cli;
	memset(&o, 0, sizeof o);
	if (!fmt_cli_parse(&tool, argc, argv, &o, &cli))
		return cli.exit_code;
	o.common = cli.common;
	int want = cli.command == CMD_SIGN;
	if (cli.n_operands != want)
		return fmt_cli_usage_error(&tool, cli.command == CMD_SIGN
			? "sign takes one FILE (an .apsim file or NAME.apsim.index.json)"
			: cli.command == CMD_KEYGEN ? "keygen takes no file" : "key-id takes no file");
	if (cli.command == CMD_KEYGEN && !o.hmac)
		return fmt_cli_usage_error(&tool, "keygen needs --hmac (the kind of key to create)");
	int status = cli.command == CMD_KEYGEN ? sign_cmd_keygen(&o)
		   : cli.command == CMD_SIGN   ? sign_cmd_sign(cli.operands[0], &o)
					       : sign_cmd_key_id(&o);
	return fmt_cli_finish(&tool, &cli, status);
}
