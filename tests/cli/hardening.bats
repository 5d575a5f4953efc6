#!/usr/bin/env bats
# Issue 8 (hardening): hostile files from scripts/gen/hostile-memory and scripts/gen/hostile-bundles.
# Each test asserts the exit status and that nothing is left or changed on disk.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export HOSTILE="$BATS_FILE_TMPDIR/hostile"
	# A quarter of the benchmark's sizes: the same shapes, quick to make.
	"$REPO_ROOT/scripts/gen/hostile-memory" "$HOSTILE/memory" 0.25
	"$REPO_ROOT/scripts/gen/hostile-bundles" "$HOSTILE/bundles"
	"$REPO_ROOT/scripts/gen/hostile-text" "$HOSTILE/text"
	printf 'team secret\n' >"$BATS_FILE_TMPDIR/secret"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
	B=$HOSTILE/bundles
	SECRET=$BATS_FILE_TMPDIR/secret
	mkdir tmp
	export TMPDIR=$PWD/tmp
}

# Every file under DIR with its size and digest: compared before and after.
snapshot() {
	(cd "$1" && find . -printf '%y %p %s\n' | sort && find . -type f -exec sha256sum {} + | sort)
}

# json_of EXPR [OUT]: EXPR, a Python expression of d (the JSON document in the file OUT, or in
# $output), printed as compact JSON (strings and numbers as jq -c prints them). For the outputs of
# tens of megabytes here: jq takes four times Python's CPU time to parse them.
json_of() {
	/usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[2]))
print(json.dumps(eval(sys.argv[1]), separators=(",", ":"), ensure_ascii=False))' "$1" "${2:-/dev/stdin}" <<<"$output"
}

@test "memory: GGUF U8 array of 2^23 items, inspect and verify within 16x + 64 MB" {
	f=$HOSTILE/memory/gguf-u8-array.gguf
	run_bounded "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(jq -c '.metadata_types["hostile.array"]' <<<"$output")" '"array[u8]"'
	assert_equal "$(jq -c '.metadata["hostile.array"][-1]' <<<"$output")" '{"truncated":8388608}'
	run_bounded "$f" fmt-verify "$f"
	assert_success
	run_bounded_to full.txt "$f" fmt-inspect --metadata --full "$f"
	assert_success
	assert_equal "$(/usr/bin/python3 -c 'import sys; print(open(sys.argv[1]).read().count("0, "))' full.txt)" 8388607
	# Every item as JSON: streamed, never a tree.
	run_bounded_to full.json "$f" fmt-inspect --json --metadata --full "$f"
	assert_success
	assert_equal "$(json_of 'len(d["metadata"]["hostile.array"])' full.json)" 8388608
}

@test "memory: GGUF array of 2^22 empty strings, inspect, verify and convert within 2x + 64 MB" {
	# each string was a 40-byte value and a malloc of its own: 298 MB for this 32 MB file (audit 8)
	"$REPO_ROOT/scripts/gen/hostile-memory" full 1 gguf-str-array.gguf
	f=full/gguf-str-array.gguf
	run_bounded_times 2 - "$f" fmt-verify "$f"
	assert_success
	run_bounded_times 2 - "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(jq -c '[.metadata_types["hostile.strings"], .metadata["hostile.strings"][0], .metadata["hostile.strings"][-1]]' <<<"$output")" \
		'["array[str]","",{"truncated":4194304}]'
	run_bounded_times 2 full.json "$f" fmt-inspect --json --metadata --full "$f"
	assert_success
	assert_equal "$(json_of 'len(d["metadata"]["hostile.strings"])' full.json)" 4194304
	run_bounded_times 2 - "$f" fmt-convert -q -T 1 "$f" copy.gguf
	assert_success
	cmp "$f" copy.gguf
}

@test "memory: GGUF of 100,000 empty tensors (3.6 MB) refused (exit 4): more than 65536 tensors need 1 KiB of file each" {
	# each tensor costs about 1 KB in a conversion: 85 MB converting this file to safetensors (audit 8)
	"$REPO_ROOT/scripts/gen/hostile-memory" full 1 gguf-empty-tensors.gguf
	f=full/gguf-empty-tensors.gguf
	msg="tensor_count 100000 in a file of 3630144 bytes: more than 65536 tensors need 1024 bytes of the file each"
	for cmd in "fmt-verify" "fmt-inspect --json"; do
		run_bounded_times 2 - "$f" $cmd "$f"
		assert_equal "$status" 4
		[[ "$stderr" == *"$msg"* ]] || fail "$cmd: $stderr"
	done
	run_bounded_times 2 - "$f" fmt-convert -q -T 1 "$f" out.safetensors
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-convert: error: $f: $msg"
	[ ! -e out.safetensors ]
	# nor is such a file written: 65537 empty tensors are refused (exit 5), 65536 are written
	/usr/bin/python3 - <<'PY'
import struct
def st(n, path):
    h = ",".join('"t%05d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i for i in range(n)).encode()
    h = b"{" + h + b"}"
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h)
st(65537, "many.safetensors")
st(65536, "most.safetensors")
PY
	run --separate-stderr fmt-convert -q many.safetensors many.gguf
	assert_equal "$status" 5
	assert_equal "$stderr" "fmt-convert: error: many.safetensors: 65537 tensors in a GGUF file of 2490432 bytes: more than 65536 tensors need 1024 bytes of the file each (fmtkit's readers refuse it otherwise)"
	[ ! -e many.gguf ]
	run --separate-stderr fmt-convert -q most.safetensors most.gguf
	assert_success
	run --separate-stderr fmt-verify most.gguf
	assert_success
}

@test "memory: .apsim record of 3 million zeros, inspect and verify within 16x + 64 MB" {
	f=$HOSTILE/memory/apsim-zeros.apsim
	run_bounded "$f" fmt-verify "$f"
	assert_success
	run_bounded "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(jq -c '[.metadata_types.a, .metadata.a[0], .metadata.a[-1]]' <<<"$output")" \
		'["array[i64]",0,{"truncated":3000000}]'
}

@test "memory: safetensors header of 250000 empty tensors, inspect --json and verify within 16x + 64 MB" {
	f=$HOSTILE/memory/st-million.safetensors
	run_bounded_to st.json "$f" fmt-inspect --json "$f"
	assert_success
	assert_equal "$(json_of '[d["tensor_count"], len(d["tensors"]), d["tensors"][-1]["name"]]' st.json)" '[250000,250000,"t0249999"]'
	run_bounded "$f" fmt-verify "$f"
	assert_success
	f=$HOSTILE/memory/st-million-meta.safetensors
	run_bounded_to meta.json "$f" fmt-inspect --json --metadata "$f"
	assert_success
	assert_equal "$(json_of 'len(d["metadata"]["note"])' meta.json)" 15000000
}

@test "memory: .apsim units object of a million entries naming no tensor, refused (exit 4) within 16x + 64 MB" {
	"$REPO_ROOT/scripts/gen/hostile-memory" full 1 apsim-units.apsim
	f=full/apsim-units.apsim
	run_bounded "$f" fmt-verify "$f"
	assert_equal "$status" 4
	[[ "$stderr" == *"units 't0000000': no tensor of that name in the file"* ]] || fail "$stderr"
	run_bounded "$f" fmt-inspect --json "$f"
	assert_equal "$status" 4
}

@test "memory: an Arrow IPC compressed buffer saying 1.5 GB for one row is refused (exit 4) before it is decompressed" {
	# a zstd frame of 1.5 GB of zeros (about 60 KB) as the string data of one row: the reader
	# allocated and decompressed what its length said, up to 2 GiB a buffer (audit, 6 Dec)
	printf 'a,s\n1,x\n' >one.csv
	fmt-convert -c zstd one.csv one.arrows
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
import struct, zstandard
from arrow_ipc import Ipc
n = 1500 * 1000 * 1000
w = zstandard.ZstdCompressor(level=1).compressobj(size=n)
frame = b"".join(w.compress(bytes(1 << 24)) for _ in range(n >> 24)) + w.compress(bytes(n % (1 << 24))) + w.flush()
i = Ipc("one.arrows")
for start, root, kind, body, end in list(i.walk()):
    if kind != 3:
        continue
    bufs = i.buffers(i.ref(i.field(root, 2)))
    last = bufs + 16 * (i.u32(bufs - 4) - 1)     # the data of column s, the last buffer
    raw = struct.pack("<q", n) + frame            # its 8-byte length, then the frame
    i.put("<q", last, end - body).put("<q", last + 8, len(raw))
    i.put("<q", i.field(root, 3), end - body + len(raw) + (-len(raw) % 8))   # Message.bodyLength
    i.b[end:end] = raw + bytes(-len(raw) % 8)
    break
i.save("bomb.arrows")
PY
	local tool
	for tool in "fmt-convert bomb.arrows out.csv" "fmt-inspect --head 1 bomb.arrows" "fmt-verify bomb.arrows"; do
		run_bounded bomb.arrows $tool
		assert_equal "$status" 4
		assert_equal "$stderr" "${tool%% *}: error: bomb.arrows: Arrow IPC: field \"s\": a compressed buffer says it holds 1500000000 bytes, where the record batch's rows use 17 so far (its buffers may hold 8 times that and 16 MiB)"
	done
	[ ! -e out.csv ]
}

@test "memory: an Arrow IPC batch that truly holds 20,000,000 rows of zeros (5 KB of zstd) is refused (exit 4) by the batch's budget before it is decompressed" {
	# Its one buffer says what its rows use (160 MB), within the 8 x rows + 16 MiB rule above, and
	# the batch is decompressed whole: fmt-convert and fmt-verify said ok at 162 MiB peak RSS (exit
	# 3 under run_bounded). A batch now holds at most the budget of a Parquet row group.
	printf 'a\n1\n' >one.csv
	fmt-convert -c zstd one.csv one.arrows
	PYTHONPATH="$REPO_ROOT/tests/cli" /usr/bin/python3 - <<'PY'
import struct, zstandard
from arrow_ipc import Ipc
rows = 20 * 1000 * 1000
n = 8 * rows
w = zstandard.ZstdCompressor(level=1).compressobj(size=n)
frame = b"".join(w.compress(bytes(1 << 24)) for _ in range(n >> 24)) + w.compress(bytes(n % (1 << 24))) + w.flush()
i = Ipc("one.arrows")
for start, root, kind, body, end in list(i.walk()):
    if kind != 3:
        continue
    rb = i.ref(i.field(root, 2))
    i.put("<q", i.field(rb, 0), rows).put("<q", i.nodes(rb), rows)   # RecordBatch.length, a's field node
    bufs = i.buffers(rb)
    last = bufs + 16 * (i.u32(bufs - 4) - 1)     # the values of column a, the last buffer
    raw = struct.pack("<q", n) + frame            # its 8-byte length, then the frame
    i.put("<q", last, end - body).put("<q", last + 8, len(raw))
    i.put("<q", i.field(root, 3), end - body + len(raw) + (-len(raw) % 8))   # Message.bodyLength
    i.b[end:end] = raw + bytes(-len(raw) % 8)
    open("body", "w").write("%d" % (end - body + len(raw) + (-len(raw) % 8)))
    break
i.save("rows.arrows")
PY
	# the body's bytes (about 5 KB, as the zstd library compresses) set the budget
	local tool body=$(cat body)
	local limit=$((32 * 1048576 + 16 * body + 64 * 1048576))
	for tool in "fmt-convert rows.arrows out.csv" "fmt-inspect --head 1 rows.arrows" "fmt-verify rows.arrows"; do
		run_bounded rows.arrows $tool
		assert_equal "$status" 4
		assert_equal "$stderr" "${tool%% *}: error: rows.arrows: Arrow IPC: record batch 0: its buffers would hold more than $limit bytes decompressed, at field \"a\" (at most 32 MiB, 16 times its $body bytes in the file and 64 bytes a row of its 20000000, up to 1048576 rows: fmtkit(7), SAFETY)"
	done
	[ ! -e out.csv ]
}

# The tree budget (fmt/tree_budget.h, fmtkit(7) SAFETY): a JSON or MessagePack document of n bytes
# may hold at most (32 MiB + 8 n) / cost values, cost 64 for a jansson tree, 128 for MessagePack
# made JSON and for APR metadata, an object counting as 4 values and an array as 2; counted before
# any tree is built. Files from scripts/gen/hostile-trees.
@test "memory: .ald MessagePack card at the tree budget's edge read within 16x + 64 MB, one item more refused (exit 4)" {
	printf 'a,b\n1,2\n' >d.csv
	fmt-convert d.csv d.ald
	"$REPO_ROOT/scripts/gen/hostile-trees" ald-card d.ald 279613 edge.ald
	"$REPO_ROOT/scripts/gen/hostile-trees" ald-card d.ald 279614 over.ald
	run_bounded edge.ald fmt-verify edge.ald
	assert_success
	run_bounded edge.ald fmt-inspect --json edge.ald
	assert_success
	assert_equal "$(json_of 'len(json.loads(d["schema"]["metadata"]["ald:card"])["tags"])')" 279613
	for tool in fmt-verify fmt-inspect; do
		run_bounded over.ald $tool over.ald
		assert_equal "$status" 4
		assert_equal "$stderr" "$tool: error: over.ald: the metadata holds more than 279620 values, the most 279625 bytes may hold (fmtkit(7), SAFETY)"
	done
	run_bounded over.ald fmt-convert over.ald out.csv
	assert_equal "$status" 4
	[ ! -e out.csv ]
}

@test "memory: APR v1 MessagePack metadata of a million items refused (exit 4) within 16x + 64 MB" {
	"$REPO_ROOT/scripts/gen/hostile-trees" apr-v1 1000000 v1.apr
	for tool in fmt-verify fmt-inspect; do
		run_bounded v1.apr $tool v1.apr
		assert_equal "$status" 4
		assert_equal "$stderr" "$tool: error: v1.apr: v1 metadata holds more than 324647 values, the most 1000050 bytes may hold (fmtkit(7), SAFETY)"
	done
}

@test "memory: APR v2 JSON metadata of a million items refused (exit 4) within 16x + 64 MB" {
	"$REPO_ROOT/scripts/gen/hostile-trees" apr-v2 1000000 v2.apr
	for tool in fmt-verify fmt-inspect; do
		run_bounded v2.apr $tool v2.apr
		assert_equal "$status" 4
		assert_equal "$stderr" "$tool: error: v2.apr: the metadata holds more than 387144 values, the most 2000010 bytes may hold (fmtkit(7), SAFETY)"
	done
}

@test "memory: safetensors shape, __metadata__ and index of a million items refused (exit 4) within 16x + 64 MB" {
	"$REPO_ROOT/scripts/gen/hostile-trees" st-shape 1000000 shape.safetensors
	"$REPO_ROOT/scripts/gen/hostile-trees" st-meta 1000000 meta.safetensors
	"$REPO_ROOT/scripts/gen/hostile-trees" st-index 1000000 model.safetensors.index.json
	run_bounded shape.safetensors fmt-verify shape.safetensors
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: shape.safetensors: the header's member at byte 5 holds more than 774293 values, the most 2000046 bytes may hold (fmtkit(7), SAFETY)"
	run_bounded meta.safetensors fmt-inspect --json meta.safetensors
	assert_equal "$status" 4
	[[ "$stderr" == *'"message":"the header'"'"'s member at byte 16 holds more than 774288 values, the most 2000007 bytes may hold (fmtkit(7), SAFETY)"'* ]] || fail "$stderr"
	run_bounded model.safetensors.index.json fmt-verify model.safetensors.index.json
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-verify: error: model.safetensors.index.json: the index holds more than 774293 values, the most 2000040 bytes may hold (fmtkit(7), SAFETY)"
}

@test "memory: JSON Lines line at the tree budget's edge converted within 16x + 64 MB, one item more refused (exit 4)" {
	"$REPO_ROOT/scripts/gen/hostile-trees" jsonl 699042 edge.jsonl
	"$REPO_ROOT/scripts/gen/hostile-trees" jsonl 699043 over.jsonl
	run_bounded edge.jsonl fmt-convert edge.jsonl edge.csv
	assert_success
	assert_equal "$(head -c 8 edge.csv)" $'a\n1\n"[0,'
	run_bounded over.jsonl fmt-convert over.jsonl over.csv
	assert_equal "$status" 4
	assert_equal "$stderr" "fmt-convert: error: over.jsonl: line 2 holds more than 699049 values, the most 1398093 bytes may hold (fmtkit(7), SAFETY)"
	[ ! -e over.csv ]
}

# An allocation that fails is exit 3 'out of memory', never exit 4 as if the file were malformed:
# documents within the budget, under a 20 MB address space (the tools start in about 8).
@test "memory: running out of memory reading a tree is exit 3 'out of memory', not a malformed file" {
	asan_build && skip "sanitizer build: address-space limit not applicable"
	printf 'a,b\n1,2\n' >d.csv
	fmt-convert d.csv d.ald
	"$REPO_ROOT/scripts/gen/hostile-trees" ald-card d.ald 250000 c.ald
	"$REPO_ROOT/scripts/gen/hostile-trees" apr-v1 250000 v1.apr
	"$REPO_ROOT/scripts/gen/hostile-trees" st-meta 600000 m.safetensors
	"$REPO_ROOT/scripts/gen/hostile-trees" st-index 600000 model.safetensors.index.json
	"$REPO_ROOT/scripts/gen/hostile-trees" jsonl 600000 l.jsonl
	for f in c.ald:'the metadata' v1.apr:'v1 metadata' m.safetensors:'the header' \
		model.safetensors.index.json:'the index' l.jsonl:'line 2'; do
		run --separate-stderr bash -c 'ulimit -v 20000; exec fmt-verify "$1"' _ "${f%%:*}"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-verify: error: ${f%%:*}: out of memory reading ${f#*:}"
	done
}

# Item 10: a FIFO at a key path is refused at once (timeout would give 124).
@test "keys: a FIFO as the per-user HMAC key is refused, never waited on (exit 3)" {
	mkdir -p home/.config/fmtkit
	mkfifo -m 600 home/.config/fmtkit/hmac.key
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" f.apsim
	run --separate-stderr env HOME="$PWD/home" XDG_CONFIG_HOME= timeout 10 fmt-verify --hmac-key f.apsim
	assert_equal "$status" 3
	[[ "$stderr" == *"hmac.key: the HMAC key is not a regular file"* ]] || fail "$stderr"
	[ -p home/.config/fmtkit/hmac.key ] && cmp -s f.apsim "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim"
	assert_equal "$(ls -A home/.config/fmtkit)" hmac.key
}

@test "keys: a symbolic link as the per-user HMAC key is refused (exit 2)" {
	mkdir -p home/.config/fmtkit
	head -c 32 /dev/urandom >real.key
	chmod 600 real.key
	ln -s "$PWD/real.key" home/.config/fmtkit/hmac.key
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" f.apsim
	run --separate-stderr env HOME="$PWD/home" XDG_CONFIG_HOME= timeout 10 fmt-verify --hmac-key f.apsim
	assert_equal "$status" 2
	[[ "$stderr" == *"the HMAC key is a symbolic link"* ]] || fail "$stderr"
}

@test "keys: a FIFO nobody writes to as --secret-file is refused as empty, a pipe still works" {
	mkfifo sec
	cp "$REPO_ROOT/tests/data/fixtures/apsim/example-signed-team-secret.apsim" f.apsim
	run --separate-stderr timeout 10 fmt-verify --secret-file sec f.apsim
	assert_equal "$status" 2
	[[ "$stderr" == *"secret file sec is empty"* ]] || fail "$stderr"
	run --separate-stderr timeout 10 fmt-verify --secret-file /dev/null/x f.apsim
	assert_equal "$status" 3
	mkdir d
	run --separate-stderr timeout 10 fmt-verify --secret-file d f.apsim
	assert_equal "$status" 3
	[[ "$stderr" == *"secret file d is not a regular file or a pipe"* ]] || fail "$stderr"
	run --separate-stderr bash -c 'timeout 10 fmt-verify --secret-file <(printf "team secret\n") f.apsim'
	assert_success
}

# Item 1: with a key, every member must be covered by the verified signature.
@test "keyed bundle: a signed file plus an unsigned model (digest recomputed) is refused naming it (exit 7)" {
	before=$(snapshot "$B")
	run --separate-stderr fmt-verify --secret-file "$SECRET" "$B/signed-plus-model.tar"
	assert_equal "$status" 7
	assert_equal "$output" ""
	[[ "$stderr" == *"signed-plus-model.tar (member model.apsim): member 'model.apsim' is not covered by the verified signature of 'a.apsim'"* ]] || fail "$stderr"
	# Without a key the digests are all right: ok (nothing claims a signature).
	run fmt-verify "$B/signed-plus-model.tar"
	assert_success
	assert_equal "$(ls -A tmp)" ""
	assert_equal "$(snapshot "$B")" "$before"
}

@test "keyed bundle: a signed set plus an extra .apsim, or a README, is refused naming it (exit 7)" {
	run --separate-stderr fmt-verify --secret-file "$SECRET" "$B/set-plus-extra.tar"
	assert_equal "$status" 7
	[[ "$stderr" == *"(member extra.apsim): member 'extra.apsim' is not covered by the verified signature of 'model.apsim.index.json'"* ]] || fail "$stderr"
	run --separate-stderr fmt-verify --json --secret-file "$SECRET" "$B/set-plus-readme.tar"
	assert_equal "$status" 7
	assert_equal "$(jq -r .error <<<"$output")" SignatureInvalid
	[[ "$(jq -r .failed_file <<<"$output")" == *"set-plus-readme.tar (member README.txt)" ]] || fail "$output"
	assert_equal "$(ls -A tmp)" ""
}

@test "keyed bundle: the signed file and the signed set alone verify (exit 0), with the wrong secret 7" {
	run fmt-verify --secret-file "$SECRET" "$B/signed.tar" "$B/signed-set.tar"
	assert_success
	assert_line --index 1 "$B/signed-set.tar: ok (bundle of apsim-index, 4 files, 1534 bytes)"
	run --separate-stderr fmt-verify --secret-file <(echo other) "$B/signed-set.tar"
	assert_equal "$status" 7
	assert_equal "$(ls -A tmp)" ""
}

@test "keyed unpack: an uncovered member is refused (exit 7) and nothing is written; covered ones unpack" {
	mkdir out
	run --separate-stderr fmt-shard unpack --secret-file "$SECRET" -C out "$B/signed-plus-model.tar"
	assert_equal "$status" 7
	[[ "$stderr" == *"(member model.apsim): member 'model.apsim' is not covered"* ]] || fail "$stderr"
	assert_equal "$(ls -A out)" ""
	run --separate-stderr fmt-shard unpack --secret-file "$SECRET" -C new "$B/set-plus-readme.tar"
	assert_equal "$status" 7
	[ ! -e new ]
	run fmt-shard unpack --secret-file "$SECRET" -C out "$B/signed-set.tar"
	assert_success
	assert_equal "$(ls out | tr '\n' ' ')" "model-00001-of-00003.apsim model-00002-of-00003.apsim model-00003-of-00003.apsim model.apsim.index.json "
	run fmt-verify --secret-file "$SECRET" out/model.apsim.index.json
	assert_success
	run --separate-stderr fmt-shard unpack --hmac-key --secret-file "$SECRET" -C out2 "$B/signed-set.tar"
	assert_equal "$status" 2
}

# Item 2: one private directory, removed on signals.
# stop_at N CMD...: run CMD with FMTKIT_TEST_STOP_AT_SINK=N (it stops itself with SIGSTOP once
# its Nth output file exists, fmt/io.h), wait for the stop, run the caller's at_stop, then send
# SIGTERM and SIGCONT; the exit status in $status.
stop_at() {
	stop_at_output "$@" 2>/dev/null
	at_stop
	term_stopped
}

@test "keyed bundle: SIGTERM during the check leaves nothing in TMPDIR; the directory was private" {
	at_stop() {
		d=$(ls -d tmp/fmtkit-bundle-*)
		assert_equal "$(stat -c '%a %F' "$d")" "700 directory"
		assert_equal "$(ls "$d")" "model-00001-of-00003.apsim"
	}
	stop_at 1 fmt-verify --secret-file "$SECRET" "$B/signed-set.tar"
	assert_equal "$status" 143
	assert_equal "$(ls -A tmp)" ""
}

@test "unpack: SIGTERM after every member is staged leaves nothing in the directory, existing files untouched" {
	mkdir out
	echo keep >out/a.apsim
	before=$(snapshot out)
	at_stop() {
		assert_equal "$(ls out/.fmtkit-unpack-* | tr '\n' ' ')" "a.apsim b.apsim "
	}
	stop_at 2 fmt-shard unpack --force -C out "$B/two-members.tar"
	assert_equal "$status" 143
	assert_equal "$(snapshot out)" "$before"
}

# Item 7: --force that cannot commit keeps every existing file.
@test "unpack --force: a directory in the way of one member fails (exit 3) and keeps every existing file" {
	mkdir -p out/b.apsim
	echo "my old a" >out/a.apsim
	before=$(snapshot out)
	run --separate-stderr fmt-shard unpack --force -C out "$B/two-members.tar"
	assert_equal "$status" 3
	[[ "$stderr" == *"out/b.apsim is a directory (not replaced)"* ]] || fail "$stderr"
	assert_equal "$(snapshot out)" "$before"
	rmdir out/b.apsim
	run fmt-shard unpack --force -C out "$B/two-members.tar"
	assert_success
	run fmt-verify out/a.apsim out/b.apsim
	assert_success
	assert_equal "$(ls -A out | tr '\n' ' ')" "a.apsim b.apsim "
}

# Item 5: no control byte from a file reaches a terminal, through any tool.
@test "escapes: the manifest's format is escaped by fmt-verify and fmt-shard unpack -v" {
	run fmt-verify "$B/escape-format.tar"
	assert_success
	assert_output "$B/escape-format.tar: ok (bundle of \\x1b[2J\\x1b]0;owned\\x07\\x1b[31mapsim, 1 file, 796 bytes)"
	run fmt-shard unpack -v -C out "$B/escape-format.tar"
	assert_success
	assert_line --index 1 "$B/escape-format.tar: 1 file, 796 bytes (\\x1b[2J\\x1b]0;owned\\x07\\x1b[31mapsim)"
}

# Every tool, text and JSON, on every file of scripts/gen/hostile-text: no C0 control but tab and
# newline, no DEL, no C1 control (raw 0x9B or UTF-8 C2 80..9F) in stdout or stderr.
# control_files FILE...: the FILEs holding such a byte, one a line.
control_files() {
	LC_ALL=C grep -laP '[\x00-\x08\x0b-\x1f\x7f\x9b]|\xc2[\x80-\x9f]' "$@" || true
}

@test "escapes: no control byte from a file reaches stdout or stderr, in any tool" {
	T=$HOSTILE/text
	runs=0
	mkdir ran
	check() { # tool args...: run it; what it wrote kept in ran/N.out and ran/N.err, N its line in ran/commands
		runs=$((runs + 1))
		"$@" >"ran/$runs.out" 2>"ran/$runs.err" || true
		printf '%s\n' "$*" >>ran/commands
	}
	for f in "$T"/*.safetensors "$T"/*.gguf "$T"/*.apsim; do
		for mode in "" --json --metadata "--metadata --full" --tensors --tree "--json --tree --metadata"; do
			check fmt-inspect $mode "$f"
		done
		check fmt-verify "$f"
		check fmt-verify --json -v "$f"
		check fmt-verify --secret-file "$SECRET" "$f"
		for to in safetensors gguf apsim; do
			check fmt-convert --dry-run --to $to "$f" -o out.$to
			check fmt-convert --dry-run --json --to $to "$f" -o out.$to
		done
		check fmt-shard split --dry-run --max-size 1 "$f" -o part
		check fmt-shard split --dry-run --json --max-size 1 "$f" -o part
		cp "$f" copy
		check fmt-sign sign --secret-file "$SECRET" copy
		check fmt-sign sign --json --secret-file "$SECRET" copy
	done
	for f in "$T"/*.tar; do
		check fmt-verify "$f"
		check fmt-verify --json "$f"
		check fmt-verify --secret-file "$SECRET" "$f"
		check fmt-shard unpack -v -C "u$runs" "$f"
		check fmt-shard unpack --json -C "j$runs" "$f"
	done
	[ "$runs" -ge 100 ] || fail "only $runs runs"
	# one grep over every run's output for a control byte (not a grep and an awk per run)
	local bad n
	bad=$(control_files ran/*.out ran/*.err)
	for f in $bad; do
		n=${f#ran/}
		n=${n%.*}
		fail "control bytes from: $(sed -n "${n}p" ran/commands) -> $(cat -v "ran/$n.out" "ran/$n.err" | head -5)"
	done
	[ "$(wc -l <ran/commands)" -eq "$runs" ]
	# The escaped forms are there, not dropped.
	run fmt-inspect --metadata "$T/names.safetensors"
	[[ "$output" == *'\x1b[2J\x1b]0;owned\x07\x1b[31m\x08\x7f\u009b1m\r'* ]] || fail "$output"
	run fmt-shard unpack -C m "$T/member.tar"
	assert_equal "$status" 4
	[ ! -e m ]
}
