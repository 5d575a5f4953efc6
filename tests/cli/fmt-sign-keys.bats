#!/usr/bin/env bats
# fmt-sign's Ed25519 keys and detached signatures in minisign's formats, proven against Debian's
# minisign in both directions; X25519 key pairs; refusals of tampered and malformed input.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	DIR="$XDG_CONFIG_HOME/fmtkit"
	command -v minisign >/dev/null || fail "minisign is not installed (scripts/install-deps)"
	printf 'model bytes\n' >model.bin
}

# The key id minisign prints for a public key file: bytes 2..9 of its base64 line, as a
# little-endian number in uppercase hex.
id_of_pub() {
	sed -n 2p "$1" | base64 -d | dd bs=1 skip=2 count=8 status=none | od -An -tx1 |
		tr -d ' \n' | sed 's/../& /g' | awk '{for (i = NF; i > 0; i--) printf "%s", toupper($i); print ""}'
}

# Fresh unencrypted pairs made by each tool.
fmt_pair() { fmt-sign keygen -W -p "$1.pub" -s "$1.key" >/dev/null; }
ms_pair() { minisign -G -W -p "$1.pub" -s "$1.key" >/dev/null; }

@test "keygen --json names the kind of key in lowercase, as fmt-verify and sign --embed do" {
	# It said "kind":"Ed25519" (and "X25519") where the others say "ed25519".
	run --separate-stderr fmt-sign keygen --json -W -p b.pub -s b.key
	assert_success
	assert_equal "$output" "{\"ok\":true,\"kind\":\"ed25519\",\"key_id\":\"$(id_of_pub b.pub)\",\"public_key\":\"b.pub\",\"secret_key\":\"b.key\"}"
	run --separate-stderr fmt-sign keygen --x25519 -W --json -p x.pub -s x.key
	assert_success
	assert_equal "$(jq -r .kind <<<"$output")" x25519
}

@test "keygen -W writes minisign's public and secret key formats at the default paths" {
	run --separate-stderr fmt-sign keygen -W
	assert_success
	id=$(id_of_pub "$DIR/ed25519.pub")
	assert_equal "$output" "created Ed25519 key $id
public key: $DIR/ed25519.pub
secret key: $DIR/ed25519.key"
	[ "$(stat -c %a "$DIR/ed25519.key")" = 600 ]
	[ "$(stat -c %a "$DIR/ed25519.pub")" = 644 ]
	[ "$(stat -c %a "$DIR")" = 700 ]
	assert_equal "$(sed -n 1p "$DIR/ed25519.pub")" "untrusted comment: minisign public key $id"
	[ "$(wc -l <"$DIR/ed25519.pub")" -eq 2 ]
	# Ed || key id (8) || public key (32)
	[ "$(sed -n 2p "$DIR/ed25519.pub" | base64 -d | wc -c)" -eq 42 ]
	[ "$(sed -n 2p "$DIR/ed25519.pub" | base64 -d | head -c 2)" = Ed ]
	# Ed, no KDF (two zero bytes), B2, salt, limits, key id, secret key, checksum: 158 bytes
	sed -n 2p "$DIR/ed25519.key" | base64 -d >sk.bin
	[ "$(wc -c <sk.bin)" -eq 158 ]
	assert_equal "$(head -c 6 sk.bin | od -An -tx1 | tr -d ' \n')" "456400004232"
	# the secret record's key id is the public key's; key-id reads both
	cmp <(dd if=sk.bin bs=1 skip=54 count=8 status=none) \
	    <(sed -n 2p "$DIR/ed25519.pub" | base64 -d | dd bs=1 skip=2 count=8 status=none)
	assert_equal "$(fmt-sign key-id -p "$DIR/ed25519.pub")" "$id"
	assert_equal "$(fmt-sign key-id -s "$DIR/ed25519.key")" "$id"
	assert_equal "$(fmt-sign key-id -P "$(sed -n 2p "$DIR/ed25519.pub")")" "$id"
	# minisign's own view of the key id
	minisign -S -s "$DIR/ed25519.key" -m model.bin
	run minisign -V -p "$DIR/ed25519.pub" -m model.bin
	assert_success
}

@test "keygen never overwrites key files; --force keeps the old ones as .old; a symlink is refused" {
	fmt_pair k
	cp k.key k.key.orig
	cp k.pub k.pub.orig
	run --separate-stderr fmt-sign keygen -W -p k.pub -s k.key
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: k.key: already exists; --force replaces it and keeps the old one as k.key.old"
	cmp k.key k.key.orig
	cmp k.pub k.pub.orig
	# an existing public key alone also stops keygen before a secret key is written
	run --separate-stderr fmt-sign keygen -W -p k.pub -s new.key
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: k.pub: already exists; --force replaces it and keeps the old one as k.pub.old"
	[ ! -e new.key ]
	run fmt-sign keygen -W --force -p k.pub -s k.key
	assert_success
	cmp k.key.old k.key.orig
	cmp k.pub.old k.pub.orig
	! cmp -s k.key k.key.orig
	# O_NOFOLLOW: a symbolic link in the key's place is never written through
	echo target >target
	ln -s target link.key
	run fmt-sign keygen -W --force -p l.pub -s link.key
	assert_failure 2
	assert_equal "$(cat target)" target
}

@test "an existing key is named once, as FILE, for every kind of key, also with --json (old: 'PATH: PATH already exists; ... as PATH.old')" {
	fmt-sign keygen -W >/dev/null
	fmt-sign keygen --x25519 -W >/dev/null
	fmt-sign keygen --watermark >/dev/null
	for name in ed25519 x25519 watermark; do
		case $name in
		ed25519) args=(-W) ;;
		x25519) args=(--x25519 -W) ;;
		watermark) args=(--watermark) ;;
		esac
		before=$(ls -A "$DIR")
		run --separate-stderr fmt-sign keygen "${args[@]}"
		assert_failure 2
		assert_equal "$output" ""
		assert_equal "$stderr" "fmt-sign: error: $DIR/$name.key: already exists; --force replaces it and keeps the old one as $name.key.old"
		run --separate-stderr fmt-sign --json keygen "${args[@]}"
		assert_failure 2
		assert_equal "$stderr" "$(jq -cn --arg f "$DIR/$name.key" --arg m "already exists; --force replaces it and keeps the old one as $name.key.old" \
			'{tool:"fmt-sign",level:"error",file:$f,error:"UsageError",exit:2,message:$m}')"
		assert_equal "$(ls -A "$DIR")" "$before"
	done
}

@test "keygen writes both key files or neither: -p a directory, an immutable .pub or .key with --force (Ed25519 and X25519)" {
	mkdir pubdir
	for kind in -W "-W --x25519"; do
		run --separate-stderr fmt-sign keygen $kind -p pubdir -s new.key --force
		assert_failure 2
		assert_equal "$stderr" "fmt-sign: error: pubdir: the key path is not a regular file; not rotating it"
		[ ! -e new.key ]
		[ "$(ls pubdir)" = "" ]
	done
	# a .pub that cannot be moved aside (immutable; root only: chattr), then a .key
	command -v chattr >/dev/null && [ "$(id -u)" = 0 ] || skip "needs root and chattr"
	fmt_pair old
	cp old.pub old.pub.orig
	cp old.key old.key.orig
	chattr +i old.pub || skip "this file system has no immutable flag"
	for kind in -W "-W --x25519"; do
		run --separate-stderr fmt-sign keygen $kind -p old.pub -s k6.key --force
		chattr -i old.pub 2>/dev/null || true
		assert_failure 3
		assert_equal "$stderr" "fmt-sign: error: old.pub: cannot rename the key to old.pub.old: Operation not permitted"
		[ ! -e k6.key ] && [ ! -e k6.key.new ] && [ ! -e old.pub.new ] && [ ! -e old.pub.old ]
		cmp old.pub old.pub.orig
		chattr +i old.pub
	done
	chattr -i old.pub
	chattr +i old.key
	for kind in -W "-W --x25519"; do
		run --separate-stderr fmt-sign keygen $kind -p new.pub -s old.key --force
		assert_failure 3
		assert_equal "$stderr" "fmt-sign: error: old.key: cannot rename the key to old.key.old: Operation not permitted"
		[ ! -e new.pub ] && [ ! -e new.pub.new ] && [ ! -e old.key.new ]
		cmp old.key old.key.orig
	done
	chattr -i old.key
	# with --force and both old keys replaceable, both are rotated
	run fmt-sign keygen -W --force -p old.pub -s old.key
	assert_success
	cmp old.pub.old old.pub.orig
	cmp old.key.old old.key.orig
}

@test "sign -s writes FILE.minisig that minisign verifies; fmt-sign verify prints the trusted comment as minisign" {
	fmt_pair k
	run --separate-stderr fmt-sign sign -s k.key model.bin
	assert_success
	assert_equal "$output" "signed model.bin with key $(id_of_pub k.pub): model.bin.minisig"
	[ "$(wc -l <model.bin.minisig)" -eq 4 ]
	tc=$(sed -n 3p model.bin.minisig)
	[[ "$tc" =~ ^trusted\ comment:\ timestamp:[0-9]+$'\t'file:model\.bin$'\t'hashed$ ]] || fail "trusted comment: $tc"
	# prehashed: the signature line starts with ED
	[ "$(sed -n 2p model.bin.minisig | base64 -d | head -c 2)" = ED ]
	run minisign -V -p k.pub -m model.bin
	assert_success
	expected="Signature and comment signature verified
Trusted comment: ${tc#trusted comment: }"
	assert_equal "$output" "$expected"
	run --separate-stderr fmt-sign verify -p k.pub model.bin
	assert_success
	assert_equal "$output" "$expected"
	run --separate-stderr fmt-sign verify -q -p k.pub model.bin
	assert_success
	assert_equal "$output" ""
	run fmt-sign verify -p k.pub --json model.bin
	assert_success
	assert_equal "$(jq -r '[.key_id, .prehashed] | @tsv' <<<"$output")" "$(id_of_pub k.pub)	true"
	assert_equal "$(jq -r .trusted_comment <<<"$output")" "${tc#trusted comment: }"
}

@test "-t sets the trusted comment, -x the signature file; every shard of a set gets its own .minisig" {
	fmt_pair k
	run fmt-sign sign -s k.key -t "release 1.2 of model" -x sig.txt model.bin
	assert_success
	assert_equal "$(sed -n 3p sig.txt)" "trusted comment: release 1.2 of model"
	run minisign -V -p k.pub -m model.bin -x sig.txt
	assert_success
	assert_line "Trusted comment: release 1.2 of model"
	printf a >s-00001-of-00002.safetensors
	printf b >s-00002-of-00002.safetensors
	run fmt-sign sign -s k.key s-0000*-of-00002.safetensors
	assert_success
	for f in s-0000*-of-00002.safetensors; do
		minisign -Vq -p k.pub -m "$f"
	done
	run fmt-sign verify -q -p k.pub s-0000*-of-00002.safetensors
	assert_success
	# the two signatures are not interchangeable
	cp s-00001-of-00002.safetensors.minisig s-00002-of-00002.safetensors.minisig
	run --separate-stderr fmt-sign verify -p k.pub s-00001-of-00002.safetensors s-00002-of-00002.safetensors
	assert_failure 7
	assert_equal "$(printf '%s\n' "$output" | grep -c 'Signature and comment signature verified')" 1
	[[ "$stderr" == *"s-00002-of-00002.safetensors: bad signature by key"* ]] || fail "$stderr"
}

@test "sign -x - writes the signature alone to standard output, with or without --json: minisign and fmt-sign verify it (old: a 'signed' line or a JSON record after it, refused as 'exactly four lines')" {
	fmt_pair k
	for json in "" --json; do
		run --separate-stderr bash -c 'fmt-sign $1 sign -s k.key -x - model.bin >out.minisig' _ "$json"
		assert_success
		assert_equal "$stderr" ""
		assert_equal "$(wc -l <out.minisig)" 4
		[[ "$(sed -n 3p out.minisig)" == "trusted comment: timestamp:"*$'\tfile:model.bin\thashed' ]]
		run fmt-sign verify -p k.pub -x out.minisig model.bin
		assert_success
		run minisign -V -p k.pub -x out.minisig -m model.bin
		assert_success
	done
}

@test "fmt-sign verifies minisign's prehashed and legacy signatures with minisign's keys" {
	ms_pair m
	minisign -S -s m.key -m model.bin -t "from minisign"
	run --separate-stderr fmt-sign verify -p m.pub model.bin
	assert_success
	assert_equal "$output" "Signature and comment signature verified
Trusted comment: from minisign"
	minisign -S -l -s m.key -m model.bin -x legacy.minisig -t "legacy one"
	[ "$(sed -n 2p legacy.minisig | base64 -d | head -c 2)" = Ed ]
	run --separate-stderr fmt-sign verify -p m.pub -x legacy.minisig model.bin
	assert_success
	assert_line "Trusted comment: legacy one"
	run fmt-sign verify --json -p m.pub -x legacy.minisig model.bin
	assert_equal "$(jq -r .prehashed <<<"$output")" false
	# a legacy signature of a changed file is refused too
	printf 'x' >>model.bin
	run --separate-stderr fmt-sign verify -p m.pub -x legacy.minisig model.bin
	assert_failure 7
}

@test "fmt-sign signs with minisign's secret key, and minisign verifies it" {
	ms_pair m
	assert_equal "$(fmt-sign key-id -s m.key)" "$(id_of_pub m.pub)"
	run fmt-sign sign -s m.key model.bin
	assert_success
	run minisign -V -p m.pub -m model.bin
	assert_success
}

@test "a changed file, a changed trusted comment, a wrong key: both tools refuse, fmt-sign says what failed" {
	fmt_pair k
	fmt_pair other
	fmt-sign sign -s k.key -t "original comment" model.bin
	cp model.bin.minisig good.minisig
	# the wrong key
	run --separate-stderr fmt-sign verify -p other.pub model.bin
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: model.bin: signed by key $(id_of_pub k.pub), not by the key given (wrong key id)"
	run minisign -V -p other.pub -m model.bin
	assert_failure
	# a changed trusted comment
	sed -i 's/^trusted comment: original comment$/trusted comment: altered comment/' model.bin.minisig
	run --separate-stderr fmt-sign verify -p k.pub model.bin
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: model.bin: bad global signature by key $(id_of_pub k.pub): the trusted comment was altered"
	[ -z "$output" ]
	run minisign -V -p k.pub -m model.bin
	assert_failure
	# a changed file
	cp good.minisig model.bin.minisig
	printf 'model bytez\n' >model.bin
	run --separate-stderr fmt-sign verify -p k.pub model.bin
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: model.bin: bad signature by key $(id_of_pub k.pub): the file or the signature was altered"
	run minisign -V -p k.pub -m model.bin
	assert_failure
}

# count_flips: the loop of the .minisig byte-flip test over v.tsv and $EXITS: each variant's exit
# as expected; accepted and refused counted (in the test's variables).
count_flips() {
	while IFS=$'\t' read -r name i byte status; do
		if ((i >= prefix && i < line1 - 1 && byte != 0)); then
			# the untrusted comment is not signed, in minisign's design: accepted by both
			# (a NUL byte is not text: refused by both)
			[ "$status" -eq 0 ] || fail "byte $i of the untrusted comment: exit $status"
			minisign -Vq -p k.pub -m "$name" || fail "minisign refused byte $i of the comment"
			accepted=$((accepted + 1))
			continue
		fi
		[ "$status" -eq 7 ] || [ "$status" -eq 4 ] || fail "$name (byte $i): exit $status"
		refused=$((refused + 1))
	done < <(paste <(cut -f1-3 v.tsv) <(cut -f2 "$EXITS"))
}

@test "every single-byte change of a .minisig is refused (7 or 4), except in the untrusted comment text" {
	fmt_pair k
	fmt-sign sign -s k.key model.bin
	cp model.bin.minisig good.minisig
	size=$(wc -c <good.minisig)
	prefix=19                                 # "untrusted comment: "
	line1=$(head -n 1 good.minisig | wc -c)   # with its newline
	refused=0 accepted=0
	# each byte flipped two ways: its lowest bit, and its 0x20 bit (letter case in base64); v/F-I.bin
	# (model.bin) beside v/F-I.bin.minisig, good.minisig with byte I xor F; v.tsv: F, I, the new byte
	mkdir v
	/usr/bin/python3 - good.minisig <<'PY'
import os, sys
sig = open(sys.argv[1], "rb").read()
with open("v.tsv", "w") as tsv:
    for flip in (1, 32):
        for i in range(len(sig)):
            b = bytearray(sig); b[i] ^= flip
            name = "v/%d-%d.bin" % (flip, i)
            os.link("model.bin", name)
            open(name + ".minisig", "wb").write(b)
            tsv.write("%s\t%d\t%d\n" % (name, i, b[i]))
PY
	exits_of fmt-sign verify -j -p k.pub -- $(cut -f1 v.tsv)
	untraced count_flips
	[ $((refused + accepted)) -eq $((2 * size)) ]
	[ "$refused" -ge $((2 * (size - (line1 - 1 - prefix)))) ]
	# a truncated file, an extra line, an empty file: malformed (4)
	head -c $((size - 10)) good.minisig >model.bin.minisig
	run fmt-sign verify -p k.pub model.bin
	assert_failure 4
	{ cat good.minisig; echo extra; } >model.bin.minisig
	run fmt-sign verify -p k.pub model.bin
	assert_failure 4
	: >model.bin.minisig
	run --separate-stderr fmt-sign verify -p k.pub model.bin
	assert_failure 4
	assert_equal "$stderr" "fmt-sign: error: model.bin.minisig: a signature file has exactly four lines"
}

@test "-P takes the public key's base64; --trusted-keys trusts every *.pub of a directory and names an untrusted key" {
	fmt_pair k
	fmt_pair stranger
	mkdir trusted
	cp k.pub trusted/alice.pub
	ms_pair trusted/bob
	fmt-sign sign -s k.key model.bin
	run fmt-sign verify -q -P "$(sed -n 2p k.pub)" model.bin
	assert_success
	run fmt-sign verify -q --trusted-keys trusted model.bin
	assert_success
	printf 'other\n' >other.bin
	minisign -S -s trusted/bob.key -m other.bin
	run fmt-sign verify -q --trusted-keys trusted other.bin
	assert_success
	fmt-sign sign -s stranger.key model.bin
	run --separate-stderr fmt-sign verify --trusted-keys trusted model.bin
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: model.bin: signed by key $(id_of_pub stranger.pub), which is not a trusted key"
	run fmt-sign verify -P "not base64" model.bin
	assert_failure 4
}

@test "usage: -x with several files, -s with an HMAC key, -p with -P, verify with no file are exit 2" {
	fmt_pair k
	run fmt-sign sign -s k.key -x s.minisig model.bin model.bin
	assert_failure 2
	run fmt-sign sign -s k.key --hmac-key model.bin
	assert_failure 2
	run fmt-sign verify -p k.pub -P "$(sed -n 2p k.pub)" model.bin
	assert_failure 2
	run fmt-sign verify -p k.pub
	assert_failure 2
	run fmt-sign keygen --hmac -W
	assert_failure 2
	run fmt-sign sign -t comment model.bin
	assert_failure 2
	[ ! -e model.bin.minisig ]
	# a missing key file is an I/O error naming it
	run --separate-stderr fmt-sign sign -s missing.key model.bin
	assert_failure 3
	assert_equal "$stderr" "fmt-sign: error: missing.key: cannot open the secret key: No such file or directory"
	run --separate-stderr fmt-sign verify -p missing.pub model.bin
	assert_failure 3
}

@test "keygen -W --x25519 writes a 0600 secret and a one-line base64 public key under a comment" {
	run fmt-sign keygen -W --x25519
	assert_success
	pub="$DIR/x25519.pub"
	[ "$(stat -c %a "$DIR/x25519.key")" = 600 ]
	[ "$(wc -l <"$pub")" -eq 2 ]
	sed -n 2p "$pub" | base64 -d >pk.bin
	[ "$(wc -c <pk.bin)" -eq 32 ]
	[ "$(sed -n 2p "$DIR/x25519.key" | base64 -d | wc -c)" -eq 32 ]
	# the id: the first 8 bytes of BLAKE2b-256(pk) as a little-endian number
	id=$(b2sum -l 256 pk.bin | cut -c1-16 | sed 's/../& /g' |
		awk '{for (i = NF; i > 0; i--) printf "%s", toupper($i); print ""}')
	assert_equal "$(sed -n 1p "$pub")" "untrusted comment: fmtkit x25519 public key $id"
	assert_line "created X25519 key $id"
	# the public key is derived from the secret one (X25519 with the base point)
	/usr/bin/python3 - "$DIR/x25519.key" pk.bin <<'PY'
import base64, sys
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives import serialization
sk = base64.b64decode(open(sys.argv[1]).read().splitlines()[1])
pk = X25519PrivateKey.from_private_bytes(sk).public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
assert pk == open(sys.argv[2], "rb").read(), "public key does not match the secret key"
PY
	run fmt-sign keygen -W --x25519
	assert_failure 2
}

# The encrypted keys below cost scrypt at minisign's SENSITIVE limits (1 GiB, seconds each): three
# (fmt-sign keygen, minisign reading its key, fmt-sign reading minisign's).
@test "encrypted keys both ways: fmt-sign's with minisign, minisign's with fmt-sign; secrets never in argv or output" {
	printf 'correct horse\n' >pass.txt
	run --separate-stderr fmt-sign keygen -p f.pub -s f.key --passphrase-file pass.txt
	assert_success
	sed -n 2p f.key | base64 -d >sk.bin
	assert_equal "$(head -c 6 sk.bin | od -An -tx1 | tr -d ' \n')" "456453634232"   # Ed Sc B2
	# opslimit 33554432 and memlimit 1073741824, little-endian, as minisign writes them
	assert_equal "$(dd if=sk.bin bs=1 skip=38 count=16 status=none | od -An -tx1 | tr -d ' \n')" \
		"00000002000000000000004000000000"
	! grep -q "correct horse" f.key
	# minisign reads the passphrase from stdin when it is not a terminal
	printf 'correct horse\n' | minisign -S -s f.key -m model.bin -t "minisign with an fmt-sign key"
	run fmt-sign verify -p f.pub model.bin
	assert_success
	assert_line "Trusted comment: minisign with an fmt-sign key"

	# minisign's own encrypted key: tests/data/minisign/sensitive.{pub,key}, written by Debian's
	# minisign 0.11 (printf 'battery staple\nbattery staple\n' | minisign -G -p sensitive.pub -s
	# sensitive.key), stored so that this test pays for its scrypt once (fmt-sign reading it), not
	# for minisign's key generation too; at minisign's sensitive limits like fmt-sign's above
	cp "$REPO_ROOT/tests/data/minisign/sensitive.pub" m.pub
	cp "$REPO_ROOT/tests/data/minisign/sensitive.key" m.key
	chmod 600 m.key
	assert_equal "$(sed -n 2p m.key | base64 -d | dd bs=1 skip=0 count=6 status=none)$(sed -n 2p m.key | base64 -d | dd bs=1 skip=38 count=16 status=none | od -An -tx1 | tr -d ' \n')" \
		"EdScB200000002000000000000004000000000"
	export SIGN_PASS='battery staple'
	fmt-sign sign -s m.key --passphrase-env SIGN_PASS -t "fmt-sign with a minisign key" model.bin &
	pid=$!
	# while scrypt runs: the passphrase is nowhere in any process's arguments
	sleep 1
	! ps -eo args | grep -q "battery staple"
	wait "$pid"
	run minisign -V -p m.pub -m model.bin
	assert_success
	assert_line "Trusted comment: fmt-sign with a minisign key"

	# scrypt without the GiB the key asks for: out of memory (exit 3, io; it was 70, internal),
	# nothing written
	rm model.bin.minisig
	run --separate-stderr bash -c 'ulimit -v 500000; fmt-sign sign -s m.key --passphrase-env SIGN_PASS model.bin'
	assert_failure 3
	assert_equal "$stderr" "fmt-sign: error: m.key: scrypt: out of memory (the key asks for 1024 MiB)"
	[ ! -e model.bin.minisig ]

	# a wrong passphrase: exit 8, nothing written, the passphrase not echoed (a key of the same
	# format at low scrypt limits: the checksum is checked after scrypt whatever its limits)
	printf 'battery staple\n' >staple.txt
	encrypted_pair s staple.txt
	export SIGN_PASS='battery stable'
	run --separate-stderr fmt-sign sign -s s.key --passphrase-env SIGN_PASS model.bin
	assert_failure 8
	assert_equal "$stderr" "fmt-sign: error: s.key: wrong passphrase for the secret key (its checksum does not match)"
	[[ "$stderr$output" != *battery* ]] || fail "passphrase in the output"
	[ ! -e model.bin.minisig ]
}

# The other tests' encrypted keys: scripts/gen/minisign-test-key, an independent writer of minisign's
# secret key format with low scrypt limits. Both readers take the limits from the key file.
@test "an encrypted key with other scrypt limits, written independently: fmt-sign and minisign use the file's limits" {
	printf 'open sesame\n' >pass.txt
	encrypted_pair low pass.txt
	[ "$(stat -c %a low.key)" = 600 ]
	sed -n 2p low.key | base64 -d >sk.bin
	assert_equal "$(head -c 6 sk.bin | od -An -tx1 | tr -d ' \n')" "456453634232"   # Ed Sc B2
	# opslimit 32768 and memlimit 16 MiB, little-endian
	assert_equal "$(dd if=sk.bin bs=1 skip=38 count=16 status=none | od -An -tx1 | tr -d ' \n')" \
		"00800000000000000000000100000000"
	assert_equal "$(fmt-sign key-id -s low.key --passphrase-file pass.txt)" "$(id_of_pub low.pub)"
	fmt-sign sign -q -s low.key --passphrase-file pass.txt -t "fmt-sign, low limits" model.bin
	run minisign -V -p low.pub -m model.bin
	assert_success
	assert_line "Trusted comment: fmt-sign, low limits"
	rm model.bin.minisig
	printf 'open sesame\n' | minisign -S -s low.key -m model.bin -t "minisign, low limits"
	run fmt-sign verify -p low.pub model.bin
	assert_success
	assert_line "Trusted comment: minisign, low limits"
	# scrypt's other branch of parameters (opslimit >= memlimit / 32: p = 2, N = 2^14)
	"$REPO_ROOT/scripts/gen/minisign-test-key" pass.txt p2.pub p2.key 1048576 16777216
	fmt-sign sign -q -s p2.key --passphrase-file pass.txt -x p2.minisig model.bin
	minisign -Vq -p p2.pub -m model.bin -x p2.minisig
	# a wrong passphrase: exit 8, nothing written
	printf 'open sesame!\n' >wrong.txt
	run --separate-stderr fmt-sign sign -s low.key --passphrase-file wrong.txt -x w.minisig model.bin
	assert_failure 8
	assert_equal "$stderr" "fmt-sign: error: low.key: wrong passphrase for the secret key (its checksum does not match)"
	[ ! -e w.minisig ]
	# limits no reader should run (a hostile key file): refused before scrypt, exit 4
	for limits in "0 16777216" "67108865 16777216" "32768 0" "32768 2147483649"; do
		/usr/bin/python3 - low.key bad.key $limits <<'PY'
import base64, struct, sys
lines = open(sys.argv[1]).read().splitlines()
rec = bytearray(base64.b64decode(lines[1]))
rec[38:54] = struct.pack("<QQ", int(sys.argv[3]), int(sys.argv[4]))
open(sys.argv[2], "w").write(lines[0] + "\n" + base64.b64encode(rec).decode() + "\n")
PY
		chmod 600 bad.key
		run --separate-stderr fmt-sign sign -s bad.key --passphrase-file pass.txt -x b.minisig model.bin
		assert_failure 4
		assert_equal "$stderr" "fmt-sign: error: bad.key: the secret key's scrypt limits (ops ${limits% *}, memory ${limits#* }) are out of range"
		[ ! -e b.minisig ]
	done
}

@test "an unencrypted secret key never appears in fmt-sign's output" {
	fmt_pair k
	secret=$(sed -n 2p k.key)
	run fmt-sign sign -v -s k.key model.bin
	run fmt-sign key-id --json -s k.key
	[[ "$output" != *"${secret:20:40}"* ]] || fail "secret key in the output"
	# a malformed secret key is refused without its bytes in the message
	printf 'untrusted comment: x\n%s\n' "${secret}AAAA" >bad.key
	run --separate-stderr fmt-sign sign -s bad.key model.bin
	assert_failure 4
	[[ "$stderr" != *"${secret:20:40}"* ]] || fail "secret key in the message"
}

@test "sign refuses an output that is a file it reads (-x FILE, -x SECKEY, a hard link, FILE.minisig an operand, the passphrase file): exit 2, nothing written" {
	fmt_pair k
	printf 'pw\n' >pass.txt
	chmod 600 pass.txt
	ln model.bin same.bin
	sums=$(sha256sum model.bin k.key k.pub pass.txt)
	run --separate-stderr fmt-sign sign -s k.key -x model.bin model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: model.bin: output is the same file as input model.bin"
	run --separate-stderr fmt-sign sign -s k.key -x k.key model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: k.key: output is the same file as input k.key"
	run --separate-stderr fmt-sign sign -s k.key -x same.bin model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: same.bin: output is the same file as input model.bin"
	run --separate-stderr fmt-sign sign -s k.key -x pass.txt --passphrase-file pass.txt model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: pass.txt: output is the same file as input pass.txt"
	# FILE.minisig of one operand is another operand: refused before the first is signed
	fmt-sign sign -q -s k.key model.bin
	cp model.bin.minisig sig.before
	run --separate-stderr fmt-sign sign -s k.key model.bin.minisig model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: model.bin.minisig: output is the same file as input model.bin.minisig"
	cmp model.bin.minisig sig.before
	[ ! -e model.bin.minisig.minisig ]
	assert_equal "$(sha256sum model.bin k.key k.pub pass.txt)" "$sums"
	# the key is still the key
	fmt-sign sign -q -s k.key -x ok.minisig model.bin
	fmt-sign verify -q -p k.pub -x ok.minisig model.bin
}

@test "keygen refuses a key file that is its passphrase file, also with --force: exit 2, nothing written" {
	printf 'pw\n' >pass.txt
	chmod 600 pass.txt
	for force in "" --force; do
		run --separate-stderr fmt-sign keygen -p pass.txt -s new.key --passphrase-file pass.txt $force
		assert_failure 2
		assert_equal "$stderr" "fmt-sign: error: pass.txt: output is the same file as input pass.txt"
		run --separate-stderr fmt-sign keygen -p new.pub -s pass.txt --passphrase-file pass.txt $force
		assert_failure 2
		assert_equal "$stderr" "fmt-sign: error: pass.txt: output is the same file as input pass.txt"
		assert_equal "$(cat pass.txt)" pw
		[ ! -e new.key ] && [ ! -e new.pub ] && [ ! -e pass.txt.old ]
	done
}

@test "keygen refuses -p and -s naming one file (the same name, another spelling, a hard link), also with --force: exit 2, nothing written" {
	run --separate-stderr fmt-sign keygen -W -p k -s k
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: k: -s and -p k name the same file; a key pair is two files"
	run --separate-stderr fmt-sign keygen -W -p k -s ./k --force
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: ./k: -s and -p k name the same file; a key pair is two files"
	mkdir d
	run --separate-stderr fmt-sign keygen -W --x25519 -p d/../x -s x
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: x: -s and -p d/../x name the same file; a key pair is two files"
	[ ! -e k ] && [ ! -e k.old ] && [ ! -e x ] && [ -z "$(ls -A d)" ]
	fmt_pair a
	ln a.key h
	sums=$(sha256sum a.key a.pub)
	run --separate-stderr fmt-sign keygen -W -p h -s a.key --force
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: a.key: -s and -p h name the same file; a key pair is two files"
	assert_equal "$(sha256sum a.key a.pub)" "$sums"
	[ ! -e h.old ] && [ ! -e a.key.old ]
}

@test "a secret key others may read, encrypted or not, Ed25519 or X25519, is refused (exit 2) by sign -s, fmt-convert --sign-key and --identity, like every key file" {
	fmt_pair k
	printf 'id,x\n1,2\n' >d.csv
	chmod 644 k.key
	run --separate-stderr fmt-sign sign -s k.key model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: k.key: the secret key is readable by others (mode 0644); chmod 600 it"
	[ ! -e model.bin.minisig ]
	chmod 640 k.key
	run --separate-stderr fmt-convert --sign-key k.key d.csv s.ald
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: k.key: the secret key is readable by others (mode 0640); chmod 600 it"
	[ ! -e s.ald ]
	chmod 600 k.key
	fmt-sign sign -q -s k.key model.bin
	fmt-sign verify -q -p k.pub model.bin
	# encrypted under a passphrase too, as an encrypted X25519 identity already was (it was
	# signed with): others who can read it can guess its passphrase offline
	printf 'pw\n' >pass.txt
	fmt-sign keygen -p e.pub -s e.key --passphrase-file pass.txt >/dev/null
	chmod 644 e.key
	run --separate-stderr fmt-sign sign -s e.key --passphrase-file pass.txt -x e.minisig model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: e.key: the secret key is readable by others (mode 0644); chmod 600 it"
	[ ! -e e.minisig ]
	chmod 604 e.key
	run --separate-stderr fmt-convert --sign-key e.key --passphrase-file pass.txt d.csv s.ald
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: e.key: the secret key is readable by others (mode 0604); chmod 600 it"
	[ ! -e s.ald ]
	chmod 600 e.key
	fmt-sign sign -q -s e.key --passphrase-file pass.txt -x e.minisig model.bin
	fmt-sign verify -q -p e.pub -x e.minisig model.bin
	# X25519 identities, encrypted and not: the same rule, the same words
	fmt-sign keygen --x25519 -p x.pub -s x.key --passphrase-file pass.txt >/dev/null
	fmt-sign keygen --x25519 -W -p w.pub -s w.key >/dev/null
	fmt-convert --encrypt-to x.pub d.csv x.ald
	fmt-convert --encrypt-to w.pub d.csv w.ald
	chmod 640 x.key w.key
	for k in x w; do
		run --separate-stderr fmt-convert --identity $k.key --passphrase-file pass.txt $k.ald out.csv
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: $k.key: the identity is readable by others (mode 0640); chmod 600 it"
	done
	[ ! -e out.csv ]
}

@test "keygen killed by SIGINT or SIGTERM while its PATH.new files exist removes them and dies of the signal (130, 143); the next keygen works" {
	# the .new files were left behind, and the next keygen refused: 'k.key.new exists (left by
	# an interrupted keygen?); remove it'; CONVENTIONS: on any signal the temporary is removed
	local kind n sig
	for kind in -W "-W --x25519" "--passphrase-file pass.txt"; do
		printf 'pw\n' >pass.txt
		for n in 1 2; do
			for sig in INT TERM; do
				# env: a background job's SIGINT is ignored otherwise (and stays ignored)
				stop_at_output $n env --default-signal fmt-sign keygen $kind -p k.pub -s k.key
				[ -e k.key.new ] && [ ! -e k.key ] && [ ! -e k.pub ]
				[ $n = 1 ] || [ -e k.pub.new ]
				term_stopped $sig
				[ "$status" -eq $((128 + $(kill -l $sig))) ] || fail "$kind, SIG$sig at output $n: exit $status"
				! compgen -G 'k.*' >/dev/null || fail "$kind, SIG$sig at output $n left: $(ls)"
			done
		done
		run --separate-stderr fmt-sign keygen $kind -p k.pub -s k.key
		assert_success
		rm k.pub k.key
	done
	# the watermark key and the HMAC key go through KEY.new the same way
	stop_at_output 1 env --default-signal fmt-sign keygen --watermark -s w.key
	[ -e w.key.new ] && [ ! -e w.key ]
	term_stopped TERM
	assert_equal "$status" 143
	[ ! -e w.key.new ] && [ ! -e w.key ]
	stop_at_output 1 env --default-signal fmt-sign keygen --hmac
	[ -e "$DIR/hmac.key.new" ]
	term_stopped INT
	assert_equal "$status" 130
	# the directories made for it go too (the next test)
	[ ! -e "$XDG_CONFIG_HOME" ]
	fmt-sign keygen --hmac >/dev/null
	[ "$(stat -c %a "$DIR/hmac.key")" = 600 ]
}

@test "keygen stopped by a signal removes the directories it made for its keys, and only those (130, 143)" {
	# c87ca005 removed them when a key could not be written; a signal left them behind, empty,
	# whereas CONVENTIONS says on any error or signal what was made is removed
	local kind n sig
	mkdir kept
	for kind in -W "-W --x25519"; do
		for n in 1 2; do
			for sig in TERM INT; do
				# the secret key's file first (output 1), then the public key's (output 2)
				stop_at_output $n env --default-signal fmt-sign keygen $kind -s kept/sec/k.key -p new/pub/k.pub
				[ -e kept/sec/k.key.new ]
				[ $n = 1 ] || [ -e new/pub/k.pub.new ]
				term_stopped $sig
				[ "$status" -eq $((128 + $(kill -l $sig))) ] || fail "$kind, SIG$sig at output $n: exit $status"
				[ -d kept ] || fail "$kind, SIG$sig at output $n removed kept, which was there"
				assert_equal "$(ls -A kept)" ""
				[ ! -e new ] || fail "$kind, SIG$sig at output $n left: $(find new)"
			done
		done
	done
	# the public key's directory below the one made for the secret key: the deepest goes first
	stop_at_output 2 env --default-signal fmt-sign keygen -W -s top/k.key -p top/sub/k.pub
	[ -e top/sub/k.pub.new ]
	term_stopped TERM
	assert_equal "$status" 143
	[ ! -e top ]
	# a directory that got another file meanwhile stays, and what is above it
	stop_at_output 1 env --default-signal fmt-sign keygen -W -s busy/in/k.key -p busy/k.pub
	touch busy/other
	term_stopped TERM
	assert_equal "$status" 143
	assert_equal "$(find busy | sort | tr '\n' ' ')" "busy busy/other "
	# the watermark key and the HMAC key the same way; a directory that was there stays
	stop_at_output 1 env --default-signal fmt-sign keygen --watermark -s kept/w/x/w.key
	term_stopped TERM
	assert_equal "$status" 143
	assert_equal "$(ls -A kept)" ""
	stop_at_output 1 env --default-signal fmt-sign keygen --hmac
	[ -e "$DIR/hmac.key.new" ]
	term_stopped TERM
	assert_equal "$status" 143
	[ ! -e "$XDG_CONFIG_HOME" ]
	mkdir "$XDG_CONFIG_HOME"
	stop_at_output 1 env --default-signal fmt-sign keygen --hmac
	term_stopped INT
	assert_equal "$status" 130
	assert_equal "$(ls -A "$XDG_CONFIG_HOME")" ""
	# what is left works: the keys are made where the directories were
	fmt-sign keygen -W -s kept/sec/k.key -p new/pub/k.pub >/dev/null
	fmt-sign keygen --hmac >/dev/null
	[ "$(stat -c %a new/pub kept/sec "$DIR" | tr '\n' ' ')" = "700 700 700 " ]
}

@test "a secret key piped in (-s -) is not judged by the mode of a file named - in the directory" {
	# The mode of an unencrypted key was checked by a stat of its path after the read: for -
	# that was a file named - in the current directory, not what was piped in (76487f02).
	fmt_pair k
	printf 'a file named -\n' >./-
	chmod 644 ./-
	run --separate-stderr fmt-sign sign -s - model.bin <k.key
	assert_success
	assert_equal "$output" "signed model.bin with key $(id_of_pub k.pub): model.bin.minisig"
	run minisign -V -p k.pub -m model.bin
	assert_success
	# a key file of mode 0644 given by its name is still refused
	cp k.key open.key
	chmod 644 open.key
	run --separate-stderr fmt-sign sign -s open.key -x other.minisig model.bin
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: open.key: the secret key is readable by others (mode 0644); chmod 600 it"
	[ ! -e other.minisig ]
}
