#!/usr/bin/env bats
# fmt-convert with Apsi checkpoints (specs/apsim.md): the worked example reproduced byte for byte,
# units and metadata to GGUF and back, lossless Q8_0/Q4_0 <-> int8/int4, every compressed
# --dtype within its quantization step, --sign, --shard and the input digest check.

bats_require_minimum_version 1.5.0

setup() {
	load helpers
	cd "$BATS_TEST_TMPDIR"
	# Every test has its own configuration directory: never the user's real key.
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
	FIXTURE="$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
	printf 'team secret\n' >team.secret
	printf 'another secret\n' >other.secret
}

# A safetensors model of F32 tensors with numpy (deterministic): blk.0.attn.weight [4,64],
# blk.0.ffn.weight [2,96] (values up to ~1000), blk.0.norm [64], blk.1.w [2,40] (tiny values),
# blk.1.z [3,32] (its second row zero); with ODD=1 also odd.weight [3,5] (15 elements).
make_model() {
	ODD=${ODD:-0} /usr/bin/python3 - "$1" <<'PY'
import json, os, struct, sys
import numpy as np
rng = np.random.default_rng(11)
z = rng.standard_normal((3, 32)).astype(np.float32)
z[1] = 0
tensors = {
    "blk.0.attn.weight": rng.standard_normal((4, 64)).astype(np.float32),
    "blk.0.ffn.weight": (rng.standard_normal((2, 96)) * 300).astype(np.float32),
    "blk.0.norm": rng.standard_normal(64).astype(np.float32),
    "blk.1.w": (rng.standard_normal((2, 40)) * 1e-3).astype(np.float32),
    "blk.1.z": z,
}
if os.environ["ODD"] == "1":
    tensors["odd.weight"] = rng.standard_normal((3, 5)).astype(np.float32)
hdr, off, data = {"__metadata__": {"arch": "test"}}, 0, b""
for name in sorted(tensors):
    b = tensors[name].tobytes()
    hdr[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
    off += len(b)
    data += b
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}

# check_compressed ORIG.safetensors X.apsim DECODED.safetensors FORMAT [X DECODED FORMAT]...: every value of DECODED
# (X decoded to F32) is within half a quantization step of ORIG, the step being the gap of the
# format's code grid around x/scale times the element's scale (bf16: half an ulp of x), and
# every scale is max|x| / qmax over its block (specs/apsim.md §4). Prints "FORMAT COUNT" (elements checked) for each.
check_compressed() {
	/usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
import numpy as np

def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    data = raw[8 + n:]
    return meta, {k: (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
                  for k, t in hdr.items()}

def f32(t):
    assert t[0] == "F32", t[0]
    return np.frombuffer(t[2], "<f4").reshape(t[1])

def fp_grid(ebits, mbits, bias, top):
    pos = set()
    for e in range(1 << ebits):
        for m in range(1 << mbits):
            f = m / (1 << mbits)
            v = f * 2.0 ** (1 - bias) if e == 0 else (1 + f) * 2.0 ** (e - bias)
            if v <= top:
                pos.add(v)
    return np.array(sorted({-v for v in pos} | pos))

GRID = {"int8": np.arange(-127, 128, dtype=np.float64), "int4": np.arange(-8, 8, dtype=np.float64),
        "fp8": fp_grid(4, 3, 7, 448), "fp6": fp_grid(3, 2, 3, 28), "fp4": fp_grid(2, 1, 1, 6)}
QMAX = {"int8": 127, "int4": 7, "fp8": 448, "fp6": 28, "fp4": 6}

def check(orig, apsim, decoded, fmt):
    ameta, ap = load(apsim)
    _, dec = load(decoded)
    qts = json.loads(ameta["qtensors"])
    count = 0
    for name in sorted(dec):
        try:
            check_tensor(orig, ap, dec, qts, name, fmt)
        except SystemExit as e:
            sys.exit("--dtype %s: %s" % (fmt, e.code))
        count += f32(orig[name]).size
    return count

def check_tensor(orig, ap, dec, qts, name, fmt):
    q = qts[name]
    if q["format"] != fmt:
        sys.exit("%s: format %s, expected %s" % (name, q["format"], fmt))
    x = f32(orig[name]).astype(np.float64)
    y = f32(dec[name]).astype(np.float64)
    if fmt == "bf16":
        ax = np.abs(x)
        bound = np.where(ax > 0, 2.0 ** (np.floor(np.log2(np.where(ax > 0, ax, 1))) - 8), 0)
    else:
        ss, shape = q["scale_shape"], q["shape"]
        s32 = f32(ap[name + "__qscale"]).reshape(ss)
        blocks = [shape[d] // ss[d] for d in range(len(shape))]
        xs = f32(orig[name])
        for idx in np.ndindex(*ss):
            sl = tuple(slice(i * b, (i + 1) * b) for i, b in zip(idx, blocks))
            want = np.float32(np.abs(xs[sl]).max()) / np.float32(QMAX[fmt])
            if s32[idx] != want:
                sys.exit("%s: scale of block %r is %r, expected max|x|/%d = %r" % (name, idx, s32[idx], QMAX[fmt], want))
        s = s32.astype(np.float64)
        for d in range(len(shape)):
            s = np.repeat(s, blocks[d], axis=d)
        v = np.clip(np.divide(x, s, out=np.zeros_like(x), where=s != 0), GRID[fmt][0], GRID[fmt][-1])
        i = np.clip(np.searchsorted(GRID[fmt], v), 1, len(GRID[fmt]) - 1)
        bound = (GRID[fmt][i] - GRID[fmt][i - 1]) / 2 * np.abs(s) * (1 + 1e-6)
    err = np.abs(y - x)
    if not (err <= bound).all():
        k = int(np.argmax(err - bound))
        sys.exit("%s: element %d: %r decoded as %r, error %g > half step %g"
                 % (name, k, x.flat[k], y.flat[k], err.flat[k], bound.flat[k]))

_, orig = load(sys.argv[1])
args = sys.argv[2:]
for k in range(0, len(args), 3):
    print(args[k + 2], check(orig, *args[k:k + 3]))
PY
}

@test "the fixture -> .apsim with --secret-file is the fixture, byte for byte" {
	run --separate-stderr fmt-convert --secret-file team.secret "$FIXTURE" out.apsim
	assert_success
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
	cmp out.apsim "$FIXTURE"
	# --key-secret-file is the same option
	run fmt-convert --key-secret-file team.secret "$FIXTURE" out2.apsim
	assert_success
	cmp out2.apsim "$FIXTURE"
}

@test "the fixture -> GGUF: tensors, units as apsi.units.mass array[i32], metadata, int8 expanded" {
	run --separate-stderr fmt-convert "$FIXTURE" out.gguf
	assert_success
	[ "$stderr" = "fmt-convert: warning: 1 quantized tensor expanded to a float type: layers.0.q" ] ||
		fail "stderr: $stderr"
	json=$(fmt-inspect --json out.gguf)
	assert_equal "$(jq -c '[.tensors[] | [.name, .dtype, .shape]]' <<<"$json")" \
		'[["layers.0.W","F16",[2,2]],["mass","F32",[2]],["layers.0.q","F16",[2,2]]]'
	# general.file_type: the default f16 (llama.cpp's MOSTLY_F16), after the carried keys
	assert_equal "$(jq -c '.metadata' <<<"$json")" '{"apsi.units.mass":[0,1,0,0,0,0,0],"arch":"mlp","step":12000,"general.file_type":1}'
	assert_equal "$(jq -c '.metadata_types' <<<"$json")" '{"apsi.units.mass":"array[i32]","arch":"str","step":"i64","general.file_type":"u32"}'
	# the scales tensor is not a tensor of the output
	assert_equal "$(jq '[.tensors[] | select(.name | endswith("__qscale"))] | length' <<<"$json")" 0
}

@test "the fixture -> GGUF F32: layers.0.q is its codes times its scales, in float32" {
	run fmt-convert -q --dtype f32 "$FIXTURE" out.gguf
	assert_success
	want=$(/usr/bin/python3 -c '
import numpy as np
codes = np.array([[127, -64], [0, 127]], np.float32)
scales = np.array([[2 / 127], [0.25 / 127]], np.float32)
print((codes * scales).astype("<f4").tobytes().hex())')
	assert_equal "$(tensor_hex out.gguf layers.0.q)" "$want"
	assert_equal "$(tensor_hex out.gguf mass)" "0000803f00000040"
	assert_equal "$(tensor_hex out.gguf layers.0.W)" "0000803f000000c00000003f00008040"
}

@test "expansion warnings name every expanded tensor; -j counts them" {
	make_model m.safetensors
	run fmt-convert -q --dtype fp8 m.safetensors m.apsim
	assert_success
	run --separate-stderr fmt-convert -j --include 'blk.0.*' m.apsim out.safetensors
	assert_success
	assert_equal "$stderr" '{"tool":"fmt-convert","level":"warning","file":null,"message":"3 quantized tensors expanded to a float type: blk.0.attn.weight, blk.0.ffn.weight, blk.0.norm"}'
	assert_equal "$(jq -c '[.expanded, .excluded, ([.tensors[] | [.from, .to]] | unique)]' <<<"$output")" '[3,2,[["fp8","F32"]]]'
}

@test "GGUF -> .apsim restores the units and the typed metadata record" {
	run fmt-convert -q "$FIXTURE" out.gguf
	assert_success
	run --separate-stderr fmt-convert out.gguf back.apsim
	assert_success
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
	json=$(fmt-inspect --json back.apsim)
	assert_equal "$(jq -c '.format_info.units' <<<"$json")" '{"mass":[0,1,0,0,0,0,0]}'
	assert_equal "$(jq -c '.metadata' <<<"$json")" '{"arch":"mlp","step":12000}'
	assert_equal "$(jq -c '.metadata_types' <<<"$json")" '{"arch":"str","step":"i64"}'
	run fmt-verify back.apsim
	assert_success
}

@test "safetensors -> .apsim drops nothing" {
	make_samples
	run --separate-stderr fmt-convert -j "$SAMPLES/tiny.safetensors" tiny.apsim
	assert_success
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
	assert_equal "$(jq -c '[.format, .tensor_count, .expanded, .dropped_metadata, .dropped_units]' <<<"$output")" \
		'["apsim",5,0,0,[]]'
	in=$(fmt-inspect --json "$SAMPLES/tiny.safetensors")
	out=$(fmt-inspect --json tiny.apsim)
	assert_equal "$(jq -c '[.tensors[] | [.name, .dtype, .shape]] | sort' <<<"$out")" \
		"$(jq -c '[.tensors[] | [.name, .dtype, .shape]] | sort' <<<"$in")"
	assert_equal "$(jq -c .metadata <<<"$out")" "$(jq -c .metadata <<<"$in")"
	# and back: the original file, byte for byte
	run --separate-stderr fmt-convert tiny.apsim tiny2.safetensors
	assert_success
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
	cmp "$SAMPLES/tiny.safetensors" tiny2.safetensors
}

@test ".apsim -> safetensors warns that the units of mass are dropped; JSON lists them" {
	run --separate-stderr fmt-convert -j "$FIXTURE" out.safetensors
	assert_success
	[[ "$stderr" == *'{"tool":"fmt-convert","level":"warning","file":null,"message":"units dropped (the target cannot hold them): mass"}'* ]] ||
		fail "stderr: $stderr"
	assert_equal "$(jq -c '.dropped_units' <<<"$output")" '["mass"]'
	assert_equal "$(jq -c '.dropped_metadata' <<<"$output")" '1'
	run fmt-inspect --json out.safetensors
	assert_success
	assert_equal "$(jq -c .metadata <<<"$output")" '{"arch":"mlp"}'
	# --quiet: no warnings at all
	run --separate-stderr fmt-convert -q "$FIXTURE" out2.safetensors
	assert_success
	[ -z "$stderr" ]
}

# blk.0.attn.weight, blk.0.ffn.weight and blk.1.z are quantized; blk.1.w (rows of 40) is F16 and
# blk.0.norm (1-D) F32 in the GGUF files.
@test "Q8_0 and Q4_0 GGUF -> .apsim int8/int4 (lossless) -> GGUF: every tensor's bytes identical" {
	make_model m.safetensors
	for q in q8_0 q4_0; do
		Q=${q^^}
		fmt="int${q:1:1}"
		run fmt-convert -q --dtype "$q" m.safetensors "$q.gguf"
		assert_success
		run --separate-stderr fmt-convert -j "$q.gguf" "$q.apsim"
		assert_success
		assert_equal "$(jq -c "([.tensors[] | select(.from == \"$Q\") | [.to, .note]] | unique),
			([.tensors[] | select(.from == \"$Q\")] | length), .expanded" <<<"$output")" \
			"[[\"$fmt\",\"lossless\"]]
3
0"
		assert_equal "$(fmt-inspect --json "$q.apsim" | jq -c '.format_info.qtensors["blk.0.ffn.weight"] | [.format, .scale_shape, .shape]')" \
			"[\"$fmt\",[2,3],[2,96]]"
		run fmt-verify "$q.apsim"
		assert_success
		run --separate-stderr fmt-convert -j "$q.apsim" "$q-back.gguf"
		assert_success
		assert_equal "$(jq -c "[.tensors[] | select(.from == \"$fmt\") | [.to, .note]] | unique" <<<"$output")" \
			"[[\"$Q\",\"lossless\"]]"
		# the same tensors (name, dtype, shape), each with the same bytes
		assert_equal "$(fmt-inspect --json "$q-back.gguf" | jq -c '[.tensors[] | [.name, .dtype, .shape]] | sort')" \
			"$(fmt-inspect --json "$q.gguf" | jq -c '[.tensors[] | [.name, .dtype, .shape]] | sort')"
		x=$(tensors_hex "$q.gguf")
		y=$(tensors_hex "$q-back.gguf")
		x=$(sort <<<"$x")
		y=$(sort <<<"$y")
		[ "$(grep -c $'^[^\t]\+\t[0-9a-f]\+$' <<<"$x")" -eq 5 ] || fail "$q.gguf: not 5 tensors with data: $x"
		[ "$x" = "$y" ] || fail "$q: tensors differ after GGUF -> .apsim -> GGUF: $(diff <(echo "$x") <(echo "$y"))"
	done
}

@test "every compressed --dtype verifies and decodes within the format's step" {
	make_model m.safetensors
	local checks=() want=
	for d in int8 int4 fp8 fp6 fp4 bf16; do
		run --separate-stderr fmt-convert -j --dtype "$d" m.safetensors "m-$d.apsim"
		assert_success
		assert_equal "$(jq -c '[.tensors[].to] | unique' <<<"$output")" "[\"$d\"]"
		run fmt-verify "m-$d.apsim"
		assert_success
		assert_output --partial "m-$d.apsim: ok (apsim, "
		run fmt-convert -q "m-$d.apsim" "m-$d.safetensors"
		assert_success
		checks+=("m-$d.apsim" "m-$d.safetensors" "$d")
		want+="$d 688"$'\n'
	done
	# the decoded values of every format, one Python
	run check_compressed m.safetensors "${checks[@]}"
	[ "$status" -eq 0 ] || fail "$output"
	assert_output "${want%$'\n'}"
	# bf16 has no scales; the others one __qscale per tensor
	run fmt-inspect --json m-bf16.apsim
	assert_equal "$(jq '.tensor_count' <<<"$output")" 5
	run fmt-inspect --json m-fp4.apsim
	assert_equal "$(jq '.tensor_count' <<<"$output")" 10
}

@test "--dtype fp6 or fp4 on a tensor of 15 elements: exit 2 naming the tensor, nothing written" {
	ODD=1 make_model odd.safetensors
	run --separate-stderr fmt-convert --dtype fp6 odd.safetensors out.apsim
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: odd.safetensors: tensor 'odd.weight': 15 elements cannot be stored as fp6 (needs a multiple of 4)"
	[ ! -e out.apsim ]
	run --separate-stderr fmt-convert --dtype fp4 odd.safetensors out.apsim
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: odd.safetensors: tensor 'odd.weight': 15 elements cannot be stored as fp4 (needs an even count)"
	[ ! -e out.apsim ]
	# leaving it out works
	run fmt-convert --dtype fp6 --exclude odd.weight odd.safetensors out.apsim
	assert_success
	# int4 pads instead
	run fmt-convert --dtype int4 odd.safetensors out4.apsim
	assert_success
	run fmt-verify out4.apsim
	assert_success
}

@test "compressed --dtype needs .apsim output (exit 2)" {
	make_model m.safetensors
	run --separate-stderr fmt-convert --dtype int8 m.safetensors out.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype int8 needs .apsim output (safetensors cannot hold it)
Try 'fmt-convert --help'."
	run fmt-convert --dtype fp4 m.safetensors out.gguf
	assert_failure 2
	[ ! -e out.safetensors ] && [ ! -e out.gguf ]
}

@test "--sign without a per-user key: exit 3 naming fmt-sign keygen --hmac, nothing written" {
	make_model m.safetensors
	run --separate-stderr fmt-convert --sign m.safetensors out.apsim
	assert_failure 3
	[[ "$stderr" == *'fmt-sign keygen --hmac'* ]] || fail "stderr: $stderr"
	[ ! -e out.apsim ]
	[ -z "$(ls -A . | grep fmtkit-tmp)" ]
}

@test "--sign with the per-user key: fmt-verify --hmac-key ok, another secret exit 7" {
	make_model m.safetensors
	run fmt-sign keygen --hmac
	assert_success
	id=$(sha256sum "$XDG_CONFIG_HOME/fmtkit/hmac.key" | cut -c1-16)
	run --separate-stderr fmt-convert --sign m.safetensors out.apsim
	assert_success
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
	run fmt-inspect --json out.apsim
	assert_equal "$(jq -c '[.format_info.signed, .format_info.key_id]' <<<"$output")" "[true,\"$id\"]"
	run fmt-verify --hmac-key out.apsim
	assert_success
	assert_output --regexp "^out\\.apsim: ok \\(apsim, 5 tensors, 1 file, [0-9]+ bytes, hmac-sha256 signature by trusted key $id\\)\$"
	run --separate-stderr fmt-verify --secret-file other.secret out.apsim
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: out.apsim: signed with key '$id', but the key given is 'shared'"
	# --hmac-key alone implies --sign, and gives the same bytes
	run fmt-convert --hmac-key m.safetensors out2.apsim
	assert_success
	cmp out.apsim out2.apsim
}

@test "--sign (or a key option) with GGUF or safetensors output: exit 2, nothing written" {
	make_model m.safetensors
	run fmt-sign keygen --hmac
	assert_success
	run --separate-stderr fmt-convert --sign m.safetensors out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: m.safetensors: --sign needs .apsim output (gguf has no signatures)"
	run --separate-stderr fmt-convert --secret-file team.secret m.safetensors out.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: m.safetensors: --sign needs .apsim output (safetensors has no signatures)"
	[ ! -e out.gguf ] && [ ! -e out.safetensors ]
}

@test "--shard 100: NAME-0000i-of-0000N.apsim and NAME.apsim.index.json; verify and inspect the set" {
	make_model m.safetensors
	mkdir set
	run --separate-stderr fmt-convert --shard 100 m.safetensors set/model.apsim
	assert_success
	[ -z "$stderr" ] || fail "unexpected stderr: $stderr"
	assert_equal "$(cd set && ls | tr '\n' ' ')" \
		"model-00001-of-00005.apsim model-00002-of-00005.apsim model-00003-of-00005.apsim model-00004-of-00005.apsim model-00005-of-00005.apsim model.apsim.index.json "
	[ ! -e set/model.apsim ]
	total=$(cat set/* | wc -c)
	run fmt-verify set/model.apsim.index.json
	assert_success
	assert_output "set/model.apsim.index.json: ok (apsim-index, 5 tensors, 6 files, $total bytes)"
	run fmt-inspect --json set/model.apsim.index.json
	assert_success
	assert_equal "$(jq -c '[.format, .tensor_count, .data_bytes]' <<<"$output")" '["apsim-index",5,2752]'
	assert_equal "$(jq -c '[.tensors[].name] | sort' <<<"$output")" \
		'["blk.0.attn.weight","blk.0.ffn.weight","blk.0.norm","blk.1.w","blk.1.z"]'
	# every shard is a complete .apsim with shard i/5, and the index records its digest
	for i in 1 2 3 4 5; do
		f=model-0000$i-of-00005.apsim
		shard=$(fmt-inspect --json "set/$f")
		assert_equal "$(jq -r .format_info.shard <<<"$shard")" "$i/5"
		assert_equal "$(jq -r .format_info.sha256 <<<"$shard")" \
			"$(jq -r --arg f "$f" '.metadata.shard_sha256[$f]' set/model.apsim.index.json)"
	done
	# the set converts back to the same tensors
	run fmt-convert set/model.apsim.index.json back.safetensors
	assert_success
	run fmt-convert m.safetensors ref.safetensors
	cmp ref.safetensors back.safetensors
}

@test "--shard with --secret-file signs the index of the set" {
	make_model m.safetensors
	run fmt-convert --shard 1000 --secret-file team.secret m.safetensors model.apsim
	assert_success
	[ -e model-00001-of-00003.apsim ] && [ -e model.apsim.index.json ] || fail "$(ls)"
	[[ "$(jq -r .metadata.signature model.apsim.index.json)" == hmac-sha256:shared:* ]]
	run fmt-verify --secret-file team.secret model.apsim.index.json
	assert_success
	run fmt-verify --secret-file other.secret model.apsim.index.json
	assert_failure 7
}

@test "an output named x.safetensors.index.json forces a shard set" {
	make_model m.safetensors
	run --separate-stderr fmt-convert m.safetensors x.safetensors.index.json
	assert_success
	assert_equal "$(ls x* | tr '\n' ' ')" "x-00001-of-00001.safetensors x.safetensors.index.json "
	run fmt-verify x.safetensors.index.json
	assert_success
	assert_output --partial "x.safetensors.index.json: ok (safetensors-index, 5 tensors, 2 files, "
	assert_equal "$(jq -c '[.weight_map[]] | unique' x.safetensors.index.json)" '["x-00001-of-00001.safetensors"]'
	# the same for .apsim
	run fmt-convert m.safetensors y.apsim.index.json
	assert_success
	assert_equal "$(ls y* | tr '\n' ' ')" "y-00001-of-00001.apsim y.apsim.index.json "
	run fmt-verify y.apsim.index.json
	assert_success
}

@test "a tampered .apsim input is refused (exit 6, nothing written) unless --no-verify" {
	cp "$FIXTURE" t.apsim
	# flip the last data byte (code 0x7f of layers.0.q)
	printf '\x55' | dd of=t.apsim bs=1 seek=795 conv=notrunc 2>/dev/null
	run --separate-stderr fmt-convert t.apsim out.safetensors
	assert_failure 6
	[[ "$stderr" == "fmt-convert: error: t.apsim: sha256 mismatch"* ]] || fail "stderr: $stderr"
	[ ! -e out.safetensors ]
	run --separate-stderr fmt-convert --no-verify t.apsim out.safetensors
	assert_success
	[ -e out.safetensors ]
	run fmt-convert -q --no-verify t.apsim out.apsim
	assert_success
	run fmt-verify out.apsim
	assert_success
}

@test "a checkpoint of 40,000 compressed tensors is written, checked and read back in linear time" {
	# Each tensor, its scales and its descriptor were looked for among all the others (the
	# writer's descriptors, the reader's checks, the planner's 'is this a scales tensor?'): a
	# GGUF of 60,000 Q8_0 tensors took 5 minutes to become an .apsim, fmt-verify of that file
	# more than 2. The names are indexed now (fmt_model's name sets).
	many_small_tensors many.safetensors 40000
	fmt-convert -q --dtype q8_0 many.safetensors many.gguf
	rm many.safetensors
	run timeout 60 fmt-convert -q many.gguf many.apsim
	assert_success
	run timeout 60 fmt-verify many.apsim
	assert_success
	assert_output "many.apsim: ok (apsim, 80000 tensors, 1 file, $(stat -c %s many.apsim) bytes)"
	run timeout 60 fmt-convert -q many.apsim back.gguf
	assert_success
	# the same tensors, bytes for bytes (the .apsim keeps the safetensors writer's order)
	fmt-convert -q many.gguf many.safetensors
	fmt-convert -q back.gguf back.safetensors
	cmp many.safetensors back.safetensors
}

@test "a GGUF of 65,536 tensors with units becomes an .apsim and back in linear time" {
	# Each tensor's unit was looked for among all the units (an .apsim's) or all the metadata
	# keys (a GGUF's apsi.units.NAME): with 65,536 tensors of 63-byte names each way took 9 s
	# of CPU. Both are indexed now (fmt_model's unit names; the plan's units keys): under 1.5 s.
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - u.gguf <<'PY'
import struct, sys
from gguf_file import gguf, s
n, pre = 65536, "x" * 58
kv = b"".join(s("apsi.units.%s%d" % (pre, i)) + struct.pack("<IIQ7i", 9, 5, 7, 0, 1, -2, 0, 0, 0, i % 5) for i in range(n))
ti = b"".join(s("%s%d" % (pre, i)) + struct.pack("<IQIQ", 1, 32, 0, 128 * i) for i in range(n))
gguf(sys.argv[1], n, n, kv, ti, struct.pack("<32f", *range(32)) * n)
PY
	run_cpu_bounded 5 fmt-convert -q u.gguf u.apsim
	assert_success
	x=$(printf 'x%.0s' {1..58})
	run fmt-inspect --json u.apsim
	assert_equal "$(jq -c --arg x "$x" '[.tensor_count, (.format_info.units | length), .format_info.units[$x + "0"], .format_info.units[$x + "65534"]]' <<<"$output")" \
		'[65536,65536,[0,1,-2,0,0,0,0],[0,1,-2,0,0,0,4]]'
	run_cpu_bounded 5 fmt-convert -q u.apsim back.gguf
	assert_success
	# the same units keys and values as the GGUF made by hand (the .apsim sorts its tensors by
	# name: so does the GGUF made from it)
	fmt-inspect --json u.gguf | jq -S -c '.metadata' >want.json
	fmt-inspect --json back.gguf | jq -S -c '.metadata | del(.["general.file_type"])' >got.json
	cmp want.json got.json
	fmt-convert -q u.gguf u.safetensors
	fmt-convert -q back.gguf back.safetensors
	cmp u.safetensors back.safetensors
}
