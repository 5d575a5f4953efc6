#!/usr/bin/env bats
# scripts/check-layers: the layers of libcommon (core <- tensor <- table <- formats <- registry <-
# bundle <- pipeline <- cli, crypto beside tensor, watermark on core; the format folders beside each
# other), between files (includes) and between objects (symbols, from nm), the fmt_ prefix of every
# exported symbol, and that below cli no object talks to the user (standard streams, printf and the
# like, /dev/tty). It passes on this tree and fails, naming the file and the rule, on a copy of the
# tree (or a small tree of objects) with one violation put in.

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
	run "$REPO_ROOT/scripts/check-layers" --lib "$LIB" --objects "$FMTKIT_BIN/../obj/libcommon"
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

@test "a format folder's header belongs to formats: the registry may use it, the table model may not" {
	copy_tree
	printf '#include "fmt/gguf.h"\n' >>tree/libcommon/registry/open.c
	run "$REPO_ROOT/scripts/check-layers" --root tree
	assert_success
	printf '#include "fmt/gguf.h"\n' >>tree/libcommon/table/table.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree
	assert_failure 1
	[[ "$stderr" == *"libcommon/table/table.c:"*": table includes fmt/gguf.h of formats"* ]]
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

# A small tree of objects: add_object REL 'C source' writes tree/libcommon/REL.c and compiles it
# to objs/REL.o.
add_object() {
	mkdir -p "tree/libcommon/$(dirname "$1")" "objs/$(dirname "$1")"
	printf '%s\n' "$2" >"tree/libcommon/$1.c"
	cc -c "tree/libcommon/$1.c" -o "objs/$1.o"
}

@test "objects: a use of a module above fails, naming both objects, the symbol and the modules" {
	add_object core/low 'int fmt_low(void) { return 1; }'
	add_object tensor/high 'int fmt_low(void); int fmt_high(void) { return fmt_low(); }'
	run "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_success
	add_object core/low 'int fmt_high(void); int fmt_low(void) { return fmt_high() - 1; }'
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/core/low.c: core uses fmt_high of libcommon/tensor/high.c (tensor), which core may not use (points up or sideways)
check-layers: a cycle of objects across core, tensor: libcommon/core/low.o libcommon/tensor/high.o"
}

@test "objects: format folders sit beside each other, on formats/*.c and below the registry" {
	add_object formats/driver 'int fmt_shared(void) { return 1; }'
	add_object formats/one/one 'int fmt_shared(void); int fmt_two(void); int fmt_one(void) { return fmt_shared() + fmt_two(); }'
	add_object formats/two/two 'int fmt_two(void) { return 2; }'
	add_object registry/registry 'int fmt_one(void); int fmt_two(void); int fmt_all(void) { return fmt_one() + fmt_two(); }'
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/formats/one/one.c: formats/one uses fmt_two of libcommon/formats/two/two.c (formats/two), which formats/one may not use (points up or sideways)"
	# ald may use arrow (FORMAT_USES), not the other way round
	mv tree/libcommon/formats/one tree/libcommon/formats/ald
	mv objs/formats/one objs/formats/ald
	mv tree/libcommon/formats/two tree/libcommon/formats/arrow
	mv objs/formats/two objs/formats/arrow
	run "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_success
	assert_output "check-layers: ok"
}

@test "objects: a driver calling the opener that calls it is a cycle across modules; one inside a folder is not" {
	add_object formats/x/x_read 'int fmt_x_write(void); int fmt_x_read(void) { return fmt_x_write(); }'
	add_object formats/x/x_write 'int fmt_x_read(void); int fmt_x_write(void) { return fmt_x_read(); }'
	add_object registry/open 'int fmt_x_read(void); int fmt_open_any(void) { return fmt_x_read(); }'
	run "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_success
	add_object formats/x/x_sign 'int fmt_open_any(void); int fmt_x_sign(void) { return fmt_open_any(); }'
	add_object registry/open 'int fmt_x_read(void); int fmt_x_sign(void); int fmt_open_any(void) { return fmt_x_read() + fmt_x_sign(); }'
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/formats/x/x_sign.c: formats/x uses fmt_open_any of libcommon/registry/open.c (registry), which formats/x may not use (points up or sideways)
check-layers: a cycle of objects across formats/x, registry: libcommon/formats/x/x_sign.o libcommon/registry/open.o"
}

@test "objects: a source without its object fails" {
	add_object core/one 'int fmt_one(void) { return 1; }'
	printf 'int fmt_two(void) { return 2; }\n' >tree/libcommon/core/two.c
	run --separate-stderr "$REPO_ROOT/scripts/check-layers" --root tree --objects objs
	assert_failure 1
	assert_equal "$stderr" "check-layers: libcommon/core/two.c: no object objs/core/two.o (build the library first)"
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
