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
