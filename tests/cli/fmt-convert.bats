#!/usr/bin/env bats
# fmt-convert on the sample models of scripts/gen/sample-models and the inputs of
# scripts/gen/convert-fixtures: dtype rules, exact bytes against specs/gguf.md §8, §10-§12,
# metadata, options, usage errors and hostile input.

bats_require_minimum_version 1.5.0

# Inputs of scripts/gen/convert-fixtures, made once per suite into $FX.
make_fixtures() {
	FX="$BATS_FILE_TMPDIR/fx"
	export FX
	[ -d "$FX" ] || "$REPO_ROOT/scripts/gen/convert-fixtures" "$FX"
}

setup_file() {
	load helpers
	make_samples
	make_fixtures
}

setup() {
	load helpers
	make_samples
	make_fixtures
	cd "$BATS_TEST_TMPDIR"
}

# Hex of the float32 values given as arguments (little-endian).
f32_hex() {
	python3 -c 'import struct, sys; v = [float(a) for a in sys.argv[1:]]; print(struct.pack("<%df" % len(v), *v).hex())' "$@"
}

# Hex of little-endian float32 data (hex) converted to fp16 by Python (round to nearest even).
f32_to_f16_hex() {
	python3 -c '
import struct, sys
raw = bytes.fromhex(sys.argv[1])
v = struct.unpack("<%df" % (len(raw) // 4), raw)
print(struct.pack("<%de" % len(v), *v).hex())' "$1"
}

# Hex of little-endian float32 data (hex) converted to bf16 by the rule of specs/gguf.md §10.2.
f32_to_bf16_hex() {
	python3 -c '
import struct, sys
raw = bytes.fromhex(sys.argv[1])
u = struct.unpack("<%dI" % (len(raw) // 4), raw)
print(struct.pack("<%dH" % len(u), *[(x + 0x7FFF + ((x >> 16) & 1)) >> 16 for x in u]).hex())' "$1"
}

# No temporary file of the atomic writer left in the current directory.
assert_no_temp_files() {
	local left
	left=$(find . -maxdepth 1 -name '.fmtkit-tmp-*')
	[ -z "$left" ] || fail "temporary files left behind: $left"
}

# No output FILE and no temporary file left in the current directory.
assert_nothing_written() {
	[ ! -e "$1" ] || fail "$1 was created"
	assert_no_temp_files
}

# The bytes of an ASCII string as lowercase hex (xxd -p's), without a process.
ascii_hex() {
	local s=$1 i hex=
	for ((i = 0; i < ${#s}; i++)); do
		printf -v hex '%s%02x' "$hex" "'${s:i:1}"
	done
	echo "$hex"
}

# Metadata value and type of KEY in FILE, as "VALUE TYPE" (values compact JSON).
meta_of() {
	fmt-inspect --json "$1" | jq -c --arg k "$2" '[.metadata[$k], .metadata_types[$k]]'
}

# ---------------------------------------------------------------------------------------------
# Basics

@test "--version prints the tool and suite version" {
	run fmt-convert --version
	assert_success
	assert_output "fmt-convert fmtkit 0.1.0"
}

@test "--help goes to stdout and exits 0" {
	run --separate-stderr fmt-convert --help
	assert_success
	assert_line --index 0 "Usage: fmt-convert [OPTIONS] INPUT OUTPUT"
	[ -z "$stderr" ]
}

@test "missing INPUT or OUTPUT, an unknown option: usage errors (exit 2)" {
	run fmt-convert "$SAMPLES/tiny.safetensors"
	assert_failure 2
	assert_line --index 0 "fmt-convert: error: need INPUT and OUTPUT"
	run fmt-convert
	assert_failure 2
	run fmt-convert --bogus "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_nothing_written out.gguf
}

# ---------------------------------------------------------------------------------------------
# safetensors -> GGUF, default dtype f16

@test "safetensors -> GGUF: default f16, 1-D stays F32, I64 kept, metadata carried" {
	run --separate-stderr fmt-convert "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ -z "$output" ]
	[ -z "$stderr" ]
	# format, version, tensor and parameter counts; tensor order is kept; a 0-D safetensors
	# tensor is written with n_dims 1 (C writer, §6); general.file_type 1 (MOSTLY_F16): the
	# default --dtype; nothing quantized, so no general.quantization_version; 24-byte header +
	# KV "format" (8+6 + 4 + 8+2) + KV "general.file_type" (8+17 + 4 + 4) + 5 infos = 321,
	# padded to 32 = 352; data 160: 512 bytes
	assert_equal "$(fmt-inspect --json out.gguf | jq -c '.format, .version, .tensor_count, .parameter_count,
		[.tensors[] | [.name, .dtype, .shape, .offset, .bytes]], .metadata, .metadata_types,
		.format_info.file_type, .file_bytes')" '"gguf"
3
5
27
[["step","I64",[1],0,8],["layers.0.bias","F32",[4],32,16],["layers.0.weight","F16",[4,3],64,24],["layers.1.bias","F32",[2],96,8],["layers.1.weight","F16",[2,4],128,16]]
{"format":"pt","general.file_type":1}
{"format":"str","general.file_type":"u32"}
"MOSTLY_F16"
512'
	run fmt-verify out.gguf
	assert_success
}

@test "safetensors -> GGUF: F16 data is Python's round-to-nearest-even of the F32 input" {
	fmt-convert "$SAMPLES/tiny.safetensors" out.gguf
	in=$(tensor_hex "$SAMPLES/tiny.safetensors" layers.0.weight)
	[ ${#in} -eq 96 ]
	expected=$(f32_to_f16_hex "$in")
	[ ${#expected} -eq 48 ]
	assert_equal "$(tensor_hex out.gguf layers.0.weight)" "$expected"
	# sin(0.7 i) for i = 0..11: 0 -> 0x0000, sin 0.7 = 0.6442... -> 0x3927
	assert_equal "${expected:0:8}" "00002739"
	# untouched tensors are copied byte for byte
	assert_equal "$(tensor_hex out.gguf layers.0.bias)" "$(tensor_hex "$SAMPLES/tiny.safetensors" layers.0.bias)"
	assert_equal "$(tensor_hex out.gguf layers.0.bias)" "$(f32_hex 0.5 -0.25 0.125 0)"
	assert_equal "$(tensor_hex out.gguf layers.1.weight)" "$(tensor_hex "$SAMPLES/tiny.safetensors" layers.1.weight)"
	assert_equal "$(tensor_hex out.gguf step)" "e02e000000000000"
	# BF16 1.0, -2.0 widened to F32 (1-D)
	assert_equal "$(tensor_hex out.gguf layers.1.bias)" "0000803f000000c0"
}

@test "--dtype bf16: 2-D float tensors follow the RNE rule of §10.2, 1-D stay F32" {
	run fmt-convert --dtype bf16 "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ "$(fmt-inspect --json out.gguf | jq -c '[.tensors[].dtype]')" = '["I64","F32","BF16","F32","BF16"]' ]
	in=$(tensor_hex "$SAMPLES/tiny.safetensors" layers.0.weight)
	assert_equal "$(tensor_hex out.gguf layers.0.weight)" "$(f32_to_bf16_hex "$in")"
	# F16 -> BF16 goes through the exact F32 value: cos(0.3 i) rounded to fp16, then to bf16
	in16=$(tensor_hex "$SAMPLES/tiny.safetensors" layers.1.weight)
	in32=$(python3 -c 'import struct, sys; r = bytes.fromhex(sys.argv[1]); v = struct.unpack("<8e", r); print(struct.pack("<8f", *v).hex())' "$in16")
	assert_equal "$(tensor_hex out.gguf layers.1.weight)" "$(f32_to_bf16_hex "$in32")"
}

@test "--dtype q8_0 / q4_0: rows not a multiple of 32 become F16, 1-D F32, integers kept" {
	for dt in q8_0 q4_0; do
		run fmt-convert --dry-run --json --dtype "$dt" "$FX/big.safetensors" out.gguf
		assert_success
		echo "$output" > plan.json
		q=${dt^^}
		block_bytes=18
		[ "$dt" = q8_0 ] && block_bytes=34
		# 300 rows of 1024 / 32 blocks
		[ "$(jq -c '[.tensors[] | [.name, .from, .to, .bytes, .note]]' plan.json)" = \
			"[[\"big.bias\",\"F32\",\"F32\",4096,\"1-D tensors stay F32 in GGUF\"],[\"big.weight\",\"F32\",\"$q\",$((300 * 32 * block_bytes)),null],[\"odd.weight\",\"F32\",\"F16\",320,\"rows are not a multiple of the block size\"],[\"ids\",\"I32\",\"I32\",20,null]]" ]
		run fmt-convert --dtype "$dt" "$FX/big.safetensors" "out-$dt.gguf"
		assert_success
		[ "$(fmt-inspect --json "out-$dt.gguf" | jq -c '[.tensors[] | [.name, .dtype, .shape]]')" = \
			"[[\"big.bias\",\"F32\",[1024]],[\"big.weight\",\"$q\",[300,1024]],[\"odd.weight\",\"F16\",[4,40]],[\"ids\",\"I32\",[5]]]" ]
		assert_equal "$(tensor_hex "out-$dt.gguf" ids)" "03000000ffffffff0000000007000000ffffff7f"
		assert_equal "$(tensor_hex "out-$dt.gguf" big.bias)" "$(tensor_hex "$FX/big.safetensors" big.bias)"
		assert_equal "$(tensor_hex "out-$dt.gguf" odd.weight)" "$(f32_to_f16_hex "$(tensor_hex "$FX/big.safetensors" odd.weight)")"
	done
	# the small model: [4,3] and [2,4] rows are too short for blocks
	run fmt-convert --dtype q4_0 "$SAMPLES/tiny.safetensors" tiny.gguf
	assert_success
	[ "$(fmt-inspect --json tiny.gguf | jq -c '[.tensors[].dtype]')" = '["I64","F32","F16","F32","F16"]' ]
}

@test "--dtype q4_0 that no tensor can take: a warning with the count, pointing to --dry-run; none with -q, or when one tensor took it (old: F16/F32 without a word)" {
	local warn='--dtype q4_0: none of the 5 tensors became Q4_0 (rows that do not divide into its blocks, or tensors the target keeps in another type): --dry-run lists each one'"'"'s dtype and why'
	run --separate-stderr fmt-convert --dtype q4_0 "$SAMPLES/tiny.safetensors" tiny.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: $warn"
	assert_equal "$output" ''
	run --separate-stderr fmt-convert --json --dtype q4_0 "$SAMPLES/tiny.safetensors" tiny2.gguf
	assert_success
	assert_equal "$stderr" "$(jq -nc --arg m "$warn" '{tool:"fmt-convert",level:"warning",file:null,message:$m}')"
	# the bytes are what they were: the warning changes nothing written
	cmp tiny.gguf tiny2.gguf
	run --separate-stderr fmt-convert -q --dtype q4_0 "$SAMPLES/tiny.safetensors" tiny3.gguf
	assert_success
	assert_equal "$stderr" ''
	# --dry-run is the plan itself: no warning
	run --separate-stderr fmt-convert --dry-run --dtype q4_0 "$SAMPLES/tiny.safetensors" tiny4.gguf
	assert_success
	assert_equal "$stderr" ''
	# one tensor of four became Q4_0: no warning; f16 that some tensors took: none
	run --separate-stderr fmt-convert --dtype q4_0 "$FX/big.safetensors" big.gguf
	assert_success
	assert_equal "$stderr" ''
	run --separate-stderr fmt-convert --dtype f16 "$SAMPLES/tiny.safetensors" f16.gguf
	assert_success
	assert_equal "$stderr" ''
}

@test "an integer tensor the target cannot hold (U8 -> GGUF) is exit 5, nothing written" {
	python3 -c '
import json, struct
h = json.dumps({"u": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open("u8.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + bytes([1, 2, 3, 4]))'
	run fmt-convert u8.safetensors out.gguf
	assert_failure 5
	assert_output "fmt-convert: error: u8.safetensors: tensor 'u': U8 has no GGUF equivalent"
	assert_nothing_written out.gguf
}

@test "every value of a 300x1024 model converted to f16 equals Python's RNE (with -T 3)" {
	run fmt-convert -T 3 --dtype f16 "$FX/big.safetensors" big.gguf
	assert_success
	tensor_hex big.gguf big.weight | xxd -r -p > got.f16
	run python3 -c '
import struct, sys
raw = open(sys.argv[1], "rb").read()
vals = struct.unpack("<%df" % (len(raw) // 4), raw)
want = struct.pack("<%de" % len(vals), *vals)
got = open(sys.argv[2], "rb").read()
bad = [i for i in range(len(vals)) if got[2*i:2*i+2] != want[2*i:2*i+2]]
print(len(vals), len(got), len(bad), bad[:5])' "$FX/big.f32" got.f16
	assert_success
	assert_output "307200 614400 0 []"
}

# ---------------------------------------------------------------------------------------------
# Exact bytes from the spec

@test "spec §8: one F32 tensor with --dtype f32 --arch llama gives the table's bytes plus general.file_type" {
	# the table's file, then the general.file_type = 0 (ALL_F32) key fmt-convert adds after the
	# carried keys (llama.cpp's converters write it too): 33 more bytes (1 byte of padding after the
	# infos instead of 2), 192 in all
	xxd -r -p > expected.gguf <<-'EOF'
		47475546 03000000 0100000000000000 0200000000000000
		1400000000000000 67656e6572616c2e617263686974656374757265
		08000000 0500000000000000 6c6c616d61
		1100000000000000 67656e6572616c2e66696c655f74797065
		04000000 00000000
		1100000000000000 746f6b656e5f656d62642e776569676874
		02000000 0300000000000000 0200000000000000 00000000 0000000000000000
		00
		0000803f 00000040 00004040
		00008040 0000a040 0000c040
		0000000000000000
	EOF
	[ "$(stat -c %s expected.gguf)" -eq 192 ]
	run fmt-convert --to gguf --dtype f32 --arch llama "$FX/spec8.safetensors" out.bin
	assert_success
	run cmp expected.gguf out.bin
	assert_success
	# the same through standard output
	fmt-convert --to gguf --dtype f32 --arch llama "$FX/spec8.safetensors" - > stdout.bin
	cmp expected.gguf stdout.bin
	# --dtype keep and --dtype f16 leave nothing else to choose for this file but the data
	fmt-convert --to gguf --dtype keep --arch llama "$FX/spec8.safetensors" keep.gguf
	cmp expected.gguf keep.gguf
}

# Convert FIXTURE with --dtype DTYPE and compare the one tensor 'w' [1,32] with HEX; the file
# ends with the tensor padded to 32 bytes (34 -> 64, 18 -> 32).
check_block() {
	local fixture=$1 dtype=$2 hex=$3 size start padded
	run fmt-convert --dtype "$dtype" "$FX/$fixture.safetensors" "$fixture.gguf"
	assert_success
	[ "$(fmt-inspect --json "$fixture.gguf" | jq -c '.tensors')" = \
		"[{\"name\":\"w\",\"dtype\":\"${dtype^^}\",\"shape\":[1,32],\"offset\":0,\"bytes\":$((${#hex} / 2))}]" ]
	size=$(stat -c %s "$fixture.gguf")
	padded=$(((${#hex} / 2 + 31) / 32 * 32))
	start=$((size - padded))
	[ $((start % 32)) -eq 0 ]
	assert_equal "$(xxd -p -s "$start" -l $((${#hex} / 2)) "$fixture.gguf" | tr -d '\n')" "$hex"
	assert_equal "$(tensor_hex "$fixture.gguf" w)" "$hex"
	# zero padding after the last tensor
	assert_equal "$(xxd -p -s $((start + ${#hex} / 2)) "$fixture.gguf" | tr -d '\n' | tr -d 0)" ""
}

@test "spec §11 Q8_0 worked example A (round half away from zero): exact 34 bytes" {
	check_block q8a q8_0 "003c8103fd01ff02fe7f03fc0000649c41bf0102030405060708fffefdfcfbfaf9f8"
}

@test "spec §11 Q8_0 worked example B (fp16 rounding of d): exact 34 bytes" {
	check_block q8b q8_0 "082c81899199a1a9b1b9c0c8d0d8e0e8f0f8000810182028303840474f575f676f77"
}

@test "spec §12 Q4_0 worked example (negative d, ties, clamping): exact 18 bytes" {
	check_block q4 q4_0 "00b8808f8819f739d75ab62ae67b944cd1ff"
}

@test "spec §12 Q4_0 sign convention (first extreme negative, d = +0.5): exact 18 bytes" {
	check_block q4sign q4_0 "00388888888088888888888f888888888888"
}

@test "Q8_0 / Q4_0 of the 64 golden blocks equal tests/data/golden (scripts/gen/quant-golden)" {
	# Golden block 9 (values up to 2^20) overflows Q4_0's F16 scale: ggml writes an infinite d
	# (the golden bytes hold 0xFC00, -Inf), llama.cpp then refuses the file, so fmt-convert refuses it
	# (issue 9). The Q4_0 golden bytes are checked block by block in tests/unit/test_quant.c.
	assert_equal "$(xxd -p -s $((9 * 18)) -l 2 "$REPO_ROOT/tests/data/golden/quant_input.q4_0")" "00fc"
	run --separate-stderr fmt-convert --dtype q4_0 "$FX/golden.safetensors" golden-q4_0.gguf
	assert_failure 4
	[[ "$stderr" == *"tensor 'w': element 297 is 596643.5, beyond what Q4_0 holds"* ]] || fail "$stderr"
	for dt in q8_0; do
		for n in 1 3; do
			run fmt-convert -T "$n" --dtype "$dt" "$FX/golden.safetensors" "golden-$dt-$n.gguf"
			assert_success
			[ "$(fmt-inspect --json "golden-$dt-$n.gguf" | jq -c '.tensors[0] | [.dtype, .shape]')" = "[\"${dt^^}\",[64,32]]" ]
			assert_equal "$(tensor_hex "golden-$dt-$n.gguf" w)" "$(xxd -p "$REPO_ROOT/tests/data/golden/quant_input.$dt" | tr -d '\n')"
		done
	done
}

@test "Q8_0 / Q4_0 GGUF back to safetensors: the dequantized values of the spec, exactly" {
	fmt-convert --dtype q8_0 "$FX/q8a.safetensors" q8a.gguf
	run --separate-stderr fmt-convert q8a.gguf q8a.safetensors
	assert_success
	[ "$stderr" = "fmt-convert: warning: 1 quantized tensor expanded to a float type: w" ]
	[ "$(fmt-inspect --json q8a.safetensors | jq -c '.tensors[0] | [.name, .dtype, .shape]')" = '["w","F32",[1,32]]' ]
	assert_equal "$(tensor_hex q8a.safetensors w)" \
		"$(f32_hex -127 3 -3 1 -1 2 -2 127 3 -4 0 0 100 -100 65 -65 1 2 3 4 5 6 7 8 -1 -2 -3 -4 -5 -6 -7 -8)"
	fmt-convert --dtype q4_0 "$FX/q4.safetensors" q4.gguf
	run --separate-stderr fmt-convert q4.gguf q4.safetensors
	assert_success
	[ "$stderr" = "fmt-convert: warning: 1 quantized tensor expanded to a float type: w" ]
	# §12: 4, -3.5, -0, -0.5, ... (the zeros are -0: code 8 times a negative d)
	assert_equal "$(tensor_hex q4.safetensors w)" \
		"$(f32_hex 4 -3.5 -0.0 -0.5 0.5 -0.5 0.5 -1 1 -1 1 -1.5 2 -2 3.5 -3.5 -0.0 -0.0 -0.0 3.5 -3.5 2.5 -2.5 1.5 -1.5 3 -3 0.5 -0.5 2 -2.5 -3.5)"
}

@test "NaN or Inf in a tensor to quantize: exit 4 naming the tensor, nothing written" {
	for bad in nan inf; do
		what=NaN
		[ "$bad" = inf ] && what=+Inf
		for dt in q8_0 q4_0; do
			run fmt-convert --dtype "$dt" "$FX/$bad.safetensors" out.gguf
			assert_failure 4
			assert_output "fmt-convert: error: $FX/$bad.safetensors: tensor 'bad.weight': element 37 is $what; cannot quantize to ${dt^^}"
			assert_nothing_written out.gguf
		done
	done
	# an existing output is left as it was, even with -f
	echo precious > keep.gguf
	run fmt-convert -f --dtype q8_0 "$FX/nan.safetensors" keep.gguf
	assert_failure 4
	[ "$(cat keep.gguf)" = precious ]
	assert_no_temp_files
}

@test "NaN with --dtype f16 is converted (canonical 0x7E00), not rejected" {
	run fmt-convert --dtype f16 "$FX/nan.safetensors" out.gguf
	assert_success
	hex=$(tensor_hex out.gguf bad.weight)
	assert_equal "${hex:148:4}" "007e"
	assert_equal "${hex:0:4}" "0000"
}

# ---------------------------------------------------------------------------------------------
# Round trips

@test "round trips with --dtype keep: GGUF -> safetensors -> GGUF byte-identical" {
	fmt-convert --dtype keep "$SAMPLES/tiny.safetensors" a.gguf
	[ "$(fmt-inspect --json a.gguf | jq -c '[.tensors[].dtype]')" = '["I64","F32","F32","BF16","F16"]' ]
	run --separate-stderr fmt-convert a.gguf b.safetensors
	assert_success
	[ -z "$stderr" ]
	fmt-convert --dtype keep b.safetensors c.gguf
	cmp a.gguf c.gguf
	fmt-convert --dtype keep c.gguf d.gguf
	cmp a.gguf d.gguf
	fmt-convert b.safetensors e.safetensors
	cmp b.safetensors e.safetensors
	# every tensor's bytes (names and order too)
	b=$(tensors_hex b.safetensors)
	tiny=$(tensors_hex "$SAMPLES/tiny.safetensors")
	[ "$(cut -f1 <<<"$tiny" | tr '\n' ' ')" = "step layers.0.bias layers.0.weight layers.1.bias layers.1.weight " ]
	assert_equal "$b" "$tiny"
}

@test "round trips with --dtype f32: every float tensor F32, GGUF -> safetensors -> GGUF identical" {
	fmt-convert --dtype f32 "$SAMPLES/tiny.safetensors" a.gguf
	[ "$(fmt-inspect --json a.gguf | jq -c '[.tensors[].dtype]')" = '["I64","F32","F32","F32","F32"]' ]
	fmt-convert --dtype f32 a.gguf b.safetensors
	fmt-convert --dtype f32 b.safetensors c.gguf
	cmp a.gguf c.gguf
	# the F16 weights widen exactly: back to F16 gives the input bytes
	fmt-convert --dtype f16 --include layers.1.weight b.safetensors f.safetensors
	assert_equal "$(tensor_hex f.safetensors layers.1.weight)" "$(tensor_hex "$SAMPLES/tiny.safetensors" layers.1.weight)"
}

@test "safetensors -> safetensors (default keep) is byte-identical to a reference-ordered input" {
	run --separate-stderr fmt-convert "$SAMPLES/tiny.safetensors" same.safetensors
	assert_success
	[ -z "$stderr" ]
	cmp "$SAMPLES/tiny.safetensors" same.safetensors
	fmt-convert --dtype keep "$FX/big.safetensors" big.safetensors
	cmp "$FX/big.safetensors" big.safetensors
}

# ---------------------------------------------------------------------------------------------
# Metadata

@test "GGUF -> safetensors: string keys kept, other types dropped with a warning" {
	fmt-convert --set n:u32=7 --set name=tiny --set flag:bool=true "$SAMPLES/tiny.safetensors" a.gguf
	run --separate-stderr fmt-convert a.gguf b.safetensors
	assert_success
	[ "$stderr" = "fmt-convert: warning: 2 metadata entries dropped: the target holds only string values" ]
	[ "$(fmt-inspect --json b.safetensors | jq -c .metadata)" = '{"format":"pt","name":"tiny"}' ]
	run --separate-stderr fmt-convert -q a.gguf q.safetensors
	assert_success
	[ -z "$stderr" ]
	run --separate-stderr fmt-convert --json a.gguf j.safetensors
	assert_success
	[ "$(jq -c '[.format, .dry_run, .tensor_count, .dropped_metadata, .expanded, .excluded]' <<<"$output")" = '["safetensors",false,5,2,0,0]' ]
}

@test "--arch puts general.architecture first and replaces an existing one" {
	fmt-convert --arch llama "$SAMPLES/tiny.safetensors" a.gguf
	[ "$(fmt-inspect --json a.gguf | jq -c '.metadata')" = '{"general.architecture":"llama","format":"pt","general.file_type":1}' ]
	fmt-convert --arch gpt2 a.gguf b.gguf
	[ "$(fmt-inspect --json b.gguf | jq -c '.metadata')" = '{"general.architecture":"gpt2","format":"pt","general.file_type":1}' ]
	run fmt-convert --arch llama "$SAMPLES/tiny.safetensors" c.safetensors
	assert_failure 2
	assert_output --partial "--arch needs GGUF output"
	assert_nothing_written c.safetensors
}

@test "--set: every type is stored with its GGUF type and exact value" {
	run fmt-convert --set a.u32:u32=4096 --set a.i32:i32=-5 --set a.f32:f32=0.1 \
		--set a.bool:bool=true --set a.off:bool=0 --set a.str:str=hi --set a.u64:u64=4294967296000 \
		--set a.i8:i8=-128 --set a.u16:u16=65535 --set a.i64:i64=-9007199254740993 --set a.f64:f64=0.1 \
		--set plain=x=y --set format=gguf "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	# keys in order, types, values; the f32 and f64 values with their types (meta_of's form)
	assert_equal "$(fmt-inspect --json out.gguf | jq -c '(.metadata | keys_unsorted), [.metadata_types[]],
		[.metadata["format","a.u32","a.i32","a.bool","a.off","a.str","a.u64","a.i8","a.u16","plain"]],
		(["a.f32", "a.f64"][] as $k | [.metadata[$k], .metadata_types[$k]])')" \
		'["format","general.file_type","a.u32","a.i32","a.f32","a.bool","a.off","a.str","a.u64","a.i8","a.u16","a.i64","a.f64","plain"]
["str","u32","u32","i32","f32","bool","bool","str","u64","i8","u16","i64","f64","str"]
["gguf",4096,-5,true,false,"hi",4294967296000,-128,65535,"x=y"]
[0.10000000149011612,"f32"]
[0.1,"f64"]'
	# exact bytes: key, type id (GGUF value types: 4 UINT32, 5 INT32, 6 FLOAT32, 7 BOOL,
	# 10 UINT64, 11 INT64), value
	hex=$(xxd -p -c 0 out.gguf)
	[[ $hex == *"$(ascii_hex 'a.u32')0400000000100000"* ]]
	[[ $hex == *"$(ascii_hex 'a.i32')05000000fbffffff"* ]]
	[[ $hex == *"$(ascii_hex 'a.f32')06000000cdcccc3d"* ]]
	[[ $hex == *"$(ascii_hex 'a.bool')0700000001"* ]]
	[[ $hex == *"$(ascii_hex 'a.u64')0a00000000000000e8030000"* ]]
	[[ $hex == *"$(ascii_hex 'a.i64')0b000000ffffffffffffdfff"* ]]
}

@test "--set u64 holds the full range (checked in the file's bytes)" {
	fmt-convert --set big:u64=18446744073709551615 "$SAMPLES/tiny.safetensors" out.gguf
	hex=$(xxd -p -c 0 out.gguf)
	# key length 3, "big", type 10, value
	[[ $hex == *"0300000000000000$(ascii_hex big)0a000000ffffffffffffffff"* ]]
	# fmt-inspect --json shows a u64 above 2^63 as an exact decimal string
	[ "$(meta_of out.gguf big)" = '["18446744073709551615","u64"]' ]
}

@test "--set: malformed or out-of-range values are usage errors (exit 2), nothing written" {
	for bad in 'K:u8=300' 'K:bogus=1' '=x' 'K' 'K:i8=-129' 'K:u32=-1' 'K:u64=-1' 'K:bool=yes' \
		'K:f32=abc' 'K:u32=' 'K:u32=12x' 'K:i32=2147483648'; do
		run fmt-convert --set "$bad" "$SAMPLES/tiny.safetensors" out.gguf
		[ "$status" -eq 2 ] || fail "--set '$bad': exit $status, expected 2 ($output)"
		assert_nothing_written out.gguf
	done
	run fmt-convert --set 'K:u8=300' "$SAMPLES/tiny.safetensors" out.gguf
	assert_output --partial "--set K: '300' is not a valid u8"
	run fmt-convert --set 'K:bogus=1' "$SAMPLES/tiny.safetensors" out.gguf
	assert_output --partial "--set K:bogus: unknown type"
}

@test "--set: a u64 written with a leading blank and a minus sign is rejected (exit 2)" {
	# strtoull skips blanks before the sign: ' -1' must not become 2^64-1
	run fmt-convert --set 'K:u64= -1' "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_nothing_written out.gguf
}

@test "--set: an f32 value beyond the float range is rejected, not stored as inf (exit 2)" {
	run fmt-convert --set 'K:f32=1e40' "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_nothing_written out.gguf
}

@test "--set into safetensors: strings only" {
	run fmt-convert --set k=v "$SAMPLES/tiny.safetensors" a.safetensors
	assert_success
	[ "$(fmt-inspect --json a.safetensors | jq -c .metadata)" = '{"format":"pt","k":"v"}' ]
	run fmt-convert --set k:u32=1 "$SAMPLES/tiny.safetensors" b.safetensors
	assert_failure 2
	assert_output --partial "safetensors metadata holds strings only"
	assert_nothing_written b.safetensors
}

@test "--set-from: JSON typing rules and the explicit {type, value} form" {
	cat > kv.json <<-'EOF'
		{"s": "text", "b": false, "u": 4096, "z": 0, "n": -7, "maxu32": 4294967295,
		 "over": 4294967296, "negbig": -2147483649, "r": 0.5, "arr": [1, 2, 3],
		 "sarr": ["a", "b"], "farr": [0.5, 1.5], "earr": [],
		 "t": {"type": "u64", "value": 7}, "t2": {"type": "f64", "value": 0.1},
		 "t3": {"type": "u8", "value": "200"}, "t4": {"type": "bool", "value": true},
		 "t5": {"type": "i16", "value": -3}, "format": "override"}
	EOF
	run fmt-convert --set-from kv.json "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	fmt-inspect --json out.gguf > out.json
	[ "$(jq -c .metadata out.json)" = \
		'{"format":"override","general.file_type":1,"s":"text","b":false,"u":4096,"z":0,"n":-7,"maxu32":4294967295,"over":4294967296,"negbig":-2147483649,"r":0.5,"arr":[1,2,3],"sarr":["a","b"],"farr":[0.5,1.5],"earr":[],"t":7,"t2":0.1,"t3":200,"t4":true,"t5":-3}' ]
	[ "$(jq -c .metadata_types out.json)" = \
		'{"format":"str","general.file_type":"u32","s":"str","b":"bool","u":"u32","z":"u32","n":"i32","maxu32":"u32","over":"i64","negbig":"i64","r":"f32","arr":"array[u32]","sarr":"array[str]","farr":"array[f32]","earr":"array[str]","t":"u64","t2":"f64","t3":"u8","t4":"bool","t5":"i16"}' ]
	# --set after --set-from wins
	echo '{"k": "from-file"}' > k.json
	fmt-convert --set-from k.json --set k=from-option "$SAMPLES/tiny.safetensors" k.gguf
	[ "$(meta_of k.gguf k)" = '["from-option","str"]' ]
	# into safetensors: string values only
	fmt-convert --set-from k.json "$SAMPLES/tiny.safetensors" k.safetensors
	[ "$(fmt-inspect --json k.safetensors | jq -c .metadata)" = '{"format":"pt","k":"from-file"}' ]
	run fmt-convert --set-from kv.json "$SAMPLES/tiny.safetensors" kv.safetensors
	assert_failure 2
	assert_nothing_written kv.safetensors
}

@test "--set-from: not an object, null, mixed arrays, bad {type, value}: exit 2" {
	for j in '[1, 2]' '"x"' '{bad' '{"a": null}' '{"a": [[1], 2]}' '{"a": [1, "x"]}' \
		'{"a": {"type": "u8", "value": 300}}' '{"a": {"type": "x", "value": 1}}' \
		'{"a": {"value": 1}}' '{"a": {"type": "u8", "value": 1, "extra": 2}}' '{"a": 1, "a": 2}'; do
		echo "$j" > bad.json
		run fmt-convert --set-from bad.json "$SAMPLES/tiny.safetensors" out.gguf
		[ "$status" -eq 2 ] || fail "--set-from '$j': exit $status, expected 2 ($output)"
		assert_nothing_written out.gguf
	done
	echo '[1, 2]' > bad.json
	run fmt-convert --set-from bad.json "$SAMPLES/tiny.safetensors" out.gguf
	assert_output --partial "--set-from bad.json: not a JSON object"
	run fmt-convert --set-from missing.json "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 3
	assert_nothing_written out.gguf
}

@test "--set-from: nested arrays become GGUF arrays of arrays, read back the same" {
	echo '{"a": [[1, 2], [3, -4]], "b": [[["x"]], [["y", "z"]]]}' > nested.json
	run fmt-convert --set-from nested.json "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ "$(meta_of out.gguf a)" = '[[[1,2],[3,-4]],"array[array]"]' ]
	[ "$(meta_of out.gguf b)" = '[[[["x"]],[["y","z"]]],"array[array]"]' ]
	fmt-convert out.gguf again.gguf
	cmp out.gguf again.gguf
}

@test "--set-from: an integer array with negative and positive items is one array of i32" {
	echo '{"a": [1, -1, 2]}' > mixed.json
	run fmt-convert --set-from mixed.json "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ "$(meta_of out.gguf a)" = '[[1,-1,2],"array[i32]"]' ]
}

# ---------------------------------------------------------------------------------------------
# Options

@test "--dry-run prints every tensor and writes nothing (text)" {
	run --separate-stderr fmt-convert --dry-run "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ -z "$stderr" ]
	assert_equal "$output" "plan: $SAMPLES/tiny.safetensors -> out.gguf (gguf, 5 tensors)
  step  I64 -> I64  8 bytes
  layers.0.bias  F32 -> F32  16 bytes  (1-D tensors stay F32 in GGUF)
  layers.0.weight  F32 -> F16  24 bytes
  layers.1.bias  BF16 -> F32  8 bytes  (1-D tensors stay F32 in GGUF)
  layers.1.weight  F16 -> F16  16 bytes
tensor data: 72 bytes (0.00 MiB)"
	assert_nothing_written out.gguf
}

@test "--dry-run --json: one object with the plan, nothing written" {
	run --separate-stderr fmt-convert --dry-run --json --dtype q8_0 "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ -z "$stderr" ]
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	echo "$output" > plan.json
	[ "$(jq -c 'keys_unsorted' plan.json)" = \
		'["input","output","format","dry_run","tensor_count","excluded","expanded","dropped_metadata","dropped_units","data_bytes","tensors"]' ]
	[ "$(jq -c '[.output, .format, .dry_run, .tensor_count, .excluded, .expanded, .dropped_metadata, .data_bytes]' plan.json)" = \
		'["out.gguf","gguf",true,5,0,0,0,72]' ]
	[ "$(jq -r .input plan.json)" = "$SAMPLES/tiny.safetensors" ]
	[ "$(jq -c '.tensors[2]' plan.json)" = \
		'{"name":"layers.0.weight","from":"F32","to":"F16","bytes":24,"note":"rows are not a multiple of the block size"}' ]
	[ "$(jq -c '[.tensors[] | [.name, .from, .to, .bytes]]' plan.json)" = \
		'[["step","I64","I64",8],["layers.0.bias","F32","F32",16],["layers.0.weight","F32","F16",24],["layers.1.bias","BF16","F32",8],["layers.1.weight","F16","F16",16]]' ]
	assert_nothing_written out.gguf
	# the plan matches what a real conversion writes
	fmt-convert --dtype q8_0 "$SAMPLES/tiny.safetensors" real.gguf
	[ "$(fmt-inspect --json real.gguf | jq -c '[.tensors[] | [.name, .dtype, .bytes]]')" = \
		"$(jq -c '[.tensors[] | [.name, .to, .bytes]]' plan.json)" ]
}

@test "--dry-run on an existing output: no error, the file is untouched" {
	echo precious > out.gguf
	run fmt-convert --dry-run "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ "$(cat out.gguf)" = precious ]
}

@test "--verbose prints the conversion on stderr, --json the report on stdout" {
	run --separate-stderr fmt-convert -v "$SAMPLES/tiny.safetensors" v.gguf
	assert_success
	[ -z "$output" ]
	[ "$(head -n 1 <<<"$stderr")" = "converted: $SAMPLES/tiny.safetensors -> v.gguf (gguf, 5 tensors)" ]
	[ "$(wc -l <<<"$stderr")" -eq 7 ]
	run --separate-stderr fmt-convert -j "$SAMPLES/tiny.safetensors" j.gguf
	assert_success
	[ -z "$stderr" ]
	[ "$(jq -c '[.dry_run, .tensor_count, .data_bytes]' <<<"$output")" = '[false,5,72]' ]
	cmp v.gguf j.gguf
}

# "FILE TENSORS BYTES FILE_BYTES" for each file of the set a --json report on stdin lists, and
# set_on_disk the same from the files: the tensors and tensor data fmt-inspect finds in each
# (a GGUF or APR shard opens its whole set: those of that file), and its size on disk.
set_listed() {
	jq -r '.shards[] | "\(.file) \(.tensors) \(.bytes) \(.file_bytes)"'
}
set_on_disk() {
	local f
	jq -r '.shards[].file' | while read -r f; do
		printf '%s %s %s\n' "$f" "$(fmt-inspect --json "$f" | jq -r --arg f "$f" \
			'[.tensors[] | select((.file // $f) | endswith($f))] | "\(length) \(map(.bytes) | add // 0)"')" \
			"$(stat -c %s "$f")"
	done
}

@test "--shard --dry-run lists the safetensors set's files, their tensors and sizes; the run writes those, and its --json and -v reports list them (old: no file listed)" {
	run --separate-stderr fmt-convert --dry-run --shard 40B "$SAMPLES/tiny.safetensors" set.safetensors
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(sed -n '/^tensor data:/,$p' <<<"$output")" "tensor data: 92 bytes (0.00 MiB)
shard set-00001-of-00003.safetensors: 2 tensors, 24 bytes of tensor data, 192 bytes
shard set-00002-of-00003.safetensors: 1 tensor, 48 bytes of tensor data, 160 bytes
shard set-00003-of-00003.safetensors: 2 tensors, 20 bytes of tensor data, 196 bytes
index set.safetensors.index.json"
	local text=$output
	run --separate-stderr fmt-convert --dry-run --json --shard 40B "$SAMPLES/tiny.safetensors" set.safetensors
	assert_success
	assert_equal "$(jq -c '[.dry_run, .shards, .index]' <<<"$output")" \
		'[true,[{"file":"set-00001-of-00003.safetensors","tensors":2,"bytes":24,"file_bytes":192},{"file":"set-00002-of-00003.safetensors","tensors":1,"bytes":48,"file_bytes":160},{"file":"set-00003-of-00003.safetensors","tensors":2,"bytes":20,"file_bytes":196}],"set.safetensors.index.json"]'
	local dry=$output
	assert_equal "$(ls set* 2>/dev/null)" ""
	# the run writes the files listed, each holding the tensors listed, of the size listed
	run --separate-stderr fmt-convert --json --shard 40B "$SAMPLES/tiny.safetensors" set.safetensors
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(ls set* | tr '\n' ' ')" \
		"set-00001-of-00003.safetensors set-00002-of-00003.safetensors set-00003-of-00003.safetensors set.safetensors.index.json "
	assert_equal "$(jq -c '[.dry_run, .shards, .index]' <<<"$output")" "$(jq -c '[false, .shards, .index]' <<<"$dry")"
	assert_equal "$(set_on_disk <<<"$output")" "$(set_listed <<<"$dry")"
	# -v: the report on stderr ends with the same lines; without -v or --json, nothing
	run --separate-stderr fmt-convert -v -f --shard 40B "$SAMPLES/tiny.safetensors" set.safetensors
	assert_success
	assert_equal "$output" ""
	assert_equal "$(sed -n '/^tensor data:/,$p' <<<"$stderr")" "$(sed -n '/^tensor data:/,$p' <<<"$text")"
	assert_equal "$(head -n 4 <<<"$stderr")" "$(printf 'fmt-convert: wrote %s\n' set-0000{1,2,3}-of-00003.safetensors set.safetensors.index.json)"
	run --separate-stderr fmt-convert -f --shard 40B "$SAMPLES/tiny.safetensors" set.safetensors
	assert_success
	assert_equal "$output$stderr" ""
}

@test "--shard to GGUF (a gguf-split set), an OUTPUT named NAME.safetensors.index.json (a set of one): --dry-run lists the files the run writes, the run's report lists them (old: no file listed)" {
	run --separate-stderr fmt-convert --dry-run --shard 64B "$SAMPLES/tiny.safetensors" g.gguf
	assert_success
	assert_equal "$(sed -n '/^tensor data:/,$p' <<<"$output")" "tensor data: 72 bytes (0.00 MiB)
shard g-00001-of-00003.gguf: 2 tensors, 24 bytes of tensor data, 320 bytes
shard g-00002-of-00003.gguf: 2 tensors, 32 bytes of tensor data, 288 bytes
shard g-00003-of-00003.gguf: 1 tensor, 16 bytes of tensor data, 224 bytes"
	run --separate-stderr fmt-convert --dry-run --json --shard 64B "$SAMPLES/tiny.safetensors" g.gguf
	assert_success
	local dry=$output
	assert_equal "$(jq -c '[(.shards | length), .index]' <<<"$dry")" '[3,null]'
	assert_equal "$(ls g* 2>/dev/null)" ""
	run --separate-stderr fmt-convert --json --shard 64B "$SAMPLES/tiny.safetensors" g.gguf
	assert_success
	assert_equal "$(ls g* | tr '\n' ' ')" "g-00001-of-00003.gguf g-00002-of-00003.gguf g-00003-of-00003.gguf "
	assert_equal "$(jq -c '[.shards, .index]' <<<"$output")" "$(jq -c '[.shards, .index]' <<<"$dry")"
	assert_equal "$(set_on_disk <<<"$output")" "$(set_listed <<<"$dry")"
	# an index name asks for a set even of one file
	run --separate-stderr fmt-convert --dry-run --json "$SAMPLES/tiny.safetensors" one.safetensors.index.json
	assert_success
	assert_equal "$(jq -c '[.shards, .index]' <<<"$output")" \
		'[[{"file":"one-00001-of-00001.safetensors","tensors":5,"bytes":92,"file_bytes":468}],"one.safetensors.index.json"]'
	dry=$output
	run --separate-stderr fmt-convert --json "$SAMPLES/tiny.safetensors" one.safetensors.index.json
	assert_success
	assert_equal "$(jq -c '[.shards, .index]' <<<"$output")" "$(jq -c '[.shards, .index]' <<<"$dry")"
	assert_equal "$(set_on_disk <<<"$output")" "one-00001-of-00001.safetensors 5 92 468"
	cmp one-00001-of-00001.safetensors <(fmt-convert "$SAMPLES/tiny.safetensors" -  --to safetensors)
}

@test "--shard to .apsim and APR: --dry-run lists the .apsim files with their sizes, APR's with file_bytes null (their size depends on the codec: known once written); the runs' reports have the sizes written (old: no file listed)" {
	run --separate-stderr fmt-convert --dry-run --json --dtype int8 --shard 30B "$SAMPLES/tiny.safetensors" s.apsim
	assert_success
	assert_equal "$(jq -c '[.shards[] | [.file, .tensors, .bytes, .file_bytes]], .index' <<<"$output")" \
		'[["s-00001-of-00003.apsim",3,16,576],["s-00002-of-00003.apsim",2,28,540],["s-00003-of-00003.apsim",4,22,798]]
"s.apsim.index.json"'
	local dry=$output
	run --separate-stderr fmt-convert --json --dtype int8 --shard 30B "$SAMPLES/tiny.safetensors" s.apsim
	assert_success
	assert_equal "$(jq -c '[.shards, .index]' <<<"$output")" "$(jq -c '[.shards, .index]' <<<"$dry")"
	assert_equal "$(set_on_disk <<<"$output")" "$(set_listed <<<"$output")"
	run --separate-stderr fmt-convert --dry-run --json --shard 40B "$SAMPLES/tiny.safetensors" s.apr
	assert_success
	assert_equal "$(jq -c '[.shards[] | [.file, .tensors, .bytes, .file_bytes]], .index' <<<"$output")" \
		'[["s-00001-of-00003.apr",2,24,null],["s-00002-of-00003.apr",1,48,null],["s-00003-of-00003.apr",2,20,null]]
null'
	dry=$output
	run --separate-stderr fmt-convert --dry-run --shard 40B "$SAMPLES/tiny.safetensors" s.apr
	assert_equal "$(grep '^shard \|^index ' <<<"$output")" "shard s-00001-of-00003.apr: 2 tensors, 24 bytes of tensor data
shard s-00002-of-00003.apr: 1 tensor, 48 bytes of tensor data
shard s-00003-of-00003.apr: 2 tensors, 20 bytes of tensor data"
	run --separate-stderr fmt-convert --json --shard 40B "$SAMPLES/tiny.safetensors" s.apr
	assert_success
	assert_equal "$(jq -c '[.shards[] | [.file, .tensors, .bytes]], .index' <<<"$output")" \
		"$(jq -c '[.shards[] | [.file, .tensors, .bytes]], .index' <<<"$dry")"
	assert_equal "$(set_on_disk <<<"$output")" "$(set_listed <<<"$output")"
	assert_equal "$(ls s-* s.* | tr '\n' ' ')" "s-00001-of-00003.apr s-00001-of-00003.apsim s-00002-of-00003.apr s-00002-of-00003.apsim s-00003-of-00003.apr s-00003-of-00003.apsim s.apsim.index.json "
	# a set the .apsim writer refuses (a u64 above 2^63-1) is refused by the dry run too (old: exit 0)
	local dry_run
	for dry_run in --dry-run ""; do
		run --separate-stderr fmt-convert $dry_run --set big:u64=18446744073709551615 --shard 30B "$SAMPLES/tiny.safetensors" u.apsim
		assert_failure 5
		assert_equal "$output" ""
		assert_equal "$stderr" "fmt-convert: error: $SAMPLES/tiny.safetensors: metadata 'big': 18446744073709551615 is above 2^63-1, which .apsim readers cannot hold"
	done
	nothing_written u-00001-of-00003.apsim
}

@test "--shard edges: below every tensor's size a file a tensor; above the data one file, no listing; to standard output exit 2 in the run and the dry run (old dry run: exit 0)" {
	run --separate-stderr fmt-convert --dry-run --json --shard 1 "$SAMPLES/tiny.safetensors" t.safetensors
	assert_success
	assert_equal "$(jq -c '[.shards[] | [.file, .tensors, .bytes, .file_bytes]]' <<<"$output")" \
		'[["t-00001-of-00005.safetensors",1,8,104],["t-00002-of-00005.safetensors",1,16,128],["t-00003-of-00005.safetensors",1,48,160],["t-00004-of-00005.safetensors",1,4,116],["t-00005-of-00005.safetensors",1,16,128]]'
	local dry=$output
	run --separate-stderr fmt-convert --json --shard 1 "$SAMPLES/tiny.safetensors" t.safetensors
	assert_success
	assert_equal "$(set_on_disk <<<"$output")" "$(set_listed <<<"$dry")"
	# a limit above the whole tensor data: one file, as without --shard
	run --separate-stderr fmt-convert --dry-run --json --shard 1GB "$SAMPLES/tiny.safetensors" whole.safetensors
	assert_success
	assert_equal "$(jq -c '[has("shards"), has("index")]' <<<"$output")" '[false,false]'
	run --separate-stderr fmt-convert --json --shard 1GB "$SAMPLES/tiny.safetensors" whole.safetensors
	assert_success
	assert_equal "$(jq -c '[has("shards"), has("index")]' <<<"$output")" '[false,false]'
	[ -f whole.safetensors ]
	# to standard output: the usage error of the run, in the dry run too
	local dry_run
	for dry_run in "" --dry-run; do
		run --separate-stderr fmt-convert $dry_run --shard 40B --to gguf "$SAMPLES/tiny.safetensors" -
		assert_failure 2
		assert_equal "$output" ""
		assert_equal "$stderr" "fmt-convert: error: $SAMPLES/tiny.safetensors: a shard set cannot go to standard output"
	done
	run --separate-stderr fmt-convert --shard 0 "$SAMPLES/tiny.safetensors" z.safetensors
	assert_failure 2
	nothing_written z-00001-of-00001.safetensors
}

@test "--include / --exclude select tensors by glob" {
	run fmt-convert --dry-run --json --include 'layers.*' --exclude '*.bias' "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ "$(jq -c '[.tensor_count, .excluded, [.tensors[].name]]' <<<"$output")" = '[2,3,["layers.0.weight","layers.1.weight"]]' ]
	run fmt-convert --dry-run --json --include 'layers.?.weight' --include step "$SAMPLES/tiny.safetensors" out.gguf
	[ "$(jq -c '[.tensor_count, .excluded, [.tensors[].name]]' <<<"$output")" = '[3,2,["step","layers.0.weight","layers.1.weight"]]' ]
	run fmt-convert --dry-run --json --exclude 'layers.1.*' "$SAMPLES/tiny.safetensors" out.gguf
	[ "$(jq -c '[.tensor_count, .excluded, [.tensors[].name]]' <<<"$output")" = '[3,2,["step","layers.0.bias","layers.0.weight"]]' ]
	# a real conversion holds exactly the selected tensors, with their data
	fmt-convert --include 'layers.0.*' "$SAMPLES/tiny.safetensors" sel.gguf
	[ "$(fmt-inspect --json sel.gguf | jq -c '[.tensors[] | [.name, .offset]]')" = '[["layers.0.bias",0],["layers.0.weight",32]]' ]
	assert_equal "$(tensor_hex sel.gguf layers.0.bias)" "$(f32_hex 0.5 -0.25 0.125 0)"
}

@test "issue 20 item 3: a selection of no tensor, or a pattern matching none, is exit 2 naming the patterns" {
	tiny="$SAMPLES/tiny.safetensors"
	# a typo (layer. for layers.) and everything excluded: nothing written, in any format
	for out in out.gguf out.safetensors out.apsim out.apr; do
		run --separate-stderr fmt-convert --include 'layer.*' "$tiny" $out
		assert_equal "$status" 2
		assert_equal "$stderr" "fmt-convert: error: $tiny: --include 'layer.*' matches no tensor of the input (5 tensors)"
		assert_equal "$output" ""
		assert_nothing_written $out
		run --separate-stderr fmt-convert --exclude '*' "$tiny" $out
		assert_equal "$status" 2
		assert_equal "$stderr" "fmt-convert: error: $tiny: --exclude '*' selects none of the input's 5 tensors"
		assert_nothing_written $out
	done
	# a typo in one of several patterns is still a typo: every such pattern is named
	run --separate-stderr fmt-convert --include 'layers.0.*' --include 'lyers.1.*' --exclude '*.bais' "$tiny" out.gguf
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $tiny: --include 'lyers.1.*' --exclude '*.bais' match no tensor of the input (5 tensors)"
	assert_nothing_written out.gguf
	# patterns that each match, but together leave nothing
	run --separate-stderr fmt-convert --include 'layers.*' --exclude 'layers.*' "$tiny" out.gguf
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $tiny: --include 'layers.*' --exclude 'layers.*' select none of the input's 5 tensors"
	# --dry-run and --json say the same (the plan is never printed)
	run --separate-stderr fmt-convert --dry-run --json --exclude '*' "$tiny" out.gguf
	assert_equal "$status" 2
	assert_equal "$(jq -r '[.ok, .exit, .message] | @tsv' <<<"$output")" "false	2	--exclude '*' selects none of the input's 5 tensors"
	assert_equal "$(grep '^{' <<<"$stderr" | jq -r '[.exit, .message] | @tsv')" \
		"2	--exclude '*' selects none of the input's 5 tensors"
	# a scales tensor is not selectable on its own: a pattern naming only it matches nothing
	fmt-convert --dtype int8 "$tiny" q.apsim
	assert_equal "$(fmt-inspect --json q.apsim | jq -c '[.tensors[].name | select(endswith("__qscale"))][0]')" \
		'"layers.0.bias__qscale"'
	run --separate-stderr fmt-convert --include 'layers.0.bias__qscale' q.apsim out.safetensors
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: q.apsim: --include 'layers.0.bias__qscale' matches no tensor of the input (5 tensors)"
	# each pattern matching something and a tensor left: converted as before
	fmt-convert --include 'layers.0.*' --exclude '*.bias' "$tiny" one.gguf
	assert_equal "$(fmt-inspect --json one.gguf | jq -c '[.tensors[].name]')" '["layers.0.weight"]'
}

@test "--dtype: q8_0/q4_0 into safetensors and unknown names are usage errors (exit 2)" {
	for dt in q8_0 q4_0; do
		run fmt-convert --dtype "$dt" "$SAMPLES/tiny.safetensors" out.safetensors
		assert_failure 2
		assert_output --partial "--dtype $dt needs GGUF output"
		assert_nothing_written out.safetensors
	done
	for dt in f8 q7_k ""; do  # (q6_k is a type since issue 23: gguf-quantize.bats)
		run fmt-convert --dtype "$dt" "$SAMPLES/tiny.safetensors" out.gguf
		assert_failure 2
		assert_output --partial "--dtype takes f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, fp6, fp4 or keep"
		assert_nothing_written out.gguf
	done
	# the Apsi compressed formats need .apsim output
	for dt in int8 int4 fp8 fp6 fp4; do
		run fmt-convert --dtype "$dt" "$SAMPLES/tiny.safetensors" out.gguf
		assert_failure 2
		assert_output --partial "--dtype $dt needs .apsim output (gguf cannot hold it)"
		assert_nothing_written out.gguf
	done
	# names are case-insensitive
	run fmt-convert --dtype F16 "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
}

@test "output format: from --to or the extension, otherwise a usage error (exit 2)" {
	run fmt-convert "$SAMPLES/tiny.safetensors" out.bin
	assert_failure 2
	assert_line --index 0 "fmt-convert: error: cannot tell the output format from its name; use --to"
	assert_nothing_written out.bin
	run fmt-convert "$SAMPLES/tiny.safetensors" noext
	assert_failure 2
	assert_nothing_written noext
	run fmt-convert "$SAMPLES/tiny.safetensors" -
	assert_failure 2
	run fmt-convert --to onnx "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_line --index 0 "fmt-convert: error: --to takes safetensors, gguf, apsim, apr, nk, ald, arrow, arrow-stream, jsonl, csv or parquet (not 'onnx')"
	assert_nothing_written out.gguf
	# --to wins over the extension
	run fmt-convert --to safetensors "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	[ "$(fmt-inspect --json out.gguf | jq -r .format)" = safetensors ]
	cmp "$SAMPLES/tiny.safetensors" out.gguf
}

@test "an extension and a format name in any letter case: MODEL.GGUF, DATA.CSV, --to CSV, --from Csv" {
	# Files named on Windows or by spreadsheets were "cannot tell the output format" (exit 2).
	printf 'a,b\n1,2\n' >t.csv
	fmt-convert "$SAMPLES/tiny.safetensors" MODEL.GGUF
	fmt-convert "$SAMPLES/tiny.safetensors" model.gguf
	cmp MODEL.GGUF model.gguf
	fmt-convert t.csv DATA.JSONL
	[ "$(cat DATA.JSONL)" = '{"a":1,"b":2}' ]
	run fmt-convert --from Csv --to CSV t.csv -
	assert_success
	assert_output $'a,b\n1,2'
	# a set named in capitals: its shards and index take the prefix before the extension
	fmt-convert --shard 40B "$SAMPLES/tiny.safetensors" SET.SAFETENSORS >/dev/null
	[ "$(ls SET* | tr '\n' ' ')" = "SET-00001-of-00003.safetensors SET-00002-of-00003.safetensors SET-00003-of-00003.safetensors SET.safetensors.index.json " ]
	fmt-verify -q SET.safetensors.index.json
	fmt-shard pack SET.safetensors.index.json -o B.TAR.ZST >/dev/null
	[ "$(head -c 4 B.TAR.ZST | od -An -tx1 | tr -d ' ')" = 28b52ffd ]
}

@test "an existing output is refused without -f (exit 2, unchanged); -f overwrites" {
	echo precious > out.gguf
	run fmt-convert "$SAMPLES/tiny.safetensors" out.gguf
	assert_failure 2
	assert_output --partial "output exists"
	[ "$(cat out.gguf)" = precious ]
	run fmt-convert -f "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	fmt-convert "$SAMPLES/tiny.safetensors" fresh.gguf
	cmp fresh.gguf out.gguf
	run fmt-convert --force "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	assert_no_temp_files
}

@test "an existing output is refused before the input is read: a damaged input gives exit 2, not 4" {
	# The input's check (a hash of every byte, a CSV's type inference) used to run first, so a
	# forgotten -f cost a full read of the input and a damaged one answered with its damage.
	head -c 100 "$SAMPLES/tiny.safetensors" > cut.safetensors
	printf 'a,b\n1,2\n' > t.csv
	fmt-convert t.csv t.ald
	head -c 60 t.ald > cut.ald
	for pair in cut.safetensors:gguf cut.ald:csv; do
		input=${pair%:*} out=out.${pair#*:}
		run fmt-convert "$input" "fresh.${pair#*:}"
		assert_failure 4
		echo precious > "$out"
		run --separate-stderr fmt-convert "$input" "$out"
		[ "$status" -eq 2 ]
		[ "$stderr" = "fmt-convert: error: $out: output exists (use --force to overwrite)" ]
		[ "$(cat "$out")" = precious ]
	done
	# --dry-run writes nothing: an existing output is no obstacle to it
	run fmt-convert --dry-run "$SAMPLES/tiny.safetensors" out.gguf
	assert_success
	assert_no_temp_files
}

@test "a directory named as the output is refused before the input is read, -f or not (exit 2)" {
	# It was found out at the end: the whole conversion ran, then the rename failed (exit 3,
	# "cannot rename the temporary file over: Is a directory").
	head -c 100 "$SAMPLES/tiny.safetensors" > cut.safetensors
	printf 'a,b\n1,2\n' > t.csv
	mkdir -p out.gguf/keep plain
	touch out.gguf/keep/file
	for force in "" -f; do
		for args in "cut.safetensors out.gguf" "cut.safetensors plain" "--to gguf cut.safetensors plain" \
			"t.csv --to jsonl plain"; do
			run --separate-stderr fmt-convert $force $args
			[ "$status" -eq 2 ]
			[[ "$stderr" == "fmt-convert: error: ${args##* }: is a directory (expected the output file's name)"* ]]
		done
	done
	fmt-shard split "$SAMPLES/tiny.safetensors" --max-tensors 1 -o part >/dev/null
	fmt-sign keygen --watermark -s wm.key >/dev/null
	mkdir again-00002-of-00002.safetensors
	for cmd in "fmt-shard merge part.safetensors.index.json -o plain" "fmt-shard concat t.csv t.csv -o plain" \
		"fmt-shard split $SAMPLES/tiny.safetensors --max-tensors 3 -o again" \
		"fmt-watermark embed --key wm.key --buyer b1 $SAMPLES/tiny.safetensors plain"; do
		for force in "" -f; do
			run --separate-stderr $cmd $force
			[ "$status" -eq 2 ]
			[[ "$stderr" == *": is a directory (expected the output file's name)"* ]]
		done
	done
	[ -f out.gguf/keep/file ] && [ -z "$(ls -A plain)" ] && [ -z "$(ls -A again-00002-of-00002.safetensors)" ]
	[ ! -e again-00001-of-00002.safetensors ]
	assert_no_temp_files
}

@test "output = input (same path, ./path, symlink, hard link) is refused even with -f" {
	cp "$SAMPLES/tiny.safetensors" in.safetensors
	ln -s in.safetensors sym.safetensors
	ln in.safetensors hard.safetensors
	for out in in.safetensors ./in.safetensors sym.safetensors hard.safetensors; do
		run fmt-convert -f in.safetensors "$out"
		assert_failure 2
		assert_output --partial "output is the same file as input"
	done
	cmp "$SAMPLES/tiny.safetensors" in.safetensors
	[ -L sym.safetensors ]
}

@test "-T 1, 2 and 3 give byte-identical output (f16, bf16, q8_0, q4_0 on 300x1024)" {
	for dt in f16 bf16 q8_0 q4_0; do
		for n in 1 2 3; do
			run fmt-convert -T "$n" --dtype "$dt" "$FX/big.safetensors" "$dt-$n.gguf"
			assert_success
		done
		cmp "$dt-1.gguf" "$dt-2.gguf"
		cmp "$dt-1.gguf" "$dt-3.gguf"
		run fmt-verify "$dt-1.gguf"
		assert_success
	done
	run fmt-convert --threads 2 --dtype q4_0 "$FX/big.safetensors" long.gguf
	assert_success
	cmp q4_0-1.gguf long.gguf
	[ "$(stat -c %s q4_0-1.gguf)" -lt "$(stat -c %s q8_0-1.gguf)" ]
}

@test "GGUF with a quantized tensor -> safetensors: expanded with a warning, exit 0" {
	fmt-convert --dtype q4_0 "$FX/big.safetensors" big-q4.gguf
	run --separate-stderr fmt-convert big-q4.gguf big.safetensors
	assert_success
	[ "$stderr" = "fmt-convert: warning: 1 quantized tensor expanded to a float type: big.weight" ]
	[ "$(fmt-inspect --json big.safetensors | jq -c '[.tensors[] | [.name, .dtype, .shape]]')" = \
		'[["big.bias","F32",[1024]],["big.weight","F32",[300,1024]],["ids","I32",[5]],["odd.weight","F16",[4,40]]]' ]
	run --separate-stderr fmt-convert --json --dtype bf16 big-q4.gguf big16.safetensors
	assert_success
	[ "$(jq -c '[.expanded, (.tensors[] | select(.name == "big.weight") | [.from, .to, .bytes])]' <<<"$output")" = '[1,["Q4_0","BF16",614400]]' ]
	run --separate-stderr fmt-convert -q big-q4.gguf quiet.safetensors
	assert_success
	[ -z "$stderr" ]
	cmp big.safetensors quiet.safetensors
	# every value is (code - 8) * fp16(d) exactly (§12) and within |d| of the input (half a step
	# from rounding, a whole step where code 16 is clamped to 15, plus the fp16 rounding of d)
	tensor_hex big-q4.gguf big.weight | xxd -r -p > q4.bin
	tensor_hex big.safetensors big.weight | xxd -r -p > y.f32
	run python3 -c '
import struct, sys
q = open(sys.argv[1], "rb").read()
x = struct.unpack("<307200f", open(sys.argv[2], "rb").read())
y = struct.unpack("<307200f", open(sys.argv[3], "rb").read())
bad = 0
for b in range(len(q) // 18):
    d = struct.unpack("<e", q[18*b:18*b+2])[0]
    for j in range(16):
        lo, hi = q[18*b+2+j] & 15, q[18*b+2+j] >> 4
        for k, code in ((j, lo), (j + 16, hi)):
            i = 32 * b + k
            if y[i] != (code - 8) * d or abs(x[i] - y[i]) > abs(d) * 1.01:
                bad += 1
print(len(q) // 18, bad)' q4.bin "$FX/big.f32" y.f32
	assert_success
	assert_output "9600 0"
}

@test "a sharded safetensors index -> one GGUF holding every tensor" {
	run fmt-convert "$SAMPLES/sharded/model.safetensors.index.json" sharded.gguf
	assert_success
	fmt-convert "$SAMPLES/tiny.safetensors" single.gguf
	fmt-inspect --json sharded.gguf > s.json
	fmt-inspect --json single.gguf > one.json
	assert_equal "$(jq -c '.tensor_count, .files, ([.tensors[].name] | sort), .metadata' s.json)" '5
1
["layers.0.bias","layers.0.weight","layers.1.bias","layers.1.weight","step"]
{"format":"pt","general.file_type":1}'
	# each tensor: the same dtype, shape, size and bytes as converting the one file
	assert_equal "$(jq -c '[.tensors[] | [.name, .dtype, .shape, .bytes]] | sort' s.json)" \
		"$(jq -c '[.tensors[] | [.name, .dtype, .shape, .bytes]] | sort' one.json)"
	sharded=$(tensors_hex sharded.gguf)
	single=$(tensors_hex single.gguf)
	[ "$(wc -l <<<"$single")" -eq 5 ]
	assert_equal "$(sort <<<"$sharded")" "$(sort <<<"$single")"
	# and back to one safetensors file
	fmt-convert "$SAMPLES/sharded/model.safetensors.index.json" one.safetensors
	[ "$(fmt-inspect --json one.safetensors | jq .files)" = 1 ]
	one=$(tensors_hex one.safetensors)
	tiny=$(tensors_hex "$SAMPLES/tiny.safetensors")
	[ "$(wc -l <<<"$tiny")" -eq 5 ]
	assert_equal "$(sort <<<"$one")" "$(sort <<<"$tiny")"
}

@test "OUTPUT - writes to standard output the same bytes as a file" {
	fmt-convert --to gguf --dtype q8_0 "$FX/big.safetensors" - > piped.gguf
	fmt-convert --dtype q8_0 "$FX/big.safetensors" file.gguf
	cmp piped.gguf file.gguf
	fmt-convert --to safetensors "$SAMPLES/tiny.safetensors" - | cat > piped.safetensors
	cmp "$SAMPLES/tiny.safetensors" piped.safetensors
	# --json and --verbose never mix a report into the model on standard output
	fmt-convert --json -v --to gguf --dtype q8_0 "$FX/big.safetensors" - > json.gguf 2> json.err
	cmp json.gguf file.gguf
	[ ! -s json.err ]
}

@test "general.alignment set with --set aligns the data section and every tensor" {
	run fmt-convert --set general.alignment:u32=64 "$SAMPLES/tiny.safetensors" a64.gguf
	assert_success
	fmt-inspect --json a64.gguf > a.json
	[ "$(jq -c '[.tensors[].offset]' a.json)" = '[0,64,128,192,256]' ]
	[ "$(jq -c '.metadata_types["general.alignment"]' a.json)" = '"u32"' ]
	# data_start = file size - 5 * 64, a multiple of 64; layers.0.bias is at data_start + 64
	size=$(stat -c %s a64.gguf)
	start=$((size - 5 * 64))
	[ $((start % 64)) -eq 0 ]
	assert_equal "$(xxd -p -s $((start + 64)) -l 16 a64.gguf)" "$(f32_hex 0.5 -0.25 0.125 0)"
	run fmt-convert --set general.alignment:u32=48 "$SAMPLES/tiny.safetensors" a48.gguf
	assert_failure
	assert_output --partial "general.alignment = 48"
	assert_nothing_written a48.gguf
}

@test "OUT that is a file an option names (--sign-key, --schema: any file option) is refused before anything, -f or not" {
	# Only IN was compared: 'fmt-convert -f --sign-key k.ald d.csv k.ald' overwrote the secret key
	# with the dataset it signed.
	printf 'id,x\n1,2.5\n' >d.csv
	fmt-sign keygen -W -p k.pub -s k.ald >/dev/null
	printf '{"x": "float32"}' >s.csv
	ln s.csv s-link.csv
	sha256sum k.ald s.csv >sums
	run --separate-stderr fmt-convert -f --sign-key k.ald d.csv k.ald
	assert_failure 2
	assert_equal "$(head -n 1 <<<"$stderr")" "fmt-convert: error: OUT names the same file as --sign-key (k.ald)"
	run --separate-stderr fmt-convert -f --schema s.csv d.csv s-link.csv
	assert_failure 2
	assert_equal "$(head -n 1 <<<"$stderr")" "fmt-convert: error: OUT names the same file as --schema (s.csv)"
	sha256sum -c --quiet sums
	run fmt-convert --schema s.csv d.csv out.csv
	assert_success
	# --metadata-from OUT is read whole before OUT is replaced: rebuilding a file keeps its keys
	fmt-convert -q --set general.name=kept "$SAMPLES/tiny.safetensors" m.gguf
	run fmt-convert -f --metadata-from m.gguf "$SAMPLES/tiny.safetensors" m.gguf
	assert_success
	[ "$(fmt-inspect --json m.gguf | jq -r '.metadata["general.name"]')" = kept ]
}

@test "OUTPUT - on a terminal is refused (exit 2) for a binary format; CSV and JSON Lines are text, shown there" {
	command -v script >/dev/null || skip "script(1) is not installed"
	run script -qec "fmt-convert --to gguf '$SAMPLES/tiny.safetensors' -" /dev/null
	assert_failure 2
	assert_output --partial "refusing to write binary output to a terminal"
	printf 'id,name\n1,ann\n' >t.csv
	for to in ald arrow parquet; do
		run script -qec "fmt-convert --to $to t.csv -" /dev/null
		assert_failure 2
		assert_output --partial "refusing to write binary output to a terminal"
	done
	# it was refused too: the README shows 'fmt-convert --to csv data.ald -' printing the rows
	run script -qec "fmt-convert --to csv t.csv -" /dev/null
	assert_success
	assert_output $'id,name\r\n1,ann\r'
	run script -qec "fmt-convert --to jsonl t.csv -" /dev/null
	assert_success
	assert_output $'{"id":1,"name":"ann"}\r'
	run script -qec "fmt-shard concat t.csv t.csv -o -" /dev/null
	assert_success
	assert_output $'id,name\r\n1,ann\r\n1,ann\r'
}

# ---------------------------------------------------------------------------------------------
# Hostile input

@test "truncated or malformed input: exit 4 with a message, no output file" {
	head -c 300 "$SAMPLES/tiny.safetensors" > header.safetensors
	head -c 400 "$SAMPLES/tiny.safetensors" > data.safetensors
	fmt-convert --dtype keep "$SAMPLES/tiny.safetensors" full.gguf
	head -c 400 full.gguf > data.gguf
	printf 'GGUF\3\0\0\0' > header.gguf
	run fmt-convert header.safetensors out.gguf
	assert_failure 4
	assert_output "fmt-convert: error: header.safetensors: header length 368 runs past the end of the file (292 bytes after the length field)"
	assert_nothing_written out.gguf
	run fmt-convert data.safetensors out.gguf
	assert_failure 4
	assert_output --partial "data.safetensors: file is truncated"
	assert_nothing_written out.gguf
	run fmt-convert header.gguf out.safetensors
	assert_failure 4
	assert_nothing_written out.safetensors
	run fmt-convert data.gguf out.safetensors
	assert_failure 4
	assert_output --partial "runs past the end of the file"
	assert_nothing_written out.safetensors
	# --dry-run reads the same headers
	run fmt-convert --dry-run data.safetensors out.gguf
	assert_failure 4
	run fmt-convert missing.safetensors out.gguf
	assert_failure 3
	assert_nothing_written out.gguf
}

@test "--json error report on stderr for a failed conversion" {
	run --separate-stderr fmt-convert --json --dtype q8_0 "$FX/nan.safetensors" out.gguf
	assert_failure 4
	# stdout: the conversion's failure record; stderr: the error object alone
	[ "$(jq -c '[.file, .ok, .exit, .error]' <<<"$output")" = "[\"$FX/nan.safetensors\",false,4,\"InvalidFormat\"]" ]
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
	[ "$(jq -c '[.tool, .level, .error, .exit]' <<<"$stderr")" = '["fmt-convert","error","InvalidFormat",4]' ]
	assert_nothing_written out.gguf
}

@test "progress: drawn on a terminal and erased; never on a pipe, with --no-progress or --quiet" {
	export FMTKIT_PROGRESS_AFTER=0   # draw from the first byte, so a tiny model shows it
	script -q -c "fmt-convert '$SAMPLES/tiny.safetensors' shown.gguf" transcript >/dev/null
	[ -f shown.gguf ]
	# "\r\e[Kfmt-convert  33%  24 B of 72 B  43.5 KiB/s" ... then "\r\e[K" erases it
	grep -aqE $'\r\e\\[Kfmt-convert +[0-9]+%  [0-9]+ B of 72 B  [0-9.]+ [KMG]?i?B/s' transcript ||
		fail "no progress line: $(cat -v transcript)"
	grep -aqE $'B/s\r\e\\[K\r?$' transcript || fail "not erased: $(cat -v transcript)"
	run --separate-stderr fmt-convert "$SAMPLES/tiny.safetensors" piped.gguf
	assert_success
	[ -z "$stderr" ]
	for flag in --no-progress --quiet; do
		rm -f out.gguf
		script -q -c "fmt-convert $flag '$SAMPLES/tiny.safetensors' out.gguf" transcript >/dev/null
		[ -f out.gguf ]
		! grep -aq $'\e\[K' transcript || fail "$flag: something was drawn: $(cat -v transcript)"
	done
}

@test "an output path that is a FIFO or a character device is written into, never replaced, even with --force; a set's file there is refused" {
	printf 'a,s\n1,x\n2,y\n' >in.csv
	mkfifo out.fifo
	local f
	for f in "" --force; do
		timeout 20 cat out.fifo >got.csv &
		run timeout 20 fmt-convert $f --to csv in.csv out.fifo
		assert_success
		wait
		cmp in.csv got.csv
		[ -p out.fifo ]
	done
	# a device: root makes one (as /dev/null is; --force used to rename a file over it)
	if [ "$(id -u)" = 0 ]; then
		mknod nul c 1 3
		run fmt-convert --force --to arrow in.csv nul
		assert_success
		[ -c nul ]
		assert_equal "$(stat -c '%t,%T' nul)" "1,3"
	fi
	# a format that completes its header last cannot go there: said as for standard output
	timeout 20 cat out.fifo >/dev/null &
	run --separate-stderr timeout 20 fmt-convert --to ald in.csv out.fifo
	wait
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: in.csv: .ald cannot be written to a FIFO or device (its header is completed last)"
	[ -p out.fifo ]
	# a block device, a socket: refused
	/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("out.sock")'
	run --separate-stderr fmt-convert --force --to csv in.csv out.sock
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: out.sock: is a socket; only a file, a FIFO or a character device is written"
	[ -S out.sock ]
	# the files of a set are renamed into place: a FIFO where one goes is refused, nothing written
	mkdir parts
	mkfifo parts/in-00001-of-00002.csv
	run --separate-stderr fmt-shard split in.csv --rows 1 -o parts --force
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: parts/in-00001-of-00002.csv: is a FIFO; the files of a set are created and renamed into place"
	[ -p parts/in-00001-of-00002.csv ]
	assert_equal "$(ls parts)" in-00001-of-00002.csv
}
