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
	# meta_value's reader: one Python process per test, not one per file
	coproc META { /usr/bin/python3 -u -c '
import json, subprocess, sys
for path in sys.stdin:
    r = subprocess.run(["fmt-inspect", "--json", path.rstrip("\n")], stdout=subprocess.PIPE)
    try:
        d = json.loads(r.stdout)
        print(json.dumps(d["metadata"].get("t.v", "<absent>")), d["metadata_types"].get("t.v"))
    except Exception:
        print("<no value: %s>" % path.rstrip("\n"))' 3>&-; }
}

teardown() {
	exec {META[1]}>&-
	wait "$META_PID" || true
}

# The value of t.v in FILE as exact JSON (integers beyond 2^53 kept), then its type; when
# fmt-inspect --json FILE cannot say, "<no value: FILE>", which no other file's value equals.
meta_value() {
	local line
	printf '%s\n' "$1" >&"${META[1]}"
	IFS= read -r line <&"${META[0]}" || line="<no value: $1>"
	printf '%s\n' "$line"
}

writer_args() {
	case $1 in
	safetensors) echo "out.safetensors" ;;
	gguf) echo "--dtype keep out.gguf" ;;
	apsim) echo "out.apsim" ;;
	apr-seed) echo "out.apr" ;;
	apr-aprender) echo "--apr-layout aprender out.apr" ;;
	esac
}

# The warning a conversion of IN to safetensors gives: one per non-string key (none: empty).
drop_warning() {
	local n
	n=$(fmt-inspect --json "$1" | jq '[.metadata_types[] | select(. != "str")] | length')
	[ "$n" -eq 0 ] || printf 'fmt-convert: warning: %d metadata entr%s dropped: the target holds only string values' \
		"$n" "$([ "$n" -eq 1 ] && echo y || echo ies)"
}

# matrix_case INPUT WRITER EXPECTED: prints what differs, nothing when the case holds.
matrix_case() {
	local in=$1 w=$2 want=$3 out vin vout warn=""
	rm -f out.*
	[ "$w" != safetensors ] || warn=$(drop_warning "$in")
	# shellcheck disable=SC2046
	run --separate-stderr fmt-convert "$in" $(writer_args "$w")
	out=$(ls out.* 2>/dev/null)
	case $want in
	same)
		[ "$status" -eq 0 ] || { echo "$in -> $w: exit $status ($stderr), expected the same value"; return; }
		[ "$stderr" = "$warn" ] || { echo "$in -> $w: stderr: $stderr"; return; }
		vin=$(meta_value "$in") vout=$(meta_value "$out")
		# GGUF to GGUF keeps the type too; the JSON formats hold JSON's types
		if [ "$w" = gguf ] && [[ "$in" == *.gguf ]]; then
			[ "$vin" = "$vout" ] || echo "$in -> $w: $vin became $vout"
		else
			[ "${vin% *}" = "${vout% *}" ] || echo "$in -> $w: $vin became $vout"
		fi
		;;
	refused)
		[ "$status" -eq 5 ] || { echo "$in -> $w: exit $status ($stderr), expected 5"; return; }
		[[ "$stderr" == "fmt-convert: error: "*"'t.v'"* ]] || echo "$in -> $w: stderr does not name t.v: $stderr"
		[ -z "$output" ] || echo "$in -> $w: stdout: $output"
		[ -z "$out" ] || echo "$in -> $w: $out written"
		;;
	dropped)
		[ "$status" -eq 0 ] || { echo "$in -> $w: exit $status ($stderr), expected a drop"; return; }
		[ -n "$warn" ] && [ "$stderr" = "$warn" ] || echo "$in -> $w: stderr: $stderr (expected: $warn)"
		vout=$(meta_value "$out")
		[ "$vout" = '"<absent>" None' ] || echo "$in -> $w: t.v is $vout"
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
			src="$BATS_TEST_TMPDIR/src-$(basename "$in" .apsim).apr"
			[ -e "$src" ] || fmt-convert --apr-layout "$layout" "$MM/$in" "$src" ||
				fail "$in: cannot make the $layout input"
		fi
		fails+=$(matrix_case "$src" "$w" "$want")
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
