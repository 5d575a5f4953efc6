#!/usr/bin/env bats
# Datasets: .ald (specs/ald.md), Arrow IPC, CSV and JSON Lines through fmt-convert, fmt-inspect
# and fmt-verify; every dataset flag and failure.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	ALD_CASES="$BATS_FILE_TMPDIR/ald-cases"
	export ALD_CASES
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/ald-cases" "$ALD_CASES"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	EXAMPLE="$REPO_ROOT/tests/data/ald/spec-example.ald"
	printf 'id,name,score,ok,when\n1,ann,0.5,true,2024-02-29T12:00:00Z\n2,"b, c",,false,\n3,"say ""hi""",-1e-07,,1969-12-31T23:59:59.999Z\n' >in.csv
}

# The fields of fmt-inspect --json FILE at the dotted paths P... (a list index is a number), as
# JSON, one line each (one fmt-inspect and one Python for all of them).
jq_field() {
	local file=$1
	shift
	fmt-inspect --json "$file" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)
for p in sys.argv[1:]:
    v = d
    for k in p.split("."): v=v[int(k)] if isinstance(v,list) else v[k]
    print(json.dumps(v))' "$@"
}

# The payload bytes of an .ald (header sizes, no encryption, no chunk index).
payload() {
	/usr/bin/python3 -c 'import struct,sys; f=open(sys.argv[1],"rb").read()
m,p,s=struct.unpack_from("<I",f,8)[0],struct.unpack_from("<I",f,12)[0],struct.unpack_from("<H",f,22)[0]
sys.stdout.buffer.write(f[32+m+s:32+m+s+p])' "$1"
}

@test "spec §10: the worked example is read (header, card, schema, rows, alimentar CRC)" {
	run fmt-inspect "$EXAMPLE"
	assert_success
	assert_line "format: ald"
	assert_line "rows: 3"
	assert_line "  version: 1.2"
	assert_line "  dataset_type: tabular"
	assert_line "  payload_size: 456"
	assert_line "  uncompressed_size: 456"
	assert_line "  compression: none"
	assert_line "  schema_size: 136"
	assert_line "card_form: array"
	assert_line "crc: alimentar-0.2"
	assert_line "  x  int32  not null"
	run fmt-convert "$EXAMPLE" - --to csv
	assert_success
	assert_output "$(printf 'x\n1\n2\n3')"
	# --json, -v: standard output still holds the CSV only (the report was appended to it)
	for flag in -j -v; do
		run --separate-stderr fmt-convert $flag "$EXAMPLE" - --to csv
		assert_success
		assert_output "$(printf 'x\n1\n2\n3')"
	done
}

@test "spec §10: --compat alimentar --compression none writes the example byte for byte" {
	run fmt-convert --compat alimentar --compression none "$EXAMPLE" out.ald
	assert_success
	cmp out.ald "$EXAMPLE"
	# and from CSV as well: one column forced to int32 by --schema (no nulls: not nullable)
	printf 'x\n1\n2\n3\n' >x.csv
	echo '{"x": "int32"}' >s.json
	run fmt-convert --from csv --schema s.json --compat alimentar --compression none x.csv out2.ald
	assert_success
	cmp out2.ald "$EXAMPLE"
}

@test "default .ald: standard CRC, card as a map with the payload's SHA-256" {
	run fmt-convert --compression none in.csv out.ald
	assert_success
	want=$(payload out.ald | sha256sum | cut -d' ' -f1)
	assert_equal "$(jq_field out.ald ald.crc ald.card_form ald.card.sha256)" '"ieee"
"map"
"'"$want"'"'
	# the CRC trailer is zlib's crc32 of everything before it
	/usr/bin/python3 -c 'import sys,zlib,struct; f=open(sys.argv[1],"rb").read()
assert struct.unpack("<I",f[-4:])[0]==zlib.crc32(f[:-4])' out.ald
}

@test "every case of scripts/gen/ald-cases: exact exit and message from fmt-inspect" {
	while IFS=$'\t' read -r file want msg; do
		run --separate-stderr fmt-inspect "$ALD_CASES/$file"
		[ "$status" -eq "$want" ] || fail "$file: exit $status, expected $want: $stderr"
		if [ "$want" -ne 0 ]; then
			[[ "$stderr" == *"$msg"* ]] || fail "$file: stderr lacks '$msg': $stderr"
			[ -z "$output" ] || fail "$file: stdout not empty"
		fi
	done <"$ALD_CASES/cases.tsv"
}

@test "fmt-verify: ok with the CRC kind; a bad CRC is exit 6 and fmt-convert writes nothing" {
	run fmt-verify "$EXAMPLE" "$ALD_CASES/good-ieee-crc.ald"
	assert_success
	assert_line --index 0 "$EXAMPLE: ok (ald, 3 rows, CRC-32 alimentar-0.2)"
	assert_line --index 1 "$ALD_CASES/good-ieee-crc.ald: ok (ald, 3 rows, CRC-32 ieee)"
	run fmt-verify "$ALD_CASES/flipped-payload-byte.ald"
	assert_failure 6
	run fmt-convert "$ALD_CASES/flipped-payload-byte.ald" out.csv
	assert_failure 6
	assert_output --partial "CRC-32 mismatch"
	[ ! -e out.csv ]
	# --no-verify skips the check: the flipped byte is in the payload's values
	run fmt-convert --no-verify "$ALD_CASES/flipped-payload-byte.ald" out.csv
	assert_success
	assert_output ""
	[ "$(cat out.csv)" = "$(printf 'x\n1\n2\n2')" ]
}

# A byte flipped in a payload of many batches: when the output is a file, the CRC is made by the
# reads of the payload (one pass), and the rows written before the end (the whole of them when
# the byte is in a value of an uncompressed payload) never reach OUT (its temporary file is
# removed); to standard output the check comes first. Either way the exit status and the message
# are those of the check made before anything is read (--dry-run).
@test "a flipped payload byte: exit 6 and the CRC message, no output file or temporary left, -T 1 and 2" {
	/usr/bin/python3 -c 'import sys
w = sys.stdout.write
w("id,x,name\n")
for i in range(120000): w("%d,%r,n%d\n" % (i, i / 7, i % 13))' >big.csv
	fmt-convert big.csv zstd.ald
	fmt-convert -c none big.csv none.ald
	mkdir o
	for flip in "zstd middle" "zstd end" "none middle"; do
		set -- $flip
		/usr/bin/python3 -c 'import struct, sys, zlib
f = bytearray(open(sys.argv[1] + ".ald", "rb").read())
m, p, s = struct.unpack_from("<I", f, 8)[0], struct.unpack_from("<I", f, 12)[0], struct.unpack_from("<H", f, 22)[0]
f[32 + m + s + (p // 2 if sys.argv[2] == "middle" else p - 20)] ^= 0x01
open("bad.ald", "wb").write(f)
print("CRC-32 mismatch: stored %08x, computed %08x (standard)" % (struct.unpack("<I", f[-4:])[0], zlib.crc32(f[:-4])))' "$1" "$2" >want
		run --separate-stderr fmt-convert --dry-run bad.ald out.csv
		assert_failure 6
		local before=$stderr
		[[ "$before" == "fmt-convert: error: bad.ald: $(cat want) and "* ]] || fail "$flip: $before"
		for to in out.csv out.jsonl out.arrow out.parquet out.ald; do
			for t in 1 2; do
				run --separate-stderr fmt-convert -T "$t" bad.ald "o/$to"
				assert_failure 6
				[ "$stderr" = "$before" ] || fail "$flip, $to, -T $t: $stderr"
				[ -z "$output" ]
				[ -z "$(ls -A o)" ] || fail "$flip, $to, -T $t: left $(ls -A o)"
			done
		done
		run --separate-stderr fmt-convert --to csv bad.ald -
		assert_failure 6
		[ "$stderr" = "$before" ]
		[ -z "$output" ]
	done
	# undamaged, the same rows as when checked first
	fmt-convert -T 1 zstd.ald a.csv
	fmt-convert --to csv zstd.ald - >b.csv
	cmp a.csv b.csv
}

@test "fmt-verify reads every row of CSV, JSON Lines, Arrow IPC and a readable .ald as a reader does: what it passes, the tools read" {
	printf 's,n\nabcQ,1\nzzzz,2\n' >s.csv
	fmt-convert -q s.csv s.arrow
	fmt-convert -q s.csv s.arrows
	fmt-convert -q s.csv s.jsonl
	run fmt-verify s.csv s.jsonl s.arrow s.arrows
	assert_success
	assert_output "$(printf 's.csv: ok (csv, 2 rows)\ns.jsonl: ok (jsonl, 2 rows)\ns.arrow: ok (arrow, 2 rows)\ns.arrows: ok (arrow-stream, 2 rows)')"
	run fmt-verify --json s.arrow
	assert_output '{"file":"s.arrow","ok":true,"format":"arrow","rows":2}'
	# the row a message names is counted from the file's first, over many batches
	{ echo s; seq -f 'a%.0f' 1 70000; printf 'b\xff\n'; } >many.csv
	run --separate-stderr fmt-verify many.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-verify: error: many.csv: column 's': row 70000 is not valid UTF-8"
	# and so do the tools (batch by batch, on threads, through --where and --include)
	for args in "" "-T 2" "--where s!=zz" "--include s"; do
		run --separate-stderr fmt-convert -q --force $args many.csv out.jsonl
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: many.csv: column 's': row 70000 is not valid UTF-8"
	done
	# a string that is not UTF-8 (byte ff in "abcQ"), and string offsets that go backwards
	# (0 4 8 made 0 9 8): open reads only the schema and the footer; the rows are refused
	/usr/bin/python3 - <<'PY'
for src in ("s.csv", "s.arrow", "s.arrows"):
    b = bytearray(open(src, "rb").read())
    b[b.index(b"abcQ") + 3] = 0xFF
    open("utf8-" + src, "wb").write(b)
for src in ("s.arrow", "s.arrows"):
    b = open(src, "rb").read()
    offsets = bytes([0] * 4 + [4, 0, 0, 0, 8, 0, 0, 0])
    assert b.count(offsets) == 1
    open("offsets-" + src, "wb").write(b.replace(offsets, bytes([0] * 4 + [9, 0, 0, 0, 8, 0, 0, 0])))
PY
	# an .ald whose CRC and card digest were made over such a payload: they hold, the rows do not
	fmt-convert -q -c none s.csv s.ald
	/usr/bin/python3 - "$(fmt-inspect --json s.ald | jq .ald.header.payload_size)" <<'PY'
import hashlib, struct, sys, zlib
b = bytearray(open("s.ald", "rb").read())
end = len(b) - 4                       # the payload, then the CRC-32
start = end - int(sys.argv[1])
b[b.index(b"abcQ", start) + 3] = 0xFF
b[-4:] = struct.pack("<I", zlib.crc32(bytes(b[:-4])))
open("tampered-s.ald", "wb").write(b)  # the CRC made again, not the card's digest
i = b.index(b"sha256") + 8             # the card's hex digest of the (uncompressed) payload
open("digests", "w").write(hashlib.sha256(b[start:end]).hexdigest() + " " + b[i:i + 64].decode() + "\n")
b[i:i + 64] = hashlib.sha256(b[start:end]).hexdigest().encode()
b[-4:] = struct.pack("<I", zlib.crc32(bytes(b[:-4])))
open("utf8-s.ald", "wb").write(b)
PY
	# the digest is taken as the rows are read: a payload that is not the card's is told so
	# (exit 6), even where its rows fail first
	read -r got card <digests
	run --separate-stderr fmt-verify tampered-s.ald
	assert_failure 6
	assert_equal "$stderr" "fmt-verify: error: tampered-s.ald: payload SHA-256 $got differs from the card's $card"
	for f in utf8-s.csv utf8-s.arrow utf8-s.arrows offsets-s.arrow offsets-s.arrows utf8-s.ald; do
		case $f in utf8-*) msg="column 's': row 0 is not valid UTF-8" ;; *) msg="column 's': offset 8 of row 1 goes backwards" ;; esac
		run --separate-stderr fmt-verify "$f"
		[ "$status" -eq 4 ] || fail "$f: exit $status: $stderr"
		assert_equal "$stderr" "fmt-verify: error: $f: $msg"
		run --separate-stderr fmt-convert -q "$f" out.jsonl
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: $f: $msg"
	done
}

@test "fmt-verify checks the card's payload SHA-256 (exit 6 when the CRC was recomputed over a wrong one)" {
	fmt-convert --chunk-rows 2 in.csv s.ald
	fmt-convert in.csv p.ald
	run fmt-verify --json s.ald p.ald
	assert_success
	assert_line --index 0 '{"file":"s.ald","ok":true,"format":"ald","rows":3,"crc":"ieee"}'
	for f in s.ald p.ald; do
		/usr/bin/python3 -c 'import sys,zlib,struct; p=sys.argv[1]; f=bytearray(open(p,"rb").read())
i=f.index(b"sha256")+8; f[i]=ord("0") if f[i]!=ord("0") else ord("1")
f[-4:]=struct.pack("<I",zlib.crc32(bytes(f[:-4]))); open(p,"wb").write(f)' $f
		run fmt-verify $f
		assert_failure 6
		assert_output --partial "payload SHA-256"
		assert_output --partial "differs from the card's"
	done
	# datasets are signed with Ed25519 (tests/cli/trust.bats); an HMAC key cannot check them
	printf 'team secret' >secret
	run fmt-verify --secret-file secret s.ald
	assert_failure 7
	assert_output --partial ".ald datasets are signed with Ed25519 keys"
}

@test "a payload whose schema differs from the schema block: exit 9 (SchemaMismatch), nothing written" {
	run fmt-convert "$ALD_CASES/payload-schema-differs.ald" out.csv
	assert_failure 9
	assert_output --partial 'payload schema differs from the schema block: field 0 is named "y", expected "x"'
	[ ! -e out.csv ]
}

@test "encryption, signature and licence blocks are reported; an encrypted payload needs its key" {
	[ "$(jq_field "$ALD_CASES/encrypted-password.ald" ald.encryption)" = '"password"' ]
	[ "$(jq_field "$ALD_CASES/encrypted-recipient.ald" ald.encryption)" = '"recipient"' ]
	run fmt-convert "$ALD_CASES/encrypted-password.ald" out.csv </dev/null
	assert_failure 8
	assert_output --partial "the payload is encrypted with a password: give --password-file"
	[ ! -e out.csv ]
	f="$ALD_CASES/signed-licensed.ald"
	assert_equal "$(jq_field "$f" ald.header.flags ald.signature_public_key ald.license.license_id \
		ald.license.expires_at ald.license.seat_limit ald.license.terms)" '["signed", "licensed"]
"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
"00010203-0405-0607-0809-0a0b0c0d0e0f"
4102444800
5
"{\"seats\":\"10\"}"'
	# the licensed file's rows still convert (signatures are checked in a later issue)
	run fmt-convert "$f" - --to csv
	assert_success
	assert_output "$(printf 'x\n1\n2\n3')"
}

@test "metadata: upstream's 8-element array and a map are read; unknown dataset type prints its number" {
	assert_equal "$(jq_field "$ALD_CASES/good-array8-card.ald" ald.card.name ald.card.tags ald.card.created_at)" '"iris"
["ml"]
"2025-01-01T00:00:00Z"'
	[ "$(jq_field "$ALD_CASES/good-map-card.ald" ald.card.tags)" = '["a", "b"]' ]
	[ "$(jq_field "$ALD_CASES/unknown-type.ald" ald.header.dataset_type)" = 119 ]
}

@test "CSV -> .ald -> CSV gives the same bytes; JSON Lines and Arrow on the way keep them too" {
	run fmt-convert in.csv a.ald
	assert_success
	fmt-convert a.ald b.csv
	cmp in.csv b.csv
	fmt-convert a.ald c.jsonl
	fmt-convert c.jsonl d.ald
	fmt-convert d.ald e.arrow
	fmt-convert e.arrow f.arrows
	fmt-convert f.arrows g.csv
	cmp in.csv g.csv
	run cat c.jsonl
	assert_line --index 1 '{"id":2,"name":"b, c","score":null,"ok":false,"when":null}'
	assert_line --index 2 '{"id":3,"name":"say \"hi\"","score":-1e-07,"ok":null,"when":"1969-12-31T23:59:59.999Z"}'
}

@test "floats: read correctly rounded (long digits, extremes, subnormals), written as the shortest round-trip decimal" {
	printf 'v\n0.1\n1e23\n5e-324\n2.2250738585072014e-308\n1.7976931348623157e+308\n9007199254740993\n0.30000000000000004\n123456789.123456789\n-0.0\n100\n0.000123\n1.5e-05\n8.0e-323\n0.1257302210933933\n' >f.csv
	run fmt-convert --from csv f.csv f.ald
	assert_success
	run fmt-inspect --schema f.ald
	assert_line "  v  float64  not null"
	run fmt-convert --to csv f.ald -
	assert_success
	assert_output "$(printf 'v\n0.1\n1e+23\n5e-324\n2.2250738585072014e-308\n1.7976931348623157e+308\n9007199254740992.0\n0.30000000000000004\n123456789.12345679\n-0.0\n100.0\n0.000123\n1.5e-05\n8e-323\n0.1257302210933933')"
	# the values are those Python reads from the same text, bit for bit, and the text is Python's
	# repr of them (a point or an exponent in each: read back, they are floats)
	fmt-convert --to csv f.ald - | /usr/bin/python3 -c 'import sys, struct
src = open("f.csv").read().split()[1:]
out = sys.stdin.read().split()[1:]
assert [struct.pack("<d", float(a)) for a in src] == [struct.pack("<d", float(b)) for b in out], (src, out)
assert out == [repr(float(a)) for a in src], out'
}

@test "type inference: int64, float64, bool, utf8, timestamp; empty fields are nulls" {
	run fmt-inspect --schema in.csv
	assert_success
	assert_output "$(printf 'schema (5 columns):\n  id  int64  not null\n  name  utf8  not null\n  score  float64\n  ok  bool\n  when  timestamp[ms, UTC]')"
}

@test "--no-header, --delimiter, --null-value" {
	printf '1;x;NA\n2;NA;3\n' >semi.csv
	run fmt-convert --no-header --delimiter ';' --null-value NA semi.csv out.jsonl
	assert_success
	run cat out.jsonl
	assert_line --index 0 '{"column_1":1,"column_2":"x","column_3":null}'
	assert_line --index 1 '{"column_1":2,"column_2":null,"column_3":3}'
	printf 'a\tb\n1\t2\n' >tab.csv
	run fmt-convert --delimiter tab --to jsonl tab.csv -
	assert_output '{"a":1,"b":2}'
	# without --delimiter it is detected from the first line
	run fmt-convert --to jsonl tab.csv -
	assert_output '{"a":1,"b":2}'
	run fmt-convert --delimiter ab in.csv out.ald
	assert_failure 2
	assert_output --partial "--delimiter takes one character"
}

@test "a UTF-8 byte order mark before CSV or JSON Lines is skipped (DuckDB skips it in CSV: interop dataset_ops)" {
	# Excel's "CSV UTF-8" starts with one: it became part of the first column's name
	# ("\ufeffid"), and a JSON Lines file with one was taken for one-column CSV (exit 4).
	bom=$'\xef\xbb\xbf'
	printf '%sid;name\r\n1;"a\r\nb"\r\n2;c\r\n' "$bom" >excel.csv
	printf '%s{"id":1,"name":"a"}\n{"id":2,"name":"c"}\n' "$bom" >ps.jsonl
	for f in excel.csv ps.jsonl; do
		run fmt-inspect --json "$f"
		assert_success
		[ "$(jq -c '[.format, [.schema.fields[].name], .rows]' <<<"$output")" = "[\"${f#*.}\",[\"id\",\"name\"],2]" ]
		run fmt-convert --to csv "$f" -
		assert_success
		[ "${lines[0]}" = "id,name" ]
		# from a pipe too
		run bash -c "cat $f | fmt-convert --to jsonl - - | head -c 9"
		[ "$output" = '{"id":1,"' ]
	done
	run fmt-convert --no-header --to jsonl excel.csv -
	assert_line --index 0 '{"column_1":"id","column_2":"name"}'
	# a mark anywhere else is text; a file of the mark alone is empty text
	printf 'id,name\n1,%sx\n' "$bom" >mid.csv
	[ "$(fmt-convert --to csv mid.csv - | sed -n 2p)" = "1,${bom}x" ]
	printf '%s' "$bom" >only.csv
	run fmt-convert --from csv only.csv out.jsonl
	assert_failure 4
	assert_output "fmt-convert: error: only.csv: no header row (the file is empty)"
	# read on several threads (chunks past the header): the rows of -T 1
	{ printf '%sn,s\n' "$bom"; seq 1 40000 | sed 's/$/,text/'; } >big.csv
	fmt-convert -T 1 big.csv t1.jsonl
	fmt-convert -T 3 big.csv t3.jsonl
	cmp t1.jsonl t3.jsonl
	[ "$(head -1 t3.jsonl)" = '{"n":1,"s":"text"}' ] && [ "$(wc -l <t3.jsonl)" -eq 40000 ]
}

@test "a table of up to 100,000 columns goes through CSV, Parquet and JSON Lines and back; 100,001 is refused" {
	# CSV refused 65,537 columns and more with 'more than 100000 fields' (its field list grew
	# by doubling past the limit), the Parquet reader refused fmtkit's own 100,000-column file
	# ('malformed footer (schema list)': the root element counted as a column), JSON Lines took
	# 10,000 keys; names were checked pair by pair (a 65,536-column CSV took 7 s to open).
	python3 -c '
import sys
n = int(sys.argv[1])
print(",".join("c%d" % i for i in range(n)))
print(",".join(str(i % 10) for i in range(n)))' 100000 >wide.csv
	run timeout 60 fmt-convert -q wide.csv wide.parquet
	assert_success
	run timeout 60 fmt-convert -q wide.parquet back.csv
	assert_success
	cmp wide.csv back.csv
	run timeout 60 fmt-inspect --json wide.parquet
	assert_success
	assert_equal "$(jq '.schema.fields | length' <<<"$output")" 100000
	# JSON Lines took 10,000 keys at most, each looked up key by key
	run timeout 60 fmt-convert -q wide.parquet wide.jsonl
	assert_success
	run timeout 60 fmt-convert -q wide.jsonl back2.csv
	assert_success
	cmp wide.csv back2.csv
	python3 -c 'print(",".join("c%d" % i for i in range(100001)))' >wider.csv
	run --separate-stderr fmt-convert -q wider.csv out.parquet
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: wider.csv: line 1: more than 100000 fields"
	[ ! -e out.parquet ]
	python3 -c 'import json; print(json.dumps({"c%d" % i: i for i in range(100001)}))' >wider.jsonl
	run --separate-stderr fmt-convert -q wider.jsonl out.parquet
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: wider.jsonl: more than 100000 distinct keys"
	[ ! -e out.parquet ]
}

@test "an empty name in a CSV header is named by its position as --no-header names columns (pandas' index)" {
	# pandas' to_csv writes an empty name over its index column: it was exit 4.
	printf ',a,b\n0,1,x\n1,2,y\n' >pandas.csv
	run fmt-convert --to jsonl pandas.csv -
	assert_success
	assert_output $'{"column_1":0,"a":1,"b":"x"}\n{"column_1":1,"a":2,"b":"y"}'
	printf 'a,,b,\n1,2,3,4\n' >gaps.csv
	run fmt-convert --to csv gaps.csv -
	assert_output $'a,column_2,b,column_4\n1,2,3,4'
	printf 'column_2,\n1,2\n' >clash.csv
	run fmt-convert --to csv clash.csv -
	assert_failure 4
	assert_output "fmt-convert: error: clash.csv: column name 'column_2' appears twice"
	# other formats keep refusing an empty name, counting columns from 1 as CSV's messages do
	printf '{"a":1,"":2}\n{"a":3,"":4}\n' >empty-key.jsonl
	run fmt-convert --to csv empty-key.jsonl -
	assert_failure 4
	assert_output "fmt-convert: error: empty-key.jsonl: column 2 has an empty name"
}

@test "--schema forces types; a value that does not fit is exit 4 with line and column" {
	printf 'a,b,c,d\n1,2.5,2024-01-02,ff00\n-128,,1970-01-01,\n' >t.csv
	echo '{"a":"int8","b":"float32","c":"date32","d":"binary"}' >s.json
	run fmt-convert --schema s.json t.csv out.ald
	assert_success
	run fmt-inspect --schema out.ald
	assert_output "$(printf 'schema (4 columns):\n  a  int8  not null\n  b  float32\n  c  date32  not null\n  d  binary')"
	run fmt-convert out.ald - --to csv
	assert_output "$(printf 'a,b,c,d\n1,2.5,2024-01-02,ff00\n-128,,1970-01-01,')"
	printf 'a,b,c,d\n1,2.5,2024-01-02,ff00\n300,1,1970-01-01,00\n' >big.csv
	run fmt-convert --schema s.json big.csv out2.ald
	assert_failure 4
	assert_output --partial 'line 3, column 1: "300" is not an int8'
	[ ! -e out2.ald ]
	echo '{"a":"decimal"}' >bad.json
	run fmt-convert --schema bad.json t.csv out3.ald
	assert_failure 2
	assert_output --partial "column 'a': unknown type"
	echo '{"zz":"int8"}' >missing.json
	run fmt-convert --schema missing.json t.csv out3.ald
	assert_failure 2
	assert_output --partial "--schema names column 'zz', which the file does not have"
	echo '[1]' >notobj.json
	run fmt-convert --schema notobj.json t.csv out3.ald
	assert_failure 2
	[ ! -e out3.ald ]
}

@test "--schema float16, float32: a finite value the type would store as infinity is exit 4; underflow rounds; inf and nan are values" {
	echo '{"a":"float16"}' >h.json
	printf 'a\n1.5\n70000\n1e-9\n' >h.csv
	for out in out.jsonl out.ald out.arrow out.parquet; do
		run fmt-convert --schema h.json h.csv $out
		assert_failure 4
		assert_output 'fmt-convert: error: h.csv: line 3, column 1: "70000" is not a float16'
		[ ! -e $out ]
	done
	printf 'a\n-65520\n' >neg.csv
	run fmt-convert --schema h.json neg.csv out.jsonl
	assert_failure 4
	assert_output 'fmt-convert: error: neg.csv: line 2, column 1: "-65520" is not a float16'
	# 65519 rounds to the largest float16, 65504 (numpy's repr: 65500.0); 1e-9 to 0, 6e-8 to a subnormal
	printf 'a\n65519\n-65504\n1e-9\n6e-8\ninf\n-inf\nnan\n' >ok.csv
	run fmt-convert --schema h.json --to jsonl ok.csv -
	assert_success
	assert_output "$(printf '{"a":65500.0}\n{"a":-65500.0}\n{"a":0.0}\n{"a":6e-08}\n{"a":"inf"}\n{"a":"-inf"}\n{"a":"NaN"}')"
	echo '{"a":"float32"}' >f.json
	printf 'a\n3.4028235e38\n1e-50\n1e39\n' >f.csv
	run fmt-convert --schema f.json f.csv out.ald
	assert_failure 4
	assert_output 'fmt-convert: error: f.csv: line 4, column 1: "1e39" is not a float32'
	[ ! -e out.ald ]
	head -n 3 f.csv >f2.csv
	run fmt-convert --schema f.json --to jsonl f2.csv -
	assert_success
	assert_output "$(printf '{"a":3.4028235e+38}\n{"a":0.0}')"
	# beyond float64: not a float64 under --schema, and inference keeps the column text
	printf 'a\n1.5\n1e999\n' >d.csv
	run fmt-convert --schema <(echo '{"a":"float64"}') d.csv out.jsonl
	assert_failure 4
	assert_output 'fmt-convert: error: d.csv: line 3, column 1: "1e999" is not a float64'
	run fmt-convert --to jsonl d.csv -
	assert_output "$(printf '{"a":"1.5"}\n{"a":"1e999"}')"
}

@test "--schema float16: each value rounded once from its decimal text, as numpy's float16(x): 65519.999 is 65504, ties to even, subnormals" {
	echo '{"a":"float16"}' >h.json
	# 1.0004882812509095 is above the tie 1 + 2^-11: a float32 step made it the tie, then 1.0
	printf 'a\n65504\n65519.999\n-65519.999\n65519.99999999\n5.96e-8\n2.98023223876953125e-8\n8.94069671630859375e-8\n1.0004882812509095\n2.98e-8\n' >edge.csv
	run fmt-convert --schema h.json edge.csv edge.arrow
	assert_success
	run env PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
import struct, numpy as np
from arrow_ipc import Ipc
ipc = Ipc("edge.arrow")
batch, body = next(ipc.batches())
off, n = struct.unpack_from("<qq", ipc.b, ipc.buffers(batch) + 16)  # buffer 1: the values
got = [f"{h:04x}" for h in struct.unpack_from(f"<{n // 2}H", ipc.b, body + off)]
want = [f"{int(np.float16(float(x)).view(np.uint16)):04x}" for x in open("edge.csv").read().split()[1:]]
print(" ".join(got))
print("numpy agrees" if got == want else "numpy: " + " ".join(want))
PY
	assert_success
	assert_output "$(printf '7bff 7bff fbff 7bff 0001 0000 0002 3c01 0000\nnumpy agrees')"
	run fmt-convert --schema h.json --to jsonl edge.csv -
	assert_success
	assert_line -n 1 '{"a":65500.0}'
	assert_line -n 7 '{"a":1.001}'
	# a --where value on a float16 column is rounded the same way
	run fmt-convert --where 'a = 1.0004882812509095' --to jsonl edge.arrow -
	assert_success
	assert_output '{"a":1.001}'
	run fmt-convert --where 'a >= 65519.999' --to jsonl edge.arrow -
	assert_success
	assert_output "$(printf '{"a":65500.0}\n{"a":65500.0}\n{"a":65500.0}')"
	# 65520 is the tie between 65504 and 2^16, which is past float16: infinity, so refused
	printf 'a\n65520\n' >over.csv
	run fmt-convert --schema h.json over.csv over.arrow
	assert_failure 4
	assert_output 'fmt-convert: error: over.csv: line 2, column 1: "65520" is not a float16'
	[ ! -e over.arrow ]
}

@test "--schema float32 and float16: a decimal a hair off a tie of the type, whose nearest float64 is the tie, rounds once from the text" {
	# float32: 1 + 2^-24 and 1 + 3 * 2^-24 are ties; 1e-32 off them the nearest float64 is the tie
	# itself, and rounding that again gave ties-to-even (1.0 and 1.0000002) instead of the text's
	# side (1.0000001 both); the tie exactly still goes to even; 2^128 - 2^103 is the tie between
	# the largest float32 and overflow, so a decimal just below it is the largest float32
	echo '{"a":"float32"}' >f.json
	printf 'a\n1.00000005960464477539062500000001\n1.00000017881393432617187499999999\n1.000000059604644775390625\n-1.00000005960464477539062500000001\n3.4028235677973366e38\n' >f.csv
	run fmt-convert --schema f.json --to jsonl f.csv -
	assert_success
	assert_output "$(printf '{"a":1.0000001}\n{"a":1.0000001}\n{"a":1.0}\n{"a":-1.0000001}\n{"a":3.4028235e+38}')"
	printf 'a\n340282356779733661637539395458142568448\n' >over.csv
	run fmt-convert --schema f.json --to jsonl over.csv -
	assert_failure 4
	assert_output 'fmt-convert: error: over.csv: line 2, column 1: "340282356779733661637539395458142568448" is not a float32'
	# float16: the same around 1 + 2^-11 and 1 + 3 * 2^-11 (1.001 is 1.0009765625), and just below 65520
	echo '{"a":"float16"}' >h.json
	printf 'a\n1.00048828125000000000001\n1.00146484374999999999999\n1.00048828125\n65519.9999999999999999999\n' >h.csv
	run fmt-convert --schema h.json --to jsonl h.csv -
	assert_success
	assert_output "$(printf '{"a":1.001}\n{"a":1.001}\n{"a":1.0}\n{"a":65500.0}')"
	# a --where value on the column is rounded the same way
	fmt-convert --schema f.json f.csv f.arrow
	run fmt-convert --where 'a = 1.00000005960464477539062500000001' --to jsonl f.arrow -
	assert_success
	assert_output "$(printf '{"a":1.0000001}\n{"a":1.0000001}')"
}

@test "malformed CSV: exit 4 with line and column, nothing written under the output name" {
	printf 'a,b\n1,2\n3,x"y\n' >bare.csv
	run fmt-convert bare.csv out.ald
	assert_failure 4
	assert_output "fmt-convert: error: bare.csv: line 3, column 2: a quote inside an unquoted field"
	printf 'a,b\n1,"open\n2,3\n' >open.csv
	run fmt-convert open.csv out.ald
	assert_failure 4
	assert_output --partial "open.csv: line 2, column 2: a quoted field is not closed"
	printf 'a,b\n1,2\n3\n' >short.csv
	run fmt-convert short.csv out.ald
	assert_failure 4
	assert_output --partial "short.csv: line 3, column 2: 1 fields, the header has 2"
	printf 'a,b\n1,"x"y\n' >after.csv
	run fmt-convert after.csv out.ald
	assert_failure 4
	assert_output --partial "line 2, column 2: characters after a closing quote"
	[ ! -e out.ald ]
	[ -z "$(ls -A | grep fmtkit-tmp || true)" ]
}

@test "JSON Lines: keys in first-seen order, missing keys are nulls, lists of numbers, bad lines exit 4" {
	printf '{"a":1,"v":[1,2]}\n\n{"b":"x","a":2.5,"v":[3,4.5]}\n{"a":null,"t":"2024-01-01T00:00:00Z"}\n' >in.jsonl
	run fmt-inspect --schema in.jsonl
	assert_output "$(printf 'schema (4 columns):\n  a  float64\n  v  fixed_size_list<float64>[2]\n  b  utf8\n  t  timestamp[s, UTC]')"
	run fmt-convert in.jsonl - --to jsonl
	assert_line --index 0 '{"a":1.0,"v":[1.0,2.0],"b":null,"t":null}'
	assert_line --index 1 '{"a":2.5,"v":[3.0,4.5],"b":"x","t":null}'
	assert_line --index 2 '{"a":null,"v":null,"b":null,"t":"2024-01-01T00:00:00Z"}'
	printf '{"a":1}\n{"a":\n' >bad.jsonl
	run fmt-convert bad.jsonl out.ald
	assert_failure 4
	assert_output --partial "bad.jsonl: line 2, column"
	printf '{"a":1}\n[1]\n' >arr.jsonl
	run fmt-convert --from jsonl arr.jsonl out.ald
	assert_failure 4
	assert_output --partial "line 2, column 1: not a JSON object"
	# found by its content too (it was 'unrecognised format (not one of: ...)')
	run --separate-stderr fmt-convert arr.jsonl out.ald
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: arr.jsonl: line 2, column 1: not a JSON object"
	[ ! -e out.ald ]
}

@test "--compression: the header's id, and the payload is a standard zstd / LZ4 frame" {
	for c in none zstd zstd-max lz4; do
		run fmt-convert --compression $c in.csv $c.ald
		assert_success
		[ "$(jq_field $c.ald ald.header.compression)" = "\"$c\"" ]
	done
	payload none.ald >raw.ipc
	payload zstd.ald | zstd -dq | cmp - raw.ipc
	payload zstd-max.ald | zstd -dq | cmp - raw.ipc
	payload lz4.ald | lz4 -dqc | cmp - raw.ipc
	# zstd-max is zstd level 19: smaller or equal to level 3 here
	[ "$(stat -c %s zstd-max.ald)" -le "$(stat -c %s zstd.ald)" ]
	run fmt-convert --compression brotli in.csv x.ald
	assert_failure 2
	assert_output --partial "--compression takes none, zstd, zstd-max or lz4"
}

@test "--compression zstd: the payload is independent frames of 1 MiB of IPC each, the same at any -T; zstd and python-zstandard read it" {
	awk 'BEGIN { print "id,name,score"; for (i = 0; i < 200000; i++) printf "%d,row %d of many,%d.%d\n", i, i * 7919 % 100003, i % 977, i % 10 }' >big.csv
	fmt-convert --compression none big.csv none.ald
	payload none.ald >raw.ipc
	for t in 1 2 3; do
		fmt-convert -T $t big.csv t$t.ald
	done
	cmp t1.ald t2.ald
	cmp t1.ald t3.ald
	payload t1.ald | zstd -dq | cmp - raw.ipc
	payload t1.ald >z.bin
	run /usr/bin/python3 -c 'import sys, zstandard
buf, out, sizes = open("z.bin", "rb").read(), [], []
while buf:
    d = zstandard.ZstdDecompressor().decompressobj()
    part = d.decompress(buf)
    out.append(part)
    sizes.append(len(part))
    buf = d.unused_data
assert b"".join(out) == open("raw.ipc", "rb").read()
print(len(sizes), set(sizes[:-1]), 0 < sizes[-1] <= 1 << 20)'
	assert_success
	raw=$(stat -c %s raw.ipc)
	assert_output "$(( (raw + 1048575) / 1048576 )) {1048576} True"
	[ "$raw" -gt $((3 << 20)) ]
	run fmt-verify t1.ald
	assert_success
	# zstd-max keeps one frame
	fmt-convert --compression zstd-max big.csv max.ald
	payload max.ald >m.bin
	run /usr/bin/python3 -c 'import zstandard; d = zstandard.ZstdDecompressor().decompressobj(); d.decompress(open("m.bin", "rb").read()); print(len(d.unused_data))'
	assert_output 0
}

@test "the dataset type is carried: .ald -> .ald, fmt-shard split, and through Parquet; --type replaces it" {
	fmt-convert --type text_corpus in.csv t.ald
	fmt-convert t.ald again.ald
	assert_equal "$(jq_field again.ald ald.header.dataset_type ald.header.dataset_type_id schema.metadata)" '"text_corpus"
16
{"ald:dataset_type": "text_corpus"}'
	fmt-shard split t.ald --rows 2 -o parts
	assert_equal "$(jq_field parts/t-00001-of-00002.ald ald.header.dataset_type)" '"text_corpus"'
	assert_equal "$(jq_field parts/t-00002-of-00002.ald ald.header.dataset_type)" '"text_corpus"'
	fmt-convert t.ald t.parquet
	fmt-convert t.parquet back.ald
	assert_equal "$(jq_field back.ald ald.header.dataset_type)" '"text_corpus"'
	run fmt-convert --type graph t.ald graph.ald
	assert_success
	assert_equal "$(jq_field graph.ald ald.header.dataset_type)" '"graph"'
	# tabular, the default, is not written into the metadata
	fmt-convert in.csv tab.ald
	assert_equal "$(jq_field tab.ald ald.header.dataset_type schema.metadata)" '"tabular"
{}'
	# a name no dataset type has, in the input's metadata: the input is at fault
	/usr/bin/python3 -c 'import sys; b = open("t.parquet", "rb").read(); assert b.count(b"text_corpus") == 1
open("bad.parquet", "wb").write(b.replace(b"text_corpus", b"text_c0rpus"))'
	run fmt-convert bad.parquet bad.ald
	assert_failure 4
	assert_output "fmt-convert: error: bad.parquet: the input's ald:dataset_type metadata names no dataset type: 'text_c0rpus'"
	[ ! -e bad.ald ]
	run fmt-convert --type tabular bad.parquet ok.ald
	assert_success
}

@test "fmt-shard -c CODEC: the parts' compression (default: the format's, not the input's); refused where nothing is compressed" {
	fmt-convert -c lz4 in.csv l.ald
	fmt-shard split l.ald --rows 2 -o def
	assert_equal "$(jq_field def/l-00001-of-00002.ald ald.header.compression)" '"zstd"'
	fmt-shard split l.ald --rows 2 -o lz -c lz4
	assert_equal "$(jq_field lz/l-00001-of-00002.ald ald.header.compression)" '"lz4"'
	assert_equal "$(jq_field lz/l-00002-of-00002.ald ald.header.compression)" '"lz4"'
	fmt-shard merge lz/l-00001-of-00002.ald lz/l-00002-of-00002.ald -o m.parquet --compression gzip
	assert_equal "$(fmt-inspect --json m.parquet | jq -r '[.. | objects | .codec? // empty] | unique | join(",")')" GZIP
	fmt-shard concat lz/l-00001-of-00002.ald lz/l-00002-of-00002.ald -o m.arrow -c zstd
	assert_equal "$(fmt-inspect --json m.arrow | jq -r .arrow.compression)" zstd
	fmt-convert m.arrow back.csv
	cmp back.csv <(fmt-convert l.ald - --to csv)
	run fmt-shard split l.ald --rows 2 -o bad -c brotli
	assert_failure 2
	assert_output "fmt-shard: error: l.ald: --compression takes none, zstd, zstd-max or lz4 for a dataset"
	run fmt-shard split in.csv --rows 2 -o csv -c lz4
	assert_failure 2
	assert_output "fmt-shard: error: in.csv: --compression has no use with csv input and csv output (it is for ald output, arrow output, arrow-stream output or parquet output)"
	[ ! -e csv ]
	printf '{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}' >h.json
	/usr/bin/python3 -c 'import struct; h = open("h.json", "rb").read(); open("m.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + bytes(4))'
	run fmt-shard split m.safetensors -c lz4
	assert_failure 2
	assert_output "fmt-shard: error: m.safetensors: --compression is for datasets, not models"
}

@test "--type and --card: dataset type by name, card fields, card checks" {
	cat >card.json <<-'EOF'
	{"name": "tiny", "version": "1.0.0", "license": "MIT", "tags": ["demo", "csv"],
	 "sources": [{"name": "hand", "url": "https://example.org"}],
	 "columns": [{"name": "id", "description": "row id"}], "compliance": {"pii_status": "none"}}
	EOF
	run fmt-convert --type image_classification --card card.json in.csv out.ald
	assert_success
	mapfile -t fields < <(jq_field out.ald ald.header.dataset_type ald.header.dataset_type_id ald.card.name \
		ald.card.tags ald.card.sources.0.url ald.card.compliance.pii_status ald.card.sha256)
	assert_equal "$(printf '%s\n' "${fields[@]:0:6}")" '"image_classification"
32
"tiny"
["demo", "csv"]
"https://example.org"
"none"'
	# the digest: 64 hex digits in quotes
	[ "$(wc -c <<<"${fields[6]}")" = 67 ]
	# --compat alimentar: the 7-element array, upstream's CRC
	run fmt-convert --compat alimentar --card card.json in.csv compat.ald
	assert_success
	assert_equal "$(jq_field compat.ald ald.card_form ald.card.name ald.crc)" '"array"
"tiny"
"alimentar-0.2"'
	[ "$(head -c 33 compat.ald | tail -c 1 | xxd -p)" = 97 ]
	run fmt-convert --type nosuch in.csv x.ald
	assert_failure 2
	assert_output --partial "--type takes one of: tabular, time_series,"
	echo '{"nmae": "typo"}' >typo.json
	run fmt-convert --card typo.json in.csv x.ald
	assert_failure 2
	assert_output --partial 'card: unknown key "nmae"'
	echo '{"sha256": "00"}' >sha.json
	run fmt-convert --card sha.json in.csv x.ald
	assert_failure 2
	assert_output --partial '"sha256" is filled in by the writer'
	echo '{"tags": "one"}' >tags.json
	run fmt-convert --card tags.json in.csv x.ald
	assert_failure 2
	assert_output --partial '"tags" must be an array of strings'
	run fmt-convert --compat other in.csv x.ald
	assert_failure 2
	[ ! -e x.ald ]
}

@test "--chunk-rows: STREAMING chunks; --head decompresses only the chunks it needs" {
	{ echo "n,s"; for i in $(seq 1 100); do echo "$i,row$i"; done; } >long.csv
	run fmt-convert --chunk-rows 30 long.csv s.ald
	assert_success
	assert_equal "$(jq_field s.ald ald.header.flags ald.chunks.3.row_offset ald.chunks.3.num_rows)" '["streaming"]
90
10'
	# the same bytes on any -T: on two threads a chunk's small buffers are compressed on the
	# caller's (a hand-over each cost more than the work), its large ones on the payload thread
	local t
	for t in 1 2 4; do
		fmt-convert -q -T $t --chunk-rows 3 long.csv t$t.ald
		fmt-convert -q -T $t --chunk-rows 30 long.csv u$t.ald
	done
	cmp t1.ald t2.ald
	cmp t1.ald t4.ald
	cmp u1.ald u2.ald
	cmp u1.ald u4.ald
	cmp u1.ald s.ald
	fmt-convert s.ald back.csv
	cmp long.csv back.csv
	# damage the last chunk: --head 2 (first chunk only) still works, reading everything fails
	/usr/bin/python3 -c 'import sys; f=bytearray(open(sys.argv[1],"rb").read()); f[-10]^=0xff; f[-20]^=0xff
open(sys.argv[1],"wb").write(f)' s.ald
	run fmt-inspect --head 2 s.ald
	assert_success
	assert_output "$(printf 'n  s\n1  row1\n2  row2')"
	run fmt-convert --no-verify s.ald x.csv
	assert_failure 4
	[ ! -e x.csv ]
	run fmt-convert --chunk-rows 0 long.csv y.ald
	assert_failure 2
	assert_output --partial "--chunk-rows takes a row count"
}

@test "fmt-inspect --head, --stats, --schema as text and JSON" {
	fmt-convert in.csv in.ald
	run fmt-inspect --head 2 in.ald
	assert_output "$(printf 'id  name  score  ok     when\n1   ann   0.5    true   2024-02-29T12:00:00Z\n2   b, c  null   false  null')"
	run fmt-inspect --json --head 1 in.ald
	assert_output '{"file":"in.ald","format":"ald","rows":1,"head":[{"id":1,"name":"ann","score":0.5,"ok":true,"when":"2024-02-29T12:00:00Z"}]}'
	run fmt-inspect --json --stats in.ald
	assert_success
	echo "$output" | /usr/bin/python3 -c 'import json,sys; c=json.load(sys.stdin)["columns"]
assert c[0]=={"name":"id","type":"int64","count":3,"nulls":0,"min":1,"max":3,"mean":2.0}, c[0]
assert c[1]["distinct"]==3 and c[1]["min_length"]==3 and c[1]["max_length"]==8, c[1]
assert c[2]["nulls"]==1 and c[2]["max"]==0.5, c[2]
assert c[4]["min"]=="1969-12-31T23:59:59.999Z" and c[4]["max"]=="2024-02-29T12:00:00Z", c[4]'
	run fmt-inspect --stats in.ald
	assert_line --index 0 "id: type=int64 count=3 nulls=0 min=1 max=3 mean=2.0"
	run fmt-inspect --json --schema in.ald
	assert_output --partial '{"name":"when","type":"timestamp","nullable":true,"unit":"ms","timezone":"UTC"}'
	run fmt-inspect --head x in.ald
	assert_failure 2
	run fmt-inspect --tensors in.ald
	assert_failure 2
	assert_output --partial "are for models, not datasets"
	run fmt-inspect --head 1 "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
	assert_failure 2
	assert_output --partial "are for datasets, not models"
}

# SRC.ald with its card replaced by the MessagePack of the Python expression CARD (card: the
# original's), header size and CRC-32 redone, as DST.
recard() {
	/usr/bin/python3 - "$@" <<'PY'
import msgpack, struct, sys, zlib
src, dst, expr = sys.argv[1:4]
f = open(src, "rb").read()
meta = struct.unpack_from("<I", f, 8)[0]
nan, inf = float("nan"), float("inf")
m = msgpack.packb(eval(expr, {"card": msgpack.unpackb(f[32:32 + meta]), "nan": nan, "inf": inf}))
h = bytearray(f[:32])
struct.pack_into("<I", h, 8, len(m))
body = bytes(h) + m + f[32 + meta:-4]
open(dst, "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
}

@test ".ald card with NaN and infinite floats: read as \"nan\", \"inf\", \"-inf\" (as APR v1), re-packed from JSON only with --card (old: exit 4 'non-string keys')" {
	fmt-convert in.csv d.ald
	recard d.ald n.ald 'dict(card, compliance={"gdpr": True, "score": nan, "range": [0.5, inf, -inf]})'
	run --separate-stderr fmt-inspect --json n.ald
	assert_success
	assert_equal "$(jq -c '[.ald.card.compliance, .schema.metadata["ald:card_nonfinite"]]' <<<"$output")" \
		'[{"gdpr":true,"score":"nan","range":[0.5,"inf","-inf"]},"{\"count\":3,\"at\":[\"/compliance/score\",\"/compliance/range/1\",\"/compliance/range/2\"]}"]'
	run fmt-inspect n.ald
	assert_success
	assert_line '    score: nan'
	run fmt-verify n.ald
	assert_success
	assert_output "n.ald: ok (ald, 3 rows, CRC-32 ieee)"
	# its JSON (ald:card) has the floats as strings: re-packed, they would come back strings
	run fmt-convert n.ald o.ald
	assert_failure 5
	assert_output "fmt-convert: error: n.ald: the input's card holds 3 NaN or infinite floats, at /compliance/score, /compliance/range/1 and /compliance/range/2, which its JSON (ald:card) can only keep as strings: not carried into a new .ald (--card FILE gives it another card)"
	[ ! -e o.ald ]
	printf '{"name": "other"}\n' >c.json
	run fmt-convert --card c.json n.ald o.ald
	assert_success
	assert_equal "$(jq -c '.ald.card | del(.sha256)' < <(fmt-inspect --json o.ald))" '{"name":"other"}'
	# through Parquet the mark travels with the card
	fmt-convert n.ald n.parquet
	run fmt-convert n.parquet p.ald
	assert_failure 5
	assert_output --partial "n.parquet: the input's card holds 3 NaN or infinite floats, at /compliance/score, /compliance/range/1 and /compliance/range/2, "
	# a licence leaves the card's bytes as they are
	XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config" fmt-sign keygen -W -p s.pub -s s.key >/dev/null
	cp n.ald l.ald
	XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config" fmt-sign license -q --licensee acme --expires 2999-01-01 --sign-key s.key l.ald
	meta=$(od -An -t u4 -j 8 -N 4 n.ald)
	cmp <(tail -c +33 n.ald | head -c "$meta") <(tail -c +33 l.ald | head -c "$meta")
	run fmt-inspect --json l.ald
	assert_equal "$(jq -c '[.ald.card.compliance.score, .ald.license.expires]' <<<"$output")" '["nan","2999-01-01T00:00:00Z"]'
	# upstream's positional card: a NaN among the tags
	recard d.ald a.ald '["n", None, None, ["t", nan], None, None, None]'
	run --separate-stderr fmt-inspect --json a.ald
	assert_success
	assert_equal "$(jq -c '[.ald.card_form, .ald.card.tags, .schema.metadata["ald:card_nonfinite"]]' <<<"$output")" \
		'["array",["t","nan"],"{\"count\":1,\"at\":[\"/tags/1\"]}"]'
}

@test ".ald card with many NaN floats: ald:card_nonfinite counts them all and names the first 32, fmt-convert names the first 4 (old: only the first, so a string \"nan\" after it could not be told from a float)" {
	fmt-convert in.csv d.ald
	recard d.ald n.ald 'dict(card, compliance={"v": [nan] * 40, "note": "nan"})'
	run --separate-stderr fmt-inspect --json n.ald
	assert_success
	assert_equal "$(jq -c '.schema.metadata["ald:card_nonfinite"] | fromjson | [.count, (.at | length), .at[0], .at[31], (.at | index("/compliance/note"))]' <<<"$output")" \
		'[40,32,"/compliance/v/0","/compliance/v/31",null]'
	run fmt-convert n.ald o.ald
	assert_failure 5
	assert_output "fmt-convert: error: n.ald: the input's card holds 40 NaN or infinite floats, at /compliance/v/0, /compliance/v/1, /compliance/v/2, /compliance/v/3 and 36 more, which its JSON (ald:card) can only keep as strings: not carried into a new .ald (--card FILE gives it another card)"
	[ ! -e o.ald ]
	# a string "nan" is a string: nothing marked, the card is carried
	recard d.ald s.ald 'dict(card, compliance={"note": "nan"})'
	run --separate-stderr fmt-inspect --json s.ald
	assert_equal "$(jq -c '.schema.metadata["ald:card_nonfinite"]' <<<"$output")" null
	fmt-convert s.ald o.ald
	assert_equal "$(fmt-inspect --json o.ald | jq -c .ald.card.compliance)" '{"note":"nan"}'
}

@test ".ald card with a number where a string belongs: fmt-convert to .ald is the input's error, exit 4, one message (old: exit 2 'metadata: : card:')" {
	fmt-convert in.csv d.ald
	recard d.ald v.ald 'dict(card, version=1.5)'
	run fmt-verify v.ald
	assert_failure 4
	run fmt-convert v.ald o.ald
	assert_failure 4
	assert_output "fmt-convert: error: v.ald: the input's card: \"version\" must be a string"
	[ ! -e o.ald ]
	run --separate-stderr fmt-convert --json v.ald o.ald
	assert_failure 4
	assert_equal "$stderr" '{"tool":"fmt-convert","level":"error","file":"v.ald","error":"InvalidFormat","exit":4,"message":"the input'"'"'s card: \"version\" must be a string"}'
	# through Parquet, the same
	fmt-convert v.ald v.parquet
	run fmt-convert v.parquet p.ald
	assert_failure 4
	assert_output "fmt-convert: error: v.parquet: the input's card: \"version\" must be a string"
	# --card replaces it; a --card file with the same fault stays a usage error
	printf '{"name": "other"}\n' >c.json
	run fmt-convert --card c.json v.ald o.ald
	assert_success
	printf '{"version": 1.5}\n' >b.json
	run fmt-convert --card b.json d.ald o2.ald
	assert_failure 2
	assert_output "fmt-convert: error: b.json: card: \"version\" must be a string"
}

@test ".ald card of the wrong kinds: fmt-verify exit 4 and fmt-inspect a warning, as fmt-convert refuses it (old: verify and inspect said ok, exit 0)" {
	fmt-convert in.csv d.ald
	recard d.ald v.ald 'dict(card, version=1.5)'
	run --separate-stderr fmt-verify v.ald
	assert_failure 4
	assert_output ''
	assert_equal "$stderr" 'fmt-verify: error: v.ald: the card: "version" must be a string'
	run --separate-stderr fmt-verify --json v.ald
	assert_failure 4
	assert_equal "$output" '{"file":"v.ald","ok":false,"exit":4,"error":"InvalidFormat","message":"the card: \"version\" must be a string","failed_file":"v.ald"}'
	# inspect shows the file (exit 0), with the problem as a warning; the JSON report keeps it
	run --separate-stderr fmt-inspect v.ald
	assert_success
	assert_equal "$stderr" 'fmt-inspect: warning: v.ald: the card: "version" must be a string'
	assert_line '  version: 1.5'
	refute_line --partial 'warnings'
	run --separate-stderr fmt-inspect --json v.ald
	assert_success
	assert_equal "$stderr" '{"tool":"fmt-inspect","level":"warning","file":null,"message":"v.ald: the card: \"version\" must be a string"}'
	assert_equal "$(jq -c '[.ald.card.version, .ald.warnings]' <<<"$output")" '[1.5,["the card: \"version\" must be a string"]]'
	# a good card: no warning, no "warnings" key
	run --separate-stderr fmt-inspect --json d.ald
	assert_equal "$stderr" ''
	assert_equal "$(jq -c '.ald | has("warnings")' <<<"$output")" false
	# upstream's positional card: a tag that is not a string, the same three answers
	recard d.ald a.ald '["n", None, None, ["t", 7], None, None, None]'
	run fmt-verify a.ald
	assert_failure 4
	assert_output 'fmt-verify: error: a.ald: the card: "tags" must be an array of strings'
	run --separate-stderr fmt-inspect a.ald
	assert_success
	assert_equal "$stderr" 'fmt-inspect: warning: a.ald: the card: "tags" must be an array of strings'
	run fmt-convert a.ald o.ald
	assert_failure 4
	assert_output "fmt-convert: error: a.ald: the input's card: \"tags\" must be an array of strings"
	# a CRC that fails is still exit 6, before the card
	cp v.ald c.ald
	printf 'X' | dd of=c.ald bs=1 seek=$(( $(stat -c %s c.ald) - 1 )) conv=notrunc 2>/dev/null
	run fmt-verify c.ald
	assert_failure 6
}

@test ".ald card with keys fmtkit does not know (upstream's reader ignores them): fmt-verify ok, fmt-convert and fmt-shard carry them as they are (old: exit 4 'unknown key')" {
	fmt-convert in.csv d.ald
	recard d.ald u.ald 'dict(card, name="u", homepage="https://example.org/u", extra={"n": 1}, sources=[{"name": "a", "mirror": "m"}])'
	run --separate-stderr fmt-verify u.ald
	assert_success
	assert_equal "$stderr" ''
	run --separate-stderr fmt-inspect u.ald
	assert_success
	assert_equal "$stderr" ''
	run fmt-convert u.ald o.ald
	assert_success
	assert_equal "$(fmt-inspect --json o.ald | jq -c '.ald.card | del(.sha256)')" \
		'{"name":"u","sources":[{"name":"a","mirror":"m"}],"homepage":"https://example.org/u","extra":{"n":1}}'
	run fmt-verify o.ald
	assert_success
	# through Parquet, and split by fmt-shard
	fmt-convert u.ald u.parquet
	fmt-convert u.parquet p.ald
	assert_equal "$(fmt-inspect --json p.ald | jq -c '.ald.card | del(.sha256)')" \
		'{"name":"u","sources":[{"name":"a","mirror":"m"}],"homepage":"https://example.org/u","extra":{"n":1}}'
	fmt-shard split u.ald --rows 2 -o parts
	assert_equal "$(fmt-inspect --json parts/u-00002-of-00002.ald | jq -c '.ald.card.homepage')" '"https://example.org/u"'
	# a known key of the wrong kind next to them is still refused; a --card file with an
	# unknown key stays a usage error (a typo)
	recard d.ald w.ald 'dict(card, homepage="h", sources=[{"name": 5}])'
	run fmt-convert w.ald o2.ald
	assert_failure 4
	assert_output "fmt-convert: error: w.ald: the input's card: \"sources\".\"name\" must be a string"
	printf '{"homepage": "h"}\n' >c.json
	run fmt-convert --card c.json d.ald o3.ald
	assert_failure 2
	assert_output 'fmt-convert: error: c.json: card: unknown key "homepage"'
}

@test "fmt-shard split/merge --card FILE: the .ald parts take that card, so an input whose card holds a NaN can be split (old: exit 5 naming fmt-convert, no --card)" {
	printf 'id\n1\n2\n3\n4\n' >r.csv
	fmt-convert r.csv d.ald
	recard d.ald n.ald 'dict(card, name="n", compliance={"score": nan})'
	run fmt-shard split n.ald --rows 2 -o parts
	assert_failure 5
	assert_output "fmt-shard: error: n.ald: the input's card holds a NaN or infinite float at /compliance/score, which its JSON (ald:card) can only keep as a string: not carried into a new .ald (--card FILE gives it another card)"
	[ ! -e parts ]
	printf '{"name": "other", "tags": ["a"]}\n' >c.json
	run fmt-shard split n.ald --rows 2 -o parts --card c.json
	assert_success
	assert_output $'parts/n-00001-of-00002.ald: 2 rows\nparts/n-00002-of-00002.ald: 2 rows'
	for f in parts/*.ald; do
		assert_equal "$(fmt-inspect --json "$f" | jq -c '.ald.card | del(.sha256)')" '{"name":"other","tags":["a"]}'
	done
	# concat: {} writes an empty card
	echo '{}' >e.json
	run fmt-shard concat n.ald d.ald -o m.ald --card e.json
	assert_success
	assert_equal "$(fmt-inspect --json m.ald | jq -c '.ald.card | keys')" '["sha256"]'
	# a bad card file is a usage error naming it; CSV parts have no card; models neither
	printf '{"version": 1.5}\n' >b.json
	run fmt-shard split n.ald --rows 2 -o p2 --card b.json
	assert_failure 2
	assert_output 'fmt-shard: error: b.json: card: "version" must be a string'
	run fmt-shard split r.csv --rows 2 -o p3 --card c.json
	assert_failure 2
	assert_output "fmt-shard: error: r.csv: --card has no use with csv input and csv output (it is for ald output)"
	[ ! -e p2 ] && [ ! -e p3 ]
	run fmt-shard split --card c.json "$REPO_ROOT/tests/data/conformance/safetensors-index/model-00001-of-00002.safetensors" -o mm
	assert_failure 2
	assert_output --partial ": --card is for datasets, not models"
}

@test "fmt-inspect --json --stats and --quality: a mean, std or bound that is NaN or infinite is \"nan\", \"inf\", \"-inf\" (fmtkit(7)), not null or \"NaN\"" {
	printf 'x\n1.5\ninf\n-inf\n' >i.csv
	fmt-convert i.csv i.ald
	run fmt-inspect --json --stats i.ald
	assert_success
	assert_output '{"file":"i.ald","format":"ald","columns":[{"name":"x","type":"float64","count":3,"nulls":0,"nan":0,"min":"-inf","max":"inf","mean":"nan"}]}'
	run fmt-inspect --json --quality i.ald
	assert_success
	assert_equal "$(jq -c '.columns[0] | [.min, .max, .mean, .std, .p1, .p50, .p99]' <<<"$output")" '["-inf","inf","nan","nan","-inf",1.5,"inf"]'
	printf 'x\n1\ninf\n' >p.csv
	fmt-convert p.csv p.ald
	run fmt-inspect --json --stats p.ald
	assert_output '{"file":"p.ald","format":"ald","columns":[{"name":"x","type":"float64","count":2,"nulls":0,"nan":0,"min":1.0,"max":"inf","mean":"inf"}]}'
	# the text is unchanged
	run fmt-inspect --stats i.ald
	assert_output "x: type=float64 count=3 nulls=0 nan=0 min=-inf max=inf mean=nan"
}

@test "fmt-inspect --quality and --stats: mean and std of floats up to DBL_MAX are finite and right (old: std \"inf\", mean \"-inf\" or \"inf\")" {
	# the squares (and sums) overflowed past ~1e154; the exact figures are from the fractions
	# module: mean 1e308 / 3 - 0 (the two 1e300 cancel), std 5.773502691896258e307
	printf 'x\n1e300\n-1e300\n1e308\n' >big.csv
	printf '{"x":1e300}\n{"x":-1e300}\n{"x":1e308}\n' >big.jsonl
	for f in big.csv big.jsonl; do
		run fmt-inspect --json --quality "$f"
		assert_success
		[ "$(jq -c '.columns[0] | [.mean == 3.333333333333333e307, .std == 5.773502691896258e307]' <<<"$output")" = '[true,true]' ] ||
			fail "$f: $output"
		run fmt-inspect --json --stats "$f"
		[ "$(jq -c '.columns[0].mean == 3.333333333333333e307' <<<"$output")" = true ] || fail "$f: $output"
	done
	run fmt-inspect --quality big.csv
	assert_line --index 3 --regexp '^x +float64 .* 3\.33333e307 +5\.7735e307 '
	# DBL_MAX, DBL_MAX, -DBL_MAX: the mean is DBL_MAX / 3; the sample std, 2.0758e308, is past DBL_MAX
	printf 'x\n1.7976931348623157e308\n1.7976931348623157e308\n-1.7976931348623157e308\n' >max.csv
	run fmt-inspect --json --stats max.csv
	[ "$(jq -c '.columns[0].mean == 5.992310449541053e307' <<<"$output")" = true ] || fail "$output"
	run fmt-inspect --json --quality max.csv
	[ "$(jq -c '.columns[0] | [.mean > 5.99231044954105e307 and .mean < 5.99231044954106e307, .std]' <<<"$output")" = '[true,"inf"]' ] ||
		fail "$output"
	# values far below 1: their squares no longer underflow to a std of 0
	printf 'x\n1e-200\n3e-200\n' >small.csv
	run fmt-inspect --json --quality small.csv
	[ "$(jq -c '.columns[0] | [.mean == 2e-200, .std == 1.414213562373095e-200]' <<<"$output")" = '[true,true]' ] || fail "$output"
	# an infinity makes the mean infinite whatever the order (old: 1, inf, 2 gave "nan")
	printf 'x\n1\ninf\n2\n' >inf.csv
	run fmt-inspect --json --quality inf.csv
	assert_equal "$(jq -c '.columns[0] | [.mean, .std]' <<<"$output")" '["inf","nan"]'
}

@test "fmt-inspect --quality: an int64 or uint64 column's mean is its exact sum over the count, rounded once, as --stats' (old: through float64)" {
	# 2^62 + 511, + 515, + 511: the mean 2^62 + 512.33 rounds to 2^62 + 1024 (float64s are 1024
	# apart there); the first value as a float64 (2^62) plus the mean of the differences gave 2^62
	printf 'i,u\n4611686018427388415,18446744073709550591\n4611686018427388419,18446744073709551615\n4611686018427388415,9223372036854775808\n' >big.csv
	for f in big.csv big.ald big.parquet; do
		[ "$f" = big.csv ] || fmt-convert big.csv "$f"
		run fmt-inspect --json --quality "$f"
		assert_success
		# float(Fraction(sum, 3)) of each column
		[ "$(jq -c '[.columns[].mean] == [4611686018427388928, 15372286728091291648]' <<<"$output")" = true ] || fail "$f: $output"
		run fmt-inspect --json --stats "$f"
		[ "$(jq -c '[.columns[].mean] == [4611686018427388928, 15372286728091291648]' <<<"$output")" = true ] || fail "$f: $output"
	done
	# and the small means of ordinary data, rounded once: 1, 2, 2 is 5/3 (old: 1.6666666666666665)
	printf 'x\n1\n2\n2\n' >s.csv
	run fmt-inspect --json --quality s.csv
	[ "$(jq -c '.columns[0].mean == 1.6666666666666667' <<<"$output")" = true ] || fail "$output"
}

@test "fmt-inspect --stats: NaN values are counted in nan and left out of min, max and mean (numpy's nanmean, as --quality); integer means from the exact sum" {
	# count is the rows (nulls and NaN included); the mean is over count - nulls - nan values
	printf 'x,i,u\n1.5,9007199254740993,18446744073709551615\nnan,9007199254740993,18446744073709551615\n2.5,9007199254740994,1\ninf,,\n,1,2\nnan,2,3\n' >n.csv
	for f in n.csv n.ald n.arrow n.parquet n.jsonl; do
		[ "$f" = n.csv ] || fmt-convert n.csv "$f"
		run fmt-inspect --json --stats "$f"
		assert_success
		[ "$(jq -c '.columns[0] | [.count, .nulls, .nan, .min, .max, .mean]' <<<"$output")" = '[6,1,2,1.5,"inf","inf"]' ] ||
			fail "$f: $output"
		# (2^53+1 + 2^53+1 + 2^53+2 + 1 + 2) / 5, and the uint64 sum past 2^64, each rounded once
		[ "$(jq -c '[.columns[1].mean == 5404319552844597, .columns[2].mean == 7.378697629483821e18]' <<<"$output")" = '[true,true]' ] ||
			fail "$f: $output"
	done
	run fmt-inspect --stats n.csv
	assert_line --index 0 "x: type=float64 count=6 nulls=1 nan=2 min=1.5 max=inf mean=inf"
	printf 'x\n1.5\nnan\n2.5\nnan\n' >m.csv
	run fmt-inspect --json --stats m.csv
	assert_output '{"file":"m.csv","format":"csv","columns":[{"name":"x","type":"float64","count":4,"nulls":0,"nan":2,"min":1.5,"max":2.5,"mean":2.0}]}'
	printf 'x\nnan\n' >all.csv
	run fmt-inspect --json --stats all.csv
	assert_output '{"file":"all.csv","format":"csv","columns":[{"name":"x","type":"float64","count":1,"nulls":0,"nan":1}]}'
}

@test "Arrow IPC: file and stream written, read back, --from forces a reader" {
	fmt-convert in.csv a.arrow
	fmt-convert in.csv a.arrows
	[ "$(head -c 6 a.arrow)" = ARROW1 ]
	[ "$(tail -c 6 a.arrow)" = ARROW1 ]
	[ "$(jq_field a.arrow arrow.ipc)" = '"file"' ]
	[ "$(jq_field a.arrows arrow-stream.ipc)" = '"stream"' ]
	fmt-convert a.arrow b.csv
	cmp in.csv b.csv
	# the same table through .ald gives the same Arrow bytes
	fmt-convert in.csv c.ald
	fmt-convert c.ald c.arrow
	cmp a.arrow c.arrow
	printf 'one\n1\n2\n' >one.csv
	run fmt-convert --from csv one.csv x.ald
	assert_success
	run fmt-convert --from nosuch one.csv y.ald
	assert_failure 2
}

@test "Arrow IPC: columns of types fmtkit does not convert are stepped over: --exclude reads the others, fmt-verify checks them; broken ones are refused" {
	# scripts/gen/arrow-unconverted: apache-arrow's null, dictionary, list, struct, map, union,
	# date64, interval... columns around id, name and score, two batches (and, in the stream,
	# two dictionary batches before them)
	local f kind drop=() c
	for c in nul dict list st d64 lb fsl map dur su du iv tm fsb deep ldict; do drop+=(--exclude "$c"); done
	for f in unconverted.arrow:arrow unconverted.arrows:arrow-stream; do
		kind=${f#*:} f=${f%:*}
		run --separate-stderr fmt-convert --force "$REPO_ROOT/tests/data/arrow/$f" out.csv
		assert_failure 5
		assert_equal "$stderr" "fmt-convert: error: $REPO_ROOT/tests/data/arrow/$f: column 'nul' has type null, which fmtkit does not convert"
		fmt-convert -q --force "${drop[@]}" "$REPO_ROOT/tests/data/arrow/$f" out.csv
		assert_equal "$(cat out.csv)" "$(printf 'id,name,score\n1,one,0.5\n2,two,1.5\n,three,2.5\n4,,\n1,one,0.5\n2,two,1.5\n,three,2.5\n4,,')"
		fmt-convert -q --force --include id --include score "$REPO_ROOT/tests/data/arrow/$f" out.jsonl
		assert_equal "$(head -n 1 out.jsonl)" '{"id":1,"score":0.5}'
		run fmt-verify "$REPO_ROOT/tests/data/arrow/$f"
		assert_success
		assert_output "$REPO_ROOT/tests/data/arrow/$f: ok ($kind, 8 rows)"
		run --separate-stderr fmt-inspect --head 3 "$REPO_ROOT/tests/data/arrow/$f"
		assert_success
		assert_output "$(printf 'id    name   score\n1     one    0.5\n2     two    1.5\nnull  three  2.5')"
		assert_equal "$stderr" "fmt-inspect: warning: $REPO_ROOT/tests/data/arrow/$f: 16 columns of a type fmtkit does not convert left out: 'nul' (null), 'dict' (dictionary<utf8>), 'list' (list), 'st' (struct), 'd64' (date64), 'lb' (large_binary) and 10 more"
	done
	cp "$REPO_ROOT/tests/data/arrow/unconverted.arrows" .
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
from arrow_ipc import Ipc
ipc = lambda: Ipc("unconverted.arrows")
nul = ipc().schema_field(1)                               # fields[1], 'nul'
ipc().put("<B", ipc().field(nul, 2), 99).save("type99.arrows")  # its type id: none Arrow defines
batch, _ = next(ipc().batches())                          # the first RecordBatch
ipc().put("<q", ipc().nodes(batch) + 16 * 3, 3).save("rows.arrows")  # node 3, 'list': 3 rows of 4
ipc().put("<q", ipc().buffers(batch) + 16 * 7, 1 << 40).save("buffer.arrows")  # buffer 7: the list's items' values
PY
	for c in "rows field \"list\" has 3 rows, the batch 4" "buffer buffer outside the message body"; do
		f=${c%% *}.arrows
		run --separate-stderr fmt-verify "$f"
		[ "$status" -eq 4 ] || fail "$f: exit $status: $stderr"
		run --separate-stderr fmt-convert -q --force "${drop[@]}" "$f" out.csv
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: $f: Arrow IPC: ${c#* }"
	done
	# a list nested 70 deep: past the 64 levels whose buffers are counted, the rows are refused
	run --separate-stderr fmt-convert -q --force --exclude deep "$REPO_ROOT/tests/data/arrow/deep70.arrows" out.csv
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: $REPO_ROOT/tests/data/arrow/deep70.arrows: Arrow IPC: column 'deep' (list): fmtkit cannot count its buffers to step over it"
	# a stream whose only dictionary is nested (a list of dictionary-encoded strings): its
	# dictionary batch is passed by too
	run --separate-stderr fmt-convert -q --exclude ld --to csv "$REPO_ROOT/tests/data/arrow/nested-dict.arrows" -
	assert_success
	assert_output "$(printf 'id\n1\n2\n3')"
	run fmt-inspect --json "$REPO_ROOT/tests/data/arrow/nested-dict.arrows"
	assert_equal "$(jq -c '[.rows, .["arrow-stream"].record_batches]' <<<"$output")" '[3,1]'
	# nothing fmtkit converts: nothing to show, the error alone
	run --separate-stderr fmt-inspect --head 2 "$REPO_ROOT/tests/data/arrow/only-list.arrow"
	assert_failure 5
	assert_equal "$stderr" "fmt-inspect: error: $REPO_ROOT/tests/data/arrow/only-list.arrow: no column has a type fmtkit converts (the first: 'list', list)"
	run --separate-stderr fmt-inspect --schema type99.arrows
	assert_success
	assert_line --index 2 "  nul  type id 99  not null  (not converted by fmtkit)"
	run --separate-stderr fmt-convert -q --force "${drop[@]}" type99.arrows out.csv
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: type99.arrows: Arrow IPC: column 'nul' (type id 99): fmtkit cannot count its buffers to step over it"
}

@test "Arrow IPC: record batches compressed buffer by buffer (LZ4 frame, zstd) are read and written (-c); a broken buffer or its length is refused" {
	# scripts/gen/arrow-compressed: apache-arrow's batches of 3000 and 1000 rows (int32 and
	# strings with nulls, float64, bool, a list), LZ4 frames in the file, zstd in the stream
	local f
	for f in lz4.arrow zstd.arrows; do
		run fmt-verify "$REPO_ROOT/tests/data/arrow/$f"
		assert_success
		assert_output --partial ", 4000 rows)"
		fmt-convert -q --force --exclude list "$REPO_ROOT/tests/data/arrow/$f" "$f.csv"
	done
	cmp lz4.arrow.csv zstd.arrows.csv
	assert_equal "$(sha256sum <lz4.arrow.csv)" "ef0494ec294ec5130f6993c0b4590f6ba16d1df6617296c423f931d63b201610  -"
	assert_equal "$(sed -n '2,5p' lz4.arrow.csv)" "$(printf '0,one,0.0,true\n1,two,0.25,false\n2,three,0.5,false\n,,0.75,true')"
	assert_equal "$(sed -n '4001p' lz4.arrow.csv)" "999,\"$(printf 'a longer string, repeated: %.0s' 1 2 3 4 5 6 7 8)\",249.75,true"
	run --separate-stderr fmt-inspect --head 2 "$REPO_ROOT/tests/data/arrow/zstd.arrows"
	assert_output "$(printf 'id  name  x     ok\n0   one   0.0   true\n1   two   0.25  false')"
	# -c writes them: each batch names its codec, a buffer that does not shrink is stored (-1),
	# and the rows come back byte for byte
	fmt-convert -q lz4.arrow.csv plain.arrow
	for c in lz4:arrow zstd:arrows zstd:9:arrow zstd-max:arrows lz4:9:arrow; do
		fmt-convert -q -c "${c%:*}" lz4.arrow.csv "w.${c##*:}"
		run fmt-verify "w.${c##*:}"
		assert_success
		fmt-convert -q --force "w.${c##*:}" back.csv
		cmp lz4.arrow.csv back.csv
		PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - "w.${c##*:}" "${c%%:*}" <<'PY'
import os, struct, sys
from arrow_ipc import Ipc
i = Ipc(sys.argv[1])
for batch, body in i.batches():
    comp = i.ref(i.field(batch, 3))
    codec = i.b[i.field(comp, 0)] if i.field(comp, 0) else 0   # LZ4_FRAME is the default
    assert codec == {"lz4": 0, "zstd": 1, "zstd-max": 1}[sys.argv[2]], codec
    lengths = [struct.unpack_from("<qq", i.b, i.buffers(batch) + 16 * k) for k in range(i.u32(i.buffers(batch) - 4))]
    prefixes = [struct.unpack_from("<q", i.b, body + off)[0] for off, n in lengths if n]
    assert prefixes and all(p > 0 for p in prefixes), prefixes   # all compressed: lengths
assert os.path.getsize(sys.argv[1]) < os.path.getsize("plain.arrow") / 3
PY
		rm "w.${c##*:}"
	done
	# 64 random doubles do not shrink under LZ4: that buffer is stored, its length -1
	/usr/bin/python3 -c 'import random; random.seed(5); print("r"); [print(repr(random.random())) for _ in range(64)]' >r.csv
	fmt-convert -q -c lz4 r.csv r.arrow
	fmt-convert -q r.arrow r-back.csv
	cmp r.csv r-back.csv
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
import struct
from arrow_ipc import Ipc
i = Ipc("r.arrow")
batch, body = next(i.batches())
off, n = struct.unpack_from("<qq", i.b, i.buffers(batch) + 16)   # buffer 1: the values
assert n == 8 + 64 * 8 and struct.unpack_from("<q", i.b, body + off)[0] == -1, (n, off)
PY
	run --separate-stderr fmt-convert -q -c gzip lz4.arrow.csv w.arrow
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: --compression takes none (default), lz4[:1-12], zstd[:1-22] or zstd-max for Arrow IPC"
	# apache-arrow 21 writes a buffer's compressed length where its uncompressed length goes
	run --separate-stderr fmt-verify "$REPO_ROOT/tests/data/arrow/js-prefix.arrows"
	assert_failure 4
	assert_equal "$stderr" "fmt-verify: error: $REPO_ROOT/tests/data/arrow/js-prefix.arrows: Arrow IPC: a compressed buffer decompresses to more than the 33 bytes its length says"
	cp "$REPO_ROOT/tests/data/arrow/zstd.arrows" "$REPO_ROOT/tests/data/arrow/lz4.arrow" .
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
from arrow_ipc import Ipc
def broken(name, fmt, where, value, source="zstd.arrows"):
    i = Ipc(source)
    batch, body = next(i.batches())
    at = where(i, batch, body)
    i.put(fmt, at, value).save(name)
values = lambda i, batch, body: body + 48        # buffer 1, id's values: 12000 bytes
broken("longer.arrows", "<q", values, 12001)
broken("negative.arrows", "<q", values, -2)
broken("huge.arrows", "<q", values, 1 << 40)
broken("cut.arrows", "<q", lambda i, batch, body: i.buffers(batch) + 16 * 4 + 8, 72)  # buffer 4 cut to 72 of 82 bytes
broken("codec.arrows", "<B", lambda i, batch, body: i.field(i.ref(i.field(batch, 3)), 0), 7)
broken("shorter.arrow", "<q", lambda i, batch, body: body + 56, 11999, "lz4.arrow")  # its buffer 1
broken("cut.arrow", "<q", lambda i, batch, body: i.buffers(batch) + 16 * 4 + 8, 659, "lz4.arrow")  # of 669
PY
	local want
	while IFS='|' read -r f want msg; do
		run --separate-stderr fmt-convert -q --force --exclude list "$f" out.csv
		assert_failure "$want"
		assert_equal "$stderr" "fmt-convert: error: $f: Arrow IPC: $msg"
	done <<'EOF2'
longer.arrows|4|a compressed buffer decompresses to 12000 bytes, its length says 12001
negative.arrows|4|a compressed buffer of a negative length
huge.arrows|4|field "id": a compressed buffer says it holds 1099511627776 bytes, where the record batch's rows use 12375 so far (its buffers may hold 8 times that and 16 MiB)
cut.arrows|4|a compressed buffer: zstd: Src size is incorrect
codec.arrows|5|buffer compression codec 7 is not supported (LZ4_FRAME, ZSTD are)
shorter.arrow|4|a compressed buffer decompresses to more than the 11999 bytes its length says
cut.arrow|4|a compressed buffer is not one whole LZ4 frame
EOF2
}

@test "fmt-inspect of an Arrow file or stream: its rows, record batches and their codec, from the batches' headers alone" {
	awk 'BEGIN { print "id,s"; for (i = 0; i < 150000; i++) printf "%d,s%d\n", i, i % 7 }' >r.csv
	local c
	for c in none lz4 zstd; do
		fmt-convert -q -c $c r.csv $c.arrow
		fmt-convert -q -c $c r.csv $c.arrows
		run fmt-inspect --json $c.arrow
		assert_success
		assert_equal "$(jq -c '[.rows, .arrow]' <<<"$output")" "[150000,{\"ipc\":\"file\",\"record_batches\":3,\"compression\":\"$c\"}]"
		run fmt-inspect --json $c.arrows
		assert_equal "$(jq -c '[.rows, .["arrow-stream"]]' <<<"$output")" "[150000,{\"ipc\":\"stream\",\"record_batches\":3,\"compression\":\"$c\"}]"
	done
	run fmt-inspect zstd.arrows
	assert_success
	assert_output "$(printf 'file: zstd.arrows\nformat: arrow-stream\nrows: 150000\nipc: stream\nrecord_batches: 3\ncompression: zstd\nschema (2 columns):\n  id  int64  not null\n  s  utf8  not null')"
	# no body is read: with every body byte overwritten (each buffer then says -1, "stored as it
	# is", 8 bytes short) the report is the same, the rows are refused
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
import struct
from arrow_ipc import Ipc
def spans(path):
    """(start, end) of each record batch message and the stream's Schema message's end."""
    i = Ipc(path)
    out, schema_end = [], None
    for start, end, kind in i.framed():
        if kind == 1:
            schema_end = end
        elif kind == 3:
            out.append((start, end))
    return i, schema_end, out
i, _, batches = spans("zstd.arrows")
for root, kind, body in i.messages():
    if kind == 3:
        n = struct.unpack_from("<q", i.b, i.field(root, 3))[0]
        i.b[body:body + n] = b"\xff" * n
i.save("bodies.arrows")
# the first two batches of the plain stream, the last of the zstd one: "mixed"
a, schema_end, plain = spans("none.arrows")
b, _, packed = spans("zstd.arrows")
open("mixed.arrows", "wb").write(a.b[:plain[1][1]] + b.b[packed[2][0]:packed[2][1]] + b"\xff\xff\xff\xff\0\0\0\0")
# the second batch of the zstd file names codec 7: its header is refused
z = Ipc("zstd.arrow")
batch = [bt for bt, body in z.batches()][1]
z.put("<B", z.field(z.ref(z.field(batch, 3)), 0), 7).save("codec7.arrow")
PY
	run fmt-inspect --json bodies.arrows
	assert_success
	assert_equal "$(jq -c '[.rows, .["arrow-stream"]]' <<<"$output")" '[150000,{"ipc":"stream","record_batches":3,"compression":"zstd"}]'
	run --separate-stderr fmt-inspect --head 1 bodies.arrows
	assert_failure 4
	assert_equal "$stderr" "fmt-inspect: error: bodies.arrows: Arrow IPC: field \"id\": values buffer too short"
	run fmt-inspect --json mixed.arrows
	assert_equal "$(jq -c '[.rows, .["arrow-stream"]]' <<<"$output")" '[150000,{"ipc":"stream","record_batches":3,"compression":"mixed"}]'
	fmt-convert -q mixed.arrows mixed.csv
	cmp r.csv mixed.csv
	# a header the reader refuses: no rows or codec claimed; reading the rows says why
	run fmt-inspect --json codec7.arrow
	assert_success
	assert_equal "$(jq -c '[.rows, .arrow]' <<<"$output")" '[null,{"ipc":"file","record_batches":3}]'
	run --separate-stderr fmt-inspect --head 65537 codec7.arrow
	assert_failure 5
	assert_equal "$stderr" "fmt-inspect: error: codec7.arrow: Arrow IPC: buffer compression codec 7 is not supported (LZ4_FRAME, ZSTD are)"
}

@test "floats: every power of two and random values of float64, float32 and float16 are written as Python's repr (numpy's for the narrower types)" {
	# a power of two's rounding interval reaches twice as far above as below: its shortest
	# decimal can be farther than the nearest decimal of as many digits (2^-1074 ... 2^1023)
	/usr/bin/python3 - <<'PY'
import random, struct
import numpy as np
random.seed(26)
def write(name, values):
    open(name, "w").write("v\n" + "".join(v + "\n" for v in values))
d = [2.0 ** e for e in range(-1074, 1024)]
d += [struct.unpack("<d", struct.pack("<Q", random.getrandbits(64) & ~(0x7ff << 52) | random.randrange(2047) << 52))[0] for _ in range(20000)]
write("f64.csv", [repr(v) for v in d] + [repr(-v) for v in d[:2098]])
f = [np.float32(2.0 ** e) for e in range(-149, 128)]
f += list(np.frombuffer(np.array([random.getrandbits(32) & ~(0xff << 23) | random.randrange(255) << 23 for _ in range(20000)], dtype=np.uint32).tobytes(), dtype=np.float32))
write("f32.csv", [repr(v) for v in f] + [repr(-v) for v in f[:277]])
h = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
write("f16.csv", [repr(v) for v in h if np.isfinite(v)])
PY
	assert_equal "$(sed -n '2p;1076p;2099p' f64.csv)" "$(printf '5e-324\n1.0\n8.98846567431158e+307')"
	local t
	for t in f64:float64 f32:float32 f16:float16; do
		echo "{\"v\":\"${t#*:}\"}" >s.json
		fmt-convert -q --schema s.json ${t%:*}.csv ${t%:*}.ald
		run fmt-inspect --schema ${t%:*}.ald
		assert_output "$(printf 'schema (1 column):\n  v  %s  not null' "${t#*:}")"
		fmt-convert -q --force ${t%:*}.ald back.csv
		cmp ${t%:*}.csv back.csv
	done
	assert_equal "$(wc -l <f16.csv)" 63489
}

@test ".ald: row counts of the header or the chunk index that the payload contradicts are exit 4 once the rows are read" {
	awk 'BEGIN { print "id,s"; for (i = 0; i < 12; i++) printf "%d,s%d\n", i, i }' >t.csv
	fmt-convert -q --compression none t.csv plain.ald
	fmt-convert -q t.csv zstd.ald
	fmt-convert -q --chunk-rows 4 t.csv chunks.ald
	/usr/bin/python3 - <<'PY'
import struct, zlib
def patch(src, dst, edits):
    d = bytearray(open(src, "rb").read())
    for fmt, at, v in edits:
        struct.pack_into(fmt, d, at, v)
    d[-4:] = struct.pack("<I", zlib.crc32(bytes(d[:-4])))   # the CRC made right again
    open(dst, "wb").write(d)
for src in ("plain", "zstd"):
    patch(src + ".ald", src + "-14.ald", [("<Q", 24, 14)])   # the header's num_rows
    patch(src + ".ald", src + "-10.ald", [("<Q", 24, 10)])
d = open("chunks.ald", "rb").read()
at = 32 + struct.unpack_from("<I", d, 8)[0] + struct.unpack_from("<H", d, 22)[0]
assert struct.unpack_from("<I", d, at)[0] == 3
e0, e1 = at + 4, at + 4 + 28   # entries: row offset u64, rows u32, byte offset u64, sizes
assert struct.unpack_from("<QI", d, e1) == (4, 4)
patch("chunks.ald", "chunk-3.ald", [("<I", e0 + 8, 3), ("<Q", e1, 3), ("<I", e1 + 8, 5)])
patch("chunks.ald", "chunk-5.ald", [("<I", e0 + 8, 5), ("<Q", e1, 5), ("<I", e1 + 8, 3)])
PY
	local f msg
	while IFS='|' read -r f msg; do
		run --separate-stderr fmt-verify "$f"
		assert_failure 4
		assert_equal "$stderr" "fmt-verify: error: $f: $msg"
		run --separate-stderr fmt-convert -q "$f" out.csv
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: $f: $msg"
		[ ! -e out.csv ]
	done <<'EOF2'
plain-14.ald|the payload holds 12 rows, the header says 14
zstd-14.ald|the payload holds 12 rows, the header says 14
plain-10.ald|the payload holds more rows than the 10 the header says
zstd-10.ald|the payload holds more rows than the 10 the header says
chunk-3.ald|chunk 0 holds more rows than the 3 its index entry says
chunk-5.ald|chunk 0 holds 4 rows, its index entry says 5
EOF2
	# the header's count is what fmt-inspect reports without reading; the originals pass
	run fmt-inspect --json plain-14.ald
	assert_success
	assert_equal "$(jq .rows <<<"$output")" 14
	for f in plain zstd chunks; do
		run fmt-verify $f.ald
		assert_success
		assert_output "$f.ald: ok (ald, 12 rows, CRC-32 ieee)"
	done
}

@test "usage: dataset options with a model output, .ald to stdout, an existing output, --dry-run" {
	run fmt-convert --delimiter ';' in.csv out.safetensors
	assert_failure 2
	assert_output --partial "dataset options need a dataset output"
	# --compression is every writer's: its values are the output format's
	run fmt-convert --compression lz4 in.csv out.safetensors
	assert_failure 2
	assert_output --partial "--compression: safetensors output is not compressed"
	run fmt-convert in.csv - --to ald
	assert_failure 2
	assert_output --partial ".ald cannot be written to standard output"
	touch exists.ald
	run fmt-convert in.csv exists.ald
	assert_failure 2
	[ ! -s exists.ald ]
	run fmt-convert --dry-run in.csv dry.ald
	assert_success
	assert_line --index 0 "in.csv (csv) -> dry.ald (ald), 3 rows"
	[ ! -e dry.ald ]
	run fmt-convert --json --dry-run in.csv dry.ald
	assert_output --partial '"from":"csv","to":"ald","dry_run":true'
	run fmt-convert "$EXAMPLE" "$EXAMPLE" --to ald -f
	assert_failure 2
}

@test "--from names a table format of the registry; another word is exit 2 listing them all, nothing written" {
	printf 'a,b\n1,2\n' >in.csv
	run --separate-stderr fmt-convert --from parquet-ish in.csv out.ald
	assert_failure 2
	assert_equal "${stderr_lines[0]}" "fmt-convert: error: --from takes ald, arrow, arrow-stream, jsonl, csv or parquet (not 'parquet-ish')"
	[ ! -e out.ald ]
	run fmt-convert --from csv in.csv out.jsonl
	assert_success
	assert_equal "$(cat out.jsonl)" '{"a":1,"b":2}'
}

@test "--compat alimentar: the card keys its positional array has no place for are named in a warning, exit 0; -q silent; --json a warning object (old: dropped without a word)" {
	local fields="alimentar's card array holds only name, version, license, tags, description, citation and created_at"
	cat >card.json <<-'EOF2'
	{"name": "tiny", "version": "1.0.0", "license": "MIT", "tags": ["demo"], "intended_uses": [],
	 "sources": [{"name": "hand", "url": "https://example.org"}],
	 "columns": [{"name": "id", "description": "row id"}], "compliance": {"pii_status": "none"}}
	EOF2
	run --separate-stderr fmt-convert --compat alimentar --card card.json in.csv c.ald
	assert_success
	assert_output ''
	assert_equal "$stderr" "fmt-convert: warning: c.ald: --compat alimentar: the card's \"sources\", \"columns\" and \"compliance\" are left out ($fields)"
	# the bytes are those written before: only the warning is new (an empty list is no loss)
	assert_equal "$(jq_field c.ald ald.card_form ald.card.name)" '"array"
"tiny"'
	run --separate-stderr fmt-convert --json --compat alimentar --card card.json in.csv c2.ald
	assert_success
	assert_equal "$(jq -c '[.output, .rows]' <<<"$output")" '["c2.ald",3]'
	assert_equal "$stderr" "$(jq -nc --arg m "c2.ald: --compat alimentar: the card's \"sources\", \"columns\" and \"compliance\" are left out ($fields)" \
		'{tool:"fmt-convert",level:"warning",file:null,message:$m}')"
	cmp c.ald c2.ald
	run --separate-stderr fmt-convert -q --compat alimentar --card card.json in.csv c3.ald
	assert_success
	assert_equal "$stderr" ''
	cmp c.ald c3.ald
	# a card the array holds whole, or none: no warning
	printf '{"name": "n", "tags": ["a"], "citation": "c", "created_at": "2024-01-01"}\n' >fits.json
	run --separate-stderr fmt-convert --compat alimentar --card fits.json in.csv f.ald
	assert_success
	assert_equal "$stderr" ''
	run --separate-stderr fmt-convert --compat alimentar in.csv n.ald
	assert_success
	assert_equal "$stderr" ''
	# the card carried from an .ald input (in its order; an unknown key too), seven keys: five
	# named and the count
	fmt-convert --card card.json in.csv d.ald
	recard d.ald u.ald 'dict(card, homepage="h", limitations=["l"], query_protocol="p", query_pub_key="k")'
	run --separate-stderr fmt-convert --compat alimentar u.ald u2.ald
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: u2.ald: --compat alimentar: the card's \"sources\", \"columns\", \"compliance\", \"homepage\", \"limitations\" and 2 more are left out ($fields)"
	# one key: "is"; a conversion started again (-T 1 types a CSV from its first 2 MiB, a later
	# row says otherwise: the writer had begun) warns once
	printf '{"name": "one", "sources": [{"name": "s"}]}\n' >one.json
	{ echo 'a'; seq 1 400000; echo 'x'; } >big.csv
	run --separate-stderr fmt-convert -T 1 --compat alimentar --card one.json big.csv b.ald
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: b.ald: --compat alimentar: the card's \"sources\" is left out ($fields)"
	assert_equal "$(jq_field b.ald ald.card.name schema.fields.0.type)" '"one"
"utf8"'
	# a conversion that fails (in a row after the writer began) says nothing of it
	{ echo 'a'; seq 1 400000; echo '"x'; } >bad.csv
	run --separate-stderr fmt-convert -T 1 --compat alimentar --card one.json bad.csv bad.ald
	assert_failure 4
	assert_equal "$stderr" 'fmt-convert: error: bad.csv: line 400002, column 1: a quoted field is not closed'
	[ ! -e bad.ald ]
}

# tests/data/arrow/no-columns.arrow (1,269 bytes, found by fuzz_driver): an Arrow IPC file of no
# columns and one batch of 12,884,901,891 rows. Such rows cost the file nothing; as CSV or JSON
# Lines they were 12.9 GB of empty lines, exit 0. Text output is refused at the first batch with
# rows (exit 5, nothing written: ulimit -f keeps the old binary from filling the disk); the file
# itself is valid Arrow and still verifies and converts to Arrow.
@test "no columns and 2^33+3 rows in 1,269 bytes: CSV and JSON Lines refused (exit 5), nothing written; fmt-verify ok" {
	local f="$REPO_ROOT/tests/data/arrow/no-columns.arrow"
	for out in x.csv x.jsonl; do
		run --separate-stderr bash -c "ulimit -f 2048; fmt-convert '$f' $out"
		assert_failure 5
		assert_equal "$stderr" "fmt-convert: error: $f: the table has no columns: its rows (12884901891 in the first batch) have no text to write"
		[ ! -e "$out" ]
	done
	run --separate-stderr fmt-verify "$f"
	assert_success
	assert_equal "$output" "$f: ok (arrow, 12884901891 rows)"
	run --separate-stderr bash -c "ulimit -f 2048; fmt-convert '$f' x.arrow"
	assert_success
	[ "$(stat -c %s x.arrow)" -lt 4096 ]
}
