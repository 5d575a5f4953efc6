/* The one memory budget for what a unit of a columnar file (a Parquet row group, an Arrow IPC
 * record batch) holds decoded or decompressed at once (fmtkit(7), SAFETY): FMT_DECODE_BASE bytes,
 * FMT_DECODE_PER_BYTE times the unit's bytes in the file, and FMT_DECODE_PER_ROW bytes a row of
 * its first FMT_DECODE_ROWS (rows cost a file next to nothing: a run of one value, a buffer of
 * zeros compressed). Past it a reader refuses the unit (InvalidFormat) before it allocates. */
#ifndef FMT_DECODE_BUDGET_H
#define FMT_DECODE_BUDGET_H

#include <stdint.h>
#include <stdio.h>

#define FMT_DECODE_BASE (32u << 20)
#define FMT_DECODE_PER_BYTE 16u
#define FMT_DECODE_PER_ROW 64u
#define FMT_DECODE_ROWS (1u << 20)

/* The budget of a unit of stored bytes in the file (at most the file's size) and rows rows. */
static inline uint64_t fmt_decode_budget(uint64_t stored, uint64_t rows)
{
	uint64_t per_bytes = stored > (UINT64_MAX >> 5) ? UINT64_MAX >> 1 : FMT_DECODE_PER_BYTE * stored;
	return FMT_DECODE_BASE + per_bytes + FMT_DECODE_PER_ROW * (rows < FMT_DECODE_ROWS ? rows : FMT_DECODE_ROWS);
}

/* The rule as messages state it, into buf: "at most 32 MiB, 16 times its S bytes in the file and
 * 64 bytes a row of its R, up to 1048576 rows: fmtkit(7), SAFETY". */
static inline const char *fmt_decode_budget_rule(char *buf, size_t size, uint64_t stored, uint64_t rows)
{
	snprintf(buf, size, "at most %u MiB, %u times its %llu bytes in the file and %u bytes a row of its %llu, up "
		 "to %u rows: fmtkit(7), SAFETY", FMT_DECODE_BASE >> 20, FMT_DECODE_PER_BYTE,
		 (unsigned long long)stored, FMT_DECODE_PER_ROW, (unsigned long long)rows, FMT_DECODE_ROWS);
	return buf;
}

#endif
