/* The work meter: libcommon's long passes over data (every byte hashed by fmt_sha256_update)
 * report to it, and announce beforehand how many bytes they are about to go through (a shard
 * set's data before its digests, a bundle's members after its manifest). Nothing happens
 * unless someone follows the meter (the CLI layer's progress line, fmt_progress_follow_meter).
 * Safe from any thread. */
#ifndef FMT_METER_H
#define FMT_METER_H

#include <stdint.h>

void fmt_meter_planned(uint64_t bytes);
void fmt_meter_done(uint64_t bytes);

/* The follower: called with the bytes just planned or done (the other 0), one call at a time
 * (under the meter's lock). fmt_meter_follow(NULL, NULL) stops following; fmt_meter_unfollow
 * stops it only while ctx is the one followed. */
typedef void (*fmt_meter_fn)(void *ctx, uint64_t planned, uint64_t done);
void fmt_meter_follow(fmt_meter_fn fn, void *ctx);
void fmt_meter_unfollow(const void *ctx);

#endif
