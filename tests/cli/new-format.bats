#!/usr/bin/env bats
# The dry run of adding a format: in a copy of the tree, the dummy driver of the unit tests
# (tests/unit/dummy_driver.c) becomes libcommon/formats/dummy/dummy.c and the registry
# (libcommon/registry/registry.c) gets one line; the ttab table driver (tests/unit/ttab_driver.c)
# becomes libcommon/formats/ttab/ttab.c and the registry gets one line. Nothing else is edited;
# the tools then convert to and from them, inspect and verify them, and name them in their
# messages, and the layering check (includes and objects) still passes.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	TREE="$BATS_FILE_TMPDIR/tree"
	export TREE
	mkdir -p "$TREE"
	cp -rp "$REPO_ROOT/GNUmakefile" "$REPO_ROOT/libcommon" "$REPO_ROOT/tools" "$REPO_ROOT/scripts" "$TREE/"
	# The built objects, timestamps kept, so that make recompiles only what changes.
	[ ! -d "$REPO_ROOT/build/obj" ] || cp -rp "$REPO_ROOT/build" "$TREE/"
	cp -rp "$TREE/libcommon" "$BATS_FILE_TMPDIR/libcommon.before"
	mkdir "$TREE/libcommon/formats/dummy"
	cp "$REPO_ROOT/tests/unit/dummy_driver.c" "$TREE/libcommon/formats/dummy/dummy.c"
	sed -i 's|^\t/\* a new driver: one X(fmt_driver_NAME)|\tX(fmt_driver_dummy) \\\n&|' "$TREE/libcommon/registry/registry.c"
	mkdir "$TREE/libcommon/formats/ttab"
	cp "$REPO_ROOT/tests/unit/ttab_driver.c" "$TREE/libcommon/formats/ttab/ttab.c"
	sed -i 's|^\t/\* a new table driver: one TABLE(fmt_table_driver_NAME)|\tTABLE(fmt_table_driver_ttab) \\\n&|' \
		"$TREE/libcommon/registry/registry.c"
	make -C "$TREE" -j2 build/libfmtcommon.a build/bin/fmt-convert build/bin/fmt-inspect build/bin/fmt-verify \
		>"$BATS_FILE_TMPDIR/build.log" 2>&1
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	NEW="$TREE/build/bin"
}

@test "the places touched: the driver's own folder and one registry line" {
	run diff -r "$BATS_FILE_TMPDIR/libcommon.before" "$TREE/libcommon"
	assert_failure 1
	# Exactly three differences: the two new folders, and one added line for each in the one
	# registry.
	assert_equal "$(printf '%s\n' "$output" | grep -c '^Only in ')" 2
	assert_line "Only in $TREE/libcommon/formats: dummy"
	assert_line "Only in $TREE/libcommon/formats: ttab"
	assert_equal "$(printf '%s\n' "$output" | grep -c '^diff ')" 1
	assert_line --partial "libcommon/registry/registry.c"
	assert_equal "$(printf '%s\n' "$output" | grep -c '^> ')" 2
	assert_equal "$(printf '%s\n' "$output" | grep -c '^< ')" 0
	assert_line "> 	X(fmt_driver_dummy) \\"
	assert_line "> 	TABLE(fmt_table_driver_ttab) \\"
}

@test "the tools convert to and from the new format, inspect and verify it" {
	make_samples
	# I64 has no dummy equivalent: refused, naming the format by its title.
	run --separate-stderr "$NEW/fmt-convert" "$SAMPLES/tiny.safetensors" m.dmy
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: $SAMPLES/tiny.safetensors: tensor 'step': I64 has no dummy equivalent"
	run "$NEW/fmt-convert" -q --exclude step "$SAMPLES/tiny.safetensors" m.dmy
	assert_success
	head -c 8 m.dmy | grep -q DUMMYFMT
	run "$NEW/fmt-inspect" --json m.dmy
	assert_success
	[ "$(printf '%s' "$output" | jq -r .format)" = dummy ]
	[ "$(printf '%s' "$output" | jq '.tensors | length')" = 4 ]
	run "$NEW/fmt-verify" m.dmy
	assert_success
	assert_output --partial "m.dmy: ok (dummy, 4 tensors"
	run "$NEW/fmt-convert" -q m.dmy back.safetensors
	assert_success
	run "$NEW/fmt-inspect" --tensor layers.0.weight --stats --json back.safetensors
	assert_success
	run "$NEW/fmt-inspect" --tensor layers.0.weight --stats --json "$SAMPLES/tiny.safetensors"
	want=$output
	run "$NEW/fmt-inspect" --tensor layers.0.weight --stats --json back.safetensors
	assert_equal "$(printf '%s' "$output" | jq -c .stats)" "$(printf '%s' "$want" | jq -c .stats)"
}

@test "messages that list formats name the new one" {
	printf 'junk bytes' >junk.bin
	run --separate-stderr "$NEW/fmt-inspect" junk.bin
	assert_failure 4
	[[ "$stderr" == *"not one of: safetensors, safetensors-index, gguf, apsim, apsim-index, apr, nk, onnx, dummy, ald, arrow, arrow-stream, jsonl, csv, parquet, ttab)" ]]
	make_samples
	run --separate-stderr "$NEW/fmt-convert" --dtype q8_0 "$SAMPLES/tiny.safetensors" m.dmy
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype q8_0 needs GGUF output (dummy cannot hold it)
Try 'fmt-convert --help'."
}

@test "the tools convert datasets to and from the new table format and inspect it" {
	printf 'id,name,ok\n1,ann,true\n2,,false\n-3,"b ""c""",true\n' >in.csv
	run "$NEW/fmt-convert" in.csv t.ttab
	assert_success
	assert_equal "$(cat t.ttab)" "$(printf '#ttab\nid:int64,name:utf8?,ok:bool\n1,ann,true\n2,,false\n-3,b "c",true')"
	run "$NEW/fmt-inspect" --json --head 3 t.ttab
	assert_success
	[ "$(printf '%s' "$output" | jq -r .format)" = ttab ]
	[ "$(printf '%s' "$output" | jq -c '.head[0]')" = '{"id":1,"name":"ann","ok":true}' ]
	printf '#ttab\nid:int64,ok:bool\n1,true\n2,\n' >u.ttab
	"$NEW/fmt-convert" u.ttab u.ald
	run "$NEW/fmt-convert" u.ald back.csv
	assert_success
	assert_equal "$(cat back.csv)" "$(printf 'id,ok\n1,true\n2,false')"
	printf 'x\n1.5\n' >f.csv
	run --separate-stderr "$NEW/fmt-convert" f.csv f.ttab
	assert_failure 5
	[[ "$stderr" == *"column 'x': ttab cannot hold float64"* ]]
}

@test "the new table format's own option: in fmt-convert --help under its heading, its value given to its driver" {
	run "$NEW/fmt-convert" --help
	assert_success
	# its heading, then its option (declared in ttab.c only)
	[ "$(printf '%s\n' "$output" | grep -A1 -x 'Options for ttab:' | tail -n 1 | tr -s ' ')" = \
		" --ttab-bools HOW booleans as words (default) or digits" ] || fail "$output"
	run "$FMTKIT_BIN/fmt-convert" --help
	refute_output --partial ttab
	printf 'id,ok\n1,true\n2,false\n' >in.csv
	run "$NEW/fmt-convert" --ttab-bools digits in.csv d.ttab
	assert_success
	assert_equal "$(cat d.ttab)" "$(printf '#ttab\nid:int64,ok:bool\n1,1\n2,0')"
	"$NEW/fmt-convert" --ttab-bools words in.csv w.ttab
	assert_equal "$(cat w.ttab)" "$(printf '#ttab\nid:int64,ok:bool\n1,true\n2,false')"
	# a bad value: the driver's own message, exit 2, nothing written
	run --separate-stderr "$NEW/fmt-convert" --ttab-bools yes in.csv x.ttab
	assert_failure 2
	[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-convert: error: --ttab-bools takes words or digits (not 'yes')" ] || fail "$stderr"
	[ ! -e x.ttab ]
	# where neither side's format uses it: refused, naming who does
	run --separate-stderr "$NEW/fmt-convert" --ttab-bools digits in.csv x.csv
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: in.csv: --ttab-bools has no use with csv input and csv output (it is for ttab output)"
	[ ! -e x.csv ]
	# a table driver's option is a dataset option
	run --separate-stderr "$NEW/fmt-convert" --ttab-bools digits in.csv x.safetensors
	assert_failure 2
	[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-convert: error: --ttab-bools applies to datasets, not to models: dataset options need a dataset output (.ald, .arrow, .feather, .arrows, .jsonl, .csv, .parquet, .ttab or --to)" ] ||
		fail "$stderr"
	# the completions' source lists it with its described values
	run "$NEW/fmt-convert" --dump-options
	assert_line $'option\tttab-bools\t-\tHOW\twords\twords digits\t-\t0\t0\tbooleans as words (default) or digits'
	assert_line $'value\tdigits\t-\t1 and 0'   # value WORD COMMANDS HELP (- : every subcommand)
}

@test "the tree with the new format keeps its layers" {
	run "$TREE/scripts/check-layers" --root "$TREE" --lib "$TREE/build/libfmtcommon.a" --objects "$TREE/build/obj/libcommon"
	assert_success
	assert_output "check-layers: ok"
}
