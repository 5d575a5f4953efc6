#!/usr/bin/env bats
# The environment variables that force a code path (NK_KERNELS, FMTKIT_QUANT_SIMD,
# FMTKIT_CSV_SCAN; fmtkit(7) ENVIRONMENT): their values in any case, and any other value refused
# by every tool before it starts (exit 2, naming the variable and its values). An unknown value
# was silently ignored: NK_KERNELS=portable or AVX2 ran the widest kernels, FMTKIT_QUANT_SIMD=bogus
# the widest quantizers. FMTKIT_PROGRESS_AFTER (a number of seconds) is checked the same way: a
# value that was not a number silently meant 1 second.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	export HOME=$BATS_TEST_TMPDIR XDG_CONFIG_HOME=$BATS_TEST_TMPDIR/config
	cd "$BATS_TEST_TMPDIR"
	FIX=$REPO_ROOT/tests/data/fixtures/nk
}

kernels_with() {
	NK_KERNELS=$1 nk-run --bench 1 --json "$FIX/test_mlp.nk" | jq -r .kernels
}

@test "NK_KERNELS: portable is generic, and values are taken in any case" {
	[ "$(kernels_with generic)" = generic ]
	for v in portable PORTABLE Generic; do
		[ "$(kernels_with "$v")" = generic ] || fail "NK_KERNELS=$v ran $(kernels_with "$v")"
	done
	avx2=$(kernels_with avx2)
	[[ $avx2 =~ ^(avx2|generic)$ ]]
	[ "$(kernels_with AVX2)" = "$avx2" ]
	[ "$(kernels_with Avx512)" = "$(kernels_with avx512)" ]
	# unset and empty: the widest
	[ "$(kernels_with "")" = "$(nk-run --bench 1 --json "$FIX/test_mlp.nk" | jq -r .kernels)" ]
}

@test "NK_KERNELS, FMTKIT_QUANT_SIMD, FMTKIT_CSV_SCAN: an unknown value is exit 2 naming the values, nothing run or written" {
	run -2 --separate-stderr env NK_KERNELS=avx-2 nk-run --random 1 "$FIX/test_mlp.nk"
	assert_output ""
	assert_equal "$stderr" "nk-run: error: NK_KERNELS='avx-2' in the environment: unknown value (expected generic, portable, avx2 or avx512; case ignored)"
	printf 'a,b\n1,2\n' >d.csv
	run -2 --separate-stderr env FMTKIT_QUANT_SIMD=bogus fmt-convert --dtype Q8_0 "$FIX/test_mlp.onnx" out.gguf
	assert_equal "$stderr" "fmt-convert: error: FMTKIT_QUANT_SIMD='bogus' in the environment: unknown value (expected portable, avx2 or avx512; case ignored)"
	[ ! -e out.gguf ]
	run -2 --separate-stderr env FMTKIT_CSV_SCAN=avx3 fmt-convert d.csv out.jsonl
	assert_equal "$stderr" "fmt-convert: error: FMTKIT_CSV_SCAN='avx3' in the environment: unknown value (expected portable, sse2, avx2 or avx512; case ignored)"
	[ ! -e out.jsonl ]
	# with --json, the error object
	run -2 --separate-stderr env NK_KERNELS=AVX-512 fmt-verify --json d.csv
	assert_equal "$(jq -c '[.tool, .level, .error, .exit]' <<<"$stderr")" '["fmt-verify","error","UsageError",2]'
	[[ $(jq -r .message <<<"$stderr") == "NK_KERNELS='AVX-512' in the environment: unknown value "* ]]
}

@test "FMTKIT_PROGRESS_AFTER: a value that is not a decimal number of seconds >= 0 (hex, spaces, a sign) is exit 2, nothing written; numbers are taken" {
	printf 'a,b\n1,2\n' >d.csv
	# hexadecimal, spaces and signs too, which strtod takes (old: 0x10 was 16 seconds, ' 1' one)
	for v in soon 1s -1 nan inf ' ' 0x10 ' 1' '1 ' +1 -0 1e 1e999 . .e1 0x1p3 infinity; do
		run -2 --separate-stderr env FMTKIT_PROGRESS_AFTER="$v" fmt-convert d.csv out.jsonl
		assert_output ""
		assert_equal "$stderr" "fmt-convert: error: FMTKIT_PROGRESS_AFTER='$v' in the environment: unknown value (expected a decimal number of seconds >= 0, such as 0 or 2.5)"
		[ ! -e out.jsonl ]
	done
	for v in 0 2.5 1e3 .5 5. 1E-2 0010 ''; do
		run env FMTKIT_PROGRESS_AFTER="$v" fmt-convert d.csv out.jsonl
		[ "$status" -eq 0 ] || fail "FMTKIT_PROGRESS_AFTER='$v': exit $status: $output"
		rm out.jsonl
	done
}

@test "every tool refuses an unknown value before it starts, and accepts the values in any case" {
	printf 'a,b\n1,2\n' >d.csv
	fmt-sign keygen -q -W -p k.pub -s k.key
	cmds=("fmt-inspect d.csv" "fmt-verify d.csv" "fmt-convert --to jsonl d.csv -" "fmt-shard split d.csv --rows 1 -o parts"
		"fmt-sign key-id -p k.pub" "fmt-watermark entropy d.csv" "nk-run --random 1 $FIX/test_mlp.nk")
	for c in "${cmds[@]}"; do
		tool=${c%% *}
		for var in NK_KERNELS FMTKIT_QUANT_SIMD FMTKIT_CSV_SCAN FMTKIT_PROGRESS_AFTER; do
			run -2 --separate-stderr env "$var=nope" $c
			[[ $stderr == "$tool: error: $var='nope' in the environment: unknown value (expected "* ]] ||
				fail "$var=nope $c: $stderr"
		done
		rm -rf parts
		run env NK_KERNELS=Generic FMTKIT_QUANT_SIMD=AVX2 FMTKIT_CSV_SCAN=Portable FMTKIT_PROGRESS_AFTER=0.5 $c
		[ "$status" -eq 0 ] || fail "$c with values in mixed case: exit $status: $output"
		rm -rf parts
	done
}
