/* The option-table runner (fmt/cli.h): parsing, usage errors, subcommands, --help layout. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "fmt/cli.h"
#include "unit.h"

enum { OPT_FULL = FMT_OPT_FIRST_TOOL_OPTION, OPT_FORMAT, OPT_SET };
enum { CMD_SPLIT, CMD_MERGE };

typedef struct seen {
	int full, tensor_count, sets;
	const char *tensor, *format, *last_set;
} seen;

static void two_names(char *buf, size_t n)
{
	snprintf(buf, n, "alpha, beta or gamma");
}

static const fmt_cli_option options[] = {
	{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object") },
	{ FMT_CLI_OPT("tensor", 't', "NAME", "only this tensor"), .complete = FMT_COMPLETE_TENSOR },
	{ FMT_CLI_OPT("full", OPT_FULL, NULL, "do not abbreviate\nlong arrays") },
	{ FMT_CLI_OPT("format", OPT_FORMAT, "NAME", "skip detection:"), .complete = FMT_COMPLETE_FORMAT },
	{ FMT_CLI_OPT("set", OPT_SET, "KEY[:TYPE]=VALUE", "add a key"), .flags = FMT_CLI_REPEAT },
	{ FMT_CLI_OPT("threads", 'T', "N", "threads") },
	{ FMT_CLI_OPT("quiet", 'q', NULL, "quiet") },
	{ FMT_CLI_OPT("verbose", 'v', NULL, "more") },
	{ .name = NULL }
};

static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
{
	seen *s = ctx;
	switch (id) {
	case 't': s->tensor = arg; s->tensor_count++; return 0;
	case OPT_FULL: s->full = 1; return 0;
	case OPT_FORMAT:
		if (strcmp(arg, "bad") == 0)
			return fmt_fail(e, FMT_USAGE, "unknown --format"), -1;
		s->format = arg;
		return 0;
	case OPT_SET: s->sets++; s->last_set = arg; return 0;
	}
	return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
}

static const fmt_cli_tool plain = {
	.name = "fmt-test", .synopsis = "[OPTIONS] FILE...", .about = "Test the runner.",
	.options = options, .footer = "Exit status: 0 ok.", .format_names = two_names, .on_option = on_option,
};

static const fmt_cli_command commands[] = {
	{ "split", "cut" }, { "merge", "join" }, { NULL, NULL }
};

static const fmt_cli_option sub_options[] = {
	{ FMT_CLI_OPT("max-size", OPT_FULL, "SIZE", "split: at most SIZE"), .commands = 1u << CMD_SPLIT },
	{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object") },
	{ .name = NULL }
};

static const fmt_cli_tool with_commands = {
	.name = "fmt-test", .synopsis = "split FILE\nmerge FILE", .about = "Subcommands.",
	.commands = commands, .options = sub_options, .on_option = on_option,
};

/* fmt_cli_parse over a NULL-terminated word list, with stderr (usage errors) silenced. */
static int parse(const fmt_cli_tool *t, const char **words, seen *s, fmt_cli *cli)
{
	static char *argv[32]; /* cli->operands point into it */
	int argc = 0;
	for (; words[argc] && argc < 31; argc++)
		argv[argc] = (char *)words[argc];
	argv[argc] = NULL;
	fflush(stderr);
	int saved = dup(2), null = open("/dev/null", O_WRONLY);
	dup2(null, 2);
	int r = fmt_cli_parse(t, argc, argv, s, cli);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(null);
	return r;
}

TEST(cli_options_anywhere_common_and_own)
{
	seen s = { 0 };
	fmt_cli cli;
	const char *w[] = { "fmt-test", "a", "-jq", "--tensor=w", "b", "-T", "3", "--full", "--set", "x=1",
			    "--set=y:u8=2", "-vv", "--", "--json", NULL };
	CHECK(parse(&plain, w, &s, &cli) == 1);
	CHECK(cli.common.json && cli.common.quiet);
	CHECK_EQ_U64(cli.common.verbose, 2);
	CHECK_EQ_U64(cli.common.threads, 3);
	CHECK_STR(s.tensor, "w");
	CHECK(s.full);
	CHECK_EQ_U64(s.sets, 2);
	CHECK_STR(s.last_set, "y:u8=2");
	CHECK_EQ_U64(cli.command, (unsigned long long)-1);
	CHECK_EQ_U64(cli.n_operands, 3);
	CHECK_STR(cli.operands[0], "a");
	CHECK_STR(cli.operands[1], "b");
	CHECK_STR(cli.operands[2], "--json"); /* after "--": an operand */
}

TEST(cli_usage_errors_exit_2)
{
	const char *unknown[] = { "fmt-test", "--bogus", "f", NULL };
	const char *no_value[] = { "fmt-test", "f", "--tensor", NULL };
	const char *short_no_value[] = { "fmt-test", "f", "-t", NULL };
	const char *value_given[] = { "fmt-test", "--json=1", "f", NULL };
	const char *bad_threads[] = { "fmt-test", "-T", "x", "f", NULL };
	const char *tool_refuses[] = { "fmt-test", "--format", "bad", "f", NULL };
	const char *ambiguous[] = { "fmt-test", "--f", "f", NULL };
	const char **cases[] = { unknown, no_value, short_no_value, value_given, bad_threads, tool_refuses, ambiguous };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		seen s = { 0 };
		fmt_cli cli;
		CHECK(parse(&plain, cases[i], &s, &cli) == 0);
		CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
	}
	/* an unambiguous abbreviation is the option */
	seen s = { 0 };
	fmt_cli cli;
	const char *abbrev[] = { "fmt-test", "--fu", "--form=alpha", "f", NULL };
	CHECK(parse(&plain, abbrev, &s, &cli) == 1);
	CHECK(s.full);
	CHECK_STR(s.format, "alpha");
}

/* An option that takes a value is given once (unless repeatable), checked before any option
 * acts; the check leaves the words in their order ("f --tensor" still lacks a value). */
TEST(cli_one_value_options_given_once)
{
	const char *twice[] = { "fmt-test", "-t", "a", "f", "--tensor=b", NULL };
	const char *twice_bad_value[] = { "fmt-test", "--format", "bad", "--format", "bad", "f", NULL };
	const char *set_twice[] = { "fmt-test", "--set", "x=1", "f", "--set", "y=2", "-v", "-v", "-j", "-j", NULL };
	const char *missing_last[] = { "fmt-test", "f", "--tensor", NULL };
	seen s = { 0 };
	fmt_cli cli;
	CHECK(parse(&plain, twice, &s, &cli) == 0);
	CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
	CHECK(s.tensor == NULL); /* refused before any option acted */
	memset(&s, 0, sizeof s);
	CHECK(parse(&plain, twice_bad_value, &s, &cli) == 0);
	CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
	memset(&s, 0, sizeof s);
	CHECK(parse(&plain, set_twice, &s, &cli) == 1);
	CHECK_EQ_U64(s.sets, 2);
	CHECK_EQ_U64(cli.common.verbose, 2);
	CHECK_EQ_U64(cli.n_operands, 1);
	memset(&s, 0, sizeof s);
	CHECK(parse(&plain, missing_last, &s, &cli) == 0);
	CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
	CHECK(s.tensor == NULL);
}

TEST(cli_subcommands_and_their_options)
{
	seen s = { 0 };
	fmt_cli cli;
	const char *split[] = { "fmt-test", "--max-size", "1", "split", "-j", "in", NULL };
	CHECK(parse(&with_commands, split, &s, &cli) == 1);
	CHECK_EQ_U64(cli.command, CMD_SPLIT);
	CHECK_EQ_U64(cli.n_operands, 1);
	CHECK_STR(cli.operands[0], "in");
	const char *misplaced[] = { "fmt-test", "merge", "--max-size", "1", "in", NULL };
	CHECK(parse(&with_commands, misplaced, &s, &cli) == 0);
	CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
	const char *none[] = { "fmt-test", "-j", NULL };
	CHECK(parse(&with_commands, none, &s, &cli) == 0);
	CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
	const char *unknown[] = { "fmt-test", "frob", "in", NULL };
	CHECK(parse(&with_commands, unknown, &s, &cli) == 0);
	CHECK_EQ_U64(cli.exit_code, FMT_USAGE);
}

static char *help_of(const fmt_cli_tool *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fmt_cli_help(t, f);
	fclose(f);
	return text;
}

TEST(cli_help_from_the_table)
{
	char *text = help_of(&plain);
	const char *want_plain =
		  "Usage: fmt-test [OPTIONS] FILE...\n"
		  "Test the runner.\n"
		  "\n"
		  "  -j, --json         one JSON object\n"
		  "  -t, --tensor NAME  only this tensor\n"
		  "      --full         do not abbreviate\n"
		  "                     long arrays\n"
		  "      --format NAME  skip detection: alpha, beta or gamma\n"
		  "      --set KEY[:TYPE]=VALUE  add a key\n"
		  "  -T, --threads N    threads\n"
		  "  -q, --quiet        quiet\n"
		  "  -v, --verbose      more\n"
		  "      --no-progress  no progress bar\n"
		  "  -h, --help         this help\n"
		  "      --version      print the version\n"
		  "\n"
		  "Exit status: 0 ok.\n";
	CHECK_STR(text, want_plain);
	free(text);
	text = help_of(&with_commands);
	const char *want_commands =
		  "Usage: fmt-test split FILE\n"
		  "       fmt-test merge FILE\n"
		  "Subcommands.\n"
		  "\n"
		  "Subcommands:\n"
		  "  split  cut\n"
		  "  merge  join\n"
		  "\n"
		  "Options:\n"
		  "      --max-size SIZE  split: at most SIZE\n"
		  "  -j, --json           one JSON object\n"
		  "      --no-progress    no progress bar\n"
		  "  -h, --help           this help\n"
		  "      --version        print the version\n";
	CHECK_STR(text, want_commands);
	free(text);
}
