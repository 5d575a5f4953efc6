#!/usr/bin/env bats
# The CSV reader's fast paths (issue 24): the 64-byte block scan of each level (FMTKIT_CSV_SCAN),
# digits eight at a time, builders without a validity bitmap until the first null, and the Parquet
# writer's one-copy path for batches without nulls. Each gives the bytes and values of the
# general path, and hostile input is refused as before.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	BLOCKS="$BATS_FILE_TMPDIR/blocks.csv"
	BAD="$BATS_FILE_TMPDIR/bad.csv"
	export BLOCKS BAD
	# 72,000 rows: two batches of 65,536 rows, fields of every length 0..200
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/csv-scan-blocks" "$BLOCKS" 72000
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/csv-scan-blocks" "$BAD" 72000 bad >"$BATS_FILE_TMPDIR/bad.line"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

# stats_check CSV TSV PYTHON: PYTHON run with rows (the CSV's, as dicts) and stats
# (stats[column][key] from parquet_stats's TSV); it exits non-zero on a mismatch
stats_check() {
	/usr/bin/python3 -c "import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
stats = {}
for line in open(sys.argv[2]):
    col, key, value = line.rstrip('\n').split('\t')
    stats.setdefault(col, {})[key] = value
$3" "$1" "$2"
}

# parquet_stats FILE: "column<TAB>key<TAB>value" for each column chunk's encodings, null_count,
# min and max as fmt-inspect prints them
parquet_stats() {
	fmt-inspect "$1" | awk '/^      [^ ].*:$/ { col = substr($1, 1, length($1) - 1) }
		/^        (encodings|null_count|min|max): / { key = $1; sub(/:$/, "", key); value = $0
			sub(/^ *[a-z_]+: /, "", value); print col "\t" key "\t" value }'
}

@test "every byte scan (portable, SSE2, AVX2, AVX-512 where the CPU has it) and -T 1, 3: the CSV back byte for byte, the same Parquet and .ald" {
	run fmt-inspect "$BLOCKS"
	assert_success
	assert_line "rows: 72000"
	assert_line "  n  int64"
	assert_line "  m  int64"
	assert_line "  x  float64  not null"
	assert_line "  quoted  utf8  not null"
	FMTKIT_CSV_SCAN=portable fmt-convert -q -T 1 "$BLOCKS" ref.parquet
	FMTKIT_CSV_SCAN=portable fmt-convert -q -T 1 "$BLOCKS" ref.ald
	for scan in portable sse2 avx2 avx512; do
		for t in 1 3; do
			FMTKIT_CSV_SCAN=$scan fmt-convert -q -T "$t" "$BLOCKS" "$scan-$t.csv"
			cmp "$BLOCKS" "$scan-$t.csv" || fail "$scan -T $t: the CSV does not come back"
		done
		FMTKIT_CSV_SCAN=$scan fmt-convert -q -T 2 "$BLOCKS" "$scan.parquet"
		cmp ref.parquet "$scan.parquet" || fail "$scan: other Parquet bytes"
		FMTKIT_CSV_SCAN=$scan fmt-convert -q -T 2 "$BLOCKS" "$scan.ald"
		cmp ref.ald "$scan.ald" || fail "$scan: other .ald bytes"
	done
	# the values, nulls included, through both
	fmt-convert -q ref.parquet from-parquet.csv
	cmp "$BLOCKS" from-parquet.csv
	fmt-convert -q ref.ald from-ald.csv
	cmp "$BLOCKS" from-ald.csv
}

@test "Parquet: batches without a validity bitmap (from CSV) and with one (from Parquet) give the same bytes and exact statistics" {
	fmt-convert -q "$BLOCKS" a.parquet
	fmt-convert -q a.parquet b.parquet
	cmp a.parquet b.parquet
	# each column's null count, min and max against Python's reading of the CSV
	parquet_stats a.parquet >stats.tsv
	stats_check "$BLOCKS" stats.tsv '
for name, conv in (("id", int), ("n", int), ("m", int), ("x", float)):
    vals = [conv(r[name]) for r in rows if r[name] != ""]
    got = stats[name]
    want = (str(len(rows) - len(vals)), min(vals), max(vals))
    have = (got["null_count"], conv(got["min"]), conv(got["max"]))
    if have != want:
        sys.exit(f"{name}: {have} != {want}")
'
}

@test "Parquet statistics of a float column without nulls: NaN skipped, a zero minimum -0.0 and a zero maximum 0.0" {
	awk 'BEGIN { print "a,b,c"; for (i = 1; i <= 5000; i++) printf "%s,nan,%d.5\n", (i % 3 ? "-0.0" : "0.0"), i % 7 - 3 }' >z.csv
	fmt-convert -q z.csv z.parquet
	fmt-convert -q z.parquet z2.parquet
	cmp z.parquet z2.parquet
	# an all-NaN column has no min or max
	parquet_stats z.parquet >stats.tsv
	run grep -E '	(min|max)	' stats.tsv
	assert_output "$(printf 'a\tmin\t-0.0\na\tmax\t0.0\nc\tmin\t-3.5\nc\tmax\t3.5')"
}

@test "a quote 100 bytes into a 150-byte unquoted field: exit 4, the same message for every scan and -T, nothing written" {
	line=$(cat "$BATS_FILE_TMPDIR/bad.line")
	for scan in portable avx2 avx512; do
		for t in 1 2; do
			run env FMTKIT_CSV_SCAN=$scan fmt-convert -T "$t" "$BAD" "out-$scan-$t.parquet"
			assert_failure 4
			assert_output "fmt-convert: error: $BAD: line $line, column 2: a quote inside an unquoted field"
			nothing_written "out-$scan-$t.parquet"
		done
	done
}

@test "integers and floats read eight digits at a time: the same values and refusals as digit by digit" {
	# 19 and 20 digits, leading zeros before and after the point, 8-digit runs broken by a letter
	# (the floats are Python's float() of the same text)
	cat >d.csv <<'EOF'
i,f
9223372036854775807,0.00000000123456789012345678
-9223372036854775808,12345678.87654321
0000000012345678,00000000.1234567890123456789
12345678,123456789012345678.5
-00000000000000001,1e22
EOF
	run fmt-convert -q d.csv d.jsonl
	assert_success
	run cat d.jsonl
	assert_output - <<'EOF'
{"i":9223372036854775807,"f":1.2345678901234568e-09}
{"i":-9223372036854775808,"f":12345678.87654321}
{"i":12345678,"f":0.12345678901234568}
{"i":12345678,"f":1.2345678901234568e+17}
{"i":-1,"f":1e+22}
EOF
	printf 'i\n9223372036854775808\n' >over.csv
	run fmt-inspect over.csv
	assert_success
	assert_line "  i  uint64  not null"
	printf 'i\n12345678a\n' >letter.csv
	run fmt-inspect letter.csv
	assert_line "  i  utf8  not null"
	printf '{"i": "int64"}\n' >schema.json
	printf 'i\n1\n1234567a9\n' >badint.csv
	run fmt-convert --schema schema.json badint.csv bad.parquet
	assert_failure 4
	assert_output "fmt-convert: error: badint.csv: line 3, column 1: \"1234567a9\" is not an int64"
	nothing_written bad.parquet
}

@test "Parquet string statistics taken from the dictionary: one that stays on, one over 1 MiB, one of distinct values" {
	# s: 720-byte values each twice (the dictionary passes 1 MiB), t: 30 values (it stays on),
	# u: all distinct (it goes off after 4,096)
	/usr/bin/python3 -c '
import random
r = random.Random(5)
print("s,t,u")
for i in range(6000):
    k = (i // 2) % 2400
    print(f"{(chr(97 + k % 26) + str(k).zfill(5)) * 120},w{r.randint(0, 29)},u{i * 7919 % 6007}x")
' >dict.csv
	fmt-convert -q dict.csv dict.parquet
	parquet_stats dict.parquet >stats.tsv
	stats_check dict.csv stats.tsv '
want_dict = {"s": False, "t": True, "u": False}
for name in "stu":
    vals = [r[name] for r in rows]
    got = stats[name]
    if (got["min"], got["max"]) != (min(vals), max(vals)):
        sys.exit(f"{name}: {got}")
    if ("RLE_DICTIONARY" in got["encodings"]) != want_dict[name]:
        sys.exit(f"{name}: encodings {got}")
'
}
