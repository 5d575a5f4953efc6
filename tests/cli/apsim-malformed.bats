#!/usr/bin/env bats
# Every case of scripts/gen/apsim-fixtures (specs/apsim.md §2-§7): good files, one malformed file per
# rule, good and broken shard sets; cases.tsv with fmt-verify FILE, cases-key.tsv with the shared
# secret given (--secret-file). Exact exit status and message; one test per case.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export CASES="$BATS_FILE_TMPDIR/cases"
	"$REPO_ROOT/scripts/gen/apsim-fixtures" "$CASES" >/dev/null
	verify_cases "$CASES"
}

# check_key_case DIR FILE SECRET: fmt-verify --secret-file (a file holding SECRET) on DIR/FILE
# exits as the line "FILE<TAB>SECRET<TAB>exit<TAB>message substring" of DIR/cases-key.tsv says;
# on failure stderr carries the message and stdout stays empty.
check_key_case() {
	local dir=$1 file=$2 secret=$3 line exit_want msg
	line=$(awk -F'\t' -v f="$file" -v s="$secret" '$1 == f && $2 == s' "$dir/cases-key.tsv")
	[ -n "$line" ] || fail "no case $file with secret '$secret' in $dir/cases-key.tsv"
	exit_want=$(printf '%s' "$line" | cut -f3)
	msg=$(printf '%s' "$line" | cut -f4)
	printf '%s\n' "$secret" >"$BATS_TEST_TMPDIR/secret"
	run --separate-stderr fmt-verify --secret-file "$BATS_TEST_TMPDIR/secret" "$dir/$file"
	[ "$status" -eq "$exit_want" ] || fail "exit $status, expected $exit_want; stderr: $stderr"
	if [ "$exit_want" -eq 0 ]; then
		[[ "$output" == *": ok ("* ]] || fail "no ok line: $output"
		[ -z "$stderr" ] || fail "stderr not empty: $stderr"
	else
		[[ "$stderr" == *"$msg"* ]] || fail "stderr lacks '$msg': $stderr"
		[ -z "$output" ] || fail "stdout not empty: $output"
	fi
}

@test "good-example-signed.apsim: exit 0" {
	check_verified "$CASES" good-example-signed.apsim
}

@test "good-example-unsigned.apsim: exit 0" {
	check_verified "$CASES" good-example-unsigned.apsim
}

@test "good-all-formats.apsim: exit 0" {
	check_verified "$CASES" good-all-formats.apsim
}

@test "good-extra-key.apsim: exit 0" {
	check_verified "$CASES" good-extra-key.apsim
}

@test "version-2.apsim: exit 5" {
	check_verified "$CASES" version-2.apsim
}

@test "missing-apsi.apsim: exit 4" {
	check_verified "$CASES" missing-apsi.apsim
}

@test "missing-metadata.apsim: exit 4" {
	check_verified "$CASES" missing-metadata.apsim
}

@test "sha256-uppercase.apsim: exit 4" {
	check_verified "$CASES" sha256-uppercase.apsim
}

@test "sha256-wrong.apsim: exit 6" {
	check_verified "$CASES" sha256-wrong.apsim
}

@test "data-flipped.apsim: exit 6" {
	check_verified "$CASES" data-flipped.apsim
}

@test "units-unknown-tensor.apsim: exit 4" {
	check_verified "$CASES" units-unknown-tensor.apsim
}

@test "units-six-dims.apsim: exit 4" {
	check_verified "$CASES" units-six-dims.apsim
}

@test "units-out-of-range.apsim: exit 4" {
	check_verified "$CASES" units-out-of-range.apsim
}

@test "units-on-scales.apsim: exit 4" {
	check_verified "$CASES" units-on-scales.apsim
}

@test "units-duplicate.apsim: exit 4" {
	check_verified "$CASES" units-duplicate.apsim
}

@test "units-deep.apsim: exit 4" {
	check_verified "$CASES" units-deep.apsim
}

@test "units-not-json.apsim: exit 4" {
	check_verified "$CASES" units-not-json.apsim
}

@test "metadata-not-object.apsim: exit 4" {
	check_verified "$CASES" metadata-not-object.apsim
}

@test "the user metadata record is checked by jansson's rules without a tree (issue 8)" {
	for f in metadata-real-overflow metadata-int-overflow metadata-duplicate metadata-deep metadata-trailing \
		metadata-lone-surrogate metadata-underflow-ok; do
		check_verified "$CASES" $f.apsim
	done
	run fmt-inspect --json --metadata "$CASES/metadata-underflow-ok.apsim"
	assert_success
	assert_equal "$(jq -c '[.metadata.a, .metadata.b, .metadata_types.b]' <<<"$output")" '[0,[true,false],"array[bool]"]'
}

@test "units-not-string.apsim: exit 4" {
	check_verified "$CASES" units-not-string.apsim
}

@test "qtensor-bad-format.apsim: exit 4" {
	check_verified "$CASES" qtensor-bad-format.apsim
}

@test "qtensor-wrong-packing.apsim: exit 4" {
	check_verified "$CASES" qtensor-wrong-packing.apsim
}

@test "qtensor-not-divisible.apsim: exit 4" {
	check_verified "$CASES" qtensor-not-divisible.apsim
}

@test "qtensor-unknown-member.apsim: exit 4" {
	check_verified "$CASES" qtensor-unknown-member.apsim
}

@test "qtensor-missing-member.apsim: exit 4" {
	check_verified "$CASES" qtensor-missing-member.apsim
}

@test "qtensor-codes-dtype.apsim: exit 4" {
	check_verified "$CASES" qtensor-codes-dtype.apsim
}

@test "qtensor-no-scales.apsim: exit 4" {
	check_verified "$CASES" qtensor-no-scales.apsim
}

@test "qtensor-axis-mismatch.apsim: exit 4" {
	check_verified "$CASES" qtensor-axis-mismatch.apsim
}

@test "scale-nan.apsim: exit 4" {
	check_verified "$CASES" scale-nan.apsim
}

@test "shard-zero.apsim: exit 4" {
	check_verified "$CASES" shard-zero.apsim
}

@test "signature-syntax.apsim: exit 4" {
	check_verified "$CASES" signature-syntax.apsim
}

@test "padding-tab.apsim: exit 4" {
	check_verified "$CASES" padding-tab.apsim
}

@test "format-other.apsim: exit 0" {
	check_verified "$CASES" format-other.apsim
}

@test "set-good/model.apsim.index.json: exit 0" {
	check_verified "$CASES" set-good/model.apsim.index.json
}

@test "set-missing-shard/model.apsim.index.json: exit 9" {
	check_verified "$CASES" set-missing-shard/model.apsim.index.json
}

@test "set-foreign-shard/model.apsim.index.json: exit 6" {
	check_verified "$CASES" set-foreign-shard/model.apsim.index.json
}

@test "set-weight-map/model.apsim.index.json: exit 9" {
	check_verified "$CASES" set-weight-map/model.apsim.index.json
}

@test "set-total-size/model.apsim.index.json: exit 9" {
	check_verified "$CASES" set-total-size/model.apsim.index.json
}

@test "set-units-differ/model.apsim.index.json: exit 9" {
	check_verified "$CASES" set-units-differ/model.apsim.index.json
}

@test "set-shard-twice/model.apsim.index.json: exit 9" {
	check_verified "$CASES" set-shard-twice/model.apsim.index.json
}

@test "set-traversal/model.apsim.index.json: exit 4" {
	check_verified "$CASES" set-traversal/model.apsim.index.json
}

@test "good-example-signed.apsim with secret 'team secret': exit 0" {
	check_key_case "$CASES" good-example-signed.apsim 'team secret'
}

@test "good-example-signed.apsim with secret 'team secreT': exit 7" {
	check_key_case "$CASES" good-example-signed.apsim 'team secreT'
}

@test "good-example-unsigned.apsim with secret 'team secret': exit 7" {
	check_key_case "$CASES" good-example-unsigned.apsim 'team secret'
}

@test "set-good/model.apsim.index.json with secret 'team secret': exit 0" {
	check_key_case "$CASES" set-good/model.apsim.index.json 'team secret'
}

@test "set-good/model.apsim.index.json with secret 'other': exit 7" {
	check_key_case "$CASES" set-good/model.apsim.index.json 'other'
}

@test "set-unsigned/model.apsim.index.json with secret 'team secret': exit 7" {
	check_key_case "$CASES" set-unsigned/model.apsim.index.json 'team secret'
}
