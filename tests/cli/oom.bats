#!/usr/bin/env bats
# Out of memory, without a memory limit: tests/oom/failalloc.c (an LD_PRELOAD object, build/oom/)
# makes the Nth allocation of a tool fail (and with -a every one after it), and tests/oom/run
# runs the tool once per N and checks every run: no signal or hang; exit 0 (a failure the code
# tolerates) or 3 (out of memory is an IoError, CONVENTIONS.md); an error line on stderr ("TOOL:
# error: ..." or, with --json, an object with "level":"error"); after a failure nothing left where
# the tool writes (no partial output, no temporary file, also in $TMPDIR); after a success the
# same stdout and files, byte for byte, as a run where nothing failed. Every allocation of each
# command is failed once, except where a stride or a window is given: the commands that load
# libcrypto make about 4,900 allocations, 4,700 of them inside libcrypto's initialisation, whose
# failures it tolerates (the windows cover the loader's and the crashes' allocations).
# Not with a sanitizer build: its allocator is in the executable, before any preloaded object
# (the injector counts nothing, and the tests are skipped).

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	local d=$BATS_FILE_TMPDIR
	"$REPO_ROOT/scripts/gen/sample-models" "$d/s" >/dev/null
	fmt-convert -q --dtype q8_0 "$d/s/tiny.safetensors" "$d/q8.gguf"
	fmt-convert -q -c zstd "$d/s/tiny.safetensors" "$d/t.apr"
	fmt-sign keygen -W -p "$d/k.pub" -s "$d/k.key" >/dev/null
	fmt-sign sign -q -s "$d/k.key" -x "$d/tiny.minisig" "$d/s/tiny.safetensors"
	cp "$REPO_ROOT/tests/data/ald/spec-example.ald" "$REPO_ROOT/tests/data/conformance/csv/sample.csv" \
		"$REPO_ROOT/tests/data/parquet/types-v2-zstd.parquet" "$REPO_ROOT/tests/data/fixtures/nk/test_mlp.nk" \
		"$REPO_ROOT/tests/data/conformance/jsonl/sample.jsonl" "$REPO_ROOT/tests/data/conformance/onnx/test_mlp.onnx" \
		"$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" "$d/"
	mkdir "$d/parts"
	fmt-shard split -q --max-tensors 2 -o "$d/parts/m" "$d/q8.gguf"
	fmt-shard pack -q "$d/s/sharded/model.safetensors.index.json" -o "$d/b.tar.zst"
}

setup() {
	D=$BATS_FILE_TMPDIR
	FMTKIT_FAILALLOC=${FMTKIT_FAILALLOC:-$FMTKIT_BIN/../oom/failalloc.so}
	[ -f "$FMTKIT_FAILALLOC" ] || FMTKIT_FAILALLOC=$REPO_ROOT/build/oom/failalloc.so
	export FMTKIT_FAILALLOC
	# the tools' allocations are interposed (not with a sanitizer build)
	FMTKIT_FAIL_ALLOC_COUNT=$BATS_TEST_TMPDIR/count LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect --version >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/count")" -gt 0 ] || skip "the injector counts no allocation (a sanitizer build?)"
}

# oom [OPTIONS --] TOOL ARGS...: tests/oom/run over TOOL from $FMTKIT_BIN; it must pass, and say so.
oom() {
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	run "$REPO_ROOT/tests/oom/run" -q "${opts[@]}" -- "$FMTKIT_BIN/$1" "${@:2}"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ ${lines[-1]} == "ok $1 "*", 0 failed, "* ]]
}

@test "oom: the injector counts the tools' allocations and fails the one asked for" {
	cd "$BATS_TEST_TMPDIR"
	FMTKIT_FAIL_ALLOC_COUNT=count LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect "$D/q8.gguf" >ref.txt
	n=$(cat count)
	[ "$n" -gt 10 ]
	# the same count every run; past the last, nothing fails
	FMTKIT_FAIL_ALLOC_COUNT=count2 FMTKIT_FAIL_ALLOC_AT=$((n + 1)) LD_PRELOAD=$FMTKIT_FAILALLOC \
		fmt-inspect "$D/q8.gguf" >out.txt
	[ "$(cat count2)" -eq "$n" ]
	cmp ref.txt out.txt
	# the first allocation after the constructor and every one after it: out of memory
	run -3 env FMTKIT_FAIL_ALLOC_AT=1 FMTKIT_FAIL_ALLOC_AFTER=1 LD_PRELOAD=$FMTKIT_FAILALLOC \
		fmt-inspect "$D/q8.gguf"
	[ "$output" = "fmt-inspect: error: out of memory" ]
}

@test "oom: the option parser out of memory is exit 3, not a usage error" {
	run -3 env FMTKIT_FAIL_ALLOC_AT=1 LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect "$D/q8.gguf"
	[ "$output" = "fmt-inspect: error: out of memory" ]
	run -3 env FMTKIT_FAIL_ALLOC_AT=1 LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect --json "$D/q8.gguf"
	[ "$output" = '{"tool":"fmt-inspect","level":"error","file":null,"error":"IoError","exit":3,"message":"out of memory"}' ]
}

@test "oom: --json is noticed whatever allocation fails: a usage error or out of memory is a JSON object" {
	# the look for --json read a copy of argv: when it could not be made (allocation 1), a usage
	# error came out as text
	run -3 env FMTKIT_FAIL_ALLOC_AT=1 LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect --json --bogus "$D/q8.gguf"
	[ "$output" = '{"tool":"fmt-inspect","level":"error","file":null,"error":"IoError","exit":3,"message":"out of memory"}' ]
	for n in 2 3; do
		run -2 env FMTKIT_FAIL_ALLOC_AT=$n LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect --bogus "$D/q8.gguf" --json
		[ "$output" = '{"tool":"fmt-inspect","level":"error","file":null,"error":"UsageError","exit":2,"message":"unknown option '"'--bogus'"'"}' ]
	done
	# as the parse reads it: not an option's value, not after "--", not after an operand under
	# POSIXLY_CORRECT
	run -2 fmt-inspect --tensor --json
	[ "$output" = "$(printf "fmt-inspect: error: no input file\nTry 'fmt-inspect --help'.")" ]
	run -3 env POSIXLY_CORRECT=1 fmt-inspect "$D/q8.gguf" --json --bogus
	[ "${lines[0]}" = "fmt-inspect: error: --json: cannot open: No such file or directory" ]
	run -3 fmt-inspect -- --json
	[ "$output" = "fmt-inspect: error: --json: cannot open: No such file or directory" ]
}

@test "oom: fmt-inspect and fmt-verify of safetensors: every allocation" {
	oom -s 2 -- fmt-inspect "$D/s/tiny.safetensors"
	oom -s 3 -f 2 -- fmt-verify -T 1 "$D/s/tiny.safetensors"
}

@test "oom: fmt-inspect of GGUF, .apr, CSV, with and without --json" {
	oom -- fmt-inspect "$D/q8.gguf"
	oom -s 7 -- fmt-inspect --json "$D/q8.gguf"
	oom -l 40 -- fmt-inspect "$D/t.apr"
	oom -s 9 -f 2 -- fmt-inspect --json "$D/t.apr"
	oom -s 2 -- fmt-inspect "$D/sample.csv"
	oom -s 6 -- fmt-inspect --json "$D/sample.csv"
}

@test "oom: fmt-inspect of .ald and Parquet" {
	oom -s 2 -- fmt-inspect "$D/spec-example.ald"
	oom -s 5 -- fmt-inspect --json "$D/spec-example.ald"
	# around the row groups' chunks and statistics (exit 0 with an incomplete report before)
	oom -f 149 -l 159 -- fmt-inspect "$D/types-v2-zstd.parquet"
	oom -f 467 -l 475 -- fmt-inspect --json "$D/types-v2-zstd.parquet"
	oom -s 97 -- fmt-inspect --json "$D/types-v2-zstd.parquet"
}

@test "oom: fmt-verify of an .ald loads libcrypto out of memory" {
	# dlopen and libcrypto's initialisation (a SIGSEGV in EVP_MD_fetch before), then a stride
	oom -f 39 -l 109 -- fmt-verify -T 1 "$D/spec-example.ald"
	oom -f 110 -s 487 -- fmt-verify -T 1 "$D/spec-example.ald"
}

@test "oom: fmt-convert to GGUF Q8_0 and to a zstd .apr: every allocation" {
	oom -s 2 -- fmt-convert -T 1 --dtype q8_0 "$D/s/tiny.safetensors" out.gguf
	oom -s 2 -- fmt-convert -T 1 -c zstd "$D/s/tiny.safetensors" out.apr
	# 2.5 MB written: the checksum's read-back is shared by the two threads (fmt_xxh3_read)
	local m3=$BATS_TEST_TMPDIR/m3.safetensors
	/usr/bin/python3 - "$m3" <<'PY'
import json, struct, sys
import numpy as np
a = (np.arange(800000, dtype=np.float32) * 0.001).astype(np.float32)
h = json.dumps({"w": {"dtype": "F32", "shape": [800000], "data_offsets": [0, a.nbytes]}}).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + a.tobytes())
PY
	fmt-convert -T 2 -c zstd "$m3" "$BATS_TEST_TMPDIR/m3.apr"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/m3.apr")" -gt 2097152 ]
	oom -- fmt-convert -T 2 -c zstd "$m3" out.apr
}

@test "oom: fmt-convert CSV -> .ald and .ald -> CSV" {
	oom -l 109 -s 2 -- fmt-convert -T 1 "$D/sample.csv" out.ald
	oom -f 110 -s 491 -- fmt-convert -T 1 "$D/sample.csv" out.ald
	oom -- fmt-convert -T 1 "$D/spec-example.ald" out.csv
}

@test "oom: fmt-sign keygen, sign, verify" {
	oom -r -- fmt-sign keygen -W -p k.pub -s k.key
	# a trusted comment of its own: the default's timestamp differs when a run falls in the next
	# second, and the signature with it ('exit 0 but the files left differ')
	oom -- fmt-sign sign -s "$D/k.key" -t 'timestamp:0' -x t.minisig "$D/s/tiny.safetensors"
	oom -s 3 -- fmt-sign verify -p "$D/k.pub" -x "$D/tiny.minisig" "$D/s/tiny.safetensors"
}

@test "oom: fmt-shard split and nk-run" {
	oom -s 3 -- fmt-shard split --max-tensors 1 -o m "$D/q8.gguf"
	oom -- nk-run --random 1 "$D/test_mlp.nk"
	oom -- nk-run --test "$D/test_mlp.nk"
}

@test "oom: every allocation from the Nth failing: still one error line, in JSON with --json" {
	oom -a -s 6 -- fmt-inspect --json "$D/q8.gguf"
	oom -a -s 18 -- fmt-inspect --json "$D/types-v2-zstd.parquet"
	oom -a -s 4 -- fmt-convert -T 1 --dtype q8_0 "$D/s/tiny.safetensors" out.gguf
	oom -a -s 199 -- fmt-convert -T 1 "$D/sample.csv" out.ald
}

@test "oom: .apsim, JSON Lines, ONNX: jansson's and protobuf-c's failures are out of memory" {
	# a parse during which jansson ran out of memory (a string short of a byte, a syntax error)
	oom -s 4 -- fmt-inspect --json "$D/example-signed-team-secret.apsim"
	oom -s 3 -- fmt-inspect --json "$D/sample.jsonl"
	oom -s 3 -- fmt-convert -T 1 "$D/test_mlp.onnx" out.nk
}

@test "oom: GGUF split sets, Parquet out, tar bundles" {
	oom -s 3 -- fmt-shard merge "$D/parts/m-00001-of-00003.gguf" -o merged.gguf
	# zstd pages and the writer's statistics; not snappy (the default): libsnappy throws
	# std::bad_alloc (abort), and glibc ends the process loading libstdc++ out of memory (exit 127)
	oom -- fmt-convert -T 1 -c zstd "$D/sample.csv" out.parquet
	# windows: libarchive's probe, then its members; not libarchive's own set-up, where some
	# allocations end the process in glibc (exit 127 loading it: "out of memory") or crash
	# libarchive (archive_read_new); libarchive's own exit(1) on some others is a known failure
	oom -f 19 -l 65 -- fmt-verify -T 1 "$D/b.tar.zst"
	oom -f 4989 -k 'Fatal Internal Error in libarchive' -- fmt-verify -T 1 "$D/b.tar.zst"
	oom -f 4989 -s 3 -k 'Fatal Internal Error in libarchive' -- fmt-shard unpack "$D/b.tar.zst" -C un
}

@test "oom: fmt-convert --embed-tests and --dtype int8 --calibration (.nk writers that parse their own output)" {
	# the inputs' JSON parse out of memory was 'JSON:  (line 0)' (exit 4), and the check that the
	# new file parses and passes its tests called it internal (exit 70: 'the file with its tests
	# does not parse: the file with its tests does not parse: ', its own message printed into itself)
	local fix=$REPO_ROOT/tests/data/fixtures/nk
	"$REPO_ROOT/scripts/gen/nk-tcas" split "$fix/test_mlp.nk" "$BATS_TEST_TMPDIR/net.nk" "$BATS_TEST_TMPDIR/cases.json"
	"$REPO_ROOT/scripts/gen/nk-tcas" split "$fix/mnist_cnn_dw.nk" "$BATS_TEST_TMPDIR/dw.nk" "$BATS_TEST_TMPDIR/dw.json"
	oom -- fmt-convert --embed-tests "$BATS_TEST_TMPDIR/cases.json" --tolerance 1e-5 "$BATS_TEST_TMPDIR/net.nk" out.nk
	# about 8,500 allocations: a stride over them, then every one of the last 130 (the int8
	# file written, parsed again and run against the float network)
	oom -n 100 -- fmt-convert --dtype int8 --calibration "$BATS_TEST_TMPDIR/dw.json" "$fix/mnist_cnn_dw.onnx" q.nk
	oom -f 8399 -- fmt-convert --dtype int8 --calibration "$BATS_TEST_TMPDIR/dw.json" "$fix/mnist_cnn_dw.onnx" q.nk
}

@test "oom: a --json record is on stdout whole or not at all, and out of memory writing it says so" {
	# fmt_json_line dumped straight to stdout, and jansson allocates as it dumps: a record cut off
	# where an allocation failed, the failure record glued to it, and 'cannot write to standard
	# output' (fmt-inspect's model record, a dataset's, nk-run's); -j checks every line of both
	# streams is one whole JSON object
	oom -j -f 93 -l 125 -s 4 -- fmt-inspect --json "$D/q8.gguf"
	oom -j -f 26 -l 30 -s 2 -- fmt-inspect --json "$D/sample.csv"
	oom -j -f 98 -l 116 -s 3 -- fmt-inspect --json "$D/sample.csv"
	oom -j -a -f 93 -s 37 -- fmt-inspect --json "$D/q8.gguf"
	run -3 env FMTKIT_FAIL_ALLOC_AT=95 LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect --json "$D/q8.gguf"
	[ "$output" = "{\"tool\":\"fmt-inspect\",\"level\":\"error\",\"file\":\"$D/q8.gguf\",\"error\":\"IoError\",\"exit\":3,\"message\":\"out of memory\"}
{\"file\":\"$D/q8.gguf\",\"ok\":false,\"exit\":3,\"error\":\"IoError\",\"message\":\"out of memory\"}" ]
}

@test "oom: the error object written without allocating is the one jansson writes, byte for byte (invalid UTF-8 in the file name)" {
	# the hand-written object replaced every byte above 0x7F of a string that was not UTF-8:
	# 'é\xff€' became six U+FFFD escapes instead of 'é', U+FFFD, '€'
	cd "$BATS_TEST_TMPDIR"
	local f=$'\xc3\xa9\xff\xe2\x82\xac\x1b.gguf' n total
	FMTKIT_FAIL_ALLOC_COUNT=count LD_PRELOAD=$FMTKIT_FAILALLOC fmt-inspect --json "$f" 2>want >/dev/null || true
	[ "$(cat want)" = "$(printf '{"tool":"fmt-inspect","level":"error","file":"\xc3\xa9\xef\xbf\xbd\xe2\x82\xac\\u001B.gguf","error":"IoError","exit":3,"message":"cannot open: No such file or directory"}')" ]
	total=$(cat count)
	# every allocation from n on failing, n over the last 20: the message objects are built
	# with jansson until they cannot be
	for ((n = total - 20; n <= total; n++)); do
		run -3 --separate-stderr env FMTKIT_FAIL_ALLOC_AT=$n FMTKIT_FAIL_ALLOC_AFTER=1 LD_PRELOAD=$FMTKIT_FAILALLOC \
			fmt-inspect --json "$f"
		[ "$stderr" = "$(cat want)" ]
	done
}

@test "oom: --keep-split out of memory is exit 3, not internal" {
	# the input shard of each tensor was read from its file name with a copy of the name's
	# prefix: when it could not be made, 'tensor: no shard of the input set' (exit 70)
	local d=$BATS_TEST_TMPDIR
	fmt-convert -q --set general.architecture=llama --set llama.block_count:u32=2 "$D/s/tiny.safetensors" "$d/a.gguf"
	fmt-shard split -q --max-tensors 2 -o "$d/m" "$d/a.gguf"
	oom -f 88 -l 100 -s 2 -- fmt-convert -q -T 1 --dtype Q8_0 --keep-split "$d/m-00001-of-00003.gguf" out.gguf
	# and the option parser's: storing --keep-split's value out of memory was a usage error,
	# '--keep-split: out of memory' (exit 2)
	oom -l 6 -- fmt-convert -q -T 1 --dtype Q8_0 --keep-split "$d/m-00001-of-00003.gguf" out.gguf
}

@test "oom: fmt-sign, fmt-watermark and fmt-convert (to .nk) --json records that cannot be made or written are errors and no broken line, not a silent exit 3" {
	# their records went through fmt_json_line, or were never made (json_pack out of memory), and
	# the tool exited 3 saying nothing (fmt-watermark entropy's record also cut off)
	oom -j -f 125 -s 4 -- fmt-sign verify --json -p "$D/k.pub" -x "$D/tiny.minisig" "$D/s/tiny.safetensors"
	oom -j -f 137 -s 6 -- fmt-watermark entropy -j "$D/s/tiny.safetensors"
	# fmt-convert's record of an ONNX -> .nk conversion: dumped with json_dumpf, an empty line when
	# it could not be made
	oom -j -f 150 -s 3 -- fmt-convert --json --dry-run -T 1 "$D/test_mlp.onnx" out.nk
}

@test "oom: out of memory making the --json record of fmt-convert (also --embed-tests), fmt-sign sign or fmt-watermark embed leaves no output" {
	# the record was made after the output was put in place: out of memory making it left the
	# output (and a record missing a tensor, or none) with exit 3 ('exit 3 but left: out.gguf')
	oom -j -f 159 -s 9 -- fmt-convert --json -T 1 "$D/s/tiny.safetensors" out.gguf
	oom -j -f 4936 -s 8 -- fmt-convert --json -T 1 "$D/sample.csv" out.ald
	oom -j -f 16 -s 3 -- fmt-sign sign --json -s "$D/k.key" -t 'timestamp:0' -x t.minisig "$D/s/tiny.safetensors"
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >"$BATS_TEST_TMPDIR/wm.key"
	chmod 600 "$BATS_TEST_TMPDIR/wm.key"
	oom -j -f 175 -s 9 -- fmt-watermark embed -j -T 1 --key "$BATS_TEST_TMPDIR/wm.key" --buyer alice "$D/s/tiny.safetensors" out.safetensors
	# fmt-convert --embed-tests writes its .nk through a writer of its own
	"$REPO_ROOT/scripts/gen/nk-tcas" split "$REPO_ROOT/tests/data/fixtures/nk/test_mlp.nk" "$BATS_TEST_TMPDIR/net.nk" \
		"$BATS_TEST_TMPDIR/cases.json"
	oom -j -f 152 -s 5 -- fmt-convert --json --embed-tests "$BATS_TEST_TMPDIR/cases.json" --tolerance 1e-5 \
		"$BATS_TEST_TMPDIR/net.nk" out.nk
	# one of them: the error and the failure record, and no file
	cd "$BATS_TEST_TMPDIR"
	run -3 --separate-stderr env FMTKIT_FAIL_ALLOC_AT=200 LD_PRELOAD=$FMTKIT_FAILALLOC \
		fmt-convert --json -T 1 "$D/s/tiny.safetensors" out.gguf
	[ "$stderr" = "{\"tool\":\"fmt-convert\",\"level\":\"error\",\"file\":\"$D/s/tiny.safetensors\",\"error\":\"IoError\",\"exit\":3,\"message\":\"out of memory\"}" ]
	[ "$output" = "{\"file\":\"$D/s/tiny.safetensors\",\"ok\":false,\"exit\":3,\"error\":\"IoError\",\"message\":\"out of memory\"}" ]
	[ ! -e out.gguf ]
}

@test "oom: a --json warning written out of memory is whole, and the run that said it succeeds" {
	# a message object is written by hand when jansson cannot make it, so it is whole either way;
	# but jansson's failure counted as a report left incomplete: exit 3 after the output was in
	# place ('exit 3 but left: out.gguf'; the warning comes once the output is written)
	oom -j -f 286 -s 3 -- fmt-convert --json -T 1 --dtype q8_0 "$D/s/tiny.safetensors" out.gguf
	cd "$BATS_TEST_TMPDIR"
	fmt-convert --json -T 1 --dtype q8_0 "$D/s/tiny.safetensors" ref.gguf >/dev/null 2>want
	run -0 --separate-stderr env FMTKIT_FAIL_ALLOC_AT=292 LD_PRELOAD=$FMTKIT_FAILALLOC \
		fmt-convert --json -T 1 --dtype q8_0 "$D/s/tiny.safetensors" out.gguf
	[ "$stderr" = "$(cat want)" ]
	[[ $stderr == '{"tool":"fmt-convert","level":"warning","file":null,"message":"--dtype q8_0: none of the 5 tensors became Q8_0 '* ]]
	cmp ref.gguf out.gguf
}
