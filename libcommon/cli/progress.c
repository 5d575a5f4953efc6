#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "fmt/io.h"
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

/* Seconds of work before the line appears: FMTKIT_PROGRESS_AFTER, default 1. */
static double delay_seconds(void)
{
	const char *v = getenv("FMTKIT_PROGRESS_AFTER");
	char *end;
	double d = v && *v ? strtod(v, &end) : 1.0;
	return v && *v && (*end || d < 0) ? 1.0 : d;
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

static void stop_following(const fmt_progress *p);

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

void fmt_progress_end(fmt_progress *p)
{
	stop_following(p);
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

/* The meter's follower; passes may run on pool threads, so one lock serialises the updates. */
static fmt_progress *_Atomic meter_follower;
static pthread_mutex_t meter_lock = PTHREAD_MUTEX_INITIALIZER;

void fmt_meter_planned(uint64_t bytes)
{
	if (!meter_follower)
		return;
	pthread_mutex_lock(&meter_lock);
	fmt_progress *p = meter_follower;
	if (p)
		p->total += bytes;
	pthread_mutex_unlock(&meter_lock);
}

void fmt_meter_done(uint64_t bytes)
{
	if (!meter_follower)
		return;
	pthread_mutex_lock(&meter_lock);
	fmt_progress *p = meter_follower;
	if (p)
		fmt_progress_add(p, bytes);
	pthread_mutex_unlock(&meter_lock);
}

void fmt_progress_follow_meter(fmt_progress *p)
{
	pthread_mutex_lock(&meter_lock);
	meter_follower = p && p->enabled ? p : NULL; /* a line never drawn needs no updates */
	pthread_mutex_unlock(&meter_lock);
}

static void stop_following(const fmt_progress *p)
{
	if (meter_follower != p)
		return;
	pthread_mutex_lock(&meter_lock);
	if (meter_follower == p)
		meter_follower = NULL;
	pthread_mutex_unlock(&meter_lock);
}
