# Shared set-up for the bats suites: the tools under test, the repository, scratch space.
# (bats makes BATS_TEST_DIRNAME absolute, as cd && pwd would: no subshell in every test)
case $BATS_TEST_DIRNAME in
*/tests/cli) REPO_ROOT=${BATS_TEST_DIRNAME%/tests/cli} ;;
*) REPO_ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd) ;;
esac
FMTKIT_BIN=${FMTKIT_BIN:-$REPO_ROOT/build/bin}
# tests/cli/python/python3 is /usr/bin/python3, Debian's, with the packages scripts/install-deps
# installs: a python3 first on PATH that is a version manager's shim (pyenv: a bash script that
# starts ~15 processes, 0.16 CPU-s, before Python) is neither the interpreter the tests need nor
# cheap. Scripts run by the tests (#!/usr/bin/env python3) find it too.
PATH="$FMTKIT_BIN:$REPO_ROOT/tests/cli/python:$PATH"
export PATH REPO_ROOT FMTKIT_BIN

# bats-support and bats-assert: their src files sourced directly, since their load.bash files run
# dirname in a subshell for each of them (14 processes, ~20 ms of CPU, in every test).
for bats_lib_file in /usr/lib/bats/bats-support/src/*.bash /usr/lib/bats/bats-assert/src/*.bash; do
	source "$bats_lib_file"
done
unset bats_lib_file

# Sample models (scripts/gen/sample-models) made once per suite into $SAMPLES.
make_samples() {
	SAMPLES="$BATS_FILE_TMPDIR/samples"
	export SAMPLES
	[ -d "$SAMPLES" ] || "$REPO_ROOT/scripts/gen/sample-models" "$SAMPLES"
}


# The data of tensor NAME of FILE as lowercase hex. Offsets come from fmt-inspect --json (one jq
# for all of them); the GGUF data section is found from the end of the file (the last tensor is
# padded to 32 bytes, specs/gguf.md §7), the safetensors one from the header length.
tensor_hex() {
	local file=$1 name=$2 json fields format off len start
	json=$(fmt-inspect --json "$file") || return 1
	fields=$(jq -r --arg n "$name" '[.format,
		([.tensors[] | select(.name == $n)] | if length == 1 then .[0].offset, .[0].bytes else "-", "-" end),
		(if .format == "gguf" then .file_bytes - (.tensors[-1].offset + ((.tensors[-1].bytes + 31) / 32 | floor) * 32)
		 else "-" end)] | map(tostring) | join(" ")' <<<"$json") || return 1
	read -r format off len start <<<"$fields"
	[ "$off" != - ] && [ "$len" != - ] || return 1
	if [ "$format" = gguf ]; then
		[ $((start % 32)) -eq 0 ] || return 1
	else
		start=$((8 + $(od -An -t u8 -N 8 "$file")))
	fi
	xxd -p -c 0 -s $((start + off)) -l "$len" "$file"
}

# Every tensor of FILE as "NAME<TAB>HEX" lines, in the file's order: one fmt-inspect and one jq
# for the offsets (as tensor_hex finds them), an xxd per tensor.
tensors_hex() {
	local file=$1 json start name off len
	json=$(fmt-inspect --json "$file") || return 1
	start=$(jq -r 'if .format == "gguf" then .file_bytes - (.tensors[-1].offset + ((.tensors[-1].bytes + 31) / 32 | floor) * 32)
		else "-" end, (.tensors[] | "\(.name)\t\(.offset)\t\(.bytes)")' <<<"$json") || return 1
	{
		read -r start
		if [ "$start" = - ]; then
			start=$((8 + $(od -An -t u8 -N 8 "$file")))
		else
			[ $((start % 32)) -eq 0 ] || return 1
		fi
		while IFS=$'\t' read -r name off len; do
			printf '%s\t%s\n' "$name" "$(xxd -p -c 0 -s $((start + off)) -l "$len" "$file")"
		done
	} <<<"$start"
}

# untraced CMD...: CMD without bats' DEBUG trap, which runs for every command of a test (about
# 0.1 ms each: a loop of a few thousand commands pays more for it than for its work). Only the
# line bats reports for a failure changes: the untraced line, not the one inside CMD (say what
# failed in fail's message). errexit holds inside CMD as around it.
untraced() {
	local debug_trap status
	debug_trap=$(trap -p DEBUG)
	trap - DEBUG
	"$@"
	status=$?
	eval "$debug_trap"
	return "$status"
}

# Sanitizer builds (make asan) reserve terabytes of address space and count shadow memory in
# their RSS: an address-space limit or an RSS bound cannot apply to them.
asan_build() {
	grep -q __asan_init "$FMTKIT_BIN/fmt-inspect"
}

# limit_as KB: the ulimit -v prefix for a bash -c command line, empty in sanitizer builds.
limit_as() {
	asan_build || echo "ulimit -v $1;"
}

# many_small_tensors FILE N: a safetensors file of N F32 tensors t0, t1... of shape [1, 32], each
# 0..31 (the files of the linear-time tests: a name set's size, not the bytes, is the point).
many_small_tensors() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
n = int(sys.argv[2])
hdr = {"t%d" % i: {"dtype": "F32", "shape": [1, 32], "data_offsets": [128 * i, 128 * i + 128]} for i in range(n)}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + struct.pack("<32f", *range(32)) * n)
PY
}

# run_bounded FILE CMD...: run CMD under ulimit -v = 16 x FILE's size + 64 MB (issue 8, item 3).
run_bounded() {
	run_bounded_to - "$@"
}

# run_bounded_to OUT FILE CMD...: run_bounded with CMD's standard output in the file OUT instead
# of $output (tens of megabytes that bash would copy and split into lines, seconds of CPU); OUT -
# is $output.
run_bounded_to() {
	run_bounded_times 16 "$@"
}

# run_bounded_times N OUT FILE CMD...: run_bounded_to with N x FILE's size + 64 MB: a tighter
# bound for what is held packed (N 2: a GGUF array of strings).
run_bounded_times() {
	local times=$1 out=$2 file=$3
	shift 3
	asan_build && skip "sanitizer build: address-space limit not applicable"
	local kb=$(( (times * $(stat -c %s "$file") + 64 * 1048576) / 1024 ))
	run --separate-stderr bash -c 'ulimit -v "$1"; out=$2; shift 2; [ "$out" = - ] && exec "$@"; exec "$@" >"$out"' \
		_ "$kb" "$out" "$@"
}

# run_cpu_bounded SECONDS CMD...: run CMD (as run --separate-stderr) under ulimit -t SECONDS (4 x
# that in a sanitizer build): a bound on the CPU time it may take, for the tests that prove a
# hostile input costs linear time; unlike timeout's wall clock, a busy machine does not move it.
# Past it CMD is killed (SIGXCPU, or SIGKILL at the hard limit: status 152 or 137).
run_cpu_bounded() {
	local secs=$1
	shift
	asan_build && secs=$((secs * 4))
	run --separate-stderr bash -c 'ulimit -t "$1"; shift; exec "$@"' _ "$secs" "$@"
}

# Byte-flip tests check every variant of a file through ONE run of a tool that takes several
# FILEs and prints one JSON record per FILE (fmt-verify -j, fmt-sign verify -j), not a process
# per variant.
# exits_of CMD... -- FILE...: CMD FILE... once; $EXITS gets a line "FILE<TAB>EXIT" per FILE, EXIT
# being its record's "exit" (0 when the record has none: a success). Fails unless there is exactly
# one record per FILE, in order, and CMD's own exit status is the highest of them (so a crash or a
# lost record cannot pass).
exits_of() {
	local cmd=() rc=0 high
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		cmd+=("$1")
		shift
	done
	[ $# -gt 0 ] || fail "exits_of: no -- before the files"
	shift
	EXITS="$BATS_TEST_TMPDIR/exits.tsv"
	"${cmd[@]}" "$@" >"$BATS_TEST_TMPDIR/records.jsonl" 2>/dev/null || rc=$?
	jq -r '[.file, (.exit // 0)] | @tsv' "$BATS_TEST_TMPDIR/records.jsonl" >"$EXITS" ||
		fail "${cmd[*]}: exit $rc, its stdout is not JSON Lines"
	diff <(cut -f1 "$EXITS") <(printf '%s\n' "$@") >/dev/null ||
		fail "${cmd[*]}: exit $rc, records for $(wc -l <"$EXITS") of $# files or in another order"
	high=$(cut -f2 "$EXITS" | sort -n | tail -1)
	[ "$rc" -eq "$high" ] || fail "${cmd[*]}: exit $rc, the highest of the files' exits is $high"
}

# exits_in CODES: every FILE of the last exits_of exited with one of CODES (space-separated).
exits_in() {
	local bad
	bad=$(awk -F'\t' -v ok=" $1 " 'index(ok, " " $2 " ") == 0 { print $1 ": exit " $2; exit }' "$EXITS")
	[ -z "$bad" ] || fail "$bad (expected one of $1)"
}

# encrypted_pair NAME PASSFILE: NAME.pub and NAME.key, an Ed25519 pair in minisign's formats whose
# secret key is encrypted under the passphrase in PASSFILE with scrypt at libsodium's lowest limits
# (scripts/gen/minisign-test-key): unlocked in a millisecond, where fmt-sign keygen's (minisign's
# sensitive limits) take seconds and 1 GiB. Only the keygen tests pay for those.
encrypted_pair() {
	"$REPO_ROOT/scripts/gen/minisign-test-key" "$2" "$1.pub" "$1.key"
}

# flip_all FILE OUTDIR [XOR]: OUTDIR/N.EXT (EXT: FILE's) is FILE with byte N xor XOR (default
# 0x01), for every offset N; one process writes them all.
flip_all() {
	/usr/bin/python3 - "$1" "$2" "${3:-1}" <<'PY'
import os, sys
src, out, xor = sys.argv[1], sys.argv[2], int(sys.argv[3], 0)
ext = os.path.splitext(src)[1]
data = open(src, "rb").read()
os.makedirs(out)
for i in range(len(data)):
    b = bytearray(data); b[i] ^= xor
    open(os.path.join(out, "%d%s" % (i, ext)), "wb").write(b)
PY
}

# The completion file of a tool: generated at build time next to the binaries (build/completions/,
# scripts/gen-completions), or hand-written in completions/ for a tool not on the option runner.
completion_file() {
	local shell=$1 tool=$2 name=$2
	[ "$shell" = zsh ] && name=_$tool
	if [ -f "$FMTKIT_BIN/../completions/$shell/$name" ]; then
		echo "$FMTKIT_BIN/../completions/$shell/$name"
	else
		echo "$REPO_ROOT/completions/$shell/$name"
	fi
}

# What the bash completion of TOOL offers for the words given (the last one is being completed).
bash_complete() {
	local tool=$1
	shift
	bash -c '
		source "$1" || exit 1
		fn=$(complete -p "$2" | sed -nE "s/.*-F ([^ ]+) .*/\1/p")
		[ -n "$fn" ] || exit 1
		shift 2
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		"$fn" || exit 1
		printf "%s\n" "${COMPREPLY[@]}"
	' bash "$(completion_file bash "$tool")" "$tool" "$tool" "$@"
}

# No file $1 and no temporary file of a writer left in the current directory.
nothing_written() {
	[ ! -e "$1" ] || fail "$1 was written"
	[ -z "$(find . -maxdepth 1 -name '.fmtkit-tmp-*')" ] || fail "temporary file left"
}

# What TOOL prints for a usage error found while parsing its options: MESSAGE and the pointer
# to --help.
usage_error() {
	printf '%s: error: %s\nTry '"'"'%s --help'"'"'.' "$1" "$2" "$1"
}

# Case suites, one test per line of DIR/cases.tsv (generated hostile files: file, exit status,
# message substring). verify_cases DIR, in setup_file, runs `fmt-verify DIR/FILE` once for every
# FILE and keeps its exit status, stdout and stderr in DIR.runs/; check_verified DIR FILE asserts
# on them: the exit status, and for a failure the message on stderr and an empty stdout (no awk,
# cut and run subshells in every test: about 40 ms of CPU each).
verify_cases() {
	local dir=$1 file rest rc
	mkdir -p "$dir.runs"
	while IFS=$'\t' read -r file rest; do
		rc=0
		fmt-verify "$dir/$file" >"$dir.runs/${file//\//%}.out" 2>"$dir.runs/${file//\//%}.err" || rc=$?
		echo "$rc" >"$dir.runs/${file//\//%}.rc"
	done <"$dir/cases.tsv"
}

# read_ran FILE VAR: VAR is FILE's text without its trailing newlines, as `run` keeps output.
read_ran() {
	local -n read_ran_var=$2
	read_ran_var=
	IFS= read -r -d '' read_ran_var <"$1" || true
	while [[ "$read_ran_var" == *$'\n' ]]; do read_ran_var=${read_ran_var%$'\n'}; done
}

check_verified() {
	local dir=$1 file=$2 name want msg rest ran=$1.runs/${2//\//%} status output stderr
	while IFS=$'\t' read -r name want msg rest; do
		[ "$name" = "$file" ] && break
	done <"$dir/cases.tsv"
	[ "$name" = "$file" ] || fail "no case $file in $dir/cases.tsv"
	[ -e "$ran.rc" ] || fail "no fmt-verify run of $file (verify_cases $dir in setup_file)"
	read_ran "$ran.rc" status
	read_ran "$ran.out" output
	read_ran "$ran.err" stderr
	[ "$status" -eq "$want" ] || fail "exit $status, expected $want; stderr: $stderr"
	if [ "$want" -eq 0 ]; then
		[[ "$output" == *": ok ("* ]] || fail "no ok line: $output"
	else
		[ -n "$msg" ] || msg="unrecognised format"
		[[ "$stderr" == *"$msg"* ]] || fail "stderr lacks '$msg': $stderr"
		[ -z "$output" ] || fail "stdout not empty: $output"
	fi
}

# Under make (make check, make cli: MAKELEVEL is set) every test runs without bats' DEBUG trap
# (see untraced): 10-25 ms of CPU less a test. A failure still fails with its message (fail's,
# the assertion's), but bats can no longer say at which line: run the file with bats directly,
# or set FMTKIT_BATS_TRACE=1, to have it. (The stale traces are cleared so that no wrong line
# is named.)
if [ -n "${MAKELEVEL:-}" ] && [ -z "${FMTKIT_BATS_TRACE:-}" ] && [ "${BATS_TRACE_LEVEL:-0}" -eq 0 ]; then
	trap - DEBUG
	BATS_DEBUG_LAST_STACK_TRACE=()
	BATS_DEBUG_LASTLAST_STACK_TRACE=()
	# Loaded at the top of a file, before bats sets its traps for the test: drop the DEBUG trap
	# right after bats sets it.
	if declare -F bats_setup_tracing >/dev/null && ! declare -F fmtkit_bats_setup_tracing >/dev/null; then
		eval "fmtkit_bats_setup_tracing() $(declare -f bats_setup_tracing | tail -n +2)"
		bats_setup_tracing() {
			fmtkit_bats_setup_tracing
			trap - DEBUG
			BATS_DEBUG_LAST_STACK_TRACE=()
			BATS_DEBUG_LASTLAST_STACK_TRACE=()
		}
	fi
fi

# stop_at_output N CMD...: run CMD in the background with FMTKIT_TEST_STOP_AT_SINK=N (it stops
# itself with SIGSTOP right after its Nth output has created its temporary file, fmt/io.h) and
# wait until it has stopped; its pid in $stopped_pid. CMD runs in a session of its own: in the
# test's process group, a stopped process is sent SIGHUP (exit 129, not the 143 of SIGTERM) by
# the kernel when another process's exit leaves that group orphaned, which make -j running other
# suites beside it from a detached shell can do.
stop_at_output() {
	stop_at_hook FMTKIT_TEST_STOP_AT_SINK "its output" "$@"
}

# stop_at_map N CMD...: the same with FMTKIT_TEST_STOP_AT_MAP=N: CMD stops right after it has
# mapped its Nth input file into memory (fmt/io.h).
stop_at_map() {
	stop_at_hook FMTKIT_TEST_STOP_AT_MAP "the mapping of input" "$@"
}

# stop_at_hook VAR WHAT N CMD...: run CMD with VAR=N, as stop_at_output says.
stop_at_hook() {
	local var=$1 what=$2 n=$3 i
	shift 3
	env "$var=$n" setsid "$@" 3>&- &
	stopped_pid=$!
	for i in $(seq 1 1000); do
		[ "$(proc_state_of $stopped_pid)" = T ] && return 0
		sleep 0.01
	done
	kill -KILL $stopped_pid
	fail "the command did not stop at $what $n: $*"
}

# term_stopped [SIGNAL]: SIGNAL (default TERM), then SIGCONT, to the process stop_at_output
# stopped; its exit status in $status.
term_stopped() {
	kill -"${1:-TERM}" $stopped_pid
	cont_stopped
}

# cont_stopped: SIGCONT to the process stop_at_output or stop_at_map stopped; its exit status in
# $status.
cont_stopped() {
	kill -CONT $stopped_pid
	status=0
	wait $stopped_pid || status=$?
}

# The state of the process PID: R, S, T (stopped)...
proc_state_of() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1
}
