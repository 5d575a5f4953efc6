#!/usr/bin/env bats
# Issue 26: the table readers and writers stream. A 64 MB CSV (about 80 MB as Arrow IPC) goes to
# .ald under an address-space limit of 48 MiB (the CSV is read, not mapped), and back to CSV and
# Arrow under one of the .ald's size (it is mapped) + 48 MiB, less than the decompressed payload,
# so neither side ever holds the data whole; and the readers of a mapped .ald or Arrow IPC file
# larger than 32 MiB keep their peak RSS (/usr/bin/time %M, file pages included) under 32 MiB:
# the pages they have passed leave the process; a wide CSV's batches are bounded in bytes (peak
# RSS within 32 MiB + threads x 1 MiB). Sanitizer builds: neither bound.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export DATA="$BATS_FILE_TMPDIR/data"
	mkdir -p "$DATA"
	/usr/bin/python3 - "$DATA/t.csv" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(5)   # labels random, the rest repeating: the file is small, its payload not
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
with open(sys.argv[1], "w") as f:
    f.write("id,x,label,text\n")
    row = 0
    while f.tell() < 64 << 20:
        n = 50000
        w = rng.integers(0, len(words), n)
        f.write("".join(f"{row + i},{(row + i) % 1000 * 1000},{words[w[i]]},\"{words[i % 8]} {words[(i + 3) % 8]} {i % 97}\"\n"
                        for i in range(n)))
        row += n
PY
	# what several tests read, made once: the .ald with zstd (z.ald) and without compression
	# (n.ald), and z.ald back as CSV (z.csv)
	fmt-convert -q "$DATA/t.csv" "$DATA/z.ald"
	fmt-convert -q --compression none "$DATA/t.csv" "$DATA/n.ald"
	fmt-convert -q "$DATA/z.ald" "$DATA/z.csv"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

# bounded FILE CMD...: CMD under ulimit -v = FILE's size + 48 MiB (FILE - : 48 MiB).
bounded() {
	local file=$1 bytes=0
	shift
	[ "$file" = - ] || bytes=$(stat -c %s "$file")
	local kb=$(( (bytes + 48 * 1048576) / 1024 ))
	run --separate-stderr bash -c "$(limit_as "$kb") "'exec "$@"' _ "$@"
}

# to_ald_within_bound INPUT: INPUT -> 1.ald, 2.ald, 3.ald at -T 1, 2, 3, each with a peak RSS
# within 32 MiB + threads x 1 MiB, all three the same bytes.
to_ald_within_bound() {
	local t rss
	for t in 1 2 3; do
		rss=$(/usr/bin/time -f '%M' fmt-convert -q -T $t "$1" $t.ald 2>&1 >/dev/null | tail -n 1)
		echo "-T $t: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $(((32 + t) * 1024)) ] || fail "-T $t: peak RSS $rss KiB, over $((32 + t)) MiB"
	done
	cmp 1.ald 2.ald
	cmp 1.ald 3.ald
}

# peak_rss_under_32m CMD...: CMD succeeds with a max RSS under 32 MiB.
peak_rss_under_32m() {
	local rss
	rss=$(/usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -n 1)
	echo "peak RSS ${rss} KiB: $*" >&3
	asan_build || [ "$rss" -lt 32768 ] || fail "peak RSS $rss KiB: $*"
}

@test "CSV -> .ald (zstd) in 48 MiB of address space, and back to CSV and Arrow in the .ald's size + 48 MiB, less than the payload" {
	# -T 2 whatever the machine: the bound is 32 MiB + a batch and a stack per thread
	bounded - fmt-convert -q -T 2 "$DATA/t.csv" z.ald
	assert_success
	cmp z.ald "$DATA/z.ald"
	raw=$(fmt-inspect --json z.ald | jq .ald.header.uncompressed_size)
	size=$(stat -c %s z.ald)
	echo "payload $raw bytes, file $size bytes" >&3
	[ "$raw" -gt $((size + 48 * 1048576)) ] || fail "payload $raw bytes fits the limit: the test proves nothing"
	bounded z.ald fmt-convert -q -T 2 z.ald back.csv
	assert_success
	bounded z.ald fmt-convert -q -T 2 z.ald back.arrow
	assert_success
	fmt-convert -q back.arrow again.csv
	cmp back.csv again.csv
	run fmt-inspect --json z.ald
	assert_equal "$(jq .rows <<<"$output")" "$(($(wc -l <"$DATA/t.csv") - 1))"
}

@test "a wide CSV (7 columns, 70-byte rows) -> .ald: peak RSS within 32 MiB + threads x 1 MiB at -T 1, 2, 3, -T 2 in 48 MiB of address space, the same bytes" {
	# Issue 24: a batch bounded in rows only held 65536 rows (4.5 MB here) in each of the slots,
	# IPC buffers and builders in flight: 36 MiB at -T 2. Cut by bytes as well, it holds about 2 MiB.
	/usr/bin/python3 - wide.csv <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(7)
words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"])
with open(sys.argv[1], "w") as f:
    f.write("id,x,y,count,flag,label,text\n")
    row = 0
    while f.tell() < 40 << 20:
        n = 100000
        x, y, c = rng.standard_normal(n), rng.random(n) * 1000, rng.integers(0, 1 << 40, n)
        flag, w1, w2 = rng.random(n) < 0.5, words[rng.integers(0, 10, n)], words[rng.integers(0, 10, n)]
        f.write("".join(f"{row + i},{x[i]!r},{y[i]:.3f},{c[i]},{'true' if flag[i] else 'false'},{w1[i]},\"{w1[i]} {w2[i]}, {i % 977}\"\n"
                        for i in range(n)))
        row += n
PY
	to_ald_within_bound wide.csv
	bounded - fmt-convert -q -T 2 wide.csv bounded.ald
	assert_success
	cmp 1.ald bounded.ald
	run fmt-inspect --json 1.ald
	assert_equal "$(jq .rows <<<"$output")" "$(($(wc -l <wide.csv) - 1))"
}

@test "a CSV of 200 columns, all but one empty (1-byte fields, 4- and 8-byte values) -> .ald: peak RSS within 32 MiB + threads x 1 MiB at -T 1, 2, 3, the same bytes" {
	# 65536 rows a batch were 52 MB of columns here; at most 262,144 / columns rows: 2 MiB
	/usr/bin/python3 -c '
import sys
with open(sys.argv[1], "w") as f:
    f.write(",".join(f"c{i}" for i in range(200)) + "\n")
    for j in range(0, 80000, 10000):
        f.write("".join(f"{i}" + "," * 199 + "\n" for i in range(j, j + 10000)))' sparse.csv
	to_ald_within_bound sparse.csv
	run fmt-inspect --json 1.ald
	assert_equal "$(jq .rows <<<"$output")" 80000
}

@test "JSON Lines of 330-byte lines -> .ald: peak RSS within 32 MiB + threads x 1 MiB at -T 1, 2, 3, the same bytes, every row" {
	# The JSON Lines reader cut batches by rows only: 65536 lines (21 MB of text here) a batch,
	# 60-70 MB peak RSS. It now cuts by bytes as the CSV reader does (fmt_text_record_cuts).
	/usr/bin/python3 -c '
import json, sys
with open(sys.argv[1], "w") as f:
    for j in range(0, 130000, 10000):
        f.write("".join(json.dumps({"id": i, "x": i * 0.25, "text": ("%d " % (i * 7919 % 100003)) * 60}) + "\n"
                        for i in range(j, j + 10000)))' wide.jsonl
	to_ald_within_bound wide.jsonl
	fmt-convert -q 1.ald back.jsonl
	run fmt-inspect --json 1.ald
	assert_equal "$(jq .rows <<<"$output")" 130000
	assert_equal "$(sed -n 129999p back.jsonl | jq -c .)" "$(sed -n 129999p wide.jsonl | jq -c .)"
	cmp <(jq -c . back.jsonl | md5sum) <(jq -c . wide.jsonl | md5sum)
}

@test "reading a 50 MB mapped .ald (no compression) to CSV, Arrow, --stats and fmt-verify: peak RSS under 32 MiB" {
	n=$DATA/n.ald
	size=$(stat -c %s "$n")
	[ "$size" -gt $((40 * 1048576)) ] || fail "n.ald is only $size bytes"
	peak_rss_under_32m fmt-convert -q "$n" n.csv
	peak_rss_under_32m fmt-convert -q "$n" n.arrow
	peak_rss_under_32m fmt-inspect --stats "$n"
	peak_rss_under_32m fmt-verify "$n"
	cmp n.csv "$DATA/z.csv"
}

@test "reading an 80 MB Arrow IPC file and stream (mapped) to CSV and .ald: peak RSS under 32 MiB" {
	fmt-convert -q "$DATA/z.ald" t.arrow
	fmt-convert -q "$DATA/z.ald" t.arrows
	size=$(stat -c %s t.arrow)
	[ "$size" -gt $((64 * 1048576)) ] || fail "t.arrow is only $size bytes"
	want=$DATA/z.csv
	for f in t.arrow t.arrows; do
		peak_rss_under_32m fmt-convert -q -f $f got.csv
		cmp "$want" got.csv
		peak_rss_under_32m fmt-convert -q -f $f got.ald
	done
	fmt-convert -q got.ald again.csv
	cmp "$want" again.csv
}

@test "a damaged byte of the mapped .ald is still a CRC mismatch (exit 6), nothing written" {
	cp "$DATA/n.ald" n.ald
	/usr/bin/python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(30 << 20); b = f.read(1); f.seek(30 << 20); f.write(bytes([b[0] ^ 0x55]))' n.ald
	run --separate-stderr fmt-convert -q n.ald out.csv
	assert_equal "$status" 6
	[[ "$stderr" == *"CRC-32 mismatch"* ]] || fail "$stderr"
	[ ! -e out.csv ]
}

@test "a Parquet row group of 100,000 rows of 64-value lists (51 MB of int64) -> CSV and Arrow: peak RSS within 32 MiB + threads x 1 MiB at -T 1 and 2, every row" {
	# A list column's batches were cut at 64 MB of it (65536 rows here: 33.5 MB a batch, 50-70 MB
	# peak RSS), and its levels were decoded through a scratch of 4 bytes a value of the page; a
	# batch now holds about 1 MiB of list values, the levels one byte a value. (Each row is one of
	# 97 lists: the Parquet file is small, its rows are not.)
	/usr/bin/python3 -c '
import sys
lists = [",".join(str((i + x) % 97) for x in range(64)) for i in range(97)]
with open(sys.argv[1], "w") as j, open(sys.argv[2], "w") as c:
    c.write("id,e\n")
    for b in range(0, 100000, 10000):
        j.write("".join("{\"id\":%d,\"e\":[%s]}\n" % (i, lists[i % 97]) for i in range(b, b + 10000)))
        c.write("".join("%d,\"[%s]\"\n" % (i, lists[i % 97]) for i in range(b, b + 10000)))' l.jsonl want.csv
	# one group of all the rows: the 51 MB of values, not the writer's 12 MiB
	fmt-convert -q --row-group-rows 100000 --row-group-bytes 0 l.jsonl l.parquet
	run -0 fmt-inspect --json l.parquet
	assert_equal "$(jq -c '[.rows, .parquet.row_group_count, (.schema.fields[1] | .type, .list_size)]' <<<"$output")" \
		'[100000,1,"fixed_size_list",64]'
	local t rss out
	for t in 1 2; do
		for out in got.csv got.arrow; do
			rss=$(/usr/bin/time -f '%M' fmt-convert -q -f -T $t l.parquet $out 2>&1 >/dev/null | tail -n 1)
			echo "-T $t -> $out: peak RSS $rss KiB" >&3
			asan_build || [ "$rss" -le $(((32 + t) * 1024)) ] || fail "-T $t -> $out: peak RSS $rss KiB, over $((32 + t)) MiB"
		done
		cmp want.csv got.csv
		fmt-convert -q -f got.arrow again.csv
		cmp want.csv again.csv
	done
}

@test "a Parquet list column whose chunk is ONE page of 26 MB (as DuckDB writes a FLOAT[64] column), uncompressed and GZIP, v1 and v2: read a slice at a time, within 32 MiB + threads x 1 MiB and under ulimit -v 48 MiB, the same CSV at every -T; a damaged page still told" {
	# The page was held whole, compressed and decompressed, with a byte a value of each level
	# beside it: 67 MB (none) and 91 MB (GZIP) peak RSS for this file, 134 MB for DuckDB's 51 MB
	# ZSTD one. Its levels' bytes are now kept and its values read from the codec's stream a
	# slice (about 1 MiB) at a time.
	local c t rss out
	for c in none gzip; do
		"$REPO_ROOT/scripts/gen/parquet-cases" --big-list $c.parquet 100000 $c
		for t in 1 2; do
			for out in $c-$t.csv $c-$t.arrow; do
				rss=$(/usr/bin/time -f '%M' fmt-convert -q -f -T $t $c.parquet $out 2>&1 >/dev/null | tail -n 1)
				echo "$c -T $t -> $out: peak RSS $rss KiB" >&3
				asan_build || [ "$rss" -le $(((32 + t) * 1024)) ] || fail "$c -T $t -> $out: peak RSS $rss KiB"
			done
			# the CSV the whole-page reader wrote (random floats, 100,000 rows of 64)
			assert_equal "$(sha256sum <$c-$t.csv | cut -c1-64)" c27e9118302357738949b4800be8716a727d476a476aa581bcbcc384becb9765
			fmt-convert -q -f $c-$t.arrow again.csv
			cmp $c-$t.csv again.csv
		done
		peak_rss_under_32m fmt-verify $c.parquet
		peak_rss_under_32m fmt-inspect --head 2 $c.parquet
		run --separate-stderr bash -c "$(limit_as $((48 * 1024))) "'exec fmt-convert -q -f -T 2 "$1" ul.csv' _ $c.parquet
		assert_success
		cmp ul.csv $c-1.csv
	done
	# the same as a data page v2 (levels stored as they are before the GZIP values)
	"$REPO_ROOT/scripts/gen/parquet-cases" --big-list v2.parquet 100000 gzip v2
	rss=$(/usr/bin/time -f '%M' fmt-convert -q -f -T 2 v2.parquet v2.csv 2>&1 >/dev/null | tail -n 1)
	echo "v2 -T 2: peak RSS $rss KiB" >&3
	asan_build || [ "$rss" -le $((34 * 1024)) ] || fail "v2 -T 2: peak RSS $rss KiB"
	cmp v2.csv none-1.csv
	# a byte in the middle of the GZIP page flipped: its CRC before anything is written (the
	# first rows, which give the list size, are read before the damage), then the stream's error
	/usr/bin/python3 -c '
b = bytearray(open("gzip.parquet", "rb").read())
b[len(b) // 2] ^= 0xff
open("bad.parquet", "wb").write(b)'
	run --separate-stderr fmt-convert -q bad.parquet out.csv
	assert_failure 6
	assert_equal "$stderr" "fmt-convert: error: bad.parquet: row group 0: Parquet: column 'v.list.element': page CRC differs"
	run --separate-stderr fmt-convert -q --no-verify bad.parquet out.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: bad.parquet: Parquet: column 'v.list.element': a GZIP page does not inflate (zlib error -3)"
	[ ! -e out.csv ]
}

@test "a Parquet file of 1000 BIGINT columns (70,000 constant rows, 100 KB) -> .ald and Arrow: batches of about 8 MiB, not 65536 rows whatever the columns; peak RSS under 128 MiB at -T 1 and 2; a file of 16 columns keeps its batches of 65536 rows" {
	# A batch was 65536 rows whatever the row's width (after 1024, 2048...: here 32768 rows of
	# 8000 bytes, 262 MB): 569 and 744 MiB peak RSS to .ald at -T 1 and 2. A batch is now about
	# 8 MiB of the columns' values (1048 rows here); what stays is the 1000 columns' cursors.
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide w.parquet 1000 70000
	local t rss
	for t in 1 2; do
		rss=$(/usr/bin/time -f '%M' fmt-convert -q -T $t w.parquet $t.ald 2>&1 >/dev/null | tail -n 1)
		echo "-T $t -> .ald: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $((128 * 1024)) ] || fail "-T $t: peak RSS $rss KiB, over 128 MiB"
	done
	cmp 1.ald 2.ald
	run -0 fmt-verify 1.ald
	assert_equal "$output" "1.ald: ok (ald, 70000 rows, CRC-32 ieee)"
	# every row and column: column i holds i
	run -0 fmt-convert -q --include c0 --include c999 1.ald - --to csv
	assert_equal "$(sort <<<"$output" | uniq -c | awk '{ print $1, $2 }' | tr '\n' ' ')" "70000 0,999 1 c0,c999 "
	# the batches are the output's record batches: 1024 rows, then 1048 (8 MiB / 8000 bytes)
	fmt-convert -q w.parquet w.arrow
	run -0 fmt-inspect --json w.arrow
	assert_equal "$(jq -c '[.rows, .arrow.record_batches]' <<<"$output")" '[70000,67]'
	# 16 columns of 8 bytes (8 MiB in 65536 rows): as before, 1024, 2048 ... 65536 rows
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide n.parquet 16 140000
	fmt-convert -q n.parquet n.arrow
	run -0 fmt-inspect --json n.arrow
	assert_equal "$(jq -c '[.rows, .arrow.record_batches]' <<<"$output")" '[140000,8]'
}

@test "a Parquet file of 64 DOUBLE columns of 65,536 rows, each chunk ONE SNAPPY or LZ4_RAW page (as DuckDB writes them) -> CSV: peak RSS within 32 MiB + threads x 8 MiB at -T 1, 2 and 3 (was 116 and 138 MiB, then 52, 76 and 79), every value; without a TMPDIR, the same CSV" {
	# Each column kept its page three times: compressed (the read window), decompressed, and the
	# values of a slice of 1 MiB; a SNAPPY page is decompressed whole, so the middle one stays.
	# The window is now freed once its page is decompressed, and a slice holds a batch's rows.
	# Then each column still held its page decompressed (64 x 512 KiB) for the batches it spans:
	# neither libsnappy nor liblz4 decompresses a block a piece at a time. A page over 256 KiB
	# is now written to the cursor's temporary file once decompressed, and its slices read from
	# there straight into the batch.
	local codec t rss
	for codec in snappy lz4; do
		"$REPO_ROOT/scripts/gen/parquet-cases" --wide-doubles w.parquet 64 65536 $codec
		for t in 1 2 3; do
			rss=$(/usr/bin/time -f '%M' fmt-convert -q -f -T $t w.parquet $t.csv 2>&1 >/dev/null | tail -n 1)
			echo "$codec -T $t -> CSV: peak RSS $rss KiB" >&3
			asan_build || [ "$rss" -le $(((32 + 8 * t) * 1024)) ] || fail "$codec -T $t: peak RSS $rss KiB, over $((32 + 8 * t)) MiB"
		done
		cmp 1.csv 2.csv
		cmp 1.csv 3.csv
		# row r of column i is i + r / 1024
		assert_equal "$(wc -l <1.csv)" 65537
		assert_equal "$(sed -n 2p 1.csv | cut -d, -f1,2,64)" "0.0,1.0,63.0"
		assert_equal "$(sed -n 65537p 1.csv | cut -d, -f1,64)" "63.9990234375,126.9990234375"
		# no temporary file can be made: the pages are held in memory, as before
		env TMPDIR="$BATS_TEST_TMPDIR/none" fmt-convert -q -f w.parquet none.csv
		cmp 1.csv none.csv
	done
}

@test "a Parquet row group of 2,800 constant BIGINT columns of 1,024 rows (150 KB) is read, not refused by the row group's budget (each column's slice of 1024 values counted 13 KB)" {
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide w.parquet 2800 1024
	run -0 fmt-convert -q w.parquet w.csv
	assert_equal "$(wc -l <w.csv)" 1025
	assert_equal "$(sed -n 1025p w.csv | cut -d, -f1,2,2800)" "0,1,2799"
	run -0 fmt-verify w.parquet
}

@test "a CSV of 400 DOUBLE columns of 10,000 distinct rows -> Parquet: row groups end at --row-group-bytes (12 MiB held), peak RSS within 32 MiB + threads x 1 MiB at -T 1 and 2 (was about 120 and 130 MiB), the same bytes, every value; 0 lifts the bound; a table of 4 columns keeps its groups of 122880 rows" {
	# The writer held a whole row group of 122880 rows before writing it: here all 10,000 rows,
	# with each column's dictionary of its first 4096 (distinct) values. Now a group ends when
	# what it holds reaches 12 MiB, and with many columns a dictionary of distinct values is
	# given up after fewer values (12 MiB / 192 / 400 = 163).
	/usr/bin/python3 - w.csv <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write(",".join(f"c{c}" for c in range(400)) + "\n")
    for r in range(10000):
        f.write(",".join(f"{r}.{c:03d}" for c in range(400)) + "\n")
PY
	local t rss
	for t in 1 2; do
		rss=$(/usr/bin/time -f '%M' fmt-convert -q -T $t w.csv $t.parquet 2>&1 >/dev/null | tail -n 1)
		echo "-T $t -> Parquet: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $(((32 + t) * 1024)) ] || fail "-T $t: peak RSS $rss KiB, over $((32 + t)) MiB"
	done
	cmp 1.parquet 2.parquet
	# 3,495 rows of 400 x (8 bytes + a byte of levels) = 12,582,000 bytes: as near 12 MiB as a row goes
	run -0 fmt-inspect --json 1.parquet
	assert_equal "$(jq -c '[.rows, [.parquet.row_groups[] | .rows]]' <<<"$output")" '[10000,[3495,3495,3010]]'
	# every value: back to CSV, as the CSV itself converts
	fmt-convert -q 1.parquet back.csv
	fmt-convert -q w.csv direct.csv
	cmp back.csv direct.csv
	run -0 fmt-convert -q --row-group-bytes 0 w.csv whole.parquet
	run -0 fmt-inspect --json whole.parquet
	assert_equal "$(jq -c '[.parquet.row_groups[] | .rows]' <<<"$output")" '[10000]'
	run -2 fmt-convert -q --row-group-bytes 12MiB w.csv bad.parquet
	assert_equal "${lines[0]}" "fmt-convert: error: --row-group-bytes takes a byte count (0: no bound)"
	# 4 columns of 122880 rows hold 7.8 MB: cut at their rows, the bytes of no bound
	fmt-convert -q "$DATA/t.csv" t.parquet
	fmt-convert -q --row-group-bytes 0 "$DATA/t.csv" t0.parquet
	cmp t.parquet t0.parquet
	run -0 fmt-inspect --json t.parquet
	assert_equal "$(jq -c '[.parquet.row_groups[] | .rows] | .[0:-1] | unique' <<<"$output")" '[122880]'
}

@test "a Parquet row group of 2,800 constant BIGINT columns of 1,024 rows -> CSV: peak RSS within 32 MiB + threads x 8 MiB (a batch) at -T 1 and 2 (was 85 and 122 MiB, then 38 and 73), every value" {
	# Each buffer of a column's cursor (the read window, the dictionary, the slice's values,
	# indices and levels...) was allocated 4 KiB at least, whatever the chunk needed: about 24 KiB
	# a column beside its data (a dictionary of one entry, a page of a few bytes). They now start
	# at what is needed, a slice holds 46 values of a table this wide, and a batch's columns share
	# blocks of 1 MiB (see the test of 4,000 columns below).
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide w.parquet 2800 1024
	local t rss bound
	for t in 1 2; do
		bound=$((32 + 8 * t))
		rss=$(/usr/bin/time -f '%M' fmt-convert -q -T $t w.parquet $t.csv 2>&1 >/dev/null | tail -n 1)
		echo "-T $t -> CSV: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $((bound * 1024)) ] || fail "-T $t: peak RSS $rss KiB, over $bound MiB"
	done
	cmp 1.csv 2.csv
	assert_equal "$(wc -l <1.csv)" 1025
	assert_equal "$(cut -d, -f1,1400,2800 1.csv | sort | uniq -c | awk '{ print $1, $2 }' | tr '\n' ' ')" "1024 0,1399,2799 1 c0,c1399,c2799 "
}

# peak_kib CMD...: CMD's peak RSS in KiB (it must succeed).
peak_kib() {
	/usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -n 1
}

# rss_within LABEL T CMD...: CMD's peak RSS (told as LABEL's) within the memory rule at -T T,
# 32 MiB + T x 8 MiB.
rss_within() {
	local label=$1 t=$2 rss
	shift 2
	rss=$(peak_kib "$@")
	echo "$label: peak RSS $rss KiB" >&3
	asan_build || [ "$rss" -le $(((32 + 8 * t) * 1024)) ] || fail "$label: peak RSS $rss KiB, over $((32 + 8 * t)) MiB"
}

@test "ONE record batch of 106 MB (Arrow IPC file and stream, .ald) -> CSV, JSON Lines, .ald, Parquet, Arrow in slices of about 2 MiB: peak RSS within 32 MiB + threads x 2 MiB (Parquet: its writer's memory for small batches + 8 MiB), every row" {
	# Issue 26: a record batch was handed on as stored: 110 MB peak RSS to CSV and 218 MB to .ald
	# here (old binaries; the 256 MB batch of the issue: 254 MB and 514 MB). scripts/gen/arrow-one-batch
	# writes 500,000 rows of 24 int64 columns (c1 with nulls) and a utf8 one (s0, with nulls) as
	# one batch into templates fmt-convert made; the expected CSV comes from awk.
	local cols=24 rows=500000 in out t rss base
	awk -v C=$cols 'BEGIN { h = ""; for (c = 0; c < C; c++) h = h "c" c ","; print h "s0"
		for (r = 0; r < 3; r++) { l = ""; for (c = 0; c < C; c++) l = l ((c == 1 && r == 0) ? "" : r) ","; print l (r ? "x" : "") } }' >tpl.csv
	for in in arrow arrows ald; do
		fmt-convert -q tpl.csv tpl.$in
		/usr/bin/python3 "$REPO_ROOT/scripts/gen/arrow-one-batch" tpl.$in one.$in $rows
		run -0 fmt-inspect --json one.$in
		assert_equal "$(jq -c '[.rows, .arrow.record_batches // 1]' <<<"$output")" "[$rows,1]"
	done
	awk -v C=$((cols + 1)) -v R=$rows 'BEGIN { h = ""; for (c = 0; c < C - 1; c++) h = h "c" c ","; print h "s0"
		for (r = 0; r < R; r++) { l = ""; for (c = 0; c < C - 1; c++) l = l ((c == 1 && r % 5 == 0) ? "" : r * C + c) ","
			s = ""; if (r % 11) { s = "s"; for (k = 0; k < r % 7; k++) s = s r }; print l s } }' >want.csv
	# the same rows in small batches (the CSV reader's): what the writers take for them
	fmt-convert -q want.csv small.arrow
	fmt-convert -q want.csv want.jsonl
	base=$(peak_kib fmt-convert -q -T 2 small.arrow base.parquet)
	for in in arrow arrows ald; do
		for out in csv jsonl ald parquet arrow; do
			for t in 1 2; do
				[ $t = 1 ] && [ $out != csv ] && [ $out != ald ] && continue
				rss=$(peak_kib fmt-convert -q -T $t one.$in $in-$t.$out)
				echo "one.$in -> $out -T $t: peak RSS $rss KiB" >&3
				bound=$(((32 + 2 * t) * 1024))
				[ $out = parquet ] && bound=$((base + 8 * 1024))
				asan_build || [ "$rss" -le $bound ] || fail "one.$in -> $out -T $t: peak RSS $rss KiB, over $bound"
			done
		done
		cmp want.csv $in-1.csv
		cmp want.csv $in-2.csv
		cmp want.jsonl $in-2.jsonl
		cmp $in-1.ald $in-2.ald
		for out in ald parquet arrow; do
			fmt-convert -q $in-2.$out back-$in-$out.csv
			cmp want.csv back-$in-$out.csv
		done
	done
	cmp arrow-2.arrow arrows-2.arrow
	cmp arrow-2.arrow ald-2.arrow
	cmp arrow-2.ald ald-2.ald
	# the slices are the output's record batches: 51, of 9,552 to 10,048 rows (multiples of 8)
	run -0 fmt-inspect --json arrow-2.arrow
	assert_equal "$(jq -c '[.rows, .arrow.record_batches]' <<<"$output")" "[$rows,51]"
}

@test "a Parquet row group of 4,000 constant BIGINT columns of 16,384 rows (430 KB) -> CSV: peak RSS within 32 MiB + threads x 8 MiB (a batch of 262 rows) at -T 1, 2, 3 (was 53, 102, 130 MiB), the same CSV at each" {
	# Where it went (valgrind massif, old binary, -T 1): 27 MB in the columns' cursors (a slice
	# of a batch's 262 values: their dictionary values 4 KiB, indices 2 KiB and levels 512 bytes
	# a column), 16.6 MB a batch (each column's 2 KiB rounded to a buffer of 4 KiB), 3.4 MB the
	# cursors themselves; at -T 2 a batch decoded ahead, the CSV writer's copy and its text slots
	# (the first chunk of 256 rows of 20 KB each), and 4,000 buffers a batch scattered over the
	# threads' malloc arenas. Now a slice holds 32 values (2 MiB of slices together), the columns
	# of a batch share blocks of 1 MiB, and the writer's first chunk is 16 rows of this width.
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide w.parquet 4000 16384
	local t rss
	for t in 1 2 3; do
		rss=$(peak_kib fmt-convert -q -T $t w.parquet $t.csv)
		echo "-T $t -> CSV: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $(((32 + 8 * t) * 1024)) ] || fail "-T $t: peak RSS $rss KiB, over $((32 + 8 * t)) MiB"
	done
	cmp 1.csv 2.csv
	cmp 1.csv 3.csv
	# column i holds i in every row
	assert_equal "$(wc -l <1.csv)" 16385
	assert_equal "$(tail -n +2 1.csv | sort -u | wc -l)" 1
	assert_equal "$(sed -n 16385p 1.csv | tr , '\n' | awk '$1 != NR - 1' | wc -l)" 0
	assert_equal "$(sed -n 2p 1.csv | cut -d, -f1,2,4000)" "0,1,3999"
}

# distinct_columns_csv FILE: a CSV of 4,000 BIGINT columns c0..c3999 and 1,000 rows, row r
# column c holding r x 4000 + c.
distinct_columns_csv() {
	/usr/bin/python3 - "$1" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write(",".join(f"c{c}" for c in range(4000)) + "\n")
    for r in range(1000):
        f.write(",".join(str(r * 4000 + c) for c in range(4000)) + "\n")
PY
}

@test "fmtkit's own Parquet of 4,000 distinct BIGINT columns (row groups of 349 rows, a page of 2.8 KB a chunk), SNAPPY, LZ4_RAW and uncompressed -> CSV, and SNAPPY -> Parquet: peak RSS within 32 MiB + threads x 8 MiB at -T 1, 2 and 3 (was 48, 64 and 73 MiB to CSV, 69, 72 and 80 to Parquet), every value; without a TMPDIR, the same CSV" {
	# A batch of this width is 262 rows, so each column's page spans two batches, and between
	# them every column held its page decompressed whole (4 KiB each) and its read window (2 KiB):
	# 25 MB for 4,000 columns (53 and 70 MiB peak RSS at -T 1 and 2 for 3,000 rows). Now, once
	# the columns hold more than 1 MiB of such pages and windows, a column whose batch is over
	# puts the rest of its page in one temporary file its reader shares (an uncompressed page is
	# read on from the file) and frees the page and the window. To Parquet, the writer's values
	# and levels grew by doubling (4 KiB for 2.8 KB): they grow by an eighth now.
	distinct_columns_csv d.csv
	local codec t
	for codec in snappy lz4 none; do
		fmt-convert -q -f -c $codec d.csv d.parquet
		run -0 fmt-inspect --json d.parquet
		assert_equal "$(jq -c '[.rows, [.parquet.row_groups[] | .rows]]' <<<"$output")" '[1000,[349,349,302]]'
		for t in 1 2 3; do
			rss_within "$codec -T $t -> CSV" $t fmt-convert -q -f -T $t d.parquet $t.csv
			cmp d.csv $t.csv
		done
		# no temporary file can be made: the pages stay in memory, as before
		env TMPDIR="$BATS_TEST_TMPDIR/none" fmt-convert -q -f -T 2 d.parquet none.csv
		cmp d.csv none.csv
	done
	# SNAPPY -> Parquet: the same row groups, the same bytes at each -T, every value
	fmt-convert -q -f d.csv d.parquet
	for t in 1 2 3; do
		rss_within "-T $t -> Parquet" $t fmt-convert -q -f -T $t d.parquet $t.parquet
	done
	cmp d.parquet 1.parquet
	cmp d.parquet 2.parquet
	cmp d.parquet 3.parquet
}

@test "fmtkit's own Parquet of 4,000 distinct BIGINT columns, ZSTD and GZIP (a page of 2.8 KB a chunk) -> CSV, fmt-inspect --head, fmt-verify: read, not refused by the row group's budget (exit 4 from about 350 ZSTD columns), within 32 MiB + threads x 8 MiB at -T 1, 2 and 3, the bytes of the SNAPPY file's CSV; a row group of one row of 400 ZSTD columns; a damaged small page still told" {
	# A small ZSTD or GZIP page at hand was decompressed as a stream through a codec state of its
	# column's own (a ZSTD context of about 95 KB, zlib's 40 KiB), which each column kept between
	# batches and charged to its row group's budget: "row group 0: its columns would hold more than
	# 82345392 bytes decoded, at column 'c800'" (GZIP: 'c2189') for 4,000 columns of 3,000 rows, and
	# from 352 columns for a row group of one row. A page of up to 64 KiB decompressed is now
	# decompressed whole, then read and put aside as a SNAPPY page is.
	distinct_columns_csv d.csv
	fmt-convert -q -f -c snappy d.csv snappy.parquet
	fmt-convert -q -f snappy.parquet snappy.csv
	cmp d.csv snappy.csv
	local codec t
	for codec in zstd gzip; do
		fmt-convert -q -f -c $codec d.csv $codec.parquet
		run -0 fmt-inspect --json $codec.parquet
		assert_equal "$(jq -c '[.rows, [.parquet.row_groups[] | .rows], ([.parquet.row_groups[] | .columns[] | .codec] | unique)]' <<<"$output")" \
			"[1000,[349,349,302],[\"${codec^^}\"]]"
		for t in 1 2 3; do
			rss_within "$codec -T $t -> CSV" $t fmt-convert -q -f -T $t $codec.parquet $t.csv
			cmp snappy.csv $t.csv
		done
		# every value: row r, column c holds r * 4000 + c
		assert_equal "$(sed -n 1001p 1.csv | cut -d, -f1,2,4000)" "3996000,3996001,3999999"
		run -0 fmt-inspect --head 2 $codec.parquet
		assert_equal "$(awk '{ print NF, $1, $2, $NF }' <<<"$output")" $'4000 c0 c1 c3999\n4000 0 1 3999\n4000 4000 4001 7999'
		run -0 fmt-verify -q $codec.parquet
		env TMPDIR="$BATS_TEST_TMPDIR/none" fmt-convert -q -f -T 2 $codec.parquet none.csv
		cmp snappy.csv none.csv
	done
	# the least row group: one row of 400 ZSTD columns (refused at column 'c352')
	head -n 2 d.csv | cut -d, -f1-400 >one.csv
	fmt-convert -q -f -c zstd one.csv one.parquet
	fmt-convert -q -f one.parquet one-back.csv
	cmp one.csv one-back.csv
	# a small ZSTD page that does not decompress: its CRC first, then the message its stream gives
	for at in 0 8; do
		/usr/bin/python3 - one.parquet $at <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[b.index(bytes.fromhex("28b52ffd")) + int(sys.argv[2])] ^= 0xff   # the first column's frame: its magic, a byte after
open("bad.parquet", "wb").write(b)
PY
		run --separate-stderr fmt-convert -q bad.parquet out.csv
		assert_failure 6
		assert_equal "$stderr" "fmt-convert: error: bad.parquet: row group 0: Parquet: column 'c0': page CRC differs"
		run --separate-stderr fmt-convert -q --no-verify bad.parquet out.csv
		assert_failure 4
		[ "$at" = 0 ] && what="Unknown frame descriptor" || what="Data corruption detected"
		assert_equal "$stderr" "fmt-convert: error: bad.parquet: Parquet: column 'c0': a ZSTD page: $what"
		[ ! -e out.csv ]
	done
}

@test "4,000 BIGINT columns of 16,384 rows -> Parquet: 75 row groups whose 19.7 MB of footer structs go through a temporary file, peak RSS within 32 MiB + threads x 8 MiB at -T 1, 2 and 3 (was 115 and 128 MiB, then 45, 54 and 62), the same bytes; an unwritable TMPDIR is exit 3" {
	# The writer ends a row group of 4,000 columns every 104-220 rows (12 MiB held), and each
	# group's RowGroup struct (4,000 ColumnChunks, 263 KB) was held to the end for the footer,
	# then copied into it: 147 MB of footer for 122,880 rows, 363 MiB peak RSS. The structs past
	# 256 KiB now go to a temporary file in $TMPDIR and are copied from it into the footer.
	# Then the group's values of a column under a dictionary were held twice, as PLAIN (8 MB
	# here) and as indices: they are now only indices until the dictionary is given up.
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide w.parquet 4000 16384
	local t rss
	for t in 1 2 3; do
		rss=$(peak_kib fmt-convert -q -T $t w.parquet $t.parquet)
		echo "-T $t -> Parquet: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $(((32 + 8 * t) * 1024)) ] || fail "-T $t: peak RSS $rss KiB, over $((32 + 8 * t)) MiB"
	done
	cmp 1.parquet 2.parquet
	cmp 1.parquet 3.parquet
	run -0 fmt-inspect --json 1.parquet
	assert_equal "$(jq -c '[.rows, .parquet.row_group_count, .parquet.footer_bytes, ([.parquet.row_groups[] | .rows] | unique)]' <<<"$output")" \
		'[16384,75,19723624,[104,220]]'
	run -0 fmt-verify 1.parquet
	assert_equal "$output" "1.parquet: ok (parquet, 16384 rows)"
	# every value: the same CSV as the file read directly
	fmt-convert -q w.parquet direct.csv
	fmt-convert -q 1.parquet back.csv
	cmp direct.csv back.csv
	# the footer's structs cannot be spilled: exit 3 naming the directory, no output left
	run --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR/none" fmt-convert -q w.parquet out.parquet
	assert_failure 3
	[[ "$stderr" == *"$BATS_TEST_TMPDIR/none"* ]] || fail "$stderr"
	[ ! -e out.parquet ]
}

@test "fmtkit's own Parquet of 4,000 BIGINT columns in 256 row groups (a 66 MB footer) -> CSV and Parquet, from a file and from stdin: peak RSS within 32 MiB + threads x 8 MiB at -T 1, 2 and 3 (was 193 MiB at each), the same bytes; a damaged chunk of the last group is still refused at open" {
	# Every row group's chunks were parsed at open and held (112 bytes each: 115 MB for 1,024,000
	# chunks), beside a copy of the whole footer (66 MB) while they were parsed. The footer is
	# still checked whole at open, read through a window of 1 MiB; a group's chunks are parsed
	# again from its bytes in the footer when the reader reaches it.
	"$REPO_ROOT/scripts/gen/parquet-cases" --wide w.parquet 4000 2048
	fmt-convert -q -T 2 --row-group-rows 8 w.parquet g.parquet
	fmt-convert -q w.parquet direct.csv
	local t
	for t in 1 2 3; do
		rss_within "-T $t -> CSV" $t fmt-convert -q -T $t g.parquet $t.csv
		cmp direct.csv $t.csv
		rss_within "-T $t -> Parquet" $t fmt-convert -q -T $t g.parquet $t.parquet
	done
	cmp 1.parquet 2.parquet
	cmp 1.parquet 3.parquet
	fmt-convert -q 1.parquet back.csv
	cmp direct.csv back.csv
	# the file is the one meant: 256 groups of 8 rows in a footer of 66 MB
	/usr/bin/python3 - g.parquet <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert struct.unpack("<I", b[-8:-4])[0] == 66284912, struct.unpack("<I", b[-8:-4])[0]
PY
	# from stdin (a temporary file the footer is read again from)
	rss_within "stdin -T 1 -> CSV" 1 sh -c 'fmt-convert -q -T 1 --to csv - stdin.csv <g.parquet'
	cmp direct.csv stdin.csv
	# the last chunk of the last group says BYTE_ARRAY: refused at open, nothing written
	/usr/bin/python3 - g.parquet <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
at = b.rindex(b"\x1c\x15\x04", len(b) - 8 - struct.unpack("<I", b[-8:-4])[0])   # ColumnMetaData, type INT64
b[at + 2] = 0x0c                                                                 # BYTE_ARRAY
open("bad.parquet", "wb").write(b)
PY
	for t in 1 3; do
		run --separate-stderr fmt-convert -q -T $t bad.parquet out.csv
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: bad.parquet: Parquet: column 'c3999': chunk of type BYTE_ARRAY, schema says INT64"
		[ ! -e out.csv ]
	done
}

@test "ONE record batch of 51 MB compressed buffer by buffer (zstd, LZ4 frame; Arrow IPC file and stream) -> CSV and .ald, --stats, --head, fmt-verify: decompressed a piece at a time into a temporary file, peak RSS within 32 MiB + threads x 2 MiB, the rows and bytes those of the uncompressed batch; lengths that lie are exit 4 as before" {
	# Issue 26: a compressed batch was decompressed whole (this one: 60-70 MiB peak RSS with the
	# old binaries; 256 MB of zstd: 255 MiB). Its buffers now go through the reader's spill file,
	# each decompressed a MiB at a time (a one-shot zstd frame of a large buffer has its level's
	# window, 512 KiB at level 1), then it is sliced from there as an .ald batch is.
	local cols=16 rows=400000 in t rss bound
	awk -v C=$cols 'BEGIN { h = ""; for (c = 0; c < C; c++) h = h (c ? "," : "") "c" c; print h
		for (r = 0; r < 3; r++) { l = ""; for (c = 0; c < C; c++) l = l (c ? "," : "") ((c == 1 && r == 0) ? "" : r); print l } }' >tpl.csv
	fmt-convert -q tpl.csv tpl.arrow
	fmt-convert -q -c zstd tpl.csv tplz.arrow
	fmt-convert -q -c lz4 tpl.csv tpll.arrow
	fmt-convert -q -c zstd tpl.csv tplz.arrows
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/arrow-one-batch" tpl.arrow one.arrow $rows
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/arrow-one-batch" tplz.arrow onez.arrow $rows zstd
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/arrow-one-batch" tpll.arrow onel.arrow $rows lz4
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/arrow-one-batch" tplz.arrows onez.arrows $rows zstd
	run -0 fmt-inspect --json onez.arrows
	assert_equal "$(jq -c '[.rows, .["arrow-stream"].record_batches, .["arrow-stream"].compression]' <<<"$output")" "[$rows,1,\"zstd\"]"
	# what the uncompressed batch gives (the path of the test above)
	fmt-convert -q one.arrow want.csv
	fmt-convert -q -T 2 one.arrow want.ald
	for in in onez.arrow onel.arrow onez.arrows; do
		for t in 1 2; do
			rss=$(peak_kib fmt-convert -q -T $t $in got-$t.csv)
			bound=$(((32 + 2 * t) * 1024))
			echo "$in -> csv -T $t: peak RSS $rss KiB" >&3
			asan_build || [ "$rss" -le $bound ] || fail "$in -> csv -T $t: peak RSS $rss KiB, over $bound"
			cmp want.csv got-$t.csv
		done
		rss=$(peak_kib fmt-convert -q -T 2 $in got.ald)
		echo "$in -> ald -T 2: peak RSS $rss KiB" >&3
		asan_build || [ "$rss" -le $((36 * 1024)) ] || fail "$in -> ald: peak RSS $rss KiB"
		cmp want.ald got.ald
		for cmd in "fmt-inspect --stats" "fmt-verify" "fmt-inspect --head 2"; do
			rss=$(peak_kib $cmd $in)
			echo "$cmd $in: peak RSS $rss KiB" >&3
			asan_build || [ "$rss" -lt 32768 ] || fail "$cmd $in: peak RSS $rss KiB"
		done
		rm got-*.csv got.ald
	done
	run -0 fmt-verify onez.arrow
	assert_equal "$output" "onez.arrow: ok (arrow, $rows rows)"
	# the first buffer's length (c0's values, the body's first bytes) made 8 more, then 8 fewer
	# than its frame holds: the messages of the whole-batch decompression
	/usr/bin/python3 - onez.arrow <<'PY'
import struct, sys
f = bytearray(open(sys.argv[1], "rb").read())
p = 8                                   # ARROW1 and padding
for _ in range(2):                      # the Schema message, then the RecordBatch's metadata
    n = struct.unpack_from("<I", f, p + 4)[0]
    p += 8 + n
want = struct.unpack_from("<q", f, p)[0]
assert want == 8 * 400000, want
for name, delta in (("more.arrow", 8), ("less.arrow", -8)):
    g = bytearray(f)
    struct.pack_into("<q", g, p, want + delta)
    open(name, "wb").write(g)
PY
	run --separate-stderr fmt-convert -q more.arrow out.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: more.arrow: Arrow IPC: a compressed buffer decompresses to 3200000 bytes, its length says 3200008"
	run --separate-stderr fmt-convert -q less.arrow out.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: less.arrow: Arrow IPC: a compressed buffer decompresses to more than the 3199992 bytes its length says"
	# the batch needs the temporary file: a TMPDIR that cannot take it is exit 3 naming it
	TMPDIR=$PWD/none run --separate-stderr fmt-convert -q onez.arrow out.csv
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: onez.arrow: cannot create a temporary file for a record batch in $PWD/none (TMPDIR): No such file or directory"
	[ ! -e out.csv ]
}

# many_groups FILE.parquet: 640,000 rows of 5 BIGINT columns (row r: r, 3r, r % 1000, 7r % 10007,
# -r) in row groups of 20 rows, 32,000 of them (the most a file may have is 32,767).
many_groups() {
	/usr/bin/python3 - many.csv <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("id,a,b,c,d\n")
    for j in range(0, 640000, 160000):
        f.write("".join(f"{i},{i * 3},{i % 1000},{i * 7 % 10007},{-i}\n" for i in range(j, j + 160000)))
PY
	fmt-convert -q --row-group-rows 20 many.csv "$1"
}

@test "fmt-verify of a Parquet file of 32,000 row groups: peak RSS within 32 MiB + threads x 8 MiB at -T 1 and 2 (was 270 MiB: it built fmt-inspect's JSON of every row group and column chunk for the three facts it reports), the same report" {
	many_groups g.parquet
	# (its first lines: the rest, every row group's, is 270 MB of JSON)
	assert_equal "$(fmt-inspect g.parquet | sed -n '/^row_group_count:/{p;q}')" "row_group_count: 32000"
	local t
	for t in 1 2; do
		rss_within "fmt-verify -T $t" $t fmt-verify -T $t g.parquet
	done
	rss_within "fmt-verify --json -T 1" 1 fmt-verify --json -T 1 g.parquet
	run -0 fmt-verify g.parquet
	assert_equal "$output" "g.parquet: ok (parquet, 640000 rows)"
	run -0 fmt-verify --json g.parquet
	assert_equal "$output" '{"file":"g.parquet","ok":true,"format":"parquet","rows":640000}'
}

@test "fmt-verify of an Arrow IPC file and stream of 32,000 record batches of 20 rows (54 MB): peak RSS within 32 MiB + threads x 8 MiB at -T 1 and 2 (was 54 MiB: the survey of the batches' headers at open kept every page it touched), the same report; read back to CSV within it too" {
	many_groups g.parquet
	fmt-convert -q g.parquet g.arrow
	fmt-convert -q g.parquet g.arrows
	run -0 fmt-inspect --json g.arrow
	assert_equal "$(jq -c '[.rows, .arrow.record_batches]' <<<"$output")" '[640000,32000]'
	size=$(stat -c %s g.arrow)
	[ "$size" -gt $((48 * 1048576)) ] || fail "g.arrow is only $size bytes"
	local f t
	for f in g.arrow g.arrows; do
		for t in 1 2; do
			rss_within "fmt-verify -T $t $f" $t fmt-verify -T $t $f
		done
	done
	rss_within "fmt-convert -T 1 g.arrows" 1 fmt-convert -q -T 1 g.arrows back.csv
	cmp many.csv back.csv
	run -0 fmt-verify --json g.arrow g.arrows
	assert_equal "$output" '{"file":"g.arrow","ok":true,"format":"arrow","rows":640000}
{"file":"g.arrows","ok":true,"format":"arrow-stream","rows":640000}'
}

@test "Arrow IPC of 32,000 record batches of 20 rows, zstd and lz4 (file, stream, a pipe) -> CSV: every row, within 32 MiB + threads x 8 MiB at -T 1 and 2 (their buffers' lengths read in place, not a pread each; the pages passed leave a MiB at a time, not a madvise a batch)" {
	# A pread per compressed buffer (7 a batch here) and a madvise per batch were 85 % of the CPU
	# of such a file to CSV (0.53 s, now 0.07 at -T 1, zstd); the bytes are the same.
	many_groups g.parquet
	fmt-convert -q --compression zstd g.parquet z.arrow
	fmt-convert -q --compression lz4 g.parquet l.arrows
	run -0 fmt-inspect --json z.arrow l.arrows
	assert_equal "$(jq -c '[.rows, (.arrow // .["arrow-stream"] | .record_batches, .compression)]' <<<"$output")" \
		"$(printf '%s\n' '[640000,32000,"zstd"]' '[640000,32000,"lz4"]')"
	local f t
	for f in z.arrow l.arrows; do
		for t in 1 2; do
			rm -f back.csv
			rss_within "fmt-convert -T $t $f" $t fmt-convert -q -T $t $f back.csv
			cmp many.csv back.csv
		done
		fmt-convert -q -T 2 - back-pipe.csv <$f
		cmp many.csv back-pipe.csv
		rm back-pipe.csv
	done
}

@test "fmt-verify of an .ald of 30,000 STREAMING chunks of one row (uncompressed, 41 MB): peak RSS within 32 MiB + threads x 8 MiB at -T 1 and 2 (was 58 MiB: the JSON of every chunk built for the CRC kind, and every small chunk's pages kept: 48 MiB with the JSON gone), the same report; a byte of the last chunk changed is still exit 6" {
	/usr/bin/python3 -c '
import sys
with open(sys.argv[1], "w") as f:
    f.write("id,a,b,c,d\n")
    f.write("".join(f"{i},{i * 3},{i % 1000},{i * 7 % 10007},{-i}\n" for i in range(30000)))' c.csv
	fmt-convert -q -c none --chunk-rows 1 c.csv c.ald
	run -0 fmt-inspect --json c.ald
	assert_equal "$(jq -c '[.rows, (.ald.chunks | length)]' <<<"$output")" '[30000,30000]'
	local t
	for t in 1 2; do
		rss_within "fmt-verify -T $t" $t fmt-verify -T $t c.ald
	done
	run -0 fmt-verify c.ald
	assert_equal "$output" "c.ald: ok (ald, 30000 rows, CRC-32 ieee)"
	run -0 fmt-verify --json c.ald
	assert_equal "$output" '{"file":"c.ald","ok":true,"format":"ald","rows":30000,"crc":"ieee"}'
	fmt-convert -q c.ald back.csv
	cmp c.csv back.csv
	# the last chunk's last value (-29999, little-endian in the uncompressed IPC body) made -29998
	/usr/bin/python3 - c.ald <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
at = b.rindex(struct.pack("<q", -29999))
b[at:at + 8] = struct.pack("<q", -29998)
open("bad.ald", "wb").write(b)
PY
	run --separate-stderr fmt-verify bad.ald
	assert_failure 6
	[[ "$stderr" == *"CRC-32 mismatch"* ]] || fail "$stderr"
}
