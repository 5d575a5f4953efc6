#!/usr/bin/env bats
# fmt-verify with Apsi checkpoints (specs/apsim.md §5-§7): the key options on the worked example,
# signature refusals, shard sets (threads, foreign and missing shards) and fmt-shard bundles.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	# Every test has its own configuration directory: never the user's real key.
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	unset FMT_TEAM_SECRET
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" fixture.apsim
	printf 'team secret\n' >team.secret
	printf 'team secreT\n' >wrong.secret
}

# make_set DIR SEED: a 4-shard Apsi set DIR/model.apsim.index.json of 5 F32 tensors whose
# values depend on SEED (the same names, shapes and shard layout for every seed).
make_set() {
	local dir=$1 seed=$2
	/usr/bin/python3 - "$dir.safetensors" "$seed" <<'PY'
import json, struct, sys
import numpy as np
rng = np.random.default_rng(int(sys.argv[2]))
shapes = {"a.weight": (4, 64), "b.weight": (2, 96), "c.norm": (64,), "d.weight": (2, 40), "e.weight": (3, 32)}
hdr, off, data = {}, 0, b""
for name, shape in sorted(shapes.items()):
    b = rng.standard_normal(shape).astype(np.float32).tobytes()
    hdr[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(b)]}
    off += len(b)
    data += b
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
	mkdir -p "$dir"
	fmt-convert -q --shard 800 "$dir.safetensors" "$dir/model.apsim"
	[ "$(ls "$dir" | wc -l)" -eq 5 ] || fail "expected 4 shards and an index in $dir: $(ls "$dir")"
}

# The byte offset of the data of tar member NAME in an uncompressed tar FILE.
tar_member_offset() {
	/usr/bin/python3 -c 'import sys, tarfile; print(tarfile.open(sys.argv[1]).getmember(sys.argv[2]).offset_data)' "$1" "$2"
}

@test "the fixture with --secret-file holding the team secret: ok" {
	run --separate-stderr fmt-verify --secret-file team.secret fixture.apsim
	assert_success
	assert_output "fixture.apsim: ok (apsim, 4 tensors, 1 file, 796 bytes, hmac-sha256 signature by the shared secret)"
	[ -z "$stderr" ]
	run fmt-verify --key-secret-file team.secret fixture.apsim
	assert_success
	# a secret file without a final newline is the same secret
	printf 'team secret' >nonl.secret
	run fmt-verify --secret-file nonl.secret fixture.apsim
	assert_success
	run fmt-verify --secret-file <(printf 'team secret\n') fixture.apsim
	assert_success
}

@test "the fixture with --secret-env: ok; JSON ok object" {
	export APSI_TEAM='team secret'
	run --separate-stderr fmt-verify --secret-env APSI_TEAM -j fixture.apsim
	assert_success
	assert_output '{"file":"fixture.apsim","ok":true,"format":"apsim","files":1,"tensors":4,"bytes":796,"signatures":[{"kind":"hmac-sha256","key_id":"shared","trusted":true}]}'
	[ -z "$stderr" ]
}

@test "the fixture with a wrong secret: exit 7 with the message, nothing on stdout" {
	run --separate-stderr fmt-verify --secret-file wrong.secret fixture.apsim
	assert_failure 7
	[ -z "$output" ]
	assert_equal "$stderr" "fmt-verify: error: fixture.apsim: signature does not match (key 'shared'): changed after signing, or signed with another key"
	run --separate-stderr fmt-verify --secret-file wrong.secret -j fixture.apsim
	assert_failure 7
	assert_equal "$(jq -c '[.ok, .error, .exit]' <<<"$output")" '[false,"SignatureInvalid",7]'
}

@test "--hmac-key on a file signed with the shared secret: exit 7, key id mismatch" {
	run fmt-sign keygen --hmac
	assert_success
	id=$(sha256sum "$XDG_CONFIG_HOME/fmtkit/hmac.key" | cut -c1-16)
	run --separate-stderr fmt-verify --hmac-key fixture.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: fixture.apsim: signed with key 'shared', but the key given is '$id'"
}

@test "--hmac-key without a key file: exit 3 (cannot open, as a missing ed25519.key) naming fmt-sign keygen --hmac" {
	# it was exit 2 (usage) where a missing default ed25519.key is 3
	local nokey="error: $XDG_CONFIG_HOME/fmtkit/hmac.key: no HMAC key here; create one with \`fmt-sign keygen --hmac\`"
	run --separate-stderr fmt-verify --hmac-key fixture.apsim
	assert_failure 3
	assert_equal "$stderr" "fmt-verify: $nokey"
	run --separate-stderr fmt-sign sign fixture.apsim
	assert_failure 3
	assert_equal "$stderr" "fmt-sign: $nokey"
	run --separate-stderr fmt-verify -j --hmac-key fixture.apsim
	assert_failure 3
	assert_equal "$(jq -r '.error + " " + (.exit | tostring)' <<<"$stderr")" "IoError 3"
	run --separate-stderr fmt-sign sign --embed fixture.apsim
	assert_failure 3
	assert_equal "$stderr" "fmt-sign: error: $XDG_CONFIG_HOME/fmtkit/ed25519.key: cannot open the secret key: No such file or directory"
}

@test "an unsigned .apsim with a key: exit 7 'not signed'; without a key: ok" {
	fmt-convert -q fixture.apsim unsigned.apsim
	run fmt-inspect --json unsigned.apsim
	assert_equal "$(jq .format_info.signed <<<"$output")" false
	run --separate-stderr fmt-verify --secret-file team.secret unsigned.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: unsigned.apsim: not signed (a key was given, but there is no signature)"
	run fmt-verify unsigned.apsim
	assert_success
}

@test "a safetensors or GGUF file with a key: exit 7, they carry no signature" {
	fmt-convert -q fixture.apsim plain.safetensors
	fmt-convert -q fixture.apsim plain.gguf
	run --separate-stderr fmt-verify --secret-file team.secret plain.safetensors
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: plain.safetensors: a key was given but safetensors files carry no signature"
	run --separate-stderr fmt-verify --secret-file team.secret plain.gguf
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: plain.gguf: a key was given but gguf files carry no signature"
	# several files: every one reported, the highest status
	run --separate-stderr fmt-verify --secret-file team.secret fixture.apsim plain.safetensors
	assert_failure 7
	assert_output "fixture.apsim: ok (apsim, 4 tensors, 1 file, 796 bytes, hmac-sha256 signature by the shared secret)"
}

@test "two key options: usage error (exit 2)" {
	export APSI_TEAM='team secret'
	run --separate-stderr fmt-verify --secret-file team.secret --secret-env APSI_TEAM fixture.apsim
	assert_failure 2
	assert_equal "$stderr" "fmt-verify: error: give only one of --hmac-key, --secret-file, --secret-env, --secret-prompt"
	run --separate-stderr fmt-verify --hmac-key --secret-file team.secret fixture.apsim
	assert_failure 2
	[ -z "$output" ]
	[[ "$stderr" == *"give only one of"* ]] || fail "stderr: $stderr"
}

@test "-T 1 and -T 2 on a 4-shard set give the same result, good or damaged" {
	make_set set 1
	total=$(cat set/* | wc -c)
	for t in 1 2; do
		run --separate-stderr fmt-verify -T "$t" set/model.apsim.index.json
		assert_success
		assert_output "set/model.apsim.index.json: ok (apsim-index, 5 tensors, 5 files, $total bytes)"
		run fmt-verify --threads "$t" -j set/model.apsim.index.json
		assert_success
		assert_output "{\"file\":\"set/model.apsim.index.json\",\"ok\":true,\"format\":\"apsim-index\",\"files\":5,\"tensors\":5,\"bytes\":$total}"
	done
	# a byte of shard 3 changed: the same failure with either thread count
	f=set/model-00003-of-00004.apsim
	printf '\x00' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 1)) conv=notrunc 2>/dev/null
	run --separate-stderr fmt-verify -T 1 set/model.apsim.index.json
	assert_failure 6
	one=$stderr
	[[ "$one" == *"model-00003-of-00004.apsim"*"sha256 mismatch"* ]] || fail "stderr: $one"
	run --separate-stderr fmt-verify -T 2 set/model.apsim.index.json
	assert_failure 6
	assert_equal "$stderr" "$one"
}

@test "a shard swapped in from another checkpoint: exit 6" {
	make_set set 1
	make_set other 2
	cp other/model-00002-of-00004.apsim set/model-00002-of-00004.apsim
	# the shard itself is a valid .apsim
	run fmt-verify set/model-00002-of-00004.apsim
	assert_success
	run --separate-stderr fmt-verify set/model.apsim.index.json
	assert_failure 6
	[ -z "$output" ]
	[[ "$stderr" == "fmt-verify: error: "*"model-00002-of-00004.apsim"*"another checkpoint"* ]] || fail "stderr: $stderr"
	run --separate-stderr fmt-verify -j set/model.apsim.index.json
	assert_failure 6
	assert_equal "$(jq -c '[.ok, .error, .exit]' <<<"$output")" '[false,"ChecksumMismatch",6]'
	[[ "$(jq -r .message <<<"$output")" == "shard 'model-00002-of-00004.apsim' (2/4) has sha256 "*", but the index records "* ]] ||
		fail "$output"
}

@test "a missing shard: exit 9" {
	make_set set 1
	rm set/model-00004-of-00004.apsim
	run --separate-stderr fmt-verify set/model.apsim.index.json
	assert_failure 9
	[ -z "$output" ]
	[[ "$stderr" == *"model-00004-of-00004.apsim"*"does not exist"* ]] || fail "stderr: $stderr"
}

@test "an index of 50,000 shards is read in linear time (each weight_map file among the shards)" {
	# Each weight_map entry's file was looked for among all the shard_sha256 names: this 20 MB
	# index took 8 s of CPU before its first shard was found missing. Indexed now: 0.7 s.
	/usr/bin/python3 - <<'PY'
import json
n, pre = 50000, "s" * 150
files = ["%s-%06d.apsim" % (pre, i) for i in range(n)]
ix = {"metadata": {"format": "apsi-model", "total_size": 0, "shard_sha256": {f: "0" * 64 for f in files}},
      "weight_map": {"t%d" % i: files[i] for i in range(n)}}
open("model.apsim.index.json", "w").write(json.dumps(ix))
PY
	s=$(printf 's%.0s' {1..150})-000000.apsim
	run_cpu_bounded 3 fmt-verify model.apsim.index.json
	assert_failure 9
	assert_equal "$stderr" "fmt-verify: error: $s: shard '$s' named in the index does not exist ($s)"
}

@test "a set of 60,000 tensors with one left out of weight_map is refused in linear time" {
	# Each tensor was looked for among all the weight_map entries to name the one left out:
	# 10.6 s of CPU. Now the entries found mark their tensors: 0.6 s, the same tensor named.
	/usr/bin/python3 - <<'PY'
import json, struct
n, pre = 60000, "x" * 150
hdr = {"%s%06d" % (pre, i): {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open("s.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + struct.pack("<f", 1.0) * n)
PY
	mkdir set
	fmt-convert -q --shard 120KB s.safetensors set/m.apsim
	/usr/bin/python3 - set/m.apsim.index.json <<'PY'
import json, sys
ix = json.load(open(sys.argv[1]))
del ix["weight_map"][max(ix["weight_map"])]
json.dump(ix, open(sys.argv[1], "w"))
PY
	run_cpu_bounded 3 fmt-verify set/m.apsim.index.json
	assert_failure 9
	assert_equal "$stderr" "fmt-verify: error: set/m.apsim.index.json: tensor '$(printf 'x%.0s' {1..150})059999' of a shard is not listed in weight_map"
}

@test "a set of 40,000 compressed tensors with one name in two shards is refused in linear time" {
	# The name given twice turned every later look-up by name into a scan of all the tensors
	# (the index said it could not tell): reading the second shard took 10 s of CPU before the
	# set's check named the tensor. The index keeps each name's first place now: 1.2 s.
	many_small_tensors many.safetensors 40000
	fmt-convert -q --dtype q8_0 many.safetensors many.gguf
	mkdir set
	fmt-convert -q --shard 700000 many.gguf set/m.apsim
	# shard 1's t1000 renamed t2750, a tensor of shard 2 (the same length: offsets hold)
	/usr/bin/python3 - set/m-00001-of-00003.apsim set/m-00002-of-00003.apsim <<'PY'
import sys
raw = open(sys.argv[1], "rb").read()
assert open(sys.argv[2], "rb").read().count(b'"t2750"') == 1
for a, b in ((b't1000\\"', b't2750\\"'), (b'"t1000__qscale"', b'"t2750__qscale"'), (b'"t1000"', b'"t2750"')):
    assert raw.count(a) == 1, a
    raw = raw.replace(a, b)
open(sys.argv[1], "wb").write(raw)
PY
	run_cpu_bounded 5 fmt-verify set/m.apsim.index.json
	assert_failure 9
	assert_equal "$stderr" "fmt-verify: error: set/m.apsim.index.json: tensor 't2750' is in shards 'm-00001-of-00003.apsim' and 'm-00002-of-00003.apsim'"
}

@test "a signed set: ok with the secret, exit 7 with another, exit 7 with a key when unsigned" {
	make_set set 1
	run --separate-stderr fmt-verify --secret-file team.secret set/model.apsim.index.json
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: set/model.apsim.index.json: not signed (a key was given, but there is no signature)"
	run fmt-sign sign --secret-file team.secret set/model.apsim.index.json
	assert_success
	run fmt-verify --secret-file team.secret set/model.apsim.index.json
	assert_success
	run --separate-stderr fmt-verify --secret-file wrong.secret set/model.apsim.index.json
	assert_failure 7
	[[ "$stderr" == *"signature does not match"* ]] || fail "stderr: $stderr"
}

@test "bundles: fmt-verify of the .tar and .tar.zst of a set, exact ok line and JSON" {
	make_set set 1
	total=$(cat set/* | wc -c)
	run fmt-shard pack set/model.apsim.index.json -o b.tar
	assert_success
	run fmt-shard pack set/model.apsim.index.json -o b.tar.zst
	assert_success
	run --separate-stderr fmt-verify b.tar b.tar.zst
	assert_success
	[ -z "$stderr" ]
	assert_equal "$output" "b.tar: ok (bundle of apsim-index, 5 files, $total bytes)
b.tar.zst: ok (bundle of apsim-index, 5 files, $total bytes, zstd)"
	run fmt-verify -j b.tar b.tar.zst
	assert_success
	assert_equal "$output" "{\"file\":\"b.tar\",\"ok\":true,\"format\":\"bundle\",\"contains\":\"apsim-index\",\"files\":5,\"bytes\":$total,\"zstd\":false}
{\"file\":\"b.tar.zst\",\"ok\":true,\"format\":\"bundle\",\"contains\":\"apsim-index\",\"files\":5,\"bytes\":$total,\"zstd\":true}"
}

@test "bundles: a flipped byte inside a member is exit 6 naming the member" {
	make_set set 1
	run fmt-shard pack set/model.apsim.index.json -o b.tar
	assert_success
	off=$(tar_member_offset b.tar model-00002-of-00004.apsim)
	cp b.tar flipped.tar
	byte=$(xxd -p -s $((off + 500)) -l 1 flipped.tar)
	printf "\\x$(printf '%02x' $((0x$byte ^ 1)))" | dd of=flipped.tar bs=1 seek=$((off + 500)) conv=notrunc 2>/dev/null
	! cmp -s b.tar flipped.tar
	run --separate-stderr fmt-verify flipped.tar
	assert_failure 6
	[ -z "$output" ]
	[[ "$stderr" == "fmt-verify: error: flipped.tar: member 'model-00002-of-00004.apsim': SHA-256 "*" differs from the manifest's "* ]] ||
		fail "stderr: $stderr"
	run --separate-stderr fmt-verify -j flipped.tar
	assert_failure 6
	assert_equal "$(jq -c '[.file, .ok, .error, .exit]' <<<"$output")" '["flipped.tar",false,"ChecksumMismatch",6]'
}

@test "bundles: a key given turns signature checking on (unsigned set in the bundle: exit 7)" {
	make_set set 1
	run fmt-shard pack set/model.apsim.index.json -o b.tar
	assert_success
	# the set itself is refused with the key ...
	run fmt-verify --secret-file team.secret set/model.apsim.index.json
	assert_failure 7
	# ... and so must be its bundle (specs/apsim.md §1: giving a key always turns verification on)
	run --separate-stderr fmt-verify --secret-file team.secret b.tar
	[ "$status" -eq 7 ] || fail "exit $status, expected 7 (unsigned set in a bundle, key given); stdout: $output"
	[[ "$stderr" == *"b.tar (member model.apsim.index.json): not signed"* ]] || fail "stderr: $stderr"
}

@test "bundles: a signed set checks out with the right key, fails with another, leaves no temporary files" {
	make_set set 1
	fmt-sign sign --secret-file team.secret set/model.apsim.index.json
	fmt-shard pack set/model.apsim.index.json -o b.tar.zst
	mkdir tmp
	TMPDIR=$PWD/tmp run fmt-verify --secret-file team.secret b.tar.zst
	assert_success
	assert_output "b.tar.zst: ok (bundle of apsim-index, 5 files, $(stat -c %s set/* | awk '{s += $1} END {print s}') bytes, zstd)"
	[ -z "$(ls -A tmp)" ]
	printf 'another secret\n' > other.secret
	TMPDIR=$PWD/tmp run fmt-verify --secret-file other.secret b.tar.zst
	assert_failure 7
	[ -z "$(ls -A tmp)" ]
}

@test "--quiet: nothing on stdout, the status tells; failures still on stderr" {
	make_set set 1
	run fmt-shard pack set/model.apsim.index.json -o b.tar.zst
	assert_success
	run --separate-stderr fmt-verify -q --secret-file team.secret fixture.apsim set/model.apsim.index.json b.tar.zst
	[ -z "$output" ]
	assert_failure 7
	[[ "$stderr" == *"set/model.apsim.index.json: not signed"* ]] || fail "stderr: $stderr"
	run --separate-stderr fmt-verify -q fixture.apsim b.tar.zst
	assert_success
	[ -z "$output" ] && [ -z "$stderr" ]
	run --separate-stderr fmt-verify -q -j --secret-file wrong.secret fixture.apsim
	assert_failure 7
	[ -z "$output" ]
	[ -n "$stderr" ]
}
