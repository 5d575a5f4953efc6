#!/usr/bin/env bats
# fmt-convert --embed-tests: a .nk file's TCAS block written from inputs, the expected outputs
# computed by the library's .nk runtime; the upstream fixtures re-made from their own inputs
# (scripts/gen/nk-tcas splits them), hostile inputs refused with nothing written; and the int8
# fixture's suite with each kernel build.

bats_require_minimum_version 1.5.0
load helpers

FIX="$REPO_ROOT/tests/data/fixtures/nk"
TCAS="$REPO_ROOT/scripts/gen/nk-tcas"

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# The int8 fixture's input scale and zero point (its first QUAN record).
int8_input_quant() {
	fmt-inspect --json "$FIX/mnist_cnn_dw_int8.nk" |
		jq -r '.format_info.quant.records[0] | "--scale \(.input_scale) --zero-point \(.input_zero_point)"'
}

@test "embed-tests: test_mlp.nk and mnist_cnn_dw_int8.nk re-made from their own inputs are upstream's bytes" {
	"$TCAS" split "$FIX/test_mlp.nk" net.nk cases.json
	[ "$(fmt-inspect --json net.nk | jq -c '[.format_info.header.flags, .format_info.tests]')" = '[0,null]' ]
	run fmt-convert --embed-tests cases.json --tolerance 1e-5 net.nk out.nk
	assert_success
	assert_output "out.nk: 3 embedded test cases (tolerance 1e-05), 376 bytes"
	cmp out.nk "$FIX/test_mlp.nk"
	# int8: the input codes as floats that quantize back to them; the expected values are the
	# dequantized integer outputs, exactly what upstream stored
	"$TCAS" split "$FIX/mnist_cnn_dw_int8.nk" net8.nk cases8.json $(int8_input_quant)
	run fmt-convert --embed-tests cases8.json --tolerance 0.08 net8.nk out8.nk
	assert_success
	cmp out8.nk "$FIX/mnist_cnn_dw_int8.nk"
}

@test "embed-tests: the float CNN fixtures re-made differ only in expected values, by at most 3e-7 (upstream's float order)" {
	while read -r name tol want; do
		"$TCAS" split "$FIX/$name.nk" net.nk cases.json
		run fmt-convert -q -f --embed-tests cases.json --tolerance "$tol" net.nk out.nk
		assert_success
		assert_equal "$("$TCAS" compare out.nk "$FIX/$name.nk")" "$want"
		run nk-run --test -q out.nk
		assert_success
	done <<'CASES'
mnist_cnn_dw 1e-4 {"equal_but_expected": true, "expected_differing": 79, "max_difference": 2.980232238769531e-07}
cnn_extended_ops 1e-5 {"equal_but_expected": true, "expected_differing": 4, "max_difference": 2.9802322387695312e-08}
convnextv2_atto_block 1e-5 {"equal_but_expected": true, "expected_differing": 4, "max_difference": 1.862645149230957e-09}
import_asym_depthwise_conv 1e-4 {"equal_but_expected": true, "expected_differing": 79, "max_difference": 2.9802322387695312e-08}
mobilenetv4_small_uib 1e-5 {"equal_but_expected": true, "expected_differing": 3, "max_difference": 1.4901161193847656e-08}
CASES
}

@test "embed-tests: raw float32 inputs with --labels, a file's old TCAS replaced, the result checked by nk-run and fmt-verify" {
	"$TCAS" split "$FIX/mnist_cnn_dw.nk" net.nk cases.json raw.f32
	[ "$(stat -c %s raw.f32)" -eq $((10 * 784 * 4)) ]
	jq -c '[.[] | .input]' cases.json >unnamed.json
	jq -r '[.[] | .label] | join(" ")' cases.json >labels.txt
	assert_equal "$(cat labels.txt)" "0 1 2 3 4 5 6 7 8 9"
	run fmt-convert --embed-tests raw.f32 --labels labels.txt net.nk raw.nk
	assert_success
	assert_output "raw.nk: 10 embedded test cases (tolerance 0.0001), 869888 bytes"
	run fmt-convert --embed-tests unnamed.json --labels labels.txt net.nk json.nk
	assert_success
	cmp raw.nk json.nk
	# the fixture itself (its TCAS replaced) gives the same file
	run fmt-convert --embed-tests raw.f32 --labels labels.txt "$FIX/mnist_cnn_dw.nk" again.nk
	assert_success
	cmp raw.nk again.nk
	run nk-run --test raw.nk
	assert_success
	assert_line "PASS case 0 (max error 0, tolerance 0.0001, argmax 0, expected 0)"
	assert_line "PASS case 9 (max error 0, tolerance 0.0001, argmax 9, expected 9)"
	run fmt-verify --run-tests raw.nk
	assert_success
	assert_output "raw.nk: ok (nk, 12 tensors, 1 file, 869888 bytes, 10 embedded test cases passed)"
	run fmt-convert --json --embed-tests raw.f32 net.nk j.nk
	assert_success
	assert_output '{"input":"net.nk","output":"j.nk","format":"nk","test_cases":10,"tolerance":9.9999997473787516e-5,"bytes":869888}'
	# no labels: -1 stored, the test compares the outputs alone
	run nk-run --test --json j.nk
	[ "$(jq -sc '[.[0].label, .[0].expected_argmax, .[-1].passed]' <<<"$output")" = '[-1,0,10]' ]
}

@test "embed-tests: hostile inputs and labels are refused with their exit status, nothing written" {
	"$TCAS" split "$FIX/test_mlp.nk" net.nk cases.json
	"$TCAS" hostile h 2
	refused() { # status message args...
		local want_status=$1 want=$2
		shift 2
		run --separate-stderr fmt-convert "$@" net.nk out.nk
		assert_equal "$status" "$want_status"
		assert_equal "$stderr" "$want"
		[ ! -e out.nk ]
		assert_equal "$(ls -A | grep -v '^separate-stderr-' | tr '\n' ' ')" "cases.json h net.nk "
	}
	refused 4 "fmt-convert: error: h/short.f32: 4 bytes: neither whole inputs of 2 float32 values (8 bytes each) nor a JSON array" --embed-tests h/short.f32
	refused 4 "fmt-convert: error: h/nan.f32: case 0: input value 0 (nan) is not a finite float32" --embed-tests h/nan.f32
	refused 4 "fmt-convert: error: h/inf.json: case 0: input value 0 (1e+39) is not a finite float32" --embed-tests h/inf.json
	refused 4 "fmt-convert: error: h/cases17.json: 17 cases: a .nk file holds 1 to 16 test cases" --embed-tests h/cases17.json
	refused 4 "fmt-convert: error: h/wrong_count.json: case 0 has 3 input values, the network takes 2" --embed-tests h/wrong_count.json
	refused 4 "fmt-convert: error: h/labels_short.txt: 1 label for 2 test cases" --embed-tests h/two.json --labels h/labels_short.txt
	refused 4 'fmt-convert: error: h/labels_bad.txt: labels: "one" is not an integer' --embed-tests h/two.json --labels h/labels_bad.txt
	echo '[5, -1]' >h/labels_range.json
	refused 4 "fmt-convert: error: case 0: label 5 is not -1 or an output index below 2" --embed-tests h/two.json --labels h/labels_range.json
	# a label the network does not predict: the file would fail its own test
	echo '1 -1' >h/labels_wrong.txt
	refused 11 "fmt-convert: error: case 0: the network's argmax is 0, its label 1 (the embedded test would fail)" --embed-tests h/two.json --labels h/labels_wrong.txt
	printf '[[1, 2]' >h/syntax.json
	refused 4 "fmt-convert: error: h/syntax.json: JSON: ']' expected near end of file (line 1)" --embed-tests h/syntax.json
	echo '[{"input": [1, 2], "nom": "x"}]' >h/member.json
	refused 4 'fmt-convert: error: h/member.json: case 0: unknown member "nom" (input, name, label)' --embed-tests h/member.json
	refused 2 "fmt-convert: error: --tolerance needs a finite number from 0, e.g. 1e-4"$'\n'"Try 'fmt-convert --help'." --embed-tests cases.json --tolerance nan
	refused 2 "fmt-convert: error: --labels and --tolerance go with --embed-tests"$'\n'"Try 'fmt-convert --help'." --tolerance 1e-3
	refused 2 "fmt-convert: error: --embed-tests writes the same network with its tests: not with --dtype"$'\n'"Try 'fmt-convert --help'." --embed-tests cases.json --dtype f16
	refused 3 "fmt-convert: error: h/none.json: cannot open: No such file or directory" --embed-tests h/none.json
	# not a .nk network: the loader's error, exit 4
	run --separate-stderr fmt-convert --embed-tests cases.json cases.json out.nk
	assert_equal "$status" 4
	[ ! -e out.nk ]
	# an existing output is kept without --force, replaced with it
	echo keep >out.nk
	run --separate-stderr fmt-convert --embed-tests cases.json net.nk out.nk
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: out.nk: output exists (use --force to overwrite)"
	assert_equal "$(cat out.nk)" keep
	run fmt-convert -f --embed-tests cases.json --tolerance 1e-5 net.nk out.nk
	assert_success
	cmp out.nk "$FIX/test_mlp.nk"
}

@test "nk-run --test: the int8 fixture passes its embedded suite with each kernel build (portable, AVX2, AVX-512, widest)" {
	for k in generic avx2 avx512 ""; do
		run env NK_KERNELS="$k" nk-run --test "$FIX/mnist_cnn_dw_int8.nk"
		assert_success
		assert_line "10 passed, 0 failed"
		run env NK_KERNELS="$k" nk-run --bench 3 --json "$FIX/mnist_cnn_dw_int8.nk"
		assert_success
		case "$k" in
		generic) [ "$(jq -r .kernels <<<"$output")" = generic ] ;;
		avx2) [[ "$(jq -r .kernels <<<"$output")" =~ ^(avx2|generic)$ ]] ;;
		avx512) [[ "$(jq -r .kernels <<<"$output")" =~ ^(avx512|avx2|generic)$ ]] ;;
		*) [[ "$(jq -r .kernels <<<"$output")" =~ ^(vnni|avx512|avx2|generic)$ ]] ;;
		esac
	done
}
