#!/usr/bin/env bats
# Progress lines of the hashing passes: fmt-verify's digests of .apsim files, shard sets and
# bundles, fmt-shard pack and unpack. The rules of every progress line: on a terminal only
# (script(1) gives one), only after FMTKIT_PROGRESS_AFTER seconds, erased before anything else
# is printed, never on a pipe, with --quiet or with --no-progress.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	make_samples
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	fmt-convert --to apsim "$SAMPLES/tiny.safetensors" model.apsim
	fmt-convert --shard 40 "$SAMPLES/tiny.safetensors" set.apsim.index.json
	[ -f set-00003-of-00003.apsim ]
}

# on_terminal CMD: run CMD under script(1) (stdout and stderr a terminal); the transcript is
# left in ./transcript.
on_terminal() {
	script -q -e -c "$1" transcript >/dev/null
}

# The progress line of TOOL, then its erasure right before the text that follows it.
LINE=$'\r\e\\[K%s +[0-9]+%%  [0-9.]+ [KMG]?i?B of %s  [0-9.]+ [KMG]?i?B/s\r\e\\[K%s'

assert_drawn() {
	local tool=$1 total=$2 next=$3 re
	# shellcheck disable=SC2059
	re=$(printf "$LINE" "$tool" "$total" "$next")
	grep -aqE "$re" transcript || fail "no progress line of $total erased before '$next': $(cat -v transcript)"
}

assert_not_drawn() {
	! grep -aq $'\e\[K' transcript || fail "something was drawn: $(cat -v transcript)"
}

@test "fmt-verify: a line over the digests of an .apsim file and of a set, erased before the ok line" {
	export FMTKIT_PROGRESS_AFTER=0
	on_terminal "fmt-verify model.apsim set.apsim.index.json"
	assert_drawn fmt-verify '[0-9.]+ [KMG]?i?B' 'model\.apsim: ok \(apsim,'
	assert_drawn fmt-verify '[0-9.]+ [KMG]?i?B' 'set\.apsim\.index\.json: ok \(apsim-index,'
}

@test "fmt-verify: a line over a bundle's members (their total is the manifest's), also with a key" {
	fmt-shard pack set.apsim.index.json -o set.tar
	total=$(fmt-verify --json set.tar | jq .bytes)
	[ "$total" -gt 1024 ] && [ "$total" -lt 2048 ] # shown as "1.x KiB"
	human="1\\.[0-9] KiB"
	export FMTKIT_PROGRESS_AFTER=0
	on_terminal "fmt-verify set.tar"
	assert_drawn fmt-verify "$human" 'set\.tar: ok \(bundle of apsim-index, 4 files,'
	printf 'team secret\n' >secret
	fmt-sign sign --secret-file secret set.apsim.index.json >/dev/null
	fmt-shard pack -f set.apsim.index.json -o set.tar
	on_terminal "fmt-verify --secret-file secret set.tar"
	grep -aq 'set.tar: ok' transcript || fail "not verified: $(cat -v transcript)"
	assert_drawn fmt-verify '[0-9.]+ [KMG]?i?B' 'set\.tar: ok'
}

@test "fmt-shard pack and unpack: a line over the bytes hashed (pack hashes each file twice)" {
	total=$(cat set.apsim.index.json set-0000?-of-00003.apsim | wc -c)
	[ "$total" -gt 1024 ] && [ "$((2 * total))" -lt 4096 ]
	export FMTKIT_PROGRESS_AFTER=0
	on_terminal "fmt-shard pack set.apsim.index.json -o set.tar.zst"
	assert_drawn fmt-shard '[23]\.[0-9] KiB' 'set\.tar\.zst: 4 files'
	mkdir out
	on_terminal "fmt-shard unpack set.tar.zst -C out"
	assert_drawn fmt-shard '1\.[0-9] KiB' 'out/set-00001-of-00003\.apsim'
	cmp out/set-00002-of-00003.apsim set-00002-of-00003.apsim
}

@test "no line on a pipe, with --quiet or --no-progress, or before FMTKIT_PROGRESS_AFTER seconds" {
	fmt-shard pack set.apsim.index.json -o set.tar
	export FMTKIT_PROGRESS_AFTER=0
	run --separate-stderr fmt-verify model.apsim set.apsim.index.json set.tar
	assert_success
	[ -z "$stderr" ]
	for flag in --quiet --no-progress; do
		on_terminal "fmt-verify $flag model.apsim set.tar"
		assert_not_drawn
		rm -rf out
		on_terminal "fmt-shard unpack $flag set.tar -C out"
		assert_not_drawn
		[ -f out/set.apsim.index.json ]
		on_terminal "fmt-shard pack -f $flag set.apsim.index.json -o again.tar"
		assert_not_drawn
		cmp again.tar set.tar
	done
	# the default: only work that lasts a second draws a line, and this takes less
	unset FMTKIT_PROGRESS_AFTER
	on_terminal "fmt-verify model.apsim set.apsim.index.json set.tar"
	grep -aq 'set.tar: ok' transcript || fail "not verified: $(cat -v transcript)"
	assert_not_drawn
}

# Issue 20 item 14: scrypt takes seconds; on a terminal the wait is named, then erased.
@test "a passphrase-protected key: 'deriving the key from the passphrase…' on a terminal, erased; never with -q, --json or on a pipe" {
	export XDG_CONFIG_HOME=$PWD/config
	printf 'correct horse\n' >pw
	NOTE=$'\r\e\\[Kderiving the key from the passphrase\xe2\x80\xa6\r\e\\[K'
	on_terminal "fmt-sign keygen --passphrase-file pw"
	grep -aqE "${NOTE}created Ed25519 key" transcript || fail "keygen: $(cat -v transcript)"
	# signing: a key with low scrypt limits (keygen's above cost seconds each): the same note
	encrypted_pair cheap pw
	on_terminal "fmt-sign sign -s cheap.key --passphrase-file pw model.apsim"
	grep -aqE "${NOTE}signed model\.apsim with key" transcript || fail "sign: $(cat -v transcript)"
	for flag in -q --json --no-progress; do
		on_terminal "fmt-sign sign $flag -s cheap.key --passphrase-file pw -x $flag.minisig model.apsim"
		assert_not_drawn
		! grep -aq deriving transcript || fail "$flag: $(cat -v transcript)"
		[ -s "./$flag.minisig" ]
	done
	run --separate-stderr fmt-sign sign -s cheap.key --passphrase-file pw -x piped.minisig model.apsim
	assert_success
	assert_equal "$stderr" ""
}
