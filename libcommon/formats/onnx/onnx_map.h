/* The mapper's state and the helpers the primitive mapping (onnx_map.c) and the block fusion
 * (onnx_fuse.c) share. */
#ifndef FMT_ONNX_MAP_H
#define FMT_ONNX_MAP_H

#include "onnx_graph.h"

#define ONNX_BLOCK_PAIRS 8

/* A residual block found at an Add: its record and pairs, emitted in place of the Add. */
typedef struct onnx_block {
	uint8_t kind;            /* NK_RESNET, NK_UIB, NK_CONVNEXT; 0: none */
	nk_spec_layer layer;
	nk_spec_tensor w[ONNX_BLOCK_PAIRS], b[ONNX_BLOCK_PAIRS];
	int n_pairs;
	uint32_t in_c, out_c;
	const FmtOnnx__NodeProto *add;
} onnx_block;

/* The graph's wiring by tensor name (fmt_onnx_index_wiring): its first producer, and how many
 * node inputs read it and the first node that does (each looked for among all nodes, per node,
 * was quadratic in the graph). */
typedef struct onnx_wiring {
	fmt_nameset outputs, inputs;
	int *producer;            /* per distinct output name, by ordinal */
	int *first_reader;        /* per distinct input name, by ordinal */
	int *readers;
} onnx_wiring;

typedef struct mapper {
	const onnx_graph *g;
	const nk_write_opts *o;
	nk_spec *s;
	fmt_err *e;
	FmtOnnx__NodeProto **nodes;
	size_t n_nodes;
	unsigned char *consumed;  /* per node: mapped (or part of something mapped) */
	onnx_block *block_at;     /* per node: the block an Add closes */
	uint32_t h, w, c;         /* the running NHWC shape of a CNN */
	int flat;                 /* flattened: features values */
	uint32_t features;
	int nhwc;                 /* a Transpose to NHWC came last */
	int permute;              /* the next dense reads an NCHW flatten of ph x pw x pc */
	uint32_t ph, pw, pc;
	const char *last_output, *bias_output;
	onnx_wiring wires;
} mapper;

const char *fmt_onnx_node_label(const FmtOnnx__NodeProto *n);
fmt_kind fmt_onnx_unsupported(mapper *m, const FmtOnnx__NodeProto *n, const char *why);
int64_t fmt_onnx_attr_int(const FmtOnnx__NodeProto *n, const char *name, int64_t def);
float fmt_onnx_attr_float(const FmtOnnx__NodeProto *n, const char *name, float def);
size_t fmt_onnx_attr_ints(const FmtOnnx__NodeProto *n, const char *name, const int64_t **v);
fmt_kind fmt_onnx_index_wiring(mapper *m);
void fmt_onnx_wiring_free(onnx_wiring *w);
int fmt_onnx_producer(const mapper *m, const char *tensor);
int fmt_onnx_consumers(const mapper *m, const char *tensor, int *first);
const onnx_init *fmt_onnx_init_of(const mapper *m, const char *name);
const char *fmt_onnx_input(const FmtOnnx__NodeProto *n, size_t i);
int fmt_onnx_activation(const mapper *m, const FmtOnnx__NodeProto *n, float *alpha);
const onnx_init *fmt_onnx_weight(mapper *m, const FmtOnnx__NodeProto *n, size_t i, int rank);
fmt_kind fmt_onnx_bias(mapper *m, const FmtOnnx__NodeProto *n, const onnx_init *in, uint32_t count,
		       nk_spec_tensor *out);
fmt_kind fmt_onnx_fold_bn(mapper *m, const FmtOnnx__NodeProto *n, uint32_t channels, nk_spec_tensor *scale,
			  nk_spec_tensor *shift);
fmt_kind fmt_onnx_conv_pair(mapper *m, const FmtOnnx__NodeProto *n, const onnx_init *w, int depthwise,
			    uint32_t in_c, uint32_t groups);

/* onnx_fuse.c: mark the blocks residual Adds close (block_at, consumed); emit one. */
fmt_kind fmt_onnx_find_blocks(mapper *m);
fmt_kind fmt_onnx_emit_block(mapper *m, onnx_block *b);
void fmt_onnx_block_free(onnx_block *b);

#endif
