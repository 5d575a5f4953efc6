#!/usr/bin/env bats
# CSV read on several threads (-T) and with each byte scan (FMTKIT_CSV_SCAN): the same types,
# rows, bytes and first error as one thread with the portable scan, whatever the split points hit
# (quoted line feeds, CRLF, empty lines, doubled quotes) and on malformed files.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	EDGES="$BATS_FILE_TMPDIR/edges.csv"
	BAD="$BATS_FILE_TMPDIR/bad.csv"
	export EDGES BAD
	# 150,000 rows (8 MB): batches cut at each 2 MiB of text, several chunks per thread count
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/csv-chunk-edges" "$EDGES" 150000
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/csv-chunk-edges" "$BAD" 150000 bad >"$BATS_FILE_TMPDIR/bad.line"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

@test "the split points of -T 2, 3, 5 and 8 fall inside quoted fields of the test file" {
	run /usr/bin/python3 "$REPO_ROOT/scripts/gen/csv-chunk-edges" --inside "$EDGES" 2 3 5 8
	assert_success
	[ "$output" -ge 2 ] || fail "only $output split points inside quotes"
}

@test "-T 1, 2, 3, 5, 8: the same schema, rows and output bytes (CSV, .ald, Parquet, JSON Lines)" {
	run fmt-inspect "$EDGES"
	assert_success
	assert_line "rows: 150000"
	assert_line "  id  int64  not null"
	assert_line "  x  float64"
	assert_line "  flag  bool"
	assert_line "  when  timestamp[s]  not null"
	assert_line "  text  utf8  not null"
	for ext in csv ald parquet jsonl; do
		FMTKIT_CSV_SCAN=portable fmt-convert -q -T 1 "$EDGES" "one.$ext"
		for t in 2 3 5 8; do
			fmt-convert -q -T "$t" "$EDGES" "t$t.$ext"
			cmp "one.$ext" "t$t.$ext" || fail "-T $t gives other $ext bytes"
		done
	done
	# the text survives: the JSON Lines read back as CSV give the CSV fmt-convert wrote
	fmt-convert -q -T 3 one.jsonl back.csv
	cmp one.csv back.csv
	run fmt-convert -q -T 1 one.csv again.csv
	assert_success
	cmp one.csv again.csv
}

@test "each byte scan (portable, SSE2, AVX2 where the CPU has it) gives the same bytes" {
	FMTKIT_CSV_SCAN=portable fmt-convert -q -T 1 "$EDGES" portable.csv
	for scan in sse2 avx2; do
		for t in 1 4; do
			FMTKIT_CSV_SCAN=$scan fmt-convert -q -T "$t" "$EDGES" "$scan-$t.csv"
			cmp portable.csv "$scan-$t.csv" || fail "$scan -T $t differs"
		done
	done
	# writing: fields that need quotes are found by the same scan
	for scan in portable sse2 avx2; do
		FMTKIT_CSV_SCAN=$scan fmt-convert -q -T 2 portable.csv "w-$scan.csv"
	done
	cmp w-portable.csv w-sse2.csv
	cmp w-portable.csv w-avx2.csv
	cmp portable.csv w-avx2.csv
}

@test "a stray quote two thirds in: exit 4, the same message for every -T, nothing written" {
	line=$(cat "$BATS_FILE_TMPDIR/bad.line")
	for t in 1 2 3 5 8; do
		run fmt-convert -T "$t" "$BAD" "out$t.ald"
		assert_failure 4
		assert_output "fmt-convert: error: $BAD: line $line, column 5: a quote inside an unquoted field"
		nothing_written "out$t.ald"
	done
}

@test "an unclosed quote followed by thousands of records: the same error for every -T" {
	{
		echo "a,b"
		seq 20000 | sed 's/.*/&,t&/'
		echo '1,"unclosed'
		seq 20000 | sed 's/.*/&,u&/'
	} >u.csv
	for t in 1 2 4 7; do
		run fmt-convert -T "$t" u.csv "u$t.jsonl"
		assert_failure 4
		assert_output "fmt-convert: error: u.csv: line 20002, column 2: a quoted field is not closed"
		nothing_written "u$t.jsonl"
	done
}

@test "one quoted field of 200,000 lines across every split point: the same rows for every -T" {
	{
		echo "a,b"
		seq 20000 | sed 's/.*/&,t&/'
		echo '1,"clo'
		seq 200000 | sed 's/^/u/'
		echo 'sed"'
		seq 20000 | sed 's/.*/&,t&/'
	} >v.csv
	fmt-convert -q -T 1 v.csv v1.jsonl
	run fmt-inspect v.csv
	assert_line "rows: 40001"
	for t in 2 4 7; do
		fmt-convert -q -T "$t" v.csv "v$t.jsonl"
		cmp v1.jsonl "v$t.jsonl" || fail "-T $t differs"
	done
	run sed -n 20001p v1.jsonl
	assert_output --partial '{"a":1,"b":"clo\nu1\nu2\n'
}

@test "a quoted field of 4 MiB across the split points of a 10 MB file (types from the sample): the bytes of -T 1" {
	# -T 2's counting pass ends its first chunk 2 MiB past the split point, beyond what it scans
	# ahead on the threads (1 MiB): the rest on one thread; -T 3's middle chunk holds no record
	/usr/bin/python3 - v.csv <<'PY'
import sys
with open(sys.argv[1], "w", newline="") as f:
    f.write("id,x,t\n")
    for i in range(150000):
        f.write(f"{i},{i * 0.5},w{i % 13}\n")
    f.write('150000,1.5,"' + "".join(f"line {k}\r\n" for k in range(400000)) + 'end"\n')
    for i in range(150001, 300000):
        f.write(f"{i},{i * 0.5},w{i % 13}\n")
PY
	[ "$(stat -c %s v.csv)" -gt 10000000 ]
	fmt-convert -q -T 1 v.csv v1.ald
	for t in 2 3 4; do
		fmt-convert -q -T "$t" v.csv "v$t.ald"
		cmp v1.ald "v$t.ald" || fail "-T $t differs"
	done
	run fmt-inspect v1.ald
	assert_line "rows: 300000"
	fmt-convert -q v2.ald back.csv
	run sed -n 150002p back.csv
	assert_output $'150000,1.5,"line 0\r'
}

@test "random CSVs of 2.6 MB (scripts/gen/csv-random, 12 seeds, 3 with a defect): -T 2 and 3 give the bytes or the error of -T 1" {
	local seed t failed=0
	for seed in $(seq 1 12); do
		/usr/bin/python3 "$REPO_ROOT/scripts/gen/csv-random" "$seed" r.csv
		for t in 1 2 3; do
			rm -f "o$t.ald"
			run fmt-convert -q --from csv -T "$t" r.csv "o$t.ald"
			echo "$status $output" >"e$t.txt"
		done
		echo "seed $seed: $(head -c 120 e1.txt)"
		cmp e1.txt e2.txt && cmp e1.txt e3.txt || fail "seed $seed: $(cat e1.txt) / $(cat e2.txt) / $(cat e3.txt)"
		if [ -e o1.ald ]; then
			cmp o1.ald o2.ald && cmp o1.ald o3.ald || fail "seed $seed: other bytes"
		else
			[ ! -e o2.ald ] && [ ! -e o3.ald ]
			[ $((seed % 4)) = 3 ] || fail "seed $seed fails: $(cat e1.txt)"
			failed=$((failed + 1))
		fi
	done
	# a defect can be one the parser takes (a quote left open closed by a later one)
	[ "$failed" -ge 2 ]
}

@test "a value not of its --schema type in the third batch: the same error for every -T, nothing written" {
	{
		echo "n,x"
		seq 200000 | sed 's/.*/&,&/'
	} >big.csv
	sed -i '150001s/.*/150000,abc/' big.csv
	printf '{"x": "int32"}' >schema.json
	for t in 1 2 3 8; do
		run fmt-convert --schema schema.json -T "$t" big.csv "o$t.parquet"
		assert_failure 4
		assert_output 'fmt-convert: error: big.csv: line 150001, column 2: "abc" is not an int32'
		nothing_written "o$t.parquet"
	done
}

@test "reading stops early (--rows) with batches parsed ahead: the same rows, no hang" {
	cp "$EDGES" e.csv
	fmt-convert -q -T 1 --rows 70000:70010 e.csv one.jsonl
	for t in 2 5; do
		run timeout 60 fmt-convert -q -T "$t" --rows 70000:70010 e.csv "t$t.jsonl"
		assert_success
		cmp one.jsonl "t$t.jsonl"
	done
	assert_equal "$(wc -l <one.jsonl)" 10
}

@test "writing CSV and JSON Lines on -T 1, 2, 3, 8: the exact text of edge values (int64 ends, -0, subnormals, 2^53+1, short and long fields to quote)" {
	printf '%s\n' 'i,x,s' '-9223372036854775808,0,a' '9223372036854775807,-0.0,"a,b"' '0,5e-324,"say ""hi"""' \
		'1,1.7976931348623157e+308,"x' 'y"' '-1,2.2250738585072009e-308,0123456789abcdef' \
		'12,9007199254740993,"0123456789abcdef,"' '7,0.000123,"ab""' 'c"' >e.csv
	printf '%s\n' 'i,x,s' '-9223372036854775808,0.0,a' '9223372036854775807,-0.0,"a,b"' '0,5e-324,"say ""hi"""' \
		'1,1.7976931348623157e+308,"x' 'y"' '-1,2.225073858507201e-308,0123456789abcdef' \
		'12,9007199254740992.0,"0123456789abcdef,"' '7,0.000123,"ab""' 'c"' >want.csv
	printf '%s\n' '{"i":-9223372036854775808,"x":0.0,"s":"a"}' '{"i":9223372036854775807,"x":-0.0,"s":"a,b"}' \
		'{"i":0,"x":5e-324,"s":"say \"hi\""}' '{"i":1,"x":1.7976931348623157e+308,"s":"x\ny"}' \
		'{"i":-1,"x":2.225073858507201e-308,"s":"0123456789abcdef"}' \
		'{"i":12,"x":9007199254740992.0,"s":"0123456789abcdef,"}' '{"i":7,"x":0.000123,"s":"ab\"\nc"}' >want.jsonl
	fmt-convert -q e.csv e.ald
	for t in 1 2 3 8; do
		fmt-convert -q -T "$t" e.ald "t$t.csv"
		cmp want.csv "t$t.csv" || fail "-T $t: other CSV text"
		fmt-convert -q -T "$t" e.ald "t$t.jsonl"
		cmp want.jsonl "t$t.jsonl" || fail "-T $t: other JSON Lines text"
	done
}

@test "writing CSV and JSON Lines from .ald and Arrow (several batches) on -T 2, 3, 8: the bytes of -T 1; a failed write: exit 3, the same message" {
	fmt-convert -q -T 1 "$EDGES" e.ald
	fmt-convert -q -T 1 e.ald e.arrow
	for in in e.ald e.arrow; do
		for ext in csv jsonl; do
			fmt-convert -q -T 1 "$in" "$in-one.$ext"
			for t in 2 3 8; do
				fmt-convert -q -T "$t" "$in" "$in-t$t.$ext"
				cmp "$in-one.$ext" "$in-t$t.$ext" || fail "$in -T $t gives other $ext bytes"
			done
		done
	done
	for t in 1 2 3; do
		run bash -c "fmt-convert -T $t --to csv e.ald - >/dev/full"
		assert_failure 3
		assert_output "fmt-convert: error: e.ald: cannot write to standard output: No space left on device"
	done
}

@test "small batches (STREAMING chunks of 10 rows; --where keeping 1 row of some chunks of 1,000, all of others) written on -T 2, 3, 8: the rows in order, the bytes of -T 1" {
	# blocks of 1,000 rows (130 KB of text): every third kept whole (g = 1), of the others the
	# first row only, so batches of 1,000 rows (handed to the workers) and of 1 (formatted by the
	# caller) alternate
	/usr/bin/python3 - <<'EOF'
with open("mixed.csv", "w") as f, open("want.csv", "w") as w:
    f.write("id,g,s\n")
    w.write("id,g,s\n")
    for i in range(60000):
        g = 1 if (i // 1000) % 3 == 0 or i % 1000 == 0 else 0
        line = f"{i},{g},row {i} of block {i // 1000} {'x' * 100}\n"
        f.write(line)
        if g:
            w.write(line)
EOF
	fmt-convert -q --chunk-rows 1000 mixed.csv mixed.ald
	fmt-convert -q --chunk-rows 10 mixed.csv tens.ald
	for t in 1 2 3 8; do
		fmt-convert -q -T "$t" --where 'g = 1' mixed.ald "w$t.csv"
		cmp want.csv "w$t.csv" || fail "-T $t: other rows or order"
		fmt-convert -q -T "$t" tens.ald "t$t.csv"
		cmp mixed.csv "t$t.csv" || fail "-T $t: chunks of 10 rows give other bytes"
		fmt-convert -q -T "$t" --where 'g = 1' mixed.ald "w$t.jsonl"
		fmt-convert -q -T "$t" tens.ald "t$t.jsonl"
	done
	run wc -l w1.jsonl
	assert_output "20040 w1.jsonl"
	run sed -n 1002p w1.jsonl
	assert_output "{\"id\":2000,\"g\":1,\"s\":\"row 2000 of block 2 $(printf 'x%.0s' {1..100})\"}"
	for t in 2 3 8; do
		cmp w1.jsonl "w$t.jsonl" || fail "-T $t: other JSON Lines"
		cmp t1.jsonl "t$t.jsonl" || fail "-T $t: chunks of 10 rows give other JSON Lines"
	done
}

@test "batches end every 65,536 rows (at most 262,144 / columns) and after each record reaching a multiple of 2 MiB of text: the same on -T 1, 2, 3" {
	# 20-byte rows: a cut at 65,536 rows and at each 2 MiB (row 104,858, 209,716): 6 batches of
	# 65536, 39322, 65536, 39322, 65536, 24748 rows (rows alone: 5)
	awk 'BEGIN { print "id,t"; for (i = 0; i < 300000; i++) printf "%08d,%010d\n", i, i }' >short.csv
	# 100-byte rows: a cut at each 2 MiB only (rows 20,972, 41,944, 62,915): 4 batches (rows alone: 2)
	/usr/bin/python3 -c '
import sys
sys.stdout.write("id,t\n" + "".join(f"{i}," + "x" * (98 - len(str(i))) + "\n" for i in range(70000)))' >long.csv
	# 300 columns, all but the first empty (null): 873 rows a batch, 4 batches of 3,000 rows (rows alone: 1)
	/usr/bin/python3 -c '
import sys
sys.stdout.write(",".join(f"c{i}" for i in range(300)) + "\n" + "".join(f"{i}" + "," * 299 + "\n" for i in range(3000)))' >many.csv
	declare -A want=([short]=6 [long]=4 [many]=4)
	for f in short long many; do
		for t in 1 2 3; do
			fmt-convert -q -T $t $f.csv $f-$t.arrow
			run fmt-inspect --json $f-$t.arrow
			assert_equal "$(jq .arrow.record_batches <<<"$output")" "${want[$f]}"
		done
		cmp $f-1.arrow $f-2.arrow
		cmp $f-1.arrow $f-3.arrow
	done
}

@test "a column selection (--exclude) written as CSV and JSON Lines on -T 2, 3, 8: the bytes of -T 1 (the view swaps its schema while the next batch is read)" {
	fmt-convert -q -T 1 "$EDGES" e.parquet
	for in in "$EDGES" e.parquet; do
		for to in csv jsonl; do
			run fmt-convert -q -f -T 1 --exclude x --exclude when "$in" "one.$to"
			assert_success
			for t in 2 3 8; do
				run fmt-convert -q -f -T $t --exclude x --exclude when "$in" "many.$to"
				assert_success
				cmp one.$to many.$to
			done
		done
		assert_equal "$(head -n 1 one.csv)" "id,flag,note,text"
		assert_equal "$(head -n 1 one.jsonl)" '{"id":0,"flag":true,"note":null,"text":"d\nz;\n\n0"}'
		assert_equal "$(wc -l <one.jsonl)" 150000
	done
}
