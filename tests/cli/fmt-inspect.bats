#!/usr/bin/env bats
# fmt-inspect on the sample models of scripts/gen/sample-models, good and hostile input.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	make_samples
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
}

@test "--version prints the tool and suite version" {
	run fmt-inspect --version
	assert_success
	assert_output "fmt-inspect fmtkit 0.1.0"
}

@test "--help goes to stdout and exits 0" {
	run --separate-stderr fmt-inspect --help
	assert_success
	assert_line --index 0 "Usage: fmt-inspect [OPTIONS] FILE..."
	[ -z "$stderr" ]
}

@test "no input file is a usage error (exit 2)" {
	run fmt-inspect
	assert_failure 2
	assert_line --index 0 "fmt-inspect: error: no input file"
}

@test "an unknown option is a usage error (exit 2)" {
	run fmt-inspect --bogus "$SAMPLES/tiny.safetensors"
	assert_failure 2
}

@test "--stats without --tensor is a usage error (exit 2)" {
	run fmt-inspect --stats "$SAMPLES/tiny.safetensors"
	assert_failure 2
	assert_line --index 0 "fmt-inspect: error: $SAMPLES/tiny.safetensors: --stats needs --tensor NAME for a model"
}

@test "summary: format, counts, sizes and dtypes as text" {
	run fmt-inspect "$SAMPLES/tiny.safetensors"
	assert_success
	assert_line "format:     safetensors"
	assert_line "files:      1"
	assert_line "size:       468 B (468 bytes; tensor data 92 B)"
	assert_line "tensors:    5"
	assert_line "parameters: 27"
	assert_line --regexp '^  F32 +2 tensors +64 bytes  \(64 B\)$'
	assert_line --regexp '^  I64 +1 tensor +8 bytes  \(8 B\)$'
	assert_line '  format (str) = "pt"'
	assert_line "  NAME             DTYPE    SHAPE   OFFSET         BYTES"
	assert_line "  layers.0.weight  F32      [4, 3]      24            48"
	assert_line "  step             I64      []           0             8"
}

@test "--json: one object whose fields match the file exactly" {
	run --separate-stderr fmt-inspect --json "$SAMPLES/tiny.safetensors"
	assert_success
	[ "$(echo "$output" | wc -l)" -eq 1 ]
	echo "$output" > out.json
	# one jq for every field: a line each
	assert_equal "$(jq -c '.format, .version, .tensor_count, .parameter_count, .file_bytes, .data_bytes,
		.dtypes.F32, .dtypes.BF16, .metadata.format, .metadata_types.format,
		([.tensors[].name] | join(",")), .tensors[2], .tensors[0].shape' out.json)" '"safetensors"
null
5
27
468
92
{"tensors":2,"bytes":64}
{"tensors":1,"bytes":4}
"pt"
"str"
"step,layers.0.bias,layers.0.weight,layers.1.bias,layers.1.weight"
{"name":"layers.0.weight","dtype":"F32","shape":[4,3],"offset":24,"bytes":48}
[]'
}

@test "--json over several files: one line per file, in order" {
	run fmt-inspect --json "$SAMPLES/tiny.safetensors" "$SAMPLES/sharded/model-00002-of-00002.safetensors"
	assert_success
	[ "${#lines[@]}" -eq 2 ]
	[ "$(echo "${lines[1]}" | jq .tensor_count)" = 2 ]
}

@test "--tensors and --metadata select sections" {
	run fmt-inspect --json --tensors "$SAMPLES/tiny.safetensors"
	assert_success
	[ "$(echo "$output" | jq -c 'keys')" = '["file","format","tensors"]' ]
	run fmt-inspect --json --metadata "$SAMPLES/tiny.safetensors"
	[ "$(echo "$output" | jq -c 'keys')" = '["file","format","metadata","metadata_types"]' ]
	run fmt-inspect --tensors "$SAMPLES/tiny.safetensors"
	refute_line --partial "parameters:"
	assert_line "tensors:"
}

@test "--tree builds the parameter tree from dotted names" {
	run fmt-inspect --tree "$SAMPLES/tiny.safetensors"
	assert_success
	assert_line "tree:       27 params"
	assert_line "  step  I64 []  (1 params)"
	assert_line "  layers  (26 params)"
	assert_line "    0  (16 params)"
	assert_line "      weight  F32 [4, 3]  (12 params)"
	run fmt-inspect --json --tree "$SAMPLES/tiny.safetensors"
	[ "$(echo "$output" | jq '.tree.children[1].children[1].params')" = 10 ]
	[ "$(echo "$output" | jq -r '.tree.children[1].children[1].children[0].tensor')" = layers.1.bias ]
}

@test "--tensor NAME shows one tensor" {
	run fmt-inspect --json --tensor layers.1.weight "$SAMPLES/tiny.safetensors"
	assert_success
	[ "$(echo "$output" | jq -c '.tensors')" = '[{"name":"layers.1.weight","dtype":"F16","shape":[2,4],"offset":76,"bytes":16}]' ]
}

@test "--tensor with an unknown name is exit 2 and names it" {
	run fmt-inspect --tensor nope "$SAMPLES/tiny.safetensors"
	assert_failure 2
	assert_output --partial "no tensor named 'nope'"
}

@test "--stats computes exact statistics of an F32 tensor" {
	run fmt-inspect --json --tensor layers.0.bias --stats "$SAMPLES/tiny.safetensors"
	assert_success
	echo "$output" > s.json
	# the std to 1e-9: (.stats.std * 1e9 | round) equals that of sqrt(0.0732421875)
	assert_equal "$(jq -c '(.stats | [.count,.nan,.inf,.min,.max,.mean]),
		((.stats.std * 1e9 | round) == ((0.0732421875 | sqrt) * 1e9 | round)), .stats.first' s.json)" '[4,0,0,-0.25,0.5,0.09375]
true
[0.5,-0.25,0.125,0]'
}

@test "--stats decodes BF16 and F16 tensors" {
	run fmt-inspect --json --tensor layers.1.bias --stats "$SAMPLES/tiny.safetensors"
	[ "$(echo "$output" | jq -c '.stats.first')" = '[1,-2]' ]
	run fmt-inspect --tensor layers.1.weight --stats "$SAMPLES/tiny.safetensors"
	assert_success
	assert_line "count:  8 finite, 0 NaN, 0 Inf"
	assert_line "max:    1"
}

@test "--stats of an integer tensor: min, max and first exact, not through a float (I64, U64, I32)" {
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
from st_file import st
# 70001 values: two chunks of the stats pass, the least and greatest in the second
big = [9007199254740993 + i for i in range(70000)] + [-9223372036854775808]
big[69999] = 9223372036854775807
st("ints.safetensors", [("i64", "I64", "q", [9007199254740993, -3, 16777217]), ("big", "I64", "q", big),
    ("u64", "U64", "Q", [9007199254740993, 18446744073709551615, 3]),
    ("i32", "I32", "i", [16777217, -2147483648, 2147483647])])
PY
	run fmt-inspect --tensor i64 --stats ints.safetensors
	assert_success
	assert_line 'min:    -3'
	assert_line 'max:    9007199254740993'
	assert_line 'first:  9007199254740993 -3 16777217'
	run fmt-inspect --json --tensor i64 --stats ints.safetensors
	assert_output --partial '"min":-3,"max":9007199254740993,'
	assert_output --partial '"first":[9007199254740993,-3,16777217]}'
	run fmt-inspect --json --tensor big --stats ints.safetensors
	assert_output --partial '"count":70001,"nan":0,"inf":0,"min":-9223372036854775808,"max":9223372036854775807,'
	assert_output --partial '"first":[9007199254740993,9007199254740994,9007199254740995,9007199254740996,9007199254740997,9007199254740998,9007199254740999,9007199254741000]}'
	# a U64 above 2^63-1 as a decimal string, as every fmtkit JSON has it
	run fmt-inspect --json --tensor u64 --stats ints.safetensors
	assert_output --partial '"min":3,"max":"18446744073709551615",'
	assert_output --partial '"first":[9007199254740993,"18446744073709551615",3]}'
	run fmt-inspect --tensor u64 --stats ints.safetensors
	assert_line 'max:    18446744073709551615'
	run fmt-inspect --tensor i32 --stats ints.safetensors
	assert_line 'min:    -2147483648'
	assert_line 'max:    2147483647'
	assert_line 'first:  16777217 -2147483648 2147483647'
}

@test "--stats of an I64 or U64 tensor: std of values near 2^62 and 2^64 from their exact differences (old: std 0 where it is 3.56)" {
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
from st_file import st
off = [0, 1, 2, 3, 5, 7, 11]
st("near.safetensors", [("i64", "I64", "q", [2**62 + o for o in off]), ("neg", "I64", "q", [-2**63 + o for o in off]),
    ("u64", "U64", "Q", [2**64 - 20 + o for o in off]),
    ("long", "I64", "q", [2**62 + i % 7 for i in range(70001)])])
PY
	# the true std (Python's fractions: sqrt of the exact variance) is 3.562846832382836 for the
	# three, 2.000017856348876 for the 70001 values (two chunks, many passes)
	for t in i64 neg u64; do
		run fmt-inspect --tensor $t --stats near.safetensors
		assert_success
		assert_line 'std:    3.56284683'
		run fmt-inspect --json --tensor $t --stats near.safetensors
		assert_equal "$(jq '.stats.std - 3.562846832382836 | fabs < 1e-12' <<<"$output")" true
	done
	run fmt-inspect --tensor long --stats near.safetensors
	assert_line 'std:    2.00001786'
	run fmt-inspect --json --tensor long --stats near.safetensors
	assert_equal "$(jq '.stats.std - 2.000017856348876 | fabs < 1e-12' <<<"$output")" true
}

@test "--stats of an F64 tensor in float64 (1e300 is not Inf, 0.1 not 0.10000000149), and integer means from the exact sum" {
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
from st_file import st
st("wide.safetensors", [("f64", "F64", "d", [1e300, 0.1, -2.5e-310, 1.0000000000000002, float("nan")]),
    ("i64", "I64", "q", [9007199254740993, 9007199254740993, 9007199254740994]),
    ("u64", "U64", "Q", [15600419082433424441, 16900536854896466293, 11068051555418466131])])
PY
	run fmt-inspect --json --tensor f64 --stats wide.safetensors
	assert_success
	assert_equal "$(jq -c '.stats | [.count, .nan, .inf, .min == -2.5e-310, .max == 1e300, .mean == 2.5e299,
		.first[1] == 0.1, .first[3] == 1.0000000000000002, .first[4]]' <<<"$output")" '[4,1,0,true,true,true,true,true,"nan"]'
	run fmt-inspect --tensor f64 --stats wide.safetensors
	assert_line 'max:    1.0000000000000001e+300'
	assert_line 'first:  1.0000000000000001e+300 0.10000000000000001 -2.5000000000000171e-310 1.0000000000000002 nan'
	# means of the exact sums rounded once (Python: float(Fraction(sum(v), len(v)))); summed as
	# float64s they were 9007199254740992 and 1.4523002497582785e19
	run fmt-inspect --json --tensor i64 --stats wide.safetensors
	[ "$(jq '.stats.mean == 9007199254740994' <<<"$output")" = true ]
	run fmt-inspect --json --tensor u64 --stats wide.safetensors
	[ "$(jq '.stats.mean == 1.4523002497582787e19' <<<"$output")" = true ]
}

@test "--stats: the standard deviation of values up to DBL_MAX and FLT_MAX is finite and right" {
	# the squares of values over ~1e154 overflowed: std "inf" (and the mean of three DBL_MAX)
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
import sys
from st_file import st
M, F = sys.float_info.max, 3.4028234663852886e38
st("huge.safetensors", [("max64", "F64", "d", [M, -M, M, -M]), ("e200", "F64", "d", [1e200, 3e200]),
    ("same", "F64", "d", [M, M, M]), ("max32", "F32", "f", [F, -F, F, -F])])
PY
	local t want
	for pair in "max64|[4,0,1.7976931348623157e+308]" "e200|[2,2e+200,1e+200]" \
		"same|[3,1.7976931348623157e+308,0]" "max32|[4,0,3.4028234663852886e+38]"; do
		t=${pair%%|*} want=${pair#*|}
		run fmt-inspect --json --tensor "$t" --stats huge.safetensors
		assert_success
		assert_equal "$(jq -c '.stats | [.count, .mean, .std]' <<<"$output")" "$want"
	done
}

@test "a sharded index is inspected as one model" {
	run fmt-inspect --json "$SAMPLES/sharded/model.safetensors.index.json"
	assert_success
	echo "$output" > o.json
	assert_equal "$(jq -r '.format, .tensor_count, .parameter_count, .data_bytes,
		(.tensors[] | select(.name=="step") | .file), (.tensors[] | select(.name=="layers.0.bias") | .file)' o.json)" 'safetensors-index
5
27
92
model-00002-of-00002.safetensors
model-00001-of-00002.safetensors'
}

@test "standard input is read with -" {
	run bash -c "cat '$SAMPLES/tiny.safetensors' | fmt-inspect --json - | jq .tensor_count"
	assert_success
	assert_output 5
}

@test "a missing file is an I/O error (exit 3) naming the file" {
	run --separate-stderr fmt-inspect missing.safetensors
	assert_failure 3
	[ "$stderr" = "fmt-inspect: error: missing.safetensors: cannot open: No such file or directory" ]
	[ -z "$output" ]
}

@test "with --json an error is a JSON object on stderr (and nothing else) and a failure record on stdout" {
	run --separate-stderr fmt-inspect --json missing.safetensors
	assert_failure 3
	[ "$stderr" = '{"tool":"fmt-inspect","level":"error","file":"missing.safetensors","error":"IoError","exit":3,"message":"cannot open: No such file or directory"}' ]
	[ "$output" = '{"file":"missing.safetensors","ok":false,"exit":3,"error":"IoError","message":"cannot open: No such file or directory"}' ]
}

@test "an unrecognised file is InvalidFormat (exit 4)" {
	printf 'hello world, not a model' > junk.bin
	run fmt-inspect junk.bin
	assert_failure 4
	assert_output --partial "junk.bin: unrecognised format"
}

@test "several files: every file is reported and the exit is the highest" {
	printf 'junk' > junk.bin
	run --separate-stderr fmt-inspect --json "$SAMPLES/tiny.safetensors" missing.st junk.bin
	assert_failure 4
	[ "$(jq -c '[.file, .ok, .exit]' <<<"$output")" = "$(printf '%s\n' "[\"$SAMPLES/tiny.safetensors\",null,null]" '["missing.st",false,3]' '["junk.bin",false,4]')" ]
	[ "$(jq -c '[.level, .file, .error, .exit]' <<<"$stderr")" = "$(printf '%s\n' '["error","missing.st","IoError",3]' '["error","junk.bin","InvalidFormat",4]')" ]
	run --separate-stderr fmt-inspect "$SAMPLES/tiny.safetensors" missing.st junk.bin
	assert_failure 4
	[[ "$stderr" == *"missing.st: cannot open"* ]]
	[[ "$stderr" == *"junk.bin: unrecognised format"* ]]
}

@test "hostile metadata is escaped in text output" {
	python3 - <<'PY'
import json, struct
hdr = {"__metadata__": {"evil\x1b[31m": "line1\nline2\x07\x9b"}}
t = json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode()
t += b" " * (-len(t) % 8)
open("evil.safetensors", "wb").write(struct.pack("<Q", len(t)) + t)
PY
	run fmt-inspect --metadata evil.safetensors
	assert_success
	assert_line '  evil\x1b[31m (str) = "line1\nline2\x07\u009b"'
	run fmt-inspect --json --metadata evil.safetensors
	[ "$(echo "$output" | jq -r '.metadata | keys[0]' | od -An -tx1 | head -1 | tr -d ' ')" = "6576696c1b5b33316d0a" ]
	# a quote in a value is escaped: it cannot end the value and pose as another key (it did)
	fmt-convert --set 'general.name=a", b (str) = "c\d' "$SAMPLES/tiny.safetensors" q.gguf
	run fmt-inspect --metadata q.gguf
	assert_line '  general.name (str) = "a\", b (str) = \"c\\d"'
}

@test "the Apsi fixture from the reference project reads as safetensors" {
	run fmt-inspect --json "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
	assert_success
	[ "$(echo "$output" | jq -r '[.tensors[].name] | join(",")')" = "layers.0.W,layers.0.q__qscale,mass,layers.0.q" ]
	[ "$(echo "$output" | jq .file_bytes)" = 796 ]
}

@test "GGUF: version, typed metadata and long arrays abbreviated unless --full" {
	printf '{"tokenizer.ggml.tokens": [%s], "llama.block_count": 2}' \
		"$(seq -f '"t%g"' 0 19 | paste -sd,)" > keys.json
	fmt-convert --arch llama --set-from keys.json "$SAMPLES/tiny.safetensors" m.gguf
	run fmt-inspect --json --metadata m.gguf
	assert_success
	echo "$output" > o.json
	assert_equal "$(jq -c '.metadata["general.architecture"], .metadata_types["llama.block_count"],
		.metadata_types["tokenizer.ggml.tokens"], (.metadata["tokenizer.ggml.tokens"] | length),
		.metadata["tokenizer.ggml.tokens"][16]' o.json)" '"llama"
"u32"
"array[str]"
17
{"truncated":20}'
	run fmt-inspect --json --metadata --full m.gguf
	[ "$(echo "$output" | jq -c '.metadata["tokenizer.ggml.tokens"] | [length, .[19]]')" = '[20,"t19"]' ]
	run fmt-inspect --metadata m.gguf
	assert_line --partial 'tokenizer.ggml.tokens (array of str) = ["t0", "t1",'
	assert_line --partial '"t15", ... (20 items)]'
	run fmt-inspect --json m.gguf
	assert_equal "$(jq -r '.version, .format' <<<"$output")" "3
gguf"
}

@test "GGUF split set: the first shard opens the whole set as one model" {
	"$REPO_ROOT/scripts/gen/gguf-malformed" gen >/dev/null
	run fmt-inspect --json gen/split-00001-of-00003.gguf
	assert_success
	echo "$output" > o.json
	assert_equal "$(jq '.files, ([.tensors[].file] | unique | length),
		([.metadata | keys[] | select(startswith("split."))] | length)' o.json)" "3
3
0"
	run fmt-verify gen/split-00001-of-00003.gguf
	assert_success
	assert_output --regexp '^gen/split-00001-of-00003.gguf: ok \(gguf, [0-9]+ tensors, 3 files, [0-9]+ bytes\)$'
}

@test "GGUF split set: any shard opens the whole set, in shard order, with the first shard's metadata" {
	"$REPO_ROOT/scripts/gen/gguf-malformed" gen >/dev/null
	want='[3,{"general.architecture":"llama","general.name":"split test"},[["a","split-00001-of-00003.gguf"],["b","split-00002-of-00003.gguf"],["c","split-00002-of-00003.gguf"],["d","split-00003-of-00003.gguf"]]]'
	for no in 1 2 3; do
		run fmt-inspect --json gen/split-0000$no-of-00003.gguf
		assert_success
		assert_equal "$(jq -c '[.files, .metadata, [.tensors[] | [.name, .file]]]' <<<"$output")" "$want"
		assert_equal "$(jq -r .file <<<"$output")" gen/split-0000$no-of-00003.gguf
	done
	# a member missing: exit 9 naming it, whichever shard is given
	rm gen/split-00002-of-00003.gguf
	for no in 1 3; do
		run --separate-stderr fmt-inspect gen/split-0000$no-of-00003.gguf
		assert_equal "$status" 9
		assert_equal "$stderr" "fmt-inspect: error: gen/split-0000$no-of-00003.gguf: 1 of the set's 3 shards is missing: gen/split-00002-of-00003.gguf"
		assert_equal "$output" ""
	done
}

# retar IN OUT INDEX SIZE: IN with the ustar size field of its INDEX-th header (0: the first)
# set to SIZE (octal when it fits 11 digits, else base-256) and the header checksum redone.
retar() {
	/usr/bin/python3 - "$@" <<'PY'
import sys
src, dst, index, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
b = bytearray(open(src, "rb").read())
off, seen = 0, 0
while True:
    h = b[off:off + 512]
    n = int(h[124:135].decode().strip("\0 ") or "0", 8)
    if seen == index:
        break
    off += 512 + (n + 511) // 512 * 512
    seen += 1
b[off + 124:off + 136] = (b"%011o\0" % size) if size < 8 ** 11 else bytes([0x80]) + size.to_bytes(11, "big")
b[off + 148:off + 156] = b" " * 8
b[off + 148:off + 156] = b"%06o\0 " % sum(b[off:off + 512])
open(dst, "wb").write(bytes(b))
PY
}

@test "a tar bundle (fmt-shard pack): the manifest's format and packer, each member's name, size, format and SHA-256; text, --json, zstd, standard input (old: unrecognised format, exit 4)" {
	local sha=($(sha256sum "$SAMPLES"/sharded/*))
	fmt-shard pack "$SAMPLES/sharded/model.safetensors.index.json" -o set.tar >/dev/null
	run --separate-stderr fmt-inspect set.tar
	assert_success
	assert_equal "$stderr" ''
	assert_output "file:       set.tar
format:     bundle (tar)
contains:   safetensors-index
packed by:  fmtkit 0.1.0
members:    3, 855 bytes
  NAME                              BYTES  FORMAT             SHA256
  model-00001-of-00002.safetensors    316  safetensors        ${sha[0]}
  model-00002-of-00002.safetensors    192  safetensors        ${sha[2]}
  model.safetensors.index.json        347  safetensors-index  ${sha[4]}"
	run --separate-stderr fmt-inspect --json set.tar
	assert_success
	assert_equal "$output" '{"file":"set.tar","format":"bundle","contains":"safetensors-index","zstd":false,"fmtkit":"0.1.0","files":3,"bytes":855,"members":[{"name":"model-00001-of-00002.safetensors","bytes":316,"format":"safetensors","sha256":"'"${sha[0]}"'"},{"name":"model-00002-of-00002.safetensors","bytes":192,"format":"safetensors","sha256":"'"${sha[2]}"'"},{"name":"model.safetensors.index.json","bytes":347,"format":"safetensors-index","sha256":"'"${sha[4]}"'"}]}'
	# the keys fmt-verify's record of it has, with the same values
	assert_equal "$(jq -c '[.format, .contains, .files, .bytes, .zstd]' <<<"$output")" \
		"$(fmt-verify --json set.tar | jq -c '[.format, .contains, .files, .bytes, .zstd]')"
	# zstd, a signature member (its format: none), and from standard input
	fmt-sign keygen -W -p k.pub -s k.key >/dev/null
	cp "$SAMPLES/tiny.safetensors" .
	fmt-sign sign -s k.key tiny.safetensors >/dev/null
	fmt-shard pack tiny.safetensors -o one.tar.zst >/dev/null
	run --separate-stderr fmt-inspect - <one.tar.zst
	assert_success
	assert_line --index 1 'format:     bundle (tar, zstd)'
	assert_line --index 4 "members:    2, $((468 + $(stat -c %s tiny.safetensors.minisig))) bytes, .minisig of 1 member (not checked: no key given)"
	assert_line --index 7 --regexp '^  tiny\.safetensors\.minisig  +[0-9]+  -            [0-9a-f]{64}$'
	run --separate-stderr fmt-inspect --json one.tar.zst
	assert_success
	assert_equal "$(jq -c '[.zstd, [.members[] | [.name, .format]], .signatures]' <<<"$output")" \
		'[true,[["tiny.safetensors","safetensors"],["tiny.safetensors.minisig",null]],[{"file":"tiny.safetensors","kind":"minisig","signature":"tiny.safetensors.minisig","checked":false}]]'
	# -q: checked, nothing printed; a report narrowed to tensors or rows is a usage error
	run fmt-inspect -q set.tar
	assert_success
	assert_output ''
	for opt in --tensors '--tensor step' --schema '--head 1'; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-inspect $opt set.tar
		assert_failure 2
		assert_equal "$stderr" 'fmt-inspect: error: set.tar: --tensors, --metadata, --tree, --tensor, --stats, --schema, --head and --quality are for a model file or a dataset, not a bundle (fmt-shard unpack extracts its members)'
	done
	# a model or a dataset is reported as before
	run fmt-inspect --json tiny.safetensors
	assert_success
	assert_equal "$(jq -r .format <<<"$output")" safetensors
}

@test "a bundle member whose format mark lies past its first 4 KiB (an .apsim with a long header) is named as the file is: apsim, not safetensors (old)" {
	# an .apsim whose header (6.7 KB) names its format past byte 4096 (as sigbus.bats's), and a
	# safetensors file with a header as long: each member's format is what fmt-inspect says of it
	/usr/bin/python3 - "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" \
		"$SAMPLES/tiny.safetensors" <<'PY'
import struct, sys
for src, dst in ((sys.argv[1], "long.apsim"), (sys.argv[2], "long.safetensors")):
    b = open(src, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = b[8:8 + n]
    h = h.replace(b'{"__metadata__":{', b'{"__metadata__":{"apad":"' + b"p" * 6000 + b'",', 1) if b"__metadata__" in h \
        else b'{"__metadata__":{"apad":"' + b"p" * 6000 + b'"},' + h[1:]
    h += b" " * (-len(h) % 8)
    assert len(h) > 4096
    open(dst, "wb").write(struct.pack("<Q", len(h)) + h + b[8 + n:])
PY
	[ "$(grep -abo '"format":"apsi-model"' long.apsim | cut -d: -f1)" -gt 4096 ]
	for f in long.apsim long.safetensors; do
		want=$(fmt-inspect --json "$f" | jq -r .format)
		sha=$(sha256sum "$f" | cut -d' ' -f1)
		size=$(stat -c %s "$f")
		fmt-shard pack "$f" -o "$f.tar" >/dev/null
		fmt-shard pack "$f" -o "$f.tar.zst" >/dev/null
		run --separate-stderr fmt-inspect --json "$f.tar"
		assert_success
		assert_equal "$(jq -c .members <<<"$output")" '[{"name":"'"$f"'","bytes":'"$size"',"format":"'"$want"'","sha256":"'"$sha"'"}]'
		run --separate-stderr fmt-inspect - <"$f.tar.zst"
		assert_success
		assert_equal "$(tail -n 1 <<<"$output" | tr -s ' ')" " $f $size $want $sha"
	done
	assert_equal "$(fmt-inspect --json long.apsim.tar | jq -r '.members[0].format')" apsim
	assert_equal "$(fmt-inspect --json long.safetensors.tar | jq -r '.members[0].format')" safetensors
}

@test "a plain tar (no MANIFEST.json first) is named so, with what to do: exit 4, for fmt-inspect, fmt-verify and fmt-shard unpack, file or standard input, .tar or .tar.zst (old: unrecognised format)" {
	cp "$SAMPLES/tiny.safetensors" .
	printf 'a,b\n1,2\n' >t.csv
	tar -cf plain.tar tiny.safetensors t.csv
	zstd -q -c plain.tar >plain.tar.zst
	mkdir d && cp t.csv d/ && tar -cf dot.tar -C d .
	local why='not MANIFEST.json (`tar -tvf` lists its members, `tar -xf` extracts them; `fmt-shard pack` makes a bundle)'
	for pair in "plain.tar|tiny.safetensors" "plain.tar.zst|tiny.safetensors" "dot.tar|./"; do
		f=${pair%|*}
		msg="a tar archive, not an fmtkit bundle: its first member is '${pair#*|}', $why"
		for tool in fmt-inspect fmt-verify; do
			run --separate-stderr "$tool" "$f"
			assert_failure 4
			assert_equal "$output" ""
			assert_equal "$stderr" "$tool: error: $f: $msg"
			run --separate-stderr bash -c '"$1" - <"$2"' _ "$tool" "$f"
			assert_failure 4
			assert_equal "$stderr" "$tool: error: -: $msg"
		done
		mkdir out
		run --separate-stderr fmt-shard unpack "$f" -C out
		assert_failure 4
		assert_equal "$stderr" "fmt-shard: error: $f: $msg"
		assert_equal "$(ls -A out)" ""
		rmdir out
	done
	# --json: the failure record on stdout, the error object on stderr
	msg="a tar archive, not an fmtkit bundle: its first member is 'tiny.safetensors', $why"
	run --separate-stderr fmt-inspect --json plain.tar
	assert_failure 4
	assert_equal "$output" "$(jq -cn --arg m "$msg" '{file:"plain.tar",ok:false,exit:4,error:"InvalidFormat",message:$m}')"
	assert_equal "$stderr" "$(jq -cn --arg m "$msg" '{tool:"fmt-inspect",level:"error",file:"plain.tar",error:"InvalidFormat",exit:4,message:$m}')"
	run --separate-stderr fmt-verify --json plain.tar
	assert_failure 4
	assert_equal "$stderr" "$(jq -cn --arg m "$msg" '{tool:"fmt-verify",level:"error",file:"plain.tar",error:"InvalidFormat",exit:4,message:$m}')"
	# "ustar" at byte 257 of a file that is no tar (its header checksum wrong): still what it is
	{ printf 'word\n'; printf 'x%.0s' $(seq 252); printf 'ustard\n'; seq 60; } >ustar.csv
	assert_equal "$(dd if=ustar.csv bs=1 skip=257 count=5 2>/dev/null)" ustar
	run fmt-verify ustar.csv
	assert_success
	assert_output "ustar.csv: ok (csv, 61 rows)"
	run bash -c 'fmt-inspect --json - <ustar.csv | jq -r .format'
	assert_output csv
}

@test "tools that read no bundle (fmt-convert, fmt-sign, fmt-watermark) name a bundle and a plain tar, file or standard input, text and --json: exit 4 (old: unrecognised format)" {
	export XDG_CONFIG_HOME=$PWD/cfg
	cp "$SAMPLES/tiny.safetensors" .
	printf 'a,b\n1,2\n' >t.csv
	tar -cf plain.tar tiny.safetensors t.csv
	fmt-shard pack tiny.safetensors -o b.tar >/dev/null
	fmt-shard pack tiny.safetensors -o b.tar.zst >/dev/null
	fmt-sign keygen -q -W && fmt-sign keygen -q --hmac && fmt-sign keygen -q --watermark
	local what='which this tool does not read: `fmt-shard unpack` extracts its files; fmt-inspect and fmt-verify read it as it is, `fmt-sign sign -s` signs it whole (a detached .minisig, which fmt-verify -p checks)'
	local plain="a tar archive, not an fmtkit bundle: its first member is 'tiny.safetensors', not MANIFEST.json (\`tar -tvf\` lists its members, \`tar -xf\` extracts them; \`fmt-shard pack\` makes a bundle)"
	for pair in "b.tar|an fmtkit bundle (tar), $what" "b.tar.zst|an fmtkit bundle (tar, zstd), $what" "plain.tar|$plain"; do
		f=${pair%%|*}
		msg=${pair#*|}
		while IFS='|' read -r tool args; do
			run --separate-stderr bash -c "$tool $args" _ "$f"
			assert_failure 4
			assert_equal "$output" ""
			assert_equal "$stderr" "$tool: error: $f: $msg"
		done <<'EOF'
fmt-convert|"$1" out.gguf
fmt-convert|--to csv "$1" out.csv
fmt-sign|sign --embed "$1"
fmt-sign|sign --hmac-key "$1"
fmt-watermark|embed --key cfg/fmtkit/watermark.key --buyer b --registry r.jsonl "$1" out.safetensors
EOF
		run --separate-stderr bash -c 'fmt-convert --to csv - - <"$1"' _ "$f"
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: -: $msg"
		run --separate-stderr fmt-sign --json sign --embed "$f"
		assert_failure 4
		assert_equal "$output" "$(jq -cn --arg f "$f" --arg m "$msg" '{file:$f,ok:false,exit:4,error:"InvalidFormat",message:$m}')"
		assert_equal "$stderr" "$(jq -cn --arg f "$f" --arg m "$msg" '{tool:"fmt-sign",level:"error",file:$f,error:"InvalidFormat",exit:4,message:$m}')"
		# fmt-sign verify without FILE.minisig: not signed (7), and why
		run --separate-stderr fmt-sign verify -p cfg/fmtkit/ed25519.pub "$f"
		assert_failure 7
		assert_equal "$stderr" "fmt-sign: error: $f: not signed: no $f.minisig beside it, and no embedded signature can be read ($msg)"
		[ ! -e out.gguf ] && [ ! -e out.csv ] && [ ! -e out.safetensors ]
	done
	# what the message offers works: a detached signature of the bundle, checked by fmt-verify -p
	run fmt-sign sign -s cfg/fmtkit/ed25519.key b.tar.zst
	assert_success
	run fmt-verify -p cfg/fmtkit/ed25519.pub b.tar.zst
	assert_success
	assert_output --partial "b.tar.zst: ok (bundle of safetensors, 1 file, 468 bytes, zstd, .minisig by trusted key"
}

@test "gzip data (a bundle, a plain tar or a CSV, gzip'd) is named so in every tool, file or standard input, text and --json: exit 4, nothing unpacked (old: unrecognised format, 'not a tar bundle: Unrecognized archive format')" {
	cp "$SAMPLES/tiny.safetensors" .
	printf 'a,b\n1,2\n' >t.csv
	tar -cf plain.tar tiny.safetensors t.csv
	fmt-shard pack tiny.safetensors -o b.tar >/dev/null
	gzip -k b.tar plain.tar t.csv
	local msg='a gzip-compressed file, which fmtkit does not read: `gzip -dc` decompresses it (fmtkit'"'"'s bundles are tars, plain or zstd-compressed, as `fmt-shard pack` makes them)'
	mkdir out
	for f in b.tar.gz plain.tar.gz t.csv.gz; do
		while IFS='|' read -r tool args; do
			run --separate-stderr bash -c "$tool $args" _ "$f"
			assert_failure 4
			assert_equal "$output" ""
			assert_equal "$stderr" "$tool: error: $f: $msg"
		done <<'EOF'
fmt-inspect|"$1"
fmt-verify|"$1"
fmt-shard|unpack "$1" -C out
fmt-convert|"$1" out.gguf
fmt-convert|--to csv "$1" out.csv
EOF
		for tool in fmt-inspect fmt-verify; do
			run --separate-stderr bash -c '"$1" - <"$2"' _ "$tool" "$f"
			assert_failure 4
			assert_equal "$stderr" "$tool: error: -: $msg"
		done
		assert_equal "$(ls -A out)" ""
		[ ! -e out.gguf ] && [ ! -e out.csv ]
	done
	run --separate-stderr fmt-verify --json b.tar.gz
	assert_failure 4
	assert_equal "$output" "$(jq -cn --arg m "$msg" '{file:"b.tar.gz",ok:false,exit:4,error:"InvalidFormat",message:$m,failed_file:"b.tar.gz"}')"
	assert_equal "$stderr" "$(jq -cn --arg m "$msg" '{tool:"fmt-verify",level:"error",file:"b.tar.gz",error:"InvalidFormat",exit:4,message:$m}')"
	# what the message says works: decompressed, the bundle verifies (from standard input too)
	run bash -c 'gzip -dc b.tar.gz | fmt-verify -'
	assert_success
	assert_output "-: ok (bundle of safetensors, 1 file, 468 bytes)"
}

@test "hostile bundles: cut short 4, unsafe member names 4, a size field of 8 GiB or 2^62 (no allocation) 4 or 6, a flipped byte 6, an unlisted member 9; a JSON failure record each" {
	fmt-shard pack "$SAMPLES/tiny.safetensors" -o t.tar >/dev/null
	# cut inside the member: 4, the reader's words
	head -c 1700 t.tar >cut.tar
	run --separate-stderr fmt-inspect cut.tar
	assert_failure 4
	assert_output ''
	assert_equal "$stderr" "fmt-inspect: error: cut.tar: truncated: the bundle ends inside member 'tiny.safetensors' (Truncated tar archive)"
	run --separate-stderr fmt-inspect --json cut.tar
	assert_failure 4
	assert_equal "$(jq -c '[.file, .ok, .exit, .error]' <<<"$output")" '["cut.tar",false,4,"InvalidFormat"]'
	# MANIFEST.json's size field says 8 GiB - 1, then 2^62: refused before any allocation
	retar t.tar big-manifest.tar 0 $((8 ** 11 - 1))
	run --separate-stderr fmt-inspect big-manifest.tar
	assert_failure 4
	assert_equal "$stderr" 'fmt-inspect: error: big-manifest.tar: MANIFEST.json is 8589934591 bytes (at most 16777216)'
	retar t.tar huge-manifest.tar 0 $((1 << 62))
	run --separate-stderr fmt-inspect huge-manifest.tar
	assert_failure 4
	assert_equal "$stderr" 'fmt-inspect: error: huge-manifest.tar: MANIFEST.json is 4611686018427387904 bytes (at most 16777216)'
	# a member's size field unlike the manifest's: 6; as the manifest too, the data is not there: 4
	retar t.tar huge-member.tar 1 $((1 << 62))
	run --separate-stderr fmt-inspect huge-member.tar
	assert_failure 6
	assert_equal "$stderr" "fmt-inspect: error: huge-member.tar: member 'tiny.safetensors' is 4611686018427387904 bytes, the manifest says 468"
	# path traversal and other unsafe names, links: 4 naming the member, before any data
	mkbundle() {
		/usr/bin/python3 - "$1" "$2" <<'PY'
import hashlib, io, json, sys, tarfile
out, name = sys.argv[1], sys.argv[2]
data = b"x"
listed = {"a.bin": b"first\n"}
manifest = json.dumps({"files": {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in listed.items()},
                       "fmtkit": "0.1.0", "format": "safetensors"}, separators=(",", ":"), sort_keys=True).encode()
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for n, d, kind in (("MANIFEST.json", manifest, tarfile.REGTYPE), ("a.bin", listed["a.bin"], tarfile.REGTYPE),
                       (name, data, tarfile.SYMTYPE if name == "link.bin" else tarfile.REGTYPE)):
        ti = tarfile.TarInfo(n)
        ti.type, ti.mtime, ti.mode = kind, 0, 0o644
        ti.size = len(d) if kind == tarfile.REGTYPE else 0
        if kind == tarfile.SYMTYPE:
            ti.linkname = "/etc/passwd"
        t.addfile(ti, io.BytesIO(d) if ti.size else None)
PY
	}
	while IFS='|' read -r name why; do
		mkbundle bad.tar "$name"
		run --separate-stderr fmt-inspect bad.tar
		[ "$status" -eq 4 ] || fail "$name: exit $status ($stderr)"
		assert_equal "$stderr" "fmt-inspect: error: bad.tar: member '$name' $why"
		assert_output ''
	done <<'EOF2'
../evil.bin|has a '..' component
/tmp/evil.bin|is an absolute path
sub/evil.bin|is a path with a directory (members are plain file names)
link.bin|is a symbolic link (bundles hold regular files only)
EOF2
	# a member the manifest does not list: 9; a flipped byte: 6
	mkbundle extra.tar c.bin
	run --separate-stderr fmt-inspect --json extra.tar
	assert_failure 9
	assert_equal "$output" '{"file":"extra.tar","ok":false,"exit":9,"error":"SchemaMismatch","message":"member '"'"'c.bin'"'"' is not listed in MANIFEST.json"}'
	cp t.tar flip.tar
	printf 'X' | dd of=flip.tar bs=1 seek=1700 conv=notrunc 2>/dev/null
	run --separate-stderr fmt-inspect flip.tar
	assert_failure 6
	assert_output ''
	[[ "$stderr" == "fmt-inspect: error: flip.tar: member 'tiny.safetensors': SHA-256 "*" differs from the manifest's "* ]]
}
