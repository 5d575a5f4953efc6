#!/usr/bin/env bats
# Issue 19 items 1, 2 and 8: a licence whose seller signature was stripped (the .ald signature
# does not cover the licence block) is refused wherever a key is given or the file is signed;
# the rows of an expired .ald are not read without --allow-expired; bytes outside every block
# (after the signature block, after the licence terms, a signature block left behind a cleared
# flag) are exit 4. The attacks come from scripts/gen/ald-licence-attacks.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	export XDG_CONFIG_HOME
	printf 'id,x\n1,0.5\n2,1.25\n3,-2.0\n' >in.csv
	printf '{"use": "research"}\n' >terms.json
	fmt-sign keygen -W -p s.pub -s s.key >/dev/null
	ID=$(fmt-sign key-id -p s.pub)
	fmt-convert --sign-key s.key in.csv signed.ald
	cp signed.ald lic.ald
	fmt-sign license -q --licensee acme --expires 2999-01-01 --seats 3 --terms terms.json --sign-key s.key lic.ald
	"$REPO_ROOT/scripts/gen/ald-licence-attacks" signed.ald lic.ald att
	NO_SELLER=": the .ald signature does not cover the licence block, so nothing vouches for its expiry, limits and terms"
}

# Nothing but what the test made: no temporary file, no output.
only_inputs() {
	local extra
	extra=$(ls -A | grep -v -x -e in.csv -e terms.json -e s.pub -e s.key -e signed.ald -e lic.ald -e att -e config \
		-e keys -e 'lic\.ald\.minisig' -e 'lic\.orig' -e 'bats-run-.*' -e 'separate-stderr-.*' || true)
	[ -z "$extra" ] || fail "left behind: $extra"
	extra=$(ls -A att | grep -v -x -e '[a-z-]*\.ald' -e '[a-z-]*\.orig' -e '[a-z-]*\.ald\.orig' || true)
	[ -z "$extra" ] || fail "left behind in att: $extra"
}

@test "item 1: a stripped seller signature (expiry 2100, flags and seats cleared, CRC fixed) is exit 7 with a key" {
	for f in stripped stripped-empty; do
		cp "att/$f.ald" "att/$f.orig"
		run --separate-stderr fmt-verify -p s.pub "att/$f.ald"
		assert_failure 7
		assert_output ""
		assert_equal "$stderr" "fmt-verify: error: att/$f.ald: the licence carries no seller signature, which it must when trusted keys are given$NO_SELLER"
		mkdir -p keys && cp s.pub keys/
		run --separate-stderr fmt-verify --trusted-keys keys "att/$f.ald"
		assert_failure 7
		run --separate-stderr fmt-verify -P "$(sed -n 2p s.pub)" "att/$f.ald"
		assert_failure 7
		# no key, but the file is signed: the licence must still carry one
		run --separate-stderr fmt-verify "att/$f.ald"
		assert_failure 7
		assert_output ""
		assert_equal "$stderr" "fmt-verify: error: att/$f.ald: the licence carries no seller signature, which it must in a signed file$NO_SELLER"
		run --separate-stderr fmt-verify --json -p s.pub "att/$f.ald"
		assert_failure 7
		[ "$(jq -c '[.ok, .error, .exit]' <<<"$output")" = '[false,"SignatureInvalid",7]' ]
		cmp "att/$f.ald" "att/$f.orig"
	done
	# the stripped licence is what the attacker wanted: no expiry enforced, no seats
	[ "$(fmt-inspect --json att/stripped.ald | jq -c '.ald.license | [.expires_at, .flags, .seat_limit, .terms]')" = \
		'[4102444800,0,0,"{\"use\":\"research\"}"]' ]
	# and the file's own signature still verifies: only the licence rule catches it
	run --separate-stderr fmt-verify -p s.pub signed.ald
	assert_success
	only_inputs
}

@test "item 1: a moved expiry with seller_sig kept is exit 7 with or without a key; the genuine licence passes" {
	for args in "-p s.pub" ""; do
		run --separate-stderr fmt-verify $args att/expiry-moved.ald
		assert_failure 7
		assert_equal "$stderr" "fmt-verify: error: att/expiry-moved.ald: licence: seller_sig by key $ID does not verify (the licence or the file was changed after licensing)"
	done
	run --separate-stderr fmt-verify -p s.pub lic.ald
	assert_success
	assert_output "lic.ald: ok (ald, 3 rows, CRC-32 ieee, ed25519 signature by trusted key $ID, licence until 2999-01-01T00:00:00Z by seller key $ID (trusted))"
	# without a key: ok, and said to be unverified
	run --separate-stderr fmt-verify lic.ald
	assert_success
	assert_output "lic.ald: ok (ald, 3 rows, CRC-32 ieee, signed (not checked: no key given), licence until 2999-01-01T00:00:00Z unverified (seller key $ID: signature valid, key not checked: no trusted key given))"
	run --separate-stderr fmt-verify --json lic.ald
	[ "$(jq -c .license <<<"$output")" = "{\"expires\":\"2999-01-01T00:00:00Z\",\"seller_key_id\":\"$ID\",\"seller_signature\":\"not checked\",\"verified\":false}" ]
}

@test "item 1: signature block and seller_sig both removed: exit 7 with a key; unverified without; a .minisig makes it signed" {
	f=att/stripped-unsigned.ald
	run --separate-stderr fmt-verify -p s.pub "$f"
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: $f: not signed: no signature block (flag bit 1) and no FILE.minisig"
	run --separate-stderr fmt-verify "$f"
	assert_success
	assert_output "$f: ok (ald, 3 rows, CRC-32 ieee, licence until 2100-01-01T00:00:00Z unverified (no seller signature))"
	run --separate-stderr fmt-verify --json "$f"
	[ "$(jq -c .license <<<"$output")" = '{"expires":"2100-01-01T00:00:00Z","seller_key_id":null,"seller_signature":"absent","verified":false}' ]
	# signed whole by a detached .minisig of a trusted key: the licence still needs its seller's
	fmt-sign sign -q -s s.key "$f"
	run --separate-stderr fmt-verify -p s.pub "$f"
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: $f: the licence carries no seller signature, which it must when trusted keys are given$NO_SELLER"
	run --separate-stderr fmt-verify "$f"
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: $f: the licence carries no seller signature, which it must in a file signed by its .minisig$NO_SELLER"
	# a genuine licence beside a .minisig passes with the key
	fmt-sign sign -q -s s.key lic.ald
	run --separate-stderr fmt-verify -p s.pub lic.ald
	assert_success
	assert_output --partial ".minisig by trusted key $ID, ed25519 signature by trusted key $ID, licence until 2999-01-01T00:00:00Z by seller key $ID (trusted))"
}

@test "item 2: the rows of an expired .ald are exit 10 with the date; --allow-expired reads them and says so; nothing written" {
	fmt-sign license -q --licensee acme --expires 2001-02-03 --sign-key s.key lic.ald 2>/dev/null
	cp lic.ald lic.orig
	msg="the licence expired on 2001-02-03T00:00:00Z: its rows are not read (--allow-expired reads them anyway)"
	for cmd in "fmt-inspect --head 2" "fmt-inspect --stats" "fmt-inspect --json --head 1" "fmt-watermark detect" \
		"fmt-watermark entropy"; do
		run --separate-stderr $cmd lic.ald
		assert_failure 10
		if [[ $cmd == *--json* ]]; then
			# the JSON rule: the failure record on stdout, one error object on stderr
			assert_equal "$(jq -r '[.ok, .exit, .message] | @tsv' <<<"$output")" "false	10	$msg"
			assert_equal "$(jq -r '[.level, .exit, .message] | @tsv' <<<"$stderr")" "error	10	$msg"
			continue
		fi
		assert_output ""
		[ "$(head -n 1 <<<"$stderr")" = "${cmd%% *}: error: lic.ald: $msg" ] || fail "$cmd: $stderr"
	done
	run --separate-stderr fmt-convert lic.ald out.csv
	assert_failure 10
	assert_equal "$stderr" "fmt-convert: error: lic.ald: $msg"
	run --separate-stderr fmt-convert --dry-run lic.ald out.csv
	assert_failure 10
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >wm.key
	chmod 600 wm.key
	run --separate-stderr fmt-watermark embed --key wm.key --buyer b lic.ald out.ald
	assert_failure 10
	assert_equal "$stderr" "fmt-watermark: error: lic.ald: $msg"
	[ ! -e out.csv ] && [ ! -e out.ald ]
	rm -f wm.key
	# fmt-shard: split --rows read the rows through a view whose state the gate took for the
	# file's own (exit 0, the rows in unlicensed parts); every split, concat and merge stops
	fmt-convert in.csv fresh.ald
	for cmd in "split --rows 2 -o parts lic.ald" "split --rows 2 --dry-run -o parts lic.ald" \
		"split --fractions 0.5,0.5 -o parts lic.ald" "concat fresh.ald lic.ald -o out.csv" \
		"concat lic.ald fresh.ald -o out.csv" "merge lic.ald -o out.ald"; do
		run --separate-stderr fmt-shard $cmd
		[ "$status" -eq 10 ] || fail "$cmd: $status"
		assert_equal "$stderr" "fmt-shard: error: lic.ald: $msg"
	done
	[ ! -e parts ] && [ ! -e out.csv ] && [ ! -e out.ald ]
	rm fresh.ald
	cmp lic.ald lic.orig
	only_inputs
	# metadata only: still shown, the licence marked expired
	run --separate-stderr fmt-inspect lic.ald
	assert_success
	assert_line "  expired: true"
	run --separate-stderr fmt-inspect --schema lic.ald
	assert_success
	assert_output "$(printf 'schema (2 columns):\n  id  int64  not null\n  x  float64  not null')"
	# --allow-expired: the rows, and a warning
	warn="the licence expired on 2001-02-03T00:00:00Z; its rows are read anyway (--allow-expired)"
	run --separate-stderr fmt-inspect --allow-expired --head 2 lic.ald
	assert_success
	assert_equal "$stderr" "fmt-inspect: warning: lic.ald: $warn"
	assert_line --index 1 "1   0.5"
	run --separate-stderr fmt-convert --allow-expired lic.ald out.csv
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: lic.ald: $warn"
	cmp in.csv out.csv
	run --separate-stderr fmt-watermark entropy --allow-expired lic.ald
	assert_success
	assert_equal "$stderr" "fmt-watermark: warning: lic.ald: $warn"
	run --separate-stderr fmt-shard split --allow-expired --rows 2 -o parts lic.ald
	assert_success
	assert_equal "$stderr" "fmt-shard: warning: lic.ald: $warn"
	fmt-shard concat -q parts/lic-00001-of-00002.ald parts/lic-00002-of-00002.ald -o back.csv
	cmp in.csv back.csv
	run --separate-stderr fmt-shard concat --allow-expired lic.ald -o back2.csv
	assert_success
	assert_equal "$stderr" "fmt-shard: warning: lic.ald: $warn"
	cmp in.csv back2.csv
	# a model has no licence
	/usr/bin/python3 -c "import struct; h = b'{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}    '; open('m.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + bytes(8))"
	run --separate-stderr fmt-shard split --allow-expired --max-tensors 1 m.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: m.safetensors: --fractions, --rows, --seed, --stratify and --allow-expired are for datasets, not models"
	run --separate-stderr fmt-shard merge --allow-expired m.safetensors -o m2.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: m.safetensors: --allow-expired is for datasets, not models"
	# fmt-verify reads no rows: the expiry stays its exit 10
	run --separate-stderr fmt-verify -p s.pub lic.ald
	assert_failure 10
}

@test "item 2: an expired encrypted .ald is refused before any password is asked; --allow-expired is for datasets" {
	printf 'pw\n' >pw.txt
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	fmt-sign license -q --licensee acme --expires 2001-02-03 --sign-key s.key e.ald 2>/dev/null
	run --separate-stderr fmt-convert e.ald out.csv </dev/null
	assert_failure 10
	run --separate-stderr fmt-convert --allow-expired --password-file pw.txt e.ald - --to csv
	assert_success
	assert_output "$(cat in.csv)"
	# a licence that states a past expiry without EXPIRATION_ENFORCED does not stop reading (as upstream)
	run --separate-stderr fmt-convert att/stripped-unsigned.ald - --to csv
	assert_success
	run --separate-stderr fmt-convert --allow-expired in.csv out.safetensors
	assert_failure 2
	[[ "$stderr" == *"dataset options need a dataset output"* ]]
}

@test "item 8: bytes after the signature block, a block behind a cleared flag, bytes after the licence: exit 4 everywhere" {
	for case in "signed-tail:70 bytes after the signature block" "sig-left-behind:96 bytes after the payload" \
		"licence-tail:16 bytes after the licence terms"; do
		f="att/${case%%:*}.ald"
		m="${case#*:}, before the CRC, that no block accounts for"
		cp "$f" "$f.orig"
		for args in "-p s.pub" ""; do
			run --separate-stderr fmt-verify $args "$f"
			assert_failure 4
			assert_output ""
			assert_equal "$stderr" "fmt-verify: error: $f: $m"
		done
		run --separate-stderr fmt-inspect "$f"
		assert_failure 4
		assert_equal "$stderr" "fmt-inspect: error: $f: $m"
		run --separate-stderr fmt-convert "$f" out.csv
		assert_failure 4
		[ ! -e out.csv ]
		run --separate-stderr fmt-sign sign --embed -s s.key "$f"
		assert_failure 4
		run --separate-stderr fmt-sign license --licensee acme --sign-key s.key "$f"
		assert_failure 4
		cmp "$f" "$f.orig"
	done
	only_inputs
}

@test "--allow-expired is in the completions of fmt-inspect, fmt-convert and fmt-watermark" {
	for t in fmt-inspect fmt-convert fmt-watermark; do
		grep -q -- '--allow-expired' "$FMTKIT_BIN/../completions/bash/$t"
		grep -q -- '--allow-expired' "$FMTKIT_BIN/../completions/zsh/_$t"
		run "$t" --help
		assert_output --partial "--allow-expired"
	done
}
