#!/usr/bin/env bats
# fmt-shard: split and merge round trips for safetensors, GGUF and .apsim (merge(split(x)) is
# byte-identical to converting x in one piece), the Hugging Face index and gguf-split keys,
# limits, dry runs and existing outputs; bundles: round trips, determinism, zstd, and hostile
# archives made with Python's tarfile.

bats_require_minimum_version 1.5.0

APSIM_FIXTURE="$BATS_TEST_DIRNAME/../data/fixtures/apsim/example-signed-team-secret.apsim"

setup_file() {
	load helpers
	make_samples
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	cp "$SAMPLES/tiny.safetensors" model.safetensors
}

# A GGUF model from the sample (dtypes kept).
make_gguf() {
	fmt-convert --to gguf --dtype keep model.safetensors model.gguf
}

# The metadata records of one GGUF file as stored, "key type value" per line (scalars only):
# what a shard holds itself, now that opening any shard opens its whole set.
gguf_raw_keys() {
	/usr/bin/python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
n_kv = struct.unpack_from("<Q", b, 16)[0]
pos = 24
fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
names = {0: "u8", 1: "i8", 2: "u16", 3: "i16", 4: "u32", 5: "i32", 6: "f32", 7: "bool", 8: "str", 10: "u64", 11: "i64", 12: "f64"}
for _ in range(n_kv):
    klen = struct.unpack_from("<Q", b, pos)[0]
    key = b[pos + 8:pos + 8 + klen].decode()
    pos += 8 + klen
    t = struct.unpack_from("<I", b, pos)[0]
    pos += 4
    if t == 8:
        slen = struct.unpack_from("<Q", b, pos)[0]
        val = b[pos + 8:pos + 8 + slen].decode()
        pos += 8 + slen
    else:
        val = struct.unpack_from(fmt[t], b, pos)[0]
        pos += struct.calcsize(fmt[t])
    print(key, names[t], val)
PY
}

# An .apsim model: fmt-convert --to apsim when this build has it, else the spec's fixture.
make_apsim() {
	if fmt-convert --help | grep -q apsim; then
		fmt-convert --to apsim model.safetensors model.apsim
	else
		cp "$APSIM_FIXTURE" model.apsim
	fi
}

# mkbundle OUT CASE: a bundle of two members a.bin and b.bin, made by Python's tarfile, broken
# as CASE says.
mkbundle() {
	python3 - "$1" "$2" <<'PY'
import hashlib, io, json, sys, tarfile
out, case = sys.argv[1], sys.argv[2]
files = {"a.bin": b"first member\n", "b.bin": b"second member, a little longer\n"}
listed = dict(files)
if case == "manifest-extra":
    listed["c.bin"] = b"not in the archive"
manifest = json.dumps({"files": {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
                                 for n, d in listed.items()},
                       "fmtkit": "0.1.0", "format": "safetensors"},
                      separators=(",", ":"), sort_keys=True).encode()

def member(t, name, data=b"", kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.linkname, ti.mtime, ti.mode = kind, link, 0, 0o644
    ti.size = len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(ti, io.BytesIO(data) if ti.size else None)

with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    if case != "manifest-late":
        member(t, "MANIFEST.json", manifest)
    for name in sorted(files):
        data = files[name]
        if case == "flipped" and name == "b.bin":
            data = data[:3] + bytes([data[3] ^ 1]) + data[4:]
        member(t, name, data)
    if case == "manifest-late":
        member(t, "MANIFEST.json", manifest)
    extra = {
        "absolute": lambda: member(t, "/tmp/evil.bin", b"x"),
        "dotdot": lambda: member(t, "../evil.bin", b"x"),
        "subdir": lambda: member(t, "sub/evil.bin", b"x"),
        "symlink": lambda: member(t, "link.bin", kind=tarfile.SYMTYPE, link="/etc/passwd"),
        "hardlink": lambda: member(t, "hard.bin", kind=tarfile.LNKTYPE, link="a.bin"),
        "device": lambda: member(t, "null", kind=tarfile.CHRTYPE),
        "fifo": lambda: member(t, "pipe", kind=tarfile.FIFOTYPE),
        "directory": lambda: member(t, "dir", kind=tarfile.DIRTYPE),
        "duplicate": lambda: member(t, "a.bin", files["a.bin"]),
        "unlisted": lambda: member(t, "c.bin", b"not in the manifest"),
    }
    if case in extra:
        extra[case]()
PY
}

# ---- split / merge ----

@test "--help and --version" {
	run --separate-stderr fmt-shard --help
	assert_success
	assert_line --index 0 --partial "Usage: fmt-shard split INPUT"
	[ -z "$stderr" ]
	run fmt-shard --version
	assert_output "fmt-shard fmtkit 0.1.0"
}

@test "usage errors: no subcommand, unknown subcommand, misplaced options (exit 2)" {
	run fmt-shard
	assert_failure 2
	run fmt-shard frobnicate model.safetensors
	assert_failure 2
	run fmt-shard merge model.safetensors
	assert_failure 2
	assert_output --partial "needs -o"
	run fmt-shard pack model.safetensors
	assert_failure 2
	run fmt-shard merge --max-size 1MB model.safetensors -o x.safetensors
	assert_failure 2
	run fmt-shard split --max-size 1MB --max-tensors 2 model.safetensors
	assert_failure 2
	run fmt-shard split --max-size 12XB model.safetensors
	assert_failure 2
	run fmt-shard split --max-tensors 0 model.safetensors
	assert_failure 2
	run fmt-shard split --no-tensor-first-split model.safetensors
	assert_failure 2
	assert_output --partial "GGUF only"
	[ -z "$(ls model-* 2>/dev/null)" ]
}

@test "safetensors: split by tensor count, exact HF index, merge equals the one-piece conversion" {
	run fmt-shard split --max-tensors 2 model.safetensors
	assert_success
	assert_line --index 0 "model-00001-of-00003.safetensors: 2 tensors, 24 bytes of tensor data"
	assert_line --index 1 "model-00002-of-00003.safetensors: 2 tensors, 52 bytes of tensor data"
	assert_line --index 2 "model-00003-of-00003.safetensors: 1 tensor, 16 bytes of tensor data"
	assert_line --index 3 "model.safetensors.index.json: index"
	cat >expected.json <<-'EOF'
	{"metadata":{"total_size":92},"weight_map":{
	 "step":"model-00001-of-00003.safetensors","layers.0.bias":"model-00001-of-00003.safetensors",
	 "layers.0.weight":"model-00002-of-00003.safetensors","layers.1.bias":"model-00002-of-00003.safetensors",
	 "layers.1.weight":"model-00003-of-00003.safetensors"}}
	EOF
	[ "$(jq -S . model.safetensors.index.json)" = "$(jq -S . expected.json)" ]
	# transformers' layout: indent 2, sorted keys, trailing newline
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert open(sys.argv[1]).read() == json.dumps(d, indent=2, sort_keys=True) + "\n"' model.safetensors.index.json
	# every shard is a complete safetensors file carrying the model's metadata
	for i in 1 2 3; do
		[ "$(fmt-inspect --json model-0000$i-of-00003.safetensors | jq -r .metadata.format)" = pt ]
	done
	fmt-verify model.safetensors.index.json
	run fmt-shard merge model.safetensors.index.json -o merged.safetensors
	assert_success
	fmt-convert --dtype keep model.safetensors converted.safetensors
	cmp merged.safetensors converted.safetensors
}

@test "safetensors: --max-size, a tensor above the limit gets a shard of its own" {
	run fmt-shard split --max-size 30 -o part model.safetensors
	assert_success
	# 8 + 16 | 48 (alone: above 30) | 16 + 4
	assert_line --index 0 "part-00001-of-00003.safetensors: 2 tensors, 24 bytes of tensor data"
	assert_line --index 1 "part-00002-of-00003.safetensors: 1 tensor, 48 bytes of tensor data"
	assert_line --index 2 "part-00003-of-00003.safetensors: 2 tensors, 20 bytes of tensor data"
	[ "$(jq .metadata.total_size part.safetensors.index.json)" = 92 ]
	[ "$(jq -r '.weight_map["layers.0.weight"]' part.safetensors.index.json)" = part-00002-of-00003.safetensors ]
	fmt-shard merge part.safetensors.index.json -o merged.safetensors
	cmp merged.safetensors model.safetensors
}

@test "safetensors: the default limit (5 GB) gives a set of one; a set is re-split" {
	run fmt-shard split model.safetensors
	assert_success
	assert_line --index 0 "model-00001-of-00001.safetensors: 5 tensors, 92 bytes of tensor data"
	run fmt-shard split --max-tensors 1 -o again model.safetensors.index.json
	assert_success
	[ -f again-00005-of-00005.safetensors ]
	fmt-shard merge again.safetensors.index.json -o merged.safetensors
	cmp merged.safetensors model.safetensors
}

@test "--dry-run prints the plan (text and JSON) and writes nothing" {
	run fmt-shard split --dry-run --max-tensors 2 model.safetensors
	assert_success
	assert_line --index 0 "model-00001-of-00003.safetensors: 2 tensors, 24 bytes of tensor data"
	run fmt-shard split --dry-run --json --max-size 30 model.safetensors
	assert_success
	[ "$(jq -c '[.shards[] | [.file, .tensors, .bytes]]' <<<"$output")" = '[["model-00001-of-00003.safetensors",2,24],["model-00002-of-00003.safetensors",1,48],["model-00003-of-00003.safetensors",2,20]]' ]
	[ "$(jq -r .index <<<"$output")" = model.safetensors.index.json ]
	[ "$(jq -r .format <<<"$output")" = safetensors ]
	[ "$(ls)" = model.safetensors ]
}

@test "--json after a real split describes what was written" {
	run --separate-stderr fmt-shard split --json --max-size 30 model.safetensors
	assert_success
	[ "$(jq -r '.shards | length' <<<"$output")" = 3 ]
	[ "$(jq .dry_run <<<"$output")" = false ]
	for f in $(jq -r '.shards[].file, .index' <<<"$output"); do [ -f "$f" ]; done
}

@test "split --json lists each file's file_bytes, fmt-convert's key: with --dry-run as the split writes it, after it as written (old: no file_bytes)" {
	run --separate-stderr fmt-shard split --dry-run --json --max-size 30 model.safetensors
	assert_success
	assert_equal "$(jq -c '[.shards[] | .file_bytes]' <<<"$output")" '[192,160,196]'
	local dry=$output
	run --separate-stderr fmt-shard split --json --max-size 30 model.safetensors
	assert_success
	assert_equal "$(jq -c '[.shards, .index]' <<<"$output")" "$(jq -c '[.shards, .index]' <<<"$dry")"
	assert_equal "$(jq -r '.shards[] | "\(.file) \(.file_bytes)"' <<<"$output")" \
		"$(for f in model-0000?-of-00003.safetensors; do echo "$f $(stat -c %s "$f")"; done)"
	# the same keys as fmt-convert --json's report of the same set
	run --separate-stderr fmt-convert --json --shard 30 model.safetensors conv.safetensors
	assert_success
	assert_equal "$(jq -c '[.shards[] | keys_unsorted], (.shards | map(.tensors, .bytes, .file_bytes))' <<<"$output")" \
		"$(jq -c '[.shards[] | keys_unsorted], (.shards | map(.tensors, .bytes, .file_bytes))' <<<"$dry")"
	make_apsim
	run --separate-stderr fmt-shard split --dry-run --json --max-size 20 model.apsim
	assert_success
	dry=$output
	run --separate-stderr fmt-shard split --json --max-size 20 model.apsim
	assert_success
	assert_equal "$(jq -c '[.shards, .index]' <<<"$output")" "$(jq -c '[.shards, .index]' <<<"$dry")"
	assert_equal "$(jq -r '.shards[] | "\(.file) \(.file_bytes)"' <<<"$output")" \
		"$(for f in model-0000?-of-0000?.apsim; do echo "$f $(stat -c %s "$f")"; done)"
}

@test "existing outputs are refused without -f, before anything is written (exit 2)" {
	touch model-00003-of-00003.safetensors
	run fmt-shard split --max-tensors 2 model.safetensors
	assert_failure 2
	assert_output --partial "model-00003-of-00003.safetensors: output exists"
	[ ! -e model-00001-of-00003.safetensors ]
	[ ! -s model-00003-of-00003.safetensors ]
	run fmt-shard split -f --max-tensors 2 model.safetensors
	assert_success
	[ -s model-00003-of-00003.safetensors ]
	echo keep >merged.safetensors
	run fmt-shard merge model.safetensors.index.json -o merged.safetensors
	assert_failure 2
	[ "$(cat merged.safetensors)" = keep ]
	run fmt-shard merge -f model.safetensors.index.json -o merged.safetensors
	assert_success
	cmp merged.safetensors model.safetensors
}

@test "an output that is one of the input files is refused" {
	fmt-shard split --max-tensors 2 model.safetensors
	run fmt-shard split -f --max-tensors 2 -o model model.safetensors.index.json
	assert_failure 2
	fmt-verify model.safetensors.index.json
}

@test "GGUF: gguf-split layout and keys, merge equals the one-piece conversion" {
	make_gguf
	run fmt-shard split --max-tensors 2 model.gguf
	assert_success
	assert_line --index 0 "model-00001-of-00003.gguf: 2 tensors, 24 bytes of tensor data"
	refute_output --partial "index"
	[ ! -e model.gguf.index.json ]
	# a non-first shard holds only its split keys, with gguf-split's exact types and order
	assert_equal "$(gguf_raw_keys model-00002-of-00003.gguf)" "split.no u16 1
split.tensors.count i32 5
split.count u16 3"
	# the first shard carries the model's metadata
	[ "$(fmt-inspect --json --format gguf model-00001-of-00003.gguf | jq .tensor_count)" = 5 ]
	fmt-shard merge model-00001-of-00003.gguf -o merged.gguf
	fmt-convert --dtype keep model.gguf converted.gguf
	cmp merged.gguf converted.gguf
}

@test "merge of a model set to an output named as another format's file is exit 2, nothing written (old: GGUF bytes in merged.safetensors, exit 0)" {
	make_gguf
	fmt-shard split --max-tensors 2 model.gguf -o model
	run --separate-stderr fmt-shard merge model-00001-of-00003.gguf -o merged.safetensors
	assert_failure 2
	assert_output ''
	assert_equal "$stderr" "fmt-shard: error: model-00001-of-00003.gguf: merge writes the set's format (gguf), not the safetensors that an output named *.safetensors would be: name it *.gguf, or convert with fmt-convert"
	[ ! -e merged.safetensors ]
	# a dataset's name, and a set's index name for one file, the same
	run fmt-shard merge model-00001-of-00003.gguf -o merged.csv
	assert_failure 2
	assert_output "fmt-shard: error: model-00001-of-00003.gguf: merge writes the set's format (gguf), not the csv that an output named *.csv would be: name it *.gguf, or convert with fmt-convert"
	fmt-shard split --max-tensors 2 model.safetensors -o st
	run fmt-shard merge st.safetensors.index.json -o whole.safetensors.index.json
	assert_failure 2
	assert_output "fmt-shard: error: st.safetensors.index.json: merge writes the set's format (safetensors), not the safetensors-index that an output named *.safetensors.index.json would be: name it *.safetensors, or convert with fmt-convert"
	[ ! -e merged.csv ] && [ ! -e whole.safetensors.index.json ]
	# the set's own extension, or a name no format claims, as before
	fmt-shard merge model-00001-of-00003.gguf -o merged.gguf
	fmt-shard merge model-00001-of-00003.gguf -o merged.bin
	cmp merged.gguf merged.bin
	# fmt-convert is the way to another format
	fmt-convert model-00001-of-00003.gguf converted.safetensors
	assert_equal "$(fmt-inspect --json converted.safetensors | jq -r .format)" safetensors
}

@test "issue 20 item 4: any GGUF shard opens the whole set in merge, convert, inspect and verify" {
	fmt-convert --to gguf --dtype keep --arch llama model.safetensors model.gguf
	fmt-shard split -q --max-tensors 2 model.gguf
	fmt-shard merge model-00001-of-00003.gguf -o m1.gguf
	for no in 2 3; do
		shard=model-0000$no-of-00003.gguf
		run --separate-stderr fmt-shard merge $shard -o m$no.gguf
		assert_success
		assert_equal "$output" "m$no.gguf: 5 tensors from 3 files"
		cmp m1.gguf m$no.gguf
		# fmt-convert: every tensor and the first shard's metadata, no split keys
		fmt-convert $shard x$no.safetensors
		assert_equal "$(fmt-inspect --json x$no.safetensors | jq -c '[.tensor_count, .metadata["general.architecture"]]')" '[5,"llama"]'
		cmp x$no.safetensors <(fmt-convert model.gguf - --to safetensors)
		run fmt-inspect --json $shard
		assert_equal "$(jq -c '[.file, .files, .tensor_count, [.tensors[].name], .metadata]' <<<"$output")" \
			"[\"$shard\",3,5,[\"step\",\"layers.0.bias\",\"layers.0.weight\",\"layers.1.bias\",\"layers.1.weight\"],{\"general.architecture\":\"llama\",\"format\":\"pt\",\"general.file_type\":0}]"
		run fmt-verify $shard
		assert_success
		assert_output "$shard: ok (gguf, 5 tensors, 3 files, $(cat model-0000?-of-00003.gguf | wc -c) bytes)"
	done
	# an output that is a member of the set is refused, whichever member is named
	cp model-00001-of-00003.gguf before.gguf
	run --separate-stderr fmt-shard merge model-00003-of-00003.gguf -f -o model-00001-of-00003.gguf
	assert_equal "$status" 2
	[[ "$stderr" == "fmt-shard: error: "*"same file"* ]] || fail "stderr: $stderr"
	cmp before.gguf model-00001-of-00003.gguf
}

@test "issue 20 item 4: missing GGUF shards are exit 9 naming every one, from any member; nothing written" {
	fmt-convert --to gguf --dtype keep model.safetensors model.gguf
	fmt-shard split -q --max-tensors 2 model.gguf
	rm model-00001-of-00003.gguf
	for cmd in "fmt-shard merge model-00002-of-00003.gguf -o out.gguf" "fmt-convert model-00002-of-00003.gguf out.safetensors" \
		   "fmt-inspect model-00002-of-00003.gguf" "fmt-verify model-00002-of-00003.gguf"; do
		run --separate-stderr $cmd
		assert_equal "$status" 9
		assert_equal "$stderr" "${cmd%% *}: error: model-00002-of-00003.gguf: 1 of the set's 3 shards is missing: model-00001-of-00003.gguf"
		assert_equal "$output" ""
	done
	[ ! -e out.gguf ] && [ ! -e out.safetensors ]
	rm model-00002-of-00003.gguf
	run --separate-stderr fmt-shard merge model-00003-of-00003.gguf -o out.gguf
	assert_equal "$status" 9
	assert_equal "$stderr" "fmt-shard: error: model-00003-of-00003.gguf: 2 of the set's 3 shards are missing: model-00001-of-00003.gguf, model-00002-of-00003.gguf"
	[ ! -e out.gguf ]
	# a non-first shard under another name cannot find the others
	fmt-shard split -q -f --max-tensors 2 model.gguf
	cp model-00002-of-00003.gguf renamed.gguf
	run --separate-stderr fmt-convert renamed.gguf out.safetensors
	assert_equal "$status" 9
	assert_equal "$stderr" "fmt-convert: error: renamed.gguf: shard 2 of 3 of a gguf-split set, but its name is not NAME-00002-of-00003.gguf, so the other shards cannot be found"
	[ ! -e out.safetensors ]
}

@test "GGUF: default 128 tensors per shard, --max-size and --no-tensor-first-split" {
	make_gguf
	run fmt-shard split --dry-run model.gguf
	assert_success
	assert_line --index 0 "model-00001-of-00001.gguf: 5 tensors, 92 bytes of tensor data"
	run fmt-shard split --no-tensor-first-split --max-tensors 3 model.gguf
	assert_success
	assert_line --index 0 "model-00001-of-00003.gguf: 0 tensors, 0 bytes of tensor data"
	assert_line --index 1 "model-00002-of-00003.gguf: 3 tensors, 72 bytes of tensor data"
	fmt-shard merge model-00001-of-00003.gguf -o merged.gguf
	fmt-convert --dtype keep model.gguf converted.gguf
	cmp merged.gguf converted.gguf
	rm model-0000*
	# GGUF sizes count align_up(bytes, 32): 32 + 32 | 64 | 32 + 32
	run fmt-shard split --max-size 64 model.gguf
	assert_success
	assert_line --index 1 "model-00002-of-00003.gguf: 1 tensor, 48 bytes of tensor data"
	fmt-shard merge model-00001-of-00003.gguf -o merged2.gguf
	cmp merged2.gguf converted.gguf
}

@test ".apsim: split, the index, merge equals the apsim writer's output" {
	make_apsim
	run fmt-shard split --max-size 1 model.apsim
	assert_success
	[ -f model.apsim.index.json ]
	n=$(ls model-0*-of-*.apsim | wc -l)
	[ "$n" -ge 2 ]
	fmt-verify model.apsim.index.json
	[ "$(jq -r .metadata.format model.apsim.index.json)" = apsi-model ]
	[ "$(jq -r '.metadata.shard_sha256 | length' model.apsim.index.json)" = "$n" ]
	fmt-shard merge model.apsim.index.json -o merged.apsim
	fmt-shard merge model.apsim -o rewritten.apsim
	cmp merged.apsim rewritten.apsim
	fmt-verify merged.apsim
}

@test ".apsim: --dry-run matches what a real split writes" {
	make_apsim
	run fmt-shard split --dry-run --json --max-size 20 model.apsim
	assert_success
	plan=$(jq -c '[.shards[] | [.file, .tensors, .bytes]]' <<<"$output")
	run fmt-shard split --json --max-size 20 model.apsim
	assert_success
	[ "$(jq -c '[.shards[] | [.file, .tensors, .bytes]]' <<<"$output")" = "$plan" ]
	for f in $(jq -r '.shards[].file' <<<"$output"); do [ -f "$f" ]; done
}

@test ".apsim: --no-tensor-first-split is a usage error" {
	make_apsim
	run fmt-shard split --no-tensor-first-split model.apsim
	assert_failure 2
}

# ---- bundles ----

@test "pack and unpack: every file comes back identical; the manifest is first" {
	fmt-shard split --max-tensors 2 model.safetensors
	run fmt-shard pack model.safetensors.index.json -o set.tar
	assert_success
	assert_output "set.tar: 4 files, $(cat model-0000*-of-00003.safetensors model.safetensors.index.json | wc -c) bytes (safetensors-index)"
	[ "$(tar tf set.tar | head -n 1)" = MANIFEST.json ]
	[ "$(tar tf set.tar | tail -n +2 | tr '\n' ' ')" = "model-00001-of-00003.safetensors model-00002-of-00003.safetensors model-00003-of-00003.safetensors model.safetensors.index.json " ]
	tar xOf set.tar MANIFEST.json >manifest.json
	[ "$(jq -r .format manifest.json)" = safetensors-index ]
	[ "$(jq -r '.files["model.safetensors.index.json"].sha256' manifest.json)" = "$(sha256sum model.safetensors.index.json | cut -d' ' -f1)" ]
	# compact JSON with sorted keys
	[ "$(jq -cS . manifest.json)" = "$(cat manifest.json)" ]
	tar tvf set.tar | grep -v '^-rw-r--r-- 0/0 ' && fail "owner or mode not normalised"
	mkdir out
	run fmt-shard unpack set.tar -C out
	assert_success
	assert_line --index 0 "out/model-00001-of-00003.safetensors"
	for f in model-0000*-of-00003.safetensors model.safetensors.index.json; do cmp "$f" "out/$f"; done
	[ "$(ls out | wc -l)" = 4 ]
	fmt-verify out/model.safetensors.index.json
}

@test "pack is deterministic: the same set gives the same bytes" {
	fmt-shard split --max-tensors 2 model.safetensors
	fmt-shard pack model.safetensors.index.json -o one.tar
	touch model-00001-of-00003.safetensors
	sleep 1
	fmt-shard pack model.safetensors.index.json -o two.tar
	cmp one.tar two.tar
	fmt-shard pack model.safetensors.index.json -o one.tar.zst
	fmt-shard pack model.safetensors.index.json -o two.tar.zst
	cmp one.tar.zst two.tar.zst
}

@test ".zst bundle: zstd-compressed, readable by zstd and tar, round trip" {
	make_gguf
	fmt-shard split --max-tensors 2 model.gguf
	run fmt-shard pack -j model-00001-of-00003.gguf -o set.tar.zst
	assert_success
	[ "$(jq .zstd <<<"$output")" = true ]
	[ "$(jq -r .format <<<"$output")" = gguf ]
	[ "$(head -c 4 set.tar.zst | xxd -p)" = 28b52ffd ]
	zstd -dc set.tar.zst | tar t >list
	[ "$(head -n 1 list)" = MANIFEST.json ]
	[ "$(wc -l <list)" = 4 ]
	run fmt-shard unpack set.tar.zst -C out
	assert_success
	for f in model-0000*-of-00003.gguf; do cmp "$f" "out/$f"; done
	fmt-shard merge out/model-00001-of-00003.gguf -o merged.gguf
	fmt-convert --dtype keep model.gguf converted.gguf
	cmp merged.gguf converted.gguf
}

@test "pack a single file; existing bundle refused without -f" {
	fmt-shard pack model.safetensors -o one.tar
	[ "$(tar tf one.tar | tr '\n' ' ')" = "MANIFEST.json model.safetensors " ]
	run fmt-shard pack model.safetensors -o one.tar
	assert_failure 2
	fmt-shard pack -f model.safetensors -o one.tar
}

@test "unpack: an existing file is refused without -f (exit 2, unchanged), replaced with -f" {
	fmt-shard pack model.safetensors -o one.tar
	mkdir out
	echo mine >out/model.safetensors
	run fmt-shard unpack one.tar -C out
	assert_failure 2
	[ "$(cat out/model.safetensors)" = mine ]
	[ "$(ls -A out)" = model.safetensors ]
	run fmt-shard unpack -f one.tar -C out
	assert_success
	cmp out/model.safetensors model.safetensors
}

@test "unpack -f never replaces the bundle (or a hard link of it) nor a key file the options name: exit 2, every file as it was" {
	# A member whose destination was the bundle itself, or the -p / --secret-file key, replaced
	# it with exit 0.
	fmt-shard pack -q model.safetensors -o one.tar
	mkdir d1 d2 d3
	cp one.tar d1/model.safetensors
	run --separate-stderr fmt-shard unpack -f d1/model.safetensors -C d1
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: d1/model.safetensors: member 'model.safetensors' would replace the bundle itself (d1/model.safetensors)"
	cmp one.tar d1/model.safetensors
	ln one.tar d2/model.safetensors
	run --separate-stderr fmt-shard unpack -f one.tar -C d2
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: one.tar: member 'model.safetensors' would replace the bundle itself (d2/model.safetensors)"
	cmp one.tar d2/model.safetensors
	fmt-sign keygen -W -p k.pub -s k.key >/dev/null
	cp k.pub d3/model.safetensors
	run --separate-stderr fmt-shard unpack -f -p d3/model.safetensors one.tar -C d3
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: one.tar: d3/model.safetensors names the same file as --pubkey (d3/model.safetensors)"
	printf 'team\n' >d3/model.safetensors
	run --separate-stderr fmt-shard unpack -f --secret-file d3/model.safetensors one.tar -C d3
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: one.tar: d3/model.safetensors names the same file as --secret-file (d3/model.safetensors)"
	assert_equal "$(cat d3/model.safetensors)" team
	[ -z "$(ls -A d1 d2 d3 | grep fmtkit || true)" ]
	# elsewhere, -f still replaces
	run fmt-shard unpack -q -f one.tar -C d3
	assert_success
	cmp d3/model.safetensors model.safetensors
}

@test "unpack never writes into a trusted keys directory (--trusted-keys DIR, the per-user key directory): exit 2, nothing written" {
	# A bundle signed by a trusted key could plant a key file there: unpacked with
	# --trusted-keys keys -C keys, its planted.pub (covered by its own .minisig) became a key
	# that every later check with --trusted-keys keys trusts; unpacked without key options into
	# $XDG_CONFIG_HOME/fmtkit, an ed25519.pub that fmt-sign verify trusts by default.
	export XDG_CONFIG_HOME=$PWD/cfg
	fmt-sign keygen -W -p good.pub -s good.key >/dev/null
	fmt-sign keygen -W -p evil.pub -s evil.key >/dev/null
	cp evil.pub planted.pub
	cp evil.pub ed25519.pub
	for f in model.safetensors planted.pub ed25519.pub; do fmt-sign sign -q -s good.key "$f" </dev/null; done
	/usr/bin/python3 - <<'PY'
import hashlib, io, json, tarfile
def bundle(out, names):
    files = {n: open(n, "rb").read() for n in names}
    manifest = json.dumps({"files": {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
                                     for n, d in files.items()}, "fmtkit": "0.1.0", "format": "safetensors"},
                          separators=(",", ":"), sort_keys=True).encode()
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        for name, data in [("MANIFEST.json", manifest)] + sorted(files.items()):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
            t.addfile(ti, io.BytesIO(data))
bundle("plant.tar", ["model.safetensors", "model.safetensors.minisig", "planted.pub", "planted.pub.minisig"])
bundle("default.tar", ["model.safetensors", "ed25519.pub"])
PY
	mkdir keys
	cp good.pub keys/
	run --separate-stderr fmt-shard unpack --trusted-keys keys plant.tar -C keys
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: plant.tar: keys/model.safetensors would be written into the trusted keys directory keys (--trusted-keys): a file there could become a trusted key"
	[ "$(ls -A keys)" = good.pub ]
	# the same directory by another name, and with -f
	run --separate-stderr fmt-shard unpack -f --trusted-keys keys plant.tar -C ./keys/
	assert_failure 2
	[ "$(ls -A keys)" = good.pub ]
	mkdir -p cfg/fmtkit
	run --separate-stderr fmt-shard unpack default.tar -C cfg/fmtkit
	assert_failure 2
	assert_equal "$stderr" "fmt-shard: error: default.tar: cfg/fmtkit/ed25519.pub would be written into the per-user key directory $PWD/cfg/fmtkit/: a file there could become a trusted key"
	[ -z "$(ls -A cfg/fmtkit)" ]
	# elsewhere both unpack
	run fmt-shard unpack -q --trusted-keys keys plant.tar -C out
	assert_success
	cmp out/planted.pub evil.pub
	run fmt-shard unpack -q default.tar -C out2
	assert_success
}

@test "a well-formed bundle from Python's tarfile unpacks" {
	mkbundle ok.tar ok
	run fmt-shard unpack ok.tar -C out
	assert_success
	[ "$(cat out/a.bin)" = "first member" ]
}

hostile() { # CASE EXIT MESSAGE
	mkbundle "$1.tar" "$1"
	mkdir -p "out-$1"
	run --separate-stderr fmt-shard unpack "$1.tar" -C "out-$1"
	[ "$status" -eq "$2" ] || fail "$1: exit $status, expected $2; stderr: $stderr"
	[[ "$stderr" == *"$3"* ]] || fail "$1: stderr lacks '$3': $stderr"
	[ -z "$(ls -A "out-$1")" ] || fail "$1: left behind: $(ls -A "out-$1")"
	[ -z "$(ls -A /tmp/evil.bin 2>/dev/null)" ]
	[ ! -e evil.bin ]
}

@test "hostile bundles: unsafe members are InvalidFormat (exit 4), nothing left behind" {
	hostile absolute 4 "is an absolute path"
	hostile dotdot 4 "'..' component"
	hostile subdir 4 "plain file names"
	hostile symlink 4 "symbolic link"
	hostile hardlink 4 "hard link"
	hostile device 4 "is a device"
	hostile fifo 4 "FIFO"
	hostile directory 4 "is a directory"
	hostile duplicate 4 "duplicate member 'a.bin'"
	hostile manifest-late 4 "a tar archive, not an fmtkit bundle: its first member is 'a.bin', not MANIFEST.json"
}

@test "hostile bundles: member set differs from the manifest (exit 9)" {
	hostile unlisted 9 "'c.bin' is not listed in MANIFEST.json"
	hostile manifest-extra 9 "MANIFEST.json lists 'c.bin' but the bundle has no such member"
}

@test "hostile bundles: a flipped byte is ChecksumMismatch (exit 6), DIR left empty" {
	hostile flipped 6 "member 'b.bin': SHA-256"
}

@test "unpack creates a missing DIR and removes it again on failure" {
	mkbundle bad.tar flipped
	run fmt-shard unpack bad.tar -C fresh
	assert_failure 6
	[ ! -e fresh ]
	mkbundle ok.tar ok
	fmt-shard unpack ok.tar -C fresh
	[ -f fresh/b.bin ]
}

@test "not a bundle: a model file or garbage is InvalidFormat" {
	run fmt-shard unpack model.safetensors -C out
	assert_failure 4
	head -c 3000 /dev/urandom >junk.tar
	run fmt-shard unpack junk.tar -C out
	assert_failure 4
	fmt-shard pack model.safetensors -o t.tar
	head -c 700 t.tar >truncated.tar
	run fmt-shard unpack truncated.tar -C out2
	[ "$status" -eq 4 ] || [ "$status" -eq 9 ]
	[ -z "$(ls -A out2 2>/dev/null)" ]
}

@test "a bundle cut at a member boundary (no end-of-archive marker) is exit 4 in fmt-verify and unpack, also .tar.zst and from a pipe; nothing written" {
	# libarchive ends at the end of the data as it does at the two zero blocks that end a tar:
	# fmt-verify passed such a bundle (exit 0) and fmt-shard unpack wrote its members.
	fmt-shard split -q --max-tensors 2 model.safetensors
	fmt-shard pack -q model.safetensors.index.json -o set.tar
	# cut.tar: up to the end of the last member; lone.tar: one zero block of the two;
	# first.tar: up to the end of the first shard (the other members and the marker lost)
	/usr/bin/python3 - set.tar <<'PY'
import sys, tarfile
data = open(sys.argv[1], "rb").read()
ends = [m.offset_data + (m.size + 511) // 512 * 512 for m in tarfile.open(sys.argv[1]).getmembers()]
open("cut.tar", "wb").write(data[:ends[-1]])
open("lone.tar", "wb").write(data[:ends[-1] + 512])
open("first.tar", "wb").write(data[:ends[1]])
PY
	zstd -q -c cut.tar >cut.tar.zst
	msg="truncated: the bundle ends after member 'model.safetensors.index.json' without the end-of-archive marker (two zero blocks of 512 bytes)"
	for b in cut.tar lone.tar cut.tar.zst; do
		run --separate-stderr fmt-verify "$b"
		assert_failure 4
		assert_equal "$stderr" "fmt-verify: error: $b: $msg"
		run --separate-stderr fmt-shard unpack "$b" -C out
		assert_failure 4
		assert_equal "$stderr" "fmt-shard: error: $b: $msg"
		[ ! -e out ]
	done
	run --separate-stderr bash -c 'cat cut.tar | fmt-verify -'
	assert_failure 4
	assert_equal "$stderr" "fmt-verify: error: -: $msg"
	mkdir out
	run --separate-stderr fmt-shard unpack first.tar -C out
	assert_failure 4
	assert_equal "$stderr" "fmt-shard: error: first.tar: truncated: the bundle ends after member 'model-00001-of-00003.safetensors' without the end-of-archive marker (two zero blocks of 512 bytes)"
	[ -z "$(ls -A out)" ]
	# the whole bundle still passes
	run fmt-verify set.tar
	assert_success
}

@test "a .tar.zst cut inside its compressed data says truncated (exit 4), before the first member or inside one; nothing written" {
	# cut before a member could be decoded it was "unrecognised format" (fmt-verify FILE) or
	# "not a tar bundle: Truncated zstd input" (a pipe, unpack)
	/usr/bin/python3 -c '
import json, struct, sys
import numpy as np
a = np.random.default_rng(7).normal(0, 1, (256, 512)).astype("<f4")
h = json.dumps({"w": {"dtype": "F32", "shape": [256, 512], "data_offsets": [0, a.nbytes]}}).encode()
sys.stdout.buffer.write(struct.pack("<Q", len(h)) + h + a.tobytes())' >big.safetensors
	fmt-shard pack -q big.safetensors -o big.tar.zst
	head -c 20 big.tar.zst >head.tar.zst
	head -c $(($(stat -c %s big.tar.zst) * 6 / 10)) big.tar.zst >mid.tar.zst
	local first="truncated: the bundle ends before its first member (Truncated zstd input)"
	local inside="truncated: the bundle ends inside member 'big.safetensors' (Truncated zstd input)"
	for pair in "head.tar.zst|$first" "mid.tar.zst|$inside"; do
		b=${pair%%|*}
		run --separate-stderr fmt-verify "$b"
		assert_failure 4
		assert_equal "$stderr" "fmt-verify: error: $b: ${pair#*|}"
		run --separate-stderr bash -c 'fmt-verify - <"$1"' _ "$b"
		assert_failure 4
		assert_equal "$stderr" "fmt-verify: error: -: ${pair#*|}"
		run --separate-stderr fmt-shard unpack "$b" -C out
		assert_failure 4
		assert_equal "$stderr" "fmt-shard: error: $b: ${pair#*|}"
		[ ! -e out ]
	done
	# a whole zstd frame of something that is not a tar is still not a bundle, and says what it
	# is, file or standard input, in every tool (old: 'unrecognised format (not one of: ...)' for
	# a file, 'not a tar bundle: Unrecognized archive format' for standard input)
	printf 'a,b\n1,2\n' | zstd -q -c >hello.zst
	local zst="zstd-compressed data that is no tar, which fmtkit does not read: \`zstd -dc\` decompresses it (a .csv.zst, say: \`zstd -dc F | fmt-convert --from csv - OUT\`)"
	for tool in fmt-verify fmt-inspect; do
		run --separate-stderr "$tool" hello.zst
		assert_failure 4
		assert_equal "$stderr" "$tool: error: hello.zst: $zst"
		run --separate-stderr bash -c "$tool - <hello.zst"
		assert_failure 4
		assert_equal "$stderr" "$tool: error: -: $zst"
	done
	run --separate-stderr fmt-convert hello.zst out.parquet
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: hello.zst: $zst"
	run --separate-stderr fmt-shard unpack hello.zst -C out
	assert_failure 4
	assert_equal "$stderr" "fmt-shard: error: hello.zst: $zst"
	[ ! -e out ] && [ ! -e out.parquet ]
	# ... and the way round it works
	run bash -c 'zstd -dc hello.zst | fmt-convert -q --from csv - out.parquet && fmt-convert --to csv out.parquet -'
	assert_success
	assert_output $'a,b\n1,2'
	run fmt-verify big.tar.zst
	assert_success
}

@test "unpack of a device or a directory is exit 3 before anything is read, as every tool refuses a device (it read /dev/zero: exit 4 'empty archive')" {
	mkdir d
	for f in /dev/zero /dev/null d; do
		run --separate-stderr timeout 10 fmt-shard unpack "$f" -C out
		assert_failure 3
		[ ! -e out ] || fail "unpack of $f made out/"
	done
	assert_equal "$stderr" "fmt-shard: error: d: is a directory"
	run --separate-stderr timeout 10 fmt-shard unpack /dev/zero -C out
	assert_equal "$stderr" "fmt-shard: error: /dev/zero: is a character device (expected a regular file or a pipe)"
}

@test "split -o NAME.EXT names the set NAME-0000i-of-0000N.EXT (old: NAME.EXT-0000i-of-0000N.EXT), as fmt-convert --shard does" {
	make_gguf
	run fmt-shard split --list --max-tensors 2 model.gguf -o out.gguf
	assert_success
	assert_output "out-00001-of-00003.gguf
out-00002-of-00003.gguf
out-00003-of-00003.gguf"
	fmt-shard split -q --max-tensors 2 model.gguf -o out.GGUF
	fmt-shard split -q --max-tensors 2 model.gguf -o same
	for i in 1 2 3; do cmp out-0000$i-of-00003.gguf same-0000$i-of-00003.gguf; done
	[ ! -e out.GGUF-00001-of-00003.gguf ]
	# the index name and the file name of a safetensors set both give the prefix
	run fmt-shard split --list --max-tensors 2 model.safetensors -o st.safetensors
	assert_success
	assert_output "st-00001-of-00003.safetensors
st-00002-of-00003.safetensors
st-00003-of-00003.safetensors
st.safetensors.index.json"
	run fmt-shard split --list --max-tensors 2 model.safetensors -o st.safetensors.index.json
	assert_output "st-00001-of-00003.safetensors
st-00002-of-00003.safetensors
st-00003-of-00003.safetensors
st.safetensors.index.json"
	# another extension, or the extension alone, is part of the prefix
	run fmt-shard split --list --max-tensors 2 model.gguf -o out.bin
	assert_line --index 0 out.bin-00001-of-00003.gguf
	run fmt-shard split --list --max-tensors 2 model.gguf -o sub/.gguf
	assert_line --index 0 sub/.gguf-00001-of-00003.gguf
	# fmt-convert names a set the same way
	fmt-convert -q --to gguf --dtype keep --shard 1 model.safetensors conv.gguf
	[ -e conv-00005-of-00005.gguf ] && [ ! -e conv.gguf ]
}
