/* Unit tests for the shard-set module (fmt/shardset.h) and the multi-file commit (fmt/io.h):
 * the cut with costs, partners, tensor counts and an empty first shard; the namer both ways;
 * all-or-nothing commits that put back what they replaced. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fmt/io.h"
#include "fmt/registry.h"
#include "fmt/shardset.h"
#include "unit.h"

/* A model of n U8 tensors t0, t1, ... of the given sizes (no data: the cut reads none). */
static void sized_model(fmt_model *m, const uint64_t *sizes, size_t n)
{
	fmt_err e = { 0 };
	fmt_model_init(m);
	for (size_t i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof name, "t%zu", i);
		fmt_tensor t = { .name = name, .dtype = FMT_DT_U8, .ndim = 1, .shape = { sizes[i] },
				 .nelems = sizes[i], .nbytes = sizes[i], .source = -1 };
		CHECK(fmt_model_add_tensor(m, &t, NULL, &e) == FMT_OK);
	}
}

static int cost_padded_16(const fmt_model *m, size_t t, uint64_t *cost)
{
	*cost = (m->tensors[t].nbytes + 15) / 16 * 16;
	return 0;
}

/* t0 <-> t3 go together */
static size_t partner_0_3(const fmt_model *m, size_t t)
{
	(void)m;
	return t == 0 ? 3 : t == 3 ? 0 : SIZE_MAX;
}

static fmt_kind reversed(const fmt_model *m, size_t **order, fmt_err *e)
{
	*order = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof **order);
	if (!*order)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors; i++)
		(*order)[i] = m->n_tensors - 1 - i;
	return FMT_OK;
}

static const fmt_shard_rules plain = { .ext = "bin", .has_index = 1, .max_shards = FMT_SHARD_MAX_FILES,
				       .limits = FMT_SHARD_BY_BYTES | FMT_SHARD_BY_TENSORS };

/* "count:member,member|count:..." of a plan */
static void plan_text(const fmt_shard_plan *p, char *out, size_t n)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t s = 0; s < p->n_shards && used < n; s++) {
		used += (size_t)snprintf(out + used, n - used, "%s%llu:", s ? "|" : "", (unsigned long long)p->shards[s].bytes);
		for (size_t i = 0; i < p->shards[s].count && used < n; i++)
			used += (size_t)snprintf(out + used, n - used, "%s%zu", i ? "," : "", p->shards[s].members[i]);
	}
}

TEST(shard_cut_bytes_counts_and_oversized)
{
	static const uint64_t sizes[] = { 8, 16, 48, 16, 4 };
	fmt_model m;
	fmt_shard_plan p;
	fmt_err e = { 0 };
	char text[256];
	sized_model(&m, sizes, 5);
	CHECK(fmt_shard_plan_make(&m, &plain, "dir/m", &(fmt_shard_limits){ .max_bytes = 30 }, &p, &e) == FMT_OK);
	plan_text(&p, text, sizeof text);
	CHECK_STR(text, "24:0,1|48:2|20:3,4");  /* 48 alone above the limit */
	CHECK_STR(p.shards[0].path, "dir/m-00001-of-00003.bin");
	CHECK_STR(p.shards[2].path, "dir/m-00003-of-00003.bin");
	CHECK_STR(p.index, "dir/m.bin.index.json");
	fmt_shard_plan_free(&p);
	CHECK(fmt_shard_plan_make(&m, &plain, "m", &(fmt_shard_limits){ .max_tensors = 2 }, &p, &e) == FMT_OK);
	plan_text(&p, text, sizeof text);
	CHECK_STR(text, "24:0,1|64:2,3|4:4");
	fmt_shard_plan_free(&p);
	CHECK(fmt_shard_plan_make(&m, &plain, "m", &(fmt_shard_limits){ 0 }, &p, &e) == FMT_OK);
	CHECK_EQ_U64(p.n_shards, 1);
	fmt_shard_plan_free(&p);
	/* limits the rules do not honour are usage errors */
	CHECK(fmt_shard_plan_make(&m, &plain, "m", &(fmt_shard_limits){ .empty_first = 1 }, &p, &e) == FMT_USAGE);
	fmt_shard_rules by_size = plain;
	by_size.limits = FMT_SHARD_BY_BYTES;
	CHECK(fmt_shard_plan_make(&m, &by_size, "m", &(fmt_shard_limits){ .max_tensors = 1 }, &p, &e) == FMT_USAGE);
	/* more shards than the format can number */
	by_size.max_shards = 4;
	CHECK(fmt_shard_plan_make(&m, &by_size, "m", &(fmt_shard_limits){ .max_bytes = 1 }, &p, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "5 shards") != NULL);
	fmt_model_free(&m);
}

TEST(shard_cut_costs_partners_order_and_empty_first)
{
	static const uint64_t sizes[] = { 10, 10, 10, 10, 40 };
	fmt_model m;
	fmt_shard_plan p;
	fmt_err e = { 0 };
	char text[256];
	sized_model(&m, sizes, 5);
	fmt_shard_rules r = plain;
	r.limits |= FMT_SHARD_EMPTY_FIRST;
	r.cost = cost_padded_16;                 /* each 10-byte tensor costs 16 */
	CHECK(fmt_shard_plan_make(&m, &r, "m", &(fmt_shard_limits){ .max_bytes = 32, .empty_first = 1 }, &p, &e) ==
	      FMT_OK);
	plan_text(&p, text, sizeof text);
	CHECK_STR(text, "0:|20:0,1|20:2,3|40:4");
	fmt_shard_plan_free(&p);
	/* a partner joins its tensor, placed at the first of the two; the pair counts twice */
	r.cost = NULL;
	r.partner = partner_0_3;
	CHECK(fmt_shard_plan_make(&m, &r, "m", &(fmt_shard_limits){ .max_bytes = 30 }, &p, &e) == FMT_OK);
	plan_text(&p, text, sizeof text);
	CHECK_STR(text, "30:0,3,1|10:2|40:4");
	fmt_shard_plan_free(&p);
	CHECK(fmt_shard_plan_make(&m, &r, "m", &(fmt_shard_limits){ .max_tensors = 1 }, &p, &e) == FMT_OK);
	plan_text(&p, text, sizeof text);
	CHECK_STR(text, "20:0,3|10:1|10:2|40:4");
	fmt_shard_plan_free(&p);
	r.order = reversed;
	CHECK(fmt_shard_plan_make(&m, &r, "m", &(fmt_shard_limits){ .max_bytes = 40 }, &p, &e) == FMT_OK);
	plan_text(&p, text, sizeof text);
	CHECK_STR(text, "40:4|40:3,0,2,1");
	fmt_shard_plan_free(&p);
	fmt_model_free(&m);
}

TEST(shard_cut_zero_tensors_and_overflow)
{
	static const uint64_t huge[] = { UINT64_MAX - 1, 4 };
	fmt_model m;
	fmt_shard_plan p;
	fmt_err e = { 0 };
	fmt_model_init(&m);
	CHECK(fmt_shard_plan_make(&m, &plain, "m", &(fmt_shard_limits){ .max_bytes = 1 }, &p, &e) == FMT_OK);
	CHECK(p.n_shards == 1 && p.shards[0].count == 0 && p.shards[0].bytes == 0);
	fmt_model view;
	fmt_tensor *ts = NULL;
	CHECK(fmt_shard_view(&m, &p.shards[0], &view, &ts, &e) == FMT_OK);
	CHECK(view.n_tensors == 0 && view.tensors != NULL);
	free(ts);
	fmt_shard_plan_free(&p);
	sized_model(&m, huge, 2);
	CHECK(fmt_shard_plan_make(&m, &plain, "m", &(fmt_shard_limits){ 0 }, &p, &e) == FMT_UNSUPPORTED);
	CHECK(strstr(e.msg, "'t1'") != NULL);
	fmt_model_free(&m);
}

TEST(shard_namer_both_ways)
{
	char *n = fmt_shard_file_name("a/model", 3, 12, "gguf");
	CHECK_STR(n, "a/model-00003-of-00012.gguf");
	unsigned no = 0, count = 0;
	CHECK_EQ_U64(fmt_shard_name_suffix(n, strlen(n) - 5, &no, &count), 15);
	CHECK(no == 3 && count == 12);
	free(n);
	CHECK_EQ_U64(fmt_shard_name_suffix("model-0001-of-00002", 19, NULL, NULL), 0);
	CHECK_EQ_U64(fmt_shard_name_suffix("-00001-of-00002", 15, NULL, NULL), 0); /* no prefix */
	CHECK_EQ_U64(fmt_shard_name_suffix("m-00001_of-00002", 16, NULL, NULL), 0);
	CHECK_EQ_U64(fmt_shard_name_suffix("m-9999a-of-00002", 16, NULL, NULL), 0);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int file_is(const char *path, const char *text)
{
	char *back = NULL;
	size_t len = 0;
	fmt_err e = { 0 };
	int same = fmt_read_file(path, 1000, &back, &len, &e) == FMT_OK && len == strlen(text) &&
		   memcmp(back, text, len) == 0;
	free(back);
	return same;
}

TEST(sinks_commit_all_or_nothing)
{
	char *dir = unit_tmp_dir(), a[128], b[128], c[128];
	snprintf(a, sizeof a, "%s/a", dir);
	snprintf(b, sizeof b, "%s/b", dir);
	snprintf(c, sizeof c, "%s/c", dir);
	fmt_shard_writer w;
	fmt_sink *k;
	fmt_err e = { 0 };
	/* nothing appears before the commit, everything at it */
	CHECK(fmt_shard_writer_init(&w, 2, 0, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, a, &k, &e) == FMT_OK && fmt_sink_write(k, "new a", 5, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, b, &k, &e) == FMT_OK && fmt_sink_write(k, "new b", 5, &e) == FMT_OK);
	CHECK(w.sinks[0].fd < 0 && w.sinks[0].buf == NULL); /* the first is finished: no descriptor held */
	CHECK(fmt_shard_writer_add(&w, c, &k, &e) == FMT_INTERNAL);
	CHECK(access(a, F_OK) != 0 && access(b, F_OK) != 0);
	CHECK_EQ_U64(unit_dir_entries(dir), 2);                     /* two temporaries */
	CHECK(fmt_shard_writer_commit(&w, &e) == FMT_OK);
	CHECK(file_is(a, "new a") && file_is(b, "new b"));
	CHECK_EQ_U64(unit_dir_entries(dir), 2);
	/* abort: the temporaries go, the files stay */
	CHECK(fmt_shard_writer_init(&w, 2, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, a, &k, &e) == FMT_OK && fmt_sink_write(k, "x", 1, &e) == FMT_OK);
	fmt_shard_writer_abort(&w);
	CHECK(file_is(a, "new a"));
	CHECK_EQ_U64(unit_dir_entries(dir), 2);
	/* a directory is refused as an output, --force or not */
	CHECK(mkdir(c, 0700) == 0);
	CHECK(fmt_shard_writer_init(&w, 1, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, c, &k, &e) == FMT_USAGE);
	fmt_shard_writer_abort(&w);
	CHECK(rmdir(c) == 0);
	/* a rename that fails (a directory took c's name after its sink opened): a and b are put
	 * back as they were */
	CHECK(fmt_shard_writer_init(&w, 3, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, a, &k, &e) == FMT_OK && fmt_sink_write(k, "newer a", 7, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, b, &k, &e) == FMT_OK && fmt_sink_write(k, "newer b", 7, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, c, &k, &e) == FMT_OK && fmt_sink_write(k, "c", 1, &e) == FMT_OK);
	CHECK(mkdir(c, 0700) == 0);
	fmt_err_clear(&e);
	CHECK(fmt_shard_writer_commit(&w, &e) == FMT_IO);
	CHECK_STR(e.file, c);
	CHECK(file_is(a, "new a") && file_is(b, "new b"));
	struct stat st;
	CHECK(stat(c, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_EQ_U64(unit_dir_entries(dir), 3);                     /* a, b, c: no temporary, nothing moved aside */
	/* without a file there before, a failed commit removes what it had renamed */
	unlink(a);
	CHECK(rmdir(c) == 0);
	CHECK(fmt_shard_writer_init(&w, 2, FMT_SINK_FORCE, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, a, &k, &e) == FMT_OK);
	CHECK(fmt_shard_writer_add(&w, c, &k, &e) == FMT_OK);
	CHECK(mkdir(c, 0700) == 0);
	CHECK(fmt_shard_writer_commit(&w, &e) == FMT_IO);
	CHECK(access(a, F_OK) != 0);
	CHECK_EQ_U64(unit_dir_entries(dir), 2);
	rmdir(c);
	unlink(b);
	rmdir(dir);
}

static fmt_kind write_name(void *ctx, size_t i, fmt_sink *k, fmt_err *e)
{
	(void)ctx;
	return fmt_sink_write(k, i ? "second" : "first", i ? 6 : 5, e);
}

static fmt_kind refuse(void *ctx, fmt_err *e)
{
	++*(int *)ctx;
	return fmt_fail(e, FMT_UNSUPPORTED, "not this one");
}

/* The write options' gate runs once every file is written and before any is put in place. */
TEST(write_plan_gate_before_commit)
{
	char *dir = unit_tmp_dir(), a[128], b[128];
	snprintf(a, sizeof a, "%s/s-1", dir);
	snprintf(b, sizeof b, "%s/s-2", dir);
	fmt_shard shards[2] = { { .path = a }, { .path = b } };
	fmt_shard_plan plan = { .shards = shards, .n_shards = 2 };
	int calls = 0;
	fmt_write_opts wo = { .before_commit = refuse, .commit_ctx = &calls };
	char **paths = NULL;
	size_t n = 0;
	fmt_err e;
	fmt_err_clear(&e);
	CHECK(fmt_shard_write_plan(&plan, &wo, write_name, NULL, &paths, &n, &e) == FMT_UNSUPPORTED);
	CHECK_STR(e.msg, "not this one");
	CHECK(calls == 1 && paths == NULL && n == 0);
	CHECK_EQ_U64(unit_dir_entries(dir), 0);                     /* no file, no temporary */
	wo.before_commit = NULL;
	CHECK(fmt_shard_write_plan(&plan, &wo, write_name, NULL, &paths, &n, &e) == FMT_OK);
	CHECK(n == 2 && file_is(a, "first") && file_is(b, "second"));
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

TEST(plan_outputs_checked_against_the_input)
{
	char *dir = unit_tmp_dir(), prefix[128], in[160];
	static const uint64_t sizes[] = { 4, 4 };
	fmt_model m;
	fmt_shard_plan p;
	fmt_err e = { 0 };
	snprintf(prefix, sizeof prefix, "%s/m", dir);
	sized_model(&m, sizes, 2);
	CHECK(fmt_shard_plan_make(&m, &plain, prefix, &(fmt_shard_limits){ .max_tensors = 1 }, &p, &e) == FMT_OK);
	CHECK(fmt_shard_plan_check_outputs(&p, NULL, 0, &e) == FMT_OK);
	snprintf(in, sizeof in, "%s/m.bin.index.json", dir);
	CHECK(write_file(in, "{}") == 0);
	CHECK(fmt_shard_plan_check_outputs(&p, NULL, 0, &e) == FMT_USAGE);
	CHECK(strstr(e.msg, "output exists") != NULL);
	CHECK(fmt_shard_plan_check_outputs(&p, NULL, FMT_SINK_FORCE, &e) == FMT_OK);
	fmt_model input;
	fmt_model_init(&input);
	input.path = in;                                   /* the input is that index */
	fmt_err_clear(&e);
	CHECK(fmt_shard_plan_check_outputs(&p, &input, FMT_SINK_FORCE, &e) == FMT_USAGE);
	CHECK(strstr(e.msg, "same file") != NULL);
	CHECK_STR(e.file, in);
	input.path = NULL;
	fmt_shard_plan_free(&p);
	fmt_model_free(&m);
	unlink(in);
	rmdir(dir);
}
