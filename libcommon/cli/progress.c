#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "fmt/env.h"
#include "fmt/io.h"
#include "fmt/meter.h"
#include "fmt/out.h"
#include "fmt/progress.h"

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fmt_progress_wanted(FILE *f, int quiet, int no_progress)
{
	return !quiet && !no_progress && isatty(fileno(f));
}

/* Seconds of work before the line appears: FMTKIT_PROGRESS_AFTER (checked at start by
 * fmt_env_check), default 1. */
static double delay_seconds(void)
{
	return fmt_env_seconds(FMT_ENV_PROGRESS_AFTER, 1.0);
}

void fmt_progress_start(fmt_progress *p, FILE *f, const char *label, uint64_t total, int enabled)
{
	p->delay = delay_seconds();
	p->f = f;
	p->label = label;
	p->total = total;
	p->done = 0;
	p->start = now_seconds();
	p->last_draw = 0;
	p->enabled = enabled;
	p->drawn = 0;
}

static void draw(fmt_progress *p, double t)
{
	char done[32], total[32], rate[32];
	double elapsed = t - p->start;
	fmt_format_bytes(done, sizeof done, p->done);
	fmt_format_bytes(total, sizeof total, p->total);
	fmt_format_bytes(rate, sizeof rate, elapsed > 0 ? (uint64_t)((double)p->done / elapsed) : 0);
	unsigned pct = p->total ? (unsigned)(p->done >= p->total ? 100 : p->done * 100 / p->total) : 0;
	fprintf(p->f, "\r\033[K%s %3u%%  %s of %s  %s/s", p->label, pct, done, total, rate);
	fflush(p->f);
	p->drawn = 1;
	p->last_draw = t;
}

void fmt_progress_add(fmt_progress *p, uint64_t n)
{
	p->done += n;
	if (!p->enabled)
		return;
	double t = now_seconds();
	if (t - p->start >= p->delay && t - p->last_draw >= 0.2)
		draw(p, t);
}

void fmt_progress_note(FILE *f, const char *text)
{
	if (!f)
		return;
	fprintf(f, "\r\033[K%s", text);
	fflush(f);
}

void fmt_progress_note_end(FILE *f)
{
	if (!f)
		return;
	fputs("\r\033[K", f);
	fflush(f);
}

void fmt_progress_notice(const char *text)
{
	if (text)
		fmt_progress_note(stderr, text);
	else
		fmt_progress_note_end(stderr);
}

void fmt_progress_end(fmt_progress *p)
{
	fmt_meter_unfollow(p);
	if (p->enabled && p->drawn) {
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
	p->enabled = 0;
}

static void on_sink_write(void *ctx, uint64_t n)
{
	fmt_progress_add(ctx, n);
}

void fmt_progress_follow_sinks(fmt_progress *p)
{
	fmt_sink_set_write_hook(p ? on_sink_write : NULL, p);
}

static void on_meter(void *ctx, uint64_t planned, uint64_t done)
{
	fmt_progress *p = ctx;
	p->total += planned;
	if (done)
		fmt_progress_add(p, done);
}

void fmt_progress_follow_meter(fmt_progress *p)
{
	if (p && p->enabled) /* a line never drawn needs no updates */
		fmt_meter_follow(on_meter, p);
	else
		fmt_meter_follow(NULL, NULL);
}
