/* The pipeline's hooks (fmt_convert_opts): its warnings, --verbose notes and progress as the
 * tool's own (fmt/report.h, fmt/progress.h). */
#include <stdlib.h>
#include "fmt/pipeline.h"
#include "fmt/progress.h"
#include "fmt/report.h"

static void warning(const fmt_convert_opts *o, const char *msg)
{
	fmt_report_warning(o->err, o->tool, "%s", msg);
}

static void info(const fmt_convert_opts *o, const char *msg)
{
	fmt_report_info(o->err, o->tool, "%s", msg);
}

/* A line over the bytes every fmt_sink writes from now on. */
static void *progress_begin(const fmt_convert_opts *o, uint64_t total)
{
	fmt_progress *p = malloc(sizeof *p);
	if (!p)
		return NULL; /* no progress line: the work goes on */
	fmt_progress_start(p, o->err, o->tool, total, fmt_progress_wanted(o->err, o->quiet, o->no_progress));
	fmt_progress_follow_sinks(p);
	return p;
}

static void progress_end(void *progress)
{
	if (!progress)
		return;
	fmt_progress_follow_sinks(NULL);
	fmt_progress_end(progress);
	free(progress);
}

void fmt_cli_pipeline_reports(fmt_convert_opts *o)
{
	o->warning = warning;
	o->info = info;
	o->progress_begin = progress_begin;
	o->progress_end = progress_end;
}
