/* The shard plan: which tensors go to which file, computed exactly as each format's writer cuts
 * them (so --dry-run shows what a real run writes, and every name is checked before writing). */
#include <stdlib.h>
#include <string.h>
#include "fmt/checked.h"
#include "fmt/gguf.h"
#include "fmt/registry.h"
#include "fmt/safetensors.h"
#include "shard.h"

#define GGUF_SPLIT_ALIGN 32u
#define MAX_SHARDS 99999u /* five-digit shard numbers */

shard_family shard_family_of(const fmt_model *m)
{
	const char *n = m->driver ? m->driver->name : "";
	if (strcmp(n, "safetensors") == 0 || strcmp(n, "safetensors-index") == 0)
		return FAMILY_SAFETENSORS;
	if (strcmp(n, "apsim") == 0 || strcmp(n, "apsim-index") == 0)
		return FAMILY_APSIM;
	if (strcmp(n, "gguf") == 0)
		return FAMILY_GGUF;
	return FAMILY_NONE;
}

const char *shard_family_name(shard_family f)
{
	return f == FAMILY_SAFETENSORS ? "safetensors" : f == FAMILY_APSIM ? "apsim" : f == FAMILY_GGUF ? "gguf" : "?";
}

static const char *family_ext(shard_family f)
{
	return f == FAMILY_SAFETENSORS ? "safetensors" : f == FAMILY_APSIM ? "apsim" : "gguf";
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Length of a trailing "-NNNNN-of-NNNNN" in s[0..n), or 0. */
static size_t shard_suffix_len(const char *s, size_t n)
{
	static const char pat[] = "-00000-of-00000";
	size_t t = sizeof pat - 1;
	if (n <= t)
		return 0;
	for (size_t i = 0; i < t; i++) {
		char c = s[n - t + i];
		if (pat[i] == '0' ? (c < '0' || c > '9') : c != pat[i])
			return 0;
	}
	return t;
}

char *default_prefix(const char *input)
{
	static const char *const long_exts[] = { ".safetensors.index.json", ".apsim.index.json" };
	size_t n = strlen(input);
	const char *slash = strrchr(input, '/');
	size_t base = slash ? (size_t)(slash - input) + 1 : 0;
	int stripped = 0;
	for (size_t i = 0; i < sizeof long_exts / sizeof long_exts[0] && !stripped; i++) {
		if (ends_with(input, n, long_exts[i]) && n - strlen(long_exts[i]) > base) {
			n -= strlen(long_exts[i]);
			stripped = 1;
		}
	}
	if (!stripped) {
		const char *dot = memrchr(input + base, '.', n - base);
		if (dot && dot > input + base)
			n = (size_t)(dot - input);
	}
	size_t suffix = shard_suffix_len(input + base, n - base);
	if (suffix && n - suffix > base)
		n -= suffix;
	return strndup(input, n);
}

/* The order in which the writer takes the tensors: the model's, except for .apsim, whose
 * writer shards in its file order (that of the safetensors writer). */
static fmt_kind writer_order(const fmt_model *m, shard_family f, size_t **order, fmt_err *e)
{
	if (f == FAMILY_APSIM)
		return fmt_st_tensor_order(m, order, e);
	*order = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof **order);
	if (!*order)
		return fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors; i++)
		(*order)[i] = i;
	return FMT_OK;
}

static size_t index_of(const fmt_model *m, const char *name)
{
	const fmt_tensor *t = fmt_model_find_tensor(m, name);
	return t ? (size_t)(t - m->tensors) : SIZE_MAX;
}

/* .apsim: the other half of a compressed tensor (codes <-> NAME__qscale), which goes to the
 * same shard (specs/apsim.md §7); SIZE_MAX for an ordinary tensor. */
static size_t apsim_partner(const fmt_model *m, const fmt_tensor *t)
{
	static const char qscale[] = "__qscale";
	const fmt_qtensor *q = fmt_model_find_qtensor(m, t->name);
	size_t n = strlen(t->name), sl = sizeof qscale - 1, i = SIZE_MAX;
	char *other = NULL;
	if (q && q->format != FMT_Q_BF16) {
		if (asprintf(&other, "%s%s", t->name, qscale) < 0)
			other = NULL;
	} else if (!q && n > sl && strcmp(t->name + n - sl, qscale) == 0) {
		other = strndup(t->name, n - sl);
		if (other && !fmt_model_find_qtensor(m, other)) {
			free(other);
			other = NULL;
		}
	}
	if (other)
		i = index_of(m, other);
	free(other);
	return i;
}

/* Greedy cut: units (a tensor, or an .apsim codes+scales pair) in writer order; a new shard when
 * the next unit would pass a limit. GGUF counts each tensor padded to 32 bytes. */
static fmt_kind cut(const fmt_model *m, shard_family f, const size_t *order, uint64_t max_bytes,
		    uint64_t max_tensors, int empty_first, shard_plan *p, fmt_err *e)
{
	size_t n = m->n_tensors, used = 0;
	unsigned char *placed = calloc(n ? n : 1, 1);
	p->groups = calloc(n + 2, sizeof *p->groups);
	p->members = malloc((n ? n : 1) * sizeof *p->members);
	if (!placed || !p->groups || !p->members) {
		free(placed);
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	shard_group *g = &p->groups[0];
	g->members = p->members;
	p->n_groups = 1;
	if (empty_first) {
		g = &p->groups[p->n_groups++];
		g->members = p->members;
	}
	uint64_t cost_sum = 0;
	fmt_kind k = FMT_OK;
	for (size_t i = 0; i < n && k == FMT_OK; i++) {
		size_t t = order[i], partner = SIZE_MAX;
		if (placed[t])
			continue;
		if (f == FAMILY_APSIM && (partner = apsim_partner(m, &m->tensors[t])) != SIZE_MAX && placed[partner])
			partner = SIZE_MAX;
		uint64_t cost = m->tensors[t].nbytes, next;
		int bad = f == FAMILY_GGUF && fmt_align_up_u64(cost, GGUF_SPLIT_ALIGN, &cost);
		bad = bad || (partner != SIZE_MAX && fmt_add_u64(cost, m->tensors[partner].nbytes, &cost));
		if (bad || fmt_add_u64(cost_sum, cost, &next)) {
			k = fmt_fail(e, FMT_UNSUPPORTED, "tensor '%.200s': shard size overflows", m->tensors[t].name);
			break;
		}
		size_t units = partner != SIZE_MAX ? 2 : 1;
		int full = (max_tensors && g->count + units > max_tensors) || (max_bytes && next > max_bytes);
		if (g->count > 0 && full) {
			g = &p->groups[p->n_groups++];
			g->members = p->members + used;
			next = cost;
		}
		cost_sum = next;
		for (size_t u = 0; u < units; u++) {
			size_t idx = u ? partner : t;
			placed[idx] = 1;
			p->members[used++] = idx;
			g->count++;
			g->bytes += m->tensors[idx].nbytes;
		}
	}
	free(placed);
	return k;
}

static fmt_kind name_files(shard_plan *p, const char *prefix, fmt_err *e)
{
	const char *ext = family_ext(p->family);
	for (size_t i = 0; i < p->n_groups; i++)
		if (asprintf(&p->groups[i].path, "%s-%05zu-of-%05zu.%s", prefix, i + 1, p->n_groups, ext) < 0) {
			p->groups[i].path = NULL;
			return fmt_fail(e, FMT_IO, "out of memory");
		}
	if (p->family != FAMILY_GGUF && asprintf(&p->index, "%s.%s.index.json", prefix, ext) < 0) {
		p->index = NULL;
		return fmt_fail(e, FMT_IO, "out of memory");
	}
	return FMT_OK;
}

fmt_kind plan_split(const fmt_model *m, shard_family f, const char *prefix, uint64_t max_bytes,
		    uint64_t max_tensors, int no_tensor_first_split, shard_plan *p, fmt_err *e)
{
	memset(p, 0, sizeof *p);
	p->family = f;
	if (f == FAMILY_GGUF && !max_bytes && !max_tensors)
		max_tensors = FMT_GGUF_SPLIT_TENSORS;
	size_t *order = NULL;
	fmt_kind k = writer_order(m, f, &order, e);
	if (k == FMT_OK)
		k = cut(m, f, order, max_bytes, max_tensors, f == FAMILY_GGUF && no_tensor_first_split, p, e);
	free(order);
	if (k == FMT_OK && p->n_groups > (f == FAMILY_GGUF ? 65535u : MAX_SHARDS))
		k = fmt_fail(e, FMT_UNSUPPORTED, "%zu shards are more than the format can number", p->n_groups);
	if (k == FMT_OK)
		k = name_files(p, prefix, e);
	if (k != FMT_OK)
		plan_free(p);
	return k;
}

void plan_free(shard_plan *p)
{
	for (size_t i = 0; p->groups && i < p->n_groups; i++)
		free(p->groups[i].path);
	free(p->groups);
	free(p->members);
	free(p->index);
	memset(p, 0, sizeof *p);
}
