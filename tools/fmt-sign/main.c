/* fmt-sign: HMAC keys and signatures of Apsi checkpoints (specs/apsim.md §6). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "fmt/out.h"
#include "sign.h"

enum { OPT_HMAC = FMT_OPT_FIRST_TOOL_OPTION, OPT_HMAC_KEY, OPT_SECRET_FILE, OPT_SECRET_ENV,
       OPT_SECRET_PROMPT };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " TOOL " keygen --hmac [--force] [OPTIONS]\n"
		"       " TOOL " sign FILE [KEY OPTION] [-T N] [OPTIONS]\n"
		"       " TOOL " key-id [KEY OPTION] [OPTIONS]\n"
		"Create the per-user HMAC key, sign Apsi checkpoints (.apsim files and\n"
		"NAME.apsim.index.json sets) in place with HMAC-SHA256, show key ids.\n"
		"\n"
		"Subcommands:\n"
		"  keygen   create $XDG_CONFIG_HOME/fmtkit/hmac.key (mode 0600)\n"
		"  sign     sign FILE in place, atomically, after checking its digests\n"
		"  key-id   print the id of the key the options name\n"
		"\n"
		"Options:\n"
		"      --hmac             keygen: make an HMAC-SHA256 key (32 random bytes)\n"
		"  -f, --force            keygen: replace an existing key, keeping it as hmac.key.old\n"
		"      --hmac-key         the per-user key (the default when no key option is given)\n"
		"      --secret-file FILE a team shared secret read from FILE (one final newline removed)\n"
		"      --key-secret-file FILE  the same as --secret-file\n"
		"      --secret-env NAME  a team shared secret from the environment variable NAME\n"
		"      --secret-prompt    a team shared secret typed at the terminal without echo\n"
		"  -T, --threads N        sign: threads checking digests (default: all cores)\n"
		"  -j, --json             the result as one JSON object\n"
		"  -q, --quiet            print nothing on success\n"
		"  -v, --verbose          sign: also print the signature\n"
		"      --no-progress      no progress bar\n"
		"  -h, --help             this help\n"
		"      --version          print the version\n"
		"\n"
		"Secrets are never option values: there is no --secret VALUE.\n"
		"Exit status: 0 ok, 2 usage (also a key file others can read, no key), 3 I/O error,\n"
		"4 invalid format, 5 unsupported version, 6 checksum mismatch (file not signed).\n");
}

static const struct option long_opts[] = {
	FMT_COMMON_LONG_OPTIONS,
	{ "threads", required_argument, NULL, 'T' },
	{ "hmac", no_argument, NULL, OPT_HMAC },
	{ "force", no_argument, NULL, 'f' },
	{ "hmac-key", no_argument, NULL, OPT_HMAC_KEY },
	{ "secret-file", required_argument, NULL, OPT_SECRET_FILE },
	{ "key-secret-file", required_argument, NULL, OPT_SECRET_FILE },
	{ "secret-env", required_argument, NULL, OPT_SECRET_ENV },
	{ "secret-prompt", no_argument, NULL, OPT_SECRET_PROMPT },
	{ NULL, 0, NULL, 0 }
};

static int usage_error(const char *msg)
{
	return fmt_report_usage(stderr, TOOL, msg);
}

/* Parse every option wherever it stands; the positional words are left in argv[optind..]. */
static int parse_options(int argc, char **argv, sign_opts *o)
{
	fmt_err e;
	int c;
	fmt_err_clear(&e);
	while ((c = getopt_long(argc, argv, "jqvhfT:", long_opts, NULL)) != -1) {
		int r = fmt_cli_common(c, optarg, &o->common, &e);
		if (r < 0)
			return usage_error(e.msg);
		if (r > 0)
			continue;
		switch (c) {
		case 'h': usage(stdout); return -1;
		case FMT_OPT_VERSION: fmt_cli_version(stdout, TOOL); return -1;
		case OPT_HMAC: o->hmac = 1; break;
		case 'f': o->force = 1; break;
		case OPT_HMAC_KEY: o->key.hmac_key = 1; break;
		case OPT_SECRET_FILE: o->key.secret_file = optarg; break;
		case OPT_SECRET_ENV: o->key.secret_env = optarg; break;
		case OPT_SECRET_PROMPT: o->key.secret_prompt = 1; break;
		default: return usage_error("unknown option");
		}
	}
	return 0;
}

/* Options that belong to another subcommand are refused rather than silently ignored. */
static int check_fit(const char *cmd, int n_args, int want_args, const sign_opts *o)
{
	int is_keygen = strcmp(cmd, "keygen") == 0;
	char msg[160];
	if (n_args != want_args) {
		snprintf(msg, sizeof msg, "%s %s", cmd,
			 want_args ? "takes one FILE (an .apsim file or NAME.apsim.index.json)"
				   : "takes no file");
		return usage_error(msg);
	}
	if (is_keygen && fmt_key_opts_given(&o->key))
		return usage_error("keygen takes no key option; it creates the per-user key");
	if (is_keygen && !o->hmac)
		return usage_error("keygen needs --hmac (the kind of key to create)");
	if (!is_keygen && (o->hmac || o->force)) {
		snprintf(msg, sizeof msg, "--hmac and --force belong to keygen, not %s", cmd);
		return usage_error(msg);
	}
	return 0;
}

int main(int argc, char **argv)
{
	sign_opts o;
	memset(&o, 0, sizeof o);
	int r = parse_options(argc, argv, &o);
	if (r != 0)
		return r < 0 ? 0 : r;
	if (optind >= argc)
		return usage_error("no subcommand (keygen, sign or key-id)");
	const char *cmd = argv[optind];
	int n_args = argc - optind - 1, status;
	if (strcmp(cmd, "keygen") == 0)
		status = check_fit(cmd, n_args, 0, &o) ? FMT_USAGE : sign_cmd_keygen(&o);
	else if (strcmp(cmd, "sign") == 0)
		status = check_fit(cmd, n_args, 1, &o) ? FMT_USAGE : sign_cmd_sign(argv[optind + 1], &o);
	else if (strcmp(cmd, "key-id") == 0)
		status = check_fit(cmd, n_args, 0, &o) ? FMT_USAGE : sign_cmd_key_id(&o);
	else
		return usage_error("unknown subcommand (use keygen, sign or key-id)");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, TOOL ": error: cannot write to standard output\n");
		return FMT_IO;
	}
	return status;
}
