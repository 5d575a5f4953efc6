#!/usr/bin/env bats
# scripts/check-layers: the layers of libcommon (core <- tensor <- formats <- data/bundle <- pipeline
# <- cli, crypto beside core, watermark on core), the fmt_ prefix of every exported symbol, and that
# below cli no object talks to the user (standard streams, printf and the like, /dev/tty). It
# passes on this tree and fails, naming the file and the rule, on a copy of the tree with one
# violation put in.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	LIB="$FMTKIT_BIN/../libfmtcommon.a"
}

# A copy of libcommon/ (sources and headers only) to break.
copy_tree() {
	mkdir -p tree
	cp -r "$REPO_ROOT/libcommon" tree/
}

@test "this tree keeps its layers and prefixes" {
	run "$REPO_ROOT/scripts/check-layers" --lib "$LIB"
	assert_success
	assert_output "check-layers: ok"
}

@test "core including a formats header fails, naming file, line and modules" {
	copy_tree
	printf '#include "fmt/registry.h"\n' >>tree/libcommon/core/err.c
	line=$(wc -l <tree/libcommon/core/err.c)
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/core/err.c:$line: core includes fmt/registry.h of formats, which core may not use (points up or sideways)"
}

@test "a public header pointing up fails (core's out.h including the model)" {
	copy_tree
	sed -i 's|#include "fmt/err.h"|#include "fmt/err.h"\n#include "fmt/model.h"|' tree/libcommon/include/fmt/out.h
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree
	assert_failure 1
	[[ "$stderr" == *"libcommon/include/fmt/out.h:"*": core includes fmt/model.h of tensor"* ]]
}

@test "crypto and tensor sit beside each other: neither includes the other" {
	copy_tree
	printf '#include "fmt/crypto.h"\n' >>tree/libcommon/tensor/dtype.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree
	assert_failure 1
	[[ "$stderr" == *"libcommon/tensor/dtype.c:"*": tensor includes fmt/crypto.h of crypto"* ]]
}

@test "a format folder's header belongs to formats: data may use it, tensor may not" {
	copy_tree
	printf '#include "fmt/gguf.h"\n' >>tree/libcommon/data/table.c
	run "$REPO_ROOT/scripts/check-layers" --root tree
	assert_success
	printf '#include "fmt/gguf.h"\n' >>tree/libcommon/tensor/model.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree
	assert_failure 1
	[[ "$stderr" == *"tensor includes fmt/gguf.h of formats"* ]]
}

@test "a module outside the layers fails" {
	copy_tree
	mkdir tree/libcommon/extra
	printf 'int fmt_extra(void);\n' >tree/libcommon/extra/extra.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/extra/extra.c: module 'extra' has no place in the layers (add it to ALLOWED in scripts/check-layers)"
}

@test "an exported symbol without the fmt_ prefix fails; static and fmt_ ones pass" {
	printf 'static int hidden(void) { return 1; }\nint fmt_fine(void) { return hidden(); }\nint helper_table[4];\nint gguf_helper(void) { return 2; }\n' >sym.c
	cc -c sym.c -o sym.o
	ar rcs libsym.a sym.o
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --lib libsym.a
	assert_failure 1
	assert_equal "$stderr" "check-layers: libsym.a(sym.o): exports gguf_helper without the fmt_ prefix (make it static or name it fmt_...)
check-layers: libsym.a(sym.o): exports helper_table without the fmt_ prefix (make it static or name it fmt_...)"
}

# The library's objects as built, with the copy's libcommon/$1 compiled again in their place.
objects_with() {
	mkdir -p build/obj
	cp -r "$FMTKIT_BIN/../obj/libcommon" build/obj/
	cp "$LIB" build/libfmtcommon.a
	cc -O2 -std=c11 -D_GNU_SOURCE -Itree/libcommon/include -c "tree/libcommon/$1" -o "build/obj/libcommon/${1%.c}.o"
}

@test "below cli, writing to the standard streams fails, one line per symbol" {
	copy_tree
	printf 'void fmt_err_shout(void);\nvoid fmt_err_shout(void) { fputs("x", stderr); puts("y"); }\n' \
		>>tree/libcommon/core/err.c
	objects_with core/err.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree --lib build/libfmtcommon.a
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/core/err.c: core references puts, below cli nothing talks to the user (return the text, write to a FILE* the caller gives, or call a hook the tool sets; the printing belongs in libcommon/cli/)
check-layers: libcommon/core/err.c: core references stderr, below cli nothing talks to the user (return the text, write to a FILE* the caller gives, or call a hook the tool sets; the printing belongs in libcommon/cli/)"
}

@test "the CLI layer writes to the standard streams: that passes" {
	copy_tree
	printf 'void fmt_cli_shout(void);\nvoid fmt_cli_shout(void) { fputs("x", stderr); puts("y"); }\n' \
		>>tree/libcommon/cli/report.c
	objects_with cli/report.c
	run "$REPO_ROOT/scripts/check-layers" --root tree --lib build/libfmtcommon.a
	assert_success
	assert_output "check-layers: ok"
}

@test "below cli, writing to a FILE* the caller gives passes" {
	copy_tree
	printf 'void fmt_err_to(FILE *f);\nvoid fmt_err_to(FILE *f) { fputs("x", f); }\n' >>tree/libcommon/core/err.c
	objects_with core/err.c
	run "$REPO_ROOT/scripts/check-layers" --root tree --lib build/libfmtcommon.a
	assert_success
	assert_output "check-layers: ok"
}

@test "below cli, opening the terminal fails" {
	copy_tree
	printf '#include <fcntl.h>\nint fmt_err_tty(void);\nint fmt_err_tty(void) { return open("/dev/tty", O_RDWR); }\n' \
		>>tree/libcommon/crypto/mac.c
	objects_with crypto/mac.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree --lib build/libfmtcommon.a
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/crypto/mac.c: crypto opens /dev/tty, below cli nothing asks the terminal (take the prompt as a hook the tool sets; prompts belong in libcommon/cli/)"
}

@test "bad usage is exit 2" {
	run "$REPO_ROOT/scripts/check-layers" --bogus
	assert_failure 2
}
