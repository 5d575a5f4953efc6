#!/usr/bin/env bats
# fmt-convert --include/--exclude on datasets (they name columns, as they name tensors in a
# model), and every option given for the other kind of file refused, never ignored. Issue 20,
# item 3 (the dataset half).

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	printf 'id,name,score,emb_x,emb_y\n1,ann,0.5,1.5,2.0\n2,"b, c",,3.0,4.25\n' >in.csv
}

@test "--include/--exclude keep the matching columns in input order, from and to every dataset format" {
	fmt-convert in.csv all.ald
	fmt-convert in.csv all.arrow
	fmt-convert in.csv all.arrows
	fmt-convert in.csv all.jsonl
	fmt-convert --chunk-rows 1 in.csv all-chunks.ald
	fmt-convert --trueno-native in.csv all-native.ald
	for input in in.csv all.ald all.arrow all.arrows all.jsonl all-chunks.ald all-native.ald; do
		for ext in csv jsonl arrow arrows ald; do
			rm -f "out.$ext"
			run fmt-convert --include 'emb_*' --include id --exclude '*_y' "$input" "out.$ext"
			assert_success
			run fmt-convert --to csv "out.$ext" -
			assert_output "$(printf 'id,emb_x\n1,1.5\n2,3.0')"
		done
	done
}

@test "--exclude alone, and a .ald output's own options, with a selection" {
	fmt-convert --exclude name --exclude 'emb_?' --chunk-rows 1 in.csv sel.ald
	run fmt-inspect --schema sel.ald
	assert_output "$(printf 'schema (2 columns):\n  id  int64  not null\n  score  float64')"
	run fmt-convert --to csv sel.ald -
	assert_output "$(printf 'id,score\n1,0.5\n2,')"
	# selecting every column is the plain conversion, byte for byte
	fmt-convert in.csv plain.arrow
	fmt-convert --include '*' in.csv every.arrow
	cmp plain.arrow every.arrow
}

@test "--dry-run and --json show the selected schema" {
	run fmt-convert --dry-run --include 'emb_*' in.csv x.ald
	assert_success
	assert_output "$(printf 'in.csv (csv) -> x.ald (ald), 2 rows\n  emb_x  float64  not null\n  emb_y  float64  not null')"
	[ ! -e x.ald ]
}

@test "selecting no column is exit 2 naming the patterns and the columns; nothing is written" {
	run --separate-stderr fmt-convert --include 'emb.*' --include 'Score' in.csv out.csv
	assert_failure 2
	[ "$stderr" = "fmt-convert: error: in.csv: --include 'emb.*', 'Score': no column matches (the columns: id, name, score, emb_x, emb_y)" ]
	[ -z "$output" ]
	fmt-convert in.csv in.ald
	run --separate-stderr fmt-convert --exclude '*' in.ald out.csv
	assert_failure 2
	[ "$stderr" = "fmt-convert: error: in.ald: --exclude '*': leaves no column (the columns: id, name, score, emb_x, emb_y)" ]
	run --separate-stderr fmt-convert --include 'emb_*' --exclude 'emb_x' --exclude 'emb_y' in.ald out.arrow
	assert_failure 2
	[ "$stderr" = "fmt-convert: error: in.ald: --exclude 'emb_x', 'emb_y': leaves no column (the columns: id, name, score, emb_x, emb_y)" ]
	run fmt-convert --json --exclude '*' in.ald out.jsonl
	assert_failure 2
	[ ! -e out.csv ] && [ ! -e out.arrow ] && [ ! -e out.jsonl ]
	# nothing but the inputs (bats keeps --separate-stderr's files, separate-stderr-XXXXXX, here:
	# a substring test for "out" failed once on one named separate-stderr-Gzvout)
	assert_equal "$(ls -A . | grep -v '^separate-stderr-')" "in.ald
in.csv"
}

# Every fmt-convert option that only a model conversion uses, given for a dataset output.
@test "options for models are refused for a dataset output, each named (exit 2, nothing written)" {
	printf '{}' >meta.json
	printf 'secret' >secret.txt
	while IFS='|' read -r opt name; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-convert $opt in.csv out.ald
		[ "$status" -eq 2 ] || fail "$opt: exit $status ($stderr)"
		[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-convert: error: --$name applies to models, not to datasets (the output is ald)" ] ||
			fail "$opt: $stderr"
		[ ! -e out.ald ] || fail "$opt: out.ald written"
	done <<'EOF'
--dtype f16|dtype
--dtype=keep|dtype
--apr-layout seed|apr-layout
--shard 1GB|shard
--sign|sign
--hmac-key|hmac-key
--secret-file secret.txt|secret-file
--key-secret-file secret.txt|secret-file
--secret-env HOME|secret-env
--secret-prompt|secret-prompt
--arch llama|arch
--set a=b|set
--set-from meta.json|set-from
--overflow saturate|overflow
--allow-overflow|allow-overflow
EOF
}

# Every option that only a dataset conversion uses, given for a model output.
@test "options for datasets are refused for a model output, each named (exit 2, nothing written)" {
	printf '{}' >s.json
	while IFS='|' read -r opt name; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-convert $opt in.csv out.safetensors
		[ "$status" -eq 2 ] || fail "$opt: exit $status ($stderr)"
		[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-convert: error: --$name applies to datasets, not to models: dataset options need a dataset output (.ald, .arrow, .feather, .arrows, .jsonl, .csv, .parquet or --to)" ] ||
			fail "$opt: $stderr"
		[ ! -e out.safetensors ] || fail "$opt: out.safetensors written"
	done <<'EOF'
--from csv|from
--no-header|no-header
--delimiter ;|delimiter
--null-value NA|null-value
--schema s.json|schema
--type tabular|type
--card s.json|card
--chunk-rows 2|chunk-rows
--trueno-native|trueno-native
--compat alimentar|compat
--encrypt-password-file s.json|encrypt-password-file
--encrypt-password-env HOME|encrypt-password-env
--encrypt-to s.json|encrypt-to
EOF
	# the decrypting options name themselves together
	for opt in '--password-file s.json' '--password-env HOME' '--identity s.json'; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-convert $opt in.csv out.safetensors
		assert_failure 2
		[[ "$stderr" == "fmt-convert: error: --password-file, --password-env and --identity decrypt a dataset (.ald) and need a dataset output"* ]]
	done
}

@test "options for either kind are taken for a dataset" {
	set -f
	while read -r opt; do
		rm -f out.ald
		# shellcheck disable=SC2086
		run fmt-convert $opt in.csv out.ald
		assert_success
	done <<'EOF'
--include *
--exclude nothing
--no-verify
-T 1
-q
-v
-j
--no-progress
-c lz4
--compress zstd
--to ald
EOF
	run fmt-convert --dry-run in.csv out2.ald
	assert_success
	[ ! -e out2.ald ]
}

@test "fmt-watermark embed: --tensors for a dataset and --columns for a model are refused" {
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	run --separate-stderr fmt-watermark embed --key seller.key --buyer b --tensors 'w*' in.csv out.csv
	assert_failure 2
	[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-watermark: error: --tensors selects a model's tensors, and OUT is a dataset (select its columns with --columns)" ]
	[ ! -e out.csv ]
	run --separate-stderr fmt-watermark embed --key seller.key --buyer b --columns score in.csv out.safetensors
	assert_failure 2
	[ "$(printf '%s\n' "$stderr" | head -n 1)" = "fmt-watermark: error: --columns selects a dataset's columns, and OUT is a model (select its tensors with --tensors)" ]
	[ ! -e out.safetensors ]
}

# Every dataset option that one format reads or writes, given where neither the input's nor the
# output's format uses it.
@test "a dataset option neither the input's nor the output's format uses is exit 2 naming it" {
	fmt-convert in.csv in.jsonl
	fmt-convert in.csv in.ald
	printf '{"id": "int32"}' >s.json
	printf '{"name": "x"}' >card.json
	while IFS='|' read -r opt input out name users; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-convert $opt "$input" "$out"
		[ "$status" -eq 2 ] || fail "$opt $input $out: exit $status ($stderr)"
		local want="fmt-convert: error: $input: --$name has no use with ${input##*.} input and ${out##*.} output (it is for $users)"
		[ "$stderr" = "$want" ] || fail "$opt: $stderr"
		[ ! -e "$out" ] || fail "$opt: $out written"
	done <<'EOF2'
--delimiter ;|in.jsonl|o.arrow|delimiter|csv input or csv output
--no-header|in.ald|o.csv|no-header|csv input
--null-value NA|in.jsonl|o.ald|null-value|csv input
--schema s.json|in.jsonl|o.ald|schema|csv input
-c lz4|in.csv|o.csv|compression|ald output, arrow output, arrow-stream output or parquet output
--compression zstd|in.ald|o.jsonl|compression|ald output, arrow output, arrow-stream output or parquet output
--type tabular|in.csv|o.arrow|type|ald output
--card card.json|in.csv|o.jsonl|card|ald output
--chunk-rows 2|in.jsonl|o.csv|chunk-rows|ald output
--trueno-native|in.ald|o.arrow|trueno-native|ald output
--compat alimentar|in.csv|o.csv|compat|ald output
EOF2
	# a key to decrypt an input that is not encrypted
	printf 'pw' >pw.txt
	fmt-sign keygen -W --x25519 -p r.pub -s r.key >/dev/null
	for opt in '--password-file pw.txt' '--password-env HOME' '--identity r.key'; do
		# shellcheck disable=SC2086
		run --separate-stderr fmt-convert $opt in.ald o.csv
		assert_failure 2
		[ "$stderr" = "fmt-convert: error: in.ald: ${opt%% *} has no use: the input is not encrypted" ] || fail "$stderr"
		[ ! -e o.csv ]
	done
	# where one side uses it, it is taken: the reader's or the writer's
	fmt-convert --delimiter ';' in.ald semi.csv
	run head -n 1 semi.csv
	assert_output 'id;name;score;emb_x;emb_y'
	fmt-convert --delimiter ';' semi.csv back.jsonl
	cmp in.jsonl back.jsonl
	fmt-convert --schema s.json --null-value NA in.csv typed.ald
	fmt-convert -c none in.ald plain.csv
	cmp in.csv plain.csv
}
