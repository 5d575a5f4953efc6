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
}

# The arguments of fmt-convert after the input for each writer, in $args: the output is
# out$2.EXT, one name per case (nothing to remove between cases).
writer_args() {
	case $1 in
	safetensors) args=("out$2.safetensors") ;;
	gguf) args=(--dtype keep "out$2.gguf") ;;
	apsim) args=("out$2.apsim") ;;
	apr-seed) args=("out$2.apr") ;;
	apr-aprender) args=(--apr-layout aprender "out$2.apr") ;;
	esac
}

# check_runs RUNS: what differs from each case of RUNS (lines "INPUT<TAB>WRITER<TAB>EXPECTED<TAB>
# EXIT<TAB>N": fmt-convert INPUT to out$N.*, its stdout in $N.stdout, its stderr in $N.stderr) on
# stdout, nothing when every case holds. One fmt-inspect --json reads every input and output; a
# value is t.v as exact JSON (integers beyond 2^53 kept) and its type, "<no value: FILE>" when
# fmt-inspect cannot say, which no other file's value equals.
#   same     exit 0; stderr empty, or for safetensors the drop warning (one per non-string key
#            of the input); t.v reads back as the input's (GGUF to GGUF: also its type; the JSON
#            formats hold JSON's types)
#   refused  exit 5; stderr names t.v; stdout empty; no out$N.* written
#   dropped  exit 0; stderr the drop warning; t.v absent
check_runs() {
	/usr/bin/python3 - "$1" <<'PY'
import glob, json, subprocess, sys
runs = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
outs = {n: glob.glob("out%s.*" % n) for _, _, _, _, n in runs}
files = sorted({r[0] for r in runs} | {f for fs in outs.values() for f in fs})
inspect = subprocess.run(["fmt-inspect", "--json"] + files, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
records = {}
for line in inspect.stdout.decode().splitlines():
    d = json.loads(line)
    records[d["file"]] = d
def value(path):
    try:
        d = records[path]
        return json.dumps(d["metadata"].get("t.v", "<absent>")) + " " + str(d["metadata_types"].get("t.v"))
    except Exception:
        return "<no value: %s>" % path
def drop_warning(path):
    try:
        n = sum(1 for t in records[path]["metadata_types"].values() if t != "str")
    except Exception:
        return "<no drop count: %s>" % path
    if n == 0:
        return ""
    return "fmt-convert: warning: %d metadata entr%s dropped: the target holds only string values" % (
        n, "y" if n == 1 else "ies")
# what $(...) and read -d '' give: stdout without its final newlines, stderr without the blanks
# around it
def text(path, strip):
    t = open(path, "rb").read().decode("utf-8", "replace")
    return t.rstrip("\n") if strip == "out" else t.strip(" \t\n")
fails = []
for src, w, want, status, n in runs:
    status = int(status)
    out = " ".join(outs[n])
    stdout, stderr = text(n + ".stdout", "out"), text(n + ".stderr", "err")
    warn = drop_warning(src) if w == "safetensors" else ""
    case = "%s -> %s" % (src, w)
    if want == "same":
        if status != 0:
            fails.append("%s: exit %d (%s), expected the same value" % (case, status, stderr)); continue
        if stderr != warn:
            fails.append("%s: stderr: %s" % (case, stderr)); continue
        vin, vout = value(src), value(out)
        if w == "gguf" and src.endswith(".gguf"):
            same = vin == vout
        else:
            same = vin.rsplit(" ", 1)[0] == vout.rsplit(" ", 1)[0]
        if not same:
            fails.append("%s: %s became %s" % (case, vin, vout))
    elif want == "refused":
        if status != 5:
            fails.append("%s: exit %d (%s), expected 5" % (case, status, stderr)); continue
        if not (stderr.startswith("fmt-convert: error: ") and "'t.v'" in stderr[len("fmt-convert: error: "):]):
            fails.append("%s: stderr does not name t.v: %s" % (case, stderr))
        if stdout:
            fails.append("%s: stdout: %s" % (case, stdout))
        if out:
            fails.append("%s: %s written" % (case, out))
    elif want == "dropped":
        if status != 0:
            fails.append("%s: exit %d (%s), expected a drop" % (case, status, stderr)); continue
        if not (warn and stderr == warn):
            fails.append("%s: stderr: %s (expected: %s)" % (case, stderr, warn))
        vout = value(out)
        if vout != '"<absent>" None':
            fails.append("%s: t.v is %s" % (case, vout))
    else:
        fails.append("%s: unknown expectation %s" % (case, want))
print("\n".join(fails))
PY
}

# Every case of cases.tsv whose input matches GLOB, each one fmt-convert run; LAYOUT (optional)
# converts the input first (an APR input made from it) and reads the cases through that file.
run_cases() {
	local glob=$1 layout=${2:-} fails
	untraced convert_cases "$glob" "$layout"
	fails=$(check_runs runs.tsv) || fail "check_runs failed: $fails"
	[ -z "$fails" ] || fail "$fails"
	echo "$n cases"
}

# convert_cases GLOB LAYOUT: the fmt-convert runs of run_cases, recorded in runs.tsv; their
# number in $n.
convert_cases() {
	local glob=$1 layout=$2 in w want src status
	n=0
	: >runs.tsv
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
		n=$((n + 1))
		writer_args "$w" "$n"
		fmt-convert "$src" "${args[@]}" >"$n.stdout" 2>"$n.stderr" && status=0 || status=$?
		printf '%s\t%s\t%s\t%s\t%s\n' "$src" "$w" "$want" "$status" "$n" >>runs.tsv
	done <"$MM/cases.tsv"
	[ "$n" -gt 0 ] || fail "no case matches $glob"
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
