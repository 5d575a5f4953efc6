#!/usr/bin/env bats
# Issue 19, items 3 and 7: .ald payloads that decompress to far more than the file holds
# (scripts/gen/hostile-ald-memory). Memory stays within 64 MiB + 16 x the file's size (an
# address-space limit, skipped on sanitizer builds), every size the file declares is checked
# against what decompression yields, and nothing is written or changed on failure.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export HOSTILE="$BATS_FILE_TMPDIR/hostile"
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/hostile-ald-memory" "$HOSTILE" plain-body-1g.ald \
		plain-body-1g-undeclared.ald plain-utf8-1g.ald plain-meta-2g.ald plain-dict-1g.ald \
		streaming-usize-ffffffff.ald streaming-usize-small.ald highratio-rows.ald
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	mkdir out
}

# run_bounded FILE CMD...: run CMD under ulimit -v = 64 MiB + 16 x FILE's size (no limit in a
# sanitizer build, which reserves terabytes: there the exit status and messages are checked).
run_bounded() {
	local file=$1
	shift
	local kb=$(( (16 * $(stat -c %s "$file") + 64 * 1048576) / 1024 ))
	run --separate-stderr bash -c "$(limit_as "$kb") "'exec "$@"' _ "$@"
}

# The two rows of the sample's chunk 0 that every readable hostile file holds.
HEAD='id  name  score  ok     when
1   ann   0.5    true   2024-02-29T12:00:00Z
2   b, c  null   false  null'
CSV='id,name,score,ok,when
1,ann,0.5,true,2024-02-29T12:00:00Z
2,"b, c",,false,'

# The readers must refuse FILE with exit CODE and MSG, writing nothing.
refused_by_readers() {
	local f=$1 code=$2 msg=$3
	run_bounded "$f" fmt-inspect --head 3 "$f"
	assert_equal "$status" "$code"
	assert_equal "$stderr" "fmt-inspect: error: $f: $msg"
	assert_equal "$output" ""
	run_bounded "$f" fmt-inspect --stats "$f"
	assert_equal "$status" "$code"
	assert_equal "$stderr" "fmt-inspect: error: $f: $msg"
	run_bounded "$f" fmt-convert "$f" out/x.csv
	assert_equal "$status" "$code"
	[[ "$stderr" == *"$msg"* ]] || fail "$stderr"
	assert_equal "$(ls -A out)" ""
}

@test "item 3: a batch whose body declares 1 GiB more than its buffers: read within 64 MiB + 16x, the padding never held" {
	f=$HOSTILE/plain-body-1g.ald
	sum=$(sha256sum <"$f")
	run_bounded "$f" fmt-inspect --head 3 "$f"
	assert_success
	assert_equal "$output" "$HEAD"
	run_bounded "$f" fmt-inspect --stats "$f"
	assert_success
	assert_equal "$(head -1 <<<"$output")" "id: type=int64 count=2 nulls=0 min=1 max=2 mean=1.5"
	run_bounded "$f" fmt-convert "$f" out/x.csv
	assert_success
	assert_equal "$(cat out/x.csv)" "$CSV"
	# the card's digest covers the 1 GiB: verify hashes it with a window, not a buffer
	run_bounded "$f" fmt-verify "$f"
	assert_success
	assert_equal "$output" "$f: ok (ald, 2 rows, CRC-32 ieee)"
	assert_equal "$(sha256sum <"$f")" "$sum"
}

@test "item 3: a string column whose data buffer declares 1 GiB more than its offsets use: read within 64 MiB + 16x" {
	f=$HOSTILE/plain-utf8-1g.ald
	run_bounded "$f" fmt-inspect --head 3 "$f"
	assert_success
	assert_equal "$output" "$HEAD"
	run_bounded "$f" fmt-convert "$f" out/x.csv
	assert_success
	assert_equal "$(cat out/x.csv)" "$CSV"
}

@test "item 3: a payload that decompresses past the header's uncompressed_size is refused there (exit 4), nothing written" {
	f=$HOSTILE/plain-body-1g-undeclared.ald
	sum=$(sha256sum <"$f")
	refused_by_readers "$f" 4 "payload decompresses to more than the 1480 bytes declared"
	run_bounded "$f" fmt-verify "$f"
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: $f: payload decompresses to more than the 1480 bytes declared"
	assert_equal "$output" ""
	assert_equal "$(sha256sum <"$f")" "$sum"
}

@test "item 3: message metadata of 2 GiB is refused before it is decompressed (exit 4)" {
	f=$HOSTILE/plain-meta-2g.ald
	refused_by_readers "$f" 4 "Arrow IPC: message metadata of 2147483647 bytes (at most 16777216)"
}

@test "item 3: a dictionary batch with a 1 GiB body is refused before its body is read (exit 5)" {
	f=$HOSTILE/plain-dict-1g.ald
	refused_by_readers "$f" 5 "Arrow IPC: dictionary batches are not supported"
}

@test "item 3: a STREAMING chunk that decompresses past its uncompressed_size stops there (exit 4) in readers and fmt-verify" {
	f=$HOSTILE/streaming-usize-small.ald
	refused_by_readers "$f" 4 "chunk 0 decompresses to more than the 1480 bytes declared"
	run_bounded "$f" fmt-verify "$f"
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: $f: chunk 0 decompresses to more than the 1480 bytes declared"
}

@test "item 3: a STREAMING chunk of just under 4 GiB is read a message at a time within 64 MiB + 16x" {
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/hostile-ald-memory" . streaming-chunk-4g.ald
	f=streaming-chunk-4g.ald
	run_bounded "$f" fmt-inspect --head 2 "$f"
	assert_success
	assert_equal "$output" "$HEAD"
	run_bounded "$f" fmt-convert "$f" out/x.csv
	assert_success
	assert_equal "$(cat out/x.csv)" "$CSV
3,\"say \"\"hi\"\"\",-1e-07,,1969-12-31T23:59:59.999Z"
}

@test "item 7: fmt-verify refuses a STREAMING chunk whose uncompressed_size is 0xFFFFFFFF (exit 4), as the readers do" {
	f=$HOSTILE/streaming-usize-ffffffff.ald
	sum=$(sha256sum <"$f")
	msg="chunk 0 decompresses to 1480 bytes, the index says 4294967295"
	run --separate-stderr fmt-verify "$f"
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: $f: $msg"
	assert_equal "$output" ""
	run --separate-stderr fmt-verify --json "$f"
	assert_equal "$status" 4
	assert_equal "$(jq -c '[.ok, .error, .exit, .message]' <<<"$output")" "[false,\"InvalidFormat\",4,\"$msg\"]"
	refused_by_readers "$f" 4 "$msg"
	assert_equal "$(sha256sum <"$f")" "$sum"
}

# Not hostile: 2^22 rows of zeros (about 120 MiB in one batch) in a 5 KB file. Memory is what
# one batch's rows take, never refused as a bomb.
@test "item 3: a legitimate file of a high compression ratio is read with memory of one batch, not refused" {
	f=$HOSTILE/highratio-rows.ald
	run --separate-stderr bash -c "$(limit_as $((64 * 1024 + 140 * 1024))) "'exec fmt-inspect --head 2 "$1"' _ "$f"
	assert_success
	assert_equal "$output" 'id  name  score  ok     when
0         0.0    false  1970-01-01T00:00:00Z
0         0.0    false  1970-01-01T00:00:00Z'
	run --separate-stderr fmt-verify "$f"
	assert_success
	assert_equal "$output" "$f: ok (ald, 4194304 rows, CRC-32 ieee)"
}

@test "item 7: fmt-verify checks every chunk of alimentar's streaming layout too: sizes that lie are exit 4" {
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/ald-upstream-streaming" up >/dev/null
	run --separate-stderr fmt-verify up/usize-lies.ald
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: up/usize-lies.ald: chunk 1 decompresses to 456 bytes, the index says 520"
	assert_equal "$output" ""
	# a raw LZ4 block whose size prefix claims 1 GiB: refused before anything is allocated
	run_bounded up/lz4-prefix-lies.ald fmt-verify up/lz4-prefix-lies.ald
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: up/lz4-prefix-lies.ald: LZ4 block declares 1073741824 bytes (at most 456)"
	run --separate-stderr fmt-verify up/good-lz4.ald up/good-zstd.ald
	assert_success
	assert_equal "$output" "up/good-lz4.ald: ok (ald, 9 rows)
up/good-zstd.ald: ok (ald, 9 rows)"
}

# Upstream's reader ignores uncompressed_size (specs/ald.md §2, "informational"); its writer fills
# it in exactly, and so does fmtkit's, so the readers now hold a file to it (issue 19, item 3).
@test "item 3: a payload that ends short of the header's uncompressed_size is exit 4 once the reader reaches its end" {
	/usr/bin/python3 - "$REPO_ROOT/tests/data/ald/spec-example.ald" short.ald <<'PY'
import struct, sys, zlib
f = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", f, 16, struct.unpack_from("<I", f, 16)[0] + 8)   # 456 -> 464
body = bytes(f[:-4])
open(sys.argv[2], "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
	run --separate-stderr fmt-verify short.ald
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: short.ald: payload decompresses to 456 bytes, the header's uncompressed_size says 464"
	run --separate-stderr fmt-convert short.ald out/x.csv
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-convert: error: short.ald: payload decompresses to 456 bytes, the header's uncompressed_size says 464"
	assert_equal "$(ls -A out)" ""
	# the first rows are there before the end is reached
	run --separate-stderr fmt-inspect --head 2 short.ald
	assert_success
	assert_equal "$output" 'x
1
2'
}
