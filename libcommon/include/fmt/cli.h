/* What every tool's command line shares: the option-table runner, common options, sizes, the
 * version line. */
#ifndef FMT_CLI_H
#define FMT_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "fmt/err.h"

#include "fmt/version.h"

typedef struct fmt_common_opts {
	int json;
	int quiet;
	int verbose;
	int no_progress;
	int threads;   /* 0 = number of cores */
} fmt_common_opts;

/* Long-option ids for the options every tool has (use in a tool's own option table). */
enum {
	FMT_OPT_VERSION = 0x1000,
	FMT_OPT_NO_PROGRESS,
	FMT_OPT_HMAC_KEY,
	FMT_OPT_SECRET_FILE,
	FMT_OPT_SECRET_ENV,
	FMT_OPT_SECRET_PROMPT,
	FMT_OPT_DUMP_OPTIONS,
	FMT_OPT_FIRST_TOOL_OPTION = 0x1100
};

/* Sizes: "4GB" (decimal), "2GiB" (binary), "123" (bytes), also KB/MB/TB, KiB/MiB/TiB, "B". */
fmt_kind fmt_parse_size(const char *s, uint64_t *out, fmt_err *e);

/* A whole number 0..max. */
fmt_kind fmt_parse_u64(const char *s, uint64_t max, uint64_t *out, fmt_err *e);

int fmt_cpu_count(void);

/*
 * The option-table runner. A tool declares every option once, in a table; the runner builds
 * the getopt_long table from it, handles the common options, prints --help, --version and
 * usage errors, checks subcommands, and prints the table for the completion generator
 * (hidden --dump-options; scripts/gen-completions writes the bash and zsh completions from it
 * at build time). fmt_cli_finish flushes stdout and turns a failed write (full disk, closed
 * pipe) into exit 3.
 *
 * Example (a tool with one flag, one valued option and one file operand):
 *
 *	enum { OPT_FULL = FMT_OPT_FIRST_TOOL_OPTION };
 *	static const fmt_cli_option options[] = {
 *		{ FMT_CLI_OPT("json", 'j', NULL, "one JSON object per file") },
 *		{ FMT_CLI_OPT("tensor", 't', "NAME", "only this tensor"), .complete = FMT_COMPLETE_TENSOR },
 *		{ FMT_CLI_OPT("full", OPT_FULL, NULL, "do not abbreviate") },
 *		{ FMT_CLI_OPT("quiet", 'q', NULL, "print nothing on success") },
 *		{ FMT_CLI_OPT("verbose", 'v', NULL, "more detail") },
 *		{ .name = NULL }
 *	};
 *	static int on_option(void *ctx, int id, const char *arg, fmt_err *e)
 *	{
 *		my_opts *o = ctx;
 *		switch (id) {
 *		case 't': o->tensor = arg; return 0;
 *		case OPT_FULL: o->full = 1; return 0;
 *		}
 *		return fmt_fail(e, FMT_USAGE, "unhandled option"), -1;
 *	}
 *	static const fmt_cli_tool tool = {
 *		.name = "fmt-example", .synopsis = "[OPTIONS] FILE...",
 *		.about = "Show what FILE holds.", .options = options, .on_option = on_option,
 *		.footer = "Exit status: 0 ok, 2 usage, 3 I/O error.",
 *	};
 *	int main(int argc, char **argv)
 *	{
 *		my_opts o = { 0 };
 *		fmt_cli cli;
 *		if (!fmt_cli_parse(&tool, argc, argv, &o, &cli))
 *			return cli.exit_code;            // --help, --version or a usage error
 *		if (cli.n_operands < 1)
 *			return fmt_cli_usage_error(&tool, "no input file");
 *		int status = run(cli.operands, cli.n_operands, &o, &cli.common);
 *		return fmt_cli_finish(&tool, &cli, status);
 *	}
 *
 * The runner appends --no-progress, -h/--help and --version to every table; -j/--json,
 * -q/--quiet, -v/--verbose and -T/--threads are listed by the tool (in its own words) and
 * handled by the runner into fmt_cli.common; every other option goes to on_option.
 * Key options: list them with the ids FMT_OPT_HMAC_KEY, FMT_OPT_SECRET_FILE, ... and call
 * fmt_cli_key_option(id, arg, &keys) (fmt/cli_keys.h) first thing in on_option.
 * Subcommands: .commands = { { "split", "cut a model" }, ..., { NULL, NULL } }; the runner
 * takes the first operand as the subcommand (cli.command is its index, cli.operands follow
 * it) and refuses an option whose .commands mask (bit i = commands[i]) lacks it.
 *
 * A new tool on the runner gets, with no further edit: its completions (the GNUmakefile
 * generates them for every tools/NAME/main.c that calls fmt_cli_parse, and make install
 * installs them), and tests/cli/options.bats, which checks that --help, man/NAME.1's OPTIONS
 * tags and both completions name exactly the table's options, that each is accepted with
 * no operands (exit 2, not "unknown option") and that --help/--version on a full stdout exit 3.
 */

/* The four fields every table entry gives; others follow by name: { FMT_CLI_OPT(...), .complete = ... } */
#define FMT_CLI_OPT(long_name, id_, arg_, help_) .name = (long_name), .id = (id_), .arg = (arg_), .help = (help_)

/* What completes an option's value. */
typedef enum fmt_cli_complete {
	FMT_COMPLETE_NONE = 0, /* a free value (number, size, name): nothing to offer */
	FMT_COMPLETE_FILE,     /* a file; words may hold a glob ("*.json") */
	FMT_COMPLETE_DIR,      /* a directory */
	FMT_COMPLETE_ENV,      /* the name of an environment variable */
	FMT_COMPLETE_WORDS,    /* one of words ("f32 f16 bf16"), values or words_from() */
	FMT_COMPLETE_FORMAT,   /* a registered format (fmt_cli_tool.format_names); --help lists them */
	FMT_COMPLETE_TENSOR,   /* a tensor name of the model file on the line (fmt-inspect | jq) */
} fmt_cli_complete;

enum {
	/* The option may be given more than once (--include GLOB...). Without it, an option that
	 * takes a value is given at most once: the runner refuses a second one (exit 2, naming
	 * it) before any option acts, since keeping only the last (a second --encrypt-to, -o or
	 * key) would silently drop the first. A flag may always be repeated (-v -v). */
	FMT_CLI_REPEAT = 1,
	/* FMT_COMPLETE_FILE: a file read whole before anything is written, which the output may
	 * replace on purpose (--metadata-from OUT): fmt_cli_check_output passes it by. */
	FMT_CLI_OUTPUT_MAY_REPLACE = 2,
	/* FMT_COMPLETE_FILE: a file the command writes (-o FILE, --registry): recorded in
	 * fmt_cli.files as written, not among the files read; the tool checks it with
	 * fmt_cli_check_written when (and by the name) it writes it. */
	FMT_CLI_WRITTEN = 4,
};

/* A value of FMT_COMPLETE_WORDS with what it means (the zsh completion shows both). */
typedef struct fmt_cli_value {
	const char *word;      /* NULL ends the list */
	const char *help;
	/* the subcommands that take it (bit i = commands[i]), among the option's; 0: all of them.
	 * fmt_cli_parse refuses it in another, and the completions offer it only in these. */
	unsigned commands;
} fmt_cli_value;

typedef struct fmt_cli_option {
	const char *name;      /* long name without "--"; NULL ends the table */
	int id;                /* what on_option gets: the short letter (also the short option) or
				* an id >= FMT_OPT_FIRST_TOOL_OPTION for a long-only option */
	const char *arg;       /* value name in --help ("SIZE"); NULL for a flag */
	const char *help;      /* --help text; '\n' continues it on the next line */
	unsigned commands;     /* subcommands that take it: bit i = commands[i]; 0 = all of them */
	fmt_cli_complete complete;
	const char *words;     /* FMT_COMPLETE_WORDS: the values (or .values, .words_from below);
				* FMT_COMPLETE_FILE: a glob or NULL */
	unsigned flags;        /* FMT_CLI_REPEAT */
	/* FMT_COMPLETE_WORDS with a description of each value, instead of words. */
	const fmt_cli_value *values;
	/* FMT_COMPLETE_WORDS whose values the registry gives at run time ("a b c"), instead of words. */
	void (*words_from)(char *buf, size_t n);
	/* Text the registry gives at run time, printed after help (per-format defaults...). */
	void (*help_more)(char *buf, size_t n);
	/* Options with the same nonzero group exclude each other: the completions offer one of
	 * them (the tool or libcommon still refuses two, with its own message). */
	unsigned group;
	/* The heading --help lists it under ("Options for csv"), after the options without one;
	 * NULL: none (the tool's own options). */
	const char *section;
} fmt_cli_option;

typedef struct fmt_cli_command {
	const char *name;      /* NULL ends the list */
	const char *help;
} fmt_cli_command;

typedef struct fmt_cli_tool {
	const char *name;                 /* "fmt-shard" */
	const char *synopsis;             /* what follows "Usage: TOOL "; '\n' starts another form */
	const char *about;                /* the paragraph under the usage lines */
	const fmt_cli_command *commands;  /* subcommands (the first operand), or NULL */
	const fmt_cli_option *options;    /* at most 59, ended by { .name = NULL } */
	const char *footer;               /* after the options: notes, exit statuses */
	/* The registered format names, ", "-separated (fmt_driver_names), for FMT_COMPLETE_FORMAT. */
	void (*format_names)(char *buf, size_t n);
	/* A tool option: returns 0, or -1 with a usage message in e. */
	int (*on_option)(void *ctx, int id, const char *arg, fmt_err *e);
} fmt_cli_tool;

/* The files the options given name (FMT_COMPLETE_FILE but not FMT_CLI_OUTPUT_MAY_REPLACE), the
 * first FMT_CLI_MAX_FILES of them. */
#define FMT_CLI_MAX_FILES 32
typedef struct fmt_cli_file {
	const char *option;    /* its long name; in fmt_cli_check_written's also: how to name it */
	const char *path;
	int written;           /* FMT_CLI_WRITTEN: a file the command writes, not one it reads */
} fmt_cli_file;

typedef struct fmt_cli {
	fmt_common_opts common;
	int command;           /* index in tool->commands; -1 without subcommands */
	char **operands;       /* the words that are not options, after the subcommand */
	int n_operands;
	int exit_code;         /* when fmt_cli_parse returned 0 */
	fmt_cli_file files[FMT_CLI_MAX_FILES];
	size_t n_files;
} fmt_cli;

/* UsageError when output, which the command writes, is one of the files the options name that
 * it reads (device and inode: a hard link too), "WHAT names the same file as --sign-key
 * (k.ald)": -f or not, writing it would destroy what the command reads. */
fmt_kind fmt_cli_check_output(const fmt_cli *cli, const char *what, const char *output, fmt_err *e);
/* The same, checking first the n files of also (named by their .option as given: the operands
 * the command reads, "IN", and what it writes before output, "OUT"): "--registry names the same
 * file as OUT (x.csv)". */
fmt_kind fmt_cli_check_written(const fmt_cli *cli, const char *what, const char *output, const fmt_cli_file *also,
			       size_t n, fmt_err *e);

/* Parse argv (options anywhere, "--" ends them). Returns 1 when the tool should run; 0 when it
 * must exit now with cli->exit_code: after --help, --version, --dump-options (0, or 3 when
 * stdout failed) or a usage error (2, reported on stderr). */
int fmt_cli_parse(const fmt_cli_tool *t, int argc, char **argv, void *ctx, fmt_cli *cli);

/* Report a command-line mistake ("TOOL: error: MSG", "Try 'TOOL --help'."); returns 2. */
int fmt_cli_usage_error(const fmt_cli_tool *t, const char *msg);

/* The tool's last step: flush stdout; when that or an earlier write failed (full disk, closed
 * pipe), report it (as JSON too with --json) and return at least 3 (FMT_IO), else status. */
int fmt_cli_finish(const fmt_cli_tool *t, const fmt_cli *cli, int status);

/* Where a tool prints its records: stdout, or with --json and -q nowhere (fmtkit(7): "no record
 * goes to standard output ... with -q"); a stream that discards when /dev/null cannot be opened
 * is stdout. */
FILE *fmt_cli_records(const fmt_common_opts *common);

/* An input file that another process truncates while the tool reads it through a mapping
 * (fmt_source_view, fmt/io.h) raises SIGBUS: instead of dying of it (exit 135, no message,
 * temporary outputs left behind), the tool reports "TOOL: error: FILE: " FMT_MSG_SHRANK (as
 * JSON with json, and then the input's failure record first, as fmt_report_failed would: the
 * tool names its input with fmt_report_input, fmt/report.h), removes its temporary files
 * (fmt_tmp_remove_all, fmt_stagedir_remove_live) and exits 3: the inputs after it are not read.
 * fmt_cli_parse sets this up before the tool runs. */
void fmt_cli_catch_truncation(const char *tool, int json);

/* The tool's --help text on f. */
void fmt_cli_help(const fmt_cli_tool *t, FILE *f);

#endif
