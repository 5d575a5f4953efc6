#!/usr/bin/env bats
# A reader of standard output that is gone (`| head -1` after its line): every tool ends by
# SIGPIPE, quietly (no message; status 141 in the shell), as any Unix filter does, whatever -T and
# whichever thread writes. A text output written by worker threads (CSV, JSON Lines on -T 2) got
# EPIPE there instead, since they block signals, and exited 3 "-: write: Broken pipe" about half
# the time. The reader here is gone before the tool starts (a FIFO whose only reader is closed),
# so every run's first write fails: nothing depends on timing.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	D=$BATS_FILE_TMPDIR
	export D
	# 100,000 rows (1.3 MB of CSV): several batches, formatted on the worker threads with -T 2
	seq 1 100000 | awk 'BEGIN { print "id,x" } { print $1 "," $1 * 0.5 }' >"$D/big.csv"
	fmt-convert -q "$D/big.csv" "$D/big.ald"
	"$REPO_ROOT/scripts/gen/llama-tiny" "$D/L" --embd 256 --ff 512 --layers 2 >/dev/null
	fmt-sign keygen -q --watermark -s "$D/wm.key"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	mkdir tmp
	export TMPDIR=$PWD/tmp
	# fd $GONE: the write end of a pipe that has no reader (left open for every run of a test)
	mkfifo fifo
	exec {rw}<>fifo {GONE}>fifo {rw}<&-
	rm fifo
}

teardown() {
	exec {GONE}>&-
}

# gone N CMD...: CMD N times with standard output on $GONE; each must end by SIGPIPE (141) with
# nothing on stderr and nothing left in the directory or in TMPDIR.
gone() {
	local n=$1 i status left
	shift
	for ((i = 1; i <= n; i++)); do
		status=0
		"$@" >&"$GONE" 2>err || status=$?
		[ "$status" -eq 141 ] || fail "run $i of $*: status $status, not 141 (SIGPIPE); stderr: $(cat err)"
		[ ! -s err ] || fail "run $i of $*: stderr: $(cat err)"
	done
	rm err
	left=$(find . -mindepth 1 ! -path ./tmp ! -path ./keep ! -path './keep/*')
	[ -z "$left" ] || fail "left behind: $left"
}

# to_gone CMD...: CMD with standard output on $GONE (for run, which takes stderr).
to_gone() {
	"$@" >&"$GONE"
}

@test "datasets to a gone reader: SIGPIPE every time with -T 1 and -T 2 (CSV, JSON Lines, Arrow), quietly" {
	for t in 1 2; do
		gone 20 fmt-convert -T $t --to csv "$D/big.csv" -
		gone 20 fmt-convert -T $t --to jsonl "$D/big.csv" -
		gone 20 fmt-convert -T $t --to csv "$D/big.ald" -
		gone 20 fmt-convert -T $t --to jsonl "$D/big.ald" -
		gone 20 fmt-convert -T $t --to arrow "$D/big.ald" -
		gone 10 fmt-watermark embed -T $t --key "$D/wm.key" --buyer b --to csv "$D/big.csv" -
	done
}

@test "models to a gone reader: SIGPIPE every time with -T 1 and -T 2, quietly" {
	for t in 1 2; do
		gone 20 fmt-convert -T $t --to gguf "$D/L/weights.safetensors" -
		gone 10 fmt-convert -T $t --dtype Q8_0 --to gguf "$D/L/weights.safetensors" -
		gone 10 fmt-watermark embed -T $t --key "$D/wm.key" --buyer b --to safetensors "$D/L/weights.safetensors" -
	done
}

@test "reports and other outputs to a gone reader: SIGPIPE, quietly (inspect, verify, shard, sign, nk-run)" {
	fmt-convert -q "$D/L/weights.safetensors" m.gguf
	fmt-shard split -q --max-tensors 8 m.gguf -o set
	fmt-sign keygen -q -W -p k.pub -s k.key
	fmt-convert -q "$REPO_ROOT/tests/data/fixtures/nk/test_mlp.onnx" mlp.nk
	mkdir keep && mv m.gguf set-* k.pub k.key mlp.nk keep/
	gone 5 fmt-inspect --head 100000 "$D/big.csv"
	gone 5 fmt-inspect --json --tensors keep/m.gguf
	gone 5 fmt-verify keep/m.gguf
	gone 5 fmt-shard merge keep/set-00001-of-*.gguf -o -
	gone 5 fmt-sign sign -s keep/k.key -x - keep/m.gguf
	gone 5 nk-run --raw --random 1 keep/mlp.nk
}

@test "SIGPIPE ignored by the caller: exit 3 and the message, every time, whichever thread writes" {
	trap '' PIPE
	for t in 1 2; do
		for i in 1 2 3 4 5; do
			run -3 to_gone fmt-convert -T $t --to csv "$D/big.csv" -
			assert_output "fmt-convert: error: $D/big.csv: cannot write to standard output: Broken pipe"
		done
	done
	trap - PIPE
}
