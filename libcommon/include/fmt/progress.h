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

/* A line saying what a wait of a few seconds with nothing to count is for ("deriving the key
 * from the passphrase…"), on f (a terminal the tool chose, as for progress; NULL: nothing);
 * fmt_progress_note_end erases it. */
void fmt_progress_note(FILE *f, const char *text);
void fmt_progress_note_end(FILE *f);

/* Feed p from every byte written through any fmt_sink (NULL to stop). */
void fmt_progress_follow_sinks(fmt_progress *p);

/* The work meter: libcommon's long passes over data (every byte hashed by fmt_sha256_update)
 * report to it, and announce beforehand how many bytes they are about to go through (a shard
 * set's data before its digests, a bundle's members after its manifest). Nothing happens
 * unless a tool follows the meter. Safe from any thread. */
void fmt_meter_planned(uint64_t bytes);
void fmt_meter_done(uint64_t bytes);

/* Feed p from the meter: planned bytes add to its total, done bytes to its count. Start p with
 * a total of 0; fmt_progress_end(p) stops it (as does NULL). A disabled p is not fed. */
void fmt_progress_follow_meter(fmt_progress *p);

#endif
