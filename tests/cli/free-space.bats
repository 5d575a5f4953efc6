#!/usr/bin/env bats
# Room for an output (issue 19 item 4): a model conversion whose size is known before it writes
# (its tensor data, uncompressed) is refused with exit 3 naming both sizes when the target file
# system cannot hold it, before a byte is written; where the size is not known up front
# (compressed outputs, datasets), a full disk is exit 3 and the temporary file is removed. The
# target is a 4 MiB tmpfs mounted for each test (the suite runs as root; a test is skipped,
# saying so, only where mounting is impossible).

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	"$REPO_ROOT/scripts/gen/apr-bomb" "$BATS_FILE_TMPDIR"
	BOMB="$BATS_FILE_TMPDIR/bomb-16GiB.apr"
	export BOMB
}

setup() {
	cd "$BATS_TEST_TMPDIR"
	mkdir small
	mount -t tmpfs -o size=4m tmpfs small 2>/dev/null || skip "cannot mount a tmpfs here (not root, or no mount namespace)"
	MOUNTED=1
}

teardown() {
	[ -z "${MOUNTED:-}" ] || umount "$BATS_TEST_TMPDIR/small"
}

# NAME.safetensors: one F32 tensor of N random (incompressible) values.
random_st() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
import numpy as np
out, n = sys.argv[1], int(sys.argv[2])
b = np.random.default_rng(1).standard_normal(n).astype(np.float32).tobytes()
h = json.dumps({"w": {"dtype": "F32", "shape": [n], "data_offsets": [0, len(b)]}}, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(out, "wb").write(struct.pack("<Q", len(h)) + h + b)
PY
}

NEED_16G="the output needs at least 17179869184 bytes, its file system has 4194304 free"

@test "a 512 KiB .apr declaring a 16 GiB tensor (one zstd RLE frame) is refused before anything is written (exit 3)" {
	[ "$(stat -c %s "$BOMB")" -lt 600000 ]
	run fmt-inspect --json "$BOMB"
	assert_equal "$(jq -c '[.data_bytes, .tensors[0].stored_bytes, .format_info.compression]' <<<"$output")" '[17179869184,524302,"zstd"]'
	run --separate-stderr fmt-convert "$BOMB" small/out.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: small/out.safetensors: not enough free space: $NEED_16G"
	assert_equal "$output" ""
	assert_equal "$(ls -A small)" ""
	run --separate-stderr fmt-convert --json "$BOMB" small/out.gguf
	assert_equal "$status" 3
	assert_equal "${stderr_lines[-1]}" "{\"tool\":\"fmt-convert\",\"level\":\"error\",\"file\":\"small/out.gguf\",\"error\":\"IoError\",\"exit\":3,\"message\":\"not enough free space: $NEED_16G\"}"
	# APR without compression (by default, or said), a shard set, and the same input from a pipe
	for c in "" "-c none"; do
		run --separate-stderr fmt-convert $c "$BOMB" small/out.apr
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: small/out.apr: not enough free space: $NEED_16G"
	done
	run --separate-stderr fmt-convert --shard 1GB "$BOMB" small/out.safetensors.index.json
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: small/out.safetensors.index.json: not enough free space: $NEED_16G"
	run --separate-stderr bash -c 'fmt-convert - small/out.safetensors < "$BOMB"'
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: small/out.safetensors: not enough free space: $NEED_16G"
	assert_equal "$(ls -A small)" ""
	# an existing output stays as it was (-f)
	printf 'old' > small/keep.safetensors
	run --separate-stderr fmt-convert -f "$BOMB" small/keep.safetensors
	assert_equal "$status" 3
	assert_equal "$(cat small/keep.safetensors)" old
	assert_equal "$(ls -A small)" "keep.safetensors"
}

@test "an output that fits is written on the same file system; one a byte too large for it is refused" {
	random_st r.safetensors 262144      # 1 MiB of tensor data
	run fmt-convert r.safetensors small/out.gguf
	assert_success
	run fmt-verify small/out.gguf
	assert_success
	rm small/out.gguf
	random_st big.safetensors 1048577   # 4 MiB + 4 bytes
	run --separate-stderr fmt-convert big.safetensors small/out.gguf
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: small/out.gguf: not enough free space: the output needs at least 4194308 bytes, its file system has 4194304 free"
	assert_equal "$(ls -A small)" ""
}

@test "a compressed output (size unknown before writing) that fills the disk: exit 3, the temporary file removed" {
	random_st r.safetensors 1572864     # 6 MiB of random floats: zstd and lz4 keep most of it
	for codec in zstd lz4; do
		run --separate-stderr fmt-convert -c "$codec" r.safetensors small/out.apr
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: small/out.apr: write: No space left on device"
		assert_equal "$(ls -A small)" ""
	done
	# the same with the frame's jobs compressed and written by two threads
	run --separate-stderr fmt-convert -T 2 -c zstd r.safetensors small/out.apr
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: small/out.apr: write: No space left on device"
	assert_equal "$(ls -A small)" ""
	# the same from a pipe
	run --separate-stderr bash -c 'fmt-convert -c zstd - small/out.apr < r.safetensors'
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: small/out.apr: write: No space left on device"
	assert_equal "$(ls -A small)" ""
}

@test "a dataset conversion (rows streamed, size unknown) that fills the disk: exit 3, the temporary file removed" {
	/usr/bin/python3 -c '
import random
random.seed(3)
with open("rows.csv", "w") as f:
    f.write("a,b\n")
    for i in range(400000):
        f.write("%d,%.9f\n" % (i, random.random()))'
	for out in out.jsonl out.arrow; do
		run --separate-stderr fmt-convert rows.csv "small/$out"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: small/$out: write: No space left on device"
		assert_equal "$(ls -A small)" ""
	done
}

@test "fmt-watermark embed checks the same way: refused before OUT is written, no registry line" {
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	run --separate-stderr fmt-watermark embed --key seller.key --buyer alice --registry small/r.jsonl "$BOMB" small/out.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-watermark: error: small/out.safetensors: not enough free space: the output needs at least 17179869184 bytes, its file system has 4190208 free"
	assert_equal "$(ls -A small)" ""
}
