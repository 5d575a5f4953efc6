/* The driver conformance suite: every registered model and table driver through the same
 * checks (conformance.h). New drivers get it by registering. */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "conformance.h"
#include "fmt/out.h"
#include "fmt/strbuf.h"
#include "helpers.h"
#include "unit.h"

#define SAMPLES_DIR "tests/data/conformance"
#define MAX_SAMPLE ((size_t)16 << 20)

/* A failure naming the driver (and stopping a check's loop: the first one tells enough). */
static void conform_fail(const char *driver, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void conform_fail(const char *driver, const char *format, ...)
{
	char msg[900], line[1024];
	va_list ap;
	va_start(ap, format);
	vsnprintf(msg, sizeof msg, format, ap);
	va_end(ap);
	snprintf(line, sizeof line, "driver %s: %s", driver, msg);
	unit_fail(__FILE__, __LINE__, line);
}

static uint8_t *read_whole(const char *path, size_t *n)
{
	char *text = NULL;
	fmt_err e = { 0 };
	if (fmt_read_file(path, MAX_SAMPLE, &text, n, &e) != FMT_OK)
		return NULL;
	return (uint8_t *)text;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* SAMPLES_DIR/<name>/<the file with extension ext>, or 0 when there is none. */
static int find_sample(const char *name, const char *ext, char *path, size_t size)
{
	char dir[256];
	snprintf(dir, sizeof dir, SAMPLES_DIR "/%.200s", name);
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;
	while (d && !found && (de = readdir(d)) != NULL) {
		if (ext && ends_with(de->d_name, ext)) {
			snprintf(path, size, "%s/%.255s", dir, de->d_name);
			found = 1;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* Where a writing driver's own sample goes: DIR/sample<ext>. */
static void sample_path(const char *dir, const char *ext, char *path, size_t size)
{
	snprintf(path, size, "%s/sample%s", dir, ext ? ext : "");
}

/* 1 when the sample was written (k), else 0 and a failure naming the driver. */
static int sample_written(const char *driver, fmt_kind k, const fmt_err *e)
{
	if (k != FMT_OK)
		conform_fail(driver, "cannot write its sample: %s", e->msg);
	return k == FMT_OK;
}

static void no_sample(const char *driver, const char *ext)
{
	conform_fail(driver, "no sample: add " SAMPLES_DIR "/%s/ with a file ending in %s", driver,
		     ext ? ext : "its extension");
}

/* ---- model drivers ---- */

static const float w_data[6] = { 0.5f, -1.0f, 2.0f, 3.25f, -0.125f, 8.0f };
static const float b_data[3] = { 1.0f, 0.0f, -2.5f };
static const uint16_t h_data[4] = { 0x3c00, 0xc000, 0x3800, 0x0000 }; /* f16 1, -2, 0.5, 0 */

/* The small model a writing driver's sample is made of: F32 tensors, an F16 one and a string
 * metadata key where the format holds them. */
static void tiny_model(const fmt_driver *d, fmt_model *m)
{
	fmt_err e = { 0 };
	fmt_model_init(m);
	unit_add_tensor(m, "layer.weight", FMT_DT_F32, 2, (const uint64_t[]){ 2, 3 }, w_data, sizeof w_data);
	unit_add_tensor(m, "layer.bias", FMT_DT_F32, 1, (const uint64_t[]){ 3 }, b_data, sizeof b_data);
	if (fmt_driver_holds_dtype(d, FMT_DT_F16))
		unit_add_tensor(m, "half", FMT_DT_F16, 2, (const uint64_t[]){ 2, 2 }, h_data, sizeof h_data);
	fmt_value v = fmt_value_str("conformance", strlen("conformance"));
	CHECK(fmt_model_add_meta(m, "general.name", &v, &e) == FMT_OK);
	fmt_value_free(&v);
}

static fmt_kind write_model(const fmt_driver *d, const fmt_model *m, const char *path, fmt_err *e)
{
	fmt_sink k;
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1 };
	fmt_kind r = fmt_sink_open(&k, path, FMT_SINK_FORCE, e);
	if (r != FMT_OK)
		return r;
	r = d->write(m, &k, &o, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

static int values_equal(const fmt_value *a, const fmt_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case FMT_V_STR:
		return a->v.str.len == b->v.str.len && memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len) == 0;
	case FMT_V_ARRAY:
		if (a->v.arr.elem != b->v.arr.elem || a->v.arr.count != b->v.arr.count)
			return 0;
		for (uint64_t i = 0; i < a->v.arr.count; i++) {
			fmt_value x = fmt_array_item(a, i), y = fmt_array_item(b, i);
			if (!values_equal(&x, &y))
				return 0;
		}
		return 1;
	case FMT_V_F32: case FMT_V_F64:
		return memcmp(&a->v.f, &b->v.f, sizeof a->v.f) == 0;
	case FMT_V_BOOL:
		return !a->v.b == !b->v.b;
	default:
		return a->v.u == b->v.u;
	}
}

static int tensor_bytes_equal(const fmt_model *a, const fmt_tensor *ta, const fmt_model *b,
			      const fmt_tensor *tb)
{
	const uint8_t *pa, *pb;
	uint8_t *fa = NULL, *fb = NULL;
	fmt_err e = { 0 };
	int same = fmt_tensor_load(a, ta, &pa, &fa, &e) == FMT_OK && fmt_tensor_load(b, tb, &pb, &fb, &e) == FMT_OK &&
		   ta->nbytes == tb->nbytes && memcmp(pa, pb, (size_t)ta->nbytes) == 0;
	free(fa);
	free(fb);
	return same;
}

/* What differs between two models (tensors, their bytes, metadata, units, encoded tensors),
 * or NULL when they are the same. */
static const char *model_difference(const fmt_model *a, const fmt_model *b, char *why, size_t size)
{
	if (a->n_tensors != b->n_tensors || a->n_meta != b->n_meta || a->n_units != b->n_units ||
	    a->n_qtensors != b->n_qtensors) {
		snprintf(why, size, "counts differ: tensors %zu/%zu, metadata %zu/%zu, units %zu/%zu, encoded %zu/%zu",
			 a->n_tensors, b->n_tensors, a->n_meta, b->n_meta, a->n_units, b->n_units, a->n_qtensors,
			 b->n_qtensors);
		return why;
	}
	for (size_t i = 0; i < a->n_tensors; i++) {
		const fmt_tensor *ta = &a->tensors[i], *tb = fmt_model_find_tensor(b, ta->name);
		if (!tb || tb->dtype != ta->dtype || tb->ndim != ta->ndim ||
		    memcmp(tb->shape, ta->shape, sizeof ta->shape[0] * (size_t)ta->ndim) != 0 ||
		    !tensor_bytes_equal(a, ta, b, tb)) {
			snprintf(why, size, "tensor '%s' differs", ta->name);
			return why;
		}
	}
	for (size_t i = 0; i < a->n_meta; i++) {
		const fmt_value *vb = fmt_model_get_meta(b, a->meta[i].key);
		if (!vb || !values_equal(&a->meta[i].val, vb)) {
			snprintf(why, size, "metadata '%s' differs", a->meta[i].key);
			return why;
		}
	}
	return NULL;
}

/* Opens a hostile variant of a sample (p, n) with driver d, or probing when d is NULL. */
typedef fmt_kind (*variant_opener)(const char *name, const uint8_t *p, size_t n, const void *d, fmt_err *e);

/* Every prefix of the sample, and every byte of it XOR 0x01 and XOR 0x80, forced to driver d
 * (called name) and probed: never FMT_INTERNAL. */
static void hostile_variants(const char *name, const void *d, variant_opener open, const char *path,
			     const uint8_t *bytes, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);
	fmt_err e = { 0 };
	CHECK(copy != NULL);
	for (size_t cut = 0; copy && cut < n; cut++) {
		if (open(path, bytes, cut, d, &e) == FMT_INTERNAL || open(path, bytes, cut, NULL, &e) == FMT_INTERNAL) {
			conform_fail(name, "truncated to %zu bytes: internal error: %s", cut, e.msg);
			break;
		}
	}
	static const uint8_t flips[] = { 0x01, 0x80 };
	for (size_t at = 0; copy && at < n; at++) {
		for (size_t f = 0; f < sizeof flips; f++) {
			memcpy(copy, bytes, n);
			copy[at] ^= flips[f];
			if (open(path, copy, n, d, &e) == FMT_INTERNAL || open(path, copy, n, NULL, &e) == FMT_INTERNAL) {
				conform_fail(name, "byte %zu XOR 0x%02x: internal error: %s", at, flips[f], e.msg);
				at = n;
				break;
			}
		}
	}
	free(copy);
}

/* Open (and, when that works, verify and read every tensor of) a hostile variant: the kind may
 * be anything but FMT_INTERNAL. */
static fmt_kind open_hostile(const char *name, const uint8_t *p, size_t n, const void *forced, fmt_err *e)
{
	fmt_model m;
	fmt_err_clear(e);
	fmt_kind k = fmt_model_open_memory(&m, name, p, n, forced, e);
	if (k != FMT_OK)
		return k;
	k = fmt_model_verify(&m, NULL, e);
	for (size_t i = 0; k != FMT_INTERNAL && i < m.n_tensors; i++) {
		const uint8_t *bytes;
		uint8_t *to_free = NULL;
		fmt_kind t = fmt_tensor_load(&m, &m.tensors[i], &bytes, &to_free, e);
		free(to_free);
		if (t == FMT_INTERNAL)
			k = t;
	}
	fmt_model_free(&m);
	return k;
}

/* Write m with the driver that writes this format (itself, or the file driver of a set driver)
 * and read it back: the same model. */
static void model_round_trip(const fmt_driver *d, const fmt_model *m)
{
	const fmt_driver *w = d->write ? d : d->file_driver;
	if (!w || !w->write)
		return;
	char dir_buf[64], *dir = unit_scratch_dir(dir_buf), path[256], why[512];
	fmt_err e = { 0 };
	fmt_model back;
	CHECK(dir != NULL);
	snprintf(path, sizeof path, "%s/back%s", dir, w->extension);
	if (write_model(w, m, path, &e) != FMT_OK) {
		conform_fail(d->name, "writing %s: %s", path, e.msg);
	} else if (fmt_model_open(&back, path, NULL, &e) != FMT_OK) {
		conform_fail(d->name, "reading back %s: %s", path, e.msg);
	} else {
		if (back.driver != w)
			conform_fail(d->name, "what %s wrote probes as %s", w->name, back.driver->name);
		const char *diff = model_difference(m, &back, why, sizeof why);
		if (diff)
			conform_fail(d->name, "read back differs: %s", diff);
		fmt_model_free(&back);
	}
	unit_rm_dir(dir);
}

/* A format with shard sets: write_sharded writes exactly the files plan_shards names (the
 * shards, then the index), all committed, no temporary left, and the set reads back as m. Cut
 * as finely as the format allows (one tensor per shard, else one byte). */
static void model_set_round_trip(const fmt_driver *d, const fmt_model *m)
{
	const fmt_driver *w = fmt_driver_set_writer(d);
	if (!w)
		return;
	char dir_buf[64], *dir = unit_scratch_dir(dir_buf), prefix[128], why[512];
	fmt_shard_limits lim = { 0 };
	if (w->shard_limits & FMT_SHARD_BY_TENSORS)
		lim.max_tensors = 1;
	else
		lim.max_bytes = 1;
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1 };
	fmt_shard_plan plan;
	char **paths = NULL;
	size_t n = 0;
	fmt_err e = { 0 };
	CHECK(dir != NULL);
	snprintf(prefix, sizeof prefix, "%s/set", dir);
	if (w->plan_shards(m, prefix, &lim, &plan, &e) != FMT_OK) {
		conform_fail(d->name, "plan_shards: %s", e.msg);
		unit_rm_dir(dir);
		return;
	}
	if (w->write_sharded(m, prefix, &lim, &o, &paths, &n, &e) != FMT_OK) {
		conform_fail(d->name, "write_sharded: %s", e.msg);
	} else {
		size_t want = plan.n_shards + (plan.index != NULL);
		if (n != want)
			conform_fail(d->name, "write_sharded wrote %zu files, plan_shards planned %zu", n, want);
		for (size_t i = 0; i < n && i < want; i++)
			if (strcmp(paths[i], i < plan.n_shards ? plan.shards[i].path : plan.index) != 0)
				conform_fail(d->name, "file %zu is %s, not the planned one", i, paths[i]);
		if ((size_t)unit_dir_entries(dir) != n)
			conform_fail(d->name, "%d entries in the directory after writing %zu files",
				     unit_dir_entries(dir), n);
		fmt_model back;
		const char *head = plan.index ? plan.index : plan.shards[0].path;
		if (fmt_model_open(&back, head, NULL, &e) != FMT_OK) {
			conform_fail(d->name, "reading back the set %s: %s", head, e.msg);
		} else {
			const char *diff = model_difference(m, &back, why, sizeof why);
			if (diff)
				conform_fail(d->name, "the set reads back differently: %s", diff);
			fmt_model_free(&back);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	fmt_shard_plan_free(&plan);
	unit_rm_dir(dir);
}

void conform_model_driver(const fmt_driver *d, const char *path)
{
	fmt_model m;
	fmt_err e = { 0 };
	size_t n = 0;
	uint8_t *bytes = read_whole(path, &n);
	if (!bytes) {
		conform_fail(d->name, "cannot read sample %s", path);
		return;
	}
	if (fmt_model_open(&m, path, NULL, &e) != FMT_OK) {
		conform_fail(d->name, "sample %s does not open: %s", path, e.msg);
		free(bytes);
		return;
	}
	if (m.driver != d)
		conform_fail(d->name, "sample %s probes as %s", path, m.driver->name);
	if (fmt_model_verify(&m, NULL, &e) != FMT_OK)
		conform_fail(d->name, "sample %s does not verify: %s", path, e.msg);
	for (size_t i = 0; i < m.n_tensors; i++) {
		const uint8_t *p;
		uint8_t *to_free = NULL;
		if (fmt_tensor_load(&m, &m.tensors[i], &p, &to_free, &e) != FMT_OK)
			conform_fail(d->name, "tensor '%s' unreadable: %s", m.tensors[i].name, e.msg);
		free(to_free);
	}
	model_round_trip(d, &m);
	model_set_round_trip(d, &m);
	fmt_model_free(&m);
	hostile_variants(d->name, d, open_hostile, path, bytes, n);
	free(bytes);
}

int conform_model_sample(const fmt_driver *d, const char *dir, char *path, size_t size)
{
	if (find_sample(d->name, d->extension, path, size))
		return 1;
	if (!d->write || !dir)
		return 0;
	fmt_model m;
	fmt_err e = { 0 };
	tiny_model(d, &m);
	sample_path(dir, d->extension, path, size);
	fmt_kind k = write_model(d, &m, path, &e);
	fmt_model_free(&m);
	return sample_written(d->name, k, &e);
}

TEST(conformance_every_model_driver)
{
	char dir_buf[64], *dir = unit_scratch_dir(dir_buf);
	CHECK(dir != NULL);
	for (const fmt_driver *const *d = fmt_drivers(); *d; d++) {
		char path[600];
		if (!conform_model_sample(*d, dir, path, sizeof path)) {
			no_sample((*d)->name, (*d)->extension);
			continue;
		}
		conform_model_driver(*d, path);
	}
	if (dir)
		unit_rm_dir(dir);
}

/* ---- table drivers ---- */

static void put_hex(fmt_sb *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		char two[2] = { digits[p[i] >> 4], digits[p[i] & 15] };
		fmt_sb_put(out, two, 2);
	}
}

/* One value as text: hex of its bytes ("-" for null), so tables compare value for value
 * whatever their batch boundaries. */
static void put_value(fmt_sb *out, const fmt_field *f, const fmt_column *c, uint64_t row)
{
	if (fmt_column_is_null(c, row)) {
		fmt_sb_puts(out, "-");
	} else if (f->type == FMT_C_BOOL) {
		fmt_sb_puts(out, fmt_column_bool(c, row) ? "1" : "0");
	} else if (f->type == FMT_C_UTF8 || f->type == FMT_C_LARGE_UTF8 || f->type == FMT_C_BINARY) {
		const uint8_t *p;
		size_t n;
		fmt_column_bytes(c, f->type, row, &p, &n);
		put_hex(out, p, n);
	} else {
		uint64_t w = 0;
		fmt_err e = { 0 };
		if (fmt_field_row_width(f, &w, &e) == FMT_OK)
			put_hex(out, c->values + row * w, (size_t)w);
	}
	fmt_sb_puts(out, "|");
}

/* The schema and every row of t as text; the kind of the first failure. */
static fmt_kind table_text(fmt_table *t, fmt_sb *out, fmt_err *e)
{
	for (size_t i = 0; i < t->schema.n_fields; i++) {
		const fmt_field *f = &t->schema.fields[i];
		fmt_sb_puts(out, f->name);
		fmt_sb_puts(out, ":");
		fmt_sb_puts(out, fmt_ctype_name(f->type));
		fmt_sb_puts(out, f->nullable ? "?" : "");
		fmt_sb_puts(out, f->type == FMT_C_FIXED_SIZE_LIST ? fmt_ctype_name(f->elem) : "");
		fmt_sb_puts(out, ",");
	}
	fmt_sb_puts(out, "\n");
	for (int done = 0; !done;) {
		fmt_batch b;
		fmt_kind k = fmt_table_next(t, &b, &done, e);
		if (k != FMT_OK)
			return k;
		for (uint64_t r = 0; r < b.n_rows; r++) {
			for (size_t c = 0; c < b.n_columns; c++)
				put_value(out, &t->schema.fields[c], &b.columns[c], r);
			fmt_sb_puts(out, "\n");
		}
		fmt_batch_free(&b);
	}
	return FMT_OK;
}

static fmt_kind open_hostile_table(const char *name, const uint8_t *p, size_t n, const void *forced,
				   fmt_err *e)
{
	fmt_table t;
	fmt_sb text = { 0 };
	fmt_err_clear(e);
	fmt_kind k = fmt_table_open_memory(&t, name, p, n, forced, e);
	if (k != FMT_OK)
		return k;
	k = fmt_table_verify(&t, NULL, e);
	if (k == FMT_OK)
		k = table_text(&t, &text, e);
	fmt_sb_free(&text);
	fmt_table_free(&t);
	return k;
}

static fmt_kind write_table(const fmt_table_driver *d, fmt_table *t, const char *path, fmt_err *e)
{
	fmt_sink k;
	fmt_write_opts o = { .sink_flags = FMT_SINK_FORCE, .threads = 1 };
	fmt_kind r = fmt_sink_open(&k, path, FMT_SINK_FORCE, e);
	if (r != FMT_OK)
		return r;
	r = d->write(t, &k, &o, e);
	if (r == FMT_OK)
		return fmt_sink_commit(&k, e);
	fmt_sink_abort(&k);
	return r;
}

static void table_round_trip(const fmt_table_driver *d, const char *path, const char *want)
{
	char dir_buf[64], *dir = unit_scratch_dir(dir_buf), out[256];
	fmt_table t, back;
	fmt_err e = { 0 };
	CHECK(dir != NULL);
	snprintf(out, sizeof out, "%s/back%s", dir, d->extension ? d->extension : "");
	fmt_kind r = fmt_table_open(&t, path, d, &e);
	if (r == FMT_OK) {
		r = write_table(d, &t, out, &e);
		fmt_table_free(&t);
	}
	if (r != FMT_OK) {
		conform_fail(d->name, "writing %s: %s", out, e.msg);
	} else if (fmt_table_open(&back, out, NULL, &e) != FMT_OK) {
		conform_fail(d->name, "reading back %s: %s", out, e.msg);
	} else {
		fmt_sb text = { 0 };
		if (back.driver != d)
			conform_fail(d->name, "what it wrote probes as %s", back.driver->name);
		if (table_text(&back, &text, &e) != FMT_OK || !text.p || strcmp(text.p, want) != 0)
			conform_fail(d->name, "read back differs: %.200s", text.p ? text.p : e.msg);
		fmt_sb_free(&text);
		fmt_table_free(&back);
	}
	unit_rm_dir(dir);
}

/* verify_facts (what fmt-verify reports) is describe's "crc", "payload_authenticated" and
 * "license", the same values, and nothing else. */
static void facts_are_describes(const fmt_table_driver *d, const fmt_table *t)
{
	static const char *const keys[] = { "crc", "payload_authenticated", "license" };
	if (!d->verify_facts)
		return;
	json_t *facts = d->verify_facts(t), *all = d->describe ? d->describe(t) : NULL;
	size_t present = 0;
	for (size_t i = 0; facts && all && i < sizeof keys / sizeof keys[0]; i++) {
		json_t *mine = json_object_get(facts, keys[i]), *theirs = json_object_get(all, keys[i]);
		present += mine != NULL;
		if ((mine || theirs) && !json_equal(mine, theirs))
			conform_fail(d->name, "verify_facts' %s is not describe's", keys[i]);
	}
	if (!facts || !all || json_object_size(facts) != present)
		conform_fail(d->name, "verify_facts gives NULL, other members, or has no describe");
	json_decref(facts);
	json_decref(all);
}

void conform_table_driver(const fmt_table_driver *d, const char *path)
{
	fmt_table t;
	fmt_err e = { 0 };
	fmt_sb text = { 0 };
	size_t n = 0;
	uint8_t *bytes = read_whole(path, &n);
	if (!bytes) {
		conform_fail(d->name, "cannot read sample %s", path);
		return;
	}
	if (fmt_table_open(&t, path, NULL, &e) != FMT_OK) {
		conform_fail(d->name, "sample %s does not open: %s", path, e.msg);
		free(bytes);
		return;
	}
	if (t.driver != d)
		conform_fail(d->name, "sample %s probes as %s", path, t.driver->name);
	if (fmt_table_verify(&t, NULL, &e) != FMT_OK)
		conform_fail(d->name, "sample %s does not verify: %s", path, e.msg);
	facts_are_describes(d, &t);
	if (table_text(&t, &text, &e) != FMT_OK)
		conform_fail(d->name, "sample %s: reading its rows: %s", path, e.msg);
	fmt_table_free(&t);
	if (d->write && text.p)
		table_round_trip(d, path, text.p);
	fmt_sb_free(&text);
	hostile_variants(d->name, d, open_hostile_table, path, bytes, n);
	free(bytes);
}

/* A small table held in memory (one batch): what a writing table driver's sample is made of. */
static const int64_t mem_ids[3] = { 1, 2, -3 };
static const double mem_x[3] = { 0.5, 0.0, -2.25 };
static const uint8_t mem_x_valid = 0x5; /* row 1 null */
static const int32_t mem_name_off[4] = { 0, 5, 9, 9 };
static const uint8_t mem_name_valid = 0x3; /* row 2 null */
static const uint8_t mem_ok = 0x5;

static fmt_kind mem_next(fmt_table *t, fmt_batch *b, int *done, fmt_err *e)
{
	(void)e;
	int *given = t->format_state;
	*done = *given;
	if (*given)
		return FMT_OK;
	*given = 1;
	b->n_rows = 3;
	b->columns[0] = (fmt_column){ .values = (const uint8_t *)mem_ids, .values_len = sizeof mem_ids };
	b->columns[1] = (fmt_column){ .null_count = 1, .validity = &mem_x_valid, .values = (const uint8_t *)mem_x,
				      .values_len = sizeof mem_x };
	b->columns[2] = (fmt_column){ .null_count = 1, .validity = &mem_name_valid, .offsets = mem_name_off,
				      .values = (const uint8_t *)"alphabeta", .values_len = 9 };
	b->columns[3] = (fmt_column){ .values = &mem_ok, .values_len = 1 };
	return FMT_OK;
}

static const fmt_table_driver mem_driver = { .name = "memory", .next = mem_next };

static void mem_table(fmt_table *t, int *given)
{
	static const fmt_field fields[] = {
		{ .name = "id", .type = FMT_C_I64 }, { .name = "x", .type = FMT_C_F64, .nullable = 1 },
		{ .name = "name", .type = FMT_C_UTF8, .nullable = 1 }, { .name = "ok", .type = FMT_C_BOOL },
	};
	fmt_err e = { 0 };
	fmt_table_init(t);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		CHECK(fmt_schema_add_field(&t->schema, &fields[i], &e) == FMT_OK);
	*given = 0;
	t->format_state = given;
	t->driver = &mem_driver;
}

/* The sample of a table driver: its folder in SAMPLES_DIR, else its own write of mem_table. */
static int table_sample(const fmt_table_driver *d, const char *dir, char *path, size_t size)
{
	if (find_sample(d->name, d->extension, path, size))
		return 1;
	if (!d->write || !dir)
		return 0;
	fmt_table t;
	fmt_err e = { 0 };
	int given;
	mem_table(&t, &given);
	sample_path(dir, d->extension, path, size);
	fmt_kind r = write_table(d, &t, path, &e);
	t.format_state = NULL;
	fmt_table_free(&t);
	return sample_written(d->name, r, &e);
}

TEST(conformance_every_table_driver)
{
	char dir_buf[64], *dir = unit_scratch_dir(dir_buf);
	CHECK(dir != NULL);
	for (const fmt_table_driver *const *d = fmt_table_drivers(); *d; d++) {
		char path[600];
		if (!table_sample(*d, dir, path, sizeof path)) {
			no_sample((*d)->name, (*d)->extension);
			continue;
		}
		conform_table_driver(*d, path);
	}
	if (dir)
		unit_rm_dir(dir);
}

/* The memory table written by the in-test ttab driver reads back value for value: the sample
 * builder hands writers what it says. */
TEST(conformance_memory_table_is_what_samples_are_made_of)
{
	fmt_table t;
	fmt_sb text = { 0 };
	fmt_err e = { 0 };
	int given;
	mem_table(&t, &given);
	CHECK(table_text(&t, &text, &e) == FMT_OK);
	CHECK_STR(text.p, "id:int64,x:float64?,name:utf8?,ok:bool,\n"
			  "0100000000000000|000000000000e03f|616c706861|1|\n"
			  "0200000000000000|-|62657461|0|\n"
			  "fdffffffffffffff|00000000000002c0|-|1|\n");
	fmt_sb_free(&text);
	t.format_state = NULL;
	fmt_table_free(&t);
}
