/* The messages of CONVENTIONS.md, on the streams of the tool: the error line or object, usage
 * errors, warnings, --verbose notes, and the stdout record of an input that failed. The CLI
 * layer's: the modules below it return their errors (fmt_err) and the tool reports them. */
#ifndef FMT_REPORT_H
#define FMT_REPORT_H

#include <stdio.h>
#include <jansson.h>
#include "fmt/err.h"

/* The messages of CONVENTIONS.md on stderr. As text: "TOOL: error: FILE: message",
 * "TOOL: warning: message". With --json every line a tool writes on stderr is one JSON object
 * instead (and nothing else), so that `2>&1 | jq` works:
 *   {"tool","level":"error","file","error","exit","message"}   (file null when none)
 *   {"tool","level":"warning","file":null,"message"}
 *   {"tool","level":"info","file":null,"message"}               (--verbose notes)
 * The option runner switches JSON on for the whole process as soon as the command line holds
 * -j/--json (fmt_cli_parse), so that even a usage error is an object; a report's own json
 * argument switches it on for that report too. */
void fmt_report_set_json(int on);

void fmt_report_error(FILE *f, const char *tool, const char *file, const fmt_err *e, int json);
/* A command-line mistake: "TOOL: error: MSG" and "Try 'TOOL --help'." on f (with JSON the
 * error object, kind UsageError, exit 2, file null); returns FMT_USAGE. */
int fmt_report_usage(FILE *f, const char *tool, const char *msg);
void fmt_report_warning(FILE *f, const char *tool, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
/* A --verbose note: "TOOL: message". */
void fmt_report_info(FILE *f, const char *tool, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/* The stdout record of an input that failed (CONVENTIONS):
 * {"file","ok":false,"exit","error","message"}, file null when NULL; a tool may add members.
 * NULL when out of memory. */
json_t *fmt_json_failure(const char *file, const fmt_err *e);
/* An input that failed: the error on stderr (naming where, or e->file when set), and with
 * json the failure record of input on out (none when out is NULL: standard output carries
 * data, or -q). Returns e's exit status. */
int fmt_report_failed(FILE *out, const char *tool, const char *input, const char *where, const fmt_err *e,
		      int json);
/* A failure record as a tool builds it: fmt_json_failure and its own members (the input's name,
 * e->file where the error was found when set). */
typedef json_t *(*fmt_record_fn)(const char *input, const fmt_err *e);
/* The input the tool is about to read (call it before each), for a failure that is reported
 * outside the tool's own flow: an input truncated under its mapping is reported from the SIGBUS
 * handler (fmt_cli_catch_truncation, fmt/cli.h), with the record made in advance. out and input
 * are fmt_report_failed's (out NULL: no record), record builds it (NULL: fmt_json_failure).
 * Holds until the next call; input and out must live as long. */
void fmt_report_input(FILE *out, const char *input, fmt_record_fn record);
/* The failure record of e for that input, as the JSON line fmt_report_failed would write, and
 * in *fd the descriptor of its stream; NULL when none is due (no input given, out NULL, not
 * JSON, out of memory). out is flushed first: what the tool wrote there before is out before
 * the record is written with write(2). */
char *fmt_report_record_line(const fmt_err *e, int *fd);
/* An error before any of the n inputs was opened (a key that cannot be read): the error once
 * on stderr, then with json each input's failure record on out (one with file null when
 * there are none). Returns e's exit status. */
int fmt_report_failed_all(FILE *out, const char *tool, char *const *inputs, int n, const fmt_err *e, int json);

/* The hooks of a conversion (fmt_convert_opts, fmt/pipeline.h): its warnings and --verbose notes
 * as fmt_report_warning / fmt_report_info on o->err under o->tool, and a progress line there
 * over what it writes (fmt/progress.h, unless o->quiet or o->no_progress). */
struct fmt_convert_opts;
void fmt_cli_pipeline_reports(struct fmt_convert_opts *o);

#endif
