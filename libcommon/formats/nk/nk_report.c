/* Reports of a parsed .nk model: upstream's "Network Summary" (§15.2) and the JSON form. */
#include <string.h>
#include "fmt/io.h"
#include "fmt/nk.h"
#include "fmt/out.h"

static const char rule_eq[] = "=====================================================";
static const char rule_dash[] = "-----------------------------------------------------";

/* "test_mlp" for "dir/test_mlp.nk": no directory, no last extension. */
static void print_stem(FILE *f, const char *path)
{
	const char *name = fmt_base_name(path);
	const char *dot = strrchr(name, '.');
	size_t n = dot && dot != name ? (size_t)(dot - name) : strlen(name);
	fmt_out_escaped(f, name, n);
}

static void print_layer(FILE *f, const nk_layer *l)
{
	const char *act = fmt_nk_act_name(l->act);
	switch (l->kind) {
	case NK_DENSE: fprintf(f, "Dense units=%u activation=%s", l->units, act); break;
	case NK_CONV2D:
		fprintf(f, "Conv2D kernel=%u stride=%u filters=%u pad=%u,%u activation=%s", l->kh, l->stride, l->units,
			l->pad_t, l->pad_l, act);
		break;
	case NK_DEPTHWISE:
		fprintf(f, "DepthwiseConv2D kernel=%ux%u stride=%u channels=%u pad=%u,%u activation=%s", l->kh,
			l->raw_byte15, l->stride, l->units, l->pad_t, l->pad_l, act);
		break;
	case NK_MAXPOOL: fprintf(f, "MaxPool2D pool=%u stride=%u", l->kh, l->stride); break;
	case NK_AVGPOOL: fprintf(f, "AvgPool2D pool=%u stride=%u", l->kh, l->stride); break;
	case NK_FLATTEN: fputs("Flatten", f); break;
	case NK_BATCHNORM: fprintf(f, "BatchNorm2d channels=%u", l->units); break;
	case NK_LAYERNORM: fprintf(f, "LayerNorm2d channels=%u eps=%g", l->units, (double)l->eps); break;
	case NK_CONVNEXT: fprintf(f, "ConvNeXtV2Block channels=%u eps=%g", l->units, (double)l->eps); break;
	case NK_UIB:
		fprintf(f, "MobilenetV4Uib in=%u out=%u start_dw=%u middle_dw=%u stride=%u expand=%g", l->in_ch,
			l->out_ch, l->start_dw, l->middle_dw, l->uib_stride, (double)l->expand_ratio);
		break;
	case NK_RESNET: fprintf(f, "ResNetBasicBlock in=%u out=%u stride=%u", l->in_ch, l->out_ch, l->stride); break;
	case NK_YOLOX_HEAD:
		fprintf(f, "YoloxDecoupledHead in=%u hidden=%u classes=%u convs=%u", l->in_ch, l->hidden, l->classes,
			l->convs);
		break;
	case NK_FEATURE_TAP: fprintf(f, "FeatureTap channels=%u tap_id=%u", l->units, l->tap_id); break;
	default:
		fprintf(f, "YoloxPafpnMultiscale c3=%u c4=%u c5=%u hidden=%u classes=%u convs=%u", l->c3, l->c4, l->c5,
			l->hidden, l->classes, l->convs);
		break;
	}
}

void fmt_nk_print_summary(FILE *f, const nk_model *nm, const char *path)
{
	fprintf(f, "%s\nNetwork Summary\n%s\n\nName        : ", rule_eq, rule_eq);
	print_stem(f, path);
	fprintf(f, "\nType        : %s\nVersion     : %u\n\nInput Shape : [", nm->network == NK_MLP ? "MLP" : "CNN",
		nm->version);
	for (unsigned i = 0; i < nm->input_rank; i++)
		fprintf(f, i ? ", %u" : "%u", nm->input_shape[i]);
	fprintf(f, "]\n\nLayers (%u)\n%s\n", nm->n_layers, rule_dash);
	for (uint32_t i = 0; i < nm->n_layers; i++) {
		fprintf(f, "  [%u] ", i);
		print_layer(f, &nm->layers[i]);
		fputc('\n', f);
	}
	fprintf(f, "%s\nInput elements : %llu\nOutput elements: %llu\nWeight floats  : %llu\n%s\n", rule_dash,
		(unsigned long long)nm->input_count, (unsigned long long)nm->output_count,
		((unsigned long long)nm->weights_bytes + nm->biases_bytes) / 4, rule_eq);
}

/* ---- JSON ---- */

json_t *fmt_nk_shape_json(nk_shape s)
{
	if (s.flat == 2)
		return json_pack("[I]", (json_int_t)s.c);
	if (s.flat)
		return json_pack("[I,I]", (json_int_t)s.h, (json_int_t)s.c);
	return json_pack("[I,I,I]", (json_int_t)s.h, (json_int_t)s.w, (json_int_t)s.c);
}

static void set_u(json_t *o, const char *k, uint64_t v)
{
	json_object_set_new(o, k, json_integer((json_int_t)v));
}

static json_t *layer_json(const nk_model *nm, uint32_t i)
{
	const nk_layer *l = &nm->layers[i];
	json_t *o = json_object();
	set_u(o, "index", i);
	json_object_set_new(o, "kind", json_string(fmt_nk_kind_name(l->kind)));
	set_u(o, "kind_id", l->kind);
	set_u(o, "record_offset", l->record_offset);
	switch (l->kind) {
	case NK_DENSE:
		set_u(o, "units", l->units);
		break;
	case NK_CONV2D: case NK_DEPTHWISE: case NK_MAXPOOL: case NK_AVGPOOL:
		json_object_set_new(o, "kernel", json_pack("[I,I]", (json_int_t)l->kh, (json_int_t)l->kw));
		set_u(o, "stride", l->stride);
		json_object_set_new(o, "padding", json_pack("{s:I,s:I,s:I,s:I}", "top", (json_int_t)l->pad_t, "left",
							    (json_int_t)l->pad_l, "bottom", (json_int_t)l->pad_b,
							    "right", (json_int_t)l->pad_r));
		if (l->kind == NK_CONV2D)
			set_u(o, "filters", l->units);
		if (l->kind == NK_DEPTHWISE)
			set_u(o, "channels", l->units);
		if (l->kind == NK_CONV2D || l->kind == NK_DEPTHWISE)
			set_u(o, l->kind == NK_CONV2D ? "pad_extra_byte" : "kw_byte", l->raw_byte15);
		else
			set_u(o, "pool_meta", l->pool_meta);
		break;
	case NK_BATCHNORM: case NK_FEATURE_TAP:
		set_u(o, "channels", l->units);
		if (l->kind == NK_FEATURE_TAP)
			set_u(o, "tap_id", l->tap_id);
		break;
	case NK_LAYERNORM: case NK_CONVNEXT:
		set_u(o, "channels", l->units);
		json_object_set_new(o, "eps", fmt_json_double(l->eps));
		break;
	case NK_UIB:
		set_u(o, "in_channels", l->in_ch);
		set_u(o, "out_channels", l->out_ch);
		set_u(o, "start_dw_kernel", l->start_dw);
		set_u(o, "middle_dw_kernel", l->middle_dw);
		set_u(o, "stride", l->uib_stride);
		json_object_set_new(o, "middle_dw_downsample", json_boolean(l->middle_down));
		json_object_set_new(o, "expand_ratio", fmt_json_double(l->expand_ratio));
		set_u(o, "expanded_channels", l->expanded);
		break;
	case NK_RESNET:
		set_u(o, "in_channels", l->in_ch);
		set_u(o, "out_channels", l->out_ch);
		set_u(o, "stride", l->stride);
		break;
	case NK_YOLOX_HEAD:
		set_u(o, "in_channels", l->in_ch);
		set_u(o, "hidden_dim", l->hidden);
		set_u(o, "num_classes", l->classes);
		set_u(o, "num_convs", l->convs);
		break;
	case NK_PAFPN:
		set_u(o, "c3_channels", l->c3);
		set_u(o, "c4_channels", l->c4);
		set_u(o, "c5_channels", l->c5);
		set_u(o, "hidden_dim", l->hidden);
		set_u(o, "num_classes", l->classes);
		set_u(o, "num_convs", l->convs);
		break;
	default:
		break;
	}
	if (l->kind == NK_DENSE || l->kind == NK_CONV2D || l->kind == NK_DEPTHWISE) {
		json_object_set_new(o, "activation", json_string(fmt_nk_act_name(l->act)));
		set_u(o, "activation_id", l->act);
		if (l->act == NK_ACT_LEAKY)
			json_object_set_new(o, "alpha", fmt_json_double(l->alpha));
	}
	json_object_set_new(o, "input_shape", fmt_nk_shape_json(l->in));
	json_object_set_new(o, "output_shape", fmt_nk_shape_json(l->out));
	json_object_set_new(o, "multiply_adds", fmt_json_u64(l->work));
	json_t *pairs = json_array();
	for (uint32_t p = l->first_pair; p < l->first_pair + l->n_pairs; p++)
		json_array_append_new(pairs, json_integer(p));
	json_object_set_new(o, "pairs", pairs);
	return o;
}

static json_t *tensor_json(const nk_model *nm, const nk_tensor *t, uint32_t i)
{
	json_t *dims = json_array();
	for (unsigned d = 0; d < t->rank; d++)
		json_array_append_new(dims, json_integer(t->dims[d]));
	return json_pack("{s:I,s:I,s:s,s:s,s:o,s:I,s:I,s:I}", "index", (json_int_t)i, "layer",
			 (json_int_t)nm->pairs[i].layer, "role", nm->pairs[i].role, "dtype", fmt_nk_dtype_name(t->dtype),
			 "dims", dims, "count", (json_int_t)t->count, "offset", (json_int_t)t->offset, "bytes",
			 (json_int_t)t->bytes);
}

static json_t *quant_json(const nk_model *nm)
{
	json_t *recs = json_array();
	for (uint32_t i = 0; i < nm->n_quant; i++) {
		const nk_quant *q = &nm->quant[i];
		json_t *r = json_pack("{s:o,s:i,s:o,s:i,s:o,s:i,s:o,s:i}", "input_scale", fmt_json_double(q->in_scale),
				      "input_zero_point", q->in_zp, "weight_scale", fmt_json_double(q->w_scale), "weight_zero_point",
				      q->w_zp, "bias_scale", fmt_json_double(q->b_scale), "bias_zero_point", q->b_zp,
				      "output_scale", fmt_json_double(q->out_scale), "output_zero_point", q->out_zp);
		json_t *cs = json_array();
		for (uint32_t j = 0; j < q->n_scales; j++)
			json_array_append_new(cs, fmt_json_double(q->scales[j]));
		json_object_set_new(r, "channel_scales", cs);
		json_array_append_new(recs, r);
	}
	return json_pack("{s:I,s:b,s:o}", "offset", (json_int_t)nm->quan_offset, "per_channel", nm->qflags & 1,
			 "records", recs);
}

static json_t *tests_json(const nk_model *nm)
{
	json_t *cases = json_array();
	for (uint32_t i = 0; i < nm->n_cases; i++) {
		const nk_case *c = &nm->cases[i];
		json_array_append_new(cases, json_pack("{s:o,s:i,s:I,s:I}", "name", fmt_json_string(c->name, c->name_len),
						       "label", c->label, "inputs", (json_int_t)c->n_in, "outputs",
						       (json_int_t)c->n_out));
	}
	return json_pack("{s:I,s:I,s:o,s:b,s:o}", "offset", (json_int_t)nm->tcas_offset, "count",
			 (json_int_t)nm->n_cases, "tolerance", fmt_json_double(nm->tolerance), "int8_inputs",
			 (nm->flags & NK_FLAG_INT8_TESTS) != 0, "cases", cases);
}

json_t *fmt_nk_describe_json(const nk_model *nm)
{
	json_t *shape = json_array();
	for (unsigned i = 0; i < nm->input_rank; i++)
		json_array_append_new(shape, json_integer(nm->input_shape[i]));
	json_t *header = json_pack("{s:I,s:s,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I}", "version", (json_int_t)nm->version,
				   "network", nm->network == NK_MLP ? "mlp" : "cnn", "flags", (json_int_t)nm->flags,
				   "input_rank", (json_int_t)nm->input_rank, "input_shape", shape, "num_layers",
				   (json_int_t)nm->n_layers, "num_weight_tensors", (json_int_t)nm->n_weights,
				   "num_bias_tensors", (json_int_t)nm->n_biases, "weights_bytes",
				   (json_int_t)nm->weights_bytes, "biases_bytes", (json_int_t)nm->biases_bytes);
	json_t *layers = json_array();
	for (uint32_t i = 0; i < nm->n_layers; i++)
		json_array_append_new(layers, layer_json(nm, i));
	json_t *weights = json_array(), *biases = json_array();
	for (uint32_t i = 0; i < nm->n_weights; i++) {
		json_array_append_new(weights, tensor_json(nm, &nm->weights[i], i));
		json_array_append_new(biases, tensor_json(nm, &nm->biases[i], i));
	}
	json_t *o = json_pack("{s:o,s:b,s:o,s:I,s:o,s:I,s:I,s:o,s:{s:I,s:o,s:o}}", "header", header, "quantized",
			      nm->quantized, "input_shape", fmt_nk_shape_json(nm->input), "input_count",
			      (json_int_t)nm->input_count, "output_shape", fmt_nk_shape_json(nm->output), "output_count",
			      (json_int_t)nm->output_count, "payload_offset", (json_int_t)nm->payload_offset, "layers",
			      layers, "catalog", "offset", (json_int_t)nm->catalog_offset, "weights", weights, "biases",
			      biases);
	json_object_set_new(o, "multiply_adds", fmt_json_u64(nm->work));
	json_object_set_new(o, "quant", nm->quantized ? quant_json(nm) : json_null());
	json_object_set_new(o, "tests", (nm->flags & NK_FLAG_TESTS) ? tests_json(nm) : json_null());
	return o;
}
