#!/usr/bin/env bats
# The README's tour works as shown: its commands run in order in the folder `make demo` leaves
# (scripts/demo, here into a scratch folder) and print exactly what the README shows
# (tests/cli/readme_tour.py compares them).

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	export HOME=$BATS_TEST_TMPDIR/home XDG_CONFIG_HOME=$BATS_TEST_TMPDIR/home/.config
	mkdir -p "$HOME"
}

@test "every command of the README's tour prints what the README shows, in the folder make demo leaves" {
	FMTKIT_DEMO_DIR=$BATS_TEST_TMPDIR/demo run "$REPO_ROOT/scripts/demo"
	assert_success
	[ -f "$BATS_TEST_TMPDIR/demo/tiny.safetensors" ] || fail "scripts/demo left no tiny.safetensors"
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/readme_tour.py" "$REPO_ROOT/README.md" "A short tour" "$BATS_TEST_TMPDIR/demo"
	assert_success
	assert_output ""
}

@test "the tour checker names a command whose output differs from the README's" {
	mkdir -p "$BATS_TEST_TMPDIR/w"
	cat >"$BATS_TEST_TMPDIR/README.md" <<'MD'
## Tour

```console
$ echo one; echo two
one
...
$ printf 'a b c\n'
a ... c
$ echo printed
```
MD
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/readme_tour.py" "$BATS_TEST_TMPDIR/README.md" Tour "$BATS_TEST_TMPDIR/w"
	assert_failure 1
	assert_output "$(printf '$ echo printed\n  shown:\n  printed (exit 0):\n    printed\n')"
}
