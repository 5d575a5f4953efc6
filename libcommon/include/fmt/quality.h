/* A dataset's quality report (fmt-inspect --quality), one pass over its batches in bounded
 * memory per column: null rate; distinct values, exact up to FMT_QUALITY_EXACT, then a
 * HyperLogLog estimate (2^14 registers: standard error 1.04/128 = 0.81 %); constant columns;
 * duplicate rows (rows equal in every column, by a 128-bit hash of each distinct row: 32 bytes
 * of memory per distinct row); for numeric columns min, max, mean, sample standard deviation
 * (Welford, scaled: fmt_running in fmt/stats.h) and the quantiles p1, p50, p99: exact up to
 * FMT_QUALITY_EXACT values, then from a uniform reservoir sample of that many values, whose
 * quantile ranks are off by at most 0.64 % of the rows with probability 99 % (Dvoretzky-Kiefer-Wolfowitz: sqrt(ln(2/0.01) / (2 x 65536))).
 * Quantiles are discrete, by nearest rank: the ceil(n x p)-th of the sorted values, as DuckDB's
 * quantile_disc. Part of libcommon/table. */
#ifndef FMT_QUALITY_H
#define FMT_QUALITY_H

#include <jansson.h>
#include "fmt/table.h"

#define FMT_QUALITY_EXACT 65536u

typedef struct fmt_quality fmt_quality;

fmt_kind fmt_quality_new(const fmt_schema *s, fmt_quality **q, fmt_err *e);
fmt_kind fmt_quality_add(fmt_quality *q, const fmt_batch *b, fmt_err *e);
/* {"rows":..,"duplicate_rows":..,"columns":[{"name","type","nulls","null_rate","distinct",
 * "distinct_exact","constant", numeric: "min","max","mean","std","p1","p50","p99",
 * "quantiles_exact"}],"method":{"distinct":..,"quantiles":..,"duplicate_rows":..}};
 * NULL when out of memory. */
json_t *fmt_quality_json(fmt_quality *q);
void fmt_quality_free(fmt_quality *q);

#endif
