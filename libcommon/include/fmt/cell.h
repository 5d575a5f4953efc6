/* One value of a table as text (CSV, fmt-inspect) or JSON (JSON Lines, --json): floats in
 * the shortest decimal that reads back to the same value, timestamps in RFC 3339, dates as
 * YYYY-MM-DD, binary as lowercase hex, fixed-size lists as JSON arrays. */
#ifndef FMT_CELL_H
#define FMT_CELL_H

#include "fmt/strbuf.h"
#include "fmt/table.h"

/* Append row's value (nothing for a null) to b. */
void fmt_cell_text(const fmt_field *f, const fmt_column *c, uint64_t row, fmt_sb *b);
/* How a float that JSON has no number for is spelled. FMT_JSON_DATA: as the JSON Lines writer
 * puts it in a data file, "NaN", "inf", "-inf" (DuckDB's read_json casts these to DOUBLE; the
 * README); FMT_JSON_REPORT: as the tools' own JSON reports spell it (fmt_json_double, fmtkit(7)
 * OUTPUT), "nan", "inf", "-inf". */
typedef enum fmt_json_style { FMT_JSON_DATA, FMT_JSON_REPORT } fmt_json_style;
/* The value as JSON text appended to out: numbers in their shortest form (NaN and infinities
 * as strings spelled as style says), null for a null; scratch is working space. */
void fmt_cell_json_text(const fmt_field *f, const fmt_column *c, uint64_t row, fmt_sb *out, fmt_sb *scratch,
			fmt_json_style style);
/* Row as one JSON object, keys in schema order. */
void fmt_row_json_text(const fmt_schema *s, const fmt_batch *b, uint64_t row, fmt_sb *out, fmt_sb *scratch,
		       fmt_json_style style);
/* A numeric value as double (for statistics); 0 for non-numeric types. */
double fmt_cell_number(const fmt_field *f, const fmt_column *c, uint64_t row);
/* A signed integer, date or timestamp value exactly (int64 beyond 2^53 too); an unsigned one. */
int64_t fmt_cell_i64(const fmt_field *f, const fmt_column *c, uint64_t row);
uint64_t fmt_cell_u64(const fmt_field *f, const fmt_column *c, uint64_t row);
/* The shortest decimal that parses back to the same value of type (F16, F32 or F64). */
void fmt_shortest_double(double v, fmt_ctype type, char *buf, size_t n);

/* Days since 1970-01-01 <-> civil date (proleptic Gregorian). */
void fmt_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
int64_t fmt_days_from_civil(int64_t y, unsigned m, unsigned d);

#endif
