/* What several unit tests share besides the harness (unit.h): a tensor over memory, whole
 * files, scratch directories. */
#ifndef UNIT_HELPERS_H
#define UNIT_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include "fmt/model.h"

/* Add to m a tensor named name of dtype dt and shape (nd dimensions) whose nbytes of data are
 * at data (not copied); CHECKs that m took it. */
void unit_add_tensor(fmt_model *m, const char *name, fmt_dtype dt, int nd, const uint64_t *shape,
		     const void *data, uint64_t nbytes);

/* The same with nbytes worked out from dt and shape (CHECKed). */
void unit_add_sized_tensor(fmt_model *m, const char *name, fmt_dtype dt, int nd, const uint64_t *shape,
			   const void *data);
/* Add a string metadata entry key = s; CHECKs that m took it. */
void unit_add_str_meta(fmt_model *m, const char *key, const char *s);

/* The first max bytes of the file at path (malloc'd, *n of them), NULL when it cannot be read;
 * unit_read_golden reads tests/data/golden/NAME (64 KiB at most). */
uint8_t *unit_read_file(const char *path, size_t max, size_t *n);
uint8_t *unit_read_golden(const char *name, size_t *n);

/* 1 when the files at a and b can be read and hold the same bytes (1 MiB at most). */
int unit_same_files(const char *a, const char *b);

/* A new directory /tmp/fmtkit-unit-XXXXXX, its name in buf (64 bytes), or NULL; for callers
 * that hold one while a callee makes another (unit_tmp_dir's buffer is shared). */
char *unit_scratch_dir(char *buf);
/* Remove dir and everything in it. */
void unit_rm_dir(const char *dir);

#endif
