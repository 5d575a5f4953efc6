#!/usr/bin/env bats
# Issue 20 item 1: every metadata value a reader accepts (GGUF: each scalar type with its
# extremes, NaN and infinities, strings, arrays of each type, empty and nested arrays; .apsim and
# APR metadata JSON: numbers, booleans, strings, typed, mixed and nested arrays, objects, null;
# safetensors __metadata__ strings) converted to every writer (safetensors, GGUF, .apsim, APR
# seed and aprender layouts) either reads back as the same value or is refused with exit 5
# naming the key; never a crash. Inputs and expectations: scripts/gen/meta-matrix.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export MM="$BATS_FILE_TMPDIR/mm"
	"$REPO_ROOT/scripts/gen/meta-matrix" "$MM"
}

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	declare -gA INPUT_VALUES=()
	# The reader of meta_value and drop_warning: one Python process per test, not one per file.
	# A line "MODE<TAB>FILE" asks for fmt-inspect --json FILE's t.v (MODE value) or its number of
	# non-string metadata values (MODE drops).
	coproc META { /usr/bin/python3 -u -c '
import json, subprocess, sys
for line in sys.stdin:
    mode, path = line.rstrip("\n").split("\t", 1)
    r = subprocess.run(["fmt-inspect", "--json", path], stdout=subprocess.PIPE)
    try:
        d = json.loads(r.stdout)
        if mode == "drops":
            print(sum(1 for t in d["metadata_types"].values() if t != "str"))
        else:
            print(json.dumps(d["metadata"].get("t.v", "<absent>")), d["metadata_types"].get("t.v"))
    except Exception:
        print("<no value: %s>" % path)' 3>&-; }
}

teardown() {
	exec {META[1]}>&-
	wait "$META_PID" || true
}

# meta_ask MODE FILE: the reader's answer for FILE, in $answer (no subshell: a case runs
# hundreds of times).
meta_ask() {
	printf '%s\t%s\n' "$1" "$2" >&"${META[1]}"
	IFS= read -r answer <&"${META[0]}" || answer="<no value: $2>"
}

# The value of t.v in FILE as exact JSON (integers beyond 2^53 kept), then its type, in $value;
# when fmt-inspect --json FILE cannot say, "<no value: FILE>", which no other file's value
# equals. An input's value is asked once (it is converted to every writer).
meta_value() {
	local file=$1 answer
	if [ "${2:-}" = input ] && [ -n "${INPUT_VALUES[$file]:-}" ]; then
		value=${INPUT_VALUES[$file]}
		return
	fi
	meta_ask value "$file"
	value=$answer
	[ "${2:-}" != input ] || INPUT_VALUES[$file]=$value
}

# The arguments of fmt-convert after the input for each writer, in $args.
writer_args() {
	case $1 in
	safetensors) args=(out.safetensors) ;;
	gguf) args=(--dtype keep out.gguf) ;;
	apsim) args=(out.apsim) ;;
	apr-seed) args=(out.apr) ;;
	apr-aprender) args=(--apr-layout aprender out.apr) ;;
	esac
}

# The warning a conversion of IN to safetensors gives, in $warn: one per non-string key (none:
# empty).
drop_warning() {
	local n answer
	meta_ask drops "$1"
	n=$answer
	warn=
	if [ "$n" -ne 0 ]; then
		printf -v warn 'fmt-convert: warning: %d metadata entr%s dropped: the target holds only string values' \
			"$n" "$([ "$n" -eq 1 ] && echo y || echo ies)"
	fi
}

# matrix_case INPUT WRITER EXPECTED: appends what differs to $fails, nothing when the case holds.
# It runs in the test's shell (a subshell per case would cost a fork each): every command's
# failure is handled here.
matrix_case() {
	local in=$1 w=$2 want=$3 out vin vout warn="" args value outs status output stderr
	outs=(out.*)
	[ ! -e "${outs[0]}" ] || rm -f "${outs[@]}"
	[ "$w" != safetensors ] || drop_warning "$in"
	writer_args "$w"
	# what `run --separate-stderr` gives, without its mktemp
	output=$(fmt-convert "$in" "${args[@]}" 2>stderr.txt) && status=0 || status=$?
	read -d '' -r stderr <stderr.txt || true
	outs=(out.*)
	out=
	[ ! -e "${outs[0]}" ] || out=${outs[*]}
	case $want in
	same)
		[ "$status" -eq 0 ] || { fails+="$in -> $w: exit $status ($stderr), expected the same value"; return; }
		[ "$stderr" = "$warn" ] || { fails+="$in -> $w: stderr: $stderr"; return; }
		meta_value "$in" input
		vin=$value
		meta_value "$out"
		vout=$value
		# GGUF to GGUF keeps the type too; the JSON formats hold JSON's types
		if [ "$w" = gguf ] && [[ "$in" == *.gguf ]]; then
			[ "$vin" = "$vout" ] || fails+="$in -> $w: $vin became $vout"
		else
			[ "${vin% *}" = "${vout% *}" ] || fails+="$in -> $w: $vin became $vout"
		fi
		;;
	refused)
		[ "$status" -eq 5 ] || { fails+="$in -> $w: exit $status ($stderr), expected 5"; return; }
		[[ "$stderr" == "fmt-convert: error: "*"'t.v'"* ]] || fails+="$in -> $w: stderr does not name t.v: $stderr"
		[ -z "$output" ] || fails+="$in -> $w: stdout: $output"
		[ -z "$out" ] || fails+="$in -> $w: $out written"
		;;
	dropped)
		[ "$status" -eq 0 ] || { fails+="$in -> $w: exit $status ($stderr), expected a drop"; return; }
		[ -n "$warn" ] && [ "$stderr" = "$warn" ] || fails+="$in -> $w: stderr: $stderr (expected: $warn)"
		meta_value "$out"
		vout=$value
		[ "$vout" = '"<absent>" None' ] || fails+="$in -> $w: t.v is $vout"
		;;
	esac
}

# Every case of cases.tsv whose input matches GLOB; REWRITE (optional) converts the input first
# (an APR input made from it) and reads the cases through that file.
run_cases() {
	local glob=$1 layout=${2:-} in w want src fails="" n=0
	while IFS=$'\t' read -r in w want; do
		# shellcheck disable=SC2053
		[[ "$in" == $glob ]] || continue
		src="$MM/$in"
		if [ -n "$layout" ]; then
			src="$BATS_TEST_TMPDIR/src-${in##*/}"
			src="${src%.apsim}.apr"
			[ -e "$src" ] || fmt-convert --apr-layout "$layout" "$MM/$in" "$src" ||
				fail "$in: cannot make the $layout input"
		fi
		matrix_case "$src" "$w" "$want"
		n=$((n + 1))
	done <"$MM/cases.tsv"
	[ "$n" -gt 0 ] || fail "no case matches $glob"
	[ -z "$fails" ] || fail "$fails"
	echo "$n cases"
}

@test "matrix: each GGUF metadata value kind to every writer (same value, or exit 5 naming the key)" {
	run_cases 'gguf/*'
	[ "$(grep -c '^gguf/' "$MM/cases.tsv")" -eq 215 ]
}

@test "matrix: each .apsim metadata JSON value kind to every writer" {
	run_cases 'apsim/*'
	[ "$(grep -c '^apsim/' "$MM/cases.tsv")" -eq 110 ]
}

@test "matrix: the same JSON values read from APR (seed layout) to every writer" {
	run_cases 'apsim/*' seed
}

@test "matrix: the same JSON values read from APR (aprender layout) to every writer" {
	run_cases 'apsim/*' aprender
}

@test "matrix: safetensors metadata strings to every writer" {
	run_cases 'st/*'
}

@test "the issue's case: nested [[1,2],[3]] to both APR layouts and back, exact JSON" {
	for layout in seed aprender; do
		run --separate-stderr fmt-convert --apr-layout $layout "$MM/gguf/nested.gguf" $layout.apr
		assert_success
		[ -z "$stderr" ] || fail "$stderr"
		[ "$(fmt-inspect --json $layout.apr | jq -c '[.metadata["t.v"], .metadata_types["t.v"]]')" = \
			'[[[1,2],[3]],"array[array]"]' ]
		fmt-convert $layout.apr back.gguf -f
		[ "$(fmt-inspect --json back.gguf | jq -c '.metadata["t.v"]')" = '[[1,2],[3]]' ]
	done
	# the APR text itself: a JSON array of arrays
	grep -q '"t.v":\[\[1,2\],\[3\]\]' seed.apr
}

@test "fmt-watermark embed to .apr with nested array metadata: no crash, the value kept" {
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	run --separate-stderr fmt-watermark embed -q --key seller.key --buyer alice "$MM/gguf/nested.gguf" wm.apr
	[ "$status" -ne 139 ] || fail "crashed"
	assert_success
	[ "$(fmt-inspect --json wm.apr | jq -c '.metadata["t.v"]')" = '[[1,2],[3]]' ]
}

@test "refusals name the key and say why (exact messages)" {
	run --separate-stderr fmt-convert "$MM/gguf/u64_max.gguf" out.apr
	assert_equal "$status" 5
	assert_equal "$stderr" "fmt-convert: error: $MM/gguf/u64_max.gguf: metadata 't.v': 18446744073709551615 is above 2^63-1, which APR readers cannot hold"
	run --separate-stderr fmt-convert "$MM/gguf/nested_u64_max.gguf" --apr-layout aprender out.apr
	assert_equal "$status" 5
	assert_equal "$stderr" "fmt-convert: error: $MM/gguf/nested_u64_max.gguf: metadata 't.v': 18446744073709551615 is above 2^63-1, which APR readers cannot hold"
	run --separate-stderr fmt-convert "$MM/gguf/arr_f32_nan.gguf" out.apr
	assert_equal "$status" 5
	assert_equal "$stderr" "fmt-convert: error: $MM/gguf/arr_f32_nan.gguf: metadata 't.v': NaN and infinities cannot be stored in JSON"
	[ ! -e out.apr ]
}
