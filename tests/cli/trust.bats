#!/usr/bin/env bats
# Trust: Ed25519 signatures checked against the keys a user trusts (-p, -P, --trusted-keys)
# wherever fmt-verify checks a signature: detached FILE.minisig, .apsim ed25519 signatures
# (apsim.md §6.1), the .ald signature block (ald.md §6), signed APR v1 files (apr.md §16.2).
# Proof that every single-byte change is refused, and that secrets stay out of argv and output.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup() {
	make_samples
	cd "$BATS_TEST_TMPDIR"
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	fmt-sign keygen -W -p a.pub -s a.key >/dev/null
	fmt-sign keygen -W -p b.pub -s b.key >/dev/null
	fmt-sign keygen -W -p c.pub -s c.key >/dev/null
	A=$(fmt-sign key-id -p a.pub)
	B=$(fmt-sign key-id -p b.pub)
	printf 'id,name\n1,one\n2,two\n3,three\n' >rows.csv
}

# The base64 line of a public key file (what -P takes) and its raw key as standard base64.
b64_of() { sed -n 2p "$1"; }
raw_pk_of() { sed -n 2p "$1" | base64 -d | tail -c 32 | base64 -w0; }

# ---- detached FILE.minisig ----

@test "fmt-verify -p/-P/--trusted-keys checks FILE.minisig: trusted ok, untrusted key 7 naming its id" {
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	fmt-sign sign -q -s a.key m.safetensors
	run --separate-stderr fmt-verify -p a.pub m.safetensors
	assert_success
	assert_output "m.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes, .minisig by trusted key $A)"
	run --separate-stderr fmt-verify -P "$(b64_of a.pub)" -j m.safetensors
	assert_success
	assert_equal "$(jq -c .signatures <<<"$output")" "[{\"kind\":\"minisig\",\"key_id\":\"$A\",\"trusted\":true}]"
	mkdir trusted && cp a.pub b.pub trusted/
	run fmt-verify -q --trusted-keys trusted m.safetensors
	assert_success
	run --separate-stderr fmt-verify -p b.pub m.safetensors
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: signed by key $A, not by the key given (wrong key id)"
	assert_equal "$output" ""
	rm trusted/a.pub
	cp c.pub trusted/
	run --separate-stderr fmt-verify --trusted-keys trusted m.safetensors
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: signed by key $A, which is not a trusted key"
	# without keys the .minisig is not read, only named: structure and digests checked
	run fmt-verify m.safetensors
	assert_success
	assert_output "m.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes, signed (not checked: no key given))"
}

@test "with keys, a file with neither FILE.minisig nor an embedded signature is refused (7)" {
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	run --separate-stderr fmt-verify -p a.pub m.safetensors
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: not signed: safetensors files carry no embedded Ed25519 signature and there is no FILE.minisig beside it"
	fmt-convert -q rows.csv rows.arrow
	run --separate-stderr fmt-verify -p a.pub rows.arrow
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: rows.arrow: not signed: arrow files carry no embedded Ed25519 signature and there is no FILE.minisig beside it"
	fmt-sign sign -q -s a.key rows.arrow
	run fmt-verify -p a.pub rows.arrow
	assert_success
	assert_output --partial ".minisig by trusted key $A)"
}

@test "a set trusted by detached signatures needs a .minisig by a trusted key on every file" {
	cp -r "$SAMPLES/sharded" set
	fmt-sign sign -q -s a.key set/model.safetensors.index.json
	run --separate-stderr fmt-verify -p a.pub set/model.safetensors.index.json
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: set/model.safetensors.index.json: set/model-00001-of-00002.safetensors has no .minisig: the signature of set/model.safetensors.index.json does not cover the other files of the set (sign each: fmt-sign sign -s SECKEY FILE...)"
	fmt-sign sign -q -s a.key set/*.safetensors
	run fmt-verify -p a.pub set/model.safetensors.index.json
	assert_success
	assert_output "set/model.safetensors.index.json: ok (safetensors-index, 5 tensors, 3 files, 855 bytes, .minisig by trusted key $A)"
	fmt-sign sign -q -s b.key set/model-00002-of-00002.safetensors
	run --separate-stderr fmt-verify -p a.pub set/model.safetensors.index.json
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: set/model.safetensors.index.json: set/model-00002-of-00002.safetensors: signed by key $B, not by the key given (wrong key id)"
}

@test "a set whose file names hold printf conversions: a tampered shard is 7, named as it is" {
	# The shard's path was the format of the message's prefix: "%n" in a name crashed fmt-verify
	# (a segmentation fault) instead of refusing the set.
	fmt-shard split -q --max-tensors 3 -o 'p%s%s%s%n' "$SAMPLES/tiny.safetensors"
	fmt-sign sign -q -s a.key p*
	run fmt-verify -p a.pub 'p%s%s%s%n.safetensors.index.json'
	assert_success
	shard='p%s%s%s%n-00002-of-00002.safetensors'
	printf '\1' | dd of="$shard" bs=1 seek=$(($(stat -c %s "$shard") - 1)) conv=notrunc status=none
	run --separate-stderr fmt-verify -p a.pub 'p%s%s%s%n.safetensors.index.json'
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: p%s%s%s%n.safetensors.index.json: p%s%s%s%n-00002-of-00002.safetensors: bad signature by key $A: the file or the signature was altered"
}

@test "a tampered file or .minisig is 7; a malformed .minisig 4; bad key options 2, 3 or 4" {
	cp "$SAMPLES/tiny.safetensors" m.safetensors
	fmt-sign sign -q -s a.key -t "release 1" m.safetensors
	cp m.safetensors.minisig good.minisig
	sed -i 's/release 1/release 2/' m.safetensors.minisig
	run --separate-stderr fmt-verify -p a.pub m.safetensors
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: bad global signature by key $A: the trusted comment was altered"
	printf 'not a signature\n' >m.safetensors.minisig
	run --separate-stderr fmt-verify -p a.pub m.safetensors
	assert_failure 4
	[[ "$stderr" == "fmt-verify: error: m.safetensors: m.safetensors.minisig: "* ]] || fail "$stderr"
	cp good.minisig m.safetensors.minisig
	printf '\0' | dd of=m.safetensors bs=1 seek=300 conv=notrunc status=none
	run --separate-stderr fmt-verify -p a.pub m.safetensors
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: m.safetensors: bad signature by key $A: the file or the signature was altered"
	run --separate-stderr fmt-verify -p missing.pub m.safetensors
	assert_failure 3
	[[ "$stderr" == *"missing.pub"* ]] || fail "$stderr"
	run --separate-stderr fmt-verify -P "Zm9v" m.safetensors
	assert_failure 4
	mkdir empty
	run --separate-stderr fmt-verify --trusted-keys empty m.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-verify: error: no *.pub key file in the trusted keys directory empty"
	# fmtkit's own encryption key among them (or as -p) is named for what it is: it said 'the
	# public key is not base64 of 42 bytes' (exit 4)
	fmt-sign keygen -W --x25519 -p empty/bob.pub -s bob.key >/dev/null
	for opt in "--trusted-keys empty" "-p empty/bob.pub"; do
		run --separate-stderr fmt-verify $opt m.safetensors
		assert_failure 2
		assert_equal "$stderr" "fmt-verify: error: empty/bob.pub: an X25519 encryption key (fmt-sign keygen --x25519, for --encrypt-to), not an Ed25519 key that signatures are checked with"
	done
}

# ---- .apsim ----

@test ".apsim ed25519: fmt-convert --sign-key and fmt-sign sign --embed write ed25519:<id>:<base64>; verify and inspect report it" {
	fmt-convert -q --sign-key a.key "$SAMPLES/tiny.safetensors" m.apsim
	sig=$(head -c 8 m.apsim | od -An -tu8 | tr -d ' ' | { read n; tail -c +9 m.apsim | head -c "$n"; } |
		jq -r .__metadata__.signature)
	[[ "$sig" =~ ^ed25519:${A}:[A-Za-z0-9+/]{86}==$ ]] || fail "signature value: $sig"
	run fmt-inspect -j m.apsim
	assert_equal "$(jq -c '[.format_info.signed, .format_info.signature_kind, .format_info.key_id]' <<<"$output")" \
		"[true,\"ed25519\",\"$A\"]"
	run --separate-stderr fmt-verify -p a.pub m.apsim
	assert_success
	assert_output "m.apsim: ok (apsim, 5 tensors, 1 file, $(stat -c %s m.apsim) bytes, ed25519 signature by trusted key $A)"
	run --separate-stderr fmt-verify -p b.pub m.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: m.apsim: signed by Ed25519 key $A, which is not a trusted key"
	# no key: verified structurally, the signature reported as not checked
	run fmt-verify m.apsim
	assert_success
	assert_output --partial "signed (not checked: no key given))"
	# re-signed in place with b: the data and digest unchanged, the signature replaced
	sha=$(fmt-inspect -j m.apsim | jq -r .format_info.sha256)
	run fmt-sign sign --embed -s b.key m.apsim
	assert_success
	assert_output "signed m.apsim with Ed25519 key $B (embedded)"
	assert_equal "$(fmt-inspect -j m.apsim | jq -r .format_info.sha256)" "$sha"
	run fmt-verify -q -p b.pub m.apsim
	assert_success
	run fmt-verify -q -p a.pub m.apsim
	assert_failure 7
}

@test "fmt-sign verify of a file with both FILE.minisig and an embedded signature checks both: a bad one of either is 7, named" {
	# It checked FILE.minisig only: a file whose embedded signature was by an untrusted key
	# passed (fmt-verify -p refused it).
	fmt-convert -q --sign-key a.key "$SAMPLES/tiny.safetensors" good.apsim      # embedded: a
	fmt-convert -q --sign-key c.key "$SAMPLES/tiny.safetensors" bademb.apsim    # embedded: c
	cp good.apsim badmin.apsim
	fmt-sign sign -q -s a.key good.apsim bademb.apsim
	fmt-sign sign -q -s c.key badmin.apsim
	cp good.apsim bothbad.apsim
	fmt-convert -q -f --sign-key c.key "$SAMPLES/tiny.safetensors" bothbad.apsim
	fmt-sign sign -q -s b.key bothbad.apsim
	C=$(fmt-sign key-id -p c.pub)
	run --separate-stderr fmt-sign verify -p a.pub good.apsim
	assert_success
	assert_line --index 0 "Signature and comment signature verified"
	assert_line --index 2 "Embedded Ed25519 signature verified (key $A)"
	run --separate-stderr fmt-sign verify -j -p a.pub good.apsim
	assert_success
	assert_equal "$(jq -c '[.key_id, .embedded_key_id]' <<<"$output")" "[\"$A\",\"$A\"]"
	run --separate-stderr fmt-sign verify -p a.pub bademb.apsim
	assert_failure 7
	assert_output ""
	assert_equal "$stderr" "fmt-sign: error: bademb.apsim: the embedded signature (the .minisig is good): signed by Ed25519 key $C, which is not a trusted key"
	run --separate-stderr fmt-sign verify -p a.pub badmin.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: badmin.apsim: signed by key $C, not by the key given (wrong key id)"
	run --separate-stderr fmt-sign verify -p a.pub bothbad.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: bothbad.apsim: signed by key $B, not by the key given (wrong key id)"
	# fmt-verify agrees
	run fmt-verify -q -p a.pub bademb.apsim
	assert_failure 7
	# a .minisig alone (a file no format reads, or one without an embedded signature) still is enough
	printf 'bytes\n' >plain.bin
	fmt-convert -q "$SAMPLES/tiny.safetensors" unsigned.apsim
	fmt-sign sign -q -s a.key plain.bin unsigned.apsim
	run --separate-stderr fmt-sign verify -p a.pub plain.bin unsigned.apsim
	assert_success
	refute_line --partial "Embedded"
}

@test ".apsim: the key kind must match the signature kind (7 naming the kind); an unsigned file with a key is 7" {
	fmt-convert -q --sign-key a.key "$SAMPLES/tiny.safetensors" ed.apsim
	printf 'team secret' >team.txt
	fmt-convert -q --secret-file team.txt "$SAMPLES/tiny.safetensors" hmac.apsim
	run --separate-stderr fmt-verify --secret-file team.txt ed.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: ed.apsim: the signature is of kind ed25519 (key $A): check it with -p, -P or --trusted-keys, not an HMAC key"
	run --separate-stderr fmt-verify -p a.pub hmac.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: hmac.apsim: the signature is of kind hmac-sha256: check it with an HMAC key (--hmac-key, --secret-file...), not an Ed25519 public key"
	fmt-convert -q "$SAMPLES/tiny.safetensors" plain.apsim
	run --separate-stderr fmt-verify -p a.pub plain.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: plain.apsim: not signed (a key was given, but there is no signature)"
	# ... unless FILE.minisig by a trusted key is beside it
	fmt-sign sign -q -s a.key plain.apsim
	run fmt-verify -p a.pub plain.apsim
	assert_success
	assert_output --partial ".minisig by trusted key $A)"
	# --sign-key and an HMAC option together, or for a format without embedded signatures: usage
	run --separate-stderr fmt-convert --sign-key a.key --secret-file team.txt "$SAMPLES/tiny.safetensors" x.apsim
	assert_failure 2
	run --separate-stderr fmt-convert --sign-key a.key "$SAMPLES/tiny.safetensors" x.gguf
	assert_failure 2
	[[ "$stderr" == *"--sign-key needs an output format with embedded Ed25519 signatures (.apsim, .ald)"* ]]
	[ ! -e x.gguf ] && [ ! -e x.apsim ]
}

@test ".apsim sets: the index carries the ed25519 signature over every shard digest" {
	fmt-convert -q --sign-key a.key --shard 100 "$SAMPLES/tiny.safetensors" set.apsim.index.json
	jq -er '.metadata.signature | test("^ed25519:'"$A"':")' set.apsim.index.json
	run fmt-verify -p a.pub set.apsim.index.json
	assert_success
	assert_output --partial "ed25519 signature by trusted key $A)"
	# a shard swapped for another checkpoint's is a digest mismatch before any signature
	run fmt-sign sign -q --embed -s b.key set.apsim.index.json
	assert_success
	run --separate-stderr fmt-verify --trusted-keys /nonexistent set.apsim.index.json
	assert_failure 3
	mkdir keys && cp b.pub keys/
	run fmt-verify -q --trusted-keys keys set.apsim.index.json
	assert_success
}

# ---- .ald ----

@test ".ald: --sign-key writes the signature block; verify refuses an untrusted embedded key (7, naming it)" {
	fmt-convert -q --sign-key a.key rows.csv s.ald
	run fmt-inspect -j s.ald
	assert_equal "$(jq -c .ald.header.flags <<<"$output")" '["signed"]'
	assert_equal "$(jq -r .ald.signature_public_key_base64 <<<"$output")" "$(raw_pk_of a.pub)"
	run --separate-stderr fmt-verify -p a.pub s.ald
	assert_success
	assert_output "s.ald: ok (ald, 3 rows, CRC-32 ieee, ed25519 signature by trusted key $A)"
	run --separate-stderr fmt-verify -P "$(b64_of b.pub)" s.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: s.ald: signed by Ed25519 public key $(raw_pk_of a.pub), which is not a trusted key (the block embeds the bare key, without a minisign key id)"
	run fmt-verify s.ald
	assert_success
	assert_output "s.ald: ok (ald, 3 rows, CRC-32 ieee, signed (not checked: no key given))"
	printf 'x' >secret.txt
	run --separate-stderr fmt-verify --secret-file secret.txt s.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: s.ald: .ald datasets are signed with Ed25519 keys: check them with -p, -P or --trusted-keys, not an HMAC key"
	# the rows read back unchanged
	fmt-convert -q s.ald back.csv
	cmp rows.csv back.csv
}

@test ".ald: fmt-sign sign --embed signs in place atomically, keeps the CRC variant; unsigned with a key is 7" {
	fmt-convert -q rows.csv u.ald
	run --separate-stderr fmt-verify -p a.pub u.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: u.ald: not signed: no signature block (flag bit 1) and no FILE.minisig"
	size=$(stat -c %s u.ald)
	run fmt-sign sign --embed -s a.key u.ald
	assert_success
	assert_output "signed u.ald with Ed25519 key $A (embedded)"
	[ "$(stat -c %s u.ald)" -eq $((size + 96)) ]
	run fmt-verify -p a.pub u.ald
	assert_success
	# re-signing replaces the block (no second one), with the new key
	run --separate-stderr fmt-sign sign --embed -j -s b.key u.ald
	assert_success
	assert_output "{\"file\":\"u.ald\",\"ok\":true,\"kind\":\"ed25519\",\"key_id\":\"$B\"}"
	[ "$(stat -c %s u.ald)" -eq $((size + 96)) ]
	run fmt-verify -q -p b.pub u.ald
	assert_success
	# alimentar's CRC variant stays that variant
	fmt-convert -q --compat alimentar rows.csv c.ald
	fmt-sign sign -q --embed -s a.key c.ald
	run fmt-verify -p a.pub c.ald
	assert_success
	assert_output "c.ald: ok (ald, 3 rows, CRC-32 alimentar-0.2, ed25519 signature by trusted key $A)"
	# a damaged file is not signed: its CRC is checked first, the file left as it was
	cp u.ald bad.ald
	printf '\x55' | dd of=bad.ald bs=1 seek=40 conv=notrunc status=none
	cp bad.ald bad.orig
	run --separate-stderr fmt-sign sign --embed -s a.key bad.ald
	assert_failure 6
	cmp bad.ald bad.orig
	ls -A | grep -c fmtkit-tmp && fail "temporary file left" || true
	# a format without embedded signatures: usage error pointing at .minisig
	run --separate-stderr fmt-sign sign --embed -s a.key rows.csv
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: rows.csv: csv files carry no embedded signature (sign them with a detached .minisig: fmt-sign sign -s SECKEY without --embed)"
}

@test ".ald with a licence block: re-signing with the same key keeps it; another key is refused (the seller signature covers the file's)" {
	fmt-convert -q rows.csv u.ald
	# a licensed, signed file made here: flags SIGNED|LICENSED, block signed with a.key's seed,
	# a 75-byte licence block (no terms), the CRC
	/usr/bin/python3 - u.ald a.key l.ald <<'PY'
import base64, struct, sys, zlib
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
d = bytearray(open(sys.argv[1], "rb").read())
rec = base64.b64decode(open(sys.argv[2]).read().splitlines()[1])
key = Ed25519PrivateKey.from_private_bytes(rec[62:94])
meta, payload, schema = struct.unpack_from("<I", d, 8)[0], struct.unpack_from("<I", d, 12)[0], struct.unpack_from("<H", d, 22)[0]
end = 32 + meta + schema + payload
d[21] |= 0x0A
body = bytes(d[:end])
out = body + key.sign(body) + key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw) + bytes(16) + bytes(32) + bytes(27)
open(sys.argv[3], "wb").write(out + struct.pack("<I", zlib.crc32(out)))
PY
	# its licence has no seller signature: the file's signature does not cover the licence block,
	# so with a trusted key the licence is refused (issue 19 item 1)
	run --separate-stderr fmt-verify -p a.pub l.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: l.ald: the licence carries no seller signature, which it must when trusted keys are given: the .ald signature does not cover the licence block, so nothing vouches for its expiry, limits and terms"
	# fmt-verify refuses it without keys too (a signed file): so it is not re-signed, with
	# fmt-verify's status and message (it was: re-signed, exit 0)
	cp l.ald l.orig
	run --separate-stderr fmt-sign sign -q --embed -s a.key l.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: l.ald: the licence carries no seller signature, which it must in a signed file: the .ald signature does not cover the licence block, so nothing vouches for its expiry, limits and terms"
	cmp l.ald l.orig
	# a licence fmt-sign issued (seller signature over the file's signature): the same key
	# re-signs it unchanged; another key is refused
	fmt-sign sign -q --embed -s a.key u.ald
	fmt-sign license -q --licensee acme --sign-key a.key u.ald
	cp u.ald u.orig
	run fmt-sign sign -q --embed -s a.key u.ald
	assert_success
	cmp u.ald u.orig
	run --separate-stderr fmt-sign sign --embed -s b.key u.ald
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: u.ald: the licence block's seller signature covers the file's signature: signing would invalidate it (sign the dataset before issuing its licence)"
	cmp u.ald u.orig
}

# ---- APR v1 ----

@test "APR v1 signed (apr.md §16.2): verified with a trusted key; other key 7; changed after signing 7; v2 needs .minisig" {
	seed=$(printf '42%.0s' $(seq 32))
	"$REPO_ROOT/tests/gen/apr-v1-signed.py" v1.apr v1.pub "$seed" 0123456789ABCDEF
	run fmt-verify -p v1.pub v1.apr
	assert_success
	assert_output "v1.apr: ok (apr, 0 tensors, 1 file, 240 bytes, ed25519 signature by trusted key 0123456789ABCDEF)"
	run fmt-inspect -j v1.apr
	assert_equal "$(jq -c .format_info.flags <<<"$output")" '["SIGNED"]'
	run --separate-stderr fmt-verify -p a.pub v1.apr
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: v1.apr: signed by Ed25519 public key $(raw_pk_of v1.pub), which is not a trusted key (the block embeds the bare key, without a minisign key id)"
	# a payload byte changed and the CRC recomputed: only the signature catches it
	/usr/bin/python3 -c 'import sys,zlib,struct; b=bytearray(open("v1.apr","rb").read()); b[120]^=1
open("t.apr","wb").write(b[:-4]+struct.pack("<I",zlib.crc32(bytes(b[:-4]))))'
	run --separate-stderr fmt-verify -p v1.pub t.apr
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: t.apr: bad signature by trusted key 0123456789ABCDEF: the file was changed after signing"
	# APR v2 has no signature block
	fmt-convert -q "$SAMPLES/tiny.safetensors" v2.apr
	run --separate-stderr fmt-verify -p a.pub v2.apr
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: v2.apr: not signed: APR v2 files have no signature block (apr.md §15); sign them with a detached FILE.minisig (fmt-sign sign -s SECKEY)"
	fmt-sign sign -q -s a.key v2.apr
	run fmt-verify -p a.pub v2.apr
	assert_success
}

# ---- every single-byte change is refused ----

# refuse_all DIR CMD...: CMD -j run once over every file of DIR refuses each with exit 4, 5, 6
# or 7 (5: a changed version field, e.g. .apsim's "version":"1" becoming "0", is UnsupportedVersion).
refuse_all() {
	local dir=$1 n
	shift
	exits_of "$@" -j -- "$dir"/*
	exits_in "4 5 6 7"
	n=$(wc -l <"$EXITS")
	echo "$n variants refused" >&3
	[ "$n" -gt 0 ]
}

@test "every single-byte change of an ed25519-signed .apsim is refused (4, 5, 6 or 7)" {
	/usr/bin/python3 -c 'import struct,json
h={"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}
t=json.dumps(h,separators=(",",":")).encode(); t+=b" "*(-len(t)%8)
open("s.safetensors","wb").write(struct.pack("<Q",len(t))+t+struct.pack("<2f",1.5,-2))'
	fmt-convert -q --sign-key a.key s.safetensors small.apsim
	run fmt-verify -q -p a.pub small.apsim
	assert_success
	flip_all small.apsim flips
	refuse_all flips fmt-verify -p a.pub
}

@test "every single-byte change of a signed .ald is refused; with the CRC recomputed, by the signature (7) or the structure (4)" {
	printf 'a\n1\n' >one.csv
	fmt-convert -q --from csv --compression none --sign-key a.key one.csv small.ald
	run fmt-verify -q -p a.pub small.ald
	assert_success
	flip_all small.ald flips
	refuse_all flips fmt-verify -p a.pub
	# the CRC would catch everything above: recompute it so the signature has to
	/usr/bin/python3 - small.ald crcfixed <<'PY'
import os, struct, sys, zlib
data = open(sys.argv[1], "rb").read()
os.makedirs(sys.argv[2])
for i in range(len(data) - 4):
    b = bytearray(data[:-4]); b[i] ^= 0x01
    open(os.path.join(sys.argv[2], "%d.ald" % i), "wb").write(bytes(b) + struct.pack("<I", zlib.crc32(bytes(b))))
PY
	refuse_all crcfixed fmt-verify -p a.pub
}

@test "every single-byte change of a .minisig's signed lines is refused (4 or 7); the untrusted comment is, by design, not signed" {
	# a file fmt-verify recognises, so that its structure passes and the signature decides
	cp "$SAMPLES/tiny.safetensors" f.bin
	fmt-sign sign -q -s a.key -t "release" f.bin
	run fmt-verify -q -p a.pub f.bin
	assert_success
	cp f.bin.minisig orig.minisig
	first=$(head -1 orig.minisig | wc -c)   # the untrusted comment line, newline included
	# flips/N.bin (f.bin) with flips/N.bin.minisig: the signature with byte N xor 0x01
	/usr/bin/python3 - orig.minisig flips "$first" <<'PY'
import os, sys
data = open(sys.argv[1], "rb").read()
os.makedirs(sys.argv[2])
for i in range(int(sys.argv[3]), len(data)):
    b = bytearray(data); b[i] ^= 0x01
    os.link("f.bin", os.path.join(sys.argv[2], "%d.bin" % i))
    open(os.path.join(sys.argv[2], "%d.bin.minisig" % i), "wb").write(b)
PY
	exits_of fmt-verify -j -p a.pub -- flips/*.bin
	exits_in "4 7"
	exits_of fmt-sign verify -j -p a.pub -- flips/*.bin
	exits_in "4 7"
	[ "$(wc -l <"$EXITS")" -eq $(($(wc -c <orig.minisig) - first)) ]
	# minisign agrees that the untrusted comment is outside the signature
	sed '1s/.*/untrusted comment: anything at all/' orig.minisig >f.bin.minisig
	run fmt-verify -q -p a.pub f.bin
	assert_success
}

# ---- secrets ----

@test "secrets: a passphrase prompt waits with nothing secret in argv; passphrases and secret keys never in output or signed files" {
	printf 'correct horse\n' >pass.txt
	encrypted_pair e pass.txt
	fmt-convert -q rows.csv p.ald
	# on a terminal (script(1) gives one): the prompt waits; meanwhile argv holds no secret
	{ sleep 2; printf 'correct horse\n'; } | script -qec "fmt-sign sign --embed -s e.key p.ald" /dev/null >tty.log 2>&1 &
	pid=$!
	sleep 1
	ps -eo args | grep -q '^fmt-sign sign --embed -s e.key p.ald' || fail "no waiting fmt-sign: $(ps -eo args | grep fmt-sign)"
	! ps -eo args | grep -q "correct horse"
	wait "$pid"
	grep -q "Passphrase:" tty.log
	! grep -q "correct horse" tty.log
	run fmt-verify -q -p e.pub p.ald
	assert_success
	# environment and file: the passphrase nowhere in stdout, stderr, the output or its JSON
	export PW='correct horse'
	run --separate-stderr fmt-convert --sign-key e.key --passphrase-env PW -v rows.csv q.apsim.ald
	assert_success
	[[ "$output$stderr" != *"correct horse"* ]]
	run --separate-stderr fmt-convert --sign-key e.key --passphrase-file pass.txt "$SAMPLES/tiny.safetensors" q.apsim
	assert_success
	export PW='wrong horse'
	run --separate-stderr fmt-convert --sign-key e.key --passphrase-env PW rows.csv w.ald
	assert_failure 8
	[[ "$output$stderr" != *"horse"* ]]
	[ ! -e w.ald ]
	for f in p.ald q.apsim.ald q.apsim; do
		! grep -q "correct horse" "$f"
	done
	# an unencrypted secret key: its 64 secret bytes appear in no signed file (the public half does)
	fmt-convert -q --sign-key a.key rows.csv s.ald
	fmt-convert -q --sign-key a.key "$SAMPLES/tiny.safetensors" s.apsim
	fmt-sign sign -q -s a.key rows.csv
	/usr/bin/python3 - a.key s.ald s.apsim rows.csv.minisig <<'PY'
import base64, sys
rec = base64.b64decode(open(sys.argv[1]).read().splitlines()[1])
seed = rec[62:94]   # unencrypted record: key id at 54, secret key (seed || public) at 62
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    text = data + base64.b64encode(data)
    for probe in (seed, base64.b64encode(seed)[:40], seed.hex().encode()):
        assert probe not in text and probe not in data, path
PY
}

# ---- in place: the mode kept, a symbolic link followed (as fmt-convert --in-place) ----

@test "signing and licensing in place keep the file's mode and replace the file a symbolic link names (the link stays)" {
	fmt-convert -q rows.csv emb.ald
	fmt-convert -q rows.csv lic.ald
	fmt-convert -q rows.csv real.ald
	fmt-convert -q rows.csv licreal.ald
	fmt-convert -q "$SAMPLES/tiny.safetensors" h.apsim
	fmt-convert -q --shard 100 "$SAMPLES/tiny.safetensors" set.apsim.index.json
	chmod 600 emb.ald h.apsim set.apsim.index.json
	chmod 640 lic.ald
	fmt-sign keygen -q --hmac
	fmt-sign sign -q --embed -s a.key emb.ald
	fmt-sign license -q --licensee acme --sign-key a.key lic.ald
	fmt-sign sign -q h.apsim
	fmt-sign sign -q --embed -s a.key set.apsim.index.json
	assert_equal "$(stat -c '%a %n' emb.ald lic.ald h.apsim set.apsim.index.json | tr '\n' ' ')" \
		"600 emb.ald 640 lic.ald 600 h.apsim 600 set.apsim.index.json "
	fmt-verify -q -p a.pub emb.ald
	fmt-verify -q --hmac-key h.apsim
	fmt-verify -q -p a.pub set.apsim.index.json
	[ "$(fmt-inspect -j lic.ald | jq -r .ald.license.licensee_sha256)" = "$(printf acme | sha256sum | cut -c1-64)" ]
	# through symbolic links: the files they name are signed and licensed, the links stay links
	ln -s real.ald link.ald
	ln -s licreal.ald liclink.ald
	cp h.apsim hreal.apsim
	ln -s hreal.apsim hlink.apsim
	fmt-sign sign -q --embed -s a.key link.ald
	fmt-sign license -q --licensee acme --sign-key a.key liclink.ald
	fmt-sign sign -q --secret-file a.key hlink.apsim
	assert_equal "$(readlink link.ald) $(readlink liclink.ald) $(readlink hlink.apsim)" "real.ald licreal.ald hreal.apsim"
	run --separate-stderr fmt-verify -p a.pub real.ald
	assert_success
	assert_output "real.ald: ok (ald, 3 rows, CRC-32 ieee, ed25519 signature by trusted key $A)"
	cmp <(fmt-inspect -j licreal.ald | jq .ald.license.licensee_sha256) \
		<(fmt-inspect -j lic.ald | jq .ald.license.licensee_sha256)
	fmt-verify -q --secret-file a.key hreal.apsim
	[ -z "$(ls -A | grep '^\.fmtkit-tmp' || true)" ]
}

# ---- fmt-sign verify: the embedded signature when there is no FILE.minisig ----

@test "fmt-sign verify without FILE.minisig: the embedded signature is checked as fmt-verify does; none is 7, as fmt-verify" {
	fmt-convert -q --sign-key a.key rows.csv s.ald
	run --separate-stderr fmt-sign verify -p a.pub s.ald
	assert_success
	assert_output "Embedded Ed25519 signature verified (key $A)"
	run --separate-stderr fmt-sign verify --json -p a.pub s.ald
	assert_success
	assert_output "{\"file\":\"s.ald\",\"ok\":true,\"key_id\":\"$A\",\"embedded\":true}"
	run --separate-stderr fmt-sign verify -p b.pub s.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: s.ald: signed by Ed25519 public key $(raw_pk_of a.pub), which is not a trusted key (the block embeds the bare key, without a minisign key id)"
	run fmt-verify -q -p b.pub s.ald
	assert_failure 7
	fmt-convert -q --sign-key a.key "$SAMPLES/tiny.safetensors" m.apsim
	run --separate-stderr fmt-sign verify -p a.pub m.apsim
	assert_success
	assert_output "Embedded Ed25519 signature verified (key $A)"
	# no signature at all: 7, as fmt-verify
	run --separate-stderr fmt-sign verify -p a.pub rows.csv
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: rows.csv: not signed: csv files carry no embedded Ed25519 signature and there is no FILE.minisig beside it"
	run fmt-verify -q -p a.pub rows.csv
	assert_failure 7
	fmt-convert -q rows.csv u.ald
	run --separate-stderr fmt-sign verify -p a.pub u.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: u.ald: not signed: no signature block (flag bit 1) and no FILE.minisig"
	printf '\000\001\002\003 no format' >model.bin
	run --separate-stderr fmt-sign verify -p a.pub model.bin
	assert_failure 7
	[[ "$stderr" == "fmt-sign: error: model.bin: not signed: no model.bin.minisig beside it, and no embedded signature can be read (unrecognised format"* ]] || fail "$stderr"
	# a FILE.minisig beside the file is checked, then the embedded signature too (by a: not
	# trusted with -p b.pub alone)
	fmt-sign sign -q -s b.key s.ald
	run --separate-stderr fmt-sign verify -p b.pub s.ald
	assert_failure 7
	assert_equal "$stderr" "fmt-sign: error: s.ald: the embedded signature (the .minisig is good): signed by Ed25519 public key $(raw_pk_of a.pub), which is not a trusted key (the block embeds the bare key, without a minisign key id)"
	mkdir trusted && cp a.pub b.pub trusted/
	run --separate-stderr fmt-sign verify --trusted-keys trusted s.ald
	assert_success
	assert_line --index 0 "Signature and comment signature verified"
	assert_line --index 2 "Embedded Ed25519 signature verified (key $A)"
}
