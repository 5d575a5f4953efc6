/* llama-quantize's --prune-layers L0,L1,...: the layers left out of the output and the others
 * renumbered, as src/llama-quant.cpp's remap_layer does it (read, not copied): the tensors are
 * visited in its loader's order (layer, then name); the number of the first "blk.N." in a
 * name is the layer; a layer below the first pruned one keeps its number, a later kept one
 * takes the next number not given yet; <arch>.block_count becomes the count of numbers given
 * (set last, after --override-kv). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/nameset.h"
#include "fmt/strbuf.h"
#include "gguf_internal.h"

/* Insert id into the sorted list o->prune, once. */
static int add_prune(fmt_gguf_quant_opts *o, int32_t id, fmt_err *e)
{
	size_t at = 0;
	while (at < o->n_prune && o->prune[at] < id)
		at++;
	if (at < o->n_prune && o->prune[at] == id)
		return FMT_DRVOPT_GIVEN;
	if (o->n_prune == FMT_GGUF_MAX_PRUNE)
		return fmt_fail(e, FMT_USAGE, "--prune-layers: at most %d layers", FMT_GGUF_MAX_PRUNE), -1;
	memmove(&o->prune[at + 1], &o->prune[at], (o->n_prune - at) * sizeof o->prune[0]);
	o->prune[at] = id;
	o->n_prune++;
	return FMT_DRVOPT_GIVEN;
}

int fmt_gguf_parse_prune(fmt_gguf_quant_opts *o, const char *arg, fmt_err *e)
{
	/* Each part between commas as llama-quantize's std::stoi reads it: blanks, a sign, the
	 * digits (what follows ignored); none, negative or beyond an int: refused. */
	for (const char *p = arg;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char *end;
		errno = 0;
		long id = strtol(p, &end, 10);
		if (end == p || end > p + len || errno == ERANGE || id < 0 || id > INT_MAX)
			return fmt_fail(e, FMT_USAGE, "--prune-layers: invalid layer id '%.*s' (L0,L1,...: layer "
					"numbers from 0)", (int)(len > 64 ? 64 : len), p), -1;
		if (add_prune(o, (int32_t)id, e) < 0)
			return -1;
		if (!comma)
			return FMT_DRVOPT_GIVEN;
		p = comma + 1;
	}
}

/* The first "blk.N." in name (llama-quantize's regex blk\.(\d+)\.): 1 with where its digits
 * are and their value; 0 when there is none; -1 when N is beyond an int. */
static int find_blk(const char *name, size_t *at, size_t *len, long *n)
{
	for (const char *s = strstr(name, "blk."); s; s = strstr(s + 1, "blk.")) {
		size_t d = strspn(s + 4, "0123456789");
		if (d == 0 || s[4 + d] != '.')
			continue;
		*at = (size_t)(s + 4 - name);
		*len = d;
		errno = 0;
		*n = strtol(s + 4, NULL, 10);
		return errno == ERANGE || *n > INT_MAX ? -1 : 1;
	}
	return 0;
}

static int pruned(const fmt_gguf_quant_opts *o, long blk)
{
	for (size_t i = 0; i < o->n_prune; i++)
		if (o->prune[i] == blk)
			return 1;
	return 0;
}

/* The layers met so far: each number's text -> its place in to[] (the new number, -1 pruned). */
typedef struct layer_map {
	fmt_nameset seen;
	char (*keys)[24];
	long *to;
	size_t n;
	long next;
} layer_map;

/* The new number of layer blk, given on its first visit. */
static long map_layer(layer_map *lm, const fmt_gguf_quant_opts *o, long blk, fmt_err *e)
{
	snprintf(lm->keys[lm->n], sizeof lm->keys[0], "%ld", blk);
	long at = fmt_nameset_find(&lm->seen, lm->keys[lm->n]);
	if (at >= 0)
		return lm->to[at];
	if (fmt_nameset_add_at(&lm->seen, lm->keys[lm->n], lm->n) < 0)
		return fmt_fail(e, FMT_IO, "out of memory"), -2;
	long to;
	if (pruned(o, blk))
		to = -1;
	else if (blk < o->prune[0])
		to = blk, lm->next = blk + 1;
	else
		to = lm->next++;
	lm->to[lm->n++] = to;
	return to;
}

/* name with its layer number replaced by to (at, len: where the number is), malloc'd. */
static char *renumbered(const char *name, size_t at, size_t len, long to)
{
	char num[24];
	int w = snprintf(num, sizeof num, "%ld", to);
	size_t n = strlen(name) - len + (size_t)w;
	char *out = malloc(n + 1);
	if (out)
		snprintf(out, n + 1, "%.*s%s%s", (int)at, name, num, name + at + len);
	return out;
}

fmt_kind fmt_gguf_prune_names(const fmt_model *m, const fmt_gguf_quant_opts *o, const size_t *order,
			      char **names, unsigned char *dropped, fmt_err *e)
{
	size_t n = m->n_tensors ? m->n_tensors : 1;
	layer_map lm = { .keys = malloc(n * sizeof *lm.keys), .to = malloc(n * sizeof *lm.to) };
	fmt_kind k = lm.keys && lm.to ? FMT_OK : fmt_fail(e, FMT_IO, "out of memory");
	for (size_t i = 0; i < m->n_tensors && k == FMT_OK; i++) {
		const fmt_tensor *t = &m->tensors[order[i]];
		size_t at, len;
		long blk, to;
		int found = find_blk(t->name, &at, &len, &blk);
		if (found < 0)
			k = fmt_fail(e, FMT_UNSUPPORTED, "--prune-layers: tensor '%s': its layer number is beyond an "
				     "int", t->name);
		if (found <= 0)
			continue;
		if ((to = map_layer(&lm, o, blk, e)) == -2)
			k = FMT_IO;
		else if (to < 0)
			dropped[order[i]] = 1;
		else if (to != blk && !(names[order[i]] = renumbered(t->name, at, len, to)))
			k = fmt_fail(e, FMT_IO, "out of memory");
	}
	fmt_nameset_free(&lm.seen);
	free(lm.keys);
	free(lm.to);
	return k;
}

fmt_kind fmt_gguf_prune_block_count(fmt_model *m, fmt_err *e)
{
	const fmt_value *arch = fmt_model_get_meta(m, "general.architecture");
	if (!arch || arch->type != FMT_V_STR)
		return fmt_fail(e, FMT_USAGE, "--prune-layers needs general.architecture (a string)");
	long count = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		size_t at, len;
		long blk;
		if (find_blk(m->tensors[i].name, &at, &len, &blk) == 1 && blk + 1 > count)
			count = blk + 1;
	}
	char *key = malloc(arch->v.str.len + sizeof ".block_count");
	if (!key)
		return fmt_fail(e, FMT_IO, "out of memory");
	snprintf(key, arch->v.str.len + sizeof ".block_count", "%.*s.block_count", (int)arch->v.str.len,
		 arch->v.str.ptr);
	fmt_value v = { .type = FMT_V_U32, .v.u = (uint64_t)count };
	fmt_kind k = fmt_model_put_meta_last(m, key, &v, e);   /* llama-quantize's gguf_set_val_u32 */
	free(key);
	return k;
}
