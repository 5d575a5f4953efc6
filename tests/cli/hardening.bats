#!/usr/bin/env bats
# Issue 8 (hardening): hostile files from scripts/gen/hostile-memory and scripts/gen/hostile-bundles.
# Each test asserts the exit status and that nothing is left or changed on disk.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export HOSTILE="$BATS_FILE_TMPDIR/hostile"
	# A quarter of the benchmark's sizes: the same shapes, quick to make.
	"$REPO_ROOT/scripts/gen/hostile-memory" "$HOSTILE/memory" 0.25
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
}

# Sanitizer builds reserve terabytes of address space: a ulimit -v cannot apply to them.
asan_build() {
	grep -q __asan_init "$FMTKIT_BIN/fmt-inspect"
}

# run_bounded FILE CMD...: run CMD under ulimit -v = 16 x FILE's size + 64 MB (issue 8, item 3).
run_bounded() {
	local file=$1
	shift
	asan_build && skip "sanitizer build: address-space limit not applicable"
	local kb=$(( (16 * $(stat -c %s "$file") + 64 * 1048576) / 1024 ))
	run --separate-stderr bash -c 'ulimit -v "$1"; shift; exec "$@"' _ "$kb" "$@"
}

@test "memory: GGUF U8 array of 2^23 items, inspect and verify within 16x + 64 MB" {
	f=$HOSTILE/memory/gguf-u8-array.gguf
	run_bounded "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(jq -c '.metadata_types["hostile.array"]' <<<"$output")" '"array[u8]"'
	assert_equal "$(jq -c '.metadata["hostile.array"][-1]' <<<"$output")" '{"truncated":8388608}'
	run_bounded "$f" fmt-verify "$f"
	assert_success
	run_bounded "$f" fmt-inspect --metadata --full "$f"
	assert_success
	assert_equal "$(grep -o '0, ' <<<"$output" | wc -l)" 8388607
}

@test "memory: .apsim record of 3 million zeros, inspect and verify within 16x + 64 MB" {
	f=$HOSTILE/memory/apsim-zeros.apsim
	run_bounded "$f" fmt-verify "$f"
	assert_success
	run_bounded "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(jq -c '[.metadata_types.a, .metadata.a[0], .metadata.a[-1]]' <<<"$output")" \
		'["array[i64]",0,{"truncated":3000000}]'
}

@test "memory: safetensors header of 250000 empty tensors, inspect --json and verify within 16x + 64 MB" {
	f=$HOSTILE/memory/st-million.safetensors
	run_bounded "$f" fmt-inspect --json "$f"
	assert_success
	assert_equal "$(jq -c '[.tensor_count, (.tensors|length), .tensors[-1].name]' <<<"$output")" '[250000,250000,"t0249999"]'
	run_bounded "$f" fmt-verify "$f"
	assert_success
	f=$HOSTILE/memory/st-million-meta.safetensors
	run_bounded "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(jq -r '.metadata.note|length' <<<"$output")" 15000000
}

# Item 10: a FIFO at a key path is refused at once (timeout would give 124).
@test "keys: a FIFO as the per-user HMAC key is refused, never waited on (exit 2)" {
	mkdir -p home/.config/fmtkit
	mkfifo -m 600 home/.config/fmtkit/hmac.key
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" f.apsim
	run --separate-stderr env HOME="$PWD/home" XDG_CONFIG_HOME= timeout 10 fmt-verify --hmac-key f.apsim
	assert_equal "$status" 2
	[[ "$stderr" == *"hmac.key: the HMAC key is not a regular file"* ]] || fail "$stderr"
	[ -p home/.config/fmtkit/hmac.key ] && cmp -s f.apsim "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
	assert_equal "$(ls -A home/.config/fmtkit)" hmac.key
}

@test "keys: a symbolic link as the per-user HMAC key is refused (exit 2)" {
	mkdir -p home/.config/fmtkit
	head -c 32 /dev/urandom >real.key
	chmod 600 real.key
	ln -s "$PWD/real.key" home/.config/fmtkit/hmac.key
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" f.apsim
	run --separate-stderr env HOME="$PWD/home" XDG_CONFIG_HOME= timeout 10 fmt-verify --hmac-key f.apsim
	assert_equal "$status" 2
	[[ "$stderr" == *"the HMAC key is a symbolic link"* ]] || fail "$stderr"
}

@test "keys: a FIFO nobody writes to as --secret-file is refused as empty, a pipe still works" {
	mkfifo sec
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" f.apsim
	run --separate-stderr timeout 10 fmt-verify --secret-file sec f.apsim
	assert_equal "$status" 2
	[[ "$stderr" == *"secret file sec is empty"* ]] || fail "$stderr"
	run --separate-stderr timeout 10 fmt-verify --secret-file /dev/null/x f.apsim
	assert_equal "$status" 3
	mkdir d
	run --separate-stderr timeout 10 fmt-verify --secret-file d f.apsim
	assert_equal "$status" 2
	[[ "$stderr" == *"secret file d is not a regular file or a pipe"* ]] || fail "$stderr"
	run --separate-stderr bash -c 'timeout 10 fmt-verify --secret-file <(printf "team secret\n") f.apsim'
	assert_success
}
