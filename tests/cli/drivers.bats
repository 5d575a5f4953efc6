#!/usr/bin/env bats
# The format drivers as the tools see them: probing (an .apsim whose format key sits past the
# first 4096 bytes), and lists of formats in messages coming from the registry.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	FIXTURE="$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
}

# late.apsim: the signed fixture with 5000 spaces after the header's opening brace, so the
# "format":"apsi-model" key starts past byte 5000 (JSON whitespace; digest and signature cover
# the canonical table, not the header bytes).
make_late_apsim() {
	/usr/bin/python3 - "$FIXTURE" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', d[:8])[0]
h = b'{' + b' ' * 5000 + d[9:8 + n]
open('late.apsim', 'wb').write(struct.pack('<Q', len(h)) + h + d[8 + n:])
PY
}

@test "an .apsim whose format key sits past the first 4096 bytes is probed as apsim" {
	make_late_apsim
	grep -abo '"format":"apsi-model"' late.apsim | awk -F: '$1 > 4096 { ok = 1 } END { exit !ok }'
	printf 'team secret' >secret
	run --separate-stderr fmt-verify late.apsim --secret-file secret
	assert_success
	assert_output "late.apsim: ok (apsim, 4 tensors, 1 file, 5796 bytes, hmac-sha256 signature by the shared secret)"
	run fmt-inspect --json late.apsim
	assert_success
	[ "$(printf '%s' "$output" | jq -r .format)" = apsim ]
	printf 'other secret' >wrong
	run fmt-verify late.apsim --secret-file wrong
	assert_failure 7
	# from a pipe too: the stream is read whole to find the key
	run bash -c 'cat late.apsim | fmt-inspect --json - | jq -r .format'
	assert_success
	assert_output apsim
}

@test "a stream no driver knows is refused from its first bytes, not read whole first" {
	# fmt-inspect - held all of it in memory to ask the .apsim driver for a key further on:
	# 300 MB of zeros took 297 MB, cat /dev/zero grew without end.
	run --separate-stderr bash -c 'ulimit -v 200000; head -c 300000000 /dev/zero | fmt-inspect -'
	assert_failure 4
	assert_equal "$stderr" "fmt-inspect: error: -: unrecognised format (not one of: safetensors, safetensors-index, gguf, apsim, apsim-index, apr, nk, onnx, ald, arrow, arrow-stream, jsonl, csv, parquet)"
	run --separate-stderr bash -c 'ulimit -v 200000; timeout 20 cat /dev/zero | timeout 20 fmt-verify -'
	assert_failure 4
}

@test "a stream that begins as an .apsim or safetensors header is refused from that header, not read whole" {
	# A declared header length of 5000, then '{' and 2 GB of zeros: the .apsim probe read the
	# whole stream to look for its format key further on (exit 70 under this limit, or 3), and
	# safetensors' open read it whole before its header was parsed. Now the probe keeps 8 + 5000
	# bytes, and the header is checked from them.
	local head='\x88\x13\x00\x00\x00\x00\x00\x00{'
	run --separate-stderr bash -c "$(limit_as 200000) { printf '$head'; head -c 2G /dev/zero; } | timeout 60 fmt-inspect -"
	assert_failure 4
	assert_equal "$stderr" "fmt-inspect: error: -: header is not valid JSON at byte 1: string or '}' expected"
	run --separate-stderr bash -c "$(limit_as 200000) { printf '$head'; head -c 2G /dev/zero; } | timeout 60 fmt-verify -"
	assert_failure 4
	assert_equal "$stderr" "fmt-verify: error: -: header is not valid JSON at byte 1: string or '}' expected"
}

@test "a JSON index on standard input is read up to its 64 MiB limit + 1 byte, not copied whole first (exit 4)" {
	# fmt_source_read_text took a stream whole (a copy in TMPDIR) before it checked the limit:
	# 1 GiB after an index's opening brace was copied (1 GiB of disk, seconds), or, with no
	# TMPDIR to copy it to, exit 3. Now no copy: it stops at 67108865 bytes.
	make_samples
	fmt-shard split -q --max-tensors 2 "$SAMPLES/tiny.safetensors" -o m
	local tool cmd
	for tool in fmt-inspect fmt-verify; do
		cmd="{ cat m.safetensors.index.json; head -c 1G /dev/zero; } | TMPDIR=\$PWD/none timeout 20 $tool -"
		run --separate-stderr bash -c "$cmd"
		assert_failure 4
		assert_equal "$stderr" "$tool: error: -: standard input is more than the 67108864-byte limit"
	done
	# an index within the limit on a pipe reads as the file does, and needs no TMPDIR
	run bash -c 'cat m.safetensors.index.json | TMPDIR=$PWD/none fmt-inspect --json -'
	assert_success
	assert_equal "$output" "$(fmt-inspect --json m.safetensors.index.json | sed 's/"file":"m.safetensors.index.json"/"file":"-"/')"
	run bash -c 'cat m.safetensors.index.json | TMPDIR=$PWD/none fmt-verify -'
	assert_success
	assert_output "-: ok (safetensors-index, 5 tensors, 4 files, 883 bytes)"
}

@test "an unrecognised file's message lists every registered format" {
	printf 'not a model' >junk.bin
	run --separate-stderr fmt-inspect junk.bin
	assert_failure 4
	assert_equal "$stderr" "fmt-inspect: error: junk.bin: unrecognised format (not one of: safetensors, safetensors-index, gguf, apsim, apsim-index, apr, nk, onnx, ald, arrow, arrow-stream, jsonl, csv, parquet)"
}

@test "--to names the writable formats of the registry" {
	printf 'x' >in.safetensors
	run --separate-stderr fmt-convert --to nosuch in.safetensors out.x
	assert_failure 2
	[[ "$stderr" == "fmt-convert: error: --to takes safetensors, gguf, apsim, apr, nk, ald, arrow, arrow-stream, jsonl, csv or parquet"* ]]
}

@test "signing a format without signatures names those that have them" {
	make_samples
	printf 'team secret' >secret
	fmt-convert -q "$SAMPLES/tiny.safetensors" m.gguf
	cp m.gguf before.gguf
	run --separate-stderr fmt-sign sign m.gguf --secret-file secret
	assert_failure 2
	assert_equal "$stderr" "fmt-sign: error: m.gguf: gguf files carry no signature (signed formats: apsim, apsim-index)"
	cmp m.gguf before.gguf
}

# big.safetensors: 64 F32 tensors of 8 MiB, 512 MiB (sparse: it takes no room on disk), each
# tensor beginning with a value of its own.
make_big_safetensors() {
	/usr/bin/python3 - big.safetensors <<'PY'
import json, struct, sys
n, mb = 64, 8 << 20
hdr = {f"layer.{i}.weight": {"dtype": "F32", "shape": [mb // 4096, 1024], "data_offsets": [i * mb, (i + 1) * mb]}
       for i in range(n)}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for i in range(n):
        f.seek(8 + len(h) + i * mb)
        f.write(struct.pack("<f", i + 0.5))
    f.truncate(8 + len(h) + n * mb)
PY
}

@test "a 512 MiB safetensors piped in under a 200 MB address-space limit: inspect, verify, convert and split give what the file gives" {
	# A stream whose format needs random access (safetensors, .apsim, GGUF) was read whole into
	# memory once its header was valid: each of these was exit 3 'out of memory reading -'. It
	# now goes to an unlinked temporary file in TMPDIR (left empty) and is read from there.
	asan_build && skip "sanitizer build: address-space limit not applicable"
	make_big_safetensors
	mkdir tmp s-pipe s-file
	export TMPDIR=$PWD/tmp
	run --separate-stderr bash -c 'ulimit -v 200000; cat big.safetensors | fmt-inspect --json -'
	assert_success
	piped=$output
	run --separate-stderr bash -c 'ulimit -v 200000; fmt-inspect --json big.safetensors'
	assert_success
	assert_equal "$(jq -c 'del(.file)' <<<"$piped")" "$(jq -c 'del(.file)' <<<"$output")"
	[ "$(jq -r .file <<<"$piped")" = - ]
	run --separate-stderr bash -c 'ulimit -v 200000; cat big.safetensors | fmt-verify -'
	assert_success
	assert_output "-: ok (safetensors, 64 tensors, 1 file, 536877280 bytes)"
	run --separate-stderr bash -c 'ulimit -v 200000; cat big.safetensors | fmt-convert -q - piped.gguf'
	assert_success
	fmt-convert -q big.safetensors file.gguf
	cmp piped.gguf file.gguf
	run --separate-stderr bash -c 'ulimit -v 200000; cat big.safetensors | fmt-shard split -q - --max-size 200MB -o s-pipe/m'
	assert_success
	fmt-shard split -q big.safetensors --max-size 200MB -o s-file/m
	diff -r s-pipe s-file
	assert_equal "$(ls -A tmp)" ""
}

@test "a piped model copied to TMPDIR: a TMPDIR that cannot take it is exit 3 naming it, and nothing is read whole" {
	make_big_safetensors
	mkdir tmp
	make_late_apsim    # 5796 bytes: more than the 4096 a stream keeps in memory
	run --separate-stderr bash -c 'cat late.apsim | TMPDIR=$PWD/none fmt-inspect -'
	assert_failure 3
	assert_equal "$stderr" "fmt-inspect: error: -: cannot create a copy of standard input in $PWD/none (TMPDIR): No such file or directory"
	# a full disk (here the file size limit: the same failed write)
	run --separate-stderr bash -c "trap '' XFSZ; ulimit -f 10240; cat big.safetensors | TMPDIR=\$PWD/tmp fmt-verify -"
	assert_failure 3
	assert_equal "$stderr" "fmt-verify: error: -: cannot write a copy of standard input in $PWD/tmp (TMPDIR): File too large"
	run --separate-stderr bash -c "trap '' XFSZ; ulimit -f 10240; cat big.safetensors | TMPDIR=\$PWD/tmp fmt-convert - out.gguf"
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: -: cannot write a copy of standard input in $PWD/tmp (TMPDIR): File too large"
	[ ! -e out.gguf ]
	assert_equal "$(ls -A tmp)" ""
	# what no driver knows is refused from its first bytes, before any copy
	run --separate-stderr bash -c 'head -c 100000 /dev/zero | TMPDIR=$PWD/none fmt-inspect -'
	assert_failure 4
}
