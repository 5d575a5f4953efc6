#!/usr/bin/env bats
# APR files (specs/apr.md) through the tools: the seed layout with and without LZ4/zstd (checked
# by an independent Python reader and xxhsum), the aprender layout's worked example (§20) and
# vectors (§21) made by fmt-convert, the falsification tests FMT-001..004 (A.9), APR v1 (with
# hostile MessagePack counts and sizes, and from a pipe), the aprender-tsp files, metadata keys
# to and from GGUF, and the option errors.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	make_samples
	TINY="$SAMPLES/tiny.safetensors"
	CHECK="/usr/bin/python3 $REPO_ROOT/scripts/gen/apr-check"
	TSP="$REPO_ROOT/tests/data/fixtures/apr"
}

# safetensors NAME=DTYPE:SHAPE:VALUES... (values comma-separated floats or ints) into FILE.
make_st() {
	/usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
import numpy as np
out, specs = sys.argv[1], sys.argv[2:]
hdr, data = {}, b""
for s in specs:
    name, rest = s.split("=", 1)
    dtype, shape, vals = rest.split(":")
    np_t = {"F32": np.float32, "I64": np.int64, "F16": np.float16, "F64": np.float64}[dtype]
    shape = [int(x) for x in shape.split("x")] if shape else []
    a = np.array([float(v) for v in vals.split(",")], dtype=np_t).reshape(shape)
    b = a.tobytes()
    hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(out, "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}

# A larger numpy model (F32, compressible and not) for compression round trips.
make_numpy_model() {
	/usr/bin/python3 - "$1" <<'PY'
import json, struct, sys
import numpy as np
rng = np.random.default_rng(7)
t = {"a.weight": rng.standard_normal((64, 64)).astype(np.float32),
     "b.weight": np.tile(np.arange(32, dtype=np.float32), 64).reshape(64, 32),
     "c.bias": np.zeros(7, dtype=np.float32)}
hdr, data = {}, b""
for n in sorted(t):
    b = t[n].tobytes()
    hdr[n] = {"dtype": "F32", "shape": list(t[n].shape), "data_offsets": [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(hdr).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}

# ---- seed layout ----

@test "safetensors -> apr -> safetensors is byte-identical for none, lz4 and zstd (FMT-002)" {
	for c in none lz4 zstd zstd:19 lz4:9; do
		run fmt-convert -f -c "$c" "$TINY" t.apr
		assert_success
		run fmt-verify t.apr
		assert_success
		assert_output --partial "t.apr: ok (apr, 5 tensors"
		run fmt-convert -f t.apr back.safetensors
		assert_success
		cmp back.safetensors "$TINY" || fail "round trip with -c $c differs"
	done
}

@test "an independent reader decodes our LZ4 and zstd frames to the same bytes as the raw file" {
	make_numpy_model m.safetensors
	fmt-convert m.safetensors raw.apr
	fmt-convert -c lz4 m.safetensors l.apr
	fmt-convert -c zstd m.safetensors z.apr
	for f in raw l z; do $CHECK $f.apr | jq -c '[.tensors[] | {name, raw, sha256}]' >$f.json; done
	cmp raw.json l.json
	cmp raw.json z.json
	run jq -r '.flags' <($CHECK l.apr)
	assert_output 1
	run jq -r '.flags' <($CHECK z.apr)
	assert_output 2
	# b.weight compresses, a.weight (random) does not: stored sizes say so
	run jq -r '.tensors[] | select(.name == "b.weight") | .stored < 8192' <($CHECK z.apr)
	assert_output true
}

@test "the footer checksum is XXH3-64 of every byte before it, as xxhsum -H3 computes it" {
	make_numpy_model m.safetensors
	for c in none lz4 zstd; do
		fmt-convert -f -c $c m.safetensors x.apr
		n=$($CHECK x.apr | jq -r .hashed_bytes)
		want=$($CHECK x.apr | jq -r .footer_xxh3)
		got=$(head -c "$n" x.apr | xxhsum -H3 | sed 's/.*= //')
		[ "$got" = "$want" ] || fail "-c $c: xxhsum $got, footer $want"
	done
}

@test "fmt-verify -T 2 reads a 3 MB .apr's checksum on both threads: the same answer as -T 1, a changed byte in any batch found" {
	/usr/bin/python3 - m3.safetensors <<'PY'
import json, struct, sys
import numpy as np
a = (np.arange(800000, dtype=np.float32) * 0.001).astype(np.float32)
h = json.dumps({"w": {"dtype": "F32", "shape": [800000], "data_offsets": [0, a.nbytes]}}).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + a.tobytes())
PY
	fmt-convert -q m3.safetensors m3.apr
	[ "$(stat -c %s m3.apr)" -gt 3000000 ]
	fmt-verify -q -T 1 m3.apr
	fmt-verify -q -T 2 m3.apr
	fmt-verify -q -T 3 m3.apr
	# a byte in the first 2 MiB batch, in the second, and in the last partial one
	for at in 1000 2200000 3100000; do
		cp m3.apr bad.apr
		printf '\x5a' | dd of=bad.apr bs=1 seek="$at" conv=notrunc status=none
		run -6 fmt-verify -T 1 bad.apr
		one=$output
		[[ "$one" == *"bad.apr: checksum mismatch: XXH3-64 of the file is "* ]]
		for t in 2 3; do
			run -6 fmt-verify -T "$t" bad.apr
			[ "$output" = "$one" ] || fail "-T $t at $at: $output"
		done
	done
}

@test "FMT-001: every tensor offset of every written file is a multiple of 64" {
	make_numpy_model m.safetensors
	fmt-convert --dtype f16 "$TINY" f16.gguf
	for c in none lz4 zstd; do
		for in in m.safetensors "$TINY" f16.gguf; do
			fmt-convert -f -c $c "$in" x.apr
			run jq '[.tensors[] | .offset % 64] | add' <($CHECK x.apr)
			assert_output 0
		done
	done
}

@test "compressed output to a pipe equals the file written in place, whatever -T" {
	make_numpy_model m.safetensors
	fmt-convert -c zstd m.safetensors file.apr
	fmt-convert -c zstd --to apr m.safetensors - >pipe.apr
	cmp file.apr pipe.apr
	fmt-convert -T 1 -c lz4 m.safetensors t1.apr
	fmt-convert -T 3 -c lz4 m.safetensors t3.apr
	cmp t1.apr t3.apr
	# tensors compressed in parallel while being converted to f16 in parallel
	fmt-convert -T 1 -c zstd --dtype f16 m.safetensors h1.apr
	fmt-convert -T 2 -c zstd --dtype f16 m.safetensors h2.apr
	fmt-convert -T 2 -c zstd --dtype f16 --to apr m.safetensors - >h3.apr
	cmp h1.apr h2.apr
	cmp h1.apr h3.apr
	# and decoded ahead in parallel when read
	fmt-convert -T 1 h2.apr r1.safetensors
	fmt-convert -T 2 h2.apr r2.safetensors
	cmp r1.safetensors r2.safetensors
}

# Tensors of 3 MiB (three of zstd's 1 MiB jobs exactly), 2.5 MiB + 4 bytes, 600 KiB (one job)
# and four small ones (compressed side by side on the pool), half random, half repeating.
make_job_model() {
	/usr/bin/python3 - "$1" <<'PY'
import json, struct, sys
import numpy as np
rng = np.random.default_rng(11)
def mixed(n):
    a = rng.standard_normal(n).astype(np.float32)
    a[n // 2:] = np.tile(np.arange(97, dtype=np.float32), n)[: n - n // 2]
    return a
t = {"a.exact": mixed(3 << 18), "b.odd": mixed((5 << 17) + 1), "c.one_job": mixed(600 << 8)}
for i in range(4):
    t[f"d.small{i}"] = mixed(1000 + i)
hdr, data = {}, b""
for n in sorted(t):
    b = t[n].tobytes()
    hdr[n] = {"dtype": "F32", "shape": [t[n].size], "data_offsets": [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}

@test "zstd tensors of several 1 MiB jobs (a whole number and not) are the same bytes for -T 1, 2, 3 and a pipe" {
	make_job_model m.safetensors
	for T in 1 2 3; do
		fmt-convert -T $T -c zstd m.safetensors t$T.apr
	done
	fmt-convert -T 2 -c zstd --to apr m.safetensors - >pipe.apr
	cmp t1.apr t2.apr
	cmp t1.apr t3.apr
	cmp t1.apr pipe.apr
	run fmt-verify t2.apr
	assert_success
	# the independent reader decodes every frame to the raw bytes, and the frames do compress
	fmt-convert m.safetensors raw.apr
	$CHECK raw.apr | jq -c '[.tensors[] | {name, raw, sha256}]' >raw.json
	$CHECK t2.apr | jq -c '[.tensors[] | {name, raw, sha256}]' >z.json
	cmp raw.json z.json
	run jq -r '[.tensors[] | select(.name == "a.exact") | .stored < 3000000] | .[0]' <($CHECK t2.apr)
	assert_output true
	fmt-convert -T 2 t3.apr back.safetensors
	fmt-convert raw.apr want.safetensors
	cmp back.safetensors want.safetensors
}

# A tensor of two 1 MiB jobs made so that the second job's first match is a repeat of offset 1
# (a run after 128 KiB of random bytes), while the job before ended on matches at offset 3: the
# decoder's repeat offsets at the job boundary are the first job's, so the second job must not
# use the initial ones its fresh context has (without ZSTD_invalidateRepCodes it decodes wrong
# from byte 1179660). Also 3 MiB of zeros (three jobs of nothing but repeats), and 600,000 bytes
# (one job).
make_repeat_model() {
	/usr/bin/python3 - "$1" <<'PY'
import json, random, struct, sys
r = random.Random(5)
rand = lambda n: bytes(r.getrandbits(8) for _ in range(n))
job0 = rand((1 << 20) - 90020) + b"abc" * 30000 + rand(20)
job1 = rand(131072 + 10) + b"A" * 60000 + rand((1 << 20) - 131072 - 60010)
t = {"r.repeat": job0 + job1, "z.zeros": bytes(3 << 20), "o.one_job": job1[:600000]}
hdr, data = {}, b""
for n in sorted(t):
    hdr[n] = {"dtype": "F32", "shape": [len(t[n]) // 4], "data_offsets": [len(data), len(data) + len(t[n])]}
    data += t[n]
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}

@test "a zstd frame's jobs are independent: a job that would reuse the repeat offsets of the job before decodes right (-T 1 and 2)" {
	make_repeat_model m.safetensors
	fmt-convert m.safetensors raw.apr
	$CHECK raw.apr | jq -c '[.tensors[] | {name, raw, sha256}]' >raw.json
	for T in 1 2; do
		fmt-convert -T $T -c zstd m.safetensors t$T.apr
		$CHECK t$T.apr | jq -c '[.tensors[] | {name, raw, sha256}]' >z$T.json
		cmp raw.json z$T.json
	done
	cmp t1.apr t2.apr
	# from a compressed input (its tensors read front to back, gathered into jobs): the same frames
	fmt-convert -T 2 -c zstd t1.apr again.apr
	cmp again.apr t1.apr
	fmt-convert t2.apr back.safetensors
	fmt-convert raw.apr want.safetensors
	cmp back.safetensors want.safetensors
	# a tensor of one job: its frame is the one zstd -3 makes of its bytes on one thread (the zstd
	# command, no checksum); the zeros compress
	segment raw.apr o.one_job >one.raw
	[ "$(stat -c %s one.raw)" = 600000 ]
	zstd -q -3 --no-check -c one.raw >want.zst
	segment t2.apr o.one_job >got.zst
	cmp got.zst want.zst
	run jq -r '.tensors[] | select(.name == "z.zeros") | .stored < 1000' <($CHECK t1.apr)
	assert_output true
}

# segment FILE NAME: tensor NAME's stored bytes in the seed file FILE
segment() {
	local off len
	read -r off len < <($CHECK "$1" | jq -r --arg n "$2" '.tensors[] | select(.name == $n) | "\(.offset) \(.stored)"')
	tail -c +$((off + 1)) "$1" | head -c "$len"
}

# frame_sha FILE NAME: the SHA-256 (hex) of tensor NAME's stored bytes in the seed file FILE
frame_sha() {
	segment "$1" "$2" | sha256sum | cut -d' ' -f1
}

@test "the zstd context kept from one tensor to the next writes the frames a fresh one writes (-T 1 and 2)" {
	make_job_model m.safetensors
	for T in 1 2; do
		fmt-convert -f -T $T -c zstd m.safetensors all.apr
		for n in a.exact b.odd c.one_job; do
			fmt-convert -f -T $T -c zstd --include "$n" m.safetensors one.apr
			[ "$(frame_sha all.apr $n)" = "$(frame_sha one.apr $n)" ]
			[ "$(frame_sha one.apr $n)" != "$(printf '' | sha256sum | cut -d' ' -f1)" ]
		done
	done
	# a frame, not an empty string: the first large tensor is over 1 MiB stored
	run jq -r '.tensors[] | select(.name == "a.exact") | .stored > 1000000' <($CHECK all.apr)
	assert_output true
}

@test "a zstd .apr writer holds a few 1 MiB jobs per thread, not whole tensors: peak RSS under 32 MiB at -T 2 for 48 MiB of tensors" {
	/usr/bin/python3 - big.safetensors <<'PY'
import json, struct, sys
import numpy as np
n, rows = 2, 6 << 20
hdr = {f"w{i}": {"dtype": "F32", "shape": [rows], "data_offsets": [i * rows * 4, (i + 1) * rows * 4]} for i in range(n)}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
rng = np.random.default_rng(3)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for i in range(n):
        f.write(rng.standard_normal(rows).astype(np.float32).tobytes())
PY
	rss=$(/usr/bin/time -f '%M' fmt-convert -T 2 -c zstd big.safetensors big.apr 2>&1 >/dev/null | tail -1)
	echo "peak RSS ${rss} KiB" >&3
	asan_build || [ "$rss" -lt 32768 ] || fail "peak RSS $rss KiB"
	fmt-convert -T 1 -c zstd big.safetensors one.apr
	cmp big.apr one.apr
}

@test "a compressed .apr from a file and from a pipe: the same bytes for both, any -T" {
	make_job_model m.safetensors
	for c in zstd lz4; do
		for T in 1 2; do
			fmt-convert -T $T -c $c m.safetensors file$T.$c.apr
			cat m.safetensors | fmt-convert -T $T -c $c - pipe$T.$c.apr
			cmp file$T.$c.apr pipe$T.$c.apr
		done
		cmp file1.$c.apr file2.$c.apr
		run fmt-verify file2.$c.apr
		assert_success
	done
	# a tensor converted on the way is read through its conversion
	fmt-convert -T 2 -c zstd --dtype f16 m.safetensors h_file.apr
	cat m.safetensors | fmt-convert -T 2 -c zstd --dtype f16 - h_pipe.apr
	cmp h_file.apr h_pipe.apr
	fmt-convert h_file.apr h.safetensors
	fmt-convert --dtype f16 m.safetensors want.safetensors
	cmp h.safetensors want.safetensors
}

@test "fmt-inspect shows layout, flags by name, compression and stored sizes with ratios" {
	make_numpy_model m.safetensors
	fmt-convert -c zstd m.safetensors z.apr
	run fmt-inspect z.apr
	assert_success
	assert_output --partial "format:     apr (version 2)"
	assert_output --partial "layout:     seed (magic 41 50 52 02)"
	assert_output --partial 'flags:      ["COMPRESSED_ZSTD"]'
	assert_output --partial "compression: zstd"
	assert_output --partial "writer:     fmtkit "
	assert_output --regexp "STORED +RATIO"
	assert_output --regexp "b.weight +F32 +\[64, 32\] +[0-9]+ +8192 +[0-9]+ +[0-9.]+x"
	run fmt-inspect -j z.apr
	run jq -r '.format_info.flags[0], (.tensors[] | select(.name == "b.weight") | (.stored_bytes < .bytes), (.ratio > 1))' <<<"$output"
	assert_output $'COMPRESSED_ZSTD\ntrue\ntrue'
	run fmt-inspect -j "$TINY"
	run jq '.tensors[0] | has("stored_bytes")' <<<"$output"
	assert_output false
}

@test "GGUF quantized tensors are carried byte for byte into APR and back" {
	make_numpy_model m.safetensors
	fmt-convert --dtype q8_0 m.safetensors q8.gguf
	fmt-convert -c zstd q8.gguf q8.apr
	run fmt-inspect -j q8.apr
	run jq -r '.format_info.flags | join(",")' <<<"$output"
	assert_output "COMPRESSED_ZSTD,QUANTIZED"
	fmt-convert q8.apr back.gguf
	cmp q8.gguf back.gguf
	fmt-convert --dtype q4_0 m.safetensors q4.apr
	run fmt-inspect q4.apr
	assert_output --regexp "a.weight +Q4_0"
	assert_output --regexp "c.bias +F32"
}

@test "metadata: keys of any length (an architecture of 600 bytes, a key of 700) survive GGUF -> APR -> GGUF in both layouts" {
	# Both ways went through 512-byte buffers: the key was cut to 511 bytes, exit 0.
	local arch key
	arch=$(printf 'a%.0s' $(seq 600))
	key=$(printf 'k%.0s' $(seq 700))
	make_st w.safetensors "w=F32:2x2:1,2,3,4"
	fmt-convert --arch "$arch" --set "$arch.context_length:u32=128" --set "$key:u32=7" w.safetensors w.gguf
	fmt-convert w.gguf seed.apr
	run jq -c --arg k "$key" --arg a "$arch" '[.metadata.arch == $a, .metadata.context_length, .metadata[$k]]' \
		<($CHECK seed.apr)
	assert_output '[true,128,7]'
	fmt-convert --apr-layout aprender w.gguf ap.apr
	for apr in seed.apr ap.apr; do
		fmt-convert "$apr" "$apr.gguf"
		run jq -c --arg k "$key" --arg a "$arch" '[.metadata[$a + ".context_length"], .metadata[$k]]' \
			<(fmt-inspect -j --metadata "$apr.gguf")
		assert_output '[128,7]'
	done
}

@test "metadata: GGUF keys become APR keys (man page table) and come back typed" {
	make_st w.safetensors "w=F32:2x2:1,2,3,4"
	fmt-convert --arch llama --set llama.block_count:u32=2 --set llama.embedding_length:u32=8 \
		--set llama.context_length:u32=128 --set llama.rope.freq_base:f32=10000 \
		--set llama.attention.layer_norm_rms_epsilon:f32=1e-5 --set general.name=tiny \
		w.safetensors w.gguf
	fmt-convert w.gguf w.apr
	run jq -c '.metadata | del(.writer)' <($CHECK w.apr)
	assert_output '{"arch":"llama","context_length":128,"hidden_size":8,"name":"tiny","num_layers":2,"rms_norm_eps":1e-05,"rope_theta":10000}'
	head -c 200 w.apr | grep -a -q '"rope_theta":10000.0,"rms_norm_eps":0.00001,"name":"tiny"'
	fmt-convert w.apr back.gguf
	run fmt-inspect -j --metadata back.gguf
	run jq -c '.metadata_types | {a: .["general.architecture"], b: .["llama.block_count"], e: .["llama.attention.layer_norm_rms_epsilon"]}' <<<"$output"
	assert_output '{"a":"str","b":"u32","e":"f32"}'
	fmt-convert --apr-layout aprender w.gguf ap.apr
	run jq -c '.metadata' <($CHECK ap.apr)
	assert_output --partial '"architecture":"llama"'
	assert_output --partial '"max_position_embeddings":128'
}

@test "a model of 60,000 metadata keys is written as APR in linear time" {
	# Each key was looked for among the keys already collected for the APR header: 60,000 keys
	# of 100-byte names took 7 s of CPU. Indexed now: 0.2 s.
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - m.gguf <<'PY'
import struct, sys
from gguf_file import gguf, s
n, pre = 60000, "k" * 100
kv = b"".join(s("%s%d" % (pre, i)) + struct.pack("<I", 8) + s("v%d" % i) for i in range(n))
gguf(sys.argv[1], 1, n, kv, s("w") + struct.pack("<IQIQ", 1, 32, 0, 0), struct.pack("<32f", *range(32)))
PY
	run_cpu_bounded 3 fmt-convert -q m.gguf m.apr
	assert_success
	fmt-convert -q m.apr back.gguf
	fmt-inspect --json m.gguf | jq -S -c '.metadata' >want.json
	fmt-inspect --json back.gguf | jq -S -c '.metadata | del(.["general.file_type"])' >got.json
	[ "$(jq length got.json)" -eq 60000 ]
	cmp want.json got.json
}

@test "a hostile tensor_count costs only the entries really there (24 MB file, 200 MB address space)" {
	# tensor_count is the most 21-byte entries the file could hold (1.1 million, ~300 MB of
	# tensors if allocated up front); the first entry is empty. The open must fail on it with
	# exit 4 without allocating for the claimed count, and likewise from a pipe.
	/usr/bin/python3 - h.apr <<'PY'
import struct, sys
size = 24_000_000
meta = b"{}"
head = b"APR\x02" + struct.pack("<HIQQ", 2, 0, 32, len(meta)) + bytes(6) + meta
head += bytes(64 - len(head))
count = (size - 64 - 16 - 8) // 21
body = head + struct.pack("<Q", count)
body += bytes(size - 16 - len(body))
open(sys.argv[1], "wb").write(body + struct.pack("<QQ", 0, size))
PY
	run bash -c "$(limit_as 200000) fmt-inspect h.apr"
	assert_failure 4
	assert_output --partial "tensor index entry 0: empty name"
	run bash -c "$(limit_as 200000) fmt-inspect - <h.apr"
	assert_failure 4
	assert_output --partial "tensor index entry 0: empty name"
}

@test "aprender APR_Q4 and APR_Q8 tensors (codes 128, 129; legacy 8, 9) are read as F32 per §12" {
	/usr/bin/python3 - q.apr 128 129 <<'PY'
import json, struct, sys, zlib
import numpy as np
out, c4, c8 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a64 = lambda x: (x + 63) & ~63
# APR_Q8: one f32 scale, then int8 codes
q8 = struct.pack("<f", 0.5) + np.array([-127, 0, 1, 127, -3], dtype=np.int8).tobytes()
# APR_Q4: 40 elements = 2 blocks (the second short): f16 scale, 16 bytes, even i low nibble
codes = [(i * 5) % 16 for i in range(40)]
def block(scale, cs):
    cs = cs + [0] * (32 - len(cs))
    return np.float16(scale).tobytes() + bytes(cs[2 * j] | (cs[2 * j + 1] << 4) for j in range(16))
q4 = block(0.25, codes[:32]) + block(-2.0, codes[32:])
tensors = [("a.q4", c4, [5, 8], q4), ("b.q8", c8, [5], q8)]
meta = b'{"model_type":"q"}'
index, data = b"", b""
for name, code, shape, payload in tensors:
    index += struct.pack("<H", len(name)) + name.encode() + bytes([code, len(shape)])
    index += b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<QQ", len(data), len(payload))
    data += payload + bytes(a64(len(payload)) - len(payload))
io = 64 + a64(len(meta)); do = io + a64(len(index))
h = b"APR\0" + bytes([2, 0]) + struct.pack("<HIQIQQ", 0x400, len(tensors), 64, len(meta), io, do)
h += struct.pack("<I", zlib.crc32(h[:40] + bytes(20))) + bytes(20)
body = h + meta + bytes(a64(len(meta)) - len(meta)) + index + bytes(a64(len(index)) - len(index)) + data
open(out, "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
	fmt-verify q.apr
	fmt-convert q.apr q.safetensors
	run /usr/bin/python3 - q.safetensors <<'PY'
import json, struct, sys
import numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); d = b[8 + n:]
for k in sorted(h):
    if k == "__metadata__": continue
    s, e = h[k]["data_offsets"]
    print(k, h[k]["dtype"], h[k]["shape"], np.frombuffer(d[s:e], dtype=np.float32).tolist())
codes = [(i * 5) % 16 for i in range(40)]
exp = [(c - 8) * (0.25 if i < 32 else -2.0) for i, c in enumerate(codes)]
print("q4 expected", exp)
PY
	assert_success
	assert_line "b.q8 F32 [5] [-63.5, 0.0, 0.5, 63.5, -1.5]"
	q4=$(echo "$output" | sed -n 's/^a.q4 F32 \[5, 8\] //p')
	exp=$(echo "$output" | sed -n 's/^q4 expected //p')
	[ -n "$q4" ]
	[ "$q4" = "$exp" ]
	run fmt-inspect --tensors q.apr
	assert_output --partial "a.q4"
	# the legacy codes 8 and 9 hold the same layouts; a payload of the wrong size is exit 4
	/usr/bin/python3 -c "
import sys
b=bytearray(open('q.apr','rb').read())
i=b.find(b'a.q4'); b[i+4]=8; j=b.find(b'b.q8'); b[j+4]=9
import zlib,struct
b[40:44]=struct.pack('<I', zlib.crc32(bytes(b[:40])+bytes(b[44:64]))); b[-4:]=struct.pack('<I', zlib.crc32(bytes(b[:-4])))
open('legacy.apr','wb').write(b)"
	fmt-convert legacy.apr legacy.safetensors
	cmp q.safetensors legacy.safetensors
	/usr/bin/python3 -c "
import zlib,struct
b=bytearray(open('q.apr','rb').read())
j=b.find(b'b.q8')+4+2+8+8; b[j:j+8]=struct.pack('<Q', 8)
b[-4:]=struct.pack('<I', zlib.crc32(bytes(b[:-4])))
open('bad.apr','wb').write(b)"
	run fmt-inspect bad.apr
	assert_failure 4
	assert_output --partial "tensor 'b.q8': size 8, but 5 elements of APR_Q8 take 9 bytes"
}

@test "aprender whole-file-compressed variant (§13): zstd frame or size-prepended LZ4 block after the header" {
	make_numpy_model m.safetensors
	fmt-convert --apr-layout aprender m.safetensors a.apr
	fmt-convert a.apr ref.safetensors
	/usr/bin/python3 - a.apr <<'PY'
import struct, sys, zlib, zstandard, lz4.block
b = open(sys.argv[1], "rb").read()
def image(flag):   # the file as aprender's loader sees it once decompressed, flag set, CRCs right
    h = bytearray(b[:64]); h[6:8] = struct.pack("<H", struct.unpack("<H", h[6:8])[0] | flag)
    h[40:44] = struct.pack("<I", zlib.crc32(bytes(h[:40]) + bytes(h[44:64])))
    img = bytes(h) + b[64:-4]
    return img + struct.pack("<I", zlib.crc32(img))
z, l = image(2), image(1)
open("z.apr", "wb").write(z[:64] + zstandard.ZstdCompressor().compress(z[64:]))
open("l.apr", "wb").write(l[:64] + lz4.block.compress(l[64:], store_size=True))
open("flag-only.apr", "wb").write(z)      # the flag on an uncompressed file: read as it is
d = bytearray(open("z.apr", "rb").read()); d[-10] ^= 1; open("damaged.apr", "wb").write(d)
PY
	for f in z l flag-only; do
		run fmt-verify $f.apr
		assert_success
		fmt-convert $f.apr $f.safetensors
		cmp ref.safetensors $f.safetensors
		cat $f.apr | fmt-convert - pipe-$f.safetensors
		cmp ref.safetensors pipe-$f.safetensors
	done
	run fmt-inspect z.apr
	assert_output --partial "compression: the whole file after the header, one zstd frame"
	run fmt-inspect l.apr
	assert_output --partial "compression: the whole file after the header, one size-prepended LZ4 block"
	run fmt-verify damaged.apr
	[ "$status" -eq 4 ] || [ "$status" -eq 6 ]
	[ "$status" -ne 0 ]
}

@test "a conversion checks the checksum with its reads (-T 1) or on a thread beside them (-T 2): any changed byte, exit 6 or 4, no output" {
	make_numpy_model m.safetensors
	for c in none zstd; do
		fmt-convert -f -c $c m.safetensors t.apr
		# v-CODEC/AT.apr: t.apr with byte AT xor 0x20, every 97th byte but the last 16
		/usr/bin/python3 - "v-$c" <<'PY'
import os, sys
data = open("t.apr", "rb").read()
os.makedirs(sys.argv[1])
for at in range(0, len(data) - 16, 97):
    b = bytearray(data); b[at] ^= 0x20
    open(os.path.join(sys.argv[1], "%d.apr" % at), "wb").write(b)
PY
		# a child bash runs the ~800 conversions: the same checks without bats' trap on every command
		bash -c 'for f in "$@"; do
			for T in 1 2; do
				code=0
				fmt-convert -T $T "$f" out.safetensors >/dev/null 2>&1 || code=$?
				[ "$code" -eq 6 ] || [ "$code" -eq 4 ] || [ "$code" -eq 5 ] || { echo "$f, -T $T: exit $code"; exit 1; }
				[ ! -e out.safetensors ] || { echo "$f, -T $T: out.safetensors written"; exit 1; }
			done
		done' _ v-$c/*.apr
		fmt-convert -T 1 t.apr one.safetensors
		fmt-convert -T 2 t.apr two.safetensors
		cmp one.safetensors two.safetensors
		rm -f one.safetensors two.safetensors
	done
	# A changed value in tensor data decodes: only the checksum, checked beside the reads, finds it.
	fmt-convert -f m.safetensors t.apr
	/usr/bin/python3 -c "b=bytearray(open('t.apr','rb').read()); b[-100]^=0x01; open('c.apr','wb').write(b)"
	for T in 1 2 4; do
		run --separate-stderr fmt-convert -T $T c.apr out.safetensors
		assert_failure 6
		[[ "$stderr" == *"c.apr: checksum mismatch: XXH3-64 of the file is"* ]]
		[ ! -e out.safetensors ]
	done
}

# ---- FMT-003 and FMT-004 ----

@test "FMT-003: a wrong magic is InvalidFormat (exit 4), never a crash" {
	fmt-convert "$TINY" t.apr
	for m in 'XPR' 'AQR' 'APS'; do
		{ printf '%s' "$m"; tail -c +4 t.apr; } >bad.apr
		run fmt-verify bad.apr
		assert_failure 4
		run fmt-inspect bad.apr
		assert_failure 4
	done
	{ printf 'APR\003'; tail -c +5 t.apr; } >bad.apr
	run --separate-stderr fmt-verify bad.apr
	[ "$status" -eq 4 ]
	[ -z "$output" ]
}

@test "FMT-004: every single-byte change of a small seed file is detected by fmt-verify (exit 6 or 4)" {
	make_st w.safetensors "w=F32:2x2:1,2,3,4"
	fmt-convert --arch mlp w.safetensors w.apr
	n=$(stat -c %s w.apr)
	flip_all w.apr flips 0x10
	exits_of fmt-verify -j -- $(seq -f 'flips/%g.apr' 0 $((n - 1)))
	exits_in "4 6"
}

@test "FMT-004: every single-byte change of the aprender worked example is detected (exit 6 or 4)" {
	make_st w.safetensors "weight=F32:2x2:1,2,3,4"
	fmt-convert --apr-layout aprender --set model_type=example w.safetensors w.apr
	n=$(stat -c %s w.apr)
	[ "$n" -eq 324 ]
	flip_all w.apr flips 0x10
	exits_of fmt-verify -j -- $(seq -f 'flips/%g.apr' 0 $((n - 1)))
	exits_in "4 6"
}

@test "a truncated or extended seed file is InvalidFormat naming the sizes; a flipped data byte is ChecksumMismatch" {
	fmt-convert -c lz4 "$TINY" t.apr
	head -c -1 t.apr >short.apr
	run --separate-stderr fmt-verify short.apr
	[ "$status" -eq 4 ]
	[[ "$stderr" == *"the footer says the file has"* ]]
	{ cat t.apr; printf 'x'; } >long.apr
	run fmt-verify long.apr
	assert_failure 4
	n=$(stat -c %s t.apr)
	/usr/bin/python3 -c "b=bytearray(open('t.apr','rb').read()); b[$n - 40]^=1; open('c.apr','wb').write(b)"
	run --separate-stderr fmt-verify c.apr
	[ "$status" -eq 6 ]
	[[ "$stderr" == *"checksum mismatch: XXH3-64"* ]]
	run fmt-convert c.apr out.safetensors
	assert_failure 6
	[ ! -e out.safetensors ]
	# --no-verify reads past the checksum, the frames still decode
	run fmt-convert --no-verify -c none t.apr ok.safetensors
	assert_success
}

# ---- aprender layout ----

@test "§20: fmt-convert --apr-layout aprender reproduces aprender's 324-byte worked example byte for byte" {
	make_st w.safetensors "weight=F32:2x2:1,2,3,4"
	fmt-convert --apr-layout aprender --set model_type=example w.safetensors w.apr
	xxd -r -p >want.apr <<'HEX'
41505200020000040100000040000000000000006d000000c000000000000000
00010000000000003b99b89b0000000000000000000000000000000000000000
7b226d6f64656c5f74797065223a226578616d706c65222c226c6963656e7365
223a6e756c6c2c22646174615f736f75726365223a6e756c6c2c22646174615f
6c6963656e7365223a6e756c6c2c22746f74616c5f73697a65223a302c227061
72616d5f636f756e74223a307d00000000000000000000000000000000000000
0600776569676874000202000000000000000200000000000000000000000000
0000100000000000000000000000000000000000000000000000000000000000
0000803f00000040000040400000804000000000000000000000000000000000
0000000000000000000000000000000000000000000000000000000000000000
9cc6b0c4
HEX
	cmp w.apr want.apr
	run fmt-verify w.apr
	assert_success
	run fmt-inspect w.apr
	assert_output --partial "layout:     aprender (magic 41 50 52 00)"
	assert_output --partial 'flags:      ["LAYOUT_ROW_MAJOR"]'
	assert_output --partial "header_crc: 9bb8993b"
	assert_output --partial "checksum:   crc32 c4b0c69c"
	fmt-convert w.apr back.safetensors
	fmt-convert --apr-layout aprender -f back.safetensors again.apr
	cmp again.apr want.apr
}

@test "§21: the golden_v2_current model comes out at 516 bytes with the derived CRCs" {
	make_st g.safetensors "weights=F32:8:1,2,0.5,-0.5,4,-2,0.25,8" "bias=F32:1:0.125"
	fmt-convert --apr-layout aprender --set model_type=linear_regression --set general.name=golden-v2 \
		--set version=0.0.0-golden --set created_at=1700000000 --set param_count:u64=8 g.safetensors g.apr
	[ "$(stat -c %s g.apr)" -eq 516 ]
	[ "$(xxd -s 40 -l 4 -p g.apr)" = "028cc03b" ]
	[ "$(xxd -s 512 -l 4 -p g.apr)" = "353f0f55" ]
	run jq -c '[.tensors[] | [.name, .offset, .stored]], .metadata' <($CHECK g.apr)
	assert_line --index 0 '[["bias",384,4],["weights",448,32]]'
	assert_line --index 1 --partial '"name":"golden-v2"'
	head -c 253 g.apr | tail -c 189 | grep -q -x '{"model_type":"linear_regression","name":"golden-v2","license":null,"data_source":null,"data_license":null,"version":"0.0.0-golden","created_at":"1700000000","total_size":0,"param_count":8}'
}

@test "aprender layout: dtype codes 3-7 are never written, and -c is refused" {
	run --separate-stderr fmt-convert --apr-layout aprender "$TINY" t.apr
	[ "$status" -eq 5 ]
	[[ "$stderr" == *"tensor 'step': I64 cannot be written in the aprender layout"* ]]
	[ ! -e t.apr ]
	run fmt-convert --apr-layout aprender --exclude step "$TINY" t.apr
	assert_success
	run fmt-convert -f --apr-layout aprender -c zstd --exclude step "$TINY" t.apr
	assert_failure 2
}

@test "aprender layout: a corrupted footer is ChecksumMismatch (aprender ignores it; we do not)" {
	make_st w.safetensors "weight=F32:2x2:1,2,3,4"
	fmt-convert --apr-layout aprender w.safetensors w.apr
	/usr/bin/python3 -c "b=bytearray(open('w.apr','rb').read()); b[-1]^=1; open('x.apr','wb').write(b)"
	run --separate-stderr fmt-verify x.apr
	[ "$status" -eq 6 ]
	[[ "$stderr" == *"footer CRC mismatch"* ]]
	run fmt-inspect x.apr
	assert_success
}

# ---- v1 and aprender-tsp ----

make_v1() {
	/usr/bin/python3 - "$1" <<'PY'
import struct, sys, zlib
import msgpack
meta = msgpack.packb({"created_at": "1700000000", "aprender_version": "0.25.0", "model_name": "lr"})
payload = bytes(range(20))
hdr = b"APRN" + bytes([1, 0]) + struct.pack("<HIII", 1, len(meta), len(payload), len(payload)) + bytes([0, 0, 80]) + bytes(9)
body = hdr + meta + payload
open(sys.argv[1], "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
}

@test "APR v1: inspect shows the framing and metadata, verify checks the CRC32 trailer, convert refuses" {
	make_v1 v1.apr
	run fmt-inspect v1.apr
	assert_success
	assert_output --partial "format:     apr (version 1)"
	assert_output --partial "layout:     v1 (magic APRN)"
	assert_output --partial "model_type: LinearRegression (0x0001)"
	assert_output --partial 'aprender_version (str) = "0.25.0"'
	assert_output --partial "quality:    80"
	run fmt-verify v1.apr
	assert_success
	/usr/bin/python3 -c "b=bytearray(open('v1.apr','rb').read()); b[-8]^=1; open('x.apr','wb').write(b)"
	run --separate-stderr fmt-verify x.apr
	[ "$status" -eq 6 ]
	[[ "$stderr" == *"CRC32 trailer mismatch"* ]]
	run --separate-stderr fmt-convert v1.apr out.safetensors
	[ "$status" -eq 5 ]
	[[ "$stderr" == *"APR v1 holds a serialised Rust model"* ]]
	[ ! -e out.safetensors ]
}

# An APR v1 file around the MessagePack metadata given in hex (a 20-byte payload, the CRC32
# trailer right); a third argument replaces the header's metadata_size.
make_v1_meta() {
	/usr/bin/python3 - "$@" <<'PY'
import struct, sys, zlib
out, meta = sys.argv[1], bytes.fromhex(sys.argv[2])
msize = int(sys.argv[3]) if len(sys.argv) > 3 else len(meta)
payload = bytes(range(20))
hdr = b"APRN" + bytes([1, 0]) + struct.pack("<HIII", 1, msize, len(payload), len(payload)) + bytes([0, 0, 80]) + bytes(9)
body = hdr + meta + payload
open(out, "wb").write(body + struct.pack("<I", zlib.crc32(body)))
PY
}

@test "APR v1: hostile MessagePack counts and sizes are InvalidFormat naming the claim, in bounded memory (file and pipe)" {
	# {"k": ...} is 81 a1 6b, then the value; every count below is far beyond the bytes there
	make_v1_meta map.apr "dfffffffff"                      # a map of 2^32-1 entries, nothing after
	make_v1_meta arr.apr "81a16bddffffffff00"              # an array of 2^32-1 items, one byte after
	make_v1_meta str.apr "81a16bdb7fffffff616263"          # a string of 2^31-1 bytes, three there
	make_v1_meta bin.apr "81a16bc6ffffffff00"              # binary of 2^32-1 bytes
	make_v1_meta map16.apr "81a16bdeffff"                  # a map16 of 65535 entries
	make_v1_meta cut.apr "83a16b01a16c02"                  # 3 entries announced, 2 there
	make_v1_meta len.apr "81a16bdbffff"                    # a str32 whose length field is cut
	make_v1_meta tail.apr "80c0"                           # a byte after the map
	make_v1_meta type.apr "81a16bc1"                       # 0xc1 is no MessagePack type
	make_v1_meta size.apr "80" 4294967295                  # metadata_size 2^32-1 in a 57-byte file
	make_v1_meta deep.apr "81a16b$(printf '91%.0s' {1..40})c0" # arrays nested 41 deep
	make_v1_meta deep31.apr "81a16b$(printf '91%.0s' {1..31})c0"   # 32 deep: msgpack-c's limit, read
	local -A want=(
		[map]="v1 metadata: a map at byte 0 claims 4294967295 entries, only 0 bytes follow"
		[arr]="v1 metadata: an array at byte 3 claims 4294967295 items, only 1 byte follows"
		[str]="v1 metadata: a string at byte 3 needs 2147483647 bytes, only 3 follow"
		[bin]="v1 metadata: a binary at byte 3 needs 4294967295 bytes, only 1 follows"
		[map16]="v1 metadata: a map at byte 3 claims 65535 entries, only 0 bytes follow"
		[cut]="v1 metadata: truncated: the MessagePack value runs past its 7 bytes"
		[len]="v1 metadata: the length of a string at byte 3 runs past its 6 bytes"
		[tail]="v1 metadata: 1 byte follows its MessagePack value"
		[type]="v1 metadata: byte 3 (0xc1) is not a MessagePack type"
		[size]="the header describes 4294967351 bytes, the file has 57"
		[deep]="v1 metadata: an array at byte 34 is nested more than 32 deep"
	)
	for f in "${!want[@]}"; do
		run --separate-stderr bash -c "$(limit_as 100000) fmt-inspect $f.apr"
		[ "$status" -eq 4 ] || fail "$f.apr: exit $status ($stderr)"
		[ "$stderr" = "fmt-inspect: error: $f.apr: ${want[$f]}" ] || fail "$f.apr: $stderr"
		[ -z "$output" ]
		run --separate-stderr bash -c "$(limit_as 100000) fmt-verify - <$f.apr"
		[ "$status" -eq 4 ] || fail "$f.apr from a pipe: exit $status ($stderr)"
		[ "$stderr" = "fmt-verify: error: -: ${want[$f]}" ] || fail "$f.apr from a pipe: $stderr"
	done
	# the same framing with honest metadata opens
	make_v1_meta ok.apr "81a16b93010203"
	run fmt-verify ok.apr
	assert_success
	run fmt-verify deep31.apr
	assert_success
	# empty strings and binaries (msgpack-c hands them out as NULL pointers; UBSan found it)
	make_v1_meta empty.apr "82a0a178a16bc400"
	run fmt-inspect --json empty.apr
	assert_success
	[ "$(echo "$output" | jq -c .metadata)" = '{"":"x","k":""}' ]
}

@test "APR v1: NaN and infinite metadata floats are read and shown as fmtkit's JSON spells them (\"nan\", \"inf\", \"-inf\")" {
	# {"m": [NaN, Inf, -Inf (float64), NaN, 0.5 (float32)], "x": -Inf}
	make_v1_meta nan.apr "82a16d95cb7ff8000000000000cb7ff0000000000000cbfff0000000000000ca7fc00000ca3f000000a178cbfff0000000000000"
	run --separate-stderr fmt-inspect --json nan.apr
	[ "$status" -eq 0 ] || fail "exit $status: $stderr"
	[ "$(echo "$output" | jq -c .metadata)" = '{"m":"[\"nan\",\"inf\",\"-inf\",\"nan\",0.5]","x":"-inf"}' ]
	run --separate-stderr fmt-inspect nan.apr
	[ "$status" -eq 0 ]
	assert_output --partial 'x (str) = "-inf"'
	run fmt-verify nan.apr
	assert_success
}

@test "APR v1 from a pipe: read up to the size its header describes, no further (an endless stream, 100 MB address space)" {
	make_v1 v1.apr
	size=$(stat -c %s v1.apr)
	run bash -c "$(limit_as 100000) fmt-verify - <v1.apr"
	assert_success
	assert_output "-: ok (apr, 0 tensors, 1 file, $size bytes)"
	run --separate-stderr bash -c "$(limit_as 100000) cat v1.apr /dev/zero | fmt-inspect -"
	[ "$status" -eq 4 ]
	[ "$stderr" = "fmt-inspect: error: -: the header describes $size bytes, the stream has more" ]
	run --separate-stderr bash -c "head -c 30 v1.apr | fmt-inspect -"
	[ "$status" -eq 4 ]
	[ "$stderr" = "fmt-inspect: error: -: truncated: 30 bytes, an APR v1 file has at least 36" ]
}

@test "aprender-tsp files are recognised and refused with what they are (exit 5)" {
	for f in "$TSP"/tsp-*.apr; do
		run --separate-stderr fmt-inspect "$f"
		[ "$status" -eq 5 ]
		# the whole message: it wrote APR\0, which the escaping of messages doubled to APR\\0
		[ "$stderr" = "fmt-inspect: error: $f: an aprender-tsp solver model (a 16-byte header: APR, a zero byte, type TSP), not an APR model container: it holds no tensors" ]
		run fmt-verify "$f"
		assert_failure 5
		run fmt-convert "$f" out.safetensors
		assert_failure 5
	done
}

# ---- options and streams ----

@test "option errors: -c and --apr-layout need APR output; bad values are usage errors" {
	run fmt-convert -c zstd "$TINY" t.safetensors
	assert_failure 2
	assert_output --partial "--compression: safetensors output is not compressed (only none; formats that compress: apr, ald)"
	run fmt-convert --compression none "$TINY" t.safetensors
	assert_success
	run fmt-convert --apr-layout seed "$TINY" t.gguf
	assert_failure 2
	run fmt-convert --apr-layout other "$TINY" t.apr
	assert_failure 2
	for c in gzip zstd:0 zstd:20 lz4:13 'zstd:' 'lz4:x' zstd-max:3; do
		run fmt-convert -c "$c" "$TINY" t.apr
		assert_failure 2
		assert_output --partial "--compression takes none, lz4[:1-12], zstd[:1-19] or zstd-max for apr output"
	done
	[ ! -e t.apr ]
}

@test "one --compression (-c) for every writer: its values are the output format's; --compress still works" {
	make_numpy_model m.safetensors
	fmt-convert -c zstd:19 m.safetensors a.apr
	fmt-convert --compression zstd-max m.safetensors b.apr
	cmp a.apr b.apr
	fmt-convert --compress lz4 m.safetensors c.apr
	run fmt-inspect c.apr
	assert_output --partial "compression: lz4"
	printf 'a,b\n1,2\n3,4\n' >t.csv
	for c in none zstd zstd-max lz4; do
		fmt-convert -f -c $c t.csv t.ald
		run fmt-inspect --json t.ald
		assert_output --partial "\"compression\":\"$c\""
	done
	run fmt-convert -f -c zstd:3 t.csv t.ald
	assert_failure 2
	assert_output --partial "--compression takes none, zstd, zstd-max or lz4 for a dataset"
}

@test "APR read from a pipe: fmt-inspect - and fmt-convert - OUT" {
	fmt-convert -c zstd "$TINY" t.apr
	run fmt-inspect - <t.apr
	assert_success
	assert_output --partial "compression: zstd"
	fmt-convert - back.safetensors <t.apr
	cmp back.safetensors "$TINY"
	cat t.apr | fmt-convert - back2.safetensors
	cmp back2.safetensors "$TINY"
}

@test "APR from a pipe is read front to back: byte-identical outputs for every layout and codec" {
	make_numpy_model m.safetensors
	for opts in "-c none" "-c lz4" "-c zstd" "--apr-layout aprender"; do
		rm -f t.apr file.safetensors pipe.safetensors file.gguf pipe.gguf
		fmt-convert $opts m.safetensors t.apr
		fmt-convert t.apr file.safetensors
		cat t.apr | fmt-convert - pipe.safetensors
		cmp file.safetensors pipe.safetensors
		fmt-convert --to gguf t.apr file.gguf
		cat t.apr | fmt-convert --to gguf - pipe.gguf
		cmp file.gguf pipe.gguf
		run fmt-verify - <t.apr
		assert_success
		assert_output "-: ok (apr, 3 tensors, 1 file, $(stat -c %s t.apr) bytes)"
		run fmt-inspect - < <(cat t.apr)
		assert_success
		assert_output --partial "size:       unknown (a stream)"
		assert_output --partial "not read"
	done
}

@test "APR from a pipe: a damaged or cut stream gives exit 6 or 4 and no output file" {
	make_numpy_model m.safetensors
	for opts in "-c none" "-c zstd" "--apr-layout aprender"; do
		rm -f t.apr
		fmt-convert $opts m.safetensors t.apr
		size=$(stat -c %s t.apr)
		# a byte of the last tensor's data, and a byte of the footer: only the end can tell
		for at in $((size - 30)) $((size - 12)); do
			/usr/bin/python3 -c "b=bytearray(open('t.apr','rb').read()); b[$at]^=0x10; open('c.apr','wb').write(b)"
			run fmt-convert - out.safetensors < <(cat c.apr)
			assert_failure 6
			assert_output --partial "-: "
			[ ! -e out.safetensors ]
			[ -z "$(ls -A | grep fmtkit-tmp || true)" ]
			run fmt-verify - < <(cat c.apr)
			assert_failure 6
		done
		head -c $((size - 100)) t.apr >cut.apr
		run fmt-convert - out.safetensors < <(cat cut.apr)
		assert_failure 4
		assert_output --partial "truncated"
		[ ! -e out.safetensors ]
	done
}

@test "APR from a pipe converts in bounded memory (200 MB through a 4 MiB-chunk pipeline)" {
	/usr/bin/python3 - big.safetensors <<'PY'
import json, struct, sys
n, size = 50, 4_000_000
hdr = {f"layer.{i:02d}.weight": {"dtype": "F32", "shape": [1000, 1000],
	"data_offsets": [i * size, (i + 1) * size]} for i in range(n)}
h = json.dumps(hdr).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    block = bytes(range(256)) * (size // 256) + bytes(size % 256)
    for i in range(n):
        f.write(block)
PY
	fmt-convert big.safetensors big.apr
	fmt-convert big.apr file.safetensors
	rss=$(cat big.apr | /usr/bin/time -f '%M' fmt-convert - pipe.safetensors 2>&1 >/dev/null | tail -1)
	cmp file.safetensors pipe.safetensors
	echo "peak RSS ${rss} KiB for a $(stat -c %s big.apr)-byte stream" >&3
	asan_build || [ "$rss" -lt 40000 ]
	rm -f pipe.safetensors
	fmt-convert -c zstd big.safetensors bigz.apr
	rss=$(cat bigz.apr | /usr/bin/time -f '%M' fmt-convert - pipe.safetensors 2>&1 >/dev/null | tail -1)
	cmp file.safetensors pipe.safetensors
	asan_build || [ "$rss" -lt 40000 ]
}

# ---- shard sets (A.8) ----

@test "--shard writes NAME-0000i-of-0000N.apr, each self-contained; any shard opens the set (FMT-002 sharded)" {
	make_numpy_model m.safetensors
	for c in none lz4 zstd; do
		rm -f set-*.apr
		run fmt-convert -c $c --shard 5KB m.safetensors set.apr
		assert_success
		[ -f set-00001-of-00003.apr ]
		[ -f set-00002-of-00003.apr ]
		[ -f set-00003-of-00003.apr ]
		[ ! -e set.apr ]
		for i in 1 2 3; do
			run jq -c '.metadata.shard' <($CHECK set-0000$i-of-00003.apr)
			assert_output "{\"count\":3,\"index\":$i,\"tensors_total\":3}"
			run fmt-verify set-0000$i-of-00003.apr
			assert_output --partial "ok (apr, 3 tensors, 3 files"
		done
		run fmt-inspect -j set-00002-of-00003.apr
		run jq -r '.format_info.shard, ([.tensors[].file] | join(","))' <<<"$output"
		assert_line --index 0 "2 of 3 (the set of 3 files is read from it)"
		assert_line --index 1 "set-00001-of-00003.apr,set-00002-of-00003.apr,set-00003-of-00003.apr"
		fmt-convert -f set-00003-of-00003.apr back.safetensors
		fmt-convert -f m.safetensors ref.safetensors
		cmp back.safetensors ref.safetensors
	done
}

@test "a shard set with a shard missing, renamed, damaged or from another set is refused" {
	make_numpy_model m.safetensors
	fmt-convert --shard 5KB m.safetensors set.apr
	fmt-convert --shard 5KB --set other=1 m.safetensors other.apr
	mv set-00002-of-00003.apr keep.apr
	run --separate-stderr fmt-verify set-00001-of-00003.apr
	[ "$status" -eq 9 ]
	[[ "$stderr" == *"shard 'set-00002-of-00003.apr' named in set-00001-of-00003.apr does not exist"* ]]
	cp keep.apr lone.apr
	run --separate-stderr fmt-inspect lone.apr
	[ "$status" -eq 9 ]
	[[ "$stderr" == *"its name is not NAME-00002-of-00003.apr"* ]]
	cp other-00002-of-00003.apr set-00002-of-00003.apr
	run --separate-stderr fmt-verify set-00001-of-00003.apr
	[ "$status" -eq 9 ]
	[[ "$stderr" == *"its metadata differs from the other shards'"* ]]
	cp keep.apr set-00002-of-00003.apr
	cp set-00003-of-00003.apr set-00003-of-00003.bak
	/usr/bin/python3 -c "b=bytearray(open('set-00003-of-00003.apr','rb').read()); b[-30]^=1; open('set-00003-of-00003.apr','wb').write(b)"
	run --separate-stderr fmt-verify set-00001-of-00003.apr
	[ "$status" -eq 6 ]
	[[ "$stderr" == *"set-00003-of-00003.apr: checksum mismatch"* ]]
	run fmt-convert set-00001-of-00003.apr out.safetensors
	assert_failure 6
	[ ! -e out.safetensors ]
}

@test "a shard set is written all or nothing: an existing shard stops it before anything is renamed" {
	make_numpy_model m.safetensors
	touch set-00002-of-00003.apr
	run fmt-convert --shard 5KB m.safetensors set.apr
	assert_failure 2
	[ ! -e set-00001-of-00003.apr ]
	[ ! -e set-00003-of-00003.apr ]
	[ ! -s set-00002-of-00003.apr ]
	ls -A | grep -q fmtkit-tmp && fail "temporary file left"
	run fmt-convert --apr-layout aprender --shard 5KB m.safetensors ap.apr
	assert_failure 2
}

@test "fmt-shard split and merge handle APR sets through the driver, keeping the compression" {
	make_numpy_model m.safetensors
	for c in none lz4 zstd; do
		rm -f m-*.apr merged.apr
		fmt-convert -f -c $c m.safetensors m.apr
		run fmt-shard split --max-size 5KB m.apr
		assert_success
		assert_line --index 0 "m-00001-of-00003.apr: 1 tensor, 16384 bytes of tensor data"
		run fmt-verify m-00002-of-00003.apr
		assert_success
		run fmt-shard merge m-00001-of-00003.apr -o merged.apr
		assert_success
		cmp merged.apr m.apr
	done
	run fmt-shard split --max-tensors 2 m.apr
	assert_success
	[ -f m-00002-of-00002.apr ]
}
