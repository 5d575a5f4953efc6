/* The parameter tree: tensor names split at dots, children in order of first appearance. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "fmt/out.h"
#include "inspect.h"

typedef struct node {
	char *segment;
	uint64_t params;
	const fmt_tensor *tensor;  /* set on a leaf */
	struct node *children;
	size_t n_children, cap_children;
} node;

static void node_free(node *n)
{
	for (size_t i = 0; i < n->n_children; i++)
		node_free(&n->children[i]);
	free(n->children);
	free(n->segment);
}

static node *child(node *parent, const char *seg, size_t len)
{
	for (size_t i = 0; i < parent->n_children; i++)
		if (strlen(parent->children[i].segment) == len &&
		    memcmp(parent->children[i].segment, seg, len) == 0)
			return &parent->children[i];
	if (parent->n_children == parent->cap_children) {
		size_t cap = parent->cap_children ? parent->cap_children * 2 : 4;
		node *p = realloc(parent->children, cap * sizeof *p);
		if (!p)
			return NULL;
		parent->children = p;
		parent->cap_children = cap;
	}
	node *c = &parent->children[parent->n_children];
	memset(c, 0, sizeof *c);
	c->segment = strndup(seg, len);
	if (!c->segment)
		return NULL;
	parent->n_children++;
	return c;
}

/* Returns -1 when memory ran out (the tree is then partial). */
static int build(node *root, const fmt_model *m)
{
	memset(root, 0, sizeof *root);
	for (size_t i = 0; i < m->n_tensors; i++) {
		const fmt_tensor *t = &m->tensors[i];
		node *at = root;
		const char *seg = t->name;
		root->params += t->nelems;
		for (;;) {
			const char *dot = strchr(seg, '.');
			size_t len = dot ? (size_t)(dot - seg) : strlen(seg);
			at = child(at, seg, len);
			if (!at)
				return -1;
			at->params += t->nelems;
			if (!dot)
				break;
			seg = dot + 1;
		}
		at->tensor = t;
	}
	return 0;
}

static void print_node(FILE *out, const node *n, int depth)
{
	fprintf(out, "%*s", 2 * depth, "");
	fmt_out_escaped(out, n->segment, strlen(n->segment));
	if (n->tensor) {
		fprintf(out, "  %s [", fmt_dtype_name(n->tensor->dtype));
		for (int d = 0; d < n->tensor->ndim; d++)
			fprintf(out, d ? ", %" PRIu64 : "%" PRIu64, n->tensor->shape[d]);
		fputc(']', out);
	}
	fprintf(out, "  (%" PRIu64 " params)\n", n->params);
	for (size_t i = 0; i < n->n_children; i++)
		print_node(out, &n->children[i], depth + 1);
}

void tree_print_text(FILE *out, const fmt_model *m)
{
	node root;
	int ok = build(&root, m) == 0;
	fprintf(out, "tree:       %" PRIu64 " params%s\n", root.params, ok ? "" : " (incomplete: out of memory)");
	for (size_t i = 0; i < root.n_children; i++)
		print_node(out, &root.children[i], 1);
	node_free(&root);
}

static json_t *node_json(const node *n)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "name", fmt_json_string(n->segment, strlen(n->segment)));
	json_object_set_new(o, "params", json_integer((json_int_t)n->params));
	if (n->tensor) {
		json_t *shape = json_array();
		for (int d = 0; shape && d < n->tensor->ndim; d++)
			json_array_append_new(shape, json_integer((json_int_t)n->tensor->shape[d]));
		json_object_set_new(o, "tensor", fmt_json_string(n->tensor->name, strlen(n->tensor->name)));
		json_object_set_new(o, "dtype", json_string(fmt_dtype_name(n->tensor->dtype)));
		json_object_set_new(o, "shape", shape);
	}
	if (n->n_children) {
		json_t *kids = json_array();
		for (size_t i = 0; kids && i < n->n_children; i++)
			json_array_append_new(kids, node_json(&n->children[i]));
		json_object_set_new(o, "children", kids);
	}
	return o;
}

json_t *tree_json(const fmt_model *m)
{
	node root;
	build(&root, m);
	json_t *kids = json_array();
	for (size_t i = 0; kids && i < root.n_children; i++)
		json_array_append_new(kids, node_json(&root.children[i]));
	json_t *o = json_pack("{s:I,s:o}", "params", (json_int_t)root.params, "children", kids);
	node_free(&root);
	return o;
}
