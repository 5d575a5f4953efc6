/* A progress line on a terminal: only when the tool enables it (stderr is a terminal, no
 * --quiet or --no-progress), only once the work has run for a second (FMTKIT_PROGRESS_AFTER
 * seconds), redrawn at most five times a second, erased at the end. */
#ifndef FMT_PROGRESS_H
#define FMT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>
#include "fmt/meter.h"

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

/* A line saying what a wait of a few seconds with nothing to count is for ("deriving the key
 * from the passphrase…"), on f (a terminal the tool chose, as for progress; NULL: nothing);
 * fmt_progress_note_end erases it. */
void fmt_progress_note(FILE *f, const char *text);
void fmt_progress_note_end(FILE *f);
/* The same on stderr, as a hook for libcommon (fmt_pass_opts.notice): text NULL erases it. */
void fmt_progress_notice(const char *text);

/* Feed p from every byte written through any fmt_sink (NULL to stop). */
void fmt_progress_follow_sinks(fmt_progress *p);

/* Feed p from the work meter (fmt/meter.h): planned bytes add to its total, done bytes to its
 * count. Start p with a total of 0; fmt_progress_end(p) stops it (as does NULL). A disabled p
 * is not fed. */
void fmt_progress_follow_meter(fmt_progress *p);

#endif
