#!/usr/bin/env bats
# Issue 23, the types: fmt-convert --dtype q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs
# writes exactly ggml's blocks (tests/data/golden/kquant_input.<type>: ggml_quantize_chunk without
# an importance matrix, as llama-quantize --pure runs it; scripts/gen/ggml-quant-golden), from
# safetensors or an F32 GGUF; --dry-run names the type and size per tensor; requantizing is
# refused without --allow-requantize; rows a 256-element type cannot hold, values whose scale
# overflows and NaN are refused with nothing written.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export KQ="$BATS_FILE_TMPDIR/kq"
	mkdir -p "$KQ"
	# kq.safetensors: the 21 rows of the golden input before the overflow row as one [21, 256]
	# weight, and its first row as a 1-D norm. over.safetensors: rows 0 and 21 (-1e10 at 200).
	# odd.safetensors: [2, 96] rows. nan.safetensors: a NaN at element 300.
	python3 - "$REPO_ROOT/tests/data/golden/kquant_input.f32" "$KQ" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
row = lambda i: raw[i * 1024:(i + 1) * 1024]
def st(path, tensors):
    h, data, off = {}, b"", 0
    for name, shape, b in tensors:
        h[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
        data += b
        off += len(b)
    t = json.dumps(h, separators=(",", ":")).encode()
    t += b" " * (-len(t) % 8)
    open(path, "wb").write(struct.pack("<Q", len(t)) + t + data)
d = sys.argv[2]
st(d + "/kq.safetensors", [("blk.0.ffn_down.weight", [21, 256], raw[:21 * 1024]),
                           ("blk.0.attn_norm.weight", [256], row(0))])
st(d + "/over.safetensors", [("w.weight", [2, 256], row(0) + row(21))])
st(d + "/odd.safetensors", [("odd.weight", [2, 96], raw[:768])])
v = list(struct.unpack("<512f", raw[:2048]))
v[300] = float("nan")
st(d + "/nan.safetensors", [("n.weight", [2, 256], struct.pack("<512f", *v))])
# two bad tensors: a NaN near the end of a large first one, an Inf at the start of a small second
big = list(struct.unpack("<5376f", raw[:21 * 1024])) * 8
big[-5] = float("nan")
w = list(struct.unpack("<512f", raw[:2048]))
w[3] = float("inf")
st(d + "/twobad.safetensors", [("a.weight", [168, 256], struct.pack("<43008f", *big)),
                               ("b.weight", [2, 256], struct.pack("<512f", *w))])
EOF
	fmt-convert -q --dtype f32 "$KQ/kq.safetensors" "$KQ/kq-f32.gguf"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# The hex of the first N bytes of tests/data/golden/kquant_input.TYPE.
golden_hex() {
	xxd -p -l "$2" "$REPO_ROOT/tests/data/golden/kquant_input.$1" | tr -d '\n'
}

# type, bytes of 21 rows of 256, llama_ftype
TYPES="q4_1:3360:3 q5_0:3696:8 q5_1:4032:9 q2_k:1764:10 q3_k:2310:12 q4_k:3024:15 q5_k:3696:17
q6_k:4410:18 iq4_nl:3024:25 iq4_xs:2856:30"

@test "--dtype TYPE of an F32 GGUF and of safetensors: exactly ggml's blocks, 1-D F32, file type" {
	local spec t bytes ftype src n=0
	for spec in $TYPES; do
		IFS=: read -r t bytes ftype <<<"$spec"
		for src in "$KQ/kq-f32.gguf" "$KQ/kq.safetensors"; do
			n=$((n + 1))
			run fmt-convert --dtype "$t" "$src" "out-$n.gguf"
			assert_success
			fmt-inspect --json "out-$n.gguf" >"out-$n.json"
			printf '%s\t%s\t%s\t%s\t%s\n' "out-$n" "$t" "$bytes" "$ftype" "$src" >>outs.tsv
		done
	done
	# One Python for the 20 outputs, not 14 processes each: fmt-inspect's tensor list (compact JSON,
	# as jq -c prints it) and file type keys, and each tensor's bytes, found at the offsets
	# fmt-inspect reports as tensor_hex finds them, against ggml's and the F32 input's.
	run /usr/bin/python3 - "$REPO_ROOT/tests/data/golden" <<'PY'
import json, sys
golden = sys.argv[1]
f32 = open(golden + "/kquant_input.f32", "rb").read()
done = 0
for line in open("outs.tsv"):
    out, t, nbytes, ftype, src = line.rstrip("\n").split("\t")
    j = json.load(open(out + ".json"))
    got = json.dumps([[x["name"], x["dtype"], x["shape"], x["bytes"]] for x in j["tensors"]], separators=(",", ":"))
    want = '[["blk.0.ffn_down.weight","%s",[21,256],%s],["blk.0.attn_norm.weight","F32",[256],1024]]' % (t.upper(), nbytes)
    assert got == want, "%s from %s: %s" % (t, src, got)
    types = json.dumps([j["metadata"].get("general.file_type"), j["metadata"].get("general.quantization_version")],
                       separators=(",", ":"))
    assert types == "[%s,2]" % ftype, "%s: file type %s" % (t, types)
    last = j["tensors"][-1]
    start = j["file_bytes"] - (last["offset"] + (last["bytes"] + 31) // 32 * 32)
    assert start % 32 == 0, "%s from %s: data section at %d" % (t, src, start)
    data = open(out + ".gguf", "rb").read()
    tensor = {x["name"]: data[start + x["offset"]:start + x["offset"] + x["bytes"]] for x in j["tensors"]}
    assert tensor["blk.0.ffn_down.weight"] == open("%s/kquant_input.%s" % (golden, t), "rb").read()[:int(nbytes)], \
        "%s from %s: not ggml's blocks" % (t, src)
    assert tensor["blk.0.attn_norm.weight"] == f32[:1024], "%s from %s: the 1-D tensor changed" % (t, src)
    done += 1
print("checked", done)
PY
	assert_success
	assert_output "checked 20"
}

@test "--dtype takes llama-quantize's spellings in any case: Q4_K, q4_k and Iq4_Xs write the same bytes" {
	fmt-convert --dtype Q4_K "$KQ/kq-f32.gguf" upper.gguf
	fmt-convert --dtype q4_k "$KQ/kq-f32.gguf" lower.gguf
	cmp upper.gguf lower.gguf
	fmt-convert --dtype Iq4_Xs "$KQ/kq-f32.gguf" mixed.gguf
	assert_equal "$(tensor_hex mixed.gguf blk.0.ffn_down.weight)" "$(golden_hex iq4_xs 2856)"
}

@test "the quantized file decodes: fmt-inspect --stats of each type, and fmt-verify passes" {
	for spec in $TYPES; do
		IFS=: read -r t bytes ftype <<<"$spec"
		fmt-convert --dtype "$t" "$KQ/kq-f32.gguf" "$t.gguf"
		run fmt-inspect --json --tensor blk.0.ffn_down.weight --stats "$t.gguf"
		assert_success
		[ "$(jq -c '.stats | [.dtype, .count, .nan, .inf]' <<<"$output")" = "[\"${t^^}\",5376,0,0]" ] || fail "$t: $output"
		run fmt-verify "$t.gguf"
		assert_success
	done
}

@test "--dry-run: the type and the bytes of each tensor, the output's size, nothing written" {
	run --separate-stderr fmt-convert --dry-run --json --dtype q4_k "$KQ/kq-f32.gguf" out.gguf
	assert_success
	[ "$(jq -c '[.tensors[] | [.name, .from, .to, .bytes, .note]]' <<<"$output")" = \
		'[["blk.0.ffn_down.weight","F32","Q4_K",3024,null],["blk.0.attn_norm.weight","F32","F32",1024,"1-D tensors stay F32 in GGUF"]]' ]
	[ "$(jq -c '[.tensor_count, .data_bytes]' <<<"$output")" = '[2,4048]' ]
	[ ! -e out.gguf ]
	run --separate-stderr fmt-convert --dry-run --dtype q6_k "$KQ/kq-f32.gguf" out.gguf
	assert_success
	assert_equal "$output" "plan: $KQ/kq-f32.gguf -> out.gguf (gguf, 2 tensors)
  blk.0.ffn_down.weight  F32 -> Q6_K  4410 bytes
  blk.0.attn_norm.weight  F32 -> F32  1024 bytes  (1-D tensors stay F32 in GGUF)
tensor data: 5434 bytes (0.01 MiB)"
	[ ! -e out.gguf ]
	# the plan is what a real conversion writes
	fmt-convert --dtype q6_k "$KQ/kq-f32.gguf" real.gguf
	[ "$(fmt-inspect --json real.gguf | jq -c '[.tensors[] | [.dtype, .bytes]]')" = '[["Q6_K",4410],["F32",1024]]' ]
}

@test "requantizing a Q8_0 tensor is exit 2 naming it, nothing written; --allow-requantize does it" {
	fmt-convert --dtype q8_0 "$KQ/kq-f32.gguf" q8.gguf
	for t in q4_k Q4_K q4_0 iq4_xs; do
		run --separate-stderr fmt-convert --dtype "$t" q8.gguf out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: q8.gguf: tensor 'blk.0.ffn_down.weight' is already quantized (Q8_0): requantizing it to ${t^^} loses precision twice; --allow-requantize does it"
		nothing_written out.gguf
	done
	# allowed: the Q8_0 values, decoded, quantized as any float32 input
	fmt-convert --allow-requantize --dtype q4_k q8.gguf re.gguf
	fmt-convert --allow-requantize --dtype f32 q8.gguf back.gguf
	fmt-convert --dtype q4_k back.gguf direct.gguf
	assert_equal "$(tensor_hex re.gguf blk.0.ffn_down.weight)" "$(tensor_hex direct.gguf blk.0.ffn_down.weight)"
	# free: keep and the same type; decoding to a float type in GGUF is requantizing to
	# llama-quantize (its F16/F32 refuse it too), into another format it is free
	for t in keep q8_0 Q8_0; do
		run fmt-convert --dtype "$t" q8.gguf "free-$t.gguf"
		assert_success
	done
	for t in f16 f32; do
		run --separate-stderr fmt-convert --dtype "$t" q8.gguf "float-$t.gguf"
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: q8.gguf: tensor 'blk.0.ffn_down.weight' is already quantized (Q8_0): expanding it to ${t^^} is requantizing to llama-quantize, which refuses it; --allow-requantize does it"
		run fmt-convert --dtype "$t" q8.gguf "float-$t.safetensors"
		assert_success
	done
	assert_equal "$(tensor_hex free-keep.gguf blk.0.ffn_down.weight)" "$(tensor_hex q8.gguf blk.0.ffn_down.weight)"
	assert_equal "$(tensor_hex free-q8_0.gguf blk.0.ffn_down.weight)" "$(tensor_hex q8.gguf blk.0.ffn_down.weight)"
}

@test "--allow-requantize is an option for models: with a dataset it is exit 2" {
	printf 'a,b\n1,2\n' > t.csv
	run --separate-stderr fmt-convert --allow-requantize t.csv t.jsonl
	assert_failure 2
	assert_output ""
	assert_equal "$stderr" "fmt-convert: error: --allow-requantize applies to models, not to datasets (the output is jsonl)
Try 'fmt-convert --help'."
	nothing_written t.jsonl
}

@test "rows not a multiple of 256: a K-quant or IQ4_XS is exit 2 naming llama-quantize's fallback; 32-element types become F16" {
	for c in "q2_k Q2_K Q4_0" "q3_k Q3_K Q4_0" "q4_k Q4_K Q5_0" "q5_k Q5_K Q5_1" "q6_k Q6_K Q8_0" "iq4_xs IQ4_XS IQ4_NL"; do
		read -r t name fallback <<<"$c"
		run --separate-stderr fmt-convert --dtype "$t" "$KQ/odd.safetensors" out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: $KQ/odd.safetensors: tensor 'odd.weight': rows of 96 elements do not divide into $name blocks of 256 (llama-quantize would write $fallback)"
		nothing_written out.gguf
	done
	run fmt-convert --dtype q5_1 "$KQ/odd.safetensors" ok.gguf
	assert_success
	[ "$(fmt-inspect --json ok.gguf | jq -c '[.tensors[].dtype]')" = '["Q5_1"]' ]
}

@test "a block whose F16 scale overflows is exit 4 naming tensor and elements; NaN is exit 4; nothing written" {
	for c in "q4_1 Q4_1 448 479" "q5_0 Q5_0 448 479" "q2_k Q2_K 256 511" "q4_k Q4_K 256 511" "q6_k Q6_K 256 511" "iq4_nl IQ4_NL 448 479" "iq4_xs IQ4_XS 256 511"; do
		read -r t name first last <<<"$c"
		run --separate-stderr fmt-convert --dtype "$t" "$KQ/over.safetensors" out.gguf
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: $KQ/over.safetensors: tensor 'w.weight': elements $first to $last are too large for $name: the block's F16 scale is infinite; cannot quantize"
		nothing_written out.gguf
	done
	run --separate-stderr fmt-convert --dtype q3_k "$KQ/nan.safetensors" out.gguf
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: $KQ/nan.safetensors: tensor 'n.weight': element 300 is NaN; cannot quantize to Q3_K"
	nothing_written out.gguf
}

@test "two bad tensors on any number of threads: the error names the first, as one thread writing in order does" {
	# the threads write tensors side by side and b.weight fails long before a.weight's NaN is reached
	for t in "q4_0 Q4_0" "q4_k Q4_K"; do
		read -r t name <<<"$t"
		for n in 1 2 4; do
			run --separate-stderr fmt-convert -T "$n" --dtype "$t" "$KQ/twobad.safetensors" out.gguf
			assert_failure 4
			assert_equal "$stderr" "fmt-convert: error: $KQ/twobad.safetensors: tensor 'a.weight': element 43003 is NaN; cannot quantize to $name"
			nothing_written out.gguf
		done
	done
}

@test "an unknown --dtype lists the ggml types" {
	run --separate-stderr fmt-convert --dtype q4_k_q "$KQ/kq.safetensors" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype takes f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, fp6, fp4 or keep, or the ggml types q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, or for GGUF output the presets Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S or Q5_K_M (not 'q4_k_q')
Try 'fmt-convert --help'."
	# the new types need GGUF output
	run --separate-stderr fmt-convert --dtype q4_k "$KQ/kq.safetensors" out.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype q4_k needs GGUF output (safetensors cannot hold it)
Try 'fmt-convert --help'."
	nothing_written out.safetensors
}

@test "IQ4_NL and IQ4_XS tensors of any GGUF now decode (codebook.gguf's random blocks), as their layout says" {
	"$REPO_ROOT/scripts/gen/gguf-fidelity-fixtures" gf
	for t in iq4_nl iq4_xs; do
		run fmt-inspect --json --tensor "$t" --stats gf/codebook.gguf
		assert_success
		fmt-convert --include "$t" --dtype f32 gf/codebook.gguf "$t.safetensors"
		# the values from the block bytes by the layout (gguf-py's IQ4_NL / IQ4_XS), in numpy
		run /usr/bin/python3 -c '
import struct, sys
import numpy as np
K = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)
raw, kind = bytes.fromhex(sys.argv[1]), sys.argv[2]
out = []
def group(qs, dl):
    q = np.frombuffer(qs, np.uint8)
    return list(np.float32(dl) * K[q & 15]) + list(np.float32(dl) * K[q >> 4])
size = 18 if kind == "iq4_nl" else 136
for b in range(0, len(raw), size):
    blk = raw[b:b + size]
    d = np.frombuffer(blk[:2], np.float16)[0].astype(np.float32)
    if kind == "iq4_nl":
        out += group(blk[2:18], d)
        continue
    sh = struct.unpack("<H", blk[2:4])[0]
    for g in range(8):
        ls = ((blk[4 + g // 2] >> (4 * (g % 2))) & 15) | (((sh >> (2 * g)) & 3) << 4)
        out += group(blk[8 + 16 * g:24 + 16 * g], d * np.float32(ls - 32))
print(np.array(out, "<f4").tobytes().hex())' "$(tensor_hex gf/codebook.gguf "$t")" "$t"
		assert_success
		assert_equal "$(tensor_hex "$t.safetensors" "$t")" "$output"
	done
}
