#!/usr/bin/env bats
# Issue 9, GGUF fidelity: general.file_type / general.quantization_version written by
# fmt-convert and named by fmt-inspect; Q2_K, Q3_K, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0 decoded as
# gguf-py decodes them; codebook types refused; values a dtype cannot hold refused, saturated or
# widened (--overflow). Inputs: scripts/gen/gguf-fidelity-fixtures and convert-fixtures.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export GF="$BATS_FILE_TMPDIR/gf" CF="$BATS_FILE_TMPDIR/cf"
	"$REPO_ROOT/scripts/gen/gguf-fidelity-fixtures" "$GF"
	"$REPO_ROOT/scripts/gen/convert-fixtures" "$CF"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# The 64 float32 values of the tensors of overflow.safetensors ((37 i mod 64 - 32) / 8, all
# exact in F16 and BF16), element AT replaced by VALUE, packed as FMT: f32, f16 or bf16 (hex).
values_hex() {
	python3 -c '
import struct, sys
fmt, at, value = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
v = [((i * 37) % 64 - 32) / 8.0 for i in range(64)]
if at >= 0:
    v[at] = value
if fmt == "f32":
    print(struct.pack("<64f", *v).hex())
elif fmt == "f16":
    print(struct.pack("<64e", *v).hex())
else:
    u = struct.unpack("<64I", struct.pack("<64f", *v))
    print(struct.pack("<64H", *[x >> 16 for x in u]).hex())' "$@"
}

meta_json() {
	fmt-inspect --json "$1" | jq -c '[.metadata["general.file_type"], .metadata_types["general.file_type"], .metadata["general.quantization_version"], .metadata_types["general.quantization_version"], .format_info.file_type]'
}

nothing_written() {
	[ ! -e "$1" ] || fail "$1 was written"
	[ -z "$(find . -maxdepth 1 -name '.fmtkit-tmp-*')" ] || fail "temporary file left"
}

# ---------------------------------------------------------------------------------------------
# general.file_type and general.quantization_version

@test "general.file_type for f32, f16, bf16, q8_0 and q4_0 outputs; quantization_version 2 when quantized" {
	for pair in f32:0:null:ALL_F32 f16:1:null:MOSTLY_F16 bf16:32:null:MOSTLY_BF16 \
		q8_0:7:2:MOSTLY_Q8_0 q4_0:2:2:MOSTLY_Q4_0; do
		IFS=: read -r dt ft qv name <<<"$pair"
		run --separate-stderr fmt-convert --dtype "$dt" "$CF/big.safetensors" "$dt.gguf"
		assert_success
		if [ "$qv" = null ]; then
			want="[$ft,\"u32\",null,null,\"$name\"]"
		else
			want="[$ft,\"u32\",$qv,\"u32\",\"$name\"]"
		fi
		assert_equal "$(meta_json "$dt.gguf")" "$want"
	done
	# q8_0 of a model whose weights cannot be quantized (rows of 3 and 4): the file type asked,
	# as llama-quantize writes it, but no quantization_version (no tensor is quantized)
	fmt-convert --dtype q8_0 "$CF/spec8.safetensors" small.gguf
	assert_equal "$(meta_json small.gguf)" '[7,"u32",null,null,"MOSTLY_Q8_0"]'
	assert_equal "$(fmt-inspect --json small.gguf | jq -c '[.tensors[].dtype]')" '["F16"]'
}

@test "text output names the file type; an unknown value is shown as unknown (N)" {
	fmt-convert --dtype q4_0 "$CF/big.safetensors" q4.gguf
	run fmt-inspect q4.gguf
	assert_success
	assert_line "file_type:  MOSTLY_Q4_0"
	assert_line "  general.file_type (u32) = 2"
	assert_line "  general.quantization_version (u32) = 2"
	fmt-convert --set general.file_type:u32=99 "$CF/big.safetensors" odd.gguf
	run fmt-inspect odd.gguf
	assert_line "file_type:  unknown (99)"
	# not UINT32 (llama.cpp would not read it): no name
	fmt-convert --set general.file_type:i32=7 "$CF/big.safetensors" i32.gguf
	[ "$(fmt-inspect --json i32.gguf | jq -c '[.metadata["general.file_type"], .format_info]')" = '[7,null]' ]
}

@test "--dtype keep: the file type of the dtype holding most weight bytes; a matching value is kept" {
	# Q4_K weights and a file that says MOSTLY_Q4_K_S (14): kept, not guessed as Q4_K_M
	fmt-convert --dtype keep "$GF/q4ks.gguf" keep.gguf
	assert_equal "$(meta_json keep.gguf)" '[14,"u32",2,"u32","MOSTLY_Q4_K_S"]'
	# a value naming another dtype is replaced by llama.cpp's guess for Q4_K (Q4_K_M, 15)
	fmt-convert --dtype keep --set general.file_type:u32=7 "$GF/q4ks.gguf" wrong.gguf
	assert_equal "$(meta_json wrong.gguf)" '[7,"u32",2,"u32","MOSTLY_Q8_0"]'
	fmt-convert --dtype keep wrong.gguf fixed.gguf
	assert_equal "$(meta_json fixed.gguf)" '[15,"u32",2,"u32","MOSTLY_Q4_K_M"]'
	# blocks.gguf: Q3_K holds the most bytes (440 of 1540) -> MOSTLY_Q3_K_M (12)
	fmt-convert --dtype keep "$GF/blocks.gguf" blocks.gguf
	assert_equal "$(meta_json blocks.gguf)" '[12,"u32",2,"u32","MOSTLY_Q3_K_M"]'
	# the sample model kept as it is: F32 weights hold most bytes (48 of 88) -> ALL_F32
	fmt-convert --dtype keep "$CF/big.safetensors" f32.gguf
	assert_equal "$(meta_json f32.gguf)" '[0,"u32",null,null,"ALL_F32"]'
	# expanded to f16 from a quantized file (--allow-requantize, as llama-quantize): the version key
	# goes with the quantized tensors
	fmt-convert --allow-requantize --dtype f16 "$GF/q4ks.gguf" f16.gguf
	assert_equal "$(meta_json f16.gguf)" '[1,"u32",null,null,"MOSTLY_F16"]'
}

@test "issue 20 item 2: a GGUF without tensors (a vocabulary file) keeps its file type keys, whatever --dtype" {
	want=$(fmt-inspect --json "$GF/vocab.gguf" | jq -c '[.metadata, .metadata_types]')
	assert_equal "$(jq -c '.[0] | [.["general.file_type"], .["general.quantization_version"]]' <<<"$want")" '[1,2]'
	for dtype in keep f16 q8_0 f32 ""; do
		run --separate-stderr fmt-convert ${dtype:+--dtype $dtype} "$GF/vocab.gguf" "v$dtype.gguf"
		assert_success
		assert_equal "$stderr" ""
		# every key, its type and its place
		assert_equal "$(fmt-inspect --json "v$dtype.gguf" | jq -c '[.metadata, .metadata_types]')" "$want"
		assert_equal "$(meta_json "v$dtype.gguf")" '[1,"u32",2,"u32","MOSTLY_F16"]'
	done
}

@test "issue 20 item 2: --dtype keep of an unquantized file keeps general.quantization_version; f32 asked drops it" {
	# llama.cpp's converters write quantization_version 2 on F16 files too
	fmt-convert --dtype f16 --set general.quantization_version:u32=2 "$CF/big.safetensors" f16.gguf
	assert_equal "$(meta_json f16.gguf)" '[1,"u32",2,"u32","MOSTLY_F16"]'
	fmt-convert --dtype keep f16.gguf keep.gguf
	assert_equal "$(meta_json keep.gguf)" '[1,"u32",2,"u32","MOSTLY_F16"]'
	fmt-convert f16.gguf default.gguf
	assert_equal "$(meta_json default.gguf)" '[1,"u32",2,"u32","MOSTLY_F16"]'
	# a float dtype asked for: the tensors are recomputed and none is quantized
	fmt-convert --dtype f32 f16.gguf f32.gguf
	assert_equal "$(meta_json f32.gguf)" '[0,"u32",null,null,"ALL_F32"]'
}

@test "--set and --set-from win over the computed keys" {
	fmt-convert --dtype q8_0 --set general.file_type:u32=1 --set general.quantization_version:u32=3 \
		"$CF/big.safetensors" set.gguf
	assert_equal "$(meta_json set.gguf)" '[1,"u32",3,"u32","MOSTLY_F16"]'
	echo '{"general.file_type": {"type": "u32", "value": 18}}' > kv.json
	fmt-convert --dtype q8_0 --set-from kv.json "$CF/big.safetensors" from.gguf
	assert_equal "$(meta_json from.gguf)" '[18,"u32",2,"u32","MOSTLY_Q6_K"]'
}

@test "GGUF -> safetensors or .apsim: the file type keys are dropped without a warning" {
	fmt-convert --dtype q8_0 "$CF/big.safetensors" q8.gguf
	assert_equal "$(meta_json q8.gguf)" '[7,"u32",2,"u32","MOSTLY_Q8_0"]'
	run --separate-stderr fmt-convert --dtype f32 --exclude 'ids' q8.gguf out.safetensors
	assert_success
	# only the expansion warning, no "metadata entries dropped"
	[ "$stderr" = "fmt-convert: warning: 1 quantized tensor expanded to a float type: big.weight" ] ||
		fail "stderr: $stderr"
	[ "$(fmt-inspect --json out.safetensors | jq -c .metadata)" = '{"source":"convert-fixtures"}' ]
	run --separate-stderr fmt-convert --dtype f32 q8.gguf out.apsim
	assert_success
	[ "$(fmt-inspect --json out.apsim | jq -c .metadata)" = '{"source":"convert-fixtures"}' ]
}

# ---------------------------------------------------------------------------------------------
# Decoding every non-codebook block type

@test "Q2_K, Q3_K, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0 to f32: the floats gguf-py's dequantize gives" {
	cmp "$GF/blocks.gguf" "$REPO_ROOT/tests/data/ggufpy/blocks.gguf"
	run --separate-stderr fmt-convert --dtype f32 "$GF/blocks.gguf" out.safetensors
	assert_success
	[ "$stderr" = "fmt-convert: warning: 7 quantized tensors expanded to a float type: q2_k, q3_k, tq1_0, tq2_0, mxfp4, nvfp4, q1_0" ]
	# blocks.f32 holds the tensors in file order: 1024, 1024, 1024, 1024, 128, 256, 512 floats
	at=0
	for t in q2_k:1024 q3_k:1024 tq1_0:1024 tq2_0:1024 mxfp4:128 nvfp4:256 q1_0:512; do
		name=${t%%:*} n=${t##*:}
		want=$(xxd -p -s $((at * 4)) -l $((n * 4)) "$REPO_ROOT/tests/data/ggufpy/blocks.f32" | tr -d '\n')
		assert_equal "$(tensor_hex out.safetensors "$name")" "$want"
		at=$((at + n))
	done
	# --stats decodes them too: Q2_K's first values
	run fmt-inspect --json --tensor q2_k --stats "$GF/blocks.gguf"
	assert_success
	[ "$(jq -c '.stats | [.count, .nan, .inf, .first[0:3]]' <<<"$output")" = '[1024,0,0,[-250.25,-250.25,-250.21875]]' ]
}

@test "Q2_0 (ggml's 64-element layout) decodes: code - 1 times d" {
	run fmt-inspect --json --tensor q2_0 --stats "$GF/q2_0.gguf"
	assert_success
	[ "$(jq -c '.stats | [.count, .min, .max, .first]' <<<"$output")" = '[128,-4,2,[-0.5,0,0.5,1,-0.5,0,0.5,1]]' ]
	fmt-convert -q --dtype f32 "$GF/q2_0.gguf" q2.safetensors
	row0=$(python3 -c 'import struct; print(struct.pack("<64f", *([-0.5, 0, 0.5, 1] * 16)).hex())')
	# (1 - 1) x -2 is -0.0, as in ggml
	row1=$(python3 -c 'import struct; print(struct.pack("<64f", *([-4.0, -2.0, -0.0, 2.0] * 16)).hex())')
	assert_equal "$(tensor_hex q2.safetensors q2_0)" "$row0$row1"
}

@test "every codebook IQ type: --stats and conversion refused with exit 5 naming the type" {
	# (IQ4_NL and IQ4_XS decode since issue 23: gguf-quantize.bats)
	for t in IQ2_XXS IQ2_XS IQ3_XXS IQ1_S IQ3_S IQ2_S IQ1_M; do
		name=${t,,}
		run --separate-stderr fmt-inspect --tensor "$name" --stats "$GF/codebook.gguf"
		assert_failure 5
		[ "$stderr" = "fmt-inspect: error: $GF/codebook.gguf: tensor '$name': cannot decode $t data" ] ||
			fail "$t: $stderr"
		run --separate-stderr fmt-convert --include "$name" --dtype f16 "$GF/codebook.gguf" out.gguf
		assert_failure 5
		[ "$stderr" = "fmt-convert: error: $GF/codebook.gguf: tensor '$name': cannot convert $t to F16" ] ||
			fail "$t: $stderr"
		nothing_written out.gguf
	done
	# kept as they are (no decoding), they copy
	run fmt-convert --dtype keep "$GF/codebook.gguf" copy.gguf
	assert_success
	[ "$(fmt-inspect --json copy.gguf | jq -c '[.tensors[].dtype]')" = \
		'["IQ2_XXS","IQ2_XS","IQ3_XXS","IQ1_S","IQ4_NL","IQ3_S","IQ2_S","IQ4_XS","IQ1_M"]' ]
}

# ---------------------------------------------------------------------------------------------
# Overflow

@test "refuse (default): exit 4 naming tensor, element and value, nothing written (F16, BF16, Q8_0, Q4_0)" {
	for c in "f16 big.weight 37 10000000 F16 holds (largest finite value 65504; see --overflow)" \
		"f16 mid.weight 5 -600000 F16 holds (largest finite value 65504; see --overflow)" \
		"bf16 huge.weight 40 3.39999995e+38 BF16 holds (largest finite value 3.3895314e+38; see --overflow)" \
		"q8_0 big.weight 37 10000000 Q8_0 holds (a block's largest |x| must stay below 127 x 65520 = 8321040, or its F16 scale is infinite; see --overflow)" \
		"q4_0 mid.weight 5 -600000 Q4_0 holds (a block's largest |x| must stay below 8 x 65520 = 524160, or its F16 scale is infinite; see --overflow)"; do
		read -r dt name elem value rest <<<"$c"
		run --separate-stderr fmt-convert --dtype "$dt" --include "$name" "$GF/overflow.safetensors" out.gguf
		assert_failure 4
		[ "$stderr" = "fmt-convert: error: $GF/overflow.safetensors: tensor '$name': element $elem is $value, beyond what $rest" ] ||
			fail "$dt $name: $stderr"
		nothing_written out.gguf
	done
	# what fits is not refused: 1e7 in BF16, -6e5 in Q8_0
	run fmt-convert --dtype bf16 --include big.weight "$GF/overflow.safetensors" ok.gguf
	assert_success
	run fmt-convert --dtype q8_0 --include mid.weight "$GF/overflow.safetensors" ok8.gguf
	assert_success
	# any target format: safetensors F16 and .apsim bf16 refuse too
	run --separate-stderr fmt-convert --dtype f16 --include mid.weight "$GF/overflow.safetensors" out.safetensors
	assert_failure 4
	nothing_written out.safetensors
	run --separate-stderr fmt-convert --dtype bf16 --include huge.weight "$GF/overflow.safetensors" out.apsim
	assert_failure 4
	[ "$stderr" = "fmt-convert: error: $GF/overflow.safetensors: tensor 'huge.weight': element 40 is 3.39999995e+38, beyond what BF16 holds (largest finite value 3.3895314e+38; see --overflow)" ]
	nothing_written out.apsim
	# --overflow=refuse is the default, spelled out
	run fmt-convert --overflow=refuse --dtype f16 "$GF/overflow.safetensors" out.gguf
	assert_failure 4
	nothing_written out.gguf
}

@test "saturate: F16 to +-65504, BF16 to 0x7F7F, Q8_0/Q4_0 tensors as saturated F16, with warnings" {
	run --separate-stderr fmt-convert --overflow=saturate --dtype f16 "$GF/overflow.safetensors" f16.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: tensor 'big.weight': element 37 is 10000000, beyond what F16 holds; values beyond it saturated to +-65504 (--overflow=saturate)
fmt-convert: warning: tensor 'huge.weight': element 40 is 3.39999995e+38, beyond what F16 holds; values beyond it saturated to +-65504 (--overflow=saturate)
fmt-convert: warning: tensor 'mid.weight': element 5 is -600000, beyond what F16 holds; values beyond it saturated to +-65504 (--overflow=saturate)"
	assert_equal "$(tensor_hex f16.gguf big.weight)" "$(values_hex f16 37 65504)"
	assert_equal "$(tensor_hex f16.gguf mid.weight)" "$(values_hex f16 5 -65504)"
	assert_equal "$(tensor_hex f16.gguf huge.weight)" "$(values_hex f16 40 65504)"
	assert_equal "$(tensor_hex f16.gguf ok.weight)" "$(values_hex f16 -1 0)"
	h=$(tensor_hex f16.gguf big.weight)
	assert_equal "${h:148:4}" "ff7b"
	# BF16: only huge.weight overflows; its element 40 becomes 0x7F7F (3.3895314e38)
	run --separate-stderr fmt-convert --overflow=saturate --dtype bf16 "$GF/overflow.safetensors" bf16.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: tensor 'huge.weight': element 40 is 3.39999995e+38, beyond what BF16 holds; values beyond it saturated to +-3.3895314e+38 (--overflow=saturate)"
	h=$(tensor_hex bf16.gguf huge.weight)
	assert_equal "${h:160:4}" "7f7f"
	assert_equal "$h" "$(values_hex bf16 40 3.3895313892515355e38)"
	# Q8_0: big and huge become F16 (saturated), mid and ok stay Q8_0; the file type stays Q8_0
	run --separate-stderr fmt-convert --overflow=saturate --dtype q8_0 "$GF/overflow.safetensors" q8.gguf
	assert_success
	[[ "$stderr" == *"tensor 'big.weight': element 37 is 10000000, beyond what Q8_0 holds; written as F16, values beyond it saturated to +-65504 (--overflow=saturate)"* ]]
	assert_equal "$(fmt-inspect --json q8.gguf | jq -c '[.tensors[] | [.name, .dtype]]')" \
		'[["big.weight","F16"],["huge.weight","F16"],["mid.weight","Q8_0"],["ok.weight","Q8_0"]]'
	assert_equal "$(tensor_hex q8.gguf big.weight)" "$(values_hex f16 37 65504)"
	assert_equal "$(meta_json q8.gguf)" '[7,"u32",2,"u32","MOSTLY_Q8_0"]'
	# Q4_0: mid (6e5 > 524160) overflows as well
	fmt-convert -q --overflow=saturate --dtype q4_0 "$GF/overflow.safetensors" q4.gguf
	assert_equal "$(fmt-inspect --json q4.gguf | jq -c '[.tensors[].dtype]')" '["F16","F16","F16","Q4_0"]'
	assert_equal "$(tensor_hex q4.gguf mid.weight)" "$(values_hex f16 5 -65504)"
	# the plan says so
	run fmt-convert --dry-run --json --overflow=saturate --dtype q4_0 "$GF/overflow.safetensors" plan.gguf
	assert_success
	[ "$(jq -c '.tensors[0] | [.name, .to, .note, .overflow]' <<<"$output")" = '["big.weight","F16","values beyond the asked dtype: saturated",{"dtype":"Q4_0","element":37,"value":10000000}]' ]
	[ "$(jq -c '[.tensors[] | .overflow.element]' <<<"$output")" = '[37,40,5,null]' ]
	[ ! -e plan.gguf ]
}

@test "widen: tensors that overflow are written as F32, exactly the input values" {
	for dt in f16 bf16 q8_0 q4_0; do
		run --separate-stderr fmt-convert --overflow=widen --dtype "$dt" "$GF/overflow.safetensors" "$dt.gguf"
		assert_success
	done
	assert_equal "$stderr" "fmt-convert: warning: tensor 'big.weight': element 37 is 10000000, beyond what Q4_0 holds; written as F32 (--overflow=widen)
fmt-convert: warning: tensor 'huge.weight': element 40 is 3.39999995e+38, beyond what Q4_0 holds; written as F32 (--overflow=widen)
fmt-convert: warning: tensor 'mid.weight': element 5 is -600000, beyond what Q4_0 holds; written as F32 (--overflow=widen)"
	assert_equal "$(fmt-inspect --json f16.gguf | jq -c '[.tensors[].dtype]')" '["F32","F32","F32","F16"]'
	assert_equal "$(fmt-inspect --json bf16.gguf | jq -c '[.tensors[].dtype]')" '["BF16","F32","BF16","BF16"]'
	assert_equal "$(fmt-inspect --json q8_0.gguf | jq -c '[.tensors[].dtype]')" '["F32","F32","Q8_0","Q8_0"]'
	assert_equal "$(fmt-inspect --json q4_0.gguf | jq -c '[.tensors[].dtype]')" '["F32","F32","F32","Q4_0"]'
	assert_equal "$(tensor_hex q8_0.gguf big.weight)" "$(values_hex f32 37 1e7)"
	assert_equal "$(tensor_hex q4_0.gguf mid.weight)" "$(values_hex f32 5 -6e5)"
	assert_equal "$(tensor_hex bf16.gguf huge.weight)" "$(tensor_hex "$GF/overflow.safetensors" huge.weight)"
	# .apsim bf16: the tensor that does not fit is a plain F32 tensor
	run fmt-convert --overflow=widen --dtype bf16 "$GF/overflow.safetensors" out.apsim
	assert_success
	assert_equal "$(fmt-inspect --json out.apsim | jq -c '[.tensors[] | select(.name == "huge.weight") | .dtype]')" '["F32"]'
}

@test "--allow-overflow is --overflow=saturate; contradicting modes and unknown modes are usage errors" {
	fmt-convert -q --allow-overflow --dtype q4_0 "$GF/overflow.safetensors" a.gguf
	fmt-convert -q --overflow saturate --dtype q4_0 "$GF/overflow.safetensors" b.gguf
	cmp a.gguf b.gguf
	fmt-convert -q --allow-overflow --overflow=saturate --dtype f16 "$GF/overflow.safetensors" c.gguf
	for m in refuse widen; do
		run --separate-stderr fmt-convert --allow-overflow --overflow=$m "$GF/overflow.safetensors" x.gguf
		assert_failure 2
		[[ "$stderr" == *"--allow-overflow means --overflow=saturate; it contradicts --overflow=refuse or widen"* ]]
		nothing_written x.gguf
	done
	run --separate-stderr fmt-convert --overflow=clip "$GF/overflow.safetensors" x.gguf
	assert_failure 2
	[[ "$stderr" == *"--overflow takes refuse, saturate or widen"* ]]
	nothing_written x.gguf
}

@test "saturate and widen give the same bytes for any thread count" {
	for m in saturate widen; do
		fmt-convert -q -T 1 --overflow=$m --dtype q4_0 "$GF/overflow.safetensors" "$m-1.gguf"
		fmt-convert -q -T 3 --overflow=$m --dtype q4_0 "$GF/overflow.safetensors" "$m-3.gguf"
		cmp "$m-1.gguf" "$m-3.gguf"
	done
}

# ---------------------------------------------------------------------------------------------
# u64 in JSON (the man page's rule)

@test "fmt-inspect --json: a u64 above 2^63-1 is a string of its exact digits; up to 2^63-1 a number" {
	fmt-convert --set big:u64=18446744073709551615 --set over:u64=9223372036854775808 \
		--set edge:u64=9223372036854775807 "$CF/spec8.safetensors" u.gguf
	run fmt-inspect --json u.gguf
	assert_success
	[[ "$output" == *'"big":"18446744073709551615","over":"9223372036854775808","edge":9223372036854775807'* ]] ||
		fail "$output"
	/usr/bin/python3 -c 'import json, sys; m = json.loads(sys.argv[1])["metadata"]
assert int(m["big"]) == 2**64 - 1 and int(m["over"]) == 2**63 and m["edge"] == 2**63 - 1' "$output"
	[ "$(jq -r .metadata.big <<<"$output")" = 18446744073709551615 ]
	run fmt-inspect u.gguf
	assert_line "  big (u64) = 18446744073709551615"
}

# ---------------------------------------------------------------------------------------------
# Size-1 dimensions

@test "[1] and [1, N] tensors stay so through GGUF -> GGUF conversion and fmt-shard split" {
	# w [1,32] (n_dims 2 in the file, ne = {32, 1}, which ggml's writer would cut to {32}) and a 0-D
	# scalar (n_dims 1, ne = {1})
	fmt-convert --dtype f32 "$CF/q8a.safetensors" a.gguf
	[ "$(fmt-inspect --json a.gguf | jq -c '[.tensors[] | [.name, .shape]]')" = '[["w",[1,32]]]' ]
	fmt-convert --dtype keep a.gguf b.gguf
	[ "$(fmt-inspect --json b.gguf | jq -c '.tensors[0].shape')" = '[1,32]' ]
	fmt-shard split a.gguf -o parts
	[ "$(fmt-inspect --json parts-00001-of-00001.gguf | jq -c '.tensors[0].shape')" = '[1,32]' ]
	"$REPO_ROOT/scripts/gen/sample-models" s >/dev/null
	fmt-convert --dtype f32 s/tiny.safetensors t.gguf
	fmt-convert --dtype keep t.gguf t2.gguf
	[ "$(fmt-inspect --json t2.gguf | jq -c '.tensors[] | select(.name == "step") | .shape')" = '[1]' ]
}
