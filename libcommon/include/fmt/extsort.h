/* An external merge sort of records (a key and a payload of bytes): records are held up to a
 * memory bound, then sorted and written as a run to an unlinked temporary file ($TMPDIR, else
 * /tmp); reading merges the runs. Keys compare with memcmp (on a common prefix the shorter
 * first); equal keys keep the order they were added in (stable). Part of libcommon/table. */
#ifndef FMT_EXTSORT_H
#define FMT_EXTSORT_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/err.h"

typedef struct fmt_extsort fmt_extsort;

/* memory: bytes of records held before a run is written (at least one record is). */
fmt_kind fmt_extsort_new(uint64_t memory, fmt_extsort **out, fmt_err *e);
fmt_kind fmt_extsort_add(fmt_extsort *s, const void *key, size_t key_len, const void *payload, size_t payload_len,
			 fmt_err *e);
/* No more adds; then fmt_extsort_next gives the records in order. */
fmt_kind fmt_extsort_finish(fmt_extsort *s, fmt_err *e);
/* The next record (valid until the next call); *done = 1 after the last. */
fmt_kind fmt_extsort_next(fmt_extsort *s, const uint8_t **key, size_t *key_len, const uint8_t **payload,
			  size_t *payload_len, int *done, fmt_err *e);
/* Runs written to temporary files so far. */
uint64_t fmt_extsort_runs(const fmt_extsort *s);
void fmt_extsort_free(fmt_extsort *s);

#endif
