#!/usr/bin/env bats
# .ald encryption (specs/ald.md §5): password mode (Argon2id + AES-256-GCM) and recipient mode
# (X25519 + HKDF-SHA256 + AES-256-GCM) through fmt-convert, fmt-inspect and fmt-verify; wrong
# and missing keys, secrets kept out of argv and output, every byte of an encrypted file altered.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	printf 'id,name\n1,ann\n2,bob\n3,cy\n' >in.csv
	printf 'correct horse battery\n' >pw.txt
	printf 'wrong horse battery\n' >bad.txt
	XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	export XDG_CONFIG_HOME
}

# The layout of an .ald as JSON: header sizes, flags, the encryption header and its offsets.
layout() {
	/usr/bin/python3 - "$1" <<'PY'
import json, struct, sys
f = open(sys.argv[1], "rb").read()
meta, pay, raw = struct.unpack_from("<III", f, 8)
comp, flags, schema = f[20], f[21], struct.unpack_from("<H", f, 22)[0]
enc = 32 + meta + schema
mode = f[enc]
n = 29 if mode == 0 else 45
print(json.dumps({"flags": flags, "mode": mode, "enc_start": enc, "enc_len": n,
                  "payload_size": pay, "file": len(f), "enc_header": f[enc:enc + n].hex(),
                  "rest": len(f) - (enc + n + pay) }))
PY
}

@test "password mode: the §5.1 header (mode 0, salt, nonce), payload = ciphertext + tag, rows back exactly" {
	run --separate-stderr fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	assert_success
	l=$(layout e.ald)
	# flags, mode, nothing between the payload and the CRC (rest: the CRC)
	read -r flags mode rest enc_header payload_size < <(jq -r '[.flags, .mode, .rest, .enc_header, .payload_size] | @tsv' <<<"$l")
	assert_equal "$flags $mode $rest" "1 0 4"
	# the same data encrypted twice: fresh salt and nonce, so different bytes
	fmt-convert --encrypt-password-file pw.txt in.csv e2.ald
	fmt-convert in.csv plain.ald
	read -r enc_header2 plain_payload < <(jq -rs '[.[0].enc_header, .[1].payload_size] | @tsv' <(layout e2.ald; layout plain.ald))
	[ -n "$enc_header" ] && [ "$enc_header" != "$enc_header2" ]
	# the payload is 16 bytes (the tag) longer than the plain file's compressed payload
	[ "$payload_size" -eq $((plain_payload + 16)) ]
	run --separate-stderr fmt-convert --password-file pw.txt e.ald - --to csv
	assert_success
	assert_output "$(cat in.csv)"
	run fmt-inspect --json e.ald plain.ald
	assert_success
	# e.ald's flags, encryption and authentication, and its card's digest is the plain file's
	assert_equal "$(jq -sc '.[0].ald | .header.flags, .encryption, .payload_authenticated' <<<"$output")" '["encrypted"]
"password"
false'
	assert_equal "$(jq -sr '[.[].ald.card.sha256] | (length, (unique | length), (.[0] | length))' <<<"$output")" "2
1
64"
}

@test "recipient mode: the 45-byte header (mode 1, ephemeral key, nonce), --identity decrypts, STREAMING too" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key
	run --separate-stderr fmt-convert --encrypt-to r.pub in.csv r.ald
	assert_success
	l=$(layout r.ald)
	read -r mode enc_len rest enc_header < <(jq -r '[.mode, .enc_len, .rest, .enc_header] | @tsv' <<<"$l")
	assert_equal "$mode $enc_len $rest" "1 45 4"
	# the ephemeral key is not the recipient's
	eph=$(cut -c3-66 <<<"$enc_header")
	[ "$eph" != "$(sed -n 2p r.pub | base64 -d | xxd -p -c 64)" ]
	run --separate-stderr fmt-convert --identity r.key r.ald - --to jsonl
	assert_success
	assert_output "$(printf '{"id":1,"name":"ann"}\n{"id":2,"name":"bob"}\n{"id":3,"name":"cy"}')"
	# chunks of 2 rows, encrypted: the chunk index stays readable, the chunks decrypt
	run --separate-stderr fmt-convert --encrypt-to r.pub --chunk-rows 2 --compression lz4 in.csv s.ald
	assert_success
	[ "$(fmt-inspect --json s.ald | jq -c '[.ald.header.flags, (.ald.chunks | length)]')" = '[["encrypted","streaming"],2]' ]
	run --separate-stderr fmt-inspect --identity r.key --head 3 --json s.ald
	assert_success
	[ "$(jq -c .head <<<"$output")" = '[{"id":1,"name":"ann"},{"id":2,"name":"bob"},{"id":3,"name":"cy"}]' ]
	run --separate-stderr fmt-inspect --identity r.key --stats s.ald
	assert_success
	assert_line "id: type=int64 count=3 nulls=0 min=1 max=3 mean=2.0"
}

@test "--password-env; .ald to .ald re-encrypts from a password to a recipient" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	ALD_PW='correct horse battery' run --separate-stderr fmt-convert --password-env ALD_PW e.ald - --to csv
	assert_success
	assert_output "$(cat in.csv)"
	run --separate-stderr fmt-convert --password-file pw.txt --encrypt-to r.pub e.ald r.ald
	assert_success
	[ "$(layout r.ald | jq .mode)" = 1 ]
	run --separate-stderr fmt-convert --identity r.key r.ald - --to csv
	assert_output "$(cat in.csv)"
}

@test "wrong password, wrong identity, missing key: exit 8, nothing written, the reason said" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key
	fmt-sign keygen -W --x25519 -p o.pub -s o.key
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	fmt-convert --encrypt-to r.pub in.csv r.ald
	mkdir out
	run --separate-stderr fmt-convert --password-file bad.txt e.ald out/x.csv
	assert_failure 8
	assert_equal "$stderr" "fmt-convert: error: e.ald: authentication failed: wrong password or key, or the encrypted payload was altered"
	[ -z "$(ls -A out)" ]
	run --separate-stderr fmt-convert --password-file bad.txt e.ald - --to csv
	assert_failure 8
	assert_output ""
	run --separate-stderr fmt-convert --identity o.key r.ald out/x.csv
	assert_failure 8
	[ -z "$(ls -A out)" ]
	# no key at all, no terminal (stdin is not one here)
	run --separate-stderr fmt-convert e.ald out/x.csv </dev/null
	assert_failure 8
	assert_equal "$stderr" "fmt-convert: error: e.ald: the payload is encrypted with a password: give --password-file or --password-env, or run on a terminal"
	run --separate-stderr fmt-convert --password-file pw.txt r.ald out/x.csv </dev/null
	assert_failure 8
	assert_equal "$stderr" "fmt-convert: error: r.ald: the payload is encrypted to an X25519 recipient: give --identity SECKEY (a password was given)"
	[ -z "$(ls -A out)" ]
	run --separate-stderr fmt-inspect --head 2 --password-file bad.txt e.ald
	assert_failure 8
	assert_output ""
	run --separate-stderr fmt-inspect --stats e.ald </dev/null
	assert_failure 8
	# the summary needs no key: the header, card and schema are plaintext
	run --separate-stderr fmt-inspect e.ald </dev/null
	assert_success
	assert_line "encryption: password"
}

@test "fmt-verify: authenticates with the key and checks the digest; without one says it did not; exit 8 when wrong" {
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	run --separate-stderr fmt-verify e.ald </dev/null
	assert_success
	assert_output "e.ald: ok (ald, 3 rows, CRC-32 ieee, encrypted payload not checked: no password or identity)"
	run --separate-stderr fmt-verify --password-file pw.txt e.ald
	assert_success
	assert_output "e.ald: ok (ald, 3 rows, CRC-32 ieee, encrypted payload authenticated)"
	run --separate-stderr fmt-verify --json --password-file pw.txt e.ald
	assert_output '{"file":"e.ald","ok":true,"format":"ald","rows":3,"crc":"ieee","payload_authenticated":true}'
	run --separate-stderr fmt-verify --password-file bad.txt e.ald
	assert_failure 8
	assert_equal "$stderr" "fmt-verify: error: e.ald: authentication failed: wrong password or key, or the encrypted payload was altered"
	# several files: the highest status, every file reported
	fmt-convert in.csv plain.ald
	run --separate-stderr fmt-verify --password-file bad.txt plain.ald e.ald
	assert_failure 8
	assert_line --index 0 "plain.ald: ok (ald, 3 rows, CRC-32 ieee)"
}

@test "secrets never in argv, messages or outputs; the identity must be private" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	# a slow reader keeps fmt-convert alive while ps looks at every command line
	(fmt-convert --password-file <(sleep 1; cat pw.txt) e.ald - --to csv >got.csv 2>err.txt; echo $? >rc) &
	sleep 0.4
	pgrep -f "fmt-convert --password-file" >/dev/null
	! ps -eo args | grep -v grep | grep -q "correct horse"
	wait
	[ "$(cat rc)" = 0 ]
	[ "$(cat got.csv)" = "$(cat in.csv)" ]
	! grep -rq "horse" got.csv err.txt e.ald
	run --separate-stderr fmt-convert --password-file bad.txt e.ald x.csv
	! grep -q horse <<<"$stderr$output"
	chmod 644 r.key
	fmt-convert --encrypt-to r.pub in.csv r.ald
	run --separate-stderr fmt-convert --identity r.key r.ald x.csv
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: r.key: the identity is readable by others (mode 0644); chmod 600 it"
}

@test "usage: two encryption keys, encryption of a CSV or a model, decryption options with a model output" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key
	run --separate-stderr fmt-convert --encrypt-password-file pw.txt --encrypt-to r.pub in.csv x.ald
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: give one of --encrypt-password-file, --encrypt-password-env and --encrypt-to"
	run --separate-stderr fmt-convert --encrypt-password-file pw.txt in.csv x.jsonl
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: jsonl output cannot be encrypted (.ald can)"
	run --separate-stderr fmt-convert --encrypt-to r.pub in.csv x.safetensors
	assert_failure 2
	run --separate-stderr fmt-convert --password-file pw.txt in.csv x.safetensors
	assert_failure 2
	[[ "$stderr" == *"--password-file, --password-env and --identity decrypt a dataset"* ]]
	run --separate-stderr fmt-convert --encrypt-to missing.pub in.csv x.ald
	assert_failure 3
	[ ! -e x.ald ]
	run --separate-stderr fmt-convert --encrypt-to r.key in.csv x.ald
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: r.key: a secret key; --encrypt-to takes the recipient's public key"
	[ ! -e x.ald ]
}

@test "hostile: every single-byte change of an encrypted .ald is refused (4 or 6; 8 or 4/5 once the CRC is recomputed)" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key
	fmt-convert --encrypt-to r.pub in.csv r.ald
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	run /usr/bin/python3 - "$(command -v fmt-convert)" <<'PY'
import struct, subprocess, sys, zlib
tool = sys.argv[1]
def run(data, *key):
    open("t.ald", "wb").write(data)
    r = subprocess.run([tool, *key, "t.ald", "-", "--to", "csv"], capture_output=True)
    assert r.returncode < 64, ("crash", r.returncode, r.stderr)
    assert r.stdout == b"", ("rows written from a bad file", r.stdout)
    return r.returncode
def fixcrc(b):
    return b[:-4] + struct.pack("<I", zlib.crc32(b[:-4]) & 0xFFFFFFFF)
def region(f):
    meta, pay = struct.unpack_from("<II", f, 8)
    enc = 32 + meta + struct.unpack_from("<H", f, 22)[0]
    return enc, enc + (29 if f[enc] == 0 else 45) + pay
codes = {}
f = open("r.ald", "rb").read()
for i in range(len(f)):
    b = bytearray(f); b[i] ^= 0x01
    c = run(bytes(b), "--identity", "r.key")
    assert c != 0, ("accepted", i)
    codes[c] = codes.get(c, 0) + 1
assert set(codes) <= {4, 6} and codes[6] > codes.get(4, 0), codes  # structure, then the CRC
start, end = region(f)
for i in range(start, end):
    for x in (0x01, 0x80):
        b = bytearray(f); b[i] ^= x
        c = run(fixcrc(bytes(b)), "--identity", "r.key")
        assert c in (4, 5, 8) if i == start else c == (4 if (i, x) == (start + 32, 0x80) else 8), (i, x, c)
f = open("e.ald", "rb").read()
start, end = region(f)
# password mode: the salt, the nonce, the first and last payload bytes and the whole tag
for i in list(range(start + 1, start + 29)) + [start + 29] + list(range(end - 17, end)):
    b = bytearray(f); b[i] ^= 0x04
    assert run(fixcrc(bytes(b)), "--password-file", "pw.txt") == 8, i
# the mode byte: 0x01 reads 16 more header bytes; 0x02 is an unknown mode
for m in (1, 2):
    b = bytearray(f); b[start] = m
    assert run(fixcrc(bytes(b)), "--password-file", "pw.txt") in (4, 5, 8), m
print("ok", len(f), codes)
PY
	assert_success
	assert_output --partial "ok "
}

@test "hostile: truncated and oversized encryption headers, a payload shorter than its tag" {
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	run /usr/bin/python3 - "$(command -v fmt-convert)" <<'PY'
import struct, subprocess, sys, zlib
tool = sys.argv[1]
f = open("e.ald", "rb").read()
meta, pay = struct.unpack_from("<II", f, 8)
enc = 32 + meta + struct.unpack_from("<H", f, 22)[0]
def build(enc_header, payload):
    h = bytearray(f[:32]); struct.pack_into("<I", h, 12, len(payload))
    body = bytes(h) + f[32:enc] + enc_header + payload
    return body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)
def check(data, want, msg):
    open("t.ald", "wb").write(data)
    r = subprocess.run([tool, "--password-file", "pw.txt", "t.ald", "-", "--to", "csv"], capture_output=True)
    assert r.returncode == want and msg.encode() in r.stderr and r.stdout == b"", (want, msg, r.returncode, r.stderr)
hdr, payload = f[enc:enc + 29], f[enc + 29:enc + 29 + pay]
# the header cut short: the file ends inside it
body = f[:enc + 10]
check(body + struct.pack("<I", zlib.crc32(body)), 4, "encryption header runs past the end of the file")
# a payload of 15 bytes: shorter than the tag
check(build(hdr, payload[:15]), 4, "shorter than its 16-byte tag")
# no ciphertext at all, only a tag: authenticated as nothing, refused
check(build(hdr, payload[-16:]), 8, "authentication failed")
# payload_size past the file
b = bytearray(f); struct.pack_into("<I", b, 12, 0xFFFFFFF0)
check(bytes(b[:-4]) + struct.pack("<I", zlib.crc32(bytes(b[:-4]))), 4, "payload runs past the CRC")
# mode 0x07: a 45-byte header of an unknown mode
check(build(b"\x07" + bytes(44), payload), 5, "encryption mode 0x07")
print("ok")
PY
	assert_success
	assert_output "ok"
}

@test "the terminal: with no password option and a terminal on stdin, the password is asked without echo" {
	command -v script >/dev/null || skip "no script(1)"
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	run bash -c '(sleep 0.5; printf "correct horse battery\n") | script -qec "fmt-convert e.ald out.csv" /dev/null'
	assert_success
	assert_line --index 0 --partial "Password: "
	refute_output --partial "correct horse" # no echo
	[ "$(cat out.csv)" = "$(cat in.csv)" ]
	run bash -c '(sleep 0.5; printf "nope\n") | script -qec "fmt-verify e.ald; echo rc=\$?" /dev/null'
	assert_output --partial "authentication failed"
	assert_output --partial "rc=8"
}

@test "--trueno-native with encryption: exit 2 naming both, nothing written (its arrays are read in place)" {
	run --separate-stderr fmt-convert --trueno-native --encrypt-password-file pw.txt in.csv n.ald
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"TRUENO_NATIVE arrays are read in place and cannot be encrypted"* ]]
	[ ! -e n.ald ]
	run fmt-convert --trueno-native in.csv plain.ald
	assert_success
}

@test "fmt-shard does not decrypt: split, concat and merge of an encrypted .ald are exit 5 saying so, nothing written" {
	# It said 'give --password-file or --password-env, or run on a terminal' (exit 8), options
	# fmt-shard does not have: its parts would be written in the clear.
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	fmt-convert in.csv plain.ald
	local msg="e.ald: the rows are encrypted, and fmt-shard writes in the clear: decrypt it first (fmt-convert --password-file FILE or --identity SECKEY), and encrypt the results after"
	for cmd in "split --rows 2 -o parts e.ald" "split --fractions 0.5,0.5 -o parts e.ald" \
		"concat plain.ald e.ald -o out.csv" "merge e.ald -o out.ald"; do
		run --separate-stderr fmt-shard $cmd </dev/null
		[ "$status" -eq 5 ] || fail "$cmd: exit $status"
		assert_equal "$stderr" "fmt-shard: error: $msg"
	done
	[ ! -e parts ] && [ ! -e out.csv ] && [ ! -e out.ald ]
}

# An encrypted X25519 secret key (man fmt-sign, "X25519 keys"): its bytes under the comment line.
key_blob() { sed -n 2p "$1" | base64 -d; }
# Write a key file with the comment line of $1 and the bytes of the hex $2.
put_key() {
	{ sed -n 1p "$1"; xxd -r -p <<<"$2" | base64 -w0; echo; } >"$3"
	chmod 600 "$3"
}

@test "keygen --x25519 encrypts the secret key (Argon2id, AES-256-GCM) as man fmt-sign says; python decrypts it; 0600" {
	run --separate-stderr fmt-sign keygen --x25519 -p r.pub -s r.key --passphrase-file pw.txt
	assert_success
	[ "$(stat -c %a r.key)" = 600 ]
	assert_equal "$(sed -n 1p r.key)" "untrusted comment: fmtkit x25519 secret key, encrypted (Argon2id, AES-256-GCM)"
	[ "$(wc -l <r.key)" -eq 2 ]
	[ "$(key_blob r.key | wc -c)" -eq 81 ]
	# the layout of the man page, decrypted independently (argon2-cffi, cryptography): the key is
	# the public key's secret half, and its 32 bytes are nowhere in the file (raw or base64)
	run /usr/bin/python3 - r.key r.pub pw.txt <<'PY'
import base64, sys
from argon2.low_level import hash_secret_raw, Type
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives import serialization
text = open(sys.argv[1], "rb").read()
blob = base64.b64decode(text.split(b"\n")[1])
assert blob[0:4] == b"X25K" and blob[4] == 1 and len(blob) == 81, blob[:5]
salt, nonce, ct_tag = blob[5:21], blob[21:33], blob[33:81]
pw = open(sys.argv[3], "rb").read().rstrip(b"\n")
key = hash_secret_raw(pw, salt, time_cost=2, memory_cost=19456, parallelism=1, hash_len=32,
                      type=Type.ID, version=19)
sk = AESGCM(key).decrypt(nonce, ct_tag, None)
pk = X25519PrivateKey.from_private_bytes(sk).public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
assert pk == base64.b64decode(open(sys.argv[2], "rb").read().split(b"\n")[1]), "not the public key's secret"
assert sk not in text and sk not in blob and base64.b64encode(sk)[:40] not in text, "plain secret in the file"
print("ok")
PY
	assert_success
	assert_output ok
	# without a passphrase and no terminal: a usage error, nothing written
	run --separate-stderr fmt-sign keygen --x25519 -p n.pub -s n.key </dev/null
	assert_failure 2
	[ ! -e n.key ] && [ ! -e n.pub ]
}

@test "an encrypted --identity: fmt-convert, fmt-inspect --head, fmt-verify decrypt with --passphrase-file/-env; wrong passphrase exit 8; -W keys still load" {
	fmt-sign keygen --x25519 -p r.pub -s r.key --passphrase-file pw.txt >/dev/null
	fmt-convert --encrypt-to r.pub in.csv r.ald
	rows=$(printf '{"id":1,"name":"ann"}\n{"id":2,"name":"bob"}\n{"id":3,"name":"cy"}')
	run --separate-stderr fmt-convert --identity r.key --passphrase-file pw.txt r.ald - --to jsonl
	assert_success
	assert_output "$rows"
	PW='correct horse battery' run --separate-stderr fmt-inspect --head 2 --identity r.key --passphrase-env PW r.ald
	assert_success
	assert_output "$(printf 'id  name\n1   ann\n2   bob')"
	run --separate-stderr fmt-verify --identity r.key --passphrase-file pw.txt r.ald
	assert_success
	assert_output "r.ald: ok (ald, 3 rows, CRC-32 ieee, encrypted payload authenticated)"
	# the wrong passphrase: exit 8, the key file named, nothing written
	run --separate-stderr fmt-convert --identity r.key --passphrase-file bad.txt r.ald out.csv
	assert_failure 8
	assert_equal "$stderr" "fmt-convert: error: r.key: wrong passphrase for the X25519 secret key (or the key file was altered)"
	[ ! -e out.csv ]
	run --separate-stderr fmt-inspect --head 2 --identity r.key --passphrase-file bad.txt r.ald
	assert_failure 8
	assert_equal "$stderr" "fmt-inspect: error: r.key: wrong passphrase for the X25519 secret key (or the key file was altered)"
	# no passphrase and no terminal to ask on
	run --separate-stderr fmt-inspect --head 2 --identity r.key r.ald </dev/null
	assert_failure 2
	assert_equal "$stderr" "fmt-inspect: error: r.key: no terminal to ask for the passphrase on; use --passphrase-file FILE or --passphrase-env NAME"
	# an unencrypted key (-W, the format keygen --x25519 always wrote before) loads without one
	fmt-sign keygen -W --x25519 -p w.pub -s w.key >/dev/null
	[ "$(key_blob w.key | wc -c)" -eq 32 ]
	fmt-convert --encrypt-to w.pub in.csv w.ald
	run --separate-stderr fmt-convert --identity w.key w.ald - --to jsonl
	assert_success
	assert_output "$rows"
	run --separate-stderr fmt-inspect --head 2 --identity w.key w.ald
	assert_success
}

@test "a malformed encrypted X25519 key (truncated, too long, not base64) is exit 4, another version exit 5, before any passphrase is asked" {
	fmt-sign keygen --x25519 -p r.pub -s r.key --passphrase-file pw.txt >/dev/null
	fmt-convert --encrypt-to r.pub in.csv r.ald
	hex=$(key_blob r.key | xxd -p -c 200)
	put_key r.key "${hex:0:120}" short.key
	put_key r.key "${hex:0:8}02${hex:10}" v2.key
	put_key r.key "${hex}00" long.key
	{ sed -n 1p r.key; echo 'WDI1SwE*'; } >bad64.key; chmod 600 bad64.key
	for k in short v2 long bad64; do
		case $k in
		short) msg="short.key: an encrypted X25519 secret key holds 81 bytes, this one 60 (truncated or altered)" ;;
		v2) msg="v2.key: an encrypted X25519 secret key of version 2; this build reads version 1" ;;
		long) msg="long.key: an encrypted X25519 secret key holds 81 bytes, this one 82 (truncated or altered)" ;;
		bad64) msg="bad64.key: not an X25519 secret key file (fmt-sign keygen --x25519 makes one)" ;;
		esac
		local code=4
		[ $k != v2 ] || code=5   # UnsupportedVersion
		# no passphrase option and no terminal: the format is refused first
		run --separate-stderr fmt-convert --identity $k.key r.ald - --to jsonl </dev/null
		assert_failure $code
		assert_equal "$stderr" "fmt-convert: error: $msg"
		run --separate-stderr fmt-inspect --head 1 --identity $k.key --passphrase-file pw.txt r.ald
		assert_failure $code
		assert_equal "$stderr" "fmt-inspect: error: $msg"
	done
	# a changed byte of the encrypted key or its salt: the tag does not match (exit 8)
	put_key r.key "${hex:0:20}$(printf %02x $(( (0x${hex:20:2} + 1) % 256 )))${hex:22}" salt.key
	run --separate-stderr fmt-convert --identity salt.key --passphrase-file pw.txt r.ald - --to jsonl
	assert_failure 8
}

@test "--passphrase-file with --passphrase-env is exit 2 in every tool, with fmt-convert's message, before anything is read or written" {
	# fmt-inspect, fmt-verify, fmt-watermark and fmt-sign used the file and ignored the
	# variable (silently, whatever it held); fmt-convert alone refused the pair
	fmt-sign keygen --x25519 -p r.pub -s r.key --passphrase-file pw.txt >/dev/null
	fmt-sign keygen -p s.pub -s s.key --passphrase-file pw.txt >/dev/null
	fmt-sign keygen --watermark -s wm.key >/dev/null
	fmt-convert --encrypt-to r.pub in.csv r.ald
	export PW='wrong horse battery'
	local both="--passphrase-file pw.txt --passphrase-env PW" line tool
	while read -r line; do
		tool=${line%% *}
		run --separate-stderr $line
		assert_failure 2
		assert_equal "$stderr" "$tool: error: --passphrase-file and --passphrase-env: give one
Try '$tool --help'."
	done <<-EOF
	fmt-inspect --head 1 --identity r.key $both r.ald
	fmt-verify --identity r.key $both r.ald
	fmt-convert --identity r.key $both r.ald out.csv
	fmt-watermark extract --key wm.key --identity r.key $both r.ald
	fmt-sign sign -s s.key $both in.csv
	fmt-sign license --licensee a --sign-key s.key $both r.ald
	fmt-sign keygen -p n.pub -s n.key $both
	EOF
	[ ! -e out.csv ] && [ ! -e in.csv.minisig ] && [ ! -e n.key ] && [ ! -e n.pub ]
}

@test "--passphrase-file - for both --sign-key and --identity is exit 2 naming both (standard input is read once); one key may take it" {
	# the second key read standard input again: 'r.key: standard input (-) is named twice: as a
	# secret file and as a secret file', after the first key had consumed the passphrase
	fmt-sign keygen --x25519 -p r.pub -s r.key --passphrase-file pw.txt >/dev/null
	fmt-sign keygen -p s.pub -s s.key --passphrase-file pw.txt >/dev/null
	fmt-sign keygen --watermark -s wm.key >/dev/null
	fmt-convert --encrypt-to r.pub in.csv r.ald
	local msg="--passphrase-file - would unlock both --sign-key and --identity, but standard input can be read only once: give the passphrase in a file or with --passphrase-env" line tool
	while read -r line; do
		tool=${line%% *}
		run --separate-stderr bash -c "cat pw.txt | $line"
		assert_failure 2
		assert_equal "$stderr" "$tool: error: $msg
Try '$tool --help'."
	done <<-EOF
	fmt-convert --identity r.key --sign-key s.key --passphrase-file - r.ald out.ald
	fmt-watermark embed --key wm.key --buyer b --identity r.key --sign-key s.key --passphrase-file - r.ald out.ald
	fmt-watermark prove --key wm.key --buyer b --identity r.key --sign-key s.key --passphrase-file - r.ald
	EOF
	[ ! -e out.ald ]
	# one key: - is read once
	run --separate-stderr bash -c 'cat pw.txt | fmt-convert --identity r.key --passphrase-file - r.ald - --to csv'
	assert_success
	assert_output "$(cat in.csv)"
	run --separate-stderr bash -c 'cat pw.txt | fmt-convert -q --sign-key s.key --passphrase-file - in.csv s.ald'
	assert_success
	# both keys from one file: each reads it
	run --separate-stderr fmt-convert -q --identity r.key --sign-key s.key --passphrase-file pw.txt r.ald both.ald
	assert_success
	run --separate-stderr fmt-verify -p s.pub both.ald
	assert_success
}

# within_32m CMD...: CMD succeeds (stdout in out.txt, stderr in err.txt) with a peak RSS
# (/usr/bin/time %M) under 32 MiB (sanitizer builds: no bound).
within_32m() {
	local rc=0
	/usr/bin/time -o rss.txt -f %M "$@" >out.txt 2>err.txt || rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc: $*: $(cat err.txt)"
	echo "peak RSS $(tail -n 1 rss.txt) KiB: $*" >&3
	asan_build || [ "$(tail -n 1 rss.txt)" -lt 32768 ] || fail "peak RSS $(tail -n 1 rss.txt) KiB: $*"
}

# A copy of .ald $1 as $2 with byte $3 of its payload (from its start; negative: from its end)
# xor $4, and the CRC made again, so that only the tag can tell.
flip_payload() {
	/usr/bin/python3 - "$@" <<'PY'
import struct, sys, zlib
src, dst, at, x = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4], 0)
f = bytearray(open(src, "rb").read())
meta, pay = struct.unpack_from("<II", f, 8)
enc = 32 + meta + struct.unpack_from("<H", f, 22)[0]
start = enc + (29 if f[enc] == 0 else 45)
f[start + at if at >= 0 else start + pay + at] ^= x
body = bytes(f[:-4])
open(dst, "wb").write(body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF))
PY
}

# Issue 26: the payload was decrypted whole into memory (on the old binaries 140 MiB peak RSS for
# a 65 MB payload, 2 GiB for a 1 GB one: the plaintext and the file's pages). A payload of more
# than 8 MiB is now decrypted a MiB at a time into an unlinked temporary file in $TMPDIR, its tag
# checked at the end, and only then read from there, as an unencrypted payload is read from the
# file, pages dropped behind.
@test "issue 26: a 40 MB encrypted payload (recipient; password and STREAMING) is read by fmt-convert, fmt-inspect --head and --stats, fmt-verify with peak RSS under 32 MiB, the rows those of the unencrypted file, no temporary file left" {
	fmt-sign keygen -W --x25519 -p r.pub -s r.key >/dev/null
	{ echo id; seq 1 5000000; } >big.csv
	fmt-convert -q --compression none big.csv plain.ald
	fmt-convert -q --compression none --encrypt-to r.pub big.csv r.ald
	fmt-convert -q --compression none --chunk-rows 1000000 --encrypt-password-file pw.txt big.csv s.ald
	[ "$(layout r.ald | jq .payload_size)" -gt $((36 * 1048576)) ] || fail "the payload fits the bound: the test proves nothing"
	fmt-inspect --head 3 plain.ald >head.want
	fmt-inspect --stats plain.ald >stats.want
	mkdir tmp
	export TMPDIR=$PWD/tmp
	local keys f
	for f in r.ald s.ald; do
		keys="--identity r.key"
		[ $f = r.ald ] || keys="--password-file pw.txt"
		within_32m fmt-convert -q $keys $f got.csv
		cmp big.csv got.csv
		rm got.csv
		within_32m fmt-inspect --head 3 $keys $f
		cmp head.want out.txt
		within_32m fmt-inspect --stats $keys $f
		cmp stats.want out.txt
		within_32m fmt-verify $keys $f
		assert_equal "$(cat out.txt)" "$f: ok (ald, 5000000 rows, CRC-32 ieee, encrypted payload authenticated)"
	done
	# .ald to .ald, decrypted and encrypted again: the same rows
	within_32m fmt-convert -q --identity r.key --encrypt-password-file pw.txt r.ald again.ald
	within_32m fmt-convert -q --password-file pw.txt again.ald - --to csv
	cmp big.csv out.txt
	assert_equal "$(ls -A tmp)" ""
}

@test "issue 26: a big encrypted payload that fails (wrong password, a ciphertext or tag byte flipped, the tag cut, the file cut) is the error and exit status it was, nothing written; a TMPDIR that cannot take the plaintext is exit 3; a payload of at most 8 MiB needs none" {
	{ echo id; seq 1 2000000; } >big.csv
	fmt-convert -q --compression none --encrypt-password-file pw.txt big.csv e.ald
	pay=$(layout e.ald | jq .payload_size)
	[ "$pay" -gt $((8 * 1048576)) ] || fail "payload of $pay bytes: decrypted in memory"
	mkdir tmp out
	export TMPDIR=$PWD/tmp
	local auth="authentication failed: wrong password or key, or the encrypted payload was altered" f
	flip_payload e.ald mid.ald $((pay / 2)) 0x01
	flip_payload e.ald first.ald 0 0x80
	flip_payload e.ald tag.ald -1 0x01
	# the tag cut off: payload_size 16 less, the ciphertext's last 16 bytes read as the tag
	/usr/bin/python3 - e.ald cut-tag.ald <<'PY'
import struct, sys, zlib
f = bytearray(open(sys.argv[1], "rb").read())
pay = struct.unpack_from("<I", f, 12)[0]
struct.pack_into("<I", f, 12, pay - 16)
body = bytes(f[:-20])
open(sys.argv[2], "wb").write(body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF))
PY
	for f in e.ald mid.ald first.ald tag.ald cut-tag.ald; do
		pw=pw.txt
		[ $f != e.ald ] || pw=bad.txt
		run --separate-stderr fmt-convert --password-file $pw $f out/x.csv
		assert_failure 8
		assert_equal "$stderr" "fmt-convert: error: $f: $auth"
		run --separate-stderr fmt-convert --password-file $pw $f - --to csv
		assert_failure 8
		assert_output ""
		run --separate-stderr fmt-inspect --head 2 --password-file $pw $f
		assert_failure 8
		assert_equal "$stderr" "fmt-inspect: error: $f: $auth"
		assert_output ""
		run --separate-stderr fmt-verify --password-file $pw $f
		assert_failure 8
		assert_equal "$stderr" "fmt-verify: error: $f: $auth"
	done
	# a byte flipped and the CRC left: the CRC says so first (exit 6)
	/usr/bin/python3 -c 'import sys; f = bytearray(open("e.ald", "rb").read()); f[len(f) // 2] ^= 1; open("crc.ald", "wb").write(f)'
	run --separate-stderr fmt-convert --password-file pw.txt crc.ald out/x.csv
	assert_failure 6
	[[ "$stderr" == "fmt-convert: error: crc.ald: CRC-32 mismatch: stored "* ]] || fail "$stderr"
	# the file cut inside the payload
	head -c $(( $(stat -c %s e.ald) / 2 )) e.ald >short.ald
	run --separate-stderr fmt-convert --password-file pw.txt short.ald out/x.csv
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: short.ald: payload runs past the CRC"
	assert_equal "$(ls -A out) $(ls -A tmp)" " "
	# where the plaintext would go cannot be written: exit 3 naming it, nothing written
	TMPDIR=$PWD/none run --separate-stderr fmt-convert --password-file pw.txt e.ald out/x.csv
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: e.ald: cannot create a temporary file for the decrypted payload in $PWD/none (TMPDIR): No such file or directory"
	assert_equal "$(ls -A out)" ""
	# a payload of at most 8 MiB is decrypted in memory
	fmt-convert -q --encrypt-password-file pw.txt in.csv small.ald
	TMPDIR=$PWD/none run --separate-stderr fmt-convert --password-file pw.txt small.ald - --to csv
	assert_success
	assert_output "$(cat in.csv)"
}

# Argon2id takes 19 MiB: when they cannot be had, that is out of memory (exit 3, io, as every
# other allocation that fails), not an internal error (exit 70, which it was), both ways, and
# nothing is written. 16,000 KiB of address space starts the tool but cannot hold 19 MiB.
@test "password mode without memory for Argon2id: exit 3 naming it, encrypting and decrypting, nothing written" {
	run --separate-stderr bash -c 'ulimit -v 16000; fmt-convert --encrypt-password-file pw.txt in.csv e.ald'
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: in.csv: Argon2id: out of memory (it needs 19 MiB)"
	[ ! -e e.ald ]
	fmt-convert --encrypt-password-file pw.txt in.csv e.ald
	run --separate-stderr bash -c 'ulimit -v 16000; fmt-convert --password-file pw.txt e.ald out.csv'
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: e.ald: Argon2id: out of memory (it needs 19 MiB)"
	[ ! -e out.csv ]
}
