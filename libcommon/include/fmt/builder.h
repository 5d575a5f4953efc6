/* Column builders: rows appended one value at a time, then handed to a batch. Part of the
 * table model (libcommon/table); the text readers use them. */
#ifndef FMT_BUILDER_H
#define FMT_BUILDER_H

#include <stdint.h>
#include "fmt/strbuf.h"
#include "fmt/table.h"

typedef struct col_builder {
	fmt_sb validity, values, offsets;
	uint64_t rows, nulls;
	size_t last_values, last_offsets; /* the sizes of the batch before: the next one's room */
} col_builder;

void fmt_cb_null(col_builder *b, const fmt_field *f);
void fmt_cb_bool(col_builder *b, int v);
void fmt_cb_fixed(col_builder *b, const void *le_bytes, size_t n);   /* one value's bytes */
void fmt_cb_bytes(col_builder *b, const fmt_field *f, const void *p, size_t n);
/* Room for as much as the batch before held, at once (not by doubling), before a batch. */
void fmt_cb_prepare(col_builder *b);
/* Move the built column into c, its buffers owned by batch; the builder is empty after. */
fmt_kind fmt_cb_finish(col_builder *b, const fmt_field *f, fmt_batch *batch, fmt_column *c, fmt_err *e);
void fmt_cb_free(col_builder *b);

#endif
