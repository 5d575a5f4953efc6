#!/usr/bin/env bats
# An input file truncated by another process while a tool reads it through a mapping: the access
# past the new end raised SIGBUS and the tool died of it (exit 135, no message, its temporary
# output left in the output directory). Now: "FILE: the file shrank while being read (truncated
# by another process?)", as when read(2) finds the file's end early, exit 3, nothing left, and
# with --json the input's failure record on stdout as for any other failure. The test hooks stop
# the tool at a known point (its first output created: FMTKIT_TEST_STOP_AT_SINK; its Nth input
# mapped: FMTKIT_TEST_STOP_AT_MAP), the test truncates the input there and lets the tool go on.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	# 100,000 rows: ~1.6 MB as Arrow IPC, ~300 KB as .ald, far past the 8 KiB left of them
	seq 1 100000 | awk 'BEGIN { print "x,y" } { printf "%d,%.3f\n", $1, $1 * 0.37 }' >"$BATS_FILE_TMPDIR/d.csv"
	fmt-convert "$BATS_FILE_TMPDIR/d.csv" "$BATS_FILE_TMPDIR/d.arrow"
	fmt-convert "$BATS_FILE_TMPDIR/d.csv" "$BATS_FILE_TMPDIR/d.ald"
	/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from st_file import st
st(sys.argv[2], [("a", "F32", "f", [float(i % 1000) for i in range(1 << 18)])])' \
		"$REPO_ROOT/tests/cli" "$BATS_FILE_TMPDIR/m.safetensors"
	head -c 32 /dev/urandom >"$BATS_FILE_TMPDIR/wm.key"
	chmod 600 "$BATS_FILE_TMPDIR/wm.key"
	# 100 Arrow files of 300 rows (5.7 KB each): more than the 64 mappings of a block
	seq 1 300 | awk 'BEGIN { print "x,y" } { printf "%d,%.3f\n", $1, $1 * 0.37 }' >"$BATS_FILE_TMPDIR/p.csv"
	mkdir "$BATS_FILE_TMPDIR/parts"
	fmt-convert "$BATS_FILE_TMPDIR/p.csv" "$BATS_FILE_TMPDIR/parts/p001.arrow"
	for i in $(seq -w 2 100); do cp "$BATS_FILE_TMPDIR/parts/p001.arrow" "$BATS_FILE_TMPDIR/parts/p$i.arrow"; done
	# an ONNX model (839 KB) and an .nk network (870 KB), both mapped whole
	cp "$REPO_ROOT/tests/data/fixtures/nk/mnist_cnn_dw.onnx" "$BATS_FILE_TMPDIR/m.onnx"
	cp "$REPO_ROOT/tests/data/fixtures/nk/mnist_cnn_dw.nk" "$BATS_FILE_TMPDIR/m.nk"
	# an APR v1 file with a 64 KiB payload (fmt-apr.bats's make_v1), mapped whole by open and verify
	/usr/bin/python3 - "$BATS_FILE_TMPDIR/m.apr" <<'PY'
import struct, sys, zlib
import msgpack
meta = msgpack.packb({"created_at": "1700000000", "aprender_version": "0.25.0", "model_name": "lr"})
payload = bytes(i % 251 for i in range(1 << 16))
hdr = b"APRN" + bytes([1, 0]) + struct.pack("<HIII", 1, len(meta), len(payload), len(payload)) + bytes([0, 0, 80]) + bytes(9)
body = hdr + meta + payload
open(sys.argv[1], "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
	# an .apsim file whose header (6.7 KB) names its format past the first 4096 bytes: the probe
	# reads the whole header (it mapped the file: below)
	/usr/bin/python3 - "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" \
		"$BATS_FILE_TMPDIR/m.apsim" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = b[8:8 + n].replace(b'{"__metadata__":{', b'{"__metadata__":{"apad":"' + b"p" * 6000 + b'",', 1)
assert h.index(b'"format":"apsi-model"') > 4096
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + b[8 + n:])
PY
}

setup() {
	cd "$BATS_TEST_TMPDIR"
	mkdir out
}

MSG='the file shrank while being read (truncated by another process?)'

# cut_while STOP N IN SIZE CMD...: copy the sample IN here (when there is one), run CMD until STOP (stop_at_output:
# its Nth output exists; stop_at_map: it has mapped its Nth input), cut IN to SIZE bytes, let CMD
# go on; its exit status in $status, its stdout in stdout, its stderr in err.
cut_while() {
	local stop=$1 n=$2 in=$3 size=$4
	shift 4
	[ ! -e "$BATS_FILE_TMPDIR/$in" ] || cp "$BATS_FILE_TMPDIR/$in" "$in"
	"$stop" "$n" "$@" >stdout 2>err
	truncate -s "$size" "$in"
	cont_stopped
}

# truncated_at_output IN CMD...: cut IN to 8 KiB once CMD has created its output.
truncated_at_output() {
	cut_while stop_at_output 1 "$1" 8192 "${@:2}"
}

# truncated_at_map IN CMD...: cut IN to 8 KiB once CMD has mapped it.
truncated_at_map() {
	cut_while stop_at_map 1 "$1" 8192 "${@:2}"
}

@test "fmt-convert: an Arrow input truncated while mapped: exit 3, the message, no temporary file" {
	truncated_at_output d.arrow fmt-convert d.arrow out/d.csv
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-convert: error: d.arrow: $MSG"
	assert_equal "$(ls -A out)" ""
}

@test "fmt-convert --json: the failure record on stdout, the error object on stderr, exit 3, no temporary file" {
	truncated_at_output d.ald fmt-convert --json d.ald out/d.arrow
	assert_equal "$status" 3
	assert_equal "$(cat err)" '{"tool":"fmt-convert","level":"error","file":"d.ald","error":"IoError","exit":3,"message":"'"$MSG"'"}'
	assert_equal "$(cat stdout)" '{"file":"d.ald","ok":false,"exit":3,"error":"IoError","message":"'"$MSG"'"}'
	assert_equal "$(ls -A out)" ""
}

@test "fmt-watermark embed: an .ald input truncated while mapped: exit 3, the message, no temporary file" {
	truncated_at_output d.ald fmt-watermark embed --key "$BATS_FILE_TMPDIR/wm.key" --buyer b1 d.ald out/d.ald
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-watermark: error: d.ald: $MSG"
	assert_equal "$(ls -A out)" ""
}

@test "fmt-verify: an .ald file truncated while mapped: exit 3 and the message" {
	truncated_at_map d.ald fmt-verify d.ald
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-verify: error: d.ald: $MSG"
}

@test "fmt-inspect --stats: a safetensors tensor truncated while mapped: exit 3 and the message" {
	truncated_at_map m.safetensors fmt-inspect --stats --tensor a m.safetensors
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-inspect: error: m.safetensors: $MSG"
}

@test "fmt-inspect: a SIGBUS sent by kill is not reported as a truncated file" {
	cp "$BATS_FILE_TMPDIR/d.arrow" .
	stop_at_map 1 fmt-inspect d.arrow 2>err
	kill -BUS $stopped_pid
	cont_stopped
	assert_equal "$status" 135
	assert_equal "$(cat err)" ""
}

# --json: what any other failure of an input gives on stdout (the record before it stays; the
# tool ends there, so the files after it get none)
@test "fmt-verify --json: the truncated file's failure record follows the records before it on stdout" {
	cp "$BATS_FILE_TMPDIR/d.ald" a.ald
	cp "$BATS_FILE_TMPDIR/d.ald" b.ald
	# a.ald is the first file mapped, d.ald the second
	cut_while stop_at_map 2 d.ald 8192 fmt-verify --json a.ald d.ald b.ald
	assert_equal "$status" 3
	assert_equal "$(cat stdout)" '{"file":"a.ald","ok":true,"format":"ald","rows":100000,"crc":"ieee"}
{"file":"d.ald","ok":false,"exit":3,"error":"IoError","message":"'"$MSG"'","failed_file":"d.ald"}'
	assert_equal "$(cat err)" '{"tool":"fmt-verify","level":"error","file":"d.ald","error":"IoError","exit":3,"message":"'"$MSG"'"}'
	# the record of an input that cannot be read, for comparison: the same members
	run --separate-stderr fmt-verify --json missing.ald
	assert_equal "$output" '{"file":"missing.ald","ok":false,"exit":3,"error":"IoError","message":"cannot open: No such file or directory","failed_file":"missing.ald"}'
}

@test "fmt-inspect --json -q: no record on stdout, the error object on stderr" {
	truncated_at_map d.arrow fmt-inspect --json -q --stats d.arrow
	assert_equal "$status" 3
	assert_equal "$(cat stdout)" ""
	assert_equal "$(cat err)" '{"tool":"fmt-inspect","level":"error","file":"d.arrow","error":"IoError","exit":3,"message":"'"$MSG"'"}'
}

# More than 64 files mapped at once: fmt-shard concat keeps every input open (and mapped) while
# it writes; a SIGBUS in the 100th was not reported (exit 135, the output's temporary left).
@test "fmt-shard concat of 100 Arrow files, the last cut once the output exists: exit 3, the message, the record, nothing left" {
	cp "$BATS_FILE_TMPDIR"/parts/p*.arrow .
	cut_while stop_at_output 1 p100.arrow 0 fmt-shard concat --json p*.arrow -o out/all.arrow
	assert_equal "$status" 3
	assert_equal "$(cat err)" '{"tool":"fmt-shard","level":"error","file":"p100.arrow","error":"IoError","exit":3,"message":"'"$MSG"'"}'
	assert_equal "$(cat stdout)" '{"file":"p001.arrow","ok":false,"exit":3,"error":"IoError","message":"'"$MSG"'"}'
	assert_equal "$(ls -A out)" ""
}

@test "fmt-shard concat of 100 Arrow files, the 100th cut once mapped: exit 3 and the message" {
	cp "$BATS_FILE_TMPDIR"/parts/p*.arrow .
	cut_while stop_at_map 100 p100.arrow 0 fmt-shard concat p*.arrow -o out/all.arrow
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-shard: error: p100.arrow: $MSG"
	assert_equal "$(ls -A out)" ""
}

# The other inputs read through a mapping: ONNX and .nk files (mapped whole), APR v1 files, the
# header of an .apsim file that the format probe searches.
@test "ONNX: fmt-inspect, fmt-verify and fmt-convert (import to .nk) of a model truncated while mapped: exit 3, the message" {
	for cmd in "fmt-inspect m.onnx" "fmt-verify m.onnx" "fmt-convert m.onnx out/m.nk"; do
		truncated_at_map m.onnx $cmd
		assert_equal "$status" 3
		assert_equal "$(cat err)" "${cmd%% *}: error: m.onnx: $MSG"
		assert_equal "$(cat stdout)" ""
		assert_equal "$(ls -A out)" ""
	done
}

@test ".nk: nk-run, fmt-inspect and fmt-verify of a network truncated while mapped: exit 3, the message" {
	for cmd in "nk-run --random 1 m.nk" "fmt-inspect m.nk" "fmt-verify m.nk"; do
		truncated_at_map m.nk $cmd
		assert_equal "$status" 3
		assert_equal "$(cat err)" "${cmd%% *}: error: m.nk: $MSG"
		assert_equal "$(cat stdout)" ""
	done
	assert_equal "$(ls -A)" "err
m.nk
out
stdout"
}

@test "APR v1: fmt-verify and fmt-inspect of a file truncated while mapped: exit 3, the message" {
	for cmd in "fmt-verify m.apr" "fmt-inspect m.apr"; do
		truncated_at_map m.apr $cmd
		assert_equal "$status" 3
		assert_equal "$(cat err)" "${cmd%% *}: error: m.apr: $MSG"
		assert_equal "$(cat stdout)" ""
	done
}

# The format probe searched a header past the first 4 KiB (an .apsim's format key may lie there)
# in a mapping of the whole file, and the mapping stayed: every later read of a safetensors model
# with such a header (most have one) was a copy out of it, a page fault a page (its 995 MB zstd
# .apr write: 0.45 s more CPU). It reads the header now: with FMTKIT_TEST_STOP_AT_MAP=1 (stop
# once a file is mapped) these run to their end.
@test "a header past 4 KiB is read by the format probe, not mapped: .apsim and safetensors, every tool that opens them" {
	/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from st_file import st
st(sys.argv[2], [("t%03d" % i, "F32", "f", [float(j % 7) for j in range(256)]) for i in range(100)])' \
		"$REPO_ROOT/tests/cli" big.safetensors
	assert [ "$(od -An -tu8 -N8 big.safetensors | tr -d ' ')" -gt 4096 ]
	cp "$BATS_FILE_TMPDIR/m.apsim" .
	for cmd in "fmt-inspect m.apsim" "fmt-inspect big.safetensors" "fmt-verify big.safetensors" \
		"fmt-convert -c zstd big.safetensors out/m.apr" "fmt-convert --dtype q8_0 big.safetensors out/m.gguf" \
		"fmt-convert big.safetensors out/m.apsim"; do
		runs_unmapped $cmd
		assert_equal "$status" 0
	done
	fmt-inspect m.apsim | grep -qx 'format:     apsim (version 1)'
	fmt-inspect out/m.apr | grep -q '^tensors: *100$'
	fmt-inspect out/m.gguf | grep -q '^tensors: *100$'
}

# runs_unmapped CMD...: CMD with FMTKIT_TEST_STOP_AT_MAP=1, to its end (its exit status in
# $status), or failed when it stops: it has mapped a file.
runs_unmapped() {
	local i
	env FMTKIT_TEST_STOP_AT_MAP=1 setsid "$@" >/dev/null 3>&- &
	local pid=$!
	for i in $(seq 1 1000); do
		if [ "$(proc_state_of $pid)" = T ]; then
			kill -KILL $pid
			wait $pid || true
			fail "it mapped a file: $*"
		fi
		kill -0 $pid 2>/dev/null || break
		sleep 0.01
	done
	status=0
	wait $pid || status=$?
}

# The same event read with read(2) (safetensors tensors are read, not mapped, by a conversion):
# the same words
@test "fmt-convert --json: a safetensors input truncated while read: exit 3, the same words, the record, nothing left" {
	truncated_at_output m.safetensors fmt-convert --json m.safetensors out/m.gguf
	assert_equal "$status" 3
	assert_equal "$(cat stdout)" '{"file":"m.safetensors","ok":false,"exit":3,"error":"IoError","message":"tensor '"'a'"': '"$MSG"'"}'
	assert_equal "$(cat err)" '{"tool":"fmt-convert","level":"error","file":"m.safetensors","error":"IoError","exit":3,"message":"tensor '"'a'"': '"$MSG"'"}'
	assert_equal "$(ls -A out)" ""
}

@test "fmt-convert --in-place: a GGUF truncated while its data is copied: exit 3, the same words, no temporary file" {
	fmt-convert "$BATS_FILE_TMPDIR/m.safetensors" m.gguf
	cut_while stop_at_output 1 m.gguf 8192 fmt-convert --in-place --set general.name=x m.gguf
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-convert: error: m.gguf: $MSG"
	assert_equal "$(ls -A)" "err
m.gguf
out
stdout"
}
