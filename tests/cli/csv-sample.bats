#!/usr/bin/env bats
# One pass over a CSV or JSON Lines file (issue 24): a conversion into a file on one thread types
# the columns from the first 2 MiB of rows and checks the types against every row as it converts
# them. A row that contradicts them (a fraction in an integer column, a null in a column that had
# none, a value in a column empty until then, a finer timestamp, a key the sample did not have),
# or any error, starts the conversion again with every row typed first: the output, or the
# error, is always the one of two passes (for CSV on -T 2 and more, the threads' first pass only
# counts the records for the batches, and the restart infers over the whole file on the threads;
# for both, a conversion to standard output infers first, a second reference).

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	BASE="$BATS_FILE_TMPDIR/base.csv"
	JBASE="$BATS_FILE_TMPDIR/base.jsonl"
	export BASE JBASE
	# about 8 MB, 150,000 rows: four times the sample
	/usr/bin/python3 - "$BASE" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("id,x,flag,label,when,opt\n")
    for i in range(150000):
        label = f'"w{i % 97} ""q{i % 5}"""' if i % 2 else f"w{i % 97}"
        f.write(f"{i},{i * 0.25 - 7:.2f},{'true' if i % 3 else 'false'},{label},"
                f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{i % 59:02d}.{i % 1000:03d},\n")
PY
	# about 9 MB, 100,000 objects
	/usr/bin/python3 - "$JBASE" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(100000):
        f.write(json.dumps({"id": i, "x": i * 0.25 - 7, "flag": i % 3 == 0, "label": f"w{i % 97}",
                            "when": f"2024-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00.{i % 1000:03d}",
                            "v": [i, i % 7]}) + "\n")
PY
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

# read_bytes CMD...: run CMD (it must succeed) and print the bytes it read (rchar: a reaped
# child's reads count in its parent's /proc/PID/io)
read_bytes() {
	local me=$BASHPID before after
	before=$(awk '/^rchar:/ { print $2 }' "/proc/$me/io")
	"$@" >/dev/null || return 1
	after=$(awk '/^rchar:/ { print $2 }' "/proc/$me/io")
	echo $((after - before))
}

# field_type FILE COLUMN: "type nullable unit" of COLUMN as fmt-inspect --json reports it
field_type() {
	fmt-inspect --json "$1" | jq -r --arg c "$2" \
		'.schema.fields[] | select(.name == $c) | "\(.type) \(.nullable) \(.unit // "-")"'
}

# with_last_row CSV ROW: CSV with ROW appended as the last record, into variant.csv
with_last_row() {
	cp "$1" variant.csv
	printf '%s\n' "$2" >>variant.csv
}

# one_and_two EXT: variant.csv converted on one thread into one.EXT and on two into two.EXT:
# the same bytes
one_and_two() {
	fmt-convert -T 1 variant.csv "one.$1"
	fmt-convert -T 2 variant.csv "two.$1"
	cmp "one.$1" "two.$1"
}

# read_once IN OUT: fmt-convert -T 1 IN OUT reads IN once: its size + the 2 MiB sample (in 1 MiB
# reads) + the probe, under 1.5 x its size (two passes: 2 x)
read_once() {
	local size bytes
	size=$(stat -c %s "$1")
	bytes=$(read_bytes fmt-convert -T 1 "$1" "$2")
	[ "$bytes" -ge "$size" ] && [ "$bytes" -lt $((size * 3 / 2)) ]
}

@test "one pass: an 8 MB CSV is read once (plus the 2 MiB sample), with the bytes of two passes" {
	read_once "$BASE" one.ald
	fmt-convert -T 2 "$BASE" two.ald
	cmp one.ald two.ald
	for to in parquet arrow jsonl; do
		fmt-convert -T 1 "$BASE" "one.$to"
		fmt-convert -T 2 "$BASE" "two.$to"
		cmp "one.$to" "two.$to"
	done
	[ "$(field_type one.ald id)" = "int64 false -" ]
	[ "$(field_type one.ald when)" = "timestamp false ms" ]
	[ "$(field_type one.ald opt)" = "utf8 true -" ]
}

@test "one pass: the report counts the rows at the end (--json rows)" {
	run -0 fmt-convert -T 1 --json "$BASE" out.parquet
	[ "$(jq -r .rows <<<"$output")" = 150000 ]
	[ "$(jq -r '.schema.fields[0].type' <<<"$output")" = int64 ]
}

@test "one pass: a fraction after the sample makes an integer column float64, as two passes do" {
	local size bytes
	with_last_row "$BASE" '1.5,1.00,true,w,2024-05-01T00:00:00.000,'
	size=$(stat -c %s variant.csv)
	bytes=$(read_bytes fmt-convert -T 1 variant.csv one.ald)
	# started again: the part read before the contradiction, then two whole passes
	[ "$bytes" -ge $((3 * size)) ]
	fmt-convert -T 2 variant.csv two.ald
	cmp one.ald two.ald
	[ "$(field_type one.ald id)" = "float64 false -" ]
	run -0 fmt-convert -T 1 --json variant.csv one.parquet
	[ "$(jq -r .rows <<<"$output")" = 150001 ]
	fmt-convert -T 2 variant.csv two.parquet
	cmp one.parquet two.parquet
}

@test "-T 2 types from the sample too: its first pass only counts the records; a fraction after the sample starts it again" {
	local size bytes
	size=$(stat -c %s "$BASE")
	# no contradiction: the sample, the quote count, the counting pass and the batches (3.9 x
	# for 8 MB: each batch's parse starts with a 1 MiB read), once
	bytes=$(read_bytes fmt-convert -T 2 "$BASE" base.ald)
	echo "read $bytes of $size"
	[ "$bytes" -ge $((3 * size)) ] && [ "$bytes" -lt $((9 * size / 2)) ]
	with_last_row "$BASE" '1.5,1.00,true,w,2024-05-01T00:00:00.000,'
	size=$(stat -c %s variant.csv)
	bytes=$(read_bytes fmt-convert -T 2 variant.csv two.ald)
	echo "read $bytes of $size"
	# the contradiction in the last row: the sampled read to its end, then a typed one (7.6 x)
	[ "$bytes" -ge $((6 * size)) ]
	fmt-convert -T 1 variant.csv one.ald
	cmp one.ald two.ald
	[ "$(field_type two.ald id)" = "float64 false -" ]
	fmt-convert -T 3 variant.csv three.ald
	cmp one.ald three.ald
}

@test "one pass: a null after the sample makes the column nullable" {
	with_last_row "$BASE" '150000,,true,w,2024-05-01T00:00:00.000,'
	one_and_two ald
	[ "$(field_type one.ald x)" = "float64 true -" ]
}

@test "one pass: values in a column empty for the whole sample are typed, not kept as text" {
	with_last_row "$BASE" '150000,1.00,true,w,2024-05-01T00:00:00.000,42'
	one_and_two arrow
	[ "$(field_type one.arrow opt)" = "int64 true -" ]
}

@test "one pass: a finer timestamp after the sample changes the unit (no value truncated)" {
	with_last_row "$BASE" '150000,1.00,true,w,2024-05-01T00:00:00.123456,'
	one_and_two ald
	[ "$(field_type one.ald when)" = "timestamp false us" ]
	fmt-convert one.ald back.csv
	[ "$(tail -n 1 back.csv)" = '150000,1.0,true,w,2024-05-01T00:00:00.123456,' ]
}

@test "one pass: a malformed record after the sample fails as two passes do, and leaves no output" {
	with_last_row "$BASE" '150000,1.00,true'
	run -4 fmt-convert -T 1 variant.csv one.ald
	[ "$output" = "fmt-convert: error: variant.csv: line 150002, column 4: 3 fields, the header has 6" ]
	[ ! -e one.ald ]
	run -4 fmt-convert -T 2 variant.csv two.ald
	[ "$output" = "fmt-convert: error: variant.csv: line 150002, column 4: 3 fields, the header has 6" ]
	# a quote in the first record past the sample (read to see whether rows follow): the error of
	# the whole pass
	/usr/bin/python3 -c "import sys
d = open(sys.argv[1], 'rb').read()
cut = d.index(b'\n', 2 * 1048576 + 1) + 1
open('cut.csv', 'wb').write(d[:cut] + b'1,2,tr\"ue,w,x,\n' + d[cut:])" "$BASE"
	run -4 fmt-convert -T 1 cut.csv one.ald
	[[ "$output" == *"column 3: a quote inside an unquoted field"* ]]
	[ ! -e one.ald ]
}

@test "one pass: a value that breaks a --schema type is the same error on one thread and two" {
	with_last_row "$BASE" '150000,1.00,maybe,w,2024-05-01T00:00:00.000,'
	printf '{"flag": "bool"}\n' >schema.json
	run -4 fmt-convert -T 1 --schema schema.json variant.csv one.ald
	[ "$output" = 'fmt-convert: error: variant.csv: line 150002, column 3: "maybe" is not a bool' ]
	run -4 fmt-convert -T 2 --schema schema.json variant.csv two.ald
	[ "$output" = 'fmt-convert: error: variant.csv: line 150002, column 3: "maybe" is not a bool' ]
	[ ! -e one.ald ] && [ ! -e two.ald ]
	# without --schema the column becomes text
	fmt-convert -T 1 variant.csv one.ald
	[ "$(field_type one.ald flag)" = "utf8 false -" ]
}

# jsonl_one_and_exact ROW: JBASE with ROW as the last object, converted on one thread into
# one.ald and one.csv, and to standard output as CSV (every object typed first): the same text
jsonl_one_and_exact() {
	cp "$JBASE" variant.jsonl
	[ -z "$1" ] || printf '%s\n' "$1" >>variant.jsonl
	fmt-convert -T 1 -f variant.jsonl one.ald
	fmt-convert -T 1 -f variant.jsonl one.csv
	fmt-convert -T 1 --to csv variant.jsonl - >exact.csv
	cmp one.csv exact.csv
}

@test "one pass, JSON Lines: a 9 MB file is read once, and converts as the whole-file inference does" {
	read_once "$JBASE" once.arrow
	jsonl_one_and_exact ""
	[ "$(field_type one.ald id)" = "int64 false -" ]
	[ "$(field_type one.ald v)" = "fixed_size_list false -" ]
	[ "$(field_type one.ald when)" = "timestamp false ms" ]
}

@test "one pass, JSON Lines: a key the sample did not have becomes a column, as two passes make it" {
	local size bytes
	jsonl_one_and_exact '{"id": 100000, "x": 1.5, "flag": true, "label": "w", "when": "2024-05-01T00:00:00.000", "v": [1, 2], "late": "new"}'
	[ "$(field_type one.ald late)" = "utf8 true -" ]
	[ "$(head -n 1 one.csv)" = "id,x,flag,label,when,v,late" ]
	[ "$(tail -n 1 one.csv)" = '100000,1.5,true,w,2024-05-01T00:00:00,"[1,2]",new' ]
	size=$(stat -c %s variant.jsonl)
	bytes=$(read_bytes fmt-convert -T 1 variant.jsonl again.ald)
	[ "$bytes" -ge $((3 * size)) ]
	cmp one.ald again.ald
}

@test "one pass, JSON Lines: a fraction, a missing key or a list of another length after the sample" {
	jsonl_one_and_exact '{"id": 0.5, "x": 1.5, "flag": true, "label": "w", "when": "2024-05-01T00:00:00.000", "v": [1, 2]}'
	[ "$(field_type one.ald id)" = "float64 false -" ]
	jsonl_one_and_exact '{"id": 100000, "flag": true, "label": "w", "when": "2024-05-01T00:00:00.000", "v": [1, 2]}'
	[ "$(field_type one.ald x)" = "float64 true -" ]
	jsonl_one_and_exact '{"id": 100000, "x": 1.5, "flag": true, "label": "w", "when": "2024-05-01T00:00:00.000", "v": [1, 2, 3]}'
	[ "$(field_type one.ald v)" = "utf8 false -" ]
	[ "$(tail -n 1 one.csv)" = '100000,1.5,true,w,2024-05-01T00:00:00,"[1,2,3]"' ]
	# a NaN as the writer puts it keeps the float column; other text makes it text
	jsonl_one_and_exact '{"id": 100000, "x": "-inf", "flag": true, "label": "w", "when": "2024-05-01T00:00:00.000", "v": [1, 2]}'
	[ "$(field_type one.ald x)" = "float64 false -" ]
	[ "$(tail -n 1 one.csv)" = '100000,-inf,true,w,2024-05-01T00:00:00,"[1,2]"' ]
	jsonl_one_and_exact '{"id": 100000, "x": "-infinity", "flag": true, "label": "w", "when": "2024-05-01T00:00:00.000", "v": [1, 2]}'
	[ "$(field_type one.ald x)" = "utf8 false -" ]
}

@test "one pass, JSON Lines: a file whose first 2 MiB hold no key yet is typed from the objects after" {
	{ head -c 3000000 /dev/zero | tr '\0' '\n'; printf '{}\n{"a": 1}\n{"a": 2, "b": "x"}\n'; } >blank.jsonl
	run -0 fmt-convert -T 1 --json --from jsonl blank.jsonl out.arrow
	[ "$(jq -r .rows <<<"$output")" = 3 ]
	[ "$(field_type out.arrow a)" = "int64 true -" ]
	[ "$(field_type out.arrow b)" = "utf8 true -" ]
}
