/* A progress line on a terminal: only when the tool enables it (stderr is a terminal, no
 * --quiet or --no-progress), only once the work has run for a second (FMTKIT_PROGRESS_AFTER
 * seconds), redrawn at most five times a second, erased at the end. */
#ifndef FMT_PROGRESS_H
#define FMT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct fmt_progress {
	FILE *f;
	const char *label;
	uint64_t total, done;
	double start, last_draw, delay;
	int enabled, drawn;
} fmt_progress;

/* 1 if a tool with these options should draw progress on f. */
int fmt_progress_wanted(FILE *f, int quiet, int no_progress);

void fmt_progress_start(fmt_progress *p, FILE *f, const char *label, uint64_t total, int enabled);
void fmt_progress_add(fmt_progress *p, uint64_t n);
void fmt_progress_end(fmt_progress *p);

/* Feed p from every byte written through any fmt_sink (NULL to stop). */
void fmt_progress_follow_sinks(fmt_progress *p);

#endif
