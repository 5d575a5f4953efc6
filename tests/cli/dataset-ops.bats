#!/usr/bin/env bats
# The dataset operations of issue 24: fmt-convert --rename, --where, --rows, --sample, --shuffle,
# --dedupe, --sort on every table format in and out; fmt-shard split (train/validation/test,
# --rows N) and merge/concat of datasets; fmt-inspect --quality. Exact outputs, and bad arguments
# refused with their exit status and nothing written.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	mkdir -p "$BATS_TEST_TMPDIR/work" # bats keeps its own files in BATS_TEST_TMPDIR
	cd "$BATS_TEST_TMPDIR/work"
	printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n2,bb,1.5,a\n1,aa,,b\n5,,-2.0,a\n4,dd,0.25,b\n' >in.csv
}

# The rows of a table file as CSV on stdout.
as_csv() {
	fmt-convert --to csv "$1" -
}

# Nothing but the inputs in the directory: no output, no temporary file.
only_these_files() {
	run ls -A .
	assert_output "$(printf '%s\n' "$@" | sort)"
}

@test "--where, --sort and --rows on every table format in and out, the same rows" {
	fmt-convert in.csv in.ald
	fmt-convert in.csv in.arrow
	fmt-convert in.csv in.arrows
	fmt-convert in.csv in.jsonl
	for input in in.csv in.ald in.arrow in.arrows in.jsonl; do
		for ext in csv jsonl arrow arrows ald; do
			rm -f "out.$ext"
			fmt-convert --where 'score is not null' --where 'grp = a' --sort score:desc "$input" "out.$ext"
			run as_csv "out.$ext"
			assert_output "$(printf 'id,name,score,grp\n2,bb,1.5,a\n3,cc,0.5,a\n5,,-2.0,a')"
			rm -f "out.$ext"
			fmt-convert --sort name --rows 1:4 --exclude grp --rename name=who "$input" "out.$ext"
			run as_csv "out.$ext"
			assert_output "$(printf 'id,who,score\n1,aa,\n2,bb,1.5\n3,cc,0.5')"
		done
	done
}

@test "--where compares as the column's type: numbers by value, strings by bytes, nulls only with is null" {
	run as_csv in.csv
	printf 'n,s\n10,b\n9,a\n-1,B\n100,\n' >typed.csv
	run fmt-convert --where 'n > 9' --to csv typed.csv -
	assert_output "$(printf 'n,s\n10,b\n100,')"
	run fmt-convert --where 's < b' --to csv typed.csv -
	assert_output "$(printf 'n,s\n9,a\n-1,B')"
	run fmt-convert --where 's != b' --to csv typed.csv -
	assert_output "$(printf 'n,s\n9,a\n-1,B')"
	run fmt-convert --where 'S IS NULL' --to csv typed.csv -
	assert_failure 2
	run fmt-convert --where 's IS NULL' --to csv typed.csv -
	assert_output "$(printf 'n,s\n100,')"
	run fmt-convert --where 'n<=-1' --to csv typed.csv -
	assert_output "$(printf 'n,s\n-1,B')"
	run fmt-convert --where "s = \"b\"" --to csv typed.csv -
	assert_output "$(printf 'n,s\n10,b')"
}

@test "a date32 is read by one rule from a CSV under --schema and from a --where value: days of the calendar, years as ISO 8601 expands them" {
	echo '{"d":"date32"}' >d.json
	printf 'd\n0000-02-29\n1969-12-31\n2000-02-29\n9999-12-31\n' >good.csv
	fmt-convert --schema d.json good.csv d.arrow
	run as_csv d.arrow
	assert_output "$(printf 'd\n0000-02-29\n1969-12-31\n2000-02-29\n9999-12-31')"
	run fmt-convert --where 'd = 0000-02-29' --where 'd < 1970-01-01' --to csv d.arrow -
	assert_output "$(printf 'd\n0000-02-29')"
	for v in 2000-02-29 1969-12-31 9999-12-31; do
		run fmt-convert --where "d = $v" --to csv d.arrow -
		assert_output "$(printf 'd\n%s' $v)"
	done
	for v in 1900-02-29 2023-02-29 2024-04-31 2024-13-01 2024-00-10 2024-01-00 2024-1-011 +024-01-01 \
		2024/01/01 2024-01-1x +10000-01-01 -001-01-01 -0000-01-01 010000-01-01 5881580-07-12 \
		-5877641-06-22 2024-01-01T00:00:00; do
		printf 'd\n%s\n' "$v" >bad.csv
		run fmt-convert --schema d.json bad.csv out.arrow
		assert_failure 4
		assert_output "fmt-convert: error: bad.csv: line 2, column 1: \"$v\" is not a date32"
		run fmt-convert --where "d = '$v'" --to csv d.arrow -
		assert_failure 2
		assert_output "fmt-convert: error: d.arrow: --where 'd = '$v'': '$v' is not a value of column 'd' (date32)"
	done
	[ ! -e out.arrow ]
}

@test "dates and timestamps before year 0000 and after 9999 are written as ISO 8601 expands them and read back" {
	echo '{"d":"date32"}' >d.json
	printf 'd\n-0001-12-31\n-0001-01-01\n10000-01-01\n-5877641-06-23\n5881580-07-11\n' >far.csv
	fmt-convert --schema d.json far.csv d.arrow
	run as_csv d.arrow
	assert_output "$(cat far.csv)"
	run fmt-convert --where 'd > 9999-12-31' --to csv d.arrow -
	assert_output "$(printf 'd\n10000-01-01\n5881580-07-11')"
	run fmt-convert --where 'd < -0001-06-01' --to csv d.arrow -
	assert_output "$(printf 'd\n-0001-01-01\n-5877641-06-23')"
	# timestamps: written and read by the same rule; the type is inferred from the text
	printf 't\n-0044-03-15T12:00:00\n12024-01-01T00:00:00.5\n' >ts.csv
	fmt-convert ts.csv ts.arrow
	run fmt-inspect --schema ts.arrow
	assert_output "$(printf 'schema (1 column):\n  t  timestamp[ms]  not null')"
	run as_csv ts.arrow
	assert_output "$(printf 't\n-0044-03-15T12:00:00\n12024-01-01T00:00:00.500')"
}

@test "--sort: descending, nulls last, stable; the same with rows spilled to temporary files" {
	run fmt-convert --sort score --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n5,,-2.0,a\n4,dd,0.25,b\n3,cc,0.5,a\n2,bb,1.5,a\n1,aa,,b\n1,aa,,b')"
	run fmt-convert --sort grp:desc --sort id --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n1,aa,,b\n1,aa,,b\n4,dd,0.25,b\n2,bb,1.5,a\n3,cc,0.5,a\n5,,-2.0,a')"
	fmt-convert --sort name:desc in.csv mem.ald
	mkdir tmp
	TMPDIR=$PWD/tmp fmt-convert --sort name:desc --memory 16 in.csv spilled.ald
	cmp mem.ald spilled.ald
	run ls -A tmp
	assert_output ""
	run as_csv mem.ald
	assert_output "$(printf 'id,name,score,grp\n4,dd,0.25,b\n3,cc,0.5,a\n2,bb,1.5,a\n1,aa,,b\n1,aa,,b\n5,,-2.0,a')"
	# one row per run, 3000 runs, and no more than 100 open files: 64 runs at most are open, merged
	# into one as they pile up
	seq 1 3000 | awk 'BEGIN { print "id,v" } { print $1 "," ($1 * 7919) % 3001 }' >many.csv
	fmt-convert --sort v:desc --sort id many.csv sorted-mem.csv
	(ulimit -n 100 && TMPDIR=$PWD/tmp fmt-convert --sort v:desc --sort id --memory 1 many.csv sorted-runs.csv)
	cmp sorted-mem.csv sorted-runs.csv
	run head -n 3 sorted-runs.csv
	assert_output "$(printf 'id,v\n1913,3000\n825,2999')"
	run ls -A tmp
	assert_output ""
}

@test "--dedupe, --dedupe-on, --sample and --shuffle: exact rows, the same for the same seed" {
	run fmt-convert --dedupe --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n2,bb,1.5,a\n5,,-2.0,a\n4,dd,0.25,b')"
	run fmt-convert --dedupe-on grp --to jsonl in.csv -
	assert_output "$(printf '{"id":3,"name":"cc","score":0.5,"grp":"a"}\n{"id":1,"name":"aa","score":null,"grp":"b"}')"
	run fmt-convert --sample 3 --seed 7 --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n5,,-2.0,a')"
	run fmt-convert --sample 3 --seed 7 --memory 1 --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n5,,-2.0,a')"
	run fmt-convert --sample 100 --to csv in.csv -
	assert_output "$(cat in.csv)"
	run fmt-convert --shuffle --seed 7 --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n5,,-2.0,a\n2,bb,1.5,a\n1,aa,,b\n1,aa,,b\n4,dd,0.25,b\n3,cc,0.5,a')"
	run fmt-convert --shuffle --seed 8 --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n5,,-2.0,a\n3,cc,0.5,a\n1,aa,,b\n1,aa,,b\n2,bb,1.5,a\n4,dd,0.25,b')"
	run fmt-convert --sample 0.5 --seed 7 --to csv in.csv -
	assert_output "$(printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n5,,-2.0,a')"
}

@test "--dry-run with row options prints the output's schema and writes nothing" {
	run fmt-convert --dry-run --where 'id > 2' --rename id=key in.csv out.ald
	assert_success
	assert_output "$(printf 'in.csv (csv) -> out.ald (ald)\n  key  int64  not null\n  name  utf8\n  score  float64\n  grp  utf8  not null')"
	only_these_files in.csv
}

@test "bad row and column options: exit 2 naming what is wrong, nothing written" {
	fmt-convert in.csv in.ald
	while IFS='|' read -r args message; do
		# shellcheck disable=SC2086
		eval "run --separate-stderr fmt-convert $args in.ald out.csv"
		[ "$status" -eq 2 ] || fail "$args: exit $status ($stderr)"
		[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-convert: error: $message" ] || fail "$args: $stderr"
		[ -z "$output" ] || fail "$args: stdout $output"
	done <<'EOF'
--where 'nope > 1'|in.ald: --where 'nope > 1': no column 'nope' (the columns: id, name, score, grp)
--where 'score >'|in.ald: --where 'score >': expected COLUMN OP VALUE (OP: =, !=, <, <=, >, >=; or COLUMN is null, COLUMN is not null)
--where 'score ~ 1'|in.ald: --where 'score ~ 1': expected COLUMN OP VALUE (OP: =, !=, <, <=, >, >=; or COLUMN is null, COLUMN is not null)
--where 'id = 1.5'|in.ald: --where 'id = 1.5': '1.5' is not a value of column 'id' (int64)
--where 'score is nul'|in.ald: --where 'score is nul': expected COLUMN OP VALUE (OP: =, !=, <, <=, >, >=; or COLUMN is null, COLUMN is not null)
--sort nope:desc|in.ald: --sort 'nope:desc': no column 'nope' (the columns: id, name, score, grp)
--dedupe-on Id|in.ald: --dedupe-on 'Id': no column 'Id' (the columns: id, name, score, grp)
--rename nope=x|in.ald: --rename 'nope=x': no column 'nope' (the columns: id, name, score, grp)
--rename id=name|in.ald: --rename 'id=name': a column 'name' exists already
--rename id=|in.ald: --rename takes OLD=NEW, not 'id='
--exclude id --rename id=x|in.ald: --rename 'id=x': no column 'id' (the columns: name, score, grp)
--shuffle --sort id|in.ald: --shuffle and --sort exclude each other
--rows 5:2|--rows 5:2: END is before START
--rows 3|--rows takes START:END, START: or :END (row numbers from 0, END excluded), not '3'
--rows -1:2|--rows takes START:END, START: or :END (row numbers from 0, END excluded), not '-1:2'
--sample 0|--sample takes a row count N (above 0) or a fraction (0 < F < 1), not '0'
--sample 1.0|--sample takes a row count N (above 0) or a fraction (0 < F < 1), not '1.0'
--sample -3|--sample takes a row count N (above 0) or a fraction (0 < F < 1), not '-3'
--seed 4|--seed is for --sample and --shuffle
--sort id --memory 0|--memory takes a size above 0, e.g. 1GiB, 500MB
--memory 1MB|--memory is for --sort, --shuffle and --sample N
EOF
	only_these_files in.csv in.ald
}

@test "row options are for datasets: with a model output they are refused" {
	make_samples
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	run --separate-stderr fmt-convert --where 'x > 1' m.safetensors out.gguf
	assert_failure 2
	# the list of dataset extensions comes from the registry
	[[ "$(printf '%s\n' "$stderr" | head -n 1)" == "fmt-convert: error: --where applies to datasets, not to models: dataset options need a dataset output (.ald, "*" or --to)" ]] || fail "$stderr"
	[ ! -e out.gguf ]
}

@test "fmt-shard split --fractions: exact parts, disjoint, the input's rows, the same for the same seed" {
	run fmt-shard split in.csv --fractions 0.5,0.5 --seed 1 -o sp
	assert_success
	assert_output "$(printf 'sp/train.csv: 3 rows (train)\nsp/test.csv: 3 rows (test)')"
	run cat sp/train.csv
	assert_output "$(printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n4,dd,0.25,b')"
	run cat sp/test.csv
	assert_output "$(printf 'id,name,score,grp\n2,bb,1.5,a\n1,aa,,b\n5,,-2.0,a')"
	fmt-shard split in.csv --fractions 0.5,0.5 --seed 1 -o again -q
	cmp sp/train.csv again/train.csv
	cmp sp/test.csv again/test.csv
	# every row once: the union sorted is the input sorted
	diff <(tail -n +2 in.csv | sort) <(tail -q -n +2 sp/train.csv sp/test.csv | sort)
	# three parts of an .ald, stratified, in files of at most 2 rows
	fmt-convert in.csv in.ald
	run fmt-shard split in.ald --fractions 0.34,0.33,0.33 --stratify grp --rows 2 -o st --json
	assert_success
	assert_output '{"input":"in.ald","format":"ald","dry_run":false,"rows":6,"files":[{"file":"st/train.ald","part":"train","rows":2},{"file":"st/validation.ald","part":"validation","rows":2},{"file":"st/test.ald","part":"test","rows":2}],"seed":0,"strata":2}'
	for p in train validation test; do
		run bash -c "fmt-convert --to csv --include grp st/$p.ald - | sort"
		assert_output "$(printf 'a\nb\ngrp')"
	done
}

# Rows of each value of column 2 in a CSV part: "VALUE:COUNT" on one line, by value.
per_value() {
	tail -n +2 "$1" | cut -d, -f2 | sort | uniq -c | awk '{print $2 ":" $1}' | paste -sd ' '
}

@test "fmt-shard split --stratify: the parts keep their unstratified sizes, each value spread by largest remainders (old: every value's remainder to the first part, 4/2 for two values of 3)" {
	# two values of 3 rows at 0.5/0.5: 3 and 3, a 2/1, b 1/2 (the tie to the first value)
	run --separate-stderr fmt-shard split in.csv --fractions 0.5,0.5 --stratify grp -o st
	assert_success
	assert_equal "$stderr" ''
	assert_output "$(printf 'st/train.csv: 3 rows (train)\nst/test.csv: 3 rows (test)')"
	assert_equal "$(per_value <(cut -d, -f1,4 st/train.csv))" "a:2 b:1"
	assert_equal "$(per_value <(cut -d, -f1,4 st/test.csv))" "a:1 b:2"
	diff <(tail -n +2 in.csv | sort) <(tail -q -n +2 st/train.csv st/test.csv | sort)
	# values of 7, 5 and 1 rows at 0.8/0.1/0.1: 11/1/1 as unstratified; a 6/1/0, b 4/0/1, c 1/0/0
	{ echo id,g; for i in 1 2 3 4 5 6 7; do echo "$i,a"; done; for i in 8 9 10 11 12; do echo "$i,b"; done; echo 13,c; } >v.csv
	run fmt-shard split v.csv --fractions 0.8,0.1,0.1 -o plain --dry-run
	assert_output "$(printf 'plain/train.csv: 11 rows (train)\nplain/validation.csv: 1 row (validation)\nplain/test.csv: 1 row (test)')"
	run fmt-shard split v.csv --fractions 0.8,0.1,0.1 --stratify g -o v3
	assert_success
	assert_output "$(printf 'v3/train.csv: 11 rows (train)\nv3/validation.csv: 1 row (validation)\nv3/test.csv: 1 row (test)')"
	assert_equal "$(per_value v3/train.csv) | $(per_value v3/validation.csv) | $(per_value v3/test.csv)" "a:6 b:4 c:1 | a:1 | b:1"
	# another seed: other rows, the same counts
	run fmt-shard split v.csv --fractions 0.8,0.1,0.1 --stratify g --seed 9 -o v9 -q
	assert_equal "$(per_value v9/train.csv) | $(per_value v9/validation.csv) | $(per_value v9/test.csv)" "a:6 b:4 c:1 | a:1 | b:1"
	fmt-shard split v.csv --fractions 0.8,0.1,0.1 --stratify g --seed 9 -o again -q
	for p in train validation test; do cmp "v9/$p.csv" "again/$p.csv"; done
	# a value of one row: 4/4/1 at 0.5/0.5 is 5/4 (the tie of the whole to train), a 2/2, b 2/2, c 1/0
	{ echo id,g; for i in 1 2 3 4; do echo "$i,a"; done; for i in 5 6 7 8; do echo "$i,b"; done; echo 9,c; } >w.csv
	run fmt-shard split w.csv --fractions 0.5,0.5 --stratify g -o w2 --json
	assert_success
	assert_output '{"input":"w.csv","format":"csv","dry_run":false,"rows":9,"files":[{"file":"w2/train.csv","part":"train","rows":5},{"file":"w2/test.csv","part":"test","rows":4}],"seed":0,"strata":3}'
	assert_equal "$(per_value w2/train.csv) | $(per_value w2/test.csv)" "a:2 b:2 c:1 | a:2 b:2"
}

@test "fmt-shard split --stratify: a column of distinct values still gives each part its share, without a warning (old: 4/0 and a warning)" {
	printf 'id,x\n1,a\n2,b\n3,c\n4,d\n' >u.csv
	run --separate-stderr fmt-shard split u.csv --fractions 0.5,0.5 --stratify id -o st
	assert_success
	assert_equal "$stderr" ''
	assert_output "$(printf 'st/train.csv: 2 rows (train)\nst/test.csv: 2 rows (test)')"
	# one row each: the first values to train (the tie to the earlier value), the rest to test
	run cat st/train.csv st/test.csv
	assert_output "$(printf 'id,x\n1,a\n2,b\nid,x\n3,c\n4,d')"
	# fractions that add up to less than 1 are refused, nothing written
	run --separate-stderr fmt-shard split u.csv --fractions 0.5,0.4 --stratify id -o less
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: u.csv: --fractions add up to 0.9, not 1"
	[ ! -e less ]
}

@test "fmt-shard split --rows N alone, --list and --dry-run write nothing, an existing file stops the set" {
	run fmt-shard split in.csv --rows 4 -o parts
	assert_output "$(printf 'parts/in-00001-of-00002.csv: 4 rows\nparts/in-00002-of-00002.csv: 2 rows')"
	run cat parts/in-00002-of-00002.csv
	assert_output "$(printf 'id,name,score,grp\n5,,-2.0,a\n4,dd,0.25,b')"
	run fmt-shard split in.csv --rows 4 -o other --list
	assert_output "$(printf 'other/in-00001-of-00002.csv\nother/in-00002-of-00002.csv')"
	[ ! -e other ]
	run fmt-shard split in.csv --fractions 0.5,0.5 -o other --dry-run
	assert_output "$(printf 'other/train.csv: 3 rows (train)\nother/test.csv: 3 rows (test)')"
	[ ! -e other ]
	# one of the set exists: nothing of it is written
	mkdir sets
	echo keep >sets/test.csv
	run --separate-stderr fmt-shard split in.csv --fractions 0.5,0.5 -o sets
	assert_failure 2
	[ "$stderr" = "fmt-shard: error: sets/test.csv: output exists (use --force to overwrite)" ]
	run ls -A sets
	assert_output test.csv
	run cat sets/test.csv
	assert_output keep
	fmt-shard split in.csv --fractions 0.5,0.5 -o sets --force -q
	run cat sets/test.csv
	assert_output "$(printf 'id,name,score,grp\n1,aa,,b\n5,,-2.0,a\n4,dd,0.25,b')"
}

@test "fmt-shard split of a dataset: SIGTERM while the set is written leaves no file" {
	seq 1 5000 | awk 'BEGIN { print "id,v" } { print $1 "," $1 * 3 }' >big.csv
	mkdir out
	stop_at_output 2 fmt-shard split big.csv --fractions 0.8,0.2 -o out
	term_stopped
	[ "$status" -eq 143 ]
	run ls -A out
	assert_output ""
}

@test "fmt-shard split of a dataset: bad arguments are exit 2, nothing written" {
	while IFS='|' read -r args message; do
		eval "run --separate-stderr fmt-shard split $args"
		[ "$status" -eq 2 ] || fail "$args: exit $status ($stderr)"
		[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-shard: error: $message" ] || fail "$args: $stderr"
	done <<'EOF'
in.csv --fractions 0.5,0.4 -o x|in.csv: --fractions add up to 0.9, not 1
in.csv --fractions 1 -o x|in.csv: --fractions takes 2 to 16 fractions
in.csv --fractions 0,1 -o x|in.csv: --fractions: each fraction is above 0 and below 1
in.csv --fractions 0.5,a -o x|--fractions takes numbers separated by commas (0.8,0.1,0.1), not '0.5,a'
in.csv --fractions 0.5,0.5|in.csv: splitting a dataset needs -o DIR
in.csv -o x|in.csv: splitting a dataset needs --fractions or --rows
in.csv --fractions 0.5,0.5 --stratify Grp -o x|in.csv: --stratify: no column 'Grp' (the columns: id, name, score, grp)
in.csv --rows 0 -o x|--rows must be above 0
in.csv --seed 3 --rows 2 -o x|in.csv: --seed and --stratify are for --fractions
in.csv --max-size 1MB --rows 2 -o x|in.csv: --max-size, --max-tensors and --no-tensor-first-split split models; a dataset is split with --fractions or --rows
- --rows 2 -o x|-: splitting a dataset reads it once per output file: give a file, not standard input
EOF
	only_these_files in.csv
	make_samples
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	run --separate-stderr fmt-shard split m.safetensors --fractions 0.5,0.5 -o x
	assert_failure 2
	[ "$stderr" = "fmt-shard: error: m.safetensors: --fractions, --rows, --seed, --stratify and --allow-expired are for datasets, not models" ]
	[ ! -e x ]
}

@test "fmt-shard merge/concat of datasets to an output named as a model format's file is exit 2, nothing written (old: CSV rows in m.gguf, exit 0)" {
	run --separate-stderr fmt-shard concat in.csv in.csv -o m.gguf
	assert_failure 2
	assert_output ''
	assert_equal "$stderr" "fmt-shard: error: in.csv: merge of datasets writes a dataset, not the gguf model that an output named *.gguf would be: name it *.csv (the first input's format) or by another dataset format"
	fmt-convert in.csv in.ald
	run fmt-shard merge in.ald in.ald -o m.safetensors.index.json
	assert_failure 2
	assert_output "fmt-shard: error: in.ald: merge of datasets writes a dataset, not the safetensors-index model that an output named *.safetensors.index.json would be: name it *.ald (the first input's format) or by another dataset format"
	[ ! -e m.gguf ] && [ ! -e m.safetensors.index.json ]
	# a dataset format's name converts; a name no format claims keeps the first input's format
	fmt-shard concat -q in.csv in.csv -o m.parquet
	assert_equal "$(fmt-inspect --json m.parquet | jq -c '[.format, .rows]')" '["parquet",12]'
	fmt-shard concat -q in.csv in.csv -o m.bin
	assert_equal "$(fmt-inspect --json m.bin | jq -c '[.format, .rows]')" '["csv",12]'
}

@test "fmt-shard merge and concat: datasets one after another; another schema is exit 9 naming the column" {
	fmt-shard split in.csv --fractions 0.5,0.5 --seed 1 -o sp -q
	run fmt-shard concat sp/train.csv sp/test.csv -o all.csv
	assert_success
	assert_output "all.csv: 6 rows from 2 files"
	run cat all.csv
	assert_output "$(printf 'id,name,score,grp\n3,cc,0.5,a\n1,aa,,b\n4,dd,0.25,b\n2,bb,1.5,a\n1,aa,,b\n5,,-2.0,a')"
	# another format in and out, and a column without nulls in one input only
	fmt-convert sp/train.csv train.arrow
	printf 'id,name,score,grp\n9,zz,1.25,c\n' >one.csv
	run fmt-shard merge train.arrow one.csv -o m.jsonl --json
	# "format" is what was written, as a model merge's (it was the first input's: "arrow")
	assert_output '{"inputs":["train.arrow","one.csv"],"format":"jsonl","output":"m.jsonl","rows":4}'
	run cat m.jsonl
	assert_output "$(printf '{"id":3,"name":"cc","score":0.5,"grp":"a"}\n{"id":1,"name":"aa","score":null,"grp":"b"}\n{"id":4,"name":"dd","score":0.25,"grp":"b"}\n{"id":9,"name":"zz","score":1.25,"grp":"c"}')"
	printf 'id,name,score,grp\n9,zz,x,c\n' >bad.csv
	run --separate-stderr fmt-shard concat in.csv bad.csv -o bad-out.csv
	assert_failure 9
	[ "$stderr" = 'fmt-shard: error: bad.csv: not the schema of in.csv: field "score" has type utf8, expected float64' ]
	printf 'id,name\n1,a\n' >short.csv
	run --separate-stderr fmt-shard concat in.csv short.csv -o bad-out.csv
	assert_failure 9
	[ "$stderr" = 'fmt-shard: error: short.csv: not the schema of in.csv: schema has 2 fields, expected 4' ]
	[ ! -e bad-out.csv ]
	run --separate-stderr fmt-shard concat in.csv all.csv -o all.csv
	assert_failure 2
	[ ! -e bad-out.csv ]
}

@test "fmt-inspect --quality: nulls, distinct, constant columns, duplicates and quantiles, text and JSON" {
	printf 'id,c,score\n1,k,2.5\n2,k,\n3,k,0.5\n2,k,\n' >q.csv
	run fmt-inspect --quality q.csv
	assert_success
	assert_output "$(cat <<'EOF'
rows: 4
duplicate rows: 1
name   type     nulls  null_rate  distinct  constant  min  max  mean  std       p1   p50  p99
id     int64    0      0.0        3         no        1    3    2.0   0.816497  1    2    3
c      utf8     0      0.0        1         yes       -    -    -     -         -    -    -
score  float64  2      0.5        2         no        0.5  2.5  1.5   1.41421   0.5  0.5  2.5
distinct: exact up to 65536 values per column, then HyperLogLog (2^14 registers, standard error 0.81%)
quantiles: discrete (as quantile_disc); exact up to 65536 values, then a uniform sample of 65536: rank error at most 0.64% with 99% probability
duplicate rows: rows equal in every column, by a 128-bit hash
EOF
)"
	fmt-convert q.csv q.ald
	run fmt-inspect --quality --json q.ald
	assert_success
	assert_output '{"file":"q.ald","format":"ald","rows":4,"duplicate_rows":1,"columns":[{"name":"id","type":"int64","nulls":0,"null_rate":0.0,"distinct":3,"distinct_exact":true,"constant":false,"min":1,"max":3,"mean":2.0,"std":0.81649658092772603,"p1":1,"p50":2,"p99":3,"quantiles_exact":true},{"name":"c","type":"utf8","nulls":0,"null_rate":0.0,"distinct":1,"distinct_exact":true,"constant":true},{"name":"score","type":"float64","nulls":2,"null_rate":0.5,"distinct":2,"distinct_exact":true,"constant":false,"min":0.5,"max":2.5,"mean":1.5,"std":1.4142135623730951,"p1":0.5,"p50":0.5,"p99":2.5,"quantiles_exact":true}],"method":{"distinct":"exact up to 65536 values per column, then HyperLogLog (2^14 registers, standard error 0.81%)","quantiles":"discrete (as quantile_disc); exact up to 65536 values, then a uniform sample of 65536: rank error at most 0.64% with 99% probability","duplicate_rows":"rows equal in every column, by a 128-bit hash"}}'
	make_samples
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	run --separate-stderr fmt-inspect --quality m.safetensors
	assert_failure 2
	[ "$stderr" = "fmt-inspect: error: m.safetensors: --schema, --head and --quality are for datasets, not models" ]
}

@test "fmt-inspect --quality: integers beyond 2^53 exactly (min, max, quantiles are values of the column), uint64 above 2^63" {
	# They went through a double: min 9007199254740992.0 and p50 ...996.0, values not in the
	# column, std 2.449 for 2.0 (as --stats never did). The mean, exactly 9007199254740995, is
	# the float64 ...996 (a tie, to even; --stats says so too), no longer ...994 (...992 + 2).
	printf 'a\n9007199254740993\n9007199254740995\n9007199254740997\n' >big.csv
	run fmt-inspect --json --quality big.csv
	assert_success
	[[ "$output" == *'"min":9007199254740993,"max":9007199254740997,"mean":9007199254740996.0,"std":2.0,"p1":9007199254740993,"p50":9007199254740995,"p99":9007199254740997,'* ]] || fail "$output"
	printf 'a\n-9223372036854775808\n9223372036854775807\n0\n' >ends.csv
	run fmt-inspect --json --quality ends.csv
	# the sum is -1: the mean -1/3 (it was 0.0, from -2^63 as a float64 plus the differences')
	[[ "$output" == *'"min":-9223372036854775808,"max":9223372036854775807,"mean":-0.33333333333333331,'*'"p50":0,'* ]] || fail "$output"
	printf 'u\n18446744073709551615\n0\n' >u.csv
	fmt-convert --schema <(printf '{"u": "uint64"}') u.csv u.ald
	run fmt-inspect --json --quality u.ald
	[[ "$output" == *'"min":0,"max":"18446744073709551615",'*'"p99":"18446744073709551615",'* ]] || fail "$output"
	run fmt-inspect --quality big.csv
	assert_line --index 3 --regexp '^a +int64 +0 +0\.0 +3 +no +9007199254740993 +9007199254740997 '
}

@test "the README's train/test split example prints what the README shows" {
	mkdir tour
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/readme_tour.py" "$REPO_ROOT/README.md" Datasets "$PWD/tour"
	assert_success
	assert_output ""
	[ -f tour/splits/train.csv ] && [ -f tour/all.csv ]
}

@test "a damaged input stops every operation with exit 4 and nothing written" {
	fmt-convert in.csv in.ald
	size=$(stat -c %s in.ald)
	head -c $((size - 20)) in.ald >cut.ald
	# a broken quote after the first batch: streaming has begun when it is found
	{ echo 'id,v'; seq 1 70000 | sed 's/$/,1/'; echo '70001,"x'; } >late.csv
	while IFS='|' read -r cmd message; do
		eval "run --separate-stderr $cmd"
		[ "$status" -eq 4 ] || fail "$cmd: exit $status ($stderr)"
		[ "$stderr" = "$message" ] || fail "$cmd: $stderr"
	done <<'MSG'
fmt-convert --sort id cut.ald o.csv|fmt-convert: error: cut.ald: payload runs past the CRC
fmt-convert --where 'v = 1' --rows 5: late.csv o.arrow|fmt-convert: error: late.csv: line 70002, column 2: a quoted field is not closed
fmt-convert --shuffle --memory 64KB late.csv o.ald|fmt-convert: error: late.csv: line 70002, column 2: a quoted field is not closed
fmt-shard split late.csv --fractions 0.5,0.5 -o parts|fmt-shard: error: late.csv: line 70002, column 2: a quoted field is not closed
fmt-shard concat in.csv late.csv -o all.csv|fmt-shard: error: late.csv: line 70002, column 2: a quoted field is not closed
fmt-inspect --quality cut.ald|fmt-inspect: error: cut.ald: payload runs past the CRC
MSG
	only_these_files cut.ald in.ald in.csv late.csv
}
