#!/usr/bin/env bats
# fmt-watermark's spread-spectrum scheme for models, fmtkit-ss/2 (man/fmtkit-watermark.7): one
# marked model per file (setup_file), then every attack class — F16/BF16, Q8_0/Q4_0/Q4_K, noise,
# scaling, pruning, half the tensors, renaming and reordering, format conversion — with exact
# verdicts and exit statuses; unmarked models are never accused; the old schemes' files
# (fmtkit-ss/1, fmtkit-wm/1) still extract and prove; --registry and signed evidence; usage errors.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	mkdir "$BATS_FILE_TMPDIR/inputs"
	cd "$BATS_FILE_TMPDIR/inputs"
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	# 4 matrices of 128 x 1024 (524288 weights) and a norm vector: a small model, marked at
	# --strength 0.03 (0.01 is the default, for models of millions of weights)
	/usr/bin/python3 - <<'PY'
import json, struct
import numpy as np
def write(path, ts):
    hdr, off, blob = {}, 0, []
    for name, a in ts:
        hdr[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blob.append(a.astype("<f4").tobytes())
    text = json.dumps(hdr).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blob))
rng = np.random.default_rng(3)
write("m.safetensors", [("layers.%d.weight" % i, rng.normal(0, 0.02, (128, 1024)).astype(np.float32)) for i in range(4)]
      + [("norm.weight", (1 + rng.normal(0, 0.01, 1024)).astype(np.float32))])
rng = np.random.default_rng(4)
write("clean.safetensors", [("w.%d" % i, rng.normal(0, 1, (256, 512)).astype(np.float32)) for i in range(3)])
PY
	fmt-watermark embed -q --key seller.key --buyer alice --strength 0.03 --registry buyers.jsonl \
		m.safetensors marked.safetensors
	fmt-watermark embed -q --key seller.key --buyer bob --strength 0.03 --registry buyers.jsonl \
		m.safetensors bob.safetensors
	# alice's payload as the registry has it, read once for every test
	ALICE=$(jq -r 'select(.buyer == "alice") | .payload' buyers.jsonl)
	export ALICE
}

setup() {
	cd "$BATS_TEST_TMPDIR"
	cp -p "$BATS_FILE_TMPDIR"/inputs/* .
}

# FILE carries alice's payload (all 64 bits) and prove says match (exit 0) with p below 1e-12.
alice_found() {
	run fmt-watermark extract -j --key seller.key "$1"
	assert_success
	[ "$(echo "$output" | jq -r '.scheme, .valid, .payload')" = "$(printf 'fmtkit-ss/2\ntrue\n%s' "$ALICE")" ] ||
		fail "$1: $(echo "$output" | jq -c '[.valid, .payload]'), want $ALICE"
	run fmt-watermark prove -j --key seller.key --buyer alice "$1"
	assert_success
	[ "$(echo "$output" | jq -r '.verdict, .p_value < 1e-12')" = "$(printf 'match\ntrue')" ] ||
		fail "$1: prove $(echo "$output" | jq -c '[.verdict, .p_value]')"
}

# Apply a numpy expression to every tensor of IN (as a) and write OUT; $2 can use rng and i.
numpy_attack() {
	/usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
import numpy as np
src, expr, dst = sys.argv[1:]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
rng = np.random.default_rng(9)
out = []
for i, (name, h) in enumerate(sorted(hdr.items(), key=lambda kv: kv[1]["data_offsets"][0])):
    b, e = h["data_offsets"]
    a = np.frombuffer(raw[8 + n + b:8 + n + e], "<f4").reshape(h["shape"]).copy()
    r = eval(expr)
    if r is not None:
        out.append((r[0], np.ascontiguousarray(r[1], dtype="<f4")))
hdr, off, blob = {}, 0, []
for name, a in out:
    hdr[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
    blob.append(a.tobytes())
text = json.dumps(hdr).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blob))
PY
}

@test "embed: fmtkit-ss/2 is the default for models; every tensor changes by 3 % of its std (RMS) at --strength 0.03" {
	run fmt-watermark embed -j --key seller.key --buyer alice --strength 0.03 m.safetensors again.safetensors
	assert_success
	[ "$(echo "$output" | jq -r '.scheme, .strength, .payload')" = "$(printf 'fmtkit-ss/2\n0.03\n%s' "$ALICE")" ]
	# one run of 512 weights in each group of 65536 changes (the norm vector is 2 runs, 1 group)
	[ "$(echo "$output" | jq -c '[.tensors[] | .marked]')" = '[1024,1024,1024,1024,512]' ]
	# 3 % of the tensor's std less 2^-15 of it (the budget's slack): each group's own spread sets
	# its run's amplitude
	[ "$(echo "$output" | jq -c '[.tensors[] | (.rms_rel_change * 100000 | round)]')" = '[3000,3000,3000,3000,2999]' ]
	[ "$(echo "$output" | jq -r '.rms_rel_change_max <= 0.03')" = true ]
	cmp again.safetensors marked.safetensors
	# the default strength: at most 1 % of each tensor's std, in the text report too
	run fmt-watermark embed --key seller.key --buyer alice m.safetensors default.safetensors
	assert_success
	assert_line --index 0 "m.safetensors -> default.safetensors (safetensors): buyer alice (hash ${ALICE:0:12}), payload $ALICE, scheme fmtkit-ss/2, strength 0.01"
	assert_line --index 1 --regexp '^  tensor +dtype +values +marked +rms/std +mean_rel +std_rel$'
	assert_line --index 2 --regexp '^  layers\.0\.weight +F32 +131072 +1024 +9\.999e-03 '
	assert_line --index 7 "total: 4608 of 525312 values marked in 5 tensors; RMS change at most 1.000e-02 of a tensor's std"
	# -T does not change a byte
	fmt-watermark embed -q -T 1 --key seller.key --buyer alice --strength 0.03 m.safetensors t1.safetensors
	cmp t1.safetensors marked.safetensors
}

@test "embed: at most 1 % of each tensor's std (RMS) whatever its values: Student-t 1-3, one huge outlier, mostly zeros, a constant, NaN and inf" {
	/usr/bin/python3 - <<'PY'
import json, struct
import numpy as np
rng = np.random.default_rng(21)
n = 70000   # a group and a part of one: the tail group is small
out = rng.normal(0, 0.02, n)
out[12345] = 1e4
sparse = np.zeros(n)
sparse[rng.choice(n, n // 100, replace=False)] = rng.normal(0, 1, n // 100)
odd = rng.normal(3, 1, n)
odd[::997] = np.nan
odd[5::1999] = np.inf
odd[7::2999] = -np.inf
ts = [("t1", rng.standard_t(1, n)), ("t2", rng.standard_t(2, n)), ("t3", 0.02 * rng.standard_t(3, n)),
      ("outlier", out), ("sparse", sparse), ("constant", np.full(n, 0.25)), ("offset", 1000 + rng.normal(0, 1e-3, n)),
      ("nonfinite", odd)]
hdr, off, blob = {}, 0, []
for name, a in ts:
    a = a.astype("<f4")
    hdr[name] = {"dtype": "F32", "shape": [a.size], "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
    blob.append(a.tobytes())
text = json.dumps(hdr).encode()
text += b" " * (-len(text) % 8)
open("heavy.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blob))
PY
	run fmt-watermark embed -j --key seller.key --buyer alice heavy.safetensors heavy-marked.safetensors
	assert_success
	echo "$output" | jq -c '[.tensors[] | {name, marked, rms_rel_change}]' >report.json
	# numpy measures each tensor's RMS change over its std (finite values, float64) and checks
	# the report: at most 1 %, the constant tensor untouched, NaN and inf kept bit for bit
	run /usr/bin/python3 - <<'PY'
import json, struct
import numpy as np
def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    return {k: np.frombuffer(raw[8 + n + h["data_offsets"][0]:8 + n + h["data_offsets"][1]], "<f4")
            for k, h in hdr.items()}
a, b = read("heavy.safetensors"), read("heavy-marked.safetensors")
rep = {t["name"]: t for t in json.load(open("report.json"))}
for name in ["t1", "t2", "t3", "outlier", "sparse", "constant", "offset", "nonfinite"]:
    x, y = a[name].astype(np.float64), b[name].astype(np.float64)
    fin = np.isfinite(x)
    assert (a[name].view("<u4")[~fin] == b[name].view("<u4")[~fin]).all(), name
    changed = int((x[fin] != y[fin]).sum())
    std = x[fin].std()
    ratio = np.sqrt(((y[fin] - x[fin]) ** 2).mean()) / std if std > 0 else 0.0
    assert ratio <= 0.01, (name, ratio)
    assert changed == rep[name]["marked"], (name, changed, rep[name])
    assert abs(rep[name]["rms_rel_change"] - ratio) <= 1e-4 * 0.01, (name, ratio, rep[name])
    print(name, changed, "%.5f" % (100 * ratio))
PY
	assert_success
	# 1 % less the budget's slack; the offset tensor's changes of a few float32 steps at 1000 lose
	# more to rounding toward the original, and its small tail group's are below one step
	assert_output "t1 1024 0.99995
t2 1024 0.99995
t3 1024 0.99995
outlier 1024 0.99995
sparse 1024 0.99995
constant 0 0.00000
offset 512 0.94587
nonfinite 1021 0.99995"
}

@test "extract and prove the marked model; another buyer, the unmarked model and another key: no match, exit 1" {
	alice_found marked.safetensors
	# the sums are added in one order whatever -T is: the same scores to the last digit
	[ "$(fmt-watermark extract -j -T 1 --key seller.key marked.safetensors)" = \
	  "$(fmt-watermark extract -j -T 3 --key seller.key marked.safetensors)" ]
	run fmt-watermark extract --key seller.key --registry buyers.jsonl marked.safetensors
	assert_success
	assert_line --index 0 "marked.safetensors: buyer hash ${ALICE:0:12}, buyer alice (payload $ALICE, CRC ok)"
	run fmt-watermark prove --key seller.key --buyer alice marked.safetensors
	assert_success
	assert_line --index 0 "marked.safetensors: match: buyer alice (hash ${ALICE:0:12})"
	assert_line --index 2 "  p = 3.553e-15, confidence 1.000000000000"
	run fmt-watermark prove --key seller.key --buyer alice bob.safetensors
	assert_failure 1
	assert_line --index 0 --partial "bob.safetensors: no match: buyer alice"
	run fmt-watermark extract --key seller.key --registry buyers.jsonl bob.safetensors
	assert_success
	assert_line --index 0 --partial ", buyer bob ("
	for f in m.safetensors clean.safetensors; do
		run fmt-watermark prove -j --key seller.key --buyer alice "$f"
		assert_failure 1
		[ "$(echo "$output" | jq -r '.verdict, .p_value > 1e-3')" = "$(printf 'no match\ntrue')" ]
		run fmt-watermark extract --key seller.key "$f"
		assert_failure 1
		assert_line --index 0 --partial "$f: no valid watermark (fmtkit-ss/2: "
	done
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(1, 33)))' >other.key
	chmod 600 other.key
	run fmt-watermark prove --key other.key --buyer alice marked.safetensors
	assert_failure 1
	# keyless detect looks for fmtkit-wm/1's lattice: the spread-spectrum mark is invisible to it
	run fmt-watermark detect marked.safetensors
	assert_failure 1
	assert_output --partial "marked.safetensors: no watermark detected"
}

@test "extract on a model too small for it (1.2 M weights): exit 1 says so and points at prove, and at the buyer the registry names for the 6 hash bytes" {
	# extract found no watermark in acme's copy while prove matched, and said only "no valid
	# watermark (fmtkit-ss/2: 0 of 8 bytes tied, CRC mismatch)": the CRC bytes, at half the
	# amplitude, are the first to fail on a small model (README's table)
	/usr/bin/python3 - <<'PY'
import json, struct
import numpy as np
rng = np.random.default_rng(11)
shapes = [("l0.w", (512, 1024)), ("l1.w", (512, 512)), ("l2.w", (256, 1024)), ("l3.w", (512, 256)), ("l4.w", (256, 256))]
hdr, off, blob = {}, 0, b""
for name, sh in shapes:
    a = rng.normal(0, 0.02, sh).astype("<f4")
    hdr[name] = {"dtype": "F32", "shape": list(sh), "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
    blob += a.tobytes()
t = json.dumps(hdr).encode()
t += b" " * (-len(t) % 8)
open("small.safetensors", "wb").write(struct.pack("<Q", len(t)) + t + blob)
PY
	fmt-watermark embed -q --key seller.key --buyer acme --registry small.jsonl small.safetensors acme.safetensors
	run fmt-watermark prove --key seller.key --buyer acme acme.safetensors
	assert_success
	run fmt-watermark extract --key seller.key --registry small.jsonl acme.safetensors
	assert_failure 1
	assert_output "acme.safetensors: no valid watermark (fmtkit-ss/2: 0 of 8 bytes tied, CRC mismatch)
  fmtkit-ss/2: 9728 values in 5 tensors; byte scores min 5.4, mean 7.1 (runner-up max 6.2)
  a model this small may be below extract's reach (9728 values at the mark's places; copies of 10 M weights, about 78000, always decoded in tests): the 2 CRC bytes take half the amplitude; prove --buyer ID tests one buyer without them
  the 6 hash bytes decode as 9004f2d8b9c7, buyer acme in the registry, not confirmed by the CRC: check with prove --buyer acme"
	run fmt-watermark extract -j --key seller.key --registry small.jsonl acme.safetensors
	assert_failure 1
	[ "$(echo "$output" | jq -c '[.valid, .buyer_hash_prefix, .buyer, .registry_lead]')" = '[false,null,null,"acme"]' ]
	# the unmarked model: the same hint, no lead
	run fmt-watermark extract --key seller.key --registry small.jsonl small.safetensors
	assert_failure 1
	assert_line --index 2 --partial "  a model this small may be below extract's reach (9728 values"
	refute_output --partial "in the registry"
	# a payload that decodes gets no hint (this file's model, as small, marked at --strength 0.03)
	run fmt-watermark extract --key seller.key marked.safetensors
	assert_success
	refute_output --partial "below extract's reach"
}

@test "F16 and BF16 round trips, and the F16 GGUF itself" {
	for t in f16 bf16; do
		fmt-convert --dtype "$t" marked.safetensors "$t.safetensors"
		fmt-convert --dtype f32 "$t.safetensors" "$t-back.safetensors"
		alice_found "$t-back.safetensors"
		alice_found "$t.safetensors"
	done
	fmt-convert marked.safetensors half.gguf   # GGUF's default: F16
	alice_found half.gguf
}

@test "Q8_0, Q4_0 and Q4_K round trips through GGUF, and the quantized GGUF itself" {
	for q in q8_0 q4_0 q4_k; do
		fmt-convert --dtype "$q" marked.safetensors "$q.gguf"
		fmt-convert --dtype f32 "$q.gguf" "$q.safetensors"
		alice_found "$q.safetensors"
	done
	alice_found q4_k.gguf
}

@test "noise of 1e-2 x the std, scaling by 0.5 and 2, pruning the 50 % smallest, and two at once" {
	numpy_attack marked.safetensors '(name, a + rng.normal(0, 1e-2 * a.std(), a.shape))' noisy.safetensors
	alice_found noisy.safetensors
	numpy_attack marked.safetensors '(name, a * (0.5 if i % 2 else 2.0))' scaled.safetensors
	alice_found scaled.safetensors
	numpy_attack marked.safetensors '(name, np.where(np.abs(a) < np.median(np.abs(a)), 0, a))' pruned.safetensors
	alice_found pruned.safetensors
	fmt-convert --dtype q4_0 pruned.safetensors pq.gguf
	alice_found pq.gguf
}

@test "half of the tensors, renamed and reordered" {
	numpy_attack marked.safetensors '(name, a) if i in (1, 3) else None' half.safetensors
	[ "$(fmt-inspect --json half.safetensors | jq -c '[.tensors[].name]')" = '["layers.1.weight","layers.3.weight"]' ]
	alice_found half.safetensors
	numpy_attack marked.safetensors '("renamed.%d" % (7 - i), a)' renamed.safetensors
	/usr/bin/python3 - <<'PY'
import json, struct
raw = open("renamed.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
# reorder: the same tensors, their data in reverse order
items = sorted(hdr.items(), key=lambda kv: -kv[1]["data_offsets"][0])
out, off, blob = {}, 0, []
for name, h in items:
    b, e = h["data_offsets"]
    out[name] = dict(h, data_offsets=[off, off + e - b])
    off += e - b
    blob.append(raw[8 + n + b:8 + n + e])
text = json.dumps(out).encode()
text += b" " * (-len(text) % 8)
open("reordered.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blob))
PY
	alice_found reordered.safetensors
}

@test "conversion through GGUF F32, .apsim and .apr and back; embed straight into each format" {
	fmt-convert --dtype f32 marked.safetensors c.gguf
	fmt-convert c.gguf c.apsim
	fmt-convert c.apsim c.apr
	fmt-convert c.apr back.safetensors
	for f in c.gguf c.apsim c.apr back.safetensors; do
		alice_found "$f"
	done
	for ext in gguf apsim apr; do
		run fmt-watermark embed -j --key seller.key --buyer alice --strength 0.03 m.safetensors "direct.$ext"
		assert_success
		[ "$(echo "$output" | jq -r '.scheme, .format')" = "$(printf 'fmtkit-ss/2\n%s' "$ext")" ]
		alice_found "direct.$ext"
	done
	# GGUF keeps the tensors F32 (its own default would be F16)
	[ "$(fmt-inspect --json direct.gguf | jq -c '[.tensors[].dtype] | unique')" = '["F32"]' ]
}

@test "the old schemes' files still extract and prove without --scheme; --scheme picks one" {
	fmt-watermark embed -q --key seller.key --buyer carol --scheme qim m.safetensors old.safetensors
	run fmt-watermark extract -j --key seller.key old.safetensors
	assert_success
	[ "$(echo "$output" | jq -r '.scheme, .valid')" = "$(printf 'fmtkit-wm/1\ntrue')" ]
	run fmt-watermark prove --key seller.key --buyer carol old.safetensors
	assert_success
	assert_line --partial "64 of 64 payload bits agree"
	run fmt-watermark prove -j --key seller.key --buyer carol --scheme ss old.safetensors
	assert_failure 1
	[ "$(echo "$output" | jq -r .scheme)" = fmtkit-ss/2 ]
	# a fmtkit-ss/1 copy (--scheme ss1): found without --scheme and with ss, not by fmtkit-ss/2
	run fmt-watermark embed -j --key seller.key --buyer carol --scheme ss1 --strength 0.03 m.safetensors ss1.safetensors
	assert_success
	[ "$(echo "$output" | jq -r '.scheme, .marked')" = "$(printf 'fmtkit-ss/1\n525312')" ]
	CAROL=$(echo "$output" | jq -r .payload)
	for scheme in "" "--scheme ss" "--scheme ss1"; do
		run fmt-watermark extract -j --key seller.key $scheme ss1.safetensors
		assert_success
		[ "$(echo "$output" | jq -r '.scheme, .valid, .payload')" = "$(printf 'fmtkit-ss/1\ntrue\n%s' "$CAROL")" ]
		run fmt-watermark prove -j --key seller.key --buyer carol $scheme ss1.safetensors
		assert_success
		[ "$(echo "$output" | jq -r '.scheme, .verdict, .p_value')" = "$(printf 'fmtkit-ss/1\nmatch\n3.552713678800501e-15')" ]
	done
	run fmt-watermark prove -j --key seller.key --buyer alice --scheme ss1 marked.safetensors
	assert_failure 1
	[ "$(echo "$output" | jq -r '.scheme, .verdict')" = "$(printf 'fmtkit-ss/1\nno match')" ]
	run fmt-watermark extract -j --key seller.key --scheme qim marked.safetensors
	assert_failure 1
	[ "$(echo "$output" | jq -r '.scheme, .valid')" = "$(printf 'fmtkit-wm/1\nfalse')" ]
	# fmtkit is the old name of qim
	run fmt-watermark extract -j --key seller.key --scheme fmtkit old.safetensors
	assert_success
}

@test "signed evidence for a fmtkit-ss/2 match verifies; tampering breaks it" {
	fmt-sign keygen -W -p ev.pub -s ev.key >/dev/null
	run fmt-watermark prove --key seller.key --buyer alice --sign-key ev.key -o evidence.json marked.safetensors
	assert_success
	assert_line "  evidence (signed) written to evidence.json"
	[ "$(jq -r '.verdict, .scheme, .buyer, .bytes_alike, (.ranks | length), .signature.algorithm' evidence.json)" = \
	  "$(printf 'match\nfmtkit-ss/2\nalice\n8\n6\nEd25519')" ]
	[ "$(jq -r .dataset_sha256 evidence.json)" = "$(sha256sum marked.safetensors | cut -d' ' -f1)" ]
	run /usr/bin/python3 "$REPO_ROOT/scripts/watermark/verify-evidence.py" evidence.json ev.pub
	assert_success
	assert_output "signature ok"
	jq '.p_value = 0.5' evidence.json >tampered.json
	run /usr/bin/python3 "$REPO_ROOT/scripts/watermark/verify-evidence.py" tampered.json ev.pub
	assert_failure
}

@test "usage: --scheme ss on a dataset, --strength with qim, parameters out of range; nothing written" {
	printf 'a\n1.5\n2.5\n' >d.csv
	run --separate-stderr fmt-watermark embed --key seller.key --buyer x --scheme ss d.csv o.ald
	assert_failure 2
	[[ "$stderr" == *"--scheme ss marks model weights; a dataset's columns take --scheme qim"* ]]
	run --separate-stderr fmt-watermark embed --key seller.key --buyer x --scheme qim --strength 0.02 m.safetensors o.safetensors
	assert_failure 2
	[[ "$stderr" == *"--strength is --scheme ss's; --scheme qim takes --strength-bits and --density"* ]]
	run --separate-stderr fmt-watermark embed --key seller.key --buyer x --strength-bits 10 m.safetensors o.safetensors
	assert_failure 2
	[[ "$stderr" == *"--density and --strength-bits are --scheme qim's; --scheme ss takes --strength"* ]]
	for s in 0 -0.1 0.6 x; do
		run --separate-stderr fmt-watermark embed --key seller.key --buyer x --strength "$s" m.safetensors o.safetensors
		assert_failure 2
		[[ "$stderr" == *"--strength takes a fraction above 0 and at most 0.5 (e.g. 0.01)"* ]]
	done
	run --separate-stderr fmt-watermark embed --key seller.key --buyer x --scheme lsb m.safetensors o.safetensors
	assert_failure 2
	[[ "$stderr" == *"--scheme takes ss, ss1, qim (or fmtkit) or alimentar"* ]]
	run --separate-stderr fmt-watermark prove --key seller.key --buyer x --scheme alimentar m.safetensors
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-watermark "--scheme alimentar belongs to extract, not prove")"
	fmt-convert --schema <(echo '{"a":"float32"}') d.csv d.ald
	run --separate-stderr fmt-watermark extract --key seller.key --scheme ss d.ald
	assert_failure 2
	[[ "$stderr" == *"--scheme ss reads model weights; a dataset's columns carry --scheme qim"* ]]
	[ ! -e o.ald ] && [ ! -e o.safetensors ]
}

@test "detect never calls an unmarked model watermarked for its short mantissas: F16, BF16, Q8_0, Q4_K copies" {
	for t in f16 bf16 q8_0 q4_k; do
		fmt-convert --dtype "$t" clean.safetensors "c.$t.gguf" 2>/dev/null
		fmt-convert --dtype f32 "c.$t.gguf" "c.$t.safetensors"
		run fmt-watermark detect -j "c.$t.safetensors"
		assert_failure 1
		[ "$(echo "$output" | jq -r '.verdict, (.suspicious | length)')" = "$(printf 'no watermark detected\n0')" ] ||
			fail "$t: $(echo "$output" | jq -c '[.verdict, .suspicious]')"
	done
	# a fmtkit-wm/1 copy of the same model is still found, at its strength
	fmt-watermark embed -q --key seller.key --buyer carol --scheme qim clean.safetensors old.safetensors
	run fmt-watermark detect -j old.safetensors
	assert_success
	[ "$(echo "$output" | jq -c '[.tensors[].strength_bits] | unique')" = '[12]' ]
}
