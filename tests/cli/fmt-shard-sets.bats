#!/usr/bin/env bats
# Shard sets written all or nothing (issue 8 items 4, 6, 8, 9; the shard-set module of issue 7):
# SIGTERM mid-unpack of a bundle of 100 members and mid-write of a set of 100 shards leaves no
# temporary and no finished file; a sharded output that would overwrite its own input set is
# refused for every shard and the index; models with zero tensors split, convert and merge
# (run under ASan+UBSan by `make asan`); a failing commit puts back what it replaced.
# Inputs: scripts/gen/shard-hostile.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	export HOSTILE="$BATS_FILE_TMPDIR/hostile"
	"$REPO_ROOT/scripts/gen/shard-hostile" "$HOSTILE"
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
}

# term_at_sink N DIR CMD...: run CMD with the test hook FMTKIT_TEST_STOP_AT_SINK=N (see
# libcommon/include/fmt/io.h: the process stops itself with SIGSTOP right after its Nth output
# has created its temporary file), wait until it has stopped, count the temporary files in DIR
# into $temps_at_stop, send SIGTERM then SIGCONT, and put CMD's exit status in $status.
term_at_sink() {
	local n=$1 dir=$2
	shift 2
	stop_at_output "$n" "$@"
	temps_at_stop=$(find "$dir" -maxdepth 1 -name '.fmtkit-tmp-*' | wc -l)
	staged_at_stop=$(find "$dir" -mindepth 2 -maxdepth 2 -path '*/.fmtkit-unpack-*/*' | wc -l)
	term_stopped
}

# What a directory holds, hidden files included, one name a line.
listing() {
	ls -A "$1" | sort
}

# ---- item 4: SIGTERM during unpack of a bundle with more than 64 members ----

@test "SIGTERM during unpack of 100 members: no temporary file and no member is left (exit 143)" {
	# Unpack stages every member in one private directory (issue 8 item 2): at the stop all 100
	# are there, none in place; SIGTERM removes the directory with everything in it.
	mkdir out
	term_at_sink 100 out fmt-shard unpack "$HOSTILE/many-members.tar" -C out
	[ "$temps_at_stop" -eq 0 ]
	[ "$staged_at_stop" -eq 100 ]
	[ "$status" -eq 143 ]
	[ -z "$(listing out)" ]
}

@test "the same bundle unpacks completely when not interrupted" {
	run fmt-shard unpack "$HOSTILE/many-members.tar" -C out
	assert_success
	[ "$(ls out | wc -l)" -eq 100 ]
	[ -z "$(find out -name '.fmtkit-*')" ]
	cmp <(tar xOf "$HOSTILE/many-members.tar" member-099.bin) out/member-099.bin
}

@test "unpacking 100 members needs no descriptor per member: it works under ulimit -n 24" {
	run bash -c 'ulimit -n 24 && fmt-shard unpack "$1" -C out' _ "$HOSTILE/many-members.tar"
	assert_success
	[ "$(ls out | wc -l)" -eq 100 ]
	[ -z "$(find out -name '.fmtkit-*')" ]
}

# ---- item 8: SIGTERM during a sharded conversion ----

@test "SIGTERM during a conversion to 100 safetensors shards: nothing is left (exit 143)" {
	cp "$HOSTILE/many-tensors.safetensors" m.safetensors
	term_at_sink 70 . fmt-convert --dtype keep --shard 64B m.safetensors out.safetensors.index.json
	[ "$temps_at_stop" -eq 70 ]
	[ "$status" -eq 143 ]
	[ "$(listing .)" = m.safetensors ]
}

@test "every signal that ends the process removes the temporaries (SIGXCPU, SIGXFSZ, SIGUSR1...); one the caller ignores (nohup) stays ignored" {
	# SIGINT, SIGTERM, SIGHUP and SIGPIPE did; a batch scheduler's SIGXCPU (ulimit -t), SIGUSR1,
	# SIGALRM or the kernel's SIGXFSZ (ulimit -f) left every .fmtkit-tmp-* behind.
	cp "$HOSTILE/many-tensors.safetensors" m.safetensors
	local sig
	# env sets the dispositions: whatever runs the suite (nohup, a CI runner) may ignore some
	for sig in ALRM USR1 USR2 XCPU XFSZ VTALRM HUP PIPE; do
		stop_at_output 3 env --default-signal fmt-convert --dtype keep --shard 64B m.safetensors \
			out.safetensors.index.json
		[ "$(find . -maxdepth 1 -name '.fmtkit-tmp-*' | wc -l)" -eq 3 ]
		term_stopped "$sig"
		[ "$status" -eq $((128 + $(kill -l "$sig"))) ] || fail "SIG$sig: exit $status"
		[ "$(listing .)" = m.safetensors ] || fail "SIG$sig left: $(listing .)"
	done
	# ignored by the caller (nohup: SIGHUP; a shell's background job: SIGINT and SIGQUIT)
	for sig in HUP INT QUIT; do
		stop_at_output 3 env --ignore-signal=HUP,INT,QUIT fmt-convert -q -f --dtype keep --shard 64B \
			m.safetensors out.safetensors.index.json
		term_stopped "$sig"
		[ "$status" -eq 0 ] || fail "SIG$sig ignored: exit $status"
		fmt-verify -q out.safetensors.index.json
	done
}

@test "SIGTERM during a sharded conversion to .apsim and to GGUF: nothing is left (exit 143)" {
	cp "$HOSTILE/many-tensors.safetensors" m.safetensors
	term_at_sink 3 . fmt-convert --shard 128B m.safetensors out.apsim.index.json
	[ "$temps_at_stop" -eq 3 ]
	[ "$status" -eq 143 ]
	[ "$(listing .)" = m.safetensors ]
	term_at_sink 2 . fmt-convert --dtype keep --shard 64B m.safetensors out.gguf
	[ "$temps_at_stop" -eq 2 ]
	[ "$status" -eq 143 ]
	[ "$(listing .)" = m.safetensors ]
}

@test "SIGTERM during fmt-shard split: nothing is left, an old set replaced with -f stays intact" {
	cp "$HOSTILE/many-tensors.safetensors" m.safetensors
	fmt-shard split --max-tensors 50 m.safetensors
	sha256sum m-0000* m.safetensors.index.json >before.sum
	term_at_sink 3 . fmt-shard split -f --max-tensors 50 m.safetensors
	[ "$temps_at_stop" -eq 3 ]
	[ "$status" -eq 143 ]
	sha256sum -c --quiet before.sum
	[ "$(listing . | grep -v '^before.sum$' | tr '\n' ' ')" = "m-00001-of-00002.safetensors m-00002-of-00002.safetensors m.safetensors m.safetensors.index.json " ]
}

@test "SIGTERM during the commit's renames waits until the whole set is in place (exit 143)" {
	cp "$HOSTILE/many-tensors.safetensors" m.safetensors
	# the hook stops the tool after the first of its 5 renames (FMTKIT_TEST_STOP_IN_COMMIT, io.h)
	export FMTKIT_TEST_STOP_IN_COMMIT=1
	term_at_sink 0 . fmt-convert --dtype keep --shard 1600B m.safetensors out.safetensors.index.json
	unset FMTKIT_TEST_STOP_IN_COMMIT
	[ "$temps_at_stop" -eq 4 ]
	[ "$status" -eq 143 ]
	[ -z "$(find . -name '.fmtkit-*')" ]
	[ "$(ls out-*-of-00004.safetensors | wc -l)" -eq 4 ]
	fmt-verify out.safetensors.index.json
	fmt-shard merge out.safetensors.index.json -o merged.safetensors
	cmp merged.safetensors m.safetensors
}

@test "an interrupted conversion leaves nothing; the same one finished gives the whole set" {
	cp "$HOSTILE/many-tensors.safetensors" m.safetensors
	run fmt-convert --dtype keep --shard 64B m.safetensors out.safetensors.index.json
	assert_success
	[ "$(ls out-*-of-00100.safetensors | wc -l)" -eq 100 ]
	fmt-verify out.safetensors.index.json
	fmt-shard merge out.safetensors.index.json -o merged.safetensors
	cmp merged.safetensors m.safetensors
}

# ---- item 6: a sharded output over its own input set ----

# same_set_refused FMT-ARGS: convert the set in . onto itself with -f; refused, nothing changed.
same_set_refused() {
	sha256sum * >before.sum
	run fmt-convert "$@"
	assert_failure 2
	assert_output --partial "output is the same file as input"
	sha256sum -c --quiet before.sum
	[ -z "$(find . -name '.fmtkit-*')" ]
	[ "$(ls | grep -vc '^before.sum$')" -eq "$(wc -l <before.sum)" ]
	rm before.sum
}

@test "-f over the input's own .apsim set is refused, for a shard and for the index alone" {
	fmt-convert --shard 30B "$SAMPLES/tiny.safetensors" m.apsim
	[ -f m-00003-of-00003.apsim ]
	same_set_refused m.apsim.index.json m.apsim --shard 30B -f
	assert_output --partial "m-00001-of-00003.apsim"
	# another cut (one shard): no shard name in common, the index is still the input's
	same_set_refused m.apsim.index.json m.apsim.index.json --shard 1GB -f
	assert_output --partial "m.apsim.index.json: output is the same file as input"
	same_set_refused m.apsim.index.json m.apsim.index.json -f
	# one file over a shard of the input set
	same_set_refused m.apsim.index.json m-00002-of-00003.apsim -f
	assert_output --partial "m-00002-of-00003.apsim: output is the same file as input"
}

@test "-f over the input's own safetensors and GGUF sets is refused" {
	fmt-convert --dtype keep --shard 30B "$SAMPLES/tiny.safetensors" m.safetensors
	same_set_refused m.safetensors.index.json m.safetensors --dtype keep --shard 30B -f
	rm m-* m.safetensors.index.json
	fmt-convert --dtype keep --shard 64B "$SAMPLES/tiny.safetensors" g.gguf
	[ -f g-00002-of-00003.gguf ]
	same_set_refused g-00001-of-00003.gguf g.gguf --dtype keep --shard 64B -f
	assert_output --partial "g-00001-of-00003.gguf"
}

@test "fmt-shard split -f onto the input's own shard names is refused, the set intact" {
	fmt-convert --shard 30B "$SAMPLES/tiny.safetensors" m.apsim
	sha256sum * >before.sum
	run fmt-shard split -f --max-size 30B m.apsim.index.json
	assert_failure 2
	assert_output --partial "output is the same file as input"
	sha256sum -c --quiet before.sum
	fmt-verify m.apsim.index.json
}

# ---- item 9: zero tensors ----

@test "zero tensors: safetensors splits into one empty shard and an index, merges back" {
	cp "$HOSTILE/zero-tensors.safetensors" z.safetensors
	run fmt-shard split --dry-run z.safetensors
	assert_success
	assert_output "z-00001-of-00001.safetensors: 0 tensors, 0 bytes of tensor data
z.safetensors.index.json: index"
	[ "$(listing .)" = z.safetensors ]
	run fmt-shard split --max-tensors 1 z.safetensors
	assert_success
	[ "$(jq -c . z.safetensors.index.json)" = '{"metadata":{"total_size":0},"weight_map":{}}' ]
	fmt-verify z.safetensors.index.json
	# an HF index names its shards only through weight_map: an empty set merges to an empty
	# model without the shard's metadata
	run fmt-shard merge z.safetensors.index.json -o merged.safetensors
	assert_success
	assert_output "merged.safetensors: 0 tensors from 1 file"
	[ "$(od -An -c merged.safetensors | tr -d ' \n')" = '\b\0\0\0\0\0\0\0{}' ]
}

@test "zero tensors: GGUF splits (also with --no-tensor-first-split) and merges back" {
	cp "$HOSTILE/zero-tensors.gguf" z.gguf
	run fmt-shard split z.gguf
	assert_success
	assert_output "z-00001-of-00001.gguf: 0 tensors, 0 bytes of tensor data"
	[ "$(fmt-inspect --json z-00001-of-00001.gguf | jq -c '[.tensor_count, .metadata["general.architecture"]]')" = '[0,"llama"]' ]
	fmt-shard merge z-00001-of-00001.gguf -o merged.gguf
	fmt-convert z.gguf converted.gguf
	cmp merged.gguf converted.gguf
	run fmt-shard split -f --no-tensor-first-split --max-tensors 1 z.gguf
	assert_success
	assert_line --index 0 "z-00001-of-00002.gguf: 0 tensors, 0 bytes of tensor data"
	assert_line --index 1 "z-00002-of-00002.gguf: 0 tensors, 0 bytes of tensor data"
	fmt-verify z-00001-of-00002.gguf
}

@test "zero tensors: .apsim and fmt-convert --shard to every set format" {
	fmt-convert "$HOSTILE/zero-tensors.safetensors" z.apsim
	run fmt-shard split --max-size 1 z.apsim
	assert_success
	assert_line --index 0 "z-00001-of-00001.apsim: 0 tensors, 0 bytes of tensor data"
	fmt-verify z.apsim.index.json
	fmt-shard merge z.apsim.index.json -o merged.apsim
	cmp merged.apsim z.apsim
	# NAME.<ext>.index.json asks for a set; a GGUF set when the data exceeds --shard (never here)
	for out in s.safetensors.index.json a.apsim.index.json g.gguf; do
		run fmt-convert --shard 1B "$HOSTILE/zero-tensors.safetensors" $out
		assert_success
	done
	[ "$(listing . | tr '\n' ' ')" = "a-00001-of-00001.apsim a.apsim.index.json g.gguf merged.apsim s-00001-of-00001.safetensors s.safetensors.index.json z-00001-of-00001.apsim z.apsim z.apsim.index.json " ]
	fmt-verify a.apsim.index.json s.safetensors.index.json g.gguf
}

# ---- the multi-file commit ----

@test "a commit that fails at the index puts the replaced shards back (exit 3)" {
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	fmt-shard split --max-tensors 2 m.safetensors
	sha256sum m-0000* >before.sum
	# A directory in the index's place is refused before anything is written (exit 2); one that
	# appears while the set is committed (the tool stopped after its first rename) makes the
	# index's rename fail.
	export FMTKIT_TEST_STOP_IN_COMMIT=1
	stop_at_output 0 fmt-shard split -f --max-tensors 3 m.safetensors 2>err
	unset FMTKIT_TEST_STOP_IN_COMMIT
	rm m.safetensors.index.json
	mkdir m.safetensors.index.json
	kill -CONT $stopped_pid
	status=0
	wait $stopped_pid || status=$?
	[ "$status" -eq 3 ]
	[ "$(cat err)" = "fmt-shard: error: m.safetensors.index.json: cannot replace: Not a directory" ]
	sha256sum -c --quiet before.sum
	[ -d m.safetensors.index.json ]
	[ -z "$(find . -name '.fmtkit-*')" ]
	[ ! -e m-00001-of-00002.safetensors ]
	run fmt-shard split -f --max-tensors 3 m.safetensors
	assert_failure 2
	assert_output "fmt-shard: error: m.safetensors.index.json: is a directory (expected the output file's name)"
	sha256sum -c --quiet before.sum
}

# ---- the cut: one function per format for split, --dry-run and fmt-convert ----

@test ".apsim: --max-tensors keeps a compressed tensor's codes and scales in one shard" {
	fmt-convert --dtype int8 "$SAMPLES/tiny.safetensors" q.apsim
	run fmt-shard split --json --dry-run --max-tensors 1 q.apsim
	assert_success
	plan=$(jq -c '[.shards[] | [.file, .tensors]]' <<<"$output")
	run fmt-shard split --json --max-tensors 1 q.apsim
	assert_success
	[ "$(jq -c '[.shards[] | [.file, .tensors]]' <<<"$output")" = "$plan" ]
	# every codes tensor shares its shard with its __qscale partner
	for s in $(jq -r '.weight_map | to_entries[] | select(.key | endswith("__qscale")) | .key' q.apsim.index.json); do
		[ "$(jq -r --arg k "$s" '.weight_map[$k]' q.apsim.index.json)" = "$(jq -r --arg k "${s%__qscale}" '.weight_map[$k]' q.apsim.index.json)" ]
	done
	[ "$(jq '[.shards[] | select(.tensors == 2)] | length' <<<"$output")" -ge 1 ]
	fmt-verify q.apsim.index.json
	fmt-shard merge q.apsim.index.json -o merged.apsim
	cmp merged.apsim q.apsim
}

@test "a signed .apsim split or merged warns that the signature is not carried over" {
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" s.apsim
	run --separate-stderr fmt-shard split --max-size 1 s.apsim
	assert_success
	[[ "$stderr" == *"s.apsim: the signature is not carried over; sign the result with fmt-sign sign"* ]]
	run --separate-stderr fmt-shard merge s.apsim.index.json -o m.apsim
	assert_success
	[ -z "$stderr" ]
	run --separate-stderr fmt-shard split -q -f --max-size 1 s.apsim
	assert_success
	[ -z "$stderr" ]
}
