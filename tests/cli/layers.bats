#!/usr/bin/env bats
# scripts/check-layers: the layers of libcommon (core <- tensor <- formats <- data/bundle <- pipeline,
# crypto beside core) and the fmt_ prefix of every exported symbol. It passes on this tree and
# fails, naming the file and the rule, on a copy of the tree with one violation put in.

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

@test "bad usage is exit 2" {
	run "$REPO_ROOT/scripts/check-layers" --bogus
	assert_failure 2
}
