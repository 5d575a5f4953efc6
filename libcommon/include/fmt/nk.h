/* netkit .nk files (specs/nk.md): the parsed structure of a v3 (float) or v4 (int8) model,
 * every count, size and offset checked, shapes propagated layer by layer. Tensor data stays
 * where it is (a pointer into the bytes given to fmt_nk_parse); nothing is copied but the small
 * per-channel scale lists. fmt-inspect and fmt-verify read it through the registry (the "nk"
 * driver); nk-run interprets it. */
#ifndef FMT_NK_H
#define FMT_NK_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "fmt/err.h"

#define NK_HEADER_BYTES 48
#define NK_MAX_LAYERS 100
#define NK_MAX_TENSORS 128   /* each catalog separately (§17.6) */
#define NK_MAX_CASES 16
#define NK_MAX_CASE_VALUES 16384
#define NK_MAX_TAPS 4
#define NK_MAX_HEAD_CONVS 4
#define NK_MAX_QUANT_CHANNELS 2048
/* The work a run may take by default (nk-run --max-work): 2^34 multiply-adds. */
#define NK_DEFAULT_MAX_WORK (1ull << 34)
/* The input and output values a run may hold by default (nk-run --max-values): 2^22. */
#define NK_DEFAULT_MAX_VALUES (1ull << 22)

#define NK_FLAG_TESTS 0x0001u
#define NK_FLAG_QUANT 0x0002u
#define NK_FLAG_INT8_TESTS 0x0004u

enum nk_network { NK_MLP = 1, NK_CNN = 2 };

enum nk_kind {
	NK_DENSE = 1, NK_CONV2D = 2, NK_MAXPOOL = 3, NK_FLATTEN = 4, NK_AVGPOOL = 5,
	NK_BATCHNORM = 6, NK_DEPTHWISE = 7, NK_CONVNEXT = 8, NK_UIB = 9, NK_RESNET = 10,
	NK_LAYERNORM = 11, NK_YOLOX_HEAD = 12, NK_FEATURE_TAP = 13, NK_PAFPN = 14
};

enum nk_act {
	NK_ACT_NONE = 0, NK_ACT_RELU = 1, NK_ACT_SIGMOID = 2, NK_ACT_TANH = 3, NK_ACT_LEAKY = 4,
	NK_ACT_RELU6 = 5, NK_ACT_SOFTMAX = 6
};

enum nk_dtype { NK_F32 = 1, NK_I8 = 2, NK_I32 = 3 };

/* An activation's shape: h x w x c (NHWC, no batch), or a vector of c values (flat; after
 * flatten, dense, PAFPN), or an MLP's batch x features (h = batch rows, c = features). */
typedef struct nk_shape {
	uint32_t h, w, c;
	int flat;
} nk_shape;

static inline uint64_t nk_shape_count(nk_shape s)
{
	return (uint64_t)s.h * s.w * s.c;
}

typedef struct nk_tensor {
	uint8_t rank, dtype;
	uint32_t dims[4];
	uint32_t count;          /* num_elements */
	uint64_t offset;         /* absolute file offset of the first byte */
	uint64_t bytes;
	const void *data;        /* into the bytes given to fmt_nk_parse */
} nk_tensor;

/* QUAN record k (§6) plus its per-channel scales. */
typedef struct nk_quant {
	float in_scale, w_scale, b_scale, out_scale;
	int32_t in_zp, w_zp, b_zp, out_zp;
	uint32_t n_scales;
	float *scales;           /* n_scales per-channel weight scales (owned), or NULL */
} nk_quant;

/* One layer record with its fields decoded (§4) and its place in the graph. */
typedef struct nk_layer {
	uint8_t kind;
	uint32_t record_offset;
	uint8_t act;             /* dense / conv2d / depthwise; NK_ACT_NONE elsewhere */
	float alpha;
	/* conv2d, depthwise, pools: geometry with decoded pads */
	uint32_t kh, kw, stride;
	uint32_t pad_t, pad_l, pad_b, pad_r;
	uint8_t raw_byte15;      /* conv pad_extra / depthwise kw byte, as stored */
	uint16_t pool_meta;
	/* units (dense), filters (conv2d), channels (depthwise, BN, LN, ConvNeXt, tap) */
	uint32_t units;
	float eps;               /* LN, ConvNeXt */
	/* UIB, ResNet, YOLOX */
	uint32_t in_ch, out_ch;
	uint8_t start_dw, middle_dw, uib_stride, middle_down;
	float expand_ratio;
	uint32_t expanded;       /* UIB: make_divisible(in * ratio, 8) */
	uint8_t start_stride, middle_stride; /* UIB: the depthwise strides (§11.9) */
	nk_shape uib_start;      /* UIB: the shape after the start depthwise (= in without one) */
	uint32_t hidden, classes, convs;
	uint32_t c3, c4, c5;
	uint8_t tap_id;
	/* weight/bias pairs [first_pair, first_pair + n_pairs) */
	uint32_t first_pair, n_pairs;
	nk_shape in, out;
	uint64_t work;           /* multiply-adds of one run (fmt_nk_check_work), UINT64_MAX: more */
} nk_layer;

typedef struct nk_case {
	char name[128];          /* as stored, NUL-terminated (may hold any bytes) */
	uint32_t name_len;
	int32_t label;
	uint32_t n_in, n_out;
	const uint8_t *in;       /* float32 LE, or int8 when the file says so; may be unaligned */
	const uint8_t *expected; /* float32 LE; may be unaligned */
	uint64_t offset;
} nk_case;

/* Who owns weight/bias pair k: a layer, and the sub-operation inside it. */
typedef struct nk_pair {
	uint32_t layer;
	char role[24];           /* "" for one-pair layers, "expand", "bn1", "head2.cls_conv0", ... */
} nk_pair;

typedef struct nk_model {
	const uint8_t *base;
	uint64_t size;
	uint32_t version;
	uint8_t network, input_rank;
	uint16_t flags;
	uint32_t input_shape[4];
	uint32_t n_layers, n_weights, n_biases, weights_bytes, biases_bytes;
	nk_layer *layers;
	nk_tensor *weights, *biases;
	nk_pair *pairs;          /* n_weights entries */
	int quantized;
	uint16_t qflags;
	uint32_t n_quant;
	nk_quant *quant;         /* n_quant records, parallel to the weight catalog */
	uint64_t catalog_offset, quan_offset, meta_end, payload_offset, tcas_offset;
	uint32_t n_cases;
	float tolerance;
	nk_case *cases;
	nk_shape input, output;
	uint64_t input_count, output_count;
	uint64_t work;           /* multiply-adds of one run, all layers; UINT64_MAX: that many or more */
} nk_model;

/* Parse and validate size bytes at data (which must stay valid and unchanged while nm is
 * used). InvalidFormat naming the field / layer index on any inconsistency; Unsupported for
 * versions other than 3 and 4 and for network kinds other than MLP and CNN. */
fmt_kind fmt_nk_parse(nk_model *nm, const void *data, uint64_t size, fmt_err *e);
/* fmt_nk_parse of a file this process has just written (what, e.g. "the int8 file", names it):
 * a file it refuses is this program's fault (Internal, "WHAT does not parse: why"); out of memory
 * stays IoError. */
fmt_kind fmt_nk_parse_own(nk_model *nm, const void *data, uint64_t size, const char *what, fmt_err *e);
void fmt_nk_free(nk_model *nm);

/* The work of one run of the network over its declared input (a CNN's one image, an MLP's
 * input_shape rows together), counted by fmt_nk_parse into each layer's and the model's work:
 * every weight or per-channel scale applied once per output position of its operation is
 * one multiply-add, every tap of a pooling window one more. Counts saturate at UINT64_MAX.
 * UnsupportedVersion naming the layer at which the running count passes limit. */
fmt_kind fmt_nk_check_work(const nk_model *nm, uint64_t limit, fmt_err *e);
/* The values one run reads and writes: input_count + output_count, which a header of a few
 * bytes sets (an MLP of 16711681 rows in 376 bytes), and which nk-run generates, holds and
 * prints. UnsupportedVersion above limit. */
fmt_kind fmt_nk_check_values(const nk_model *nm, uint64_t limit, fmt_err *e);
/* Fill those counts (fmt_nk_parse does, once the shapes are known). */
void fmt_nk_count_work(nk_model *nm);

/* Names for reports. */
const char *fmt_nk_kind_name(unsigned kind);        /* "dense", "conv2d", ... */
const char *fmt_nk_act_name(unsigned act);          /* "none", "relu", ... ("none" if unknown) */
const char *fmt_nk_dtype_name(unsigned dtype);      /* "float32", "int8", "int32" */

/* §15.2: upstream's "Network Summary" block for a file named path, to f. */
void fmt_nk_print_summary(FILE *f, const nk_model *nm, const char *path);
/* Header, layers, catalog, QUAN, TCAS summary as JSON (for fmt-inspect --json). */
json_t *fmt_nk_describe_json(const nk_model *nm);
/* [h, w, c], [rows, n] or [n] as upstream prints shapes (§13). */
json_t *fmt_nk_shape_json(nk_shape s);

struct fmt_model;
struct fmt_driver;
/* The .nk driver itself, for a tool that reads nothing else (nk-run opens with it forced, so a
 * file that is not .nk gets the .nk reader's message). */
extern const struct fmt_driver fmt_driver_nk;
/* The parsed structure behind a model opened by the "nk" driver, NULL for other formats. */
const nk_model *fmt_nk_model_of(const struct fmt_model *m);

/* timm's make_divisible(v, 8) in float32 (§11.9): a UIB's expanded width. */
uint32_t fmt_nk_make_divisible8(float v);

/* Reads of unaligned little-endian float32 / int32 (test case data, per-channel scales). */
float fmt_nk_rd_f32(const uint8_t *p);

/* ---- writing (nk_write.c): a float (v3) network built layer by layer, then serialised as
 * upstream's writer lays it out (§2-§5, §9); nk_optimize.c rewrites one as upstream's
 * packager does ---- */

/* One layer to write: the fields of its record (§4); pads are top/left/bottom/right. */
typedef struct nk_spec_layer {
	uint8_t kind, act;
	float alpha;             /* leaky slope; 0.01 when unused, as upstream writes */
	uint32_t kh, kw, stride; /* conv2d (kh = kw), depthwise, pools */
	uint32_t pad_t, pad_l, pad_b, pad_r;
	uint32_t units;          /* dense units, conv2d filters, depthwise/BN/LN/ConvNeXt channels */
	float eps;               /* LN, ConvNeXt */
	uint32_t in_ch, out_ch;  /* UIB, ResNet */
	uint8_t start_dw, middle_dw, uib_stride, middle_down;
	float expand_ratio;
	uint32_t first_pair, n_pairs;
} nk_spec_layer;

/* A float32 tensor of a pair, owned by the spec. */
typedef struct nk_spec_tensor {
	uint8_t rank;
	uint32_t dims[4];
	uint32_t count;
	float *data;
} nk_spec_tensor;

typedef struct nk_spec {
	uint8_t network;         /* NK_MLP or NK_CNN */
	uint32_t input_shape[3]; /* MLP [batch, features]; CNN [H, W, C] */
	nk_spec_layer *layers;
	uint32_t n_layers, cap_layers;
	nk_spec_tensor *weights, *biases;   /* parallel: pair k */
	uint32_t n_pairs, cap_pairs;
} nk_spec;

/* Append a layer (copied; first_pair is set to the next pair) and a pair to the last layer
 * (the tensors' data is taken: freed with the spec, also on failure). */
fmt_kind fmt_nk_spec_add_layer(nk_spec *s, const nk_spec_layer *l, fmt_err *e);
fmt_kind fmt_nk_spec_add_pair(nk_spec *s, nk_spec_tensor *w, nk_spec_tensor *b, fmt_err *e);
/* A tensor of rank dims (0-terminated when fewer than 4) with its data, or NULL data on
 * overflow / no memory (zero-filled). */
nk_spec_tensor fmt_nk_spec_tensor(uint8_t rank, const uint32_t dims[4]);
void fmt_nk_spec_free(nk_spec *s);
void fmt_nk_spec_remove_layer(nk_spec *s, uint32_t index);   /* and its pairs */

/* The .nk bytes of s, no tests section: *out malloc'd. InvalidFormat when a field does not fit
 * its record (a pad over 255, an asymmetric pad over 15 more than its side, a count over the
 * format's limits). */
fmt_kind fmt_nk_write_bytes(const nk_spec *s, uint8_t **out, size_t *n, fmt_err *e);

/* Upstream's packager passes (nk_optimize.py), on a spec without composite blocks: identity
 * batch norms removed, a batch norm after a conv2d folded into it, one before flatten + dense
 * folded into the dense, two dense layers with no activation between merged. */
fmt_kind fmt_nk_optimize(nk_spec *s, fmt_err *e);
/* A per-output-channel scale and shift folded into a layer's pair (out channels, w's rows):
 * w *= scale, b = b * scale + shift, in float32 as numpy (two roundings). */
void fmt_nk_fold_scale(nk_spec_tensor *w, nk_spec_tensor *b, uint32_t out, const float *scale, const float *shift);

/* The .nk writer's options (fmt-convert --no-fuse, --no-optimize), declared by the nk driver. */
typedef struct nk_write_opts {
	int no_fuse, no_optimize;
} nk_write_opts;
struct fmt_drvopt_sets;
/* The values given on the command line, or the defaults (s may be NULL). */
nk_write_opts fmt_nk_write_opts(const struct fmt_drvopt_sets *s);


/* ---- int8 quantization (nk_quant.c): a float network as a version 4 int8 one ---- */

/* The values one tensor took over the calibration inputs. */
typedef struct nk_range {
	float lo, hi;
} nk_range;

/* Unsupported naming the first layer of nm that has no int8 form (a kind other than conv2d,
 * depthwise, pools, flatten and dense; sigmoid, tanh or leaky activations; softmax before the
 * last dense; asymmetric pads), or nm being int8 already. */
fmt_kind fmt_nk_int8_check(const nk_model *nm, fmt_err *e);
/* The int8 file of float network nm: input the range of its input values, outputs[k] that of
 * weight pair k's operation output (after its activation) over the same inputs. *out malloc'd.
 * InvalidFormat: a bias that does not fit int32. */
fmt_kind fmt_nk_write_int8(const nk_model *nm, nk_range input, const nk_range *outputs, uint8_t **out, size_t *n,
			   fmt_err *e);

#endif
