#!/usr/bin/env bats
# fmt-verify without a key: every kind of signature it can meet is named, in the same words,
# "signed (not checked: no key given)", and in JSON as {"kind":KIND,"checked":false} in
# "signatures"; the exit status stays 0 (digests and structure are still checked).

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	fmt-sign keygen -q -W -p a.pub -s a.key
	printf 'a-team-secret\n' >team.secret
	printf 'id,name\n1,one\n2,two\n3,three\n' >rows.csv
	cp "$SAMPLES/tiny.safetensors" m.safetensors
}

UNCHECKED="signed (not checked: no key given)"

# unchecked FILE 'OK-LINE-START' 'KINDS': without a key, fmt-verify FILE exits 0, its ok line is
# OK-LINE-START followed by ", signed (not checked: no key given))", and its JSON "signatures"
# are exactly the unchecked KINDS (a JSON array of kind names).
unchecked() {
	run --separate-stderr fmt-verify "$1"
	assert_success
	assert_output "$2, $UNCHECKED)"
	[ -z "$stderr" ]
	run --separate-stderr fmt-verify --json "$1"
	assert_success
	assert_equal "$(jq -c '.signatures' <<<"$output")" "$(jq -c '[.[] | {kind: ., checked: false}]' <<<"$3")"
}

@test "FILE.minisig beside a file, no key given" {
	fmt-sign sign -q -s a.key m.safetensors
	unchecked m.safetensors "m.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes" '["minisig"]'
	# unsigned: nothing said
	cp "$SAMPLES/tiny.safetensors" u.safetensors
	run fmt-verify u.safetensors
	assert_output "u.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes)"
	[ "$(fmt-verify --json u.safetensors | jq -c .signatures)" = null ]
	# with the key it is checked as before
	run fmt-verify -p a.pub m.safetensors
	assert_success
	assert_output "m.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes, .minisig by trusted key $(fmt-sign key-id -p a.pub))"
}

@test ".apsim signed with HMAC, and with Ed25519 embedded: the same words" {
	fmt-convert -q m.safetensors h.apsim
	fmt-sign sign -q --secret-file team.secret h.apsim
	unchecked h.apsim "h.apsim: ok (apsim, 5 tensors, 1 file, $(stat -c %s h.apsim) bytes" '["hmac-sha256"]'
	fmt-convert -q --sign-key a.key m.safetensors e.apsim
	unchecked e.apsim "e.apsim: ok (apsim, 5 tensors, 1 file, $(stat -c %s e.apsim) bytes" '["ed25519"]'
	# the key still checks it: exit 0 with it, 7 with another
	run fmt-verify --secret-file team.secret h.apsim
	assert_success
	assert_output "h.apsim: ok (apsim, 5 tensors, 1 file, $(stat -c %s h.apsim) bytes, hmac-sha256 signature by the shared secret)"
	printf 'other\n' >other.secret
	run fmt-verify --secret-file other.secret h.apsim
	assert_failure 7
}

@test ".apsim shard sets: the index signed with HMAC or Ed25519" {
	fmt-convert -q --shard 100 m.safetensors h.apsim.index.json
	fmt-sign sign -q --secret-file team.secret h.apsim.index.json
	bytes=$(cat h.apsim.index.json h-0000?-of-0000?.apsim | wc -c)
	files=$(ls h.apsim.index.json h-0000?-of-0000?.apsim | wc -l)
	unchecked h.apsim.index.json "h.apsim.index.json: ok (apsim-index, 5 tensors, $files files, $bytes bytes" '["hmac-sha256"]'
	fmt-convert -q --sign-key a.key --shard 100 m.safetensors e.apsim.index.json
	bytes=$(cat e.apsim.index.json e-0000?-of-0000?.apsim | wc -c)
	unchecked e.apsim.index.json "e.apsim.index.json: ok (apsim-index, 5 tensors, $files files, $bytes bytes" '["ed25519"]'
}

@test ".ald signature block, and a .minisig beside it too: one phrase, both kinds in JSON" {
	fmt-convert -q --sign-key a.key rows.csv s.ald
	unchecked s.ald "s.ald: ok (ald, 3 rows, CRC-32 ieee" '["ed25519"]'
	fmt-sign sign -q -s a.key s.ald
	unchecked s.ald "s.ald: ok (ald, 3 rows, CRC-32 ieee" '["minisig","ed25519"]'
}

@test "APR v1 signature block" {
	seed=$(printf '42%.0s' $(seq 32))
	"$REPO_ROOT/tests/gen/apr-v1-signed.py" v1.apr v1.pub "$seed" 0123456789ABCDEF
	unchecked v1.apr "v1.apr: ok (apr, 0 tensors, 1 file, 240 bytes" '["ed25519"]'
}

@test "a bundle with its own FILE.minisig" {
	fmt-shard pack -q m.safetensors -o b.tar
	fmt-sign sign -q -s a.key b.tar
	unchecked b.tar "b.tar: ok (bundle of safetensors, 1 file, 468 bytes" '["minisig"]'
}
