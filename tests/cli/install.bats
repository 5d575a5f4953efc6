#!/usr/bin/env bats
# make install puts the tools, their manual pages and both shells' completions under PREFIX, and
# make uninstall takes away every file it put there.

setup() {
	load '/usr/lib/bats/bats-support/load'
	load '/usr/lib/bats/bats-assert/load'
	REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	FMTKIT_BIN=${FMTKIT_BIN:-$REPO_ROOT/build/bin}
	# The build tree the binaries under test come from, so that make finds it up to date.
	BUILD_DIR=$(cd "$FMTKIT_BIN/.." && pwd)
	TOOLS=($(cd "$REPO_ROOT/tools" && ls -d */ | tr -d /))
}

@test "make install installs every tool, page and completion; make uninstall removes them all" {
	prefix=$BATS_TEST_TMPDIR/prefix
	run make -s -C "$REPO_ROOT" BUILD="$BUILD_DIR" PREFIX="$prefix" install
	assert_success
	for tool in "${TOOLS[@]}"; do
		[ -x "$prefix/bin/$tool" ] || fail "bin/$tool not installed"
		[ -f "$prefix/share/man/man1/$tool.1" ] || fail "man1/$tool.1 not installed"
		[ -f "$prefix/share/bash-completion/completions/$tool" ] || fail "bash completion of $tool not installed"
		[ -f "$prefix/share/zsh/site-functions/_$tool" ] || fail "zsh completion of $tool not installed"
	done
	[ -f "$prefix/share/man/man7/fmtkit.7" ] || fail "man7/fmtkit.7 not installed"
	[ -f "$prefix/share/man/man7/fmtkit-watermark.7" ] || fail "man7/fmtkit-watermark.7 not installed"
	expected=$(( ${#TOOLS[@]} * 4 + 2 ))
	assert_equal "$(find "$prefix" ! -type d | wc -l)" "$expected"
	run env MANPATH="$prefix/share/man" man -w fmt-verify
	assert_success
	assert_output "$prefix/share/man/man1/fmt-verify.1"

	run make -s -C "$REPO_ROOT" BUILD="$BUILD_DIR" PREFIX="$prefix" uninstall
	assert_success
	run find "$prefix" ! -type d
	assert_success
	assert_output ""
}

@test "make uninstall leaves files it did not install alone" {
	prefix=$BATS_TEST_TMPDIR/prefix
	mkdir -p "$prefix/bin" "$prefix/share/man/man1"
	echo other >"$prefix/bin/fmt-other"
	echo other >"$prefix/share/man/man1/other.1"
	run make -s -C "$REPO_ROOT" BUILD="$BUILD_DIR" PREFIX="$prefix" uninstall
	assert_success
	assert_equal "$(cat "$prefix/bin/fmt-other" "$prefix/share/man/man1/other.1")" "other
other"
}
