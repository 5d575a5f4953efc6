#!/usr/bin/env bats
# Manual pages and shell completions against the tools' real --help: every page renders without
# groff warnings, every long option a tool prints is documented in its page and completed by
# both its bash and zsh completions, and the bash completions load.

bats_require_minimum_version 1.5.0

# Every tool of the tree (tools/NAME/main.c).
TOOLS=($(cd "$BATS_TEST_DIRNAME/../../tools" && ls -d */ | tr -d /))

# Each tool's --help and each page rendered (render_page), once for the file, in $BATS_FILE_TMPDIR.
setup_file() {
	load helpers
	local tool page
	for tool in "${TOOLS[@]}"; do
		[ -x "$FMTKIT_BIN/$tool" ] || continue
		"$FMTKIT_BIN/$tool" --help >"$BATS_FILE_TMPDIR/$tool.help" || echo "$?" >"$BATS_FILE_TMPDIR/$tool.help.status"
	done
	for page in "$REPO_ROOT"/man/*.[1-9]; do
		groff -man -Tutf8 -rHY=0 -rLL=250n -P-c "$page" 2>/dev/null | col -bx >"$BATS_FILE_TMPDIR/${page##*/}.txt"
	done
}

setup() {
	load helpers
}

# The tool's --help output (fails the test when the tool is not built), as setup_file kept it.
help_of() {
	local tool=$1
	[ -x "$FMTKIT_BIN/$tool" ] || fail "$FMTKIT_BIN/$tool is not built (run make)"
	[ ! -e "$BATS_FILE_TMPDIR/$tool.help.status" ] || fail "$tool --help exited with $(cat "$BATS_FILE_TMPDIR/$tool.help.status")"
	cat "$BATS_FILE_TMPDIR/$tool.help"
}

# Long options of the option lines of --help ("  -j, --json   ..." / "      --tree   ..."), one a line.
long_options_of() {
	help_of "$1" | sed -nE 's/^ +(-[A-Za-z0-9], +)?(--[a-z][a-z0-9-]*).*/\2/p'
}

# Short options of the option lines of --help ("  -j, --json"), one a line.
short_options_of() {
	help_of "$1" | sed -nE 's/^ +(-[A-Za-z0-9]), +--.*/\1/p'
}

# The page rendered as plain text, wide and without hyphenation, so that options are whole words
# (rendered by setup_file: groff -man -Tutf8 -rHY=0 -rLL=250n -P-c PAGE | col -bx).
render_page() {
	cat "$BATS_FILE_TMPDIR/${1##*/}.txt"
}

# grep_lines ERE TEXT: whether a line of TEXT matches ERE (grep -qE, without a process). ERE must
# not match across lines: with ^ and $ at the ends of TEXT only, its ^ and $ are also tried
# right after and before each newline.
grep_lines() {
	local re=$1 line
	[[ $2 =~ $re ]] && return 0
	[[ $re == *'^'* || $re == *'$'* ]] || return 1
	while IFS= read -r line; do
		[[ $line =~ $re ]] && return 0
	done <<<"$2"
	return 1
}

# The OPTIONS section of a rendered page.
options_section() {
	render_page "$1" | sed -n '/^OPTIONS$/,/^[A-Z][A-Z ]*$/p' | sed '1d;$d'
}

@test "every manual page renders without groff warnings" {
	local pages=("$REPO_ROOT"/man/*.[1-9])
	[ "${#pages[@]}" -ge 3 ] || fail "expected at least 3 pages in man/, found ${#pages[@]}"
	for page in "$REPO_ROOT/man/fmt-inspect.1" "$REPO_ROOT/man/fmt-verify.1" "$REPO_ROOT/man/fmtkit.7"; do
		[ -f "$page" ] || fail "missing $page"
	done
	for page in "${pages[@]}"; do
		run --separate-stderr groff -man -ww -z "$page"
		assert_success
		[ -z "$stderr" ] || fail "groff warnings in $page: $stderr"
		if command -v man >/dev/null; then
			run --separate-stderr env MANWIDTH=80 man -l --warnings "$page"
			assert_success
			[ -z "$stderr" ] || fail "man warnings in $page: $stderr"
			[ -n "$output" ] || fail "man rendered nothing for $page"
		fi
	done
}

@test "every manual page carries the version of the tools in its .TH line" {
	version=$(sed -n 's/^#define FMTKIT_VERSION "\(.*\)"$/\1/p' "$REPO_ROOT/libcommon/include/fmt/version.h")
	[ -n "$version" ] || fail "no FMTKIT_VERSION in libcommon/include/fmt/version.h"
	for page in "$REPO_ROOT"/man/*.[1-9]; do
		th=$(grep -m1 '^\.TH ' "$page") || fail "$page has no .TH line"
		grep -qF "\"fmtkit $version\"" <<<"$th" || fail "$page: .TH does not carry \"fmtkit $version\": $th"
	done
}

@test "fmtkit.7 gives every format --format knows a paragraph of its own" {
	names=$(help_of fmt-inspect | sed -n 's/.*--format NAME *skip detection: //p' | tr -d ',')
	[ -n "$names" ] || fail "fmt-inspect --help lists no --format names"
	section=$(render_page "$REPO_ROOT/man/fmtkit.7" | sed -n '/^FORMATS$/,/^[A-Z][A-Z ]*$/p')
	for name in $names; do
		# A tagged paragraph's tag starts at the indent of 7 columns, alone or before its text.
		grep -qE "^       ([a-z-]+, )*$name(,| |$)" <<<"$section" ||
			fail "fmtkit.7 FORMATS: no paragraph starts with $name"
	done
}

@test "every manual page has the sections a reader looks for" {
	for tool in "${TOOLS[@]}"; do
		text=$(render_page "$REPO_ROOT/man/$tool.1")
		for section in NAME SYNOPSIS DESCRIPTION OPTIONS "JSON OUTPUT" "EXIT STATUS" EXAMPLES "SEE ALSO"; do
			grep -qx "$section" <<<"$text" || fail "$tool.1 has no $section section"
		done
	done
	text=$(render_page "$REPO_ROOT/man/fmtkit.7")
	for section in NAME TOOLS FORMATS "EXIT STATUS" SAFETY "SEE ALSO"; do
		grep -qx "$section" <<<"$text" || fail "fmtkit.7 has no $section section"
	done
}

@test "every long option of --help is in the OPTIONS section of the tool's page" {
	for tool in "${TOOLS[@]}"; do
		mapfile -t opts < <(long_options_of "$tool")
		[ "${#opts[@]}" -ge 7 ] || fail "$tool --help: parsed only ${#opts[@]} long options: ${opts[*]}"
		section=$(options_section "$REPO_ROOT/man/$tool.1")
		[ -n "$section" ] || fail "$tool.1: empty OPTIONS section"
		for opt in "${opts[@]}"; do
			# grep -E on each line: in the whole text a newline is one of the characters around
			grep_lines "(^|[^a-z-])$opt([^a-z0-9-]|$)" "$section" ||
				fail "$tool.1 does not document $opt in OPTIONS"
		done
	done
}

@test "the exit statuses of --help are in the tool's page" {
	for tool in "${TOOLS[@]}"; do
		# "Exit status ...: 0 ok, 2 usage, 3 I/O error, ..." -> 0 2 3 ...
		codes=$(help_of "$tool" | sed -n '/[Ee]xit status/,$p' | grep -oE '(^|[ :,])[0-9]+ [A-Za-z]' | grep -oE '[0-9]+')
		[ -n "$codes" ] || fail "$tool --help: no exit statuses found"
		section=$(render_page "$REPO_ROOT/man/$tool.1" | sed -n '/^EXIT STATUS$/,/^[A-Z][A-Z ]*$/p')
		for code in $codes; do
			grep -qE "^ +$code( |$)" <<<"$section" || fail "$tool.1: exit status $code is not listed"
		done
	done
}

@test "bash completion offers exactly the options of --help" {
	for tool in "${TOOLS[@]}"; do
		expected=$( { long_options_of "$tool"; short_options_of "$tool"; } | sort -u)
		[ -n "$expected" ] || fail "$tool: no options parsed from --help"
		run bash_complete "$tool" -
		assert_success
		got=$(sort -u <<<"$output")
		[ "$got" = "$expected" ] ||
			fail "$tool: bash completion offers [$(echo $got)], --help has [$(echo $expected)]"
	done
}

@test "bash completion offers the --format names that --help lists" {
	for tool in "${TOOLS[@]}"; do
		# "--format NAME   skip detection: gguf, safetensors, ..." (tools without --format: none)
		names=$(help_of "$tool" | sed -n 's/.*--format NAME *skip detection: //p' | tr -d ',' | tr ' ' '\n' | sort | tr '\n' ' ')
		[ -n "$names" ] || continue
		run bash_complete "$tool" --format ""
		assert_success
		assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "$names"
		run bash_complete "$tool" --format = safetensors-
		assert_success
		assert_output "safetensors-index"
	done
}

# The format names that page PAGE sets in bold (.B, .BR, .RB) in the .TP paragraph of option
# --OPT, among the names NAMES..., one a line.
page_formats() {
	/usr/bin/python3 - "$@" <<'PY'
import re, shlex, sys
page, opt, names = sys.argv[1], sys.argv[2], set(sys.argv[3:])
lines = open(page).read().split("\n")
start = next(i for i, l in enumerate(lines)          # the tag of its .TP paragraph
             if i and lines[i - 1] == ".TP" and l.startswith(".B")
             and re.search(r"\\-\\-%s(\s|\"|$)" % re.escape(opt), l))
bold = []
for l in lines[start + 1:]:
    if l.startswith(".TP") or l.startswith(".SH"):
        break
    m = re.match(r"\.(B|BR|RB) (.*)", l)
    if m:
        args = shlex.split(m.group(2).replace("\\", "\\\\"), posix=True)
        args = [a.replace("\\-", "-").replace("\\", "") for a in args]
        bold += args if m.group(1) == "B" else args[0::2] if m.group(1) == "BR" else args[1::2]
print("\n".join(sorted(set(bold) & names)))
PY
}

@test "every option that takes a format: its page, --help and the bash and zsh completions name exactly the formats the tool takes" {
	cd "$BATS_TEST_TMPDIR"
	fmt-sign keygen --watermark -s wm.key -q
	local -A extra=([fmt-watermark]="--key wm.key --buyer b")
	# every registered format: fmt-inspect --format's words (drivers.bats checks them)
	all=$(fmt-inspect --dump-options | awk -F '\t' '$1 == "option" && $2 == "format" { print $6 }')
	[ "$(wc -w <<<"$all")" -ge 14 ] || fail "fmt-inspect --format lists only: $all"
	checked=0
	for tool in "${TOOLS[@]}"; do
		# option LONG SHORT ARG COMPLETE WORDS COMMANDS ...: those completed as formats or taking a FORMAT
		while IFS=$'\t' read -r opt cmd words; do
			[ "$cmd" != - ] || cmd=
			took=()
			for name in $all; do
				run --separate-stderr "$tool" $cmd ${extra[$tool]:-} "--$opt" "$name" missing.in out.bin
				[[ $stderr == *"--$opt takes"* || $stderr == *"unknown --$opt"* ]] || took+=("$name")
			done
			want=$(tr ' ' '\n' <<<"$words" | sort)
			assert_equal "$(printf '%s\n' "${took[@]}" | sort)" "$want"
			run page_formats "$REPO_ROOT/man/$tool.1" "$opt" $all
			assert_success
			[ "$output" = "$want" ] || fail "$tool.1 --$opt names [$(echo $output)]; $tool takes [$(echo $want)]"
			run bash_complete "$tool" $cmd "--$opt" ""
			assert_equal "$(sort <<<"$output")" "$want"
			# zsh: '--OPT=[HELP]:ARG:(WORDS)' on each of its lines
			zlines=$(grep -F -- "'--$opt=[" "$(completion_file zsh "$tool")") || fail "_$tool has no --$opt"
			while IFS= read -r line; do
				[[ $line == *":($words)'"* ]] || fail "_$tool: --$opt does not complete ($words): $line"
			done <<<"$zlines"
			checked=$((checked + 1))
		done < <("$tool" --dump-options | awk -F '\t' '$1 == "option" && ($5 == "format" || $4 == "FORMAT") { print $2 "\t" $7 "\t" $6 }')
	done
	# fmt-convert --to and --from, fmt-inspect and fmt-verify --format, fmt-watermark embed --to
	[ "$checked" -eq 5 ] || fail "checked $checked options"
}

@test "bash completion completes file names after the options" {
	mkdir -p "$BATS_TEST_TMPDIR/models"
	touch "$BATS_TEST_TMPDIR/models/model.safetensors" "$BATS_TEST_TMPDIR/models/model-q8_0.gguf"
	cd "$BATS_TEST_TMPDIR/models"
	for tool in "${TOOLS[@]}"; do
		run bash_complete "$tool" --json model.s
		assert_success
		assert_output "model.safetensors"
	done
}

@test "bash completion completes --tensor with the tensor names of the file on the line" {
	command -v jq >/dev/null || skip "jq is not installed"
	[ -x "$FMTKIT_BIN/fmt-inspect" ] || fail "$FMTKIT_BIN/fmt-inspect is not built (run make)"
	cd "$BATS_TEST_TMPDIR"
	# specs/safetensors.md section 7: tensors "a" (F32 [2]) and "b" (F16 [2]), 164 bytes.
	header='{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]}}     '
	{
		printf '\x90\x00\x00\x00\x00\x00\x00\x00'
		printf '%s' "$header"
		printf '\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x3c\x00\xc0'
	} >tiny.safetensors
	[ "$(wc -c <tiny.safetensors)" -eq 164 ]
	PATH="$FMTKIT_BIN:$PATH"
	run bash_complete fmt-inspect tiny.safetensors --tensor ""
	assert_success
	assert_equal "$(echo $output)" "a b"
	run bash_complete fmt-inspect tiny.safetensors -t b
	assert_success
	assert_output "b"
	# no file on the line: nothing, silently
	run --separate-stderr bash_complete fmt-inspect --tensor ""
	assert_success
	assert_output ""
	[ -z "$stderr" ]
}

@test "bash completion offers llama-quantize's presets after --dtype" {
	run bash_complete fmt-convert --dtype Q4_K
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "Q4_K_M Q4_K_S "
	run bash_complete fmt-convert --dtype Q
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "Q3_K_L Q3_K_M Q3_K_S Q4_K_M Q4_K_S Q5_K_M Q5_K_S "
	run bash_complete fmt-convert --dtype iq
	assert_success
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "iq4_nl iq4_xs "
}

@test "every long option of --help is in the zsh completion" {
	for tool in "${TOOLS[@]}"; do
		file=$(completion_file zsh "$tool")
		[ -f "$file" ] || fail "missing $file"
		head -n 1 "$file" | grep -qx "#compdef $tool" || fail "$file does not start with '#compdef $tool'"
		mapfile -t opts < <(long_options_of "$tool")
		[ "${#opts[@]}" -ge 7 ] || fail "$tool --help: parsed only ${#opts[@]} long options"
		spec=$(<"$file")
		declare -A listed=()
		for opt in "${opts[@]}"; do
			listed[$opt]=1
			# _arguments specs: '--opt[desc]', '--opt=[desc]:..', {-x,--opt}'[desc]', {-t+,--opt=}
			grep_lines "(^|[^a-z-])$opt(=?\[|=?\}|,)" "$spec" ||
				fail "$file has no _arguments spec for $opt"
		done
		# and no option the tool does not have
		while read -r opt; do
			[ -n "${listed[$opt]:-}" ] || fail "$file completes $opt, which $tool --help does not list"
		done < <(grep -oE -- "(^|[ '{,])--[a-z][a-z0-9-]*(=?\[|=?\}|,)" "$file" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		unset listed
		if command -v zsh >/dev/null; then
			run zsh -n "$file"
			assert_success
		fi
	done
}

@test "bash completions have valid syntax and register with complete" {
	for tool in "${TOOLS[@]}"; do
		file=$(completion_file bash "$tool")
		run bash -n "$file"
		assert_success
		run bash -c "source '$file'; complete -p $tool"
		assert_success
		assert_output --partial "complete -F "
		assert_output --partial " $tool"
	done
}
