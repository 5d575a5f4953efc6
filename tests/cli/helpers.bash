# Shared set-up for the bats suites: the tools under test, the repository, scratch space.
REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
FMTKIT_BIN=${FMTKIT_BIN:-$REPO_ROOT/build/bin}
PATH="$FMTKIT_BIN:$PATH"
export PATH REPO_ROOT FMTKIT_BIN

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# Sample models (scripts/gen/sample-models) made once per suite into $SAMPLES.
make_samples() {
	SAMPLES="$BATS_FILE_TMPDIR/samples"
	export SAMPLES
	[ -d "$SAMPLES" ] || "$REPO_ROOT/scripts/gen/sample-models" "$SAMPLES"
}

# check_case DIR FILE: fmt-verify on DIR/FILE exits as DIR/cases.tsv says (file, exit, message
# substring) and, on failure, stderr carries the message and stdout stays empty.
check_case() {
	local dir=$1 file=$2 line exit_want msg
	line=$(awk -F'\t' -v f="$file" '$1 == f' "$dir/cases.tsv")
	[ -n "$line" ] || fail "no case $file in $dir/cases.tsv"
	exit_want=$(printf '%s' "$line" | cut -f2)
	msg=$(printf '%s' "$line" | cut -f3)
	run --separate-stderr fmt-verify "$dir/$file"
	[ "$status" -eq "$exit_want" ] || fail "exit $status, expected $exit_want; stderr: $stderr"
	if [ "$exit_want" -eq 0 ]; then
		[[ "$output" == *": ok ("* ]] || fail "no ok line: $output"
	else
		[ -n "$msg" ] || msg="unrecognised format"
		[[ "$stderr" == *"$msg"* ]] || fail "stderr lacks '$msg': $stderr"
		[ -z "$output" ] || fail "stdout not empty: $output"
	fi
}
