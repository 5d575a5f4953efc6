/* The ONNX driver's own view of a model (onnx_read.c): the protobuf message as protobuf-c
 * unpacked it, and its initializers decoded to host numbers, inline or from external data
 * files beside the model, every size checked. onnx_map.c maps the graph to a .nk network. */
#ifndef FMT_ONNX_GRAPH_H
#define FMT_ONNX_GRAPH_H

#include <stdint.h>
#include "fmt/err.h"
#include "fmt/nameset.h"
#include "fmt/nk.h"
#include "onnx.pb-c.h"

#define ONNX_MAX_RANK 8
#define ONNX_MAX_FILE_BYTES (2ull << 30)   /* protobuf's own limit on a message */
#define ONNX_MAX_NODES 100000
#define ONNX_MAX_INITIALIZERS 100000
#define ONNX_DECODE_BASE_BYTES (64ull << 20)   /* the unpacking budget: this + 4 x the file */

enum { ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_DOUBLE = 11 };

typedef struct onnx_init {
	const char *name;
	int dtype;                 /* TensorProto.DataType */
	int rank;
	uint64_t dims[ONNX_MAX_RANK];
	uint64_t count;
	float *f32;                /* FLOAT tensors (and DOUBLE narrowed), owned */
	int64_t *i64;              /* INT64 / INT32 tensors, owned */
	int external;              /* its data came from a file beside the model */
} onnx_init;

/* What protobuf-c may allocate to unpack a model: small messages decode to structs many times
 * their size, so a file of empty nodes would otherwise take gigabytes. */
typedef struct onnx_budget {
	uint64_t used, limit;
	int exceeded;
	int nomem;            /* malloc failed (within the limit): out of memory, not a bad file */
} onnx_budget;

typedef struct onnx_graph {
	onnx_budget budget;
	ProtobufCAllocator alloc;
	FmtOnnx__ModelProto *model;
	FmtOnnx__GraphProto *g;
	onnx_init *inits;
	size_t n_inits;
	/* The initializers' names -> their index, for fmt_onnx_init_find (each node input looked
	 * for among 100,000 initializers took minutes); holds them all only when no name is there
	 * twice and memory sufficed. */
	fmt_nameset init_names;
	int input_rank;
	uint64_t input_dims[ONNX_MAX_RANK];   /* 0 where the file names a symbol */
} onnx_graph;

/* Unpack n bytes of an ONNX model; external data is read relative to dir (NULL: refused).
 * InvalidFormat (malformed protobuf, sizes that disagree), Unsupported (a data type other than
 * float, double, int32, int64 in an initializer), Io (an external file). */
fmt_kind fmt_onnx_graph_load(onnx_graph *g, const uint8_t *bytes, size_t n, const char *dir, fmt_err *e);
void fmt_onnx_graph_free(onnx_graph *g);
const onnx_init *fmt_onnx_init_find(const onnx_graph *g, const char *name);

/* The graph as a .nk network (upstream's converter's mapping, fusions and optimizations). */
fmt_kind fmt_onnx_to_nk(const onnx_graph *g, const nk_write_opts *o, nk_spec *out, fmt_err *e);

#endif
