#!/usr/bin/env bats
# Small files (keys, signatures, passphrases, the JSON an option names, registries) and inputs
# that could hang or exhaust a tool (issue 19, item 5): a FIFO or a device found where a key
# is looked for, /dev/zero given to every option that reads a file, /dev/zero and /dev/null as
# the input FILE. Each must end at once (timeout would give 124) with its exit status and
# message, within a small address space, writing nothing; pipes the user names keep working.
# Also: an option that takes one value given twice (item 10).

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	make_samples
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	fmt-sign keygen -W >/dev/null
	PUB=$XDG_CONFIG_HOME/fmtkit/ed25519.pub
	SEC=$XDG_CONFIG_HOME/fmtkit/ed25519.key
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	fmt-sign sign -s "$SEC" m.safetensors >/dev/null
	printf 'a,b\n1,2\n3,4\n' >d.csv
	mkdir keys
	cp "$PUB" keys/good.pub
}

# bounded CMD...: CMD under a 512 MB address space (none in sanitizer builds) and a 10 s
# timeout; sets status, output and stderr as run --separate-stderr does.
bounded() {
	run --separate-stderr bash -c "$(limit_as 512000) timeout 10 \"\$@\"" bounded "$@"
}

# Nothing but what setup made is in the directory.
assert_nothing_written() {
	assert_equal "$(ls -A | grep -v -e '^separate-stderr-' | grep -v -x -e config -e m.safetensors \
		-e m.safetensors.minisig -e d.csv -e keys "$@")" ""
}

@test "--trusted-keys DIR: a FIFO x.pub is refused at once, not read (fmt-verify, fmt-sign verify; exit 3)" {
	mkfifo keys/x.pub
	bounded fmt-verify --trusted-keys keys m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: keys/x.pub: is a FIFO (expected a regular file)"
	assert_equal "$output" ""
	bounded fmt-sign verify --trusted-keys keys m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: keys/x.pub: is a FIFO (expected a regular file)"
	[ -p keys/x.pub ]
	# without it, the directory is trusted as before
	rm keys/x.pub
	bounded fmt-verify --trusted-keys keys m.safetensors
	assert_success
}

@test "--trusted-keys DIR: z.pub -> /dev/zero is refused (exit 3) without reading it; a link to a key file works" {
	ln -s /dev/zero keys/z.pub
	bounded fmt-verify --trusted-keys keys m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: keys/z.pub: is a character device (expected a regular file)"
	bounded fmt-sign verify --trusted-keys keys m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: keys/z.pub: is a character device (expected a regular file)"
	rm keys/z.pub
	mv keys/good.pub real.pub
	ln -s "$PWD/real.pub" keys/link.pub
	bounded fmt-verify --trusted-keys keys m.safetensors
	assert_success
	[[ "$output" == *".minisig by trusted key"* ]] || fail "$output"
}

@test "FILE.minisig found beside FILE: a FIFO or a device there is refused (exit 3), never waited on" {
	mv m.safetensors.minisig saved.minisig
	mkfifo m.safetensors.minisig
	bounded fmt-verify -p "$PUB" m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: m.safetensors.minisig: is a FIFO (expected a regular file)"
	bounded fmt-sign verify -p "$PUB" m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: m.safetensors.minisig: is a FIFO (expected a regular file)"
	rm m.safetensors.minisig
	ln -s /dev/zero m.safetensors.minisig
	bounded fmt-verify -p "$PUB" m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: m.safetensors.minisig: is a character device (expected a regular file)"
}

@test "the default public key path holding a FIFO is refused (exit 3)" {
	mv "$PUB" saved.pub
	mkfifo "$PUB"
	bounded fmt-sign verify m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: $PUB: is a FIFO (expected a regular file)"
}

# /dev/zero given to an option that reads a small file: refused as a device, exit 3 (io), as every input that is not a file.
@test "/dev/zero for -p, -x, --encrypt-to, --card, --schema, --set-from, --terms: exit 3 at once, nothing written" {
	msg="/dev/zero: is a character device (expected a regular file or a pipe)"
	bounded fmt-verify -p /dev/zero m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: $msg"
	bounded fmt-sign verify -p /dev/zero m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: $msg"
	bounded fmt-sign verify -x /dev/zero m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: $msg"
	for opt in --encrypt-to --card --schema; do
		bounded fmt-convert "$opt" /dev/zero d.csv out.ald
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: $msg"
	done
	bounded fmt-convert --set-from /dev/zero m.safetensors out.gguf
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: $msg"
	fmt-convert d.csv plain.ald
	before=$(sha256sum plain.ald)
	bounded fmt-sign license --terms /dev/zero --licensee acme -s "$SEC" plain.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: $msg"
	assert_equal "$(sha256sum plain.ald)" "$before"
	assert_nothing_written -e plain.ald
}

@test "/dev/zero for secret, passphrase, password and identity files: exit 3 at once" {
	bounded fmt-verify --secret-file /dev/zero m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: secret file /dev/zero is not a regular file or a pipe (it is a character device)"
	bounded fmt-sign sign -s /dev/zero m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: /dev/zero: secret file /dev/zero is not a regular file or a pipe (it is a character device)"
	PW=pw fmt-convert --encrypt-password-env PW d.csv e.ald
	bounded fmt-inspect --password-file /dev/zero e.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-inspect: error: secret file /dev/zero is not a regular file or a pipe (it is a character device)"
	bounded fmt-inspect --identity /dev/zero e.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-inspect: error: /dev/zero: the identity is not a regular file (it is a character device)"
}

@test "/dev/zero for --passphrase-file of an encrypted key and for fmt-watermark --registry" {
	printf 'pw\n' >pw
	mkdir -p enc/fmtkit
	encrypted_pair enc/fmtkit/ed25519 pw
	bounded fmt-sign sign -s enc/fmtkit/ed25519.key --passphrase-file /dev/zero m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: secret file /dev/zero is not a regular file or a pipe (it is a character device)"
	head -c 32 /dev/urandom >wm.key
	chmod 600 wm.key
	/usr/bin/python3 -c '
import json, struct, sys
import numpy as np
a = np.random.default_rng(1).normal(0, 0.02, (64, 128)).astype("<f4")
h = json.dumps({"w": {"dtype": "F32", "shape": [64, 128], "data_offsets": [0, a.nbytes]}}).encode()
sys.stdout.buffer.write(struct.pack("<Q", len(h)) + h + a.tobytes())' >big.safetensors
	fmt-watermark embed --scheme qim --key wm.key --buyer alice big.safetensors w.safetensors >/dev/null
	run fmt-watermark extract --key wm.key w.safetensors
	assert_success
	bounded fmt-watermark extract --key wm.key --registry /dev/zero w.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-watermark: error: /dev/zero: is a character device (expected a regular file or a pipe)"
	bounded fmt-watermark extract --key /dev/zero w.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-watermark: error: /dev/zero: the watermark key is not a regular file (it is a character device)"
}

@test "nk-run --input-file /dev/zero is refused (exit 3); a pipe and - still work" {
	nk=$REPO_ROOT/tests/data/fixtures/nk/test_mlp.nk
	n=$(nk-run --json --random 1 "$nk" | jq '.input_shape | reduce .[] as $d (1; . * $d)')
	[ "$n" -gt 0 ]
	bounded nk-run --input-file /dev/zero "$nk"
	assert_equal "$status" 3
	assert_equal "$stderr" "nk-run: error: /dev/zero: is a character device (expected a regular file or a pipe)"
	values=$(seq -s, 1 "$n" | sed 's/^/[/; s/$/]/')
	want=$(nk-run --json --input-json "$values" "$nk" | jq -c .values)
	run bash -c 'nk-run --json --input-file <(printf "%s" "$1") "$2" | jq -c .values' _ "$values" "$nk"
	assert_success
	assert_equal "$output" "$want"
	run bash -c 'printf "%s" "$1" | nk-run --json --input-file - "$2" | jq -c .values' _ "$values" "$nk"
	assert_success
	assert_equal "$output" "$want"
}

@test "a device as the file of an option (.nk inputs, labels, calibration, imatrix) is exit 3 as the input FILE is, in every tool" {
	# nk-run --input-file and fmt-convert's .nk options said exit 2, fmt-inspect FILE exit 3
	nk=$REPO_ROOT/tests/data/fixtures/nk/test_mlp.nk
	printf '[[1, 2]]' >in.json
	for dev in /dev/zero /dev/null; do
		msg="$dev: is a character device (expected a regular file or a pipe)"
		bounded nk-run --input-file "$dev" "$nk"
		assert_equal "$status" 3
		assert_equal "$stderr" "nk-run: error: $msg"
		bounded nk-run --json --input-file "$dev" "$nk"
		assert_equal "$status" 3
		assert_equal "$(jq -c '[.exit, .error]' <<<"$stderr")" '[3,"IoError"]'
		for args in "--embed-tests $dev" "--embed-tests in.json --labels $dev" "--dtype int8 --calibration $dev"; do
			bounded fmt-convert $args "$nk" out.nk
			assert_equal "$status" 3
			assert_equal "$stderr" "fmt-convert: error: $msg"
		done
		bounded fmt-convert --imatrix "$dev" m.safetensors out.gguf
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: $msg"
		bounded fmt-convert --metadata-from "$dev" m.safetensors out.gguf
		assert_equal "$status" 3
		bounded fmt-inspect "$dev"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-inspect: error: $msg"
		# a directory is refused alike
		bounded nk-run --input-file keys "$nk"
		assert_equal "$status" 3
		assert_equal "$stderr" "nk-run: error: keys: is a directory (expected a regular file or a pipe)"
	done
	assert_nothing_written -e in.json
}

@test "/dev/zero and /dev/null as the input FILE of every reading tool: exit 3, the device named" {
	for dev in /dev/zero /dev/null; do
		msg="$dev: is a character device (expected a regular file or a pipe)"
		for cmd in "fmt-verify" "fmt-inspect" "nk-run --random 1" "fmt-shard split" "fmt-sign sign -s $SEC" \
			   "fmt-watermark detect"; do
			bounded $cmd "$dev"
			assert_equal "$status" 3
			assert_equal "$stderr" "${cmd%% *}: error: $msg"
			assert_equal "$output" ""
		done
		bounded fmt-convert "$dev" out.gguf
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: $msg"
		bounded fmt-watermark embed --key wm.key --buyer b "$dev" out.gguf
		[ "$status" -ge 2 ] # the key is missing or the input refused; never a hang
		[ "$status" -ne 124 ]
	done
	# standard input that is a device
	run --separate-stderr bash -c "$(limit_as 512000) timeout 10 fmt-inspect - </dev/zero"
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-inspect: error: -: is a character device (expected a regular file or a pipe)"
	assert_nothing_written
}

@test "pipes the user names keep working: -p <(...), -p -, --schema <(...), an input on standard input" {
	run bash -c 'fmt-verify -p <(cat "$1") m.safetensors' _ "$PUB"
	assert_success
	[[ "$output" == "m.safetensors: ok (safetensors, 5 tensors"*"by trusted key"* ]] || fail "$output"
	run bash -c 'fmt-verify -p - m.safetensors <"$1"' _ "$PUB"
	assert_success
	run bash -c 'fmt-sign verify -p <(cat "$1") -x <(cat m.safetensors.minisig) m.safetensors' _ "$PUB"
	assert_success
	run bash -c "fmt-convert --schema <(printf '{\"a\": \"int8\"}') d.csv s.ald && fmt-inspect --json --schema s.ald | jq -c '[.schema.fields[] | .type]'"
	assert_success
	assert_equal "$output" '["int8","int64"]'
	run bash -c 'cat m.safetensors | fmt-inspect --json - | jq .tensors | jq length'
	assert_success
	assert_equal "$output" 5
}

@test "a password, passphrase or secret file may be - (standard input, piped); - named twice is exit 2" {
	# 'cannot open the secret file -' (exit 2 or 3) for every one of them, as fmtkit(7) promised
	printf 'id,x\n1,2\n' >d.csv
	run bash -c 'printf "pw\n" | fmt-convert --encrypt-password-file - d.csv e.ald'
	assert_success
	run --separate-stderr bash -c 'printf "pw\n" | fmt-convert --password-file - e.ald - --to csv'
	assert_success
	assert_output "$(cat d.csv)"
	fmt-sign keygen -p k.pub -s k.key --passphrase-file <(printf 'phrase\n') >/dev/null
	run bash -c 'printf "phrase\n" | fmt-sign sign -q -s k.key --passphrase-file - d.csv && fmt-sign verify -q -p k.pub d.csv'
	assert_success
	# an Ed25519 secret key may be piped in too (pass show minisign | fmt-sign sign -s - ...); the
	# key files whose mode is checked may not, and say so (they said 'cannot open ...', exit 3)
	fmt-sign keygen -W -p w.pub -s w.key >/dev/null
	rm -f d.csv.minisig
	run bash -c 'cat w.key | fmt-sign sign -q -s - d.csv && fmt-sign verify -q -p w.pub d.csv'
	assert_success
	run --separate-stderr bash -c 'cat w.key | fmt-convert --identity - e.ald out.csv'
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: the identity is read from a file (its mode is checked), not standard input"
	run --separate-stderr bash -c 'head -c 32 /dev/zero | fmt-watermark extract --key - d.csv'
	assert_failure 2
	assert_equal "$stderr" "fmt-watermark: error: the watermark key is read from a file (its mode is checked), not standard input"
	fmt-convert m.safetensors m.apsim
	run bash -c 'printf "team secret\n" | fmt-sign sign -q --secret-file - m.apsim && fmt-verify -q --secret-file <(printf "team secret") m.apsim'
	assert_success
	# standard input is one stream: a secret and IN, or two secrets, cannot both be it
	run --separate-stderr bash -c 'cat e.ald | fmt-convert --password-file - - out.csv'
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: standard input (-) is named twice: as a secret file and as IN"
	run --separate-stderr bash -c 'printf "pw\n" | fmt-convert --password-file - --schema - e.ald out.csv'
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: standard input (-) is named twice: as a secret file and as a file an option names"
	[ ! -e out.csv ]
}

@test "small files are read up to their limit, counting bytes: endless pipes and a large file are refused (exit 4)" {
	bounded bash -c 'fmt-verify -p <(yes) m.safetensors'
	assert_equal "$status" 4
	[[ "$stderr" == "fmt-verify: error: /dev/fd/"*": more than 16384 bytes (the limit for this file)" ]] || fail "$stderr"
	head -c 20000 /dev/zero | tr '\0' a >big.pub
	bounded fmt-verify -p big.pub m.safetensors
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: big.pub: more than 16384 bytes (the limit for this file)"
	# a --set-from JSON on a pipe that never ends: read up to its limit (64 MiB), no further
	run --separate-stderr bash -c "$(limit_as 400000) timeout 60 fmt-convert --set-from <(printf '{\"a\": \"'; yes) m.safetensors o.gguf"
	assert_equal "$status" 4
	[[ "$stderr" == "fmt-convert: error: /dev/fd/"*": more than 67108864 bytes (the limit for this file)" ]] || fail "$stderr"
	[ ! -e o.gguf ]
}

# Item 10: one recipient per file (specs/ald.md §5); every option that takes one value alike.
@test "--encrypt-to given twice is a usage error (exit 2) naming it; nothing is written" {
	fmt-sign keygen -W --x25519 >/dev/null
	X=$XDG_CONFIG_HOME/fmtkit/x25519.pub
	[ -f "$X" ] || X=$(ls "$XDG_CONFIG_HOME"/fmtkit/*x25519*.pub | head -1)
	run --separate-stderr fmt-convert --encrypt-to "$X" --encrypt-to "$X" d.csv e.ald
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: --encrypt-to given twice (it takes one value)
Try 'fmt-convert --help'."
	[ ! -e e.ald ]
	run --separate-stderr fmt-convert --secret-file a --key-secret-file b m.safetensors o.apsim
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: --key-secret-file given after --secret-file, the same option (it takes one value)
Try 'fmt-convert --help'."
	run --separate-stderr fmt-verify -p "$PUB" --pubkey "$PUB" m.safetensors
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-verify: error: -p/--pubkey given twice (it takes one value)
Try 'fmt-verify --help'."
	run --separate-stderr fmt-convert -c zstd --compress lz4 d.csv c.ald
	assert_equal "$status" 2
	assert_equal "$stderr" "fmt-convert: error: --compression and --compress are the same option (it takes one value)
Try 'fmt-convert --help'."
	[ ! -e c.ald ]
	# once is fine, and repeatable options and flags still repeat
	run fmt-convert --encrypt-to "$X" d.csv e.ald
	assert_success
	run fmt-convert -v -v --include '*' --include 'layers.*' m.safetensors o.gguf
	assert_success
}

@test "a shard an index names that is a FIFO or a device is refused at once (exit 3), never waited on" {
	cp -r "$SAMPLES/sharded" sh
	last=sh/model-00002-of-00002.safetensors
	[ -f "$last" ]
	rm "$last"
	mkfifo "$last"
	for tool in fmt-verify fmt-inspect; do
		bounded "$tool" sh/model.safetensors.index.json
		assert_equal "$status" 3
		assert_equal "$stderr" "$tool: error: $last: is a FIFO (expected a regular file)"
	done
	bounded fmt-convert sh/model.safetensors.index.json out.gguf
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: $last: is a FIFO (expected a regular file)"
	[ ! -e out.gguf ]
	rm "$last"
	ln -s /dev/zero "$last"
	bounded fmt-verify sh/model.safetensors.index.json
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-verify: error: $last: is a character device (expected a regular file or a pipe)"
}

@test "a passphrase, password, secret or identity file that cannot be opened is exit 3 in every tool, as a key or input file is" {
	# they were exit 2 (usage) when missing, where a missing -s, -p, --key or input is exit 3
	# ('cannot open', CONVENTIONS); the options themselves stay usage errors when misused
	# A passphrase file of a key (-s, --sign-key, --identity) was named as the key file:
	# "e.key: cannot open the secret file nofile"; it is the passphrase's, as --secret-file's is
	printf 'pw\n' >pw.txt
	fmt-sign keygen -p e.pub -s e.key --passphrase-file pw.txt >/dev/null
	fmt-sign keygen --x25519 -p r.pub -s r.key --passphrase-file pw.txt >/dev/null
	fmt-sign keygen --watermark -s wm.key >/dev/null
	fmt-convert --encrypt-to r.pub d.csv r.ald
	fmt-convert --encrypt-password-file pw.txt d.csv p.ald
	fmt-convert d.csv d.ald
	fmt-convert m.safetensors m.apsim
	fmt-shard pack -q m.safetensors -o b.tar
	local line tool what nofile="nofile: No such file or directory"
	while IFS='|' read -r what line; do
		tool=${line%% *}
		run --separate-stderr $line
		assert_failure 3
		assert_equal "$stderr" "$tool: error: $what"
	done <<-EOF
	nofile: cannot open the identity: No such file or directory|fmt-convert --identity nofile r.ald out.csv
	nofile: cannot open the identity: No such file or directory|fmt-inspect --head 1 --identity nofile r.ald
	nofile: cannot open the identity: No such file or directory|fmt-verify --identity nofile r.ald
	nofile: cannot open the identity: No such file or directory|fmt-watermark extract --key wm.key --identity nofile r.ald
	cannot open the secret file $nofile|fmt-inspect --head 1 --identity r.key --passphrase-file nofile r.ald
	cannot open the secret file $nofile|fmt-convert --sign-key e.key --passphrase-file nofile d.csv out.ald
	cannot open the secret file $nofile|fmt-sign sign -s e.key --passphrase-file nofile d.csv
	cannot open the secret file $nofile|fmt-watermark prove --key wm.key --buyer b --sign-key e.key --passphrase-file nofile m.safetensors
	cannot open the secret file $nofile|fmt-verify --identity r.key --passphrase-file nofile r.ald
	cannot open the secret file $nofile|fmt-convert --identity r.key --passphrase-file nofile r.ald out.csv
	cannot open the secret file $nofile|fmt-watermark extract --key wm.key --identity r.key --passphrase-file nofile r.ald
	cannot open the secret file $nofile|fmt-sign key-id -s e.key --passphrase-file nofile
	cannot open the secret file $nofile|fmt-sign license --sign-key e.key --passphrase-file nofile --licensee bob d.ald
	cannot open the secret file $nofile|fmt-sign keygen -p n.pub -s n.key --passphrase-file nofile
	cannot open the secret file $nofile|fmt-convert --password-file nofile p.ald out.csv
	cannot open the secret file $nofile|fmt-verify --password-file nofile p.ald
	cannot open the secret file $nofile|fmt-convert --encrypt-password-file nofile d.csv out.ald
	cannot open the secret file $nofile|fmt-sign sign --secret-file nofile m.apsim
	cannot open the secret file $nofile|fmt-verify --secret-file nofile m.apsim
	m.safetensors: cannot open the secret file $nofile|fmt-convert --secret-file nofile m.safetensors out.apsim
	b.tar: cannot open the secret file $nofile|fmt-shard unpack --secret-file nofile -C outd b.tar
	nofile: cannot open the secret key: No such file or directory|fmt-sign sign -s nofile d.csv
	nofile: cannot open the watermark key: No such file or directory|fmt-watermark extract --key nofile d.csv
	EOF
	[ ! -e out.csv ] && [ ! -e out.ald ] && [ ! -e out.apsim ] && [ ! -e n.key ] && [ ! -e d.csv.minisig ] && [ ! -e outd ]
}
