#!/usr/bin/env bats
# .nk files through the registry (fmt-inspect, fmt-verify) and nk-run: the fixtures' embedded
# tests, upstream's output layout, inputs, JSON, raw output, benchmarks, and one malformed file
# per loader rule (scripts/gen/nk-malformed) with its exact exit status and message.

bats_require_minimum_version 1.5.0
load helpers

FIX="$REPO_ROOT/tests/data/fixtures/nk"

setup_file() {
	NK="$BATS_FILE_TMPDIR/nk"
	export NK
	"$REPO_ROOT/scripts/gen/nk-malformed" "$NK"
	verify_cases "$NK"
	WORK="$BATS_FILE_TMPDIR/work"
	export WORK
	"$REPO_ROOT/scripts/gen/nk-work" "$WORK"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# ---- loader: one case per rule ----
@test "nk loader: spec_16_1" {
	check_verified "$NK" spec_16_1.nk
}

@test "nk loader: cnn" {
	check_verified "$NK" cnn.nk
}

@test "nk loader: cnn_tests" {
	check_verified "$NK" cnn_tests.nk
}

@test "nk loader: cnn_failing_test" {
	check_verified "$NK" cnn_failing_test.nk
}

@test "nk loader: cnn_some_failing" {
	check_verified "$NK" cnn_some_failing.nk
}

@test "nk loader: bad_magic" {
	check_verified "$NK" bad_magic.nk
}

@test "nk loader: version_2" {
	check_verified "$NK" version_2.nk
}

@test "nk loader: version_5" {
	check_verified "$NK" version_5.nk
}

@test "nk loader: network_kind_3" {
	check_verified "$NK" network_kind_3.nk
}

@test "nk loader: truncated_header" {
	check_verified "$NK" truncated_header.nk
}

@test "nk loader: zero_layers" {
	check_verified "$NK" zero_layers.nk
}

@test "nk loader: too_many_layers" {
	check_verified "$NK" too_many_layers.nk
}

@test "nk loader: too_many_tensors" {
	check_verified "$NK" too_many_tensors.nk
}

@test "nk loader: pair_counts_differ" {
	check_verified "$NK" pair_counts_differ.nk
}

@test "nk loader: input_rank_0" {
	check_verified "$NK" input_rank_0.nk
}

@test "nk loader: input_rank_disagrees" {
	check_verified "$NK" input_rank_disagrees.nk
}

@test "nk loader: input_shape_zero" {
	check_verified "$NK" input_shape_zero.nk
}

@test "nk loader: quant_flag_v3" {
	check_verified "$NK" quant_flag_v3.nk
}

@test "nk loader: unknown_kind" {
	check_verified "$NK" unknown_kind.nk
}

@test "nk loader: truncated_records" {
	check_verified "$NK" truncated_records.nk
}

@test "nk loader: bad_rank" {
	check_verified "$NK" bad_rank.nk
}

@test "nk loader: bad_dtype" {
	check_verified "$NK" bad_dtype.nk
}

@test "nk loader: int8_dtype_in_float_model" {
	check_verified "$NK" int8_dtype_in_float_model.nk
}

@test "nk loader: dims_disagree" {
	check_verified "$NK" dims_disagree.nk
}

@test "nk loader: truncated_catalog" {
	check_verified "$NK" truncated_catalog.nk
}

@test "nk loader: extra_bytes" {
	check_verified "$NK" extra_bytes.nk
}

@test "nk loader: truncated_payload" {
	check_verified "$NK" truncated_payload.nk
}

@test "nk loader: weights_bytes_unaligned" {
	check_verified "$NK" weights_bytes_unaligned.nk
}

@test "nk loader: weights_bytes_too_small" {
	check_verified "$NK" weights_bytes_too_small.nk
}

@test "nk loader: tcas_bad_magic" {
	check_verified "$NK" tcas_bad_magic.nk
}

@test "nk loader: tcas_zero_cases" {
	check_verified "$NK" tcas_zero_cases.nk
}

@test "nk loader: tcas_17_cases" {
	check_verified "$NK" tcas_17_cases.nk
}

@test "nk loader: tcas_name_len_0" {
	check_verified "$NK" tcas_name_len_0.nk
}

@test "nk loader: tcas_input_count_huge" {
	check_verified "$NK" tcas_input_count_huge.nk
}

@test "nk loader: tcas_truncated" {
	check_verified "$NK" tcas_truncated.nk
}

@test "nk loader: tcas_missing" {
	check_verified "$NK" tcas_missing.nk
}

@test "nk loader: conv_channel_mismatch" {
	check_verified "$NK" conv_channel_mismatch.nk
}

@test "nk loader: depthwise_channel_mismatch" {
	check_verified "$NK" depthwise_channel_mismatch.nk
}

@test "nk loader: zero_stride" {
	check_verified "$NK" zero_stride.nk
}

@test "nk loader: kernel_too_large" {
	check_verified "$NK" kernel_too_large.nk
}

@test "nk loader: dense_without_flatten" {
	check_verified "$NK" dense_without_flatten.nk
}

@test "nk loader: weight_count_mismatch" {
	check_verified "$NK" weight_count_mismatch.nk
}

@test "nk loader: missing_pairs" {
	check_verified "$NK" missing_pairs.nk
}

@test "nk loader: unused_pairs" {
	check_verified "$NK" unused_pairs.nk
}

@test "nk loader: tap_id_4" {
	check_verified "$NK" tap_id_4.nk
}

@test "nk loader: huge_arena" {
	check_verified "$NK" huge_arena.nk
}

@test "nk loader: input_too_large" {
	check_verified "$NK" input_too_large.nk
}

@test "nk loader: pafpn_without_taps" {
	check_verified "$NK" pafpn_without_taps.nk
}

@test "nk loader: head_too_many_convs" {
	check_verified "$NK" head_too_many_convs.nk
}

# §9: a decoupled head holds 4 + 2n pairs (the spec's formula says 3 + 2n; its own list, and
# upstream's loader, have stem, 2n convs and three predictions); the PAFPN 11 + 3(4 + 2n).
@test "nk loader: yolox_decoupled_head takes 4 + 2n pairs, 3 + 2n is refused (n = 0, 1, 2)" {
	for n in 0 1 2; do
		check_verified "$NK" "head_${n}_convs_$((4 + 2 * n))_pairs.nk"
		check_verified "$NK" "head_${n}_convs_$((3 + 2 * n))_pairs.nk"
	done
	run nk-run --json --random 1 "$NK/head_1_convs_6_pairs.nk"
	assert_success
	[ "$(jq -c .shape <<<"$output")" = '[6,6,7]' ]
}

@test "nk loader: yolox_pafpn_multiscale takes 11 + 3(4 + 2n) pairs, 11 + 3(3 + 2n) is refused" {
	check_verified "$NK" pafpn_1_conv_2_plus_29_pairs.nk
	check_verified "$NK" pafpn_1_conv_2_plus_26_pairs.nk
	run nk-run --json --random 1 "$NK/pafpn_1_conv_2_plus_29_pairs.nk"
	assert_success
	# (16 + 4 + 1) * H5 * W5 cells of 5 + classes values
	[ "$(jq '.values | length' <<<"$output")" -eq $(((16 + 4 + 1) * 2 * 2 * 6)) ]
}

@test "nk loader: uib_even_kernel_residual" {
	check_verified "$NK" uib_even_kernel_residual.nk
}

@test "nk loader: mlp_with_conv" {
	check_verified "$NK" mlp_with_conv.nk
}

@test "nk loader: int8_cnn" {
	check_verified "$NK" int8_cnn.nk
}

@test "nk loader: quan_bad_magic" {
	check_verified "$NK" quan_bad_magic.nk
}

@test "nk loader: quan_count_mismatch" {
	check_verified "$NK" quan_count_mismatch.nk
}

@test "nk loader: quan_scales_truncated" {
	check_verified "$NK" quan_scales_truncated.nk
}

@test "nk loader: int8_zero_output_scale" {
	check_verified "$NK" int8_zero_output_scale.nk
}

@test "nk loader: int8_bias_dtype_float" {
	check_verified "$NK" int8_bias_dtype_float.nk
}

@test "nk loader: int8_batchnorm" {
	check_verified "$NK" int8_batchnorm.nk
}

@test "nk loader: int8_asymmetric_padding" {
	check_verified "$NK" int8_asymmetric_padding.nk
}

@test "nk loader: the messages name the layer in nk-run too, and a bad magic is named" {
	run --separate-stderr nk-run --input 1 "$NK/bad_magic.nk"
	assert_equal "$status" 4
	[[ "$stderr" == *"not a .nk file (magic is not NKIT)"* ]]
	# --test: a malformed file is 4 (as fmt-verify --run-tests), still one failed case in the summary
	run --separate-stderr nk-run --test "$NK/kernel_too_large.nk"
	assert_equal "$status" 4
	[[ "$stderr" == *"layer 0 (conv2d): kernel height 3 is larger than the padded input"* ]]
	assert_equal "$output" "0 passed, 1 failed"
}

@test "nk-run: a valid network whose activations need more than 1 GiB is refused, not attempted" {
	run --separate-stderr nk-run --random 1 --max-values 134217728 "$NK/huge_arena.nk"
	assert_equal "$status" 5
	[[ "$stderr" == *"activation arena (at most 1073741824)"* ]]
	# by default its 4096x4096x4 input and output are refused first
	run --separate-stderr nk-run --random 1 "$NK/huge_arena.nk"
	assert_equal "$status" 5
	[[ "$stderr" == *"hold 134217728 values (67108864 in, 67108864 out): above the limit of 4194304 (--max-values raises it)" ]]
}

# ---- bounded work (issue 19 item 4) ----

HEAVY_MSG="layer 16 (conv2d): 243798937600 multiply-adds, 244182939044 for the network up to it: above the work limit of 17179869184 (--max-work raises it)"

@test "nk-run: a 17 KB network whose padding grows its map to 7778^2 is refused for its work before it runs (exit 5, the layer named)" {
	[ "$(stat -c %s "$WORK/heavy.nk")" -lt 20000 ]
	run --separate-stderr nk-run --random 1 "$WORK/heavy.nk"
	assert_equal "$status" 5
	assert_equal "$stderr" "nk-run: error: $WORK/heavy.nk: $HEAVY_MSG"
	assert_equal "$output" ""
	# --test: a refusal for work is not a failed case (exit 5, not 11)
	run --separate-stderr nk-run --test "$WORK/heavy.nk"
	assert_equal "$status" 5
	assert_equal "$output" "0 passed, 0 failed"
	assert_equal "$stderr" "nk-run: error: $WORK/heavy.nk: $HEAVY_MSG"
	run --separate-stderr nk-run --test --json "$WORK/heavy.nk" "$FIX/test_mlp.nk"
	assert_equal "$status" 5
	assert_equal "${lines[-1]}" '{"passed":3,"failed":0}'
	assert_equal "${stderr_lines[-1]}" "{\"tool\":\"nk-run\",\"level\":\"error\",\"file\":\"$WORK/heavy.nk\",\"error\":\"UnsupportedVersion\",\"exit\":5,\"message\":\"$HEAVY_MSG\"}"
	# --bench and --profile load the same way
	run --separate-stderr nk-run --bench 1 "$WORK/heavy.nk"
	assert_equal "$status" 5
}

@test "nk-run: the default limit is 2^34 multiply-adds per run: exactly 2^34 loads, 2^34 + 16781312 is refused" {
	run fmt-inspect --json "$WORK/at_limit.nk"
	assert_equal "$(jq '.format_info.multiply_adds' <<<"$output")" 17179869184
	# loaded (then: no embedded tests), never refused for its work
	run --separate-stderr nk-run --test "$WORK/at_limit.nk"
	assert_equal "$status" 11
	assert_equal "$stderr" "nk-run: error: $WORK/at_limit.nk: no embedded tests (no TCAS block)"
	run --separate-stderr nk-run --test "$WORK/over_limit.nk"
	assert_equal "$status" 5
	assert_equal "$stderr" "nk-run: error: $WORK/over_limit.nk: layer 0 (conv2d): 17196650496 multiply-adds, 17196650496 for the network up to it: above the work limit of 17179869184 (--max-work raises it)"
	run --separate-stderr nk-run --test --max-work 17196650496 "$WORK/over_limit.nk"
	assert_equal "$status" 11
	assert_equal "$stderr" "nk-run: error: $WORK/over_limit.nk: no embedded tests (no TCAS block)"
}

@test "nk-run --max-work N: the running count of the whole run against N, the layer that passes it named" {
	run nk-run --max-work 8 --input 1,1 "$FIX/test_mlp.nk"
	assert_success
	run --separate-stderr nk-run --max-work 7 --input 1,1 "$FIX/test_mlp.nk"
	assert_equal "$status" 5
	assert_equal "$stderr" "nk-run: error: $FIX/test_mlp.nk: layer 1 (dense): 4 multiply-adds, 8 for the network up to it: above the work limit of 7 (--max-work raises it)"
	run --separate-stderr nk-run --max-work 3 --input 1,1 "$FIX/test_mlp.nk"
	assert_equal "$stderr" "nk-run: error: $FIX/test_mlp.nk: layer 0 (dense): 4 multiply-adds, 4 for the network up to it: above the work limit of 3 (--max-work raises it)"
	for bad in 0 -1 1.5 abc 18446744073709551616; do
		run --separate-stderr nk-run --max-work "$bad" --input 1,1 "$FIX/test_mlp.nk"
		assert_equal "$status" 2
		assert_equal "${stderr_lines[0]}" "nk-run: error: --max-work needs a count of multiply-adds from 1"
	done
	run nk-run --max-work 18446744073709551615 --input 1,1 "$FIX/test_mlp.nk"
	assert_success
}

@test "fmt-verify --run-tests: the work limit holds through nk-run (exit 5), --max-work is passed to it" {
	run --separate-stderr fmt-verify --run-tests "$WORK/heavy.nk"
	assert_equal "$status" 5
	assert_equal "$stderr" "fmt-verify: error: $WORK/heavy.nk: nk-run could not run the embedded tests: $HEAVY_MSG"
	run --separate-stderr fmt-verify --run-tests --max-work 244182939043 "$WORK/heavy.nk"
	assert_equal "$status" 5
	[[ "$stderr" == *"above the work limit of 244182939043 (--max-work raises it)" ]]
	# raised to the network's count: nk-run loads it and checks its case (whose output count is wrong)
	run --separate-stderr fmt-verify --run-tests --max-work 244182939044 "$WORK/heavy.nk"
	assert_equal "$status" 11
	assert_equal "$stderr" "fmt-verify: error: $WORK/heavy.nk: embedded tests failed: 1 of 1 case (grown: output count differs from the model's); nk-run --test $WORK/heavy.nk shows each case"
	run --separate-stderr fmt-verify --run-tests --max-work 8 "$FIX/test_mlp.nk"
	assert_success
	run --separate-stderr fmt-verify --run-tests --max-work 7 "$FIX/test_mlp.nk"
	assert_equal "$status" 5
	# without --run-tests nothing runs: fmt-verify checks the file as before
	run fmt-verify "$WORK/heavy.nk"
	assert_success
	run --separate-stderr fmt-verify --max-work 8 "$FIX/test_mlp.nk"
	assert_equal "$status" 2
	assert_equal "${stderr_lines[0]}" "fmt-verify: error: --max-work goes with --run-tests"
	run --separate-stderr fmt-verify --run-tests --max-work 0 "$FIX/test_mlp.nk"
	assert_equal "$status" 2
	assert_equal "${stderr_lines[0]}" "fmt-verify: error: --max-work needs a count of multiply-adds from 1"
}

# ---- bounded input and output values ----

# rows_nk FILE ROWS: test_mlp.nk (376 bytes, 2 -> 2 -> 2) whose header says ROWS rows (batch).
rows_nk() {
	cp "$FIX/test_mlp.nk" "$1"
	/usr/bin/python3 -c 'import struct, sys; f = open(sys.argv[1], "r+b"); f.seek(12); f.write(struct.pack("<I", int(sys.argv[2])))' "$1" "$2"
}

VALUES_MSG="the network's input and output hold 66846724 values (33423362 in, 33423362 out): above the limit of 4194304 (--max-values raises it)"

@test "nk-run: a 376-byte MLP of 16711681 rows is refused for its values (exit 5) before anything is allocated; --max-values" {
	rows_nk rows.nk 16711681
	[ "$(stat -c %s rows.nk)" -eq 376 ]
	run fmt-verify rows.nk
	assert_success
	# it printed 648 MB in 26 s with 1.7 GB resident: now refused at load, within 100 MB
	run --separate-stderr bash -c "$(limit_as 100000) timeout 20 nk-run --json --random 1 rows.nk"
	assert_equal "$status" 5
	assert_equal "$output" "{\"file\":\"rows.nk\",\"ok\":false,\"exit\":5,\"error\":\"UnsupportedVersion\",\"message\":\"$VALUES_MSG\"}"
	assert_equal "$stderr" "{\"tool\":\"nk-run\",\"level\":\"error\",\"file\":\"rows.nk\",\"error\":\"UnsupportedVersion\",\"exit\":5,\"message\":\"$VALUES_MSG\"}"
	for mode in "--random 1" "--raw --random 1" "--bench 1" "--profile" "--input-file /dev/null"; do
		run --separate-stderr bash -c "$(limit_as 100000) timeout 20 nk-run $mode rows.nk | head -c 100"
		assert_equal "$output" ""
		assert_equal "$stderr" "nk-run: error: rows.nk: $VALUES_MSG"
	done
	# --test runs no input of the model's size: its cases (2 values) fail, nothing is refused
	run --separate-stderr bash -c "$(limit_as 1500000) nk-run --test rows.nk"
	assert_equal "$status" 11
	assert_equal "${lines[-1]}" "0 passed, 3 failed"
	# at the limit: 1048576 rows, 2^21 values in and 2^21 out
	rows_nk at.nk 1048576
	run bash -c "nk-run --raw --random 1 at.nk | wc -c"
	assert_success
	assert_output 8388608
	rows_nk over.nk 1048577
	run --separate-stderr nk-run --random 1 over.nk
	assert_equal "$status" 5
	assert_equal "$stderr" "nk-run: error: over.nk: the network's input and output hold 4194308 values (2097154 in, 2097154 out): above the limit of 4194304 (--max-values raises it)"
	run bash -c "nk-run --raw --max-values 4194308 --random 1 over.nk | wc -c"
	assert_success
	assert_output 8388616
	run --separate-stderr nk-run --max-values 3 --input 1,1 "$FIX/test_mlp.nk"
	assert_equal "$status" 5
	assert_equal "$stderr" "nk-run: error: $FIX/test_mlp.nk: the network's input and output hold 4 values (2 in, 2 out): above the limit of 3 (--max-values raises it)"
	run nk-run --max-values 4 --input 1,1 "$FIX/test_mlp.nk"
	assert_success
	for bad in 0 -1 abc 18446744073709551616; do
		run --separate-stderr nk-run --max-values "$bad" --input 1,1 "$FIX/test_mlp.nk"
		assert_equal "$status" 2
		assert_equal "${stderr_lines[0]}" "nk-run: error: --max-values needs a count of values from 1"
	done
}

@test "fmt-inspect --json: multiply-adds of one run, per layer and in total, for every layer kind" {
	work() { fmt-inspect --json "$1" | jq -c '[.format_info.multiply_adds, [.format_info.layers[] | .multiply_adds]]'; }
	# dense 2x2 twice
	assert_equal "$(work "$FIX/test_mlp.nk")" '[8,[4,4]]'
	# 1x1 conv x 32 at 28^2; dw 3x3 x 32 at 26^2; pool 2x2 taps x 13^2 x 32; ...; flatten 0
	assert_equal "$(work "$FIX/mnist_cnn_dw.nk")" '[869696,[25088,194688,21632,346112,69696,6400,0,204800,1280]]'
	assert_equal "$(work "$FIX/mnist_cnn_dw_int8.nk")" '[869696,[25088,194688,21632,346112,69696,6400,0,204800,1280]]'
	# ConvNeXt c=2 at 16 positions: (98 + 2 + 16 + 8 + 16) x 16
	assert_equal "$(work "$FIX/convnextv2_atto_block.nk")" '[2240,[2240]]'
	# UIB 4 -> 8 -> 4, middle dw 3: (32 + 8 + 72 + 8 + 32 + 4) x 16
	assert_equal "$(work "$FIX/mobilenetv4_small_uib.nk")" '[2496,[2496]]'
	# LN 2 x 36; ResNet 2 -> 4 stride 2: 236 x 9; head in 4, hidden 3, 2 classes, 1 conv: 195 x 9
	assert_equal "$(work "$NK/summary_kinds.nk")" '[3951,[72,2124,1755]]'
	# PAFPN (A = 4): laterals and dw/pw pairs 2584, heads 88 x (64 + 16 + 4)
	assert_equal "$(work "$NK/pafpn_1_conv_2_plus_29_pairs.nk")" '[11272,[0,864,0,432,9976]]'
	assert_equal "$(work "$WORK/heavy.nk" | jq -c '[.[0], .[1][16]]')" '[244182939044,243798937600]'
}

# ---- fmt-inspect ----

@test "fmt-inspect: upstream's network summary is the text form" {
	run fmt-inspect "$FIX/test_mlp.nk"
	assert_success
	assert_output "=====================================================
Network Summary
=====================================================

Name        : test_mlp
Type        : MLP
Version     : 3

Input Shape : [1, 2]

Layers (2)
-----------------------------------------------------
  [0] Dense units=2 activation=relu
  [1] Dense units=2 activation=none
-----------------------------------------------------
Input elements : 2
Output elements: 2
Weight floats  : 12
====================================================="
}

@test "fmt-inspect: summary lines of depthwise (raw kw byte), UIB, ConvNeXt and int8 models" {
	run fmt-inspect "$FIX/import_asym_depthwise_conv.nk"
	assert_success
	assert_line "  [0] DepthwiseConv2D kernel=3x1 stride=1 channels=2 pad=1,1 activation=none"
	assert_line "Output elements: 84"
	run fmt-inspect "$FIX/mobilenetv4_small_uib.nk"
	assert_line "  [0] MobilenetV4Uib in=4 out=4 start_dw=0 middle_dw=3 stride=1 expand=2"
	run fmt-inspect "$FIX/convnextv2_atto_block.nk"
	assert_line "  [0] ConvNeXtV2Block channels=2 eps=1e-06"
	assert_line "Weight floats  : 162"
	run fmt-inspect "$FIX/mnist_cnn_dw_int8.nk"
	assert_line "Version     : 4"
	assert_line "  [8] Dense units=10 activation=softmax"
	assert_line "Weight floats  : 52586"
}

@test "fmt-inspect: §15.2 summary of a CNN, and the lines of LayerNorm, ResNet, YOLOX head, taps, PAFPN" {
	run fmt-inspect "$FIX/mnist_cnn_dw.nk"
	assert_success
	assert_output "=====================================================
Network Summary
=====================================================

Name        : mnist_cnn_dw
Type        : CNN
Version     : 3

Input Shape : [28, 28, 1]

Layers (9)
-----------------------------------------------------
  [0] Conv2D kernel=1 stride=1 filters=32 pad=0,0 activation=relu
  [1] DepthwiseConv2D kernel=3x3 stride=1 channels=32 pad=0,0 activation=relu
  [2] MaxPool2D pool=2 stride=2
  [3] Conv2D kernel=1 stride=1 filters=64 pad=0,0 activation=relu
  [4] DepthwiseConv2D kernel=3x3 stride=1 channels=64 pad=0,0 activation=relu
  [5] MaxPool2D pool=2 stride=2
  [6] Flatten
  [7] Dense units=128 activation=relu
  [8] Dense units=10 activation=softmax
-----------------------------------------------------
Input elements : 784
Output elements: 10
Weight floats  : 209354
====================================================="
	run fmt-inspect "$NK/summary_kinds.nk"
	assert_success
	assert_line "  [0] LayerNorm2d channels=2 eps=0.001"
	assert_line "  [1] ResNetBasicBlock in=2 out=4 stride=2"
	assert_line "  [2] YoloxDecoupledHead in=4 hidden=3 classes=2 convs=1"
	assert_line "Output elements: 63"
	run fmt-inspect "$REPO_ROOT/tests/data/nk/yolox_pafpn.nk"
	assert_success
	assert_line "Name        : yolox_pafpn"
	assert_line "  [0] FeatureTap channels=8 tap_id=0"
	assert_line "  [2] FeatureTap channels=12 tap_id=1"
	assert_line "  [4] YoloxPafpnMultiscale c3=8 c4=12 c5=16 hidden=8 classes=2 convs=1"
	# (16 + 4 + 1) cells of a 2x2 C5 x (5 + 2 classes)
	assert_line "Output elements: 588"
	# payload bytes / 4: 2 convs, 3 laterals, 4 dw/pw pairs, 3 heads of 6 pairs
	want=$(( (12*9*8 + 12) + (16*9*12 + 16) + (8*8 + 8) + (8*12 + 8) + (8*16 + 8) + 4 * (8*9 + 8 + 64 + 8) + 3 * ((64 + 8) + 2 * (8*9*8 + 8) + (2*8 + 2) + (4*8 + 4) + (8 + 1)) ))
	assert_line "Weight floats  : $want"
}

@test "fmt-inspect --json: header, decoded padding, activations by name, catalog, QUAN, TCAS" {
	run fmt-inspect --json "$FIX/import_asym_depthwise_conv.nk"
	assert_success
	[ "$(jq -c '.format_info.layers[0].padding' <<<"$output")" = '{"top":1,"left":1,"bottom":2,"right":1}' ]
	[ "$(jq -c '.format_info.layers[0].kernel' <<<"$output")" = '[3,3]' ]
	[ "$(jq -r '.format_info.layers[0].activation' <<<"$output")" = none ]
	[ "$(jq -c '.format_info.output_shape' <<<"$output")" = '[7,6,2]' ]
	[ "$(jq -c '.format_info.tests | [.count, .int8_inputs, .cases[0].inputs]' <<<"$output")" = '[3,false,72]' ]
	[ "$(jq -r '.format' <<<"$output")" = nk ]
	run fmt-inspect --json "$FIX/mnist_cnn_dw_int8.nk"
	[ "$(jq -c '.format_info.header | [.version, .flags, .num_layers]' <<<"$output")" = '[4,7,9]' ]
	[ "$(jq -c '.format_info.quant | [.per_channel, (.records | length), (.records[0].channel_scales | length), .records[0].input_zero_point]' <<<"$output")" = '[true,6,32,-128]' ]
	[ "$(jq -c '[.format_info.catalog.weights[0].dtype, .format_info.catalog.biases[0].dtype]' <<<"$output")" = '["int8","int32"]' ]
	[ "$(jq -r '.format_info.layers[7].activation' <<<"$output")" = relu ]
	[ "$(jq -r '.format_info.tests.int8_inputs' <<<"$output")" = true ]
}

@test "fmt-inspect --tensors: catalog tensors named after their layer and role" {
	run fmt-inspect --tensors "$FIX/mobilenetv4_small_uib.nk"
	assert_success
	assert_line --partial "layers.0.expand.weight        F32      [8, 1, 1, 4]     360           128"
	assert_line --partial "layers.0.project_bn.bias"
	run fmt-inspect --tensors "$FIX/mnist_cnn_dw_int8.nk"
	assert_line --partial "layers.1.weight"
	assert_line --regexp "layers.0.weight +I8 "
	assert_line --regexp "layers.0.bias +I32 "
}

# ---- fmt-verify ----

@test "fmt-verify --run-tests: passing, failing and missing embedded tests" {
	run fmt-verify --run-tests "$FIX"/*.nk
	assert_success
	run --separate-stderr fmt-verify --run-tests "$NK/cnn_failing_test.nk"
	assert_equal "$status" 11
	[[ "$stderr" == *"embedded tests failed"* ]]
	run --separate-stderr fmt-verify --run-tests "$NK/cnn.nk"
	assert_equal "$status" 11
	run fmt-verify "$NK/cnn_failing_test.nk"
	assert_success
	# several files: every one reported, the exit status the highest; --json per file
	run --separate-stderr fmt-verify --run-tests --json "$NK/cnn_failing_test.nk" "$FIX/test_mlp.nk" "$NK/bad_magic.nk"
	assert_equal "$status" 11
	[ "$(jq -sc '[.[] | [.ok, .error, .exit]]' <<<"$output")" = '[[false,"TestFailed",11],[true,null,null],[false,"InvalidFormat",4]]' ]
	[[ "$stderr" == *'"error":"TestFailed","exit":11'* ]]
	# the tests run in process (the library's .nk runtime): fmt-verify alone, without nk-run
	# beside it or on PATH, runs them
	mkdir bin && cp "$FMTKIT_BIN/fmt-verify" bin/
	run --separate-stderr env PATH=/usr/bin:/bin bin/fmt-verify --run-tests "$FIX/test_mlp.nk" "$NK/cnn_failing_test.nk"
	assert_equal "$status" 11
	assert_equal "${lines[0]}" "$FIX/test_mlp.nk: ok (nk, 4 tensors, 1 file, 376 bytes, 3 embedded test cases passed)"
	[[ "$stderr" == *"$NK/cnn_failing_test.nk: embedded tests failed: 1 of 1 case (off by one: "*'); nk-run --test '"$NK/cnn_failing_test.nk shows each case" ]]
}

@test "fmt-verify --run-tests: case counts per file, and per failing case what differed (text and --json)" {
	# the fixtures: every case counted, none failing
	run --separate-stderr fmt-verify --run-tests --json "$FIX"/*.nk
	assert_success
	[ "$(jq -rc '[(.file | sub(".*/"; "")), .tests.run, .tests.passed, .tests.failed, (.tests.failures | length)] | @csv' <<<"$output")" = '"cnn_extended_ops.nk",4,4,0,0
"convnextv2_atto_block.nk",1,1,0,0
"import_asym_depthwise_conv.nk",3,3,0,0
"mnist_cnn_dw.nk",10,10,0,0
"mnist_cnn_dw_int8.nk",10,10,0,0
"mobilenetv4_small_uib.nk",1,1,0,0
"test_mlp.nk",3,3,0,0' ]
	[ "$(jq -c 'keys_unsorted' <<<"${lines[-1]}")" = '["file","ok","format","files","tensors","bytes","tests"]' ]
	run fmt-verify --run-tests "$FIX/test_mlp.nk" "$FIX/convnextv2_atto_block.nk"
	assert_success
	assert_output "$FIX/test_mlp.nk: ok (nk, 4 tensors, 1 file, 376 bytes, 3 embedded test cases passed)
$FIX/convnextv2_atto_block.nk: ok (nk, 10 tensors, 1 file, 1264 bytes, 1 embedded test case passed)"
	# without --run-tests, and for formats without tests, no "tests" member
	run fmt-verify --json "$FIX/test_mlp.nk"
	[ "$(jq 'has("tests")' <<<"$output")" = false ]
	run fmt-verify --run-tests --json "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
	assert_success
	[ "$(jq 'has("tests")' <<<"$output")" = false ]
	# three cases: one passes, one is 0.5 off (tolerance 1e-4), one's label is not the argmax
	run --separate-stderr fmt-verify --run-tests --json "$NK/cnn_some_failing.nk"
	assert_equal "$status" 11
	[ "$(jq -c '[.ok, .error, .exit, .tests.run, .tests.passed, .tests.failed]' <<<"$output")" = '[false,"TestFailed",11,3,1,2]' ]
	[ "$(jq -c '[.tests.failures[] | [.case, .name, .reason, (.max_error * 1000 | round), .tolerance < 0.0001001, .argmax, .expected_argmax]]' <<<"$output")" = \
		'[[1,"half off","error above the tolerance",500,true,1,1],[2,"wrong label","argmax differs from the label",0,true,1,2]]' ]
	[ "$(jq -c '.tests.failures[0] | keys_unsorted' <<<"$output")" = '["case","name","reason","max_error","tolerance","argmax","expected_argmax"]' ]
	[ "$(jq -r .message <<<"$output")" = "embedded tests failed: 2 of 3 cases (half off: error above the tolerance; wrong label: argmax differs from the label); nk-run --test $NK/cnn_some_failing.nk shows each case" ]
	# stderr: fmt-verify's object only (no text line with --json); nothing of nk-run passed through
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
	[ "$(jq -c '[.tool, .level, .error, .exit]' <<<"$stderr")" = '["fmt-verify","error","TestFailed",11]' ]
	[[ "$stderr" != *"nk-run: error"* ]]
	# the text: nothing on stdout, the failing cases on stderr
	run --separate-stderr fmt-verify --run-tests "$NK/cnn_some_failing.nk"
	assert_equal "$status" 11
	assert_output ""
	[ "$stderr" = "fmt-verify: error: $NK/cnn_some_failing.nk: embedded tests failed: 2 of 3 cases (half off: error above the tolerance; wrong label: argmax differs from the label); nk-run --test $NK/cnn_some_failing.nk shows each case" ]
	# one case, failing; and a .nk without tests: no case run
	run --separate-stderr fmt-verify --run-tests --json "$NK/cnn_failing_test.nk" "$NK/cnn.nk" "$FIX/test_mlp.nk"
	assert_equal "$status" 11
	[ "$(jq -sc '[.[] | [.exit, .tests.run, .tests.passed, .tests.failed, [.tests.failures[] | .name]]]' <<<"$output")" = \
		'[[11,1,0,1,["off by one"]],[11,0,0,0,[]],[null,3,3,0,[]]]' ]
	[ "$(jq -sr '.[1].message' <<<"$output")" = "no embedded tests (no TCAS block)" ]
	# -q: nothing printed, the exit status tells
	run --separate-stderr fmt-verify --run-tests -q "$NK/cnn_some_failing.nk"
	assert_equal "$status" 11
	assert_output ""
}

# ---- nk-run --test ----

@test "nk-run --test: every embedded case of the six fixtures and mnist_cnn_dw passes" {
	run nk-run --test "$FIX"/*.nk
	assert_success
	assert_line "PASS 2-layer forward (max error 0, tolerance 1e-05, argmax 0)"
	assert_line --regexp "^PASS MNIST CNN-DW digit 7 \(test idx 0\) \(max error .*, argmax 7, expected 7\)$"
	assert_line --regexp "^PASS ConvNeXt V2 Atto block \(hand\) \(max error [0-9.e+-]+, tolerance 1e-05, argmax 17\)$"
	assert_line "$FIX/mnist_cnn_dw_int8.nk: 10 cases, tolerance 0.08 (int8: argmax only)"
	[ "${lines[-1]}" = "32 passed, 0 failed" ]
	[ "$(grep -c '^PASS ' <<<"$output")" -eq 32 ]
}

@test "nk-run --test: a failing case is FAIL with its error, exit 11; --json per case" {
	run --separate-stderr nk-run --test "$NK/cnn_failing_test.nk" "$FIX/test_mlp.nk"
	assert_equal "$status" 11
	[[ "$output" == *"FAIL off by one: error above the tolerance (max error 1, tolerance 0.0001"* ]]
	[ "${lines[-1]}" = "3 passed, 1 failed" ]
	[[ "$stderr" == *"1 of 1 embedded test cases failed"* ]]
	run --separate-stderr nk-run --test --json "$NK/cnn_failing_test.nk"
	assert_equal "$status" 11
	[ "$(head -n1 <<<"$output" | jq -c '[.name, .pass, (.max_error * 1000 | round), .reason]')" = '["off by one",false,1000,"error above the tolerance"]' ]
	[ "$(tail -n1 <<<"$output")" = '{"passed":0,"failed":1}' ]
	run --separate-stderr nk-run --test "$NK/cnn.nk"
	assert_equal "$status" 11
	[[ "$stderr" == *"no embedded tests"* ]]
	run nk-run --test -q "$FIX/test_mlp.nk"
	assert_success
	assert_output "3 passed, 0 failed"
}

@test "nk-run --test: a file that fails before any case runs exits with its own status (3, 4), not 11, as fmt-verify --run-tests" {
	make_samples
	# it still counts as one failed case in the summary (upstream, §14)
	run --separate-stderr nk-run --test missing.nk
	assert_equal "$status" 3
	assert_equal "$stderr" "nk-run: error: missing.nk: cannot open: No such file or directory"
	assert_equal "$output" "0 passed, 1 failed"
	run --separate-stderr nk-run --test /dev/zero
	assert_equal "$status" 3
	run --separate-stderr nk-run --test "$SAMPLES/tiny.safetensors"
	assert_equal "$status" 4
	assert_equal "$stderr" "nk-run: error: $SAMPLES/tiny.safetensors: not a .nk file (magic is not NKIT)"
	# --json: the process exits with the status its record gives
	run --separate-stderr nk-run --test --json "$SAMPLES/tiny.safetensors"
	assert_equal "$status" 4
	assert_equal "$output" '{"file":"'"$SAMPLES"'/tiny.safetensors","ok":false,"exit":4,"error":"InvalidFormat","message":"not a .nk file (magic is not NKIT)"}
{"passed":0,"failed":1}'
	for f in missing.nk /dev/zero "$NK/bad_magic.nk" "$NK/truncated_header.nk"; do
		run fmt-verify --run-tests "$f"
		want=$status
		run nk-run --test "$f"
		assert_equal "$status" "$want"
		[ "$want" = 3 ] || [ "$want" = 4 ]
	done
	# several files: the highest status; a failed case (11) is above 3 and 4
	run --separate-stderr nk-run --test missing.nk "$SAMPLES/tiny.safetensors" "$FIX/test_mlp.nk"
	assert_equal "$status" 4
	assert_equal "${lines[-1]}" "3 passed, 2 failed"
	run --separate-stderr nk-run --test --json missing.nk "$NK/cnn_failing_test.nk"
	assert_equal "$status" 11
	assert_equal "$(jq -sc '[.[] | [.exit, .pass, .failed]]' <<<"$output")" '[[3,null,null],[null,false,null],[11,null,null],[null,null,2]]'
}

# nan.nk: errors 0, NaN, 0 against an infinite tolerance; nantol.nk: an error of 1 against a NaN
# tolerance (a 1x1 depthwise convolution of weight 1: the output is the input)
nan_cases() {
	/usr/bin/python3 -c '
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import nkgen as g
ident = ([g.depthwise(1, 1, 1, 3)], [(np.ones((3, 1, 1), dtype=np.float32), np.zeros(3, dtype=np.float32))])
g.write_nk("nan.nk", 2, (1, 1, 3), *ident, cases=[("nan out", -1, [5, float("nan"), 1], [5, 0, 1])],
           tolerance=float("inf"))
g.write_nk("nantol.nk", 2, (1, 1, 3), *ident, cases=[("off", -1, [5, 1, 1], [5, 0, 1])], tolerance=float("nan"))' \
		"$REPO_ROOT/tests/interop"
}

@test "nk-run --test: a NaN error is the case's max_error (it was the last finite one); a NaN tolerance passes no case (§14)" {
	nan_cases
	run --separate-stderr nk-run --test --json nan.nk
	assert_equal "$status" 11
	assert_line --index 0 '{"file":"nan.nk","case":0,"name":"nan out","pass":false,"max_error":"nan","tolerance":"inf","argmax":1,"expected_argmax":0,"label":-1,"reason":"error above the tolerance"}'
	run --separate-stderr nk-run --test --json nantol.nk
	assert_equal "$status" 11
	assert_line --index 0 '{"file":"nantol.nk","case":0,"name":"off","pass":false,"max_error":1.0,"tolerance":"nan","argmax":0,"expected_argmax":0,"label":-1,"reason":"error above the tolerance"}'
	run --separate-stderr fmt-verify --run-tests nantol.nk
	assert_equal "$status" 11
	# text: NaN as the project's text writes it (it was printf's "nan")
	run --separate-stderr nk-run --test nan.nk nantol.nk
	assert_equal "$status" 11
	assert_output "nan.nk: 1 case, tolerance inf
FAIL nan out: error above the tolerance (max error NaN, tolerance inf, argmax 1)
nantol.nk: 1 case, tolerance NaN
FAIL off: error above the tolerance (max error 1, tolerance NaN, argmax 0)
0 passed, 2 failed"
}

@test "fmt-verify --run-tests --json and fmt-inspect --json of a .nk: NaN and infinities are \"nan\", \"inf\" (fmtkit(7)), not null" {
	nan_cases
	run --separate-stderr fmt-verify --run-tests --json nan.nk
	assert_equal "$status" 11
	assert_equal "$(jq -c .tests.failures <<<"$output")" '[{"case":0,"name":"nan out","reason":"error above the tolerance","max_error":"nan","tolerance":"inf","argmax":1,"expected_argmax":0}]'
	run --separate-stderr fmt-verify --run-tests --json nantol.nk
	assert_output --partial '"failures":[{"case":0,"name":"off","reason":"error above the tolerance","max_error":1.0,"tolerance":"nan",'
	run fmt-inspect --json nan.nk
	assert_success
	assert_output --partial '"tests":{"offset":144,"count":1,"tolerance":"inf","int8_inputs":false,'
	run fmt-inspect --json nantol.nk
	assert_output --partial '"tests":{"offset":144,"count":1,"tolerance":"nan","int8_inputs":false,'
}

# ---- nk-run: inputs and outputs ----

@test "nk-run: upstream's two lines (§16.1: (1, 1) -> (3.5, 6.5)); -v adds the summary" {
	run nk-run "$NK/spec_16_1.nk" --input 1,1
	assert_success
	assert_output "Input: shape=[1, 2] values=[1.0000, 1.0000]
Output: shape=[1, 2] values=[3.5000, 6.5000]"
	run nk-run -v "$NK/spec_16_1.nk" --input=1,1
	assert_line --index 1 "Network Summary"
	assert_line "Output: shape=[1, 2] values=[3.5000, 6.5000]"
	run nk-run "$FIX/import_asym_depthwise_conv.nk" --random 1
	assert_line --partial "Output: shape=[7, 6, 2] values=["
}

@test "nk-run --input: separators are runs of ',' and ' ', decimal numbers (inf, nan too) as upstream's parse reads them" {
	run nk-run "$NK/spec_16_1.nk" --input " ,1e0  +2.0e0,, "
	assert_success
	assert_line "Output: shape=[1, 2] values=[5.5000, 10.5000]"
	# hexadecimal (strtof's, which upstream refuses) and numbers beyond float32 (strtof: inf)
	# are usage errors naming the value (they were read as 16, 2 and inf)
	local v msg
	while IFS='|' read -r v msg; do
		run --separate-stderr nk-run "$NK/spec_16_1.nk" --input "1,$v"
		assert_equal "$status" 2
		assert_equal "$stderr" "nk-run: error: $NK/spec_16_1.nk: Invalid --input values: '$v' $msg"
		assert_equal "$output" ""
	done <<'EOF2'
0x10|is not a decimal number (hexadecimal is not taken)
0x1p1|is not a decimal number (hexadecimal is not taken)
-0X1|is not a decimal number (hexadecimal is not taken)
1e999|is beyond float32's range (largest 3.4028235e+38)
-1e39|is beyond float32's range (largest 3.4028235e+38)
EOF2
	# inf, nan, a value that rounds to 0: numbers, printed as the project prints them (NaN,
	# not printf's -nan)
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input "1e-50,inf"
	assert_success
	assert_output "Input: shape=[1, 2] values=[0.0000, inf]
Output: shape=[1, 2] values=[inf, inf]"
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input "-nan,NaN"
	assert_success
	assert_output "Input: shape=[1, 2] values=[NaN, NaN]
Output: shape=[1, 2] values=[NaN, NaN]"
	run --separate-stderr nk-run --json "$NK/spec_16_1.nk" --input "-nan,1"
	assert_equal "$(jq -c .values <<<"$output")" '["nan","nan"]'
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input 1,x
	assert_equal "$status" 2
	[[ "$stderr" == *"Invalid --input values: 'x' is not a number"* ]]
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input 1,2,3
	assert_equal "$status" 2
	[[ "$stderr" == *"Input has 3 values but model expects 2"* ]]
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input " , "
	assert_equal "$status" 2
	[[ "$stderr" == *"no numbers"* ]]
	run --separate-stderr nk-run "$NK/spec_16_1.nk"
	assert_equal "$status" 2
	[[ "$stderr" == *"Missing required --input"* ]]
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input 1,1 --random 2
	assert_equal "$status" 2
}

@test "nk-run: --input-json, --input-file (JSON, raw float32, stdin)" {
	run nk-run "$NK/spec_16_1.nk" --input-json '[[2, -1]]'
	assert_line "Output: shape=[1, 2] values=[0.5000, 1.5000]"
	printf '[2, -1]\n' >in.json
	run nk-run "$NK/spec_16_1.nk" --input-file in.json
	assert_line "Output: shape=[1, 2] values=[0.5000, 1.5000]"
	printf '\x00\x00\x00\x40\x00\x00\x80\xbf' >in.f32
	run nk-run "$NK/spec_16_1.nk" --input-file in.f32
	assert_line "Output: shape=[1, 2] values=[0.5000, 1.5000]"
	run bash -c "nk-run '$NK/spec_16_1.nk' --input-file - <in.f32"
	assert_line "Output: shape=[1, 2] values=[0.5000, 1.5000]"
	printf 'abc' >bad.bin
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input-file bad.bin
	assert_equal "$status" 4
	[[ "$stderr" == *"3 bytes: neither 2 raw float32 values (8 bytes) nor a JSON array"* ]]
	run --separate-stderr nk-run "$NK/spec_16_1.nk" --input-json '[1, "a"]'
	assert_equal "$status" 4
}

@test "nk-run: MLPs with batch > 1 (rows independent; softmax over all batch x units values, upstream)" {
	run nk-run "$NK/mlp_batch3.nk" --input "1,1 2,-1 0,0"
	assert_success
	assert_output "Input: shape=[3, 2] values=[1.0000, 1.0000, 2.0000, -1.0000, 0.0000, 0.0000]
Output: shape=[3, 2] values=[3.5000, 6.5000, 0.5000, 1.5000, 0.5000, -0.5000]"
	run nk-run --json "$NK/mlp_batch3.nk" --input-json '[[1, 1], [2, -1], [0, 0]]'
	[ "$(jq -c '[.input_shape, .shape, .values, .argmax]' <<<"$output")" = '[[3,2],[3,2],[3.5,6.5,0.5,1.5,0.5,-0.5],1]' ]
	run bash -c "nk-run --raw '$NK/mlp_batch3.nk' --input '1,1 2,-1 0,0' | od -An -tx1 -w24 | tr -s ' '"
	assert_output " 00 00 60 40 00 00 d0 40 00 00 00 3f 00 00 c0 3f 00 00 00 3f 00 00 00 bf"
	# logits (0.5, -0.5) on both rows: e^0.5 / (2 e^0.5 + 2 e^-0.5) = 0.3655, not 0.7311 per row
	run nk-run "$NK/mlp_batch2_softmax.nk" --input "0 0 0 0"
	assert_line "Output: shape=[2, 2] values=[0.3655, 0.1345, 0.3655, 0.1345]"
	run --separate-stderr nk-run "$NK/mlp_batch3.nk" --input "1,1 2,-1"
	assert_equal "$status" 2
	[[ "$stderr" == *"Input has 4 values but model expects 6"* ]]
	run nk-run --bench 3 --profile "$NK/mlp_batch3.nk"
	assert_success
	assert_line --regexp "^  \[0\] dense .* \[3, 2\]$"
}

@test "nk-run --json: shape, values, argmax, top-k; --top needs --json" {
	run nk-run --json --top 2 "$NK/spec_16_1.nk" --input 1,1
	assert_success
	[ "$(jq -c '[.shape, .values, .argmax, .dtype]' <<<"$output")" = '[[1,2],[3.5,6.5],1,"float32"]' ]
	[ "$(jq -c '.top' <<<"$output")" = '[{"index":1,"value":6.5},{"index":0,"value":3.5}]' ]
	[ "$(jq -r '.time_ms | type' <<<"$output")" = number ]
	run --separate-stderr nk-run --top 2 "$NK/spec_16_1.nk" --input 1,1
	assert_equal "$status" 2
}

@test "nk-run --json: NaN outputs are \"nan\" (fmtkit(7)); argmax is the first NaN and --top ranks NaN first, as numpy" {
	/usr/bin/python3 -c '
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import nkgen as g
g.write_nk("id3.nk", 2, (1, 1, 3), [g.depthwise(1, 1, 1, 3)],
           [(np.ones((3, 1, 1), dtype=np.float32), np.zeros(3, dtype=np.float32))])' \
		"$REPO_ROOT/tests/interop"
	# a 1x1 depthwise convolution of weight 1 per channel: each output is its input.
	# np.argmax([5, nan, nan]) == 1; descending order with NaN as the largest (np.sort puts it last)
	run nk-run --json --top 3 id3.nk --input 5,nan,nan
	assert_success
	assert_output --partial '"values":[5.0,"nan","nan"],"argmax":1,'
	assert_equal "$(jq -c '[.values, .argmax, .top]' <<<"$output")" \
		'[[5,"nan","nan"],1,[{"index":1,"value":"nan"},{"index":2,"value":"nan"},{"index":0,"value":5}]]'
	run nk-run --json --top 2 id3.nk --input 1,inf,-inf
	assert_equal "$(jq -c '[.values, .argmax, .top]' <<<"$output")" \
		'[[1,"inf","-inf"],1,[{"index":1,"value":"inf"},{"index":0,"value":1}]]'
	run nk-run --json --top 3 id3.nk --input 2,-1,nan
	assert_equal "$(jq -c '[.argmax, [.top[].index]]' <<<"$output")" '[2,[2,0,1]]'
	# every output NaN (inf - inf in the second layer of test_mlp.nk): argmax 0, --top lists K
	run nk-run --json --top 2 "$FIX/test_mlp.nk" --input inf,1
	assert_equal "$(jq -c '[.values, .argmax, .top]' <<<"$output")" \
		'[["nan","nan"],0,[{"index":0,"value":"nan"},{"index":1,"value":"nan"}]]'
	# the text keeps upstream's %.4f; NaN is "NaN" as the project's text (and Rust's {:.4}) writes
	# it, not printf's "nan" or "-nan"
	run nk-run id3.nk --input 5,nan,-inf
	assert_line "Output: shape=[1, 1, 3] values=[5.0000, NaN, -inf]"
}

@test "nk-run --json --profile: one JSON object per run, its profile a member" {
	run --separate-stderr nk-run --json --profile --random 1 "$FIX/mnist_cnn_dw.nk"
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_equal "$(jq -c '[.shape, (.values | length), .profile.runs, (.profile.layers | length), .profile.layers[1].kind,
		.profile.layers[1].output_shape, (.profile | has("file"))]' <<<"$output")" '[[1,10],10,1,9,"depthwise_conv2d",[26,26,32],false]'
	assert_equal "$(jq -c '.profile | keys_unsorted' <<<"$output")" \
		'["runs","kernels","min_ms","median_ms","p99_ms","inferences_per_second","arena_bytes","layers"]'
	# --bench --profile: its one record, as before
	run nk-run --json --bench 2 --profile "$FIX/test_mlp.nk"
	assert_equal "${#lines[@]}" 1
	assert_equal "$(jq -c '[.runs, (.layers | length), has("values")]' <<<"$output")" '[2,2,false]'
}

@test "nk-run --raw: little-endian float32 to a pipe, refused on a terminal" {
	run bash -c "nk-run --raw '$NK/spec_16_1.nk' --input 1,1 | od -An -tx1 | tr -s ' '"
	assert_success
	assert_output " 00 00 60 40 00 00 d0 40"
	# script(1) (bsdutils, essential in Debian) gives nk-run a terminal as standard output
	run script -qec "nk-run --raw '$NK/spec_16_1.nk' --input 1,1" /dev/null
	assert_equal "$status" 2
	assert_output --partial "refusing to write it to a terminal"
	# nothing but the message reached the terminal: no float bytes (3.5 = 00 00 60 40)
	[[ "$output" != *$'\x60\x40'* ]]
	run script -qec "nk-run --raw '$NK/spec_16_1.nk' --input 1,1 >/dev/null" /dev/null
	assert_success
	run script -qec "nk-run --raw '$NK/spec_16_1.nk' --input 1,1 | od -An -tx1" /dev/null
	assert_success
	assert_output --partial "00 00 60 40 00 00 d0 40"
}

@test "nk-run --random: reproducible; AVX2 and generic kernels give identical bytes" {
	nk-run --raw --random 7 "$FIX/mnist_cnn_dw.nk" >a.bin
	nk-run --raw --random 7 "$FIX/mnist_cnn_dw.nk" >b.bin
	NK_KERNELS=generic nk-run --raw --random 7 "$FIX/mnist_cnn_dw.nk" >c.bin
	nk-run --raw --random 8 "$FIX/mnist_cnn_dw.nk" >d.bin
	cmp a.bin b.bin
	cmp a.bin c.bin
	! cmp -s a.bin d.bin
	[ "$(stat -c %s a.bin)" -eq 40 ]
	NK_KERNELS=avx2 nk-run --raw --random 7 "$FIX/mnist_cnn_dw.nk" >e.bin
	cmp a.bin e.bin
	for f in "$FIX"/convnextv2_atto_block.nk "$FIX"/mobilenetv4_small_uib.nk "$FIX"/import_asym_depthwise_conv.nk \
		"$FIX"/cnn_extended_ops.nk "$FIX"/mnist_cnn_dw_int8.nk "$REPO_ROOT"/tests/data/nk/*.nk; do
		nk-run --raw --random 3 "$f" >x.bin
		NK_KERNELS=generic nk-run --raw --random 3 "$f" >y.bin
		NK_KERNELS=avx2 nk-run --raw --random 3 "$f" >z.bin
		NK_KERNELS=avx512 nk-run --raw --random 3 "$f" >w.bin
		cmp x.bin y.bin
		cmp x.bin z.bin
		cmp x.bin w.bin
	done
}

@test "nk-run int8: integer codes in and out, --quantize-input, non-codes refused" {
	run nk-run --json --random 3 "$FIX/mnist_cnn_dw_int8.nk"
	assert_success
	[ "$(jq -c '[.dtype, .scale, .zero_point, (.values | length)]' <<<"$output")" = '["int8",0.00390625,-128,10]' ]
	# logit scale 1.0: the int8 softmax gives 127 at the winning class, -128 elsewhere (§12.8)
	[ "$(jq -c '[.values[] | select(. != -128)] | length' <<<"$output")" -ge 1 ]
	run --separate-stderr nk-run "$NK/int8_cnn.nk" --input "$(seq -s, 0.5 1 16)"
	assert_equal "$status" 2
	[[ "$stderr" == *"is not an int8 code"* ]]
	run nk-run "$NK/int8_cnn.nk" --quantize-input --input "$(seq -s, 0.5 1 16)"
	assert_success
	assert_line --partial "Input: shape=[4, 4, 1] values=[-103, -53, -3, 47, 97, 127,"
	# JSON input too: scale 0.02, zero point -128; clamps at both ends
	run nk-run "$NK/int8_cnn.nk" --quantize-input --input-json "[-10, 0.02, 0.04, 100, $(seq -s, 1 12)]"
	assert_success
	assert_line "Input: shape=[4, 4, 1] values=[-128, -127, -126, 127, -78, -28, 22, 72, 122, 127, 127, 127, 127, 127, 127, 127]"
	# raw int8 bytes are codes already: taken as they are
	printf '\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\xec' >codes.bin
	run nk-run --quantize-input "$NK/int8_cnn.nk" --input-file codes.bin
	assert_line "Input: shape=[4, 4, 1] values=[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, -20]"
	# a float model: the option changes nothing
	[ "$(nk-run --quantize-input "$NK/spec_16_1.nk" --input 0.3,1)" = "$(nk-run "$NK/spec_16_1.nk" --input 0.3,1)" ]
	run nk-run "$NK/int8_cnn.nk" --input "$(seq -s, -8 7)"
	assert_line --regexp "^Output: shape=\[1, 3\] values=\[-?[0-9]+, -?[0-9]+, -?[0-9]+\]$"
}

@test "nk-run --bench and --profile" {
	run nk-run --bench 20 "$FIX/mnist_cnn_dw.nk"
	assert_success
	assert_line --regexp "^runs: +20 \(after 10 warm-up\), kernels (vnni|avx512|avx2|generic), arena [0-9]+ bytes$"
	assert_line --regexp "^latency: +min [0-9.]+ ms, median [0-9.]+ ms, p99 [0-9.]+ ms$"
	run nk-run --bench 5 --profile --json "$FIX/mnist_cnn_dw_int8.nk"
	[ "$(jq -c '[.runs, (.layers | length), .layers[6].kind, .layers[6].output_shape]' <<<"$output")" = '[5,9,"flatten",[1,1600]]' ]
	run nk-run --profile --random 1 "$FIX/test_mlp.nk"
	assert_line --regexp "^  \[1\] dense .* \[1, 2\]$"
	# one run: the two lines, then per layer its kind, min and mean time and output shape
	run nk-run --profile --random 1 "$FIX/mnist_cnn_dw.nk"
	assert_success
	assert_line --index 1 --regexp "^Output: shape=\[1, 10\] values="
	assert_line --regexp "^runs: +1 \(after 1 warm-up\), kernels (vnni|avx512|avx2|generic), arena [0-9]+ bytes$"
	[ "$(grep -cE '^  \[[0-9]\] [a-z_0-9]+ +[0-9.]+ ms +[0-9.]+ ms  \[' <<<"$output")" -eq 9 ]
	assert_line --regexp "^  \[1\] depthwise_conv2d +[0-9.]+ ms +[0-9.]+ ms  \[26, 26, 32\]$"
	assert_line --regexp "^  \[5\] max_pool2d +[0-9.]+ ms +[0-9.]+ ms  \[5, 5, 64\]$"
	run nk-run --bench 4 --profile --json "$NK/summary_kinds.nk"
	assert_success
	[ "$(jq -c '[.layers[] | [.kind, .output_shape]]' <<<"$output")" = \
		'[["layernorm2d",[6,6,2]],["resnet_basic_block",[3,3,4]],["yolox_decoupled_head",[3,3,7]]]' ]
	[ "$(jq '[.layers[] | .min_ms >= 0 and .mean_ms >= .min_ms] | all' <<<"$output")" = true ]
	run --separate-stderr nk-run --bench 0 "$FIX/test_mlp.nk"
	assert_equal "$status" 2
}

@test "nk-run --help and --version" {
	run nk-run --help
	assert_success
	assert_line --partial "Usage: nk-run [OPTIONS] MODEL.nk --input VALUES"
	run nk-run --version
	assert_output --regexp "^nk-run fmtkit [0-9.]+$"
	run --separate-stderr nk-run --test
	assert_equal "$status" 2
}

@test "int8 weights are encoded tensors: codes + __qscale, dequantized by fmt-convert" {
	run fmt-inspect --json "$FIX/mnist_cnn_dw_int8.nk"
	assert_success
	[ "$(jq -c '[.tensors[] | select(.name | startswith("layers.8.")) | [.name, .dtype, .shape]]' <<<"$output")" = \
		'[["layers.8.weight","I8",[10,128]],["layers.8.weight__qscale","F32",[10,1]],["layers.8.bias","I32",[10]]]' ]
	off=$(jq '.format_info.catalog.weights[5].offset' <<<"$output")
	scale=$(jq '.format_info.quant.records[5].channel_scales[1]' <<<"$output")
	code=$(od -An -td1 -j $((off + 128)) -N1 "$FIX/mnist_cnn_dw_int8.nk" | tr -d ' ')
	fmt-convert --quiet "$FIX/mnist_cnn_dw_int8.nk" out.safetensors
	# row 1, element 0 of the dequantized weights = its code x the scale of output channel 1
	/usr/bin/python3 - "$code" "$scale" out.safetensors <<'PY'
import json, struct, sys
code, scale, path = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
b = open(path, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
s = h["layers.8.weight"]["data_offsets"][0] + 8 + n + 128 * 4
got = struct.unpack("<f", b[s:s + 4])[0]
want = struct.unpack("<f", struct.pack("<f", code * struct.unpack("<f", struct.pack("<f", scale))[0]))[0]
assert got == want, (got, want)
PY
}
