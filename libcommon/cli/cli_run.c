/* The option-table runner (fmt/cli.h): getopt_long from a tool's table, common options,
 * --help, --version, usage errors, subcommands, --dump-options, the stdout flush check. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/bundle.h"
#include "fmt/cli.h"
#include "fmt/env.h"
#include "fmt/io.h"
#include "fmt/out.h"
#include "fmt/registry.h"
#include "fmt/report.h"
#include "fmt/strbuf.h"

#define MAX_OPTIONS 128  /* fmt-convert: its own, and every driver's options */
#define HELP_LEFT_MAX 26 /* wider option columns put their text after two spaces */
#define NAMES_MAX 512

/* Every tool has these, after its own options, in this order. */
static const fmt_cli_option appended[] = {
	{ FMT_CLI_OPT("no-progress", FMT_OPT_NO_PROGRESS, NULL, "no progress bar") },
	{ FMT_CLI_OPT("help", 'h', NULL, "this help") },
	{ FMT_CLI_OPT("version", FMT_OPT_VERSION, NULL, "print the version") },
};
#define N_APPENDED (sizeof appended / sizeof appended[0])

static size_t own_count(const fmt_cli_tool *t)
{
	size_t n = 0;
	while (t->options && t->options[n].name)
		n++;
	return n;
}

static size_t option_count(const fmt_cli_tool *t)
{
	return own_count(t) + N_APPENDED;
}

/* The i-th option: the tool's own, then the appended ones. */
static const fmt_cli_option *option_at(const fmt_cli_tool *t, size_t i)
{
	size_t own = own_count(t);
	return i < own ? &t->options[i] : &appended[i - own];
}

static int short_of(const fmt_cli_option *o)
{
	return o->id > 0 && o->id < 128 && isalnum(o->id) ? o->id : 0;
}

static size_t command_count(const fmt_cli_tool *t)
{
	size_t n = 0;
	while (t->commands && t->commands[n].name)
		n++;
	return n;
}

/* "a, b or c" from the names of the commands in mask (all when mask is 0). */
static void command_list(const fmt_cli_tool *t, unsigned mask, const char *sep, const char *last, char *buf,
			 size_t n)
{
	const char *names[sizeof mask * 8];
	size_t listed = 0;
	for (size_t i = 0; i < command_count(t) && i < sizeof names / sizeof *names; i++)
		if (!mask || (mask >> i & 1))
			names[listed++] = t->commands[i].name;
	fmt_join_sep(names, listed, sep, last, buf, n);
}

static void format_names(const fmt_cli_tool *t, char *buf, size_t n)
{
	buf[0] = '\0';
	if (t->format_names)
		t->format_names(buf, n);
}

int fmt_cli_usage_error(const fmt_cli_tool *t, const char *msg)
{
	return fmt_report_usage(stderr, t->name, msg);
}

/* "  -j, --json" or "      --tree", with " ARG" when the option takes a value. */
static int help_left(const fmt_cli_option *o, char *buf, size_t n)
{
	char shortname[8] = "    ";
	if (short_of(o))
		snprintf(shortname, sizeof shortname, "-%c, ", short_of(o));
	return snprintf(buf, n, "  %s--%s%s%s", shortname, o->name, o->arg ? " " : "",
			o->arg ? o->arg : "");
}

static void help_option(const fmt_cli_tool *t, const fmt_cli_option *o, int column, FILE *f)
{
	char left[128];
	int width = help_left(o, left, sizeof left);
	fputs(left, f);
	fprintf(f, "%*s", width < column ? column - width : 2, "");
	for (const char *p = o->help; *p; p++) {
		fputc(*p, f);
		if (*p == '\n')
			fprintf(f, "%*s", column, "");
	}
	if (o->help_more) {
		char more[NAMES_MAX];
		o->help_more(more, sizeof more);
		fputs(more, f);
	}
	if (o->complete == FMT_COMPLETE_FORMAT) {
		char names[NAMES_MAX];
		format_names(t, names, sizeof names);
		fprintf(f, " %s", names);
	}
	fputc('\n', f);
}

/* An option before option i is in option i's section. */
static int section_seen(const fmt_cli_tool *t, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (option_at(t, j)->section && strcmp(option_at(t, j)->section, option_at(t, i)->section) == 0)
			return 1;
	return 0;
}

/* The options without a section, then each section under its heading (in the order of their
 * first option). */
static void help_options(const fmt_cli_tool *t, int column, FILE *f)
{
	size_t n_opts = option_count(t);
	for (size_t i = 0; i < n_opts; i++)
		if (!option_at(t, i)->section)
			help_option(t, option_at(t, i), column, f);
	for (size_t i = 0; i < n_opts; i++) {
		const char *section = option_at(t, i)->section;
		if (!section || section_seen(t, i))
			continue;
		fprintf(f, "\n%s:\n", section);
		for (size_t j = i; j < n_opts; j++)
			if (option_at(t, j)->section && strcmp(option_at(t, j)->section, section) == 0)
				help_option(t, option_at(t, j), column, f);
	}
}

void fmt_cli_help(const fmt_cli_tool *t, FILE *f)
{
	const char *form = t->synopsis;
	fprintf(f, "Usage: ");
	for (int first = 1; form; first = 0) {
		const char *end = strchr(form, '\n');
		int len = end ? (int)(end - form) : (int)strlen(form);
		fprintf(f, "%s%s %.*s\n", first ? "" : "       ", t->name, len, form);
		form = end ? end + 1 : NULL;
	}
	fprintf(f, "%s\n\n", t->about);
	size_t n_cmds = command_count(t), n_opts = option_count(t);
	if (n_cmds) {
		int name_width = 0;
		for (size_t i = 0; i < n_cmds; i++)
			if ((int)strlen(t->commands[i].name) > name_width)
				name_width = (int)strlen(t->commands[i].name);
		fputs("Subcommands:\n", f);
		for (size_t i = 0; i < n_cmds; i++)
			fprintf(f, "  %-*s  %s\n", name_width, t->commands[i].name, t->commands[i].help);
		fputs("\nOptions:\n", f);
	}
	int column = 0;
	for (size_t i = 0; i < n_opts; i++) {
		char left[128];
		int width = help_left(option_at(t, i), left, sizeof left);
		if (width <= HELP_LEFT_MAX && width + 2 > column)
			column = width + 2;
	}
	help_options(t, column, f);
	if (t->footer)
		fprintf(f, "\n%s\n", t->footer);
}

/* A bad value's message led by the option as it was given (-T, --threads), unless it names an
 * option itself: "'abc' is not a whole number" did not say of which. */
static const char *named_option_msg(int long_index, const struct option *longs, int c, const char *msg)
{
	static char named[sizeof ((fmt_err *)0)->msg + 64];
	if (msg[0] == '-')
		return msg;
	if (long_index >= 0)
		snprintf(named, sizeof named, "--%s: %s", longs[long_index].name, msg);
	else if (c > 0 && c < 128 && isgraph(c))
		snprintf(named, sizeof named, "-%c: %s", c, msg);
	else
		return msg;
	return named;
}

/* A common option (getopt_long's c with its value): 1 if it was one, 0 if not, -1 on a bad value. */
static int common_option(int c, const char *arg, fmt_common_opts *o, fmt_err *e)
{
	uint64_t n;
	switch (c) {
	case 'j': o->json = 1; return 1;
	case 'q': o->quiet = 1; return 1;
	case 'v': o->verbose++; return 1;
	case FMT_OPT_NO_PROGRESS: o->no_progress = 1; return 1;
	case 'T':
		if (fmt_parse_u64(arg, 1024, &n, e) != FMT_OK)
			return -1;
		o->threads = (int)n;
		return 1;
	default:
		return 0;
	}
}

static void print_version(FILE *f, const char *tool)
{
	fprintf(f, "%s fmtkit %s\n", tool, FMTKIT_VERSION);
}

static const char *complete_name(fmt_cli_complete c)
{
	static const char *const names[] = { "none", "file", "dir", "env", "words", "format", "tensor" };
	return (size_t)c < sizeof names / sizeof names[0] ? names[c] : "none";
}

/* A field of the dump: "-" for nothing (tab-separated fields cannot be empty for `read`). */
static void dump_field(FILE *f, const char *s, size_t len)
{
	fputc('\t', f);
	if (!s || !len)
		fputc('-', f);
	else
		fwrite(s, 1, len, f);
}

/* "a, b or c" (a list for people) to "a b c" (words for a shell), in place. */
static void names_to_words(char *s)
{
	char *out = s;
	for (char *word = strtok(s, ", "); word; word = strtok(NULL, ", ")) {
		if (strcmp(word, "or") == 0 || strcmp(word, "and") == 0)
			continue;
		if (out != s)
			*out++ = ' ';
		memmove(out, word, strlen(word));
		out += strlen(word);
	}
	*out = '\0';
}

/* o's values as words ("a b c") in buf. */
static void value_words(const fmt_cli_tool *t, const fmt_cli_option *o, char *buf, size_t n)
{
	buf[0] = '\0';
	if (o->complete == FMT_COMPLETE_FORMAT) {
		format_names(t, buf, n);
		names_to_words(buf);
	} else if (o->words_from) {
		o->words_from(buf, n);
	} else if (o->values) {
		for (size_t i = 0, used = 0; o->values[i].word && used < n; i++)
			used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " " : "", o->values[i].word);
	} else if (o->words) {
		snprintf(buf, n, "%s", o->words);
	}
}

/* A help text on one line: '\n' as a space. */
static void dump_text(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == '\n' ? ' ' : *s, f);
}

/* What scripts/gen-completions reads, one record a line, tab-separated:
 *   tool NAME
 *   command NAME HELP
 *   option LONG SHORT ARG COMPLETE WORDS COMMANDS REPEAT GROUP HELP  (HELP on one line; an
 *     option with an ARG and REPEAT 0 is given at most once: check_once)
 *   value WORD COMMANDS HELP  (a described value of the option before it; COMMANDS: the
 *     subcommands that take it, "-" for all of the option's) */
static void dump_options(const fmt_cli_tool *t, FILE *f)
{
	fprintf(f, "tool\t%s\n", t->name);
	for (size_t i = 0; i < command_count(t); i++)
		fprintf(f, "command\t%s\t%s\n", t->commands[i].name, t->commands[i].help);
	for (size_t i = 0; i < option_count(t); i++) {
		const fmt_cli_option *o = option_at(t, i);
		char shortname[3] = { '-', (char)short_of(o), '\0' }, words[NAMES_MAX], cmds[NAMES_MAX];
		fputs("option", f);
		dump_field(f, o->name, strlen(o->name));
		dump_field(f, shortname, short_of(o) ? 2 : 0);
		dump_field(f, o->arg, o->arg ? strlen(o->arg) : 0);
		dump_field(f, complete_name(o->complete), strlen(complete_name(o->complete)));
		value_words(t, o, words, sizeof words);
		dump_field(f, words, strlen(words));
		command_list(t, o->commands, ",", ",", cmds, sizeof cmds);
		dump_field(f, cmds, o->commands ? strlen(cmds) : 0);
		dump_field(f, o->flags & FMT_CLI_REPEAT ? "1" : "0", 1);
		fprintf(f, "\t%u\t", o->group);
		dump_text(f, o->help);
		if (o->help_more) {
			char more[NAMES_MAX];
			o->help_more(more, sizeof more);
			dump_text(f, more);
		}
		fputc('\n', f);
		for (size_t v = 0; o->values && o->values[v].word; v++) {
			command_list(t, o->values[v].commands, ",", ",", cmds, sizeof cmds);
			fprintf(f, "value\t%s", o->values[v].word);
			dump_field(f, cmds, o->values[v].commands ? strlen(cmds) : 0);
			fputc('\t', f);
			dump_text(f, o->values[v].help);
			fputc('\n', f);
		}
	}
}

/* An abbreviation that several long options start with: "--secret (--secret-file or ...)". */
static int ambiguous(const fmt_cli_tool *t, const char *prefix, size_t len, char *msg, size_t n)
{
	size_t matches = 0, used;
	for (size_t i = 0; i < option_count(t); i++)
		matches += strncmp(option_at(t, i)->name, prefix, len) == 0;
	if (matches < 2)
		return 0;
	used = (size_t)snprintf(msg, n, "option '--%.*s' is ambiguous (", (int)len, prefix);
	for (size_t i = 0, listed = 0; i < option_count(t) && used < n; i++) {
		if (strncmp(option_at(t, i)->name, prefix, len) != 0)
			continue;
		listed++;
		used += (size_t)snprintf(msg + used, n - used, "%s--%s", listed == 1 ? "" : listed == matches ? " or " : ", ",
					 option_at(t, i)->name);
	}
	if (used < n)
		snprintf(msg + used, n - used, ")");
	return 1;
}

/* A long option that is not one, a typing error away from one: "did you mean '--dtype'?". */
static int near_option(const fmt_cli_tool *t, const char *typed, size_t len, char *msg, size_t n)
{
	char word[64];
	if (len >= sizeof word)
		return 0;
	memcpy(word, typed, len);
	word[len] = '\0';
	fmt_nearest near;
	fmt_nearest_init(&near, word);
	for (size_t i = 0; i < option_count(t); i++)
		fmt_nearest_offer(&near, option_at(t, i)->name);
	const char *best = fmt_nearest_best(&near);
	if (best)
		snprintf(msg, n, "unknown option '--%s' (did you mean '--%s'?)", word, best);
	return best != NULL;
}

/* A getopt failure (c is '?' or ':') as a message naming the word the user typed. */
static void describe_bad_option(const fmt_cli_tool *t, int c, const char *word, char *msg, size_t n)
{
	const fmt_cli_option *o = NULL;
	for (size_t i = 0; optopt && i < option_count(t); i++)
		if (option_at(t, i)->id == optopt)
			o = option_at(t, i);
	int is_long = word && strncmp(word, "--", 2) == 0;
	int len = is_long ? (int)strcspn(word, "=") : 2;
	if (c == ':' && o)
		snprintf(msg, n, "option %s%s needs a value (%s)", is_long ? "--" : "-",
			 is_long ? o->name : (char[2]){ (char)optopt, 0 }, o->arg ? o->arg : "");
	else if (o && is_long)
		snprintf(msg, n, "option --%s takes no value", o->name);
	else if (optopt && !is_long)
		snprintf(msg, n, "unknown option '-%c'", optopt);
	else if (is_long && ambiguous(t, word + 2, (size_t)len - 2, msg, n))
		return;
	else if (is_long && near_option(t, word + 2, (size_t)len - 2, msg, n))
		return;
	else
		snprintf(msg, n, "unknown option '%.*s'", word ? len : 0, word ? word : "");
}

/* The index in the table of what getopt_long returned. */
static size_t index_of(const fmt_cli_tool *t, int c, int long_index)
{
	if (long_index >= 0)
		return (size_t)long_index;
	for (size_t i = 0; i < option_count(t); i++)
		if (option_at(t, i)->id == c)
			return i;
	return 0;
}

static int exit_now(fmt_cli *cli, int code)
{
	cli->exit_code = code;
	return 0;
}

/* The value of o that arg names, or NULL. */
static const fmt_cli_value *value_named(const fmt_cli_option *o, const char *arg)
{
	for (size_t v = 0; arg && o->values && o->values[v].word; v++)
		if (strcmp(arg, o->values[v].word) == 0)
			return &o->values[v];
	return NULL;
}

/* Every option given, and every value given of the table's, must belong to the subcommand. */
static int check_command_options(const fmt_cli_tool *t, const unsigned char *given,
				 const fmt_cli_value *const *values, fmt_cli *cli)
{
	for (size_t i = 0; i < option_count(t); i++) {
		const fmt_cli_option *o = option_at(t, i);
		unsigned owner = o->commands;
		char what[128];
		snprintf(what, sizeof what, "--%s", o->name);
		if (given[i] && values[i] && values[i]->commands && (!owner || (owner >> cli->command & 1))) {
			owner = values[i]->commands;
			snprintf(what, sizeof what, "--%s %.64s", o->name, values[i]->word);
		}
		if (!given[i] || !owner || (owner >> cli->command & 1))
			continue;
		char owners[NAMES_MAX], msg[NAMES_MAX + 256];
		command_list(t, owner, ", ", " and ", owners, sizeof owners);
		snprintf(msg, sizeof msg, "%s belongs to %s, not %s", what, owners, t->commands[cli->command].name);
		return fmt_cli_usage_error(t, msg);
	}
	return 0;
}

static int find_command(const fmt_cli_tool *t, fmt_cli *cli)
{
	char names[NAMES_MAX], msg[NAMES_MAX + 128];
	command_list(t, 0, ", ", " or ", names, sizeof names);
	if (cli->n_operands == 0) {
		snprintf(msg, sizeof msg, "no subcommand (%s)", names);
		return fmt_cli_usage_error(t, msg);
	}
	for (size_t i = 0; i < command_count(t); i++) {
		if (strcmp(cli->operands[0], t->commands[i].name) == 0) {
			cli->command = (int)i;
			cli->operands++;
			cli->n_operands--;
			return 0;
		}
	}
	fmt_nearest near;
	fmt_nearest_init(&near, cli->operands[0]);
	for (size_t i = 0; i < command_count(t); i++)
		fmt_nearest_offer(&near, t->commands[i].name);
	if (fmt_nearest_best(&near))
		snprintf(msg, sizeof msg, "unknown subcommand '%.64s' (did you mean '%s'? use %s)", cli->operands[0],
			 fmt_nearest_best(&near), names);
	else
		snprintf(msg, sizeof msg, "unknown subcommand '%.64s' (use %s)", cli->operands[0], names);
	return fmt_cli_usage_error(t, msg);
}

/* The getopt_long tables for t; returns 0, or -1 when the table is too long (a tool's bug). */
static int build_getopt(const fmt_cli_tool *t, struct option *longs, char *shorts)
{
	size_t n = option_count(t), s = 0;
	if (n + 2 > MAX_OPTIONS)
		return -1;
	shorts[s++] = ':'; /* a missing value returns ':' instead of '?' */
	for (size_t i = 0; i < n; i++) {
		const fmt_cli_option *o = option_at(t, i);
		longs[i] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, o->id };
		if (short_of(o)) {
			shorts[s++] = (char)short_of(o);
			if (o->arg)
				shorts[s++] = ':';
		}
	}
	longs[n] = (struct option){ "dump-options", no_argument, NULL, FMT_OPT_DUMP_OPTIONS };
	longs[n + 1] = (struct option){ NULL, 0, NULL, 0 };
	shorts[s] = '\0';
	return 0;
}

/* 1 when the command line holds -j/--json (as getopt reads it, so not as an option's value or
 * after "--"): then even a usage error is reported as JSON. getopt_long permutes argv (a pass
 * that stopped at a mistake would leave operands moved), but not in the orders a leading '-' or
 * '+' asks for: '-' hands each operand over in place (code 1), and '+' stops at the first, as
 * POSIXLY_CORRECT makes the real pass do. Nothing is allocated: a copy of argv that could not
 * be made lost --json, and the out-of-memory or usage error came out as text. */
static int json_given(int argc, char **argv, const char *shorts, const struct option *longs)
{
	char in_order[2 * MAX_OPTIONS + 3];
	int json = 0;
	in_order[0] = getenv("POSIXLY_CORRECT") ? '+' : '-';
	snprintf(in_order + 1, sizeof in_order - 1, "%s", shorts);
	optind = 0;
	for (int c; (c = getopt_long(argc, argv, in_order, longs, NULL)) != -1;)
		json |= c == 'j';
	optind = 0;
	return json;
}

/* "-p/--pubkey" or "--trusted-keys". */
static void option_name(const fmt_cli_option *o, char *buf, size_t n)
{
	if (short_of(o))
		snprintf(buf, n, "-%c/--%s", short_of(o), o->name);
	else
		snprintf(buf, n, "--%s", o->name);
}

/* An option that takes a value is given once unless its table entry says it repeats: a second
 * --encrypt-to, -o or --password-file would silently replace the first. This pass only
 * counts, before any option acts (and whatever its values are); the next reports the rest.
 * It reads a copy of argv: getopt_long moves operands past the options it has seen, and a
 * missing value at the end ("f --tensor") would then take the operand. */
static int check_once(const fmt_cli_tool *t, int argc, char **argv, const struct option *longs,
		      const char *shorts)
{
	int first[MAX_OPTIONS], r = 0;
	char **words = malloc(((size_t)argc + 1) * sizeof *words);
	if (!words) { /* not a mistake of the command line: exit 3, as out of memory is elsewhere */
		fmt_err e;
		fmt_fail(&e, FMT_IO, "out of memory");
		fmt_report_error(stderr, t->name, NULL, &e, 0);
		return FMT_IO;
	}
	memcpy(words, argv, ((size_t)argc + 1) * sizeof *words);
	for (size_t i = 0; i < MAX_OPTIONS; i++)
		first[i] = -1;
	optind = 0;
	while (r == 0) {
		int long_index = -1;
		int c = getopt_long(argc, words, shorts, longs, &long_index);
		if (c == -1 || c == 'h' || c == FMT_OPT_VERSION || c == FMT_OPT_DUMP_OPTIONS)
			break;
		if (c == '?' || c == ':')
			continue;
		size_t i = index_of(t, c, long_index), same = 0;
		const fmt_cli_option *o = option_at(t, i);
		if (!o->arg || (o->flags & FMT_CLI_REPEAT))
			continue;
		/* Entries with one id are one option under several names (--key-secret-file). */
		while (option_at(t, same)->id != o->id)
			same++;
		if (first[same] < 0) {
			first[same] = (int)i;
			continue;
		}
		char name[128], before[128], msg[320];
		option_name(o, name, sizeof name);
		option_name(option_at(t, (size_t)first[same]), before, sizeof before);
		if ((size_t)first[same] == i)
			snprintf(msg, sizeof msg, "%s given twice (it takes one value)", name);
		else
			snprintf(msg, sizeof msg, "%s given after %s, the same option (it takes one value)", name,
				 before);
		r = fmt_cli_usage_error(t, msg);
	}
	free(words);
	optind = 0;
	return r;
}

/* Blocks up to 4 MiB (twice a text batch's column buffers) from the heaps, and up to 4 MiB
 * free at a heap's top kept, so that a freed block is used again instead of handed back and
 * the next batch's buffers faulted in again page by page: glibc raises its thresholds only to
 * the size of a block freed, and a column buffer that outgrew the last batch's was mapped anew
 * each time. A 256 MB CSV -> CSV: 49,700 page faults at -T 1 and 21,800 at -T 2 before, 1,600
 * and 3,300 with this; -> Parquet at -T 2 32,900 -> 6,000 (a fault costs ~20 us on a VM); the
 * price, Parquet -> .ald's peak RSS 35.4 -> 37.0 MB. 32 MiB (glibc's largest) kept more: 39 MB. */
static void keep_freed_blocks(void)
{
	(void)mallopt(M_MMAP_THRESHOLD, 4 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, 4 << 20);
}

/* An empty path names no file: open("") fails with ENOENT, and the message built on it named
 * nothing ("fmt-convert: error: cannot open: No such file or directory", exit 3). Every operand
 * is a file (or "-"), as are the values of the options that complete files or directories. */
#define EMPTY_PATH "'': empty path"

static int empty_operand(const fmt_cli_tool *t, const fmt_cli *cli)
{
	for (int i = 0; i < cli->n_operands; i++) {
		if (cli->operands[i][0] == '\0') {
			char msg[64];
			snprintf(msg, sizeof msg, EMPTY_PATH " (file argument %d)", i + 1);
			return fmt_cli_usage_error(t, msg);
		}
	}
	return 0;
}

static int names_a_path(const fmt_cli_option *o)
{
	return o->complete == FMT_COMPLETE_FILE || o->complete == FMT_COMPLETE_DIR;
}

int fmt_cli_parse(const fmt_cli_tool *t, int argc, char **argv, void *ctx, fmt_cli *cli)
{
	struct option longs[MAX_OPTIONS];
	char shorts[2 * MAX_OPTIONS + 2];
	unsigned char given[MAX_OPTIONS] = { 0 };
	const fmt_cli_value *values[MAX_OPTIONS] = { 0 }; /* the table's value each option was given */
	fmt_err e;
	fmt_err_clear(&e);
	memset(cli, 0, sizeof *cli);
	cli->command = -1;
	keep_freed_blocks();
	fmt_json_track_memory();
	fmt_format_set_unrecognised(fmt_bundle_explain); /* a tar is named so, also by tools that read none */
	if (build_getopt(t, longs, shorts) != 0) {
		fmt_fail(&e, FMT_INTERNAL, "more than %d options in the table", MAX_OPTIONS - 2 - (int)N_APPENDED);
		fmt_report_error(stderr, t->name, NULL, &e, 0);
		return exit_now(cli, FMT_INTERNAL);
	}
	opterr = 0;
	fmt_report_set_json(json_given(argc, argv, shorts, longs));
	int once = check_once(t, argc, argv, longs, shorts);
	if (once != 0)
		return exit_now(cli, once);
	optind = 0;
	for (;;) {
		int long_index = -1;
		int c = getopt_long(argc, argv, shorts, longs, &long_index);
		if (c == -1)
			break;
		fmt_err_clear(&e);
		if (c == '?' || c == ':') {
			char msg[256];
			describe_bad_option(t, c, argv[optind - 1], msg, sizeof msg);
			return exit_now(cli, fmt_cli_usage_error(t, msg));
		}
		if (c == 'h') {
			fmt_cli_help(t, stdout);
			return exit_now(cli, fmt_cli_finish(t, cli, 0));
		}
		if (c == FMT_OPT_VERSION) {
			print_version(stdout, t->name);
			return exit_now(cli, fmt_cli_finish(t, cli, 0));
		}
		if (c == FMT_OPT_DUMP_OPTIONS) {
			dump_options(t, stdout);
			return exit_now(cli, fmt_cli_finish(t, cli, 0));
		}
		given[index_of(t, c, long_index)] = 1;
		const fmt_cli_option *opt = option_at(t, index_of(t, c, long_index));
		values[index_of(t, c, long_index)] = value_named(opt, optarg);
		if (opt->id == c && opt->complete == FMT_COMPLETE_FILE && !(opt->flags & FMT_CLI_OUTPUT_MAY_REPLACE) &&
		    optarg && cli->n_files < FMT_CLI_MAX_FILES)
			cli->files[cli->n_files++] = (fmt_cli_file){ opt->name, optarg, (opt->flags & FMT_CLI_WRITTEN) != 0 };
		int r = opt->id == c && names_a_path(opt) && optarg && optarg[0] == '\0'
				? (fmt_fail(&e, FMT_USAGE, EMPTY_PATH), -1)
				: common_option(c, optarg, &cli->common, &e);
		if (r == 0)
			r = t->on_option ? (t->on_option(ctx, c, optarg, &e) < 0 ? -1 : 1)
					 : (fmt_fail(&e, FMT_USAGE, "unhandled option"), -1);
		if (r < 0 && e.kind != FMT_OK && e.kind != FMT_USAGE) {
			/* not a mistake of the command line: out of memory storing a driver's option
			 * value ('--keep-split: out of memory', exit 2 before) */
			fmt_report_error(stderr, t->name, NULL, &e, cli->common.json);
			return exit_now(cli, fmt_kind_exit(e.kind));
		}
		if (r < 0)
			return exit_now(cli, fmt_cli_usage_error(t, named_option_msg(long_index, longs, c, e.msg)));
	}
	cli->common.no_progress |= cli->common.json; /* stderr carries JSON objects only */
	cli->operands = argv + optind;
	cli->n_operands = argc - optind;
	if (command_count(t) && (find_command(t, cli) || check_command_options(t, given, values, cli)))
		return exit_now(cli, FMT_USAGE);
	if (empty_operand(t, cli))
		return exit_now(cli, FMT_USAGE);
	if (fmt_env_check(&e) != FMT_OK) {
		fmt_report_error(stderr, t->name, NULL, &e, cli->common.json);
		return exit_now(cli, FMT_USAGE);
	}
	fmt_cli_catch_truncation(t->name, cli->common.json);
	return 1;
}

FILE *fmt_cli_records(const fmt_common_opts *common)
{
	static FILE *nowhere;
	if (!(common->json && common->quiet))
		return stdout;
	if (!nowhere)
		nowhere = fopen("/dev/null", "we");
	return nowhere ? nowhere : stdout;
}

fmt_kind fmt_cli_check_written(const fmt_cli *cli, const char *what, const char *output, const fmt_cli_file *also,
			       size_t n, fmt_err *e)
{
	for (size_t i = 0; i < n; i++)
		if (also[i].path && fmt_same_file(output, also[i].path))
			return fmt_fail(e, FMT_USAGE, "%s names the same file as %s (%s)", what, also[i].option,
					also[i].path);
	for (size_t i = 0; i < cli->n_files; i++)
		if (!cli->files[i].written && fmt_same_file(output, cli->files[i].path))
			return fmt_fail(e, FMT_USAGE, "%s names the same file as --%s (%s)", what, cli->files[i].option,
					cli->files[i].path);
	return FMT_OK;
}

fmt_kind fmt_cli_check_output(const fmt_cli *cli, const char *what, const char *output, fmt_err *e)
{
	return fmt_cli_check_written(cli, what, output, NULL, 0, e);
}

int fmt_cli_finish(const fmt_cli_tool *t, const fmt_cli *cli, int status)
{
	/* A write larger than stdout's buffer fails at once and leaves only the error flag; the
	 * errno it set is still the last one, since nothing in between has failed. */
	int earlier = errno;
	int failed = fflush(stdout) != 0;
	int saved = failed ? errno : earlier;
	fmt_err e;
	fmt_err_clear(&e);
	if (status == 0 && fmt_json_memory_failed()) { /* else an error was told, and the status says so */
		fmt_fail(&e, FMT_IO, "out of memory building a report: the output is incomplete");
		fmt_report_error(stderr, t->name, NULL, &e, cli->common.json);
		status = FMT_IO;
	}
	if (!failed && !ferror(stdout))
		return status;
	fmt_stdout_fail(&e, saved);
	fmt_report_error(stderr, t->name, NULL, &e, cli->common.json);
	return status > FMT_IO ? status : FMT_IO;
}
