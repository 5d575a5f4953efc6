/* The messages and failure records of CONVENTIONS.md (fmt/report.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"
#include "fmt/report.h"

static int report_as_json; /* the process reports in JSON (--json seen) */

void fmt_report_set_json(int on)
{
	report_as_json = on;
}

static json_t *message_object(const char *tool, const char *level, const char *file)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (json_object_set_new(o, "tool", json_string(tool)) != 0 ||
	    json_object_set_new(o, "level", json_string(level)) != 0 ||
	    json_object_set_new(o, "file", file ? fmt_json_string(file, strlen(file)) : json_null()) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void put_json_string(FILE *f, const char *s)
{
	fmt_json_put_string(f, s, strlen(s));
}

/* The message object written out by hand, when memory ran out building it with jansson (the
 * message is most likely "out of memory"): the same members in the same order. */
static void json_message_plain(FILE *f, const char *tool, const char *level, const char *file, fmt_kind kind,
			       const char *msg)
{
	fputs("{\"tool\":", f);
	put_json_string(f, tool);
	fprintf(f, ",\"level\":\"%s\",\"file\":", level);
	if (file)
		put_json_string(f, file);
	else
		fputs("null", f);
	if (kind != FMT_OK)
		fprintf(f, ",\"error\":\"%s\",\"exit\":%d", fmt_kind_name(kind), fmt_kind_exit(kind));
	fputs(",\"message\":", f);
	put_json_string(f, msg);
	fputs("}\n", f);
}

/* One message object on f: the error kind and exit status when kind is not FMT_OK. Built whole
 * before anything is written; out of memory, written by hand (a run that ran out of memory
 * still says so on stderr). */
static void json_message(FILE *f, const char *tool, const char *level, const char *file, fmt_kind kind,
			 const char *msg)
{
	unsigned long mark = fmt_json_memory_mark(); /* whole either way: what failed is no loss */
	json_t *o = message_object(tool, level, file);
	int bad = !o;
	if (!bad && kind != FMT_OK)
		bad = json_object_set_new(o, "error", json_string(fmt_kind_name(kind))) != 0 ||
		      json_object_set_new(o, "exit", json_integer(fmt_kind_exit(kind))) != 0;
	if (!bad)
		bad = json_object_set_new(o, "message", fmt_json_string(msg, strlen(msg))) != 0;
	char *text = bad ? NULL : fmt_json_text(o);
	json_decref(o);
	if (text)
		fprintf(f, "%s\n", text);
	else
		json_message_plain(f, tool, level, file, kind, msg);
	free(text);
	fmt_json_memory_forgive(mark);
}

void fmt_report_error(FILE *f, const char *tool, const char *file, const fmt_err *e, int json)
{
	const char *where = e->file[0] ? e->file : file;
	if (json || report_as_json) {
		json_message(f, tool, "error", where, e->kind, e->msg);
		return;
	}
	fprintf(f, "%s: error: ", tool);
	if (where) {
		fmt_out_escaped(f, where, strlen(where));
		fputs(": ", f);
	}
	fmt_out_escaped(f, e->msg, strlen(e->msg));
	fputc('\n', f);
}

int fmt_report_usage(FILE *f, const char *tool, const char *msg)
{
	if (report_as_json)
		json_message(f, tool, "error", NULL, FMT_USAGE, msg);
	else
		fprintf(f, "%s: error: %s\nTry '%s --help'.\n", tool, msg, tool);
	return FMT_USAGE;
}

__attribute__((format(printf, 4, 0)))
static void report_note(FILE *f, const char *tool, const char *level, const char *format, va_list ap)
{
	char msg[FMT_ERR_MSG_MAX];
	vsnprintf(msg, sizeof msg, format, ap);
	if (report_as_json) {
		json_message(f, tool, level, NULL, FMT_OK, msg);
		return;
	}
	fprintf(f, strcmp(level, "warning") == 0 ? "%s: warning: " : "%s: ", tool);
	fmt_out_escaped(f, msg, strlen(msg));
	fputc('\n', f);
}

void fmt_report_warning(FILE *f, const char *tool, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	report_note(f, tool, "warning", format, ap);
	va_end(ap);
}

void fmt_report_info(FILE *f, const char *tool, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	report_note(f, tool, "info", format, ap);
	va_end(ap);
}

json_t *fmt_json_failure(const char *file, const fmt_err *e)
{
	return json_pack("{s:o,s:b,s:i,s:s,s:o}", "file", file ? fmt_json_string(file, strlen(file)) : json_null(),
			 "ok", 0, "exit", fmt_kind_exit(e->kind), "error", fmt_kind_name(e->kind), "message",
			 fmt_json_string(e->msg, strlen(e->msg)));
}

static struct {
	FILE *out;
	const char *input;
	fmt_record_fn record;
} current;

void fmt_report_input(FILE *out, const char *input, fmt_record_fn record)
{
	current.out = out;
	current.input = input;
	current.record = record ? record : fmt_json_failure;
}

char *fmt_report_record_line(const fmt_err *e, int *fd)
{
	if (!current.input || !current.out || !report_as_json)
		return NULL;
	json_t *r = current.record(current.input, e);
	char *text = NULL;
	size_t n = 0;
	FILE *f = r ? open_memstream(&text, &n) : NULL;
	int ok = f && fmt_json_line(f, r) == 0;
	json_decref(r);
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok || fflush(current.out) != 0 || (*fd = fileno(current.out)) < 0) {
		free(text);
		return NULL;
	}
	return text;
}

static void failure_record(FILE *out, const char *input, const fmt_err *e)
{
	json_t *r = fmt_json_failure(input, e);
	if (r)
		fmt_json_line(out, r);
	json_decref(r);
}

int fmt_report_failed(FILE *out, const char *tool, const char *input, const char *where, const fmt_err *e,
		      int json)
{
	json = json || report_as_json;
	if (json && out)
		failure_record(out, input, e);
	fmt_report_error(stderr, tool, where, e, json);
	return fmt_kind_exit(e->kind);
}

int fmt_report_failed_all(FILE *out, const char *tool, char *const *inputs, int n, const fmt_err *e, int json)
{
	json = json || report_as_json;
	for (int i = 0; json && out && i < (n > 0 ? n : 1); i++)
		failure_record(out, n > 0 ? inputs[i] : NULL, e);
	fmt_report_error(stderr, tool, NULL, e, json);
	return fmt_kind_exit(e->kind);
}
