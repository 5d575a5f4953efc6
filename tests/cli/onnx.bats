#!/usr/bin/env bats
# fmt-convert MODEL.onnx OUT.nk (issue 22): every ONNX twin of an upstream .nk fixture converts
# to exactly upstream's converter output (the fixture without its TCAS block, flag bit 0 clear),
# with and without --no-fuse/--no-optimize; what the packager passes change; external data; the
# ONNX driver in fmt-inspect; hostile protobuf, external-data escapes and ops with no .nk form
# refused with their exit status and exact message (scripts/gen/onnx-hostile), nothing written.

bats_require_minimum_version 1.5.0
load helpers

FIX="$REPO_ROOT/tests/data/fixtures/nk"
FIX2="$REPO_ROOT/tests/data/fixtures/nk-convert"

setup_file() {
	HOSTILE="$BATS_FILE_TMPDIR/hostile"
	export HOSTILE
	"$REPO_ROOT/scripts/gen/onnx-hostile" "$HOSTILE"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# upstream_output FIXTURE.nk OUT: what upstream's converter wrote before its test embedder: the
# bytes before the TCAS block, with bit 0 (has tests) of the u16 flags at offset 10 cleared.
upstream_output() {
	local off flags
	off=$(fmt-inspect --json "$1" | jq '.format_info.tests.offset')
	head -c "$off" "$1" >"$2"
	flags=$(od -An -tu1 -j10 -N1 "$2" | tr -d ' ')
	printf "\\$(printf %o $((flags & ~1)))" | dd of="$2" bs=1 seek=10 conv=notrunc status=none
}

# twin DIR NAME [OPTIONS...]: fmt-convert DIR/NAME.onnx gives upstream's bytes.
twin() {
	local dir=$1 name=$2
	shift 2
	rm -f got.nk
	upstream_output "$dir/$name.nk" want.nk
	run --separate-stderr fmt-convert "$@" "$dir/$name.onnx" got.nk
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
	[ -z "$output" ] && [ -z "$stderr" ] || fail "output: $output / $stderr"
	cmp want.nk got.nk || fail "$name: not upstream's bytes"
}

@test "test_mlp.onnx converts to upstream's bytes" {
	twin "$FIX" test_mlp
	[ "$(stat -c %s got.nk)" -eq 224 ]
}

@test "mnist_cnn_dw.onnx converts to upstream's bytes (Transpose + Flatten, depthwise, pools, softmax)" {
	twin "$FIX" mnist_cnn_dw
	[ "$(stat -c %s got.nk)" -eq 837916 ]
}

@test "import_asym_depthwise_conv.onnx converts to upstream's bytes (pads 1,1,2,1 in the kw byte)" {
	twin "$FIX" import_asym_depthwise_conv
	[ "$(od -An -tx1 -j67 -N1 got.nk)" = " 01" ]
}

@test "import_mobilenet_uib.onnx converts to upstream's bytes (primitive layers: no residual)" {
	twin "$FIX2" import_mobilenet_uib
	[ "$(stat -c %s got.nk)" -eq 150992 ]
}

@test "import_resnet_basic_block.onnx converts to upstream's bytes (a resnet_basic_block)" {
	twin "$FIX2" import_resnet_basic_block
	[ "$(stat -c %s got.nk)" -eq 296704 ]
}

@test "import_convnextv2_block.onnx converts to upstream's bytes (a convnextv2_block)" {
	twin "$FIX2" import_convnextv2_block
	[ "$(stat -c %s got.nk)" -eq 61904 ]
}

@test "--no-optimize: every twin gives the same bytes (no packager pass applies to them)" {
	for n in test_mlp mnist_cnn_dw import_asym_depthwise_conv; do twin "$FIX" "$n" --no-optimize; done
	for n in import_mobilenet_uib import_resnet_basic_block import_convnextv2_block; do
		twin "$FIX2" "$n" --no-optimize
	done
}

@test "--no-fuse: the twins without a residual Add give the same bytes" {
	for n in test_mlp mnist_cnn_dw import_asym_depthwise_conv; do twin "$FIX" "$n" --no-fuse; done
	twin "$FIX2" import_mobilenet_uib --no-fuse --no-optimize
}

@test "--no-fuse: a ResNet or ConvNeXt V2 block's Add is refused (exit 5), nothing written" {
	run --separate-stderr fmt-convert --no-fuse "$FIX2/import_resnet_basic_block.onnx" out.nk
	[ "$status" -eq 5 ]
	assert_equal "$stderr" "fmt-convert: error: $FIX2/import_resnet_basic_block.onnx: Add node '/block/Add': a residual Add is converted only as part of a fused block (without --no-fuse)"
	run --separate-stderr fmt-convert --no-fuse "$FIX2/import_convnextv2_block.onnx" out.nk
	[ "$status" -eq 5 ]
	assert_equal "$stderr" "fmt-convert: error: $FIX2/import_convnextv2_block.onnx: LayerNormalization node '/block/norm/LayerNormalization': this op has no .nk form"
	[ -z "$(ls -A | grep -v '^separate-stderr-')" ] || fail "left behind: $(ls -A)"
}

@test "the converted twins pass the fixtures' embedded tests when the TCAS block is put back" {
	for n in test_mlp mnist_cnn_dw import_asym_depthwise_conv; do
		fmt-convert "$FIX/$n.onnx" "$n.nk"
		off=$(fmt-inspect --json "$FIX/$n.nk" | jq '.format_info.tests.offset')
		{ head -c 10 "$n.nk"; printf '\001'; tail -c +12 "$n.nk"; tail -c +$((off + 1)) "$FIX/$n.nk"; } >"$n-tested.nk"
		cmp "$n-tested.nk" "$FIX/$n.nk"
		run nk-run --test "$n-tested.nk"
		[ "$status" -eq 0 ]
	done
}

# ---- what the packager passes change (no upstream bytes: asserted by structure and values) ----

@test "a batch norm after a conv is folded into it; --no-optimize keeps both layers, same outputs" {
	fmt-convert "$HOSTILE/opt_conv_bn.onnx" opt.nk
	fmt-convert --no-optimize "$HOSTILE/opt_conv_bn.onnx" raw.nk
	run fmt-inspect --json opt.nk
	assert_equal "$(jq -c '[.format_info.layers[].kind]' <<<"$output")" '["conv2d"]'
	run fmt-inspect --json raw.nk
	assert_equal "$(jq -c '[.format_info.layers[].kind]' <<<"$output")" '["conv2d","batch_norm2d"]'
	in=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
	assert_equal "$(nk-run --input "$in" opt.nk | tail -n 1)" "$(nk-run --input "$in" raw.nk | tail -n 1)"
}

@test "two dense layers with no activation between are merged; --no-optimize keeps both" {
	fmt-convert "$HOSTILE/opt_dense_dense.onnx" opt.nk
	fmt-convert --no-optimize "$HOSTILE/opt_dense_dense.onnx" raw.nk
	run fmt-inspect --json opt.nk
	assert_equal "$(jq -c '[.format_info.layers[] | [.kind, .units]]' <<<"$output")" '[["dense",2]]'
	run fmt-inspect --json raw.nk
	assert_equal "$(jq -c '[.format_info.layers[] | [.kind, .units]]' <<<"$output")" '[["dense",4],["dense",2]]'
	assert_equal "$(nk-run --input 1,2,3 opt.nk | tail -n 1)" "Output: shape=[1, 2] values=[1.5000, 1.5000]"
	assert_equal "$(nk-run --input 1,2,3 raw.nk | tail -n 1)" "Output: shape=[1, 2] values=[1.5000, 1.5000]"
}

# ---- external data ----

@test "external data beside the model: read from its offset (W = 2 3 4 5)" {
	fmt-convert "$HOSTILE/external_ok.onnx" ext.nk
	run nk-run --input 1,1 ext.nk
	[ "$status" -eq 0 ]
	assert_line --index 1 "Output: shape=[1, 2] values=[5.2500, 9.2500]"
}

@test "external data of a model read from a pipe is refused (exit 5)" {
	run --separate-stderr fmt-convert - out.nk <"$HOSTILE/external_ok.onnx"
	[ "$status" -eq 5 ]
	assert_equal "$stderr" "fmt-convert: error: -: initializer 'W': external data needs the model as a file"
	[ ! -e out.nk ]
}

@test "hostile ONNX inputs: exact exit status and message, nothing written" {
	while IFS=$'\t' read -r file code msg; do
		run --separate-stderr fmt-convert "$HOSTILE/$file" out.nk
		[ "$status" -eq "$code" ] || fail "$file: exit $status, expected $code: $stderr"
		if [ "$code" -ne 0 ]; then
			assert_equal "$stderr" "fmt-convert: error: $HOSTILE/$file: $msg"
			[ -z "$output" ] || fail "$file: stdout: $output"
			[ ! -e out.nk ] || fail "$file: out.nk written"
		fi
		rm -f out.nk
	done <"$HOSTILE/cases.tsv"
	[ "$(wc -l <"$HOSTILE/cases.tsv")" -eq 34 ]
}

@test "a model of tensors only cannot become a .nk file (exit 5)" {
	fmt-convert "$FIX/test_mlp.onnx" t.safetensors
	run --separate-stderr fmt-convert t.safetensors t.nk
	[ "$status" -eq 5 ]
	assert_equal "$stderr" "fmt-convert: error: t.safetensors: safetensors holds tensors only: a .nk file is a network, made from a graph (an ONNX model)"
	[ ! -e t.nk ]
}

@test "--no-fuse and --no-optimize need a .nk output (exit 2)" {
	run --separate-stderr fmt-convert --no-fuse "$FIX/test_mlp.onnx" t.safetensors
	[ "$status" -eq 2 ]
	assert_equal "$stderr" "fmt-convert: error: --no-fuse needs .nk output
Try 'fmt-convert --help'."
	[ ! -e t.safetensors ]
}

@test "--dry-run writes nothing; --json says what was written" {
	run --separate-stderr fmt-convert --dry-run "$FIX/test_mlp.onnx" t.nk
	[ "$status" -eq 0 ]
	[ ! -e t.nk ]
	run --separate-stderr fmt-convert --dry-run --json "$FIX/test_mlp.onnx" t.nk
	[ "$status" -eq 0 ]
	assert_equal "$output" "{\"input\":\"$FIX/test_mlp.onnx\",\"output\":\"t.nk\",\"format\":\"nk\",\"dry_run\":true}"
	[ ! -e t.nk ]
	run --separate-stderr fmt-convert --json "$FIX/test_mlp.onnx" t.nk
	[ "$status" -eq 0 ]
	assert_equal "$output" "{\"input\":\"$FIX/test_mlp.onnx\",\"output\":\"t.nk\",\"format\":\"nk\",\"dry_run\":false}"
}

@test "a graph of 99,000 initializers and 4,000 nodes converts, or is refused, in linear time" {
	# Each node input was looked for among all the initializers, and each tensor among all the
	# nodes' outputs and inputs (its producer, its readers): a chain of 90 Gemm layers whose
	# weights come through 15 Identity nodes each took 7 s of CPU, 4,090 Adds 22 s. Indexed now.
	/usr/bin/python3 - <<'PY'
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
pre = "p" * 200
pad = [numpy_helper.from_array(np.array([0.0], np.float32), "%s%06d" % (pre, i)) for i in range(99000)]
def save(path, nodes, inits, x, y, shape):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
def chain(depth):
    rng = np.random.default_rng(7)
    inits, nodes, x = [], [], "x"
    for l in range(90):
        names = []
        for what, a in (("W", rng.standard_normal((4, 4))), ("B", rng.standard_normal(4))):
            name = "%s%s%d" % (pre, what, l)
            inits.append(numpy_helper.from_array(a.astype(np.float32), name))
            for d in range(depth):
                nodes.append(helper.make_node("Identity", [name], ["%s_%d" % (name, d)]))
                name = "%s_%d" % (name, d)
            names.append(name)
        nodes += [helper.make_node("Gemm", [x] + names, ["g%d" % l]), helper.make_node("Relu", ["g%d" % l], ["r%d" % l])]
        x = "r%d" % l
    return nodes, inits, x
nodes, inits, y = chain(0)
save("twin.onnx", nodes, inits, "x", y, [1, 4])
nodes, inits, y = chain(15)
save("chain.onnx", nodes, pad + inits, "x", y, [1, 4])
x = pre + "x"
save("adds.onnx", [helper.make_node("Add", [x, x], ["a%d" % i]) for i in range(4090)], pad, x, "a4089", [1, 1, 4, 4])
PY
	fmt-convert twin.onnx want.nk
	run_cpu_bounded 4 fmt-convert chain.onnx got.nk
	assert_success
	cmp want.nk got.nk
	run_cpu_bounded 4 fmt-convert adds.onnx out.nk
	[ "$status" -eq 5 ]
	assert_equal "$stderr" "fmt-convert: error: adds.onnx: Add node '(unnamed)': this Add closes no ResNet basic block, MobileNetV4 UIB or ConvNeXt V2 block"
	[ ! -e out.nk ]
}

# ---- the ONNX driver in fmt-inspect and fmt-verify ----

@test "fmt-inspect lists an ONNX model's initializers and ops" {
	run --separate-stderr fmt-inspect --json "$FIX/test_mlp.onnx"
	[ "$status" -eq 0 ]
	assert_equal "$(jq -c '[.format, .version, .tensor_count, .parameter_count]' <<<"$output")" '["onnx",12,4,12]'
	assert_equal "$(jq -c '[.tensors[] | [.name, .dtype, .shape]]' <<<"$output")" \
		'[["W0","F32",[2,2]],["B0","F32",[2]],["W1","F32",[2,2]],["B1","F32",[2]]]'
	assert_equal "$(jq -c '.format_info | [.input_shape, [.nodes[].op], .opsets]' <<<"$output")" \
		'[[1,2],["Gemm","Relu","Gemm"],[{"domain":"","version":13}]]'
	run fmt-verify "$FIX/test_mlp.onnx"
	[ "$status" -eq 0 ]
	assert_output "$FIX/test_mlp.onnx: ok (onnx, 4 tensors, 1 file, 379 bytes)"
}
