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

/* The message for a SIGBUS in path's mapping, made when the file is mapped (the handler can
 * only write it): as every error is reported, in JSON too with --json. */
static char *truncation_note(const char *path)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	if (!f)
		return NULL;
	fmt_err e;
	fmt_err_clear(&e);
	fmt_fail(&e, FMT_IO, "the file changed size while being read (truncated by another process?)");
	fmt_report_error(f, truncation_tool, path, &e, truncation_json);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Async-signal-safe: lookups, unlink, rmdir, write, _exit. A SIGBUS anywhere else (or sent by
 * kill) removes the temporary files too, then kills the process as it did before. */
static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
	static atomic_flag reporting = ATOMIC_FLAG_INIT;
	(void)uctx;
	const char *note = info->si_code > 0 ? fmt_map_note_at(info->si_addr) : NULL;
	if (atomic_flag_test_and_set(&reporting))
		for (;;)
			pause(); /* another thread faulted first: it ends the process */
	fmt_tmp_remove_all();
	fmt_stagedir_remove_live();
	if (note) {
		(void)fmt_fd_write_all(STDERR_FILENO, note, strlen(note));
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
	fmt_map_notes(truncation_note);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}
