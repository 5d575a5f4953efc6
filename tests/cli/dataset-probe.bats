#!/usr/bin/env bats
# Content detection of the text dataset formats: a one-column CSV and a one-line JSON Lines file
# are recognised without --from, and nothing else is taken for them.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

format_of() {
	fmt-inspect --json "$1" | /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["format"])'
}

@test "a one-column CSV is CSV: header and values, with or without a final newline" {
	printf 'score\n1.5\n2.25\n-3\n' >a.csv
	[ "$(format_of a.csv)" = csv ]
	run fmt-inspect --json --head 5 a.csv
	assert_output '{"file":"a.csv","format":"csv","rows":3,"head":[{"score":1.5},{"score":2.25},{"score":-3.0}]}'
	printf 'name\n"say ""hi"""\nbob' >b.csv
	run fmt-inspect --json --head 2 b.csv
	assert_output '{"file":"b.csv","format":"csv","rows":2,"head":[{"name":"say \"hi\""},{"name":"bob"}]}'
	fmt-convert b.csv b.ald
	fmt-convert b.ald back.csv
	printf 'name\n"say ""hi"""\nbob\n' | cmp - back.csv
}

@test "a one-line JSON Lines file is JSON Lines, with or without a final newline" {
	printf '{"a":1,"b":"x, y","c":[1.5,2]}\n' >one.jsonl
	[ "$(format_of one.jsonl)" = jsonl ]
	run fmt-inspect --json --head 1 one.jsonl
	assert_output '{"file":"one.jsonl","format":"jsonl","rows":1,"head":[{"a":1,"b":"x, y","c":[1.5,2.0]}]}'
	printf '{"a":true}' >two.jsonl
	[ "$(format_of two.jsonl)" = jsonl ]
	fmt-convert two.jsonl two.ald
	[ "$(fmt-inspect --json two.ald | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"])')" = 1 ]
}

@test "a one-line JSON Lines file whose record holds an object (or objects in a list) is JSON Lines, with or without a final newline (old: unrecognised format)" {
	printf '{"id":1,"meta":{"source":"web","tags":["a"]},"text":"hi"}\n' >nested.jsonl
	[ "$(format_of nested.jsonl)" = jsonl ]
	run fmt-inspect --json --head 1 nested.jsonl
	assert_success
	assert_output '{"file":"nested.jsonl","format":"jsonl","rows":1,"head":[{"id":1,"meta":"{\"source\":\"web\",\"tags\":[\"a\"]}","text":"hi"}]}'
	printf '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}],"ok":{"v":true}}' >chat.jsonl
	[ "$(format_of chat.jsonl)" = jsonl ]
	fmt-convert chat.jsonl chat.ald
	[ "$(fmt-inspect --json chat.ald | jq -c '[.rows, [.schema.fields[] | .name + ":" + .type]]')" = '[1,["messages:utf8","ok:utf8"]]' ]
	# the same as --from jsonl says
	fmt-convert --from jsonl chat.jsonl forced.ald
	cmp chat.ald forced.ald
	# a JSON object (a config) written on one line is the same bytes as such a record: a dataset
	printf '{"model":{"layers":12},"name":"x"}\n' >config.json
	[ "$(format_of config.json)" = jsonl ]
}

@test "a CSV whose header line is longer than the probe's 4 KiB is CSV (3,000 columns); one long line of prose is not" {
	/usr/bin/python3 -c 'import sys
names = ["column_%d" % i for i in range(3000)]
spaced = ["First Name %d" % i for i in range(600)]
open("wide.csv", "w").write(",".join(names) + "\n" + ",".join(str(i) for i in range(3000)) + "\n")
open("spaced.csv", "w").write(",".join(spaced) + "\n" + ",".join("x" for i in range(600)) + "\n")
open("prose.txt", "w").write("A paragraph, kept on one line, with a comma here and there, as prose has them. " * 80 + "\n")'
	[ "$(format_of wide.csv)" = csv ]
	[ "$(format_of spaced.csv)" = csv ]
	run fmt-inspect --json --head 1 wide.csv
	assert_success
	[ "$(jq -r '.head[0].column_2999' <<<"$output")" = 2999 ]
	fmt-convert wide.csv wide.arrow
	[ "$(fmt-inspect --json wide.arrow | jq '.schema.fields | length')" = 3000 ]
	run --separate-stderr fmt-inspect prose.txt
	assert_failure 4
	[[ "$stderr" == *"prose.txt: unrecognised format"* ]]
}

@test "no false positives: documents, prose, header-only and binary files are not datasets" {
	printf '{\n  "model": {"layers": 12},\n  "name": "x"\n}\n' >config.json  # a document over several lines
	printf '[{"a":1},{"a":2}]\n' >array.json                         # a top-level array
	printf '{}\n' >empty.json
	printf 'not a model' >junk.bin                                 # no line end
	printf 'x\n' >header-only.csv                                  # no record
	printf '# Title\nsome text\n' >readme.md                        # markup
	printf '[1,2]\n[3,4]\n' >arrays.txt
	printf 'a\001b\nc\n' >control.bin
	printf 'ab\000\ncd\n' >nul.bin
	for f in config.json array.json empty.json junk.bin header-only.csv readme.md arrays.txt control.bin nul.bin; do
		run --separate-stderr fmt-inspect "$f"
		[ "$status" -eq 4 ] || { echo "$f: exit $status: $output"; false; }
		[[ "$stderr" == *"$f: unrecognised format"* ]] || { echo "$f: $stderr"; false; }
	done
}

@test "the other formats keep their driver, also written on one line" {
	for dir in "$REPO_ROOT"/tests/data/conformance/*/; do
		want=$(basename "$dir")
		for f in "$dir"*; do
			case "$f" in *-0000[1-9]-of-*) continue ;; esac
			[ "$(format_of "$f")" = "$want" ] || { echo "$f: $(format_of "$f"), expected $want"; false; }
		done
	done
	dir="$REPO_ROOT/tests/data/conformance"
	cp "$dir"/safetensors-index/* . && /usr/bin/python3 -c 'import json; d=json.load(open("model.safetensors.index.json"))
open("model.safetensors.index.json","w").write(json.dumps(d))'
	[ "$(wc -l <model.safetensors.index.json)" -eq 0 ]
	[ "$(format_of model.safetensors.index.json)" = safetensors-index ]
	cp "$dir"/apsim-index/* . && /usr/bin/python3 -c 'import json; d=json.load(open("model.apsim.index.json"))
open("model.apsim.index.json","w").write(json.dumps(d) + "\n")'
	[ "$(format_of model.apsim.index.json)" = apsim-index ]
}

@test ".feather is an output extension of the Arrow IPC file driver (Feather v2), read back by content" {
	printf 'id,name\n1,ann\n2,\n' >in.csv
	run fmt-convert in.csv out.feather
	assert_success
	[ "$(head -c 6 out.feather)" = ARROW1 ]
	[ "$(tail -c 6 out.feather)" = ARROW1 ]
	[ "$(format_of out.feather)" = arrow ]
	fmt-convert in.csv out.arrow
	cmp out.arrow out.feather
	fmt-convert out.feather back.csv
	cmp in.csv back.csv
	run fmt-convert --chunk-rows 2 in.csv out.txt
	assert_failure 2
	assert_output --partial "dataset options need a dataset output (.ald, .arrow, .feather, .arrows, .jsonl, .csv, .parquet or --to)"
}
