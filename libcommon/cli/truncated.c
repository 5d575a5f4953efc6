/* An input file truncated while it is mapped (fmt/cli.h: fmt_cli_catch_truncation). */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fmt/cli.h"
#include "fmt/io.h"
#include "fmt/report.h"
#include "fmt/stagedir.h"

static const char *truncation_tool;
static int truncation_json;
static int truncation_exit;

/* What the handler writes for a SIGBUS in a mapping, made when the file is mapped (the handler
 * can only write it): the failure record of the input the tool reads (fmt_report_input) on its
 * stream, then the error message on stderr, as fmt_report_failed writes them for any other
 * failure. One block: text holds the record (record_len bytes) and the message. */
typedef struct truncation_note {
	int record_fd;
	size_t record_len, message_len;
	char text[];
} truncation_note;

static void *truncation_note_make(const char *path)
{
	char *message = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&message, &n);
	if (!f)
		return NULL;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_fail(&e, FMT_IO, FMT_MSG_SHRANK);
	fmt_report_error(f, truncation_tool, path, &e, truncation_json);
	if (fclose(f) != 0) {
		free(message);
		return NULL;
	}
	fmt_err_file(&e, path);
	int fd = -1;
	char *record = fmt_report_record_line(&e, &fd);
	size_t record_len = record ? strlen(record) : 0;
	truncation_note *note = malloc(sizeof *note + record_len + n);
	if (note) {
		note->record_fd = fd;
		note->record_len = record_len;
		note->message_len = n;
		if (record_len)
			memcpy(note->text, record, record_len);
		memcpy(note->text + record_len, message, n);
	}
	free(record);
	free(message);
	return note;
}

/* Async-signal-safe: lookups, unlink, rmdir, write, _exit. A SIGBUS anywhere else (or sent by
 * kill) removes the temporary files too, then kills the process as it did before. */
static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
	static atomic_flag reporting = ATOMIC_FLAG_INIT;
	(void)uctx;
	const truncation_note *note = info->si_code > 0 ? fmt_map_note_at(info->si_addr) : NULL;
	if (atomic_flag_test_and_set(&reporting))
		for (;;)
			pause(); /* another thread faulted first: it ends the process */
	fmt_tmp_remove_all();
	fmt_stagedir_remove_live();
	if (note) {
		if (note->record_len)
			(void)fmt_fd_write_all(note->record_fd, note->text, note->record_len);
		(void)fmt_fd_write_all(STDERR_FILENO, note->text + note->record_len, note->message_len);
		_exit(truncation_exit);
	}
	signal(sig, SIG_DFL);
	if (info->si_code <= 0)
		raise(sig); /* a fault raises it again when the handler returns */
}

void fmt_cli_catch_truncation(const char *tool, int json)
{
	truncation_tool = tool;
	truncation_json = json;
	truncation_exit = fmt_kind_exit(FMT_IO);
	fmt_map_notes(truncation_note_make);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}
