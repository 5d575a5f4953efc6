#!/usr/bin/env bats
# GGUF metadata as llama.cpp users edit it (issue 27): typed arrays from --set-from and --set,
# keys copied with --metadata-from [--keys], removed with --unset, edited with --in-place, and
# the round trip fmt-inspect --json --full -> --set-from. The proof: a llama-architecture GGUF
# built from safetensors + a vocabulary that gguf-py wrote, whose key types gguf-py reads back
# as llama.cpp needs them (scripts/gen/llama-tiny; gguf-py from scripts/llama-src).

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	LT="$BATS_FILE_TMPDIR/llama"
	export LT
	"$REPO_ROOT/scripts/gen/llama-tiny" "$LT"
	GGUF_PY="$("$REPO_ROOT/scripts/llama-src")/gguf-py"
	export GGUF_PY
	# the model every test starts from: weights + vocabulary + hyperparameters
	fmt-convert --arch llama --dtype q8_0 --metadata-from "$LT/vocab.gguf" --keys 'tokenizer.*' \
		--set-from "$LT/hparams.json" "$LT/weights.safetensors" "$LT/tiny.gguf"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# Python with gguf-py (llama.cpp's reader and writer) importable.
ggufpy() {
	PYTHONPATH="$GGUF_PY" /usr/bin/python3 -B "$@"
}

# Every key of a GGUF as gguf-py reads it: "KEY TYPE" or "KEY ARRAY/ITEMTYPE", one a line (the
# item type as the array states it: parts[3] of gguf-py's field, which names an empty array's
# type too).
ggufpy_types() {
	ggufpy - "$1" <<-'EOF'
		import sys
		from gguf import GGUFReader, GGUFValueType as T
		for f in GGUFReader(sys.argv[1]).fields.values():
		    if f.name.startswith("GGUF."):
		        continue
		    t = f.types[0].name
		    if f.types[0] == T.ARRAY:
		        t += "/" + T(int(f.parts[3][0])).name
		    print(f.name, t)
	EOF
}

# The tokenizer keys of scripts/gen/llama-tiny's vocabulary with the types gguf-py gave them:
# what llama.cpp requires (token types INT32, scores FLOAT32, ids UINT32).
tokenizer_types() {
	cat <<-'EOF'
		tokenizer.ggml.model STRING
		tokenizer.ggml.tokens ARRAY/STRING
		tokenizer.ggml.scores ARRAY/FLOAT32
		tokenizer.ggml.token_type ARRAY/INT32
		tokenizer.ggml.bos_token_id UINT32
		tokenizer.ggml.eos_token_id UINT32
		tokenizer.ggml.unknown_token_id UINT32
		tokenizer.ggml.add_bos_token BOOL
		tokenizer.ggml.add_eos_token BOOL
	EOF
}

# No temporary file of an atomic write left in the current directory.
no_temp_left() {
	local left
	left=$(find . -maxdepth 1 -name '.fmtkit-tmp-*')
	[ -z "$left" ] || fail "temporary files left behind: $left"
}

# ---------------------------------------------------------------------------------------------
# The llama model: safetensors + --metadata-from a gguf-py vocabulary

@test "llama GGUF from safetensors + --metadata-from a gguf-py vocabulary: gguf-py reads llama.cpp's key types" {
	run ggufpy_types "$LT/tiny.gguf"
	assert_success
	assert_output "$(printf 'general.architecture STRING\ngeneral.quantization_version UINT32\ngeneral.file_type UINT32\n'
		tokenizer_types
		cat <<-'EOF'
		llama.context_length UINT32
		llama.embedding_length UINT32
		llama.block_count UINT32
		llama.feed_forward_length UINT32
		llama.rope.dimension_count UINT32
		llama.attention.head_count UINT32
		llama.attention.head_count_kv UINT32
		llama.attention.layer_norm_rms_epsilon FLOAT32
	EOF
	)"
	# the tokenizer's values are the vocabulary's, item for item; the tensors gguf-py sees
	run ggufpy - "$LT/vocab.gguf" "$LT/tiny.gguf" <<-'EOF'
		import sys
		from gguf import GGUFReader
		vocab, out = GGUFReader(sys.argv[1]), GGUFReader(sys.argv[2])
		for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
		    a, b = vocab.fields[k].contents(), out.fields[k].contents()
		    assert a == b, k
		    print(k, len(b))
		print("context", out.fields["llama.context_length"].contents())
		print("epsilon", out.fields["llama.attention.layer_norm_rms_epsilon"].contents())
		kinds = sorted({(t.tensor_type.name, len(t.shape)) for t in out.tensors})
		print(len(out.tensors), "tensors", kinds)
	EOF
	assert_success
	assert_output - <<-'EOF'
		tokenizer.ggml.tokens 341
		tokenizer.ggml.scores 341
		tokenizer.ggml.token_type 341
		context 256
		epsilon 9.999999747378752e-06
		21 tensors [('F32', 1), ('Q8_0', 2)]
	EOF
}

@test "--metadata-from without --keys copies every key but the ones that describe the vocabulary file" {
	fmt-convert --dtype f32 --metadata-from "$LT/vocab.gguf" "$LT/weights.safetensors" all.gguf
	run ggufpy_types all.gguf
	assert_success
	# general.file_type is this file's own (F32: 0), not copied; general.alignment never is
	assert_output "$(printf 'general.file_type UINT32\ngeneral.architecture STRING\ngeneral.name STRING\nllama.context_length UINT32\n'
		tokenizer_types)"
	[ "$(fmt-inspect --json all.gguf | jq -c '[.metadata["llama.context_length"], .metadata["general.file_type"]]')" = '[4096,0]' ]
	# a vocabulary with general.alignment 64: the output keeps its own alignment (32)
	fmt-convert --dtype keep --set general.alignment:u32=64 "$LT/vocab.gguf" vocab64.gguf
	fmt-convert --dtype f32 --metadata-from vocab64.gguf --keys 'general.*' "$LT/weights.safetensors" a.gguf
	[ "$(fmt-inspect --json a.gguf | jq -c '[.metadata | keys[] | select(startswith("general."))]')" = \
		'["general.architecture","general.file_type","general.name"]' ]
}

@test "--metadata-from: later --set-from and --set win; --keys globs repeat" {
	fmt-convert --dtype f32 --metadata-from "$LT/vocab.gguf" --keys 'tokenizer.ggml.*_id' --keys general.name \
		--set general.name=mine --set tokenizer.ggml.bos_token_id:u32=7 "$LT/weights.safetensors" o.gguf
	[ "$(fmt-inspect --json o.gguf | jq -c '.metadata')" = \
		'{"general.file_type":0,"general.name":"mine","tokenizer.ggml.bos_token_id":7,"tokenizer.ggml.eos_token_id":2,"tokenizer.ggml.unknown_token_id":0}' ]
}

@test "--metadata-from hostile: not GGUF, truncated, huge counts: exit 4 naming the file, nothing written" {
	printf 'not a model at all, just text\n' > notgguf.bin
	head -c 200 "$LT/vocab.gguf" > truncated.gguf
	"$REPO_ROOT/scripts/gen/gguf-malformed" gen >/dev/null
	for f in notgguf.bin truncated.gguf gen/bad_kv_count_huge.gguf gen/bad_array_count_2p62.gguf \
		gen/bad_tensor_count_huge.gguf; do
		run --separate-stderr fmt-convert --metadata-from "$f" "$LT/weights.safetensors" out.gguf
		[ "$status" -eq 4 ] || fail "$f: exit $status, expected 4 ($stderr)"
		[[ "$stderr" == "fmt-convert: error: $f: --metadata-from: "* ]] || fail "$f: $stderr"
		[ ! -e out.gguf ] || fail "$f: out.gguf written"
	done
	run --separate-stderr fmt-convert --metadata-from gen/bad_array_count_2p62.gguf "$LT/weights.safetensors" out.gguf
	[[ "$stderr" == *"array of"* ]] || fail "$stderr"
	run --separate-stderr fmt-convert --metadata-from missing.gguf "$LT/weights.safetensors" out.gguf
	assert_equal "$status" 3
	no_temp_left
}

@test "--metadata-from and --keys: usage errors exit 2, nothing written" {
	run --separate-stderr fmt-convert --keys 'tokenizer.*' "$LT/weights.safetensors" out.gguf
	assert_equal "$status" 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: --keys chooses the keys of --metadata-from"
	run --separate-stderr fmt-convert --metadata-from "$LT/vocab.gguf" --keys 'tokenizer.*' --keys 'nothing.*' \
		"$LT/weights.safetensors" out.gguf
	assert_equal "$status" 2
	[[ "$stderr" == *"--keys nothing.* matches no key of $LT/vocab.gguf that can be copied"* ]] || fail "$stderr"
	# general.alignment and split.* describe the vocabulary file: not copied, so not matched
	run --separate-stderr fmt-convert --metadata-from "$LT/vocab.gguf" --keys general.alignment \
		"$LT/weights.safetensors" out.gguf
	assert_equal "$status" 2
	# safetensors holds strings only: a typed key is refused, a string key is copied
	run --separate-stderr fmt-convert --metadata-from "$LT/vocab.gguf" "$LT/weights.safetensors" out.safetensors
	assert_equal "$status" 2
	[[ "$stderr" == *"--metadata-from $LT/vocab.gguf: llama.context_length is a u32; the output's metadata holds strings only"* ]] || fail "$stderr"
	[ ! -e out.gguf ] && [ ! -e out.safetensors ]
	fmt-convert --metadata-from "$LT/vocab.gguf" --keys general.name "$LT/weights.safetensors" s.safetensors
	[ "$(fmt-inspect --json s.safetensors | jq -c .metadata)" = '{"general.name":"fmtkit tiny vocabulary"}' ]
	no_temp_left
}

# ---------------------------------------------------------------------------------------------
# Typed arrays: --set-from {"type": T, "value": [...]} and --set KEY:TYPE[]=...

@test "--set-from types an array's items: every scalar type, str, nested arrays, 'array' of differing items" {
	cat > typed.json <<-'EOF'
		{"a.u8": {"type": "u8", "value": [0, 255]}, "a.i8": {"type": "i8", "value": [-128, 127]},
		 "a.u16": {"type": "u16", "value": [65535]}, "a.i16": {"type": "i16", "value": [-32768]},
		 "a.u32": {"type": "u32", "value": [4294967295]}, "a.i32": {"type": "i32", "value": [1, 2, 3]},
		 "a.u64": {"type": "u64", "value": ["18446744073709551615", 1]},
		 "a.i64": {"type": "i64", "value": [-9223372036854775808]},
		 "a.f32": {"type": "f32", "value": [0.1, -0.0, "inf", "nan", 1]}, "a.f64": {"type": "f64", "value": [0.1]},
		 "a.bool": {"type": "bool", "value": [true, false]}, "a.str": {"type": "str", "value": ["x", "a\u0000b", ""]},
		 "a.empty": {"type": "i16", "value": []},
		 "a.nested": {"type": "i32", "value": [[1, 2], [], [3]]},
		 "a.mixed": {"type": "array", "value": [{"type": "u8", "value": [1]}, {"type": "str", "value": ["s"]}]},
		 "a.none": {"type": "array", "value": []}}
	EOF
	fmt-convert --set-from typed.json "$LT/weights.safetensors" t.gguf
	run ggufpy_types t.gguf
	assert_success
	assert_output - <<-'EOF'
		general.file_type UINT32
		a.u8 ARRAY/UINT8
		a.i8 ARRAY/INT8
		a.u16 ARRAY/UINT16
		a.i16 ARRAY/INT16
		a.u32 ARRAY/UINT32
		a.i32 ARRAY/INT32
		a.u64 ARRAY/UINT64
		a.i64 ARRAY/INT64
		a.f32 ARRAY/FLOAT32
		a.f64 ARRAY/FLOAT64
		a.bool ARRAY/BOOL
		a.str ARRAY/STRING
		a.empty ARRAY/INT16
		a.nested ARRAY/ARRAY
		a.mixed ARRAY/ARRAY
		a.none ARRAY/ARRAY
	EOF
	# the items of an array of arrays, in the file's bytes
	hex=$(xxd -p t.gguf | tr -d '\n')
	# a.nested: ARRAY of 3 ARRAYs, [INT32 x2: 1, 2], [INT32 x0], [INT32 x1: 3]
	[[ $hex == *"$(printf a.nested | xxd -p)09000000090000000300000000000000050000000200000000000000010000000200000005000000000000000000000005000000010000000000000003000000"* ]] || fail "a.nested bytes"
	# a.str: the NUL inside a string is kept
	[[ $hex == *"$(printf a.str | xxd -p)0900000008000000030000000000000001000000000000007803000000000000006100620000000000000000"* ]] || fail "a.str bytes"
	run fmt-inspect --json t.gguf
	# (jq would print -0.0 as -0: the line as fmt-inspect wrote it)
	[ "$(grep -o '"a.f32":\[[^]]*\]' <<<"$output")" = '"a.f32":[0.10000000149011612,-0.0,"inf","nan",1.0]' ]
	[ "$(jq -c '.metadata["a.u64"]' <<<"$output")" = '["18446744073709551615",1]' ]
}

@test "--set KEY:TYPE[]=V1,V2,...: short arrays, with \\, for a comma" {
	fmt-convert --set 'k.i32:i32[]=1,-2,3' --set 'k.str:str[]=a\,b,c\\,' --set 'k.none:u8[]=' \
		--set 'k.f:f32[]=0.5' --set 'k.b:bool[]=true,0' "$LT/weights.safetensors" s.gguf
	run fmt-inspect --json s.gguf
	[ "$(jq -c '[.metadata["k.i32"], .metadata["k.str"], .metadata["k.none"], .metadata["k.f"], .metadata["k.b"]]' <<<"$output")" = \
		'[[1,-2,3],["a,b","c\\",""],[],[0.5],[true,false]]' ]
	[ "$(jq -c '[.metadata_types["k.i32"], .metadata_types["k.str"], .metadata_types["k.none"], .metadata_types["k.b"]]' <<<"$output")" = \
		'["array[i32]","array[str]","array[u8]","array[bool]"]' ]
	# the same array from --set-from gives the same bytes
	echo '{"k.i32": {"type": "i32", "value": [1, -2, 3]}}' > k.json
	fmt-convert --set 'k.i32:i32[]=1,-2,3' "$LT/weights.safetensors" a.gguf
	fmt-convert --set-from k.json "$LT/weights.safetensors" b.gguf
	cmp a.gguf b.gguf
}

@test "arrays that do not fit their type: exit 2 naming the item and its value, nothing written" {
	while IFS='|' read -r json msg; do
		echo "$json" > bad.json
		run --separate-stderr fmt-convert --set-from bad.json "$LT/weights.safetensors" out.gguf
		[ "$status" -eq 2 ] || fail "$json: exit $status, expected 2 ($stderr)"
		assert_equal "$stderr" "fmt-convert: error: $LT/weights.safetensors: $msg"
		[ ! -e out.gguf ] || fail "$json: out.gguf written"
	done <<-'EOF'
		{"k": {"type": "u8", "value": [1, 300]}}|--set-from k item 1: '300' is not a valid u8
		{"k": {"type": "i32", "value": [1, "x"]}}|--set-from k item 1: 'x' is not a valid i32
		{"k": {"type": "i32", "value": [2147483648]}}|--set-from k item 0: '2147483648' is not a valid i32
		{"k": {"type": "u32", "value": [-1]}}|--set-from k item 0: '-1' is not a valid u32
		{"k": {"type": "bool", "value": [true, 2]}}|--set-from k item 1: '2' is not a valid bool
		{"k": {"type": "f32", "value": [1e40]}}|--set-from k item 0: '1e+40' is not a valid f32
		{"k": {"type": "i16", "value": [1, null]}}|--set-from k item 1: null does not fit type i16
		{"k": {"type": "i16", "value": [[1], 2]}}|--set-from k item 1: i16 in an array of array (items must all have one type)
		{"k": {"type": "array", "value": [1]}}|--set-from k item 0: type array takes {"type": T, "value": [...]} items
		{"k": {"type": "array", "value": 1}}|--set-from k: type array takes a JSON array
		{"k": {"type": "i33", "value": [1]}}|--set-from k: unknown type 'i33' (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str array)
		{"k": {"type": "u8", "value": [{"type": "str", "value": "s"}]}}|--set-from k item 0: str in an array of u8 (items must all have one type)
	EOF
	for bad in 'k:u8[]=1,300|--set k item 1: '"'300'"' is not a valid u8' \
		'k:i32[]=1,,2|--set k item 1: '"''"' is not a valid i32' \
		'k:bool[]=yes|--set k item 0: '"'yes'"' is not a valid bool' \
		'k:i32[=1|--set k:i32[: unknown type (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str, TYPE[] for an array)'; do
		run --separate-stderr fmt-convert --set "${bad%%|*}" "$LT/weights.safetensors" out.gguf
		assert_equal "$status" 2
		assert_equal "$stderr" "fmt-convert: error: $LT/weights.safetensors: ${bad#*|}"
	done
	run --separate-stderr fmt-convert --set 'k:str[]=a' "$LT/weights.safetensors" out.safetensors
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $LT/weights.safetensors: --set k: safetensors metadata holds strings only"
	[ ! -e out.gguf ] && [ ! -e out.safetensors ]
	no_temp_left
}

@test "arrays nested deeper than the format allows: exit 2 from --set-from, exit 5 from the GGUF writer" {
	python3 -c 'print("{\"k\": {\"type\": \"u8\", \"value\": " + "[" * 17 + "1" + "]" * 17 + "}}")' > deep.json
	run --separate-stderr fmt-convert --set-from deep.json "$LT/weights.safetensors" out.gguf
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $LT/weights.safetensors: --set-from k: arrays nested more than 16 levels deep"
	python3 -c 'print("{\"k\": {\"type\": \"u8\", \"value\": " + "[" * 10 + "1" + "]" * 10 + "}}")' > nine.json
	run --separate-stderr fmt-convert --set-from nine.json "$LT/weights.safetensors" out.gguf
	assert_equal "$status" 5
	[[ "$stderr" == *"key 'k': arrays nested more than 8 levels deep"* ]] || fail "$stderr"
	[ ! -e out.gguf ]
}

# ---------------------------------------------------------------------------------------------
# The round trip: fmt-inspect --json --full -> (edit) -> --set-from

@test "fmt-inspect --json --full prints metadata_typed; --set-from reads it back to the same bytes" {
	fmt-inspect --json --full "$LT/tiny.gguf" > rec.json
	[ "$(jq -c '.metadata_typed["tokenizer.ggml.token_type"] | [.type, (.value | length), .value[0:4]]' rec.json)" = \
		'["i32",341,[2,3,3,6]]' ]
	[ "$(jq -c '.metadata_typed["llama.attention.layer_norm_rms_epsilon"]' rec.json)" = \
		'{"type":"f32","value":9.999999747378752e-06}' ]
	# without --full there is no metadata_typed
	[ "$(fmt-inspect --json "$LT/tiny.gguf" | jq 'has("metadata_typed")')" = false ]
	# the whole record, or its metadata_typed object, onto the bare weights: the same file
	fmt-convert --arch llama --dtype q8_0 --set-from rec.json "$LT/weights.safetensors" back.gguf
	cmp "$LT/tiny.gguf" back.gguf
	jq .metadata_typed rec.json > typed.json
	fmt-convert --arch llama --dtype q8_0 --set-from typed.json "$LT/weights.safetensors" back2.gguf
	cmp "$LT/tiny.gguf" back2.gguf
	# edited: the same bytes as the edit made with --set
	jq '.["llama.context_length"].value = 512 | .["tokenizer.ggml.token_type"].value[3] = 1' typed.json > edited.json
	fmt-convert --arch llama --dtype q8_0 --set-from edited.json "$LT/weights.safetensors" edited.gguf
	jq -r '.["tokenizer.ggml.token_type"].value | map(tostring) | join(",")' edited.json > types.txt
	fmt-convert --dtype keep --set llama.context_length:u32=512 \
		--set "tokenizer.ggml.token_type:i32[]=$(cat types.txt)" "$LT/tiny.gguf" want.gguf
	cmp edited.gguf want.gguf
}

@test "round trip of every value type, -0.0, NaN, u64 max, NUL in strings and arrays of differing arrays" {
	cat > all.json <<-'EOF'
		{"u8": {"type": "u8", "value": 255}, "i8": {"type": "i8", "value": -1}, "u16": {"type": "u16", "value": 7},
		 "i16": {"type": "i16", "value": -7}, "u32": {"type": "u32", "value": 7}, "i32": {"type": "i32", "value": -7},
		 "u64": {"type": "u64", "value": "18446744073709551615"}, "i64": {"type": "i64", "value": -9223372036854775808},
		 "f32": {"type": "f32", "value": [-0.0, "nan", "-inf", 3.4028234663852886e38, 1e-45]},
		 "f64": {"type": "f64", "value": [0.1, -0.0, 5e-324]}, "b": {"type": "bool", "value": false},
		 "s": "h\u00e9llo\u0000 \u2713", "e": {"type": "str", "value": []},
		 "n": {"type": "u16", "value": [[[1]], [[2, 3], []]]},
		 "m": {"type": "array", "value": [{"type": "u8", "value": [1]}, {"type": "array", "value": []},
		       {"type": "str", "value": [["x"]]}]}}
	EOF
	fmt-convert --set-from all.json "$LT/weights.safetensors" a.gguf
	fmt-inspect --json --full a.gguf > rec.json
	fmt-convert --set-from rec.json "$LT/weights.safetensors" b.gguf
	cmp a.gguf b.gguf
	[ "$(jq -c '.metadata_typed.m' rec.json)" = \
		'{"type":"array","value":[{"type":"u8","value":[1]},{"type":"array","value":[]},{"type":"str","value":[["x"]]}]}' ]
	[ "$(jq -c '.metadata_typed.n' rec.json)" = '{"type":"u16","value":[[[1]],[[2,3],[]]]}' ]
	[ "$(jq -c '.metadata_typed.u64' rec.json)" = '{"type":"u64","value":"18446744073709551615"}' ]
	# from a GGUF, --set-from of its own record changes nothing
	fmt-convert --dtype keep --set-from rec.json a.gguf c.gguf
	cmp a.gguf c.gguf
	# safetensors: its string keys round-trip the same way; a typed one is refused
	fmt-convert --set a=x --set 'b=y"z' "$LT/weights.safetensors" s.safetensors
	fmt-inspect --json --full s.safetensors > s.json
	[ "$(jq -c .metadata_typed s.json)" = '{"a":{"type":"str","value":"x"},"b":{"type":"str","value":"y\"z"}}' ]
	fmt-convert --set-from s.json "$LT/weights.safetensors" s2.safetensors
	cmp s.safetensors s2.safetensors
	run --separate-stderr fmt-convert --set-from rec.json "$LT/weights.safetensors" s3.safetensors
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $LT/weights.safetensors: --set-from general.file_type: safetensors metadata holds strings only"
}

# ---------------------------------------------------------------------------------------------
# --unset

@test "--unset GLOB removes keys (repeatable); the result equals a file made without them" {
	fmt-convert --dtype keep --unset 'tokenizer.ggml.*_token' --unset general.quantization_version "$LT/tiny.gguf" u.gguf
	[ "$(fmt-inspect --json u.gguf | jq -c '[.metadata | keys[] | select(test("add_|quantization"))]')" = '[]' ]
	[ "$(fmt-inspect --json u.gguf | jq '.metadata | length')" = 17 ]
	# --unset applies before --metadata-from and --set: the vocabulary is replaced as a whole,
	# its keys appended after the others
	fmt-convert --dtype keep --unset 'tokenizer.*' --metadata-from "$LT/vocab.gguf" --keys 'tokenizer.*' \
		--set llama.block_count:u32=3 "$LT/tiny.gguf" re.gguf
	fmt-inspect --json --full re.gguf > re.json
	[ "$(jq -c '.metadata | keys_unsorted | map(split(".")[0]) | unique' re.json)" = '["general","llama","tokenizer"]' ]
	[ "$(jq -c '.metadata | keys_unsorted | [.[2:3][0], .[3:4][0], .[11:12][0], .[-1]]' re.json)" = \
		'["general.file_type","llama.context_length","tokenizer.ggml.model","tokenizer.ggml.add_eos_token"]' ]
	fmt-inspect --json --full "$LT/tiny.gguf" > tiny.json
	[ "$(jq -c '.metadata_typed | with_entries(select(.key | startswith("tokenizer.")))' re.json)" = \
		"$(jq -c '.metadata_typed | with_entries(select(.key | startswith("tokenizer.")))' tiny.json)" ]
	[ "$(jq -c '.metadata["llama.block_count"]' re.json)" = 3 ]
}

@test "--unset, --metadata-from and --set-from of 200,000 keys: one pass each, the keys in their order" {
	# Each key unset was looked for and moved down separately, and each key copied or set was
	# looked for among all the output's keys: a 4.7 MB GGUF of 200,000 keys kept either busy
	# for minutes. The keys: k.0 ... k.199999, each a u32 of its number.
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - keys.gguf <<-'EOF'
		import struct, sys
		from gguf_file import gguf, s
		gguf(sys.argv[1], 0, 200000, b"".join(s("k.%d" % i) + struct.pack("<II", 4, i) for i in range(200000)))
	EOF
	run timeout 60 fmt-convert -q --unset 'k.1*' keys.gguf unset.gguf
	assert_success
	fmt-inspect --json unset.gguf > unset.json
	# k.1 and k.10 ... k.199999 (111,111 keys) gone; the others in their order
	assert_equal "$(jq '.metadata | length' unset.json)" 88889
	assert_equal "$(jq -c '.metadata | keys_unsorted | .[0:3] + .[-2:]' unset.json)" '["k.0","k.2","k.3","k.99998","k.99999"]'
	# copied onto a file that holds some of them: those replaced in place, the rest appended
	run timeout 60 fmt-convert -q --metadata-from keys.gguf --keys 'k.*' unset.gguf copied.gguf
	assert_success
	fmt-inspect --json copied.gguf > copied.json
	assert_equal "$(jq '.metadata | length' copied.json)" 200000
	assert_equal "$(jq -c '.metadata | keys_unsorted | .[0:2] + .[88888:88890] + .[-1:]' copied.json)" \
		'["k.0","k.2","k.99999","k.1","k.199999"]'
	assert_equal "$(jq -c '[.metadata["k.1"], .metadata["k.199999"], .metadata["k.5"]]' copied.json)" '[1,199999,5]'
	# the same keys from --set-from JSON (u32 values, as llama.cpp's counts): the same file
	/usr/bin/python3 -c 'import json; print(json.dumps({"k.%d" % i: i for i in range(200000)}))' >keys.json
	run timeout 60 fmt-convert -q --set-from keys.json unset.gguf set.gguf
	assert_success
	cmp copied.gguf set.gguf
}

@test "--unset of a key the format requires, or of nothing: exit 2 naming it, nothing written" {
	for glob in general.architecture 'general.*' '*'; do
		run --separate-stderr fmt-convert --dtype keep --unset "$glob" "$LT/tiny.gguf" out.gguf
		assert_equal "$status" 2
		assert_equal "$stderr" "fmt-convert: error: $LT/tiny.gguf: --unset $glob: general.architecture is required in GGUF files"
	done
	run --separate-stderr fmt-convert --dtype keep --unset 'no.such.*' "$LT/tiny.gguf" out.gguf
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $LT/tiny.gguf: --unset no.such.* matches no metadata key"
	# set to nothing is unset too (it was written, and a preset then said 'needs .block_count')
	run --separate-stderr fmt-convert --dtype keep --set general.architecture= "$LT/tiny.gguf" out.gguf
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: $LT/tiny.gguf: general.architecture is required in GGUF files: it cannot be empty"
	[ ! -e out.gguf ]
	no_temp_left
}

# ---------------------------------------------------------------------------------------------
# --in-place

@test "--in-place: a small edit keeps the tensor data where it was; the bytes equal a conversion's" {
	cp "$LT/tiny.gguf" m.gguf
	chmod 640 m.gguf
	before=$(fmt-inspect --json m.gguf | jq -c '[.tensors[].offset]')
	start=$(( $(stat -c %s m.gguf) - $(fmt-inspect --json m.gguf | jq '[.tensors[].bytes + 31 | . / 32 | floor | . * 32] | add') ))
	run --separate-stderr fmt-convert --json --in-place --set llama.context_length:u32=512 m.gguf
	assert_success
	assert_equal "$output" '{"file":"m.gguf","ok":true,"edit":"in_place","metadata_keys":20,"data_moved":false}'
	fmt-convert --dtype keep --set llama.context_length:u32=512 "$LT/tiny.gguf" want.gguf
	cmp m.gguf want.gguf
	assert_equal "$(fmt-inspect --json m.gguf | jq -c '[.tensors[].offset]')" "$before"
	cmp <(tail -c +$((start + 1)) m.gguf) <(tail -c +$((start + 1)) "$LT/tiny.gguf")
	assert_equal "$(stat -c %a m.gguf)" 640
	no_temp_left
	# gguf-py reads the edit
	run ggufpy -c 'import sys; from gguf import GGUFReader; print(GGUFReader(sys.argv[1]).fields["llama.context_length"].contents())' m.gguf
	assert_output 512
}

@test "--in-place: a header that outgrows its padding moves the data: copied after it, as a conversion writes it" {
	cp "$LT/tiny.gguf" m.gguf
	run fmt-convert --json --in-place --set general.description="$(printf 'x%.0s' {1..100})" \
		--unset 'tokenizer.ggml.add_*' m.gguf
	assert_success
	assert_equal "$output" '{"file":"m.gguf","ok":true,"edit":"in_place","metadata_keys":19,"data_moved":true}'
	fmt-convert --dtype keep --set general.description="$(printf 'x%.0s' {1..100})" --unset 'tokenizer.ggml.add_*' \
		"$LT/tiny.gguf" want.gguf
	cmp m.gguf want.gguf
	# a new alignment lays the tensors out anew: the writer's bytes
	cp "$LT/tiny.gguf" a.gguf
	fmt-convert --in-place --set general.alignment:u32=64 a.gguf
	fmt-convert --dtype keep --set general.alignment:u32=64 "$LT/tiny.gguf" want64.gguf
	cmp a.gguf want64.gguf
	fmt-verify a.gguf
	no_temp_left
}

@test "--in-place through a symbolic link edits the file it names; the link stays a link" {
	mkdir real
	cp "$LT/tiny.gguf" real/m.gguf
	ln -s real/m.gguf link.gguf
	fmt-convert --in-place --set general.name=linked link.gguf
	[ -L link.gguf ] || fail "the link was replaced"
	[ "$(fmt-inspect --json real/m.gguf | jq -r '.metadata["general.name"]')" = linked ]
	[ -z "$(find . real -maxdepth 1 -name '.fmtkit-tmp-*')" ]
}

@test "--in-place on a file gguf-py wrote (no tensors, no final padding): gguf-py reads the edit" {
	cp "$LT/vocab.gguf" v.gguf
	fmt-convert --in-place --metadata-from "$LT/tiny.gguf" --keys 'llama.block_count' --set 'x.ids:u32[]=4,5' v.gguf
	run ggufpy - v.gguf <<-'EOF'
		import sys
		from gguf import GGUFReader
		r = GGUFReader(sys.argv[1])
		print(r.fields["llama.block_count"].contents(), r.fields["x.ids"].contents(), len(r.fields["tokenizer.ggml.tokens"].contents()))
	EOF
	assert_success
	assert_output '2 [4, 5] 341'
}

@test "--in-place refusals: exit 2 (usage) or the edit's own error, the file untouched" {
	cp "$LT/tiny.gguf" m.gguf
	cp "$LT/weights.safetensors" w.safetensors
	while IFS='|' read -r args msg; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-convert --in-place $args
		[ "$status" -eq 2 ] || fail "$args: exit $status, expected 2 ($stderr)"
		assert_equal "${stderr_lines[0]}" "fmt-convert: error: $msg"
		cmp m.gguf "$LT/tiny.gguf"
	done <<-'EOF'
		--set a=b m.gguf other.gguf|--in-place takes one FILE
		m.gguf|--in-place needs --set, --set-from, --override-kv, --metadata-from, --unset or --arch
		--dtype f32 --set a=b m.gguf|--in-place edits metadata only: --dtype does not go with it
		--dry-run --set a=b m.gguf|--in-place edits metadata only: --dry-run does not go with it
		--unset general.architecture m.gguf|m.gguf: --unset general.architecture: general.architecture is required in GGUF files
		--set k:u8=300 m.gguf|m.gguf: --set k: '300' is not a valid u8
		--set a=b w.safetensors|w.safetensors: --in-place edits GGUF files, not safetensors (write a new file: fmt-convert IN OUT)
	EOF
	cmp w.safetensors "$LT/weights.safetensors"
	head -c 300 "$LT/tiny.gguf" > cut.gguf
	run --separate-stderr fmt-convert --in-place --set a=b cut.gguf
	assert_equal "$status" 4
	cmp cut.gguf <(head -c 300 "$LT/tiny.gguf")
	run --separate-stderr fmt-convert --in-place --set a=b missing.gguf
	assert_equal "$status" 3
	[ ! -e missing.gguf ]
	no_temp_left
}

@test "--in-place is atomic: killed mid-write, the file is as it was and no temporary file stays" {
	cp "$LT/tiny.gguf" m.gguf
	stop_at_output 1 fmt-convert --in-place --set general.name=x m.gguf
	assert_equal "$(find . -maxdepth 1 -name '.fmtkit-tmp-*' | wc -l)" 1
	term_stopped
	assert_equal "$status" 143
	cmp m.gguf "$LT/tiny.gguf"
	no_temp_left
}
