#!/usr/bin/env bats
# The .ald layouts beyond the standard container's plain and STREAMING payloads:
# TRUENO_NATIVE (flag 0x10): fmt-convert --trueno-native writes numeric columns as raw
# 64-byte-aligned arrays (layout in libcommon/formats/ald/ald_native.c); fmt-inspect and fmt-convert read
# them in place. Round trips, the exact layout read independently, hostile indexes, usage.
# alimentar's separate streaming layout (specs/ald.md §11): read, reported, hostile indexes.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	printf 'id,name,score,ok,when\n1,ann,0.5,true,2024-02-29T12:00:00Z\n2,"b, c",,false,\n3,"say ""hi""",-1e-07,,1969-12-31T23:59:59.999Z\n' >in.csv
}

# The array index and the arrays of a TRUENO_NATIVE file, read here independently: one line per
# array "column dtype length alignment hint offset size: values", then the payload's offset.
# Fails (exit 1) on an offset that is not the 64-byte aligned end of what precedes it.
layout() {
	/usr/bin/python3 - "$1" <<'PY'
import hashlib, json, struct, sys
f = open(sys.argv[1], "rb").read()
meta, payload, schema = struct.unpack_from("<I", f, 8)[0], struct.unpack_from("<I", f, 12)[0], \
    struct.unpack_from("<H", f, 22)[0]
at = 32 + meta + schema
n = struct.unpack_from("<I", f, at)[0]
expect = data_start = (at + 4 + 31 * n + 63) // 64 * 64
fmts = {0: "f", 1: "d", 2: "i", 3: "q", 4: "B", 5: "b", 6: "h", 7: "H", 8: "I", 9: "Q", 10: "e"}
for i in range(n):
    col, dt, length, align, hint, off, size = struct.unpack_from("<IBQBBQQ", f, at + 4 + 31 * i)
    assert off % 64 == 0 and off == expect, (i, off, expect)
    data = f[off:off + size]
    vals = list(data) if dt == 0x80 else list(struct.unpack("<%d%s" % (length, fmts[dt]), data))
    print(col, dt, length, align, hint, off, size, ":", " ".join(repr(v) for v in vals))
    expect = (off + size + 63) // 64 * 64
assert f[expect:expect + 4] == b"\xff\xff\xff\xff" and expect + payload == len(f) - 4
print("payload at", expect, "(%d mod 64)" % (expect % 64))
card_sha = f[32:32 + meta].split(b"sha256")[1][2:66].decode()
print("sha256 of arrays and payload matches the card:", hashlib.sha256(f[data_start:expect + payload]).hexdigest() == card_sha)
PY
}

@test "--trueno-native: round trip through CSV, JSON Lines, Arrow and .ald gives the same rows" {
	run fmt-convert --trueno-native in.csv n.ald
	assert_success
	run fmt-inspect --json n.ald
	echo "$output" | /usr/bin/python3 -c 'import json,sys; a=json.load(sys.stdin)["ald"]
assert a["header"]["flags"]==["trueno_native"] and a["header"]["compression"]=="none", a["header"]
assert [(x["column"],x["kind"],x["offset"]%64) for x in a["arrays"]]==[(0,"values",0),(2,"values",0),(2,"validity",0)], a["arrays"]'
	fmt-convert n.ald back.csv
	cmp in.csv back.csv
	fmt-convert n.ald n.jsonl
	fmt-convert n.jsonl --trueno-native n2.ald
	fmt-convert n2.ald back2.csv
	cmp in.csv back2.csv
	fmt-convert n.ald n.arrow
	fmt-convert n.arrow --trueno-native n3.ald
	fmt-convert n3.ald z.ald
	fmt-convert z.ald back3.csv
	cmp in.csv back3.csv
	run fmt-verify n.ald
	assert_success
	assert_output "n.ald: ok (ald, 3 rows, CRC-32 ieee)"
}

@test "--trueno-native: every array at its exact 64-byte-aligned offset, values raw little-endian" {
	fmt-convert --trueno-native in.csv n.ald
	run layout n.ald
	assert_success
	assert_output "$(printf '%s\n' \
		"0 3 3 64 0 640 24 : 1 2 3" \
		"2 1 3 64 0 704 24 : 0.5 0.0 -1e-07" \
		"2 128 3 64 0 768 1 : 5" \
		"payload at 832 (0 mod 64)" \
		"sha256 of arrays and payload matches the card: True")"
	# every numeric type is an array (dtype codes 0-10); bool, strings and timestamps stay in the payload
	printf 'a,b,c,d,e,f\n1,2.5,x,true,7,1.5\n-7,,y,false,65535,-2.0\n' >t.csv
	echo '{"a":"int8","b":"float32","e":"uint16","f":"float16"}' >schema.json
	fmt-convert --schema schema.json --trueno-native t.csv t.ald
	run layout t.ald
	assert_success
	assert_output "$(printf '%s\n' \
		"0 5 2 64 0 768 2 : 1 -7" \
		"1 0 2 64 0 832 8 : 2.5 0.0" \
		"1 128 2 64 0 896 1 : 1" \
		"4 7 2 64 0 960 4 : 7 65535" \
		"5 10 2 64 0 1024 4 : 1.5 -2.0" \
		"payload at 1088 (0 mod 64)" \
		"sha256 of arrays and payload matches the card: True")"
	fmt-convert t.ald back.csv
	cmp t.csv back.csv
}

@test "fmt-inspect --head, --stats and --schema read a TRUENO_NATIVE file as the default layout" {
	fmt-convert in.csv z.ald
	fmt-convert --trueno-native in.csv n.ald
	for opt in "--head 3" "--stats" "--schema" "--json --head 2" "--json --stats"; do
		diff <(fmt-inspect $opt z.ald | sed 's/z\.ald/F/') <(fmt-inspect $opt n.ald | sed 's/n\.ald/F/')
	done
	run fmt-inspect --head 1 n.ald
	assert_output "$(printf 'id  name  score  ok    when\n1   ann   0.5    true  2024-02-29T12:00:00Z')"
	# only numeric columns: the payload has no columns, its batches carry the row count
	printf 'x;y\n1.5;2\n2.5;3\n' >nums.csv
	fmt-convert --trueno-native nums.csv nums.ald
	run fmt-inspect --stats nums.ald
	assert_output "$(printf 'x: type=float64 count=2 nulls=0 nan=0 min=1.5 max=2.5 mean=2.0\ny: type=int64 count=2 nulls=0 min=2 max=3 mean=2.5')"
}

@test "hostile array index (offsets, lengths, sizes, dtypes, counts): exact exit and message, nothing written" {
	fmt-convert --trueno-native in.csv good.ald
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/ald-native-cases" good.ald cases
	[ "$(wc -l <cases/cases.tsv)" -ge 15 ]
	while IFS=$'\t' read -r file code msg; do
		run --separate-stderr fmt-inspect --head 2 "cases/$file"
		[ "$status" -eq "$code" ] || { echo "$file: exit $status, expected $code: $stderr"; false; }
		[[ "$stderr" == *"$msg"* ]] || { echo "$file: '$stderr' lacks '$msg'"; false; }
		run fmt-convert "cases/$file" "out-$file.csv"
		[ "$status" -eq "$code" ] || { echo "convert $file: exit $status"; false; }
		[ ! -e "out-$file.csv" ]
	done <cases/cases.tsv
}

@test "--trueno-native usage: compression, --chunk-rows and --compat alimentar refused (exit 2), nothing written" {
	run fmt-convert --trueno-native --compression zstd in.csv a.ald
	assert_failure 2
	assert_output --partial "--trueno-native stores arrays uncompressed"
	run fmt-convert --trueno-native --chunk-rows 2 in.csv a.ald
	assert_failure 2
	assert_output --partial "--trueno-native and --chunk-rows cannot be combined"
	run fmt-convert --trueno-native --compat alimentar in.csv a.ald
	assert_failure 2
	[ ! -e a.ald ]
	run fmt-convert --trueno-native --compression none in.csv a.ald
	assert_success
}

# ---- alimentar's separate streaming layout (specs/ald.md §11), files from scripts/gen/ald-upstream-streaming

@test "upstream streaming layout: read with none, zstd and LZ4 chunks; reported as such; --head reads only what it needs" {
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/ald-upstream-streaming" up
	run fmt-inspect --head 5 up/good-none.ald
	assert_success
	assert_output "$(printf 'x\n1\n2\n3')"
	for c in none-3 zstd lz4; do
		fmt-convert "up/good-$c.ald" "$c.csv"
		printf 'x\n1\n2\n3\n4\n5\n6\n7\n8\n9\n' | cmp - "$c.csv"
	done
	run fmt-inspect --json up/good-lz4.ald
	echo "$output" | /usr/bin/python3 -c 'import json,sys; a=json.load(sys.stdin)["ald"]
assert a["layout"]=="alimentar-streaming" and a["crc"] is None, a
assert a["header"]["compression"]=="lz4" and a["header"]["flags"]==["streaming"] and a["header"]["num_rows"]==9, a
assert [c["row_offset"] for c in a["chunks"]]==[0,3,6] and all(c["uncompressed_size"]==456 for c in a["chunks"]), a
assert a["card_form"]=="array" and a["card"]=={"tags":[]}, a'
	run fmt-verify up/good-zstd.ald
	assert_success
	assert_output "up/good-zstd.ald: ok (ald, 9 rows)"
	# damage the last chunk: --head 3 decompresses only the first, converting everything fails
	/usr/bin/python3 -c 'import sys; f=bytearray(open(sys.argv[1],"rb").read()); f[-30]^=0xff
open(sys.argv[1],"wb").write(f)' up/good-zstd.ald
	run fmt-inspect --head 3 up/good-zstd.ald
	assert_success
	assert_output "$(printf 'x\n1\n2\n3')"
	run fmt-convert up/good-zstd.ald bad.csv
	assert_failure 4
	[ ! -e bad.csv ]
	# written back in the standard container, the same rows
	fmt-convert up/good-lz4.ald std.ald
	[ "$(fmt-inspect --json std.ald | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ald"]["layout"])')" = standard ]
	fmt-convert std.ald std.csv
	cmp lz4.csv std.csv
}

@test "upstream streaming layout: hostile chunk indexes and chunks are exit 4 with their message" {
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/ald-upstream-streaming" up
	[ "$(grep -c . up/cases.tsv)" -eq 15 ]
	while IFS=$'\t' read -r file code msg; do
		run --separate-stderr fmt-inspect --head 9 "up/$file"
		[ "$status" -eq "$code" ] || { echo "$file: exit $status, expected $code: $stderr"; false; }
		[[ "$stderr" == *"$msg"* ]] || { echo "$file: '$stderr' lacks '$msg'"; false; }
	done <up/cases.tsv
}

@test "TRUENO_NATIVE: fmt-verify checks the card's SHA-256 of the arrays and payload (a value changed, CRC recomputed: exit 6)" {
	fmt-convert --trueno-native in.csv n.ald
	run fmt-verify n.ald
	assert_success
	# id of row 2 (the second int64 of the first array, at 640 + 8) from 2 to 7, CRC made right again
	/usr/bin/python3 -c 'import struct,sys,zlib; f=bytearray(open(sys.argv[1],"rb").read())
assert struct.unpack_from("<q",f,648)[0]==2; struct.pack_into("<q",f,648,7)
f[-4:]=struct.pack("<I",zlib.crc32(bytes(f[:-4]))); open(sys.argv[1],"wb").write(f)' n.ald
	run fmt-verify n.ald
	assert_failure 6
	assert_output --partial "SHA-256 of the arrays and payload"
	run fmt-inspect --head 3 n.ald
	assert_success
	assert_line --index 2 --partial "7   b, c"
}

@test "the CRC-32 trailer kept while writing (the header and card read back) is zlib's CRC of every byte before it, on every layout and -T" {
	/usr/bin/python3 -c '
import sys
sys.stdout.write("id,x,t\n" + "".join(f"{i},{i * 0.25},\"row {i % 977}\"\n" for i in range(300000)))' >big.csv
	printf 'secret words\n' >pw.txt
	for t in 1 2; do
		fmt-convert -q -T $t big.csv z$t.ald
		fmt-convert -q -T $t --compression none big.csv n$t.ald
		fmt-convert -q -T $t --compression lz4 big.csv l$t.ald
		fmt-convert -q -T $t --chunk-rows 50000 big.csv s$t.ald
		fmt-convert -q -T $t --trueno-native in.csv t$t.ald
		fmt-convert -q -T $t --encrypt-password-file pw.txt big.csv e$t.ald
	done
	for f in z1 z2 n1 n2 l1 l2 s1 s2 t1 t2 e1 e2; do
		run /usr/bin/python3 -c '
import sys, zlib
d = open(sys.argv[1], "rb").read()
print(zlib.crc32(d[:-4]) == int.from_bytes(d[-4:], "little"))' $f.ald
		assert_output True
	done
	for f in z n l s t; do
		cmp ${f}1.ald ${f}2.ald
	done
	run fmt-verify z1.ald s1.ald
	assert_success
}

@test "the .ald writers' temporary files go to TMPDIR: chunks (--chunk-rows) and --trueno-native columns; one that cannot be made is exit 3 naming it" {
	printf 'a,b\n1,2\n3,4\n' >t.csv
	mkdir tmp
	TMPDIR=$PWD/tmp fmt-convert --chunk-rows 1 t.csv chunked.ald
	TMPDIR=$PWD/tmp fmt-convert --trueno-native t.csv native.ald
	run fmt-convert --to csv chunked.ald -
	assert_output "$(cat t.csv)"
	run fmt-convert --to csv native.ald -
	assert_output "$(cat t.csv)"
	assert_equal "$(ls -A tmp)" ""
	# tmpfile() took /tmp whatever TMPDIR said
	run --separate-stderr env TMPDIR=$PWD/none fmt-convert --chunk-rows 1 t.csv c2.ald
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: t.csv: cannot create a temporary file for the chunks in $PWD/none (TMPDIR): No such file or directory"
	run --separate-stderr env TMPDIR=$PWD/none fmt-convert --trueno-native t.csv n2.ald
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: t.csv: cannot create a temporary file for a column in $PWD/none (TMPDIR): No such file or directory"
	[ ! -e c2.ald ] && [ ! -e n2.ald ]
}
