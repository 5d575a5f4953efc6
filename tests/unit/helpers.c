/* Shared unit-test helpers (helpers.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "unit.h"

void unit_add_tensor(fmt_model *m, const char *name, fmt_dtype dt, int nd, const uint64_t *shape,
		     const void *data, uint64_t nbytes)
{
	fmt_tensor t;
	fmt_err e = { 0 };
	memset(&t, 0, sizeof t);
	t.name = (char *)name;
	t.dtype = dt;
	t.ndim = nd;
	t.nelems = 1;
	for (int d = 0; d < nd; d++) {
		t.shape[d] = shape[d];
		t.nelems *= shape[d];
	}
	t.nbytes = nbytes;
	t.source = -1;
	t.data = data;
	CHECK(fmt_model_add_tensor(m, &t, NULL, &e) == FMT_OK);
}

void unit_add_sized_tensor(fmt_model *m, const char *name, fmt_dtype dt, int nd, const uint64_t *shape,
			   const void *data)
{
	uint64_t nelems = 0, nbytes = 0;
	fmt_err e = { 0 };
	CHECK(fmt_dtype_nbytes(dt, shape, nd, &nelems, &nbytes, &e) == FMT_OK);
	unit_add_tensor(m, name, dt, nd, shape, data, nbytes);
}

void unit_add_str_meta(fmt_model *m, const char *key, const char *s)
{
	fmt_err e = { 0 };
	fmt_value v = fmt_value_str(s, strlen(s));
	CHECK(fmt_model_add_meta(m, key, &v, &e) == FMT_OK);
	fmt_value_free(&v);
}

uint8_t *unit_read_file(const char *path, size_t max, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = malloc(max ? max : 1);
	*n = buf ? fread(buf, 1, max, f) : 0;
	fclose(f);
	return buf;
}

uint8_t *unit_read_golden(const char *name, size_t *n)
{
	char path[256];
	snprintf(path, sizeof path, "tests/data/golden/%s", name);
	return unit_read_file(path, 1 << 16, n);
}

int unit_same_files(const char *a, const char *b)
{
	size_t n_a = 0, n_b = 0;
	uint8_t *p_a = unit_read_file(a, 1 << 20, &n_a), *p_b = unit_read_file(b, 1 << 20, &n_b);
	int same = p_a && p_b && n_a == n_b && memcmp(p_a, p_b, n_a) == 0;
	free(p_a);
	free(p_b);
	return same;
}

char *unit_scratch_dir(char *buf)
{
	strcpy(buf, "/tmp/fmtkit-unit-XXXXXX");
	return mkdtemp(buf);
}

void unit_rm_dir(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}
