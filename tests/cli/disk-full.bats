#!/usr/bin/env bats
# A disk that fills up, without root: every writer runs under `ulimit -f` with SIGXFSZ ignored
# (an ignored signal stays ignored across exec), so that a write past the limit fails with EFBIG
# as a full disk fails with ENOSPC. For each tool that writes files (fmt-convert's model and
# dataset outputs and the temporary files it spills to in $TMPDIR, fmt-shard split/merge/concat/
# pack/unpack, fmt-sign keys, signatures and in-place signing, fmt-watermark embed and its
# registry): exit 3 (io, CONVENTIONS.md), the message naming the file (or, for a spill, the
# temporary directory), no partial output and no temporary file left, an existing output kept
# as it was. Standard output on /dev/full: exit 3 too.

bats_require_minimum_version 1.5.0
load helpers

setup_file() {
	local d=$BATS_FILE_TMPDIR
	# 400000 rows, 8.6 MB of CSV
	awk 'BEGIN { srand(3); print "a,b,c"; for (i = 0; i < 400000; i++) printf "%d,%.9f,x%d\n", i, rand(), i % 7 }' >"$d/rows.csv"
	fmt-convert -q "$d/rows.csv" "$d/rows.ald"
	# encrypted, uncompressed: a payload above 8 MiB, decrypted into a temporary file when read
	printf 'secret-pass\n' >"$d/pw.txt"
	fmt-convert -q -c none --encrypt-password-file "$d/pw.txt" "$d/rows.csv" "$d/enc.ald"
	# ONE zstd record batch of 51 MB: decompressed into a temporary file when read
	awk 'BEGIN { h = ""; for (c = 0; c < 16; c++) h = h (c ? "," : "") "c" c; print h
		for (r = 0; r < 3; r++) { l = ""; for (c = 0; c < 16; c++) l = l (c ? "," : "") ((c == 1 && r == 0) ? "" : r); print l } }' >"$d/tpl.csv"
	fmt-convert -q -c zstd "$d/tpl.csv" "$d/tplz.arrow"
	/usr/bin/python3 "$REPO_ROOT/scripts/gen/arrow-one-batch" "$d/tplz.arrow" "$d/onez.arrow" 400000 zstd
	# a model of 6 tensors of 1 MiB of random floats (incompressible)
	/usr/bin/python3 - "$d/m.safetensors" <<'PY'
import json, struct, sys
import numpy as np
rng = np.random.default_rng(2)
hdr, data = {}, b""
for i in range(6):
    b = rng.standard_normal(262144).astype(np.float32).tobytes()
    hdr["t%d" % i] = {"dtype": "F32", "shape": [512, 512], "data_offsets": [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
	mkdir "$d/set"
	fmt-shard split -q "$d/m.safetensors" --max-size 2MB -o "$d/set/m"
	fmt-shard pack -q "$d/set/m.safetensors.index.json" -o "$d/m.tar"
	fmt-sign keygen -W -p "$d/k.pub" -s "$d/k.key" >/dev/null
}

setup() {
	mkdir "$BATS_TEST_TMPDIR/work" # bats keeps its own files in BATS_TEST_TMPDIR
	cd "$BATS_TEST_TMPDIR/work"
	mkdir tmp
	for f in "$BATS_FILE_TMPDIR"/*; do ln -s "$f" .; done
}

# limited KIB COMMAND...: COMMAND with every file it writes limited to KIB KiB (write() past it
# fails with EFBIG; SIGXFSZ ignored) and TMPDIR=$PWD/tmp; its stderr through a pipe (cat runs
# outside the limit), so that the message is seen also under a limit of 0.
limited() {
	local kib=$1
	shift
	{
		TMPDIR=$PWD/tmp bash -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$kib" "$@" 2>&1 1>&3 3>&- | cat >&2
		return "${PIPESTATUS[0]}"
	} 3>&1
}

# Nothing new in the current directory (but the names given) and no temporary file in tmp/.
nothing_new() {
	local want
	want=$( ( (($#)) && printf '%s\n' "$@"; ls -A "$BATS_FILE_TMPDIR"; echo tmp) | sort -u)
	assert_equal "$(ls -A . | sort)" "$want"
	assert_equal "$(ls -A tmp)" ""
}

@test "fmt-convert model outputs on a full disk: exit 3 naming the output, nothing left, an existing output kept" {
	for out in out.gguf out.safetensors out.apr out.apsim; do
		run --separate-stderr limited 2048 fmt-convert m.safetensors "$out"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: $out: write: File too large"
		nothing_new
	done
	run --separate-stderr limited 2048 fmt-convert -c zstd m.safetensors out.apr
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: out.apr: write: File too large"
	nothing_new
	echo OLD >out.gguf
	run --separate-stderr limited 2048 fmt-convert -f m.safetensors out.gguf
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: out.gguf: write: File too large"
	assert_equal "$(cat out.gguf)" OLD
	nothing_new out.gguf
	# a GGUF's metadata edited in place: the file as it was, named as given (old: its resolved path)
	fmt-convert -q -f m.safetensors out.gguf
	cp out.gguf was.gguf
	run --separate-stderr limited 1024 fmt-convert --in-place --set general.name=x out.gguf
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: out.gguf: copy: File too large"
	cmp out.gguf was.gguf
	nothing_new out.gguf was.gguf
	rm out.gguf was.gguf
	# a shard set: no shard and no index left
	mkdir o
	run --separate-stderr limited 1500 fmt-convert --shard 3MB m.safetensors o/m.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: o/m-00001-of-00003.safetensors: write: File too large"
	assert_equal "$(ls -A o)" ""
}

@test "fmt-convert dataset outputs on a full disk: exit 3 naming the output, nothing left, an existing output kept" {
	for out in out.csv out.jsonl out.arrow out.parquet out.ald; do
		run --separate-stderr limited 1024 fmt-convert rows.csv "$out"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-convert: error: $out: write: File too large"
		nothing_new
	done
	run --separate-stderr limited 1024 fmt-convert -T 2 rows.ald out.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: out.csv: write: File too large"
	nothing_new
	echo OLD >out.jsonl
	run --separate-stderr limited 1024 fmt-convert -f rows.csv out.jsonl
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: out.jsonl: write: File too large"
	assert_equal "$(cat out.jsonl)" OLD
	nothing_new out.jsonl
}

@test "fmt-convert spills to TMPDIR on a full disk: exit 3 naming what and the directory (old: 'cannot write a temporary file (disk full?)' for sorted runs and TRUENO_NATIVE columns, 'cannot write the temporary chunk file' for STREAMING chunks, the Parquet footer's without the error)" {
	# the decrypted payload of an encrypted .ald above 8 MiB; a compressed Arrow batch above 16 MiB
	run --separate-stderr limited 4096 fmt-convert --password-file pw.txt --rows 0:3 enc.ald out.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: enc.ald: cannot write a temporary file for the decrypted payload in $PWD/tmp (TMPDIR): File too large"
	nothing_new
	run --separate-stderr limited 4096 fmt-convert --rows 0:3 onez.arrow out.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: onez.arrow: cannot write a temporary file for a record batch in $PWD/tmp (TMPDIR): File too large"
	nothing_new
	# sorted runs (--sort, --shuffle beyond --memory), to standard output: a pipe, not limited
	for op in "--sort b" --shuffle; do
		run --separate-stderr limited 1024 bash -o pipefail -c "fmt-convert $op --memory 4MB --to csv rows.csv - | wc -c"
		assert_equal "$status" 3
		assert_equal "$output" 0
		assert_equal "$stderr" "fmt-convert: error: rows.csv: cannot write a sorted run in $PWD/tmp (TMPDIR): File too large"
		nothing_new
	done
	# the Parquet writer's footer structs (40000 row groups)
	head -n 40001 rows.csv >r40k.csv
	run --separate-stderr limited 100 bash -o pipefail -c "fmt-convert --row-group-rows 2 --to parquet r40k.csv - | wc -c"
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: r40k.csv: cannot write a temporary file for the footer's row groups in $PWD/tmp (TMPDIR): File too large"
	nothing_new r40k.csv
	# .ald STREAMING chunks and TRUENO_NATIVE columns, held until the index is written
	run --separate-stderr limited 1024 fmt-convert --chunk-rows 1000 rows.csv out.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: rows.csv: cannot write a temporary file for the chunks in $PWD/tmp (TMPDIR): File too large"
	nothing_new r40k.csv
	run --separate-stderr limited 1024 fmt-convert --trueno-native rows.csv out.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-convert: error: rows.csv: cannot write a temporary file for a column in $PWD/tmp (TMPDIR): File too large"
	nothing_new r40k.csv
}

@test "fmt-shard split, merge, concat, pack and unpack on a full disk: exit 3 naming the file, no file of the set left" {
	mkdir o
	run --separate-stderr limited 1500 fmt-shard split m.safetensors --max-size 3MB -o o/m
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-shard: error: o/m-00001-of-00003.safetensors: write: File too large"
	assert_equal "$(ls -A o)" ""
	run --separate-stderr limited 1024 fmt-shard split rows.csv --fractions 0.5,0.5 -o parts
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-shard: error: parts/train.csv: write: File too large"
	assert_equal "$(ls -A parts 2>/dev/null)" ""
	run --separate-stderr limited 2048 fmt-shard split rows.csv --rows 100000 -o parts
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-shard: error: parts/rows-00002-of-00004.csv: write: File too large"
	assert_equal "$(ls -A parts 2>/dev/null)" ""
	rm -rf o parts
	run --separate-stderr limited 2048 fmt-shard merge set/m.safetensors.index.json -o out.safetensors
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-shard: error: out.safetensors: write: File too large"
	nothing_new
	run --separate-stderr limited 2048 fmt-shard concat rows.csv rows.ald -o all.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-shard: error: all.csv: write: File too large"
	nothing_new
	for out in b.tar b.tar.zst; do
		run --separate-stderr limited 2048 fmt-shard pack set/m.safetensors.index.json -o "$out"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-shard: error: $out: write: File too large"
		nothing_new
	done
	echo OLD >b.tar
	run --separate-stderr limited 2048 fmt-shard pack -f set/m.safetensors.index.json -o b.tar
	assert_equal "$status" 3
	assert_equal "$(cat b.tar)" OLD
	nothing_new b.tar
	mkdir u
	run --separate-stderr limited 500 fmt-shard unpack m.tar -C u
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-shard: error: m.tar: member 'm-00001-of-00006.safetensors': write: File too large"
	assert_equal "$(ls -A u)" ""
}

@test "fmt-sign keys, signatures and in-place signing on a full disk: exit 3 naming the file, nothing left, existing files kept" {
	run --separate-stderr limited 0 fmt-sign keygen -W -p k2.pub -s k2.key
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: k2.key: write: File too large"
	nothing_new
	run --separate-stderr limited 0 fmt-sign keygen --x25519 -W -p x.pub -s x.key
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: x.key: write: File too large"
	nothing_new
	run --separate-stderr limited 0 fmt-sign keygen --watermark -s w.key
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: w.key: write: File too large"
	nothing_new
	echo OLD >k2.pub
	run --separate-stderr limited 0 fmt-sign keygen -W -f -p k2.pub -s k2.key
	assert_equal "$status" 3
	assert_equal "$(cat k2.pub)" OLD
	nothing_new k2.pub
	run --separate-stderr limited 0 fmt-sign sign -s k.key rows.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: rows.csv.minisig: write: File too large"
	nothing_new k2.pub
	echo OLD >rows.csv.minisig
	run --separate-stderr limited 0 fmt-sign sign -s k.key -x rows.csv.minisig rows.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: rows.csv.minisig: write: File too large"
	assert_equal "$(cat rows.csv.minisig)" OLD
	nothing_new k2.pub rows.csv.minisig
	# .ald signed and licensed in place, an .apsim signed in place (Ed25519, HMAC): the file as it
	# was, named as given (old: its resolved path, $PWD/rows.ald)
	cp --remove-destination "$BATS_FILE_TMPDIR/rows.ald" rows.ald
	run --separate-stderr limited 2048 fmt-sign sign --embed -s k.key rows.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: rows.ald: write: File too large"
	cmp rows.ald "$BATS_FILE_TMPDIR/rows.ald"
	run --separate-stderr limited 2048 fmt-sign license --licensee bob -s k.key rows.ald
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: rows.ald: write: File too large"
	cmp rows.ald "$BATS_FILE_TMPDIR/rows.ald"
	fmt-convert -q m.safetensors m.apsim
	cp m.apsim was.apsim
	head -c 32 /dev/urandom >team.secret
	run --separate-stderr limited 2048 fmt-sign sign --embed -s k.key m.apsim
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: m.apsim: write: File too large"
	cmp m.apsim was.apsim
	run --separate-stderr limited 2048 fmt-sign sign m.apsim --secret-file team.secret
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: m.apsim: write: File too large"
	cmp m.apsim was.apsim
	# through a symbolic link: the link's name
	ln -s m.apsim link.apsim
	run --separate-stderr limited 2048 fmt-sign sign link.apsim --secret-file team.secret
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: link.apsim: write: File too large"
	cmp m.apsim was.apsim
	nothing_new k2.pub rows.csv.minisig m.apsim was.apsim team.secret link.apsim
}

@test "fmt-sign keygen on a full disk removes the key directories it made, and only those: exit 3 naming the file" {
	export XDG_CONFIG_HOME=$PWD/cfg
	# every kind of key into the key directory it makes ($XDG_CONFIG_HOME/fmtkit); with --json the
	# stdout record is the operation's, "file":null, as fmt-sign(1) says (old: the key's path for
	# --hmac and --watermark), and the error on stderr names the key file
	while IFS='|' read -r args name; do
		run --separate-stderr limited 0 fmt-sign keygen $args
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-sign: error: $PWD/cfg/fmtkit/$name: write: File too large"
		assert_equal "$output" ""
		nothing_new
		run --separate-stderr limited 0 fmt-sign --json keygen $args
		assert_equal "$status" 3
		assert_equal "$output" '{"file":null,"ok":false,"exit":3,"error":"IoError","message":"write: File too large"}'
		assert_equal "$(jq -r .file <<<"$stderr")" "$PWD/cfg/fmtkit/$name"
		nothing_new
	done <<'EOF'
--hmac|hmac.key
-W|ed25519.key
--x25519 -W|x25519.key
--watermark|watermark.key
EOF
	run --separate-stderr limited 0 fmt-sign keygen --hmac --json
	assert_equal "$status" 3
	assert_equal "$stderr" '{"tool":"fmt-sign","level":"error","file":"'"$PWD"'/cfg/fmtkit/hmac.key","error":"IoError","exit":3,"message":"write: File too large"}'
	nothing_new
	# a directory that was there stays (with what is in it); the one made in it goes
	mkdir cfg
	run --separate-stderr limited 0 fmt-sign keygen --hmac
	assert_equal "$status" 3
	assert_equal "$(ls -A cfg)" ""
	mkdir cfg/fmtkit
	echo keep >cfg/fmtkit/notes
	run --separate-stderr limited 0 fmt-sign keygen --watermark
	assert_equal "$status" 3
	assert_equal "$(ls -A cfg/fmtkit)" notes
	rm -r cfg
	nothing_new
	# paths given: the directories of both files, nested either way and spelt with //
	for pair in "-p a/b/k.pub -s a/k.key" "-p a/k.pub -s a//b/c/k.key" "-p p/k.pub -s s/k.key"; do
		run --separate-stderr limited 0 fmt-sign keygen -W $pair
		assert_equal "$status" 3
		nothing_new
	done
	run --separate-stderr limited 0 fmt-sign keygen --watermark -s w/x/w.key
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: w/x/w.key: write: File too large"
	nothing_new
	# the secret key written (in a directory made for it), the public key's directory impossible
	touch plain
	run --separate-stderr fmt-sign keygen -W -s new/k.key -p plain/x/k.pub
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-sign: error: plain/x/k.pub: cannot create the directory plain/x: Not a directory"
	nothing_new plain
}

@test "fmt-watermark embed on a full disk: exit 3 naming the output, no registry line; a registry that cannot take the line removes the output" {
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	for out in out.safetensors out.csv out.ald; do
		in=m.safetensors
		[ "$out" = out.safetensors ] || in=rows.csv
		run --separate-stderr limited 1024 fmt-watermark embed --key seller.key --buyer alice --registry reg.jsonl "$in" "$out"
		assert_equal "$status" 3
		assert_equal "$stderr" "fmt-watermark: error: $out: write: File too large"
		nothing_new seller.key
	done
	echo OLD >out.safetensors
	run --separate-stderr limited 2048 fmt-watermark embed -f --key seller.key --buyer alice m.safetensors out.safetensors
	assert_equal "$status" 3
	assert_equal "$(cat out.safetensors)" OLD
	nothing_new seller.key out.safetensors
	rm out.safetensors
	# the output fits, the registry (already at the limit) does not
	head -c 2200000 /dev/zero | tr '\0' x >reg.jsonl
	fmt-convert -q --rows 0:100 rows.csv small.csv
	run --separate-stderr limited 2048 fmt-watermark embed --key seller.key --buyer alice --registry reg.jsonl small.csv out.csv
	assert_equal "$status" 3
	assert_equal "$stderr" "fmt-watermark: error: reg.jsonl: out.csv removed (a marked copy must be recorded): cannot append to the registry: File too large"
	assert_equal "$(stat -c %s reg.jsonl)" 2200000
	nothing_new seller.key reg.jsonl small.csv
}

@test "standard output on a full device (/dev/full): exit 3, 'cannot write to standard output: No space left on device' in every tool" {
	[ -w /dev/full ] || skip "no /dev/full"
	/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(32)))' >seller.key
	chmod 600 seller.key
	fmt-convert -q "$REPO_ROOT/tests/data/fixtures/nk/test_mlp.onnx" mlp.nk
	# standard output is named so, as standard input is, never "-" (old: "-: write: ..."); the
	# FILE part is the input being written out, none for a report written at the end
	while IFS='|' read -r tool args file; do
		run --separate-stderr bash -c "$tool $args >/dev/full"
		assert_equal "$status" 3
		assert_equal "$stderr" "$tool: error: ${file:+$file: }cannot write to standard output: No space left on device"
	done <<'EOF'
fmt-convert|--to csv rows.ald -|rows.ald
fmt-convert|--to parquet rows.csv -|rows.csv
fmt-convert|--to gguf m.safetensors -|m.safetensors
fmt-convert|--to csv --password-file pw.txt enc.ald -|enc.ald
fmt-convert|-T 2 --to jsonl rows.csv -|rows.csv
fmt-convert|--to csv - - <rows.csv|-
fmt-shard|merge set/m.safetensors.index.json -o -|set/m.safetensors.index.json
fmt-shard|concat rows.csv rows.csv -o -|rows.csv
fmt-shard|pack set/m.safetensors.index.json -o -|set/m.safetensors.index.json
fmt-watermark|embed --key seller.key --buyer alice --to safetensors m.safetensors -|m.safetensors
fmt-inspect|m.safetensors|
fmt-inspect|--head 100000 rows.csv|
fmt-verify|m.tar|
fmt-sign|key-id -p k.pub|
fmt-sign|sign -s k.key -x - rows.csv|rows.csv
nk-run|--raw --random 1 mlp.nk|
EOF
	# with --json the same, as exactly one error object: a failure record on stdout would fail
	# again there and be reported a second time at the end of the run (old: fmt-sign sign -x -
	# printed a second object with "file":null)
	while IFS='|' read -r tool args file; do
		run --separate-stderr bash -c "$tool --json $args >/dev/full"
		[ "$status" = 3 ] || fail "$tool --json $args: exit $status: $stderr"
		assert_equal "$stderr" "$(jq -cn --arg t "$tool" --arg f "$file" '{tool:$t,level:"error",file:(if $f == "" then null else $f end),
			error:"IoError",exit:3,message:"cannot write to standard output: No space left on device"}')"
	done <<'EOF'
fmt-convert|--to csv rows.ald -|rows.ald
fmt-convert|--to gguf m.safetensors -|m.safetensors
fmt-convert|--to csv - - <rows.csv|-
fmt-shard|merge set/m.safetensors.index.json -o -|set/m.safetensors.index.json
fmt-shard|concat rows.csv rows.csv -o -|rows.csv
fmt-shard|pack set/m.safetensors.index.json -o -|set/m.safetensors.index.json
fmt-watermark|embed --key seller.key --buyer alice --to safetensors m.safetensors -|m.safetensors
fmt-inspect|m.safetensors|
fmt-verify|m.tar|
fmt-sign|key-id -p k.pub|
fmt-sign|sign -s k.key -x - rows.csv|rows.csv
fmt-sign|sign -s k.key -x - m.tar|m.tar
nk-run|--random 1 mlp.nk|
EOF
	run --separate-stderr bash -c "fmt-convert --json --to csv rows.ald - >/dev/full"
	assert_equal "$status" 3
	assert_equal "$stderr" '{"tool":"fmt-convert","level":"error","file":"rows.ald","error":"IoError","exit":3,"message":"cannot write to standard output: No space left on device"}'
	run --separate-stderr bash -c "fmt-inspect --json m.safetensors >/dev/full"
	assert_equal "$status" 3
	assert_equal "$stderr" '{"tool":"fmt-inspect","level":"error","file":null,"error":"IoError","exit":3,"message":"cannot write to standard output: No space left on device"}'
	nothing_new seller.key mlp.nk
}
