#!/usr/bin/env bats
# An input file truncated by another process while a tool reads it through a mapping: the access
# past the new end raised SIGBUS and the tool died of it (exit 135, no message, its temporary
# output left in the output directory). Now: "FILE: the file changed size while being read
# (truncated by another process?)", exit 3, nothing left. The test hooks stop the tool at a known
# point (its first output created: FMTKIT_TEST_STOP_AT_SINK; its first input mapped:
# FMTKIT_TEST_STOP_AT_MAP), the test truncates the input there and lets the tool go on.

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
}

setup() {
	cd "$BATS_TEST_TMPDIR"
	mkdir out
}

MSG='the file changed size while being read (truncated by another process?)'

# truncated_at_output IN CMD...: copy the sample IN here, run CMD until its output exists, cut IN to
# 8 KiB, let CMD go on; its exit status in $status, its stderr in err.
truncated_at_output() {
	cp "$BATS_FILE_TMPDIR/$1" "$1"
	local in=$1
	shift
	stop_at_output 1 "$@" 2>err
	truncate -s 8192 "$in"
	cont_stopped
}

# truncated_at_map IN CMD...: the same, stopping CMD once it has mapped IN.
truncated_at_map() {
	cp "$BATS_FILE_TMPDIR/$1" "$1"
	local in=$1
	shift
	stop_at_map 1 "$@" 2>err
	truncate -s 8192 "$in"
	cont_stopped
}

@test "fmt-convert: an Arrow input truncated while mapped: exit 3, the message, no temporary file" {
	truncated_at_output d.arrow fmt-convert d.arrow out/d.csv
	assert_equal "$status" 3
	assert_equal "$(cat err)" "fmt-convert: error: d.arrow: $MSG"
	assert_equal "$(ls -A out)" ""
}

@test "fmt-convert --json: the error object on stderr, exit 3, no temporary file" {
	truncated_at_output d.ald fmt-convert --json d.ald out/d.arrow
	assert_equal "$status" 3
	assert_equal "$(cat err)" '{"tool":"fmt-convert","level":"error","file":"d.ald","error":"IoError","exit":3,"message":"'"$MSG"'"}'
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
