#!/usr/bin/env bats
# fmt-verify on good files, shard sets and hostile input.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	make_samples
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	cp -r "$SAMPLES/sharded" set
}

@test "--version and --help" {
	run fmt-verify --version
	assert_success
	assert_output "fmt-verify fmtkit 0.1.0"
	run fmt-verify --help
	assert_success
	assert_line --index 0 "Usage: fmt-verify [OPTIONS] FILE..."
}

@test "no input file is a usage error (exit 2)" {
	run fmt-verify
	assert_failure 2
}

@test "a good file: one ok line" {
	cp "$SAMPLES/tiny.safetensors" .
	run --separate-stderr fmt-verify tiny.safetensors
	assert_success
	assert_output "tiny.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes)"
	[ -z "$stderr" ]
	# one of a kind is said in the singular, here and in the other tools' summaries
	fmt-shard split --max-tensors 1 tiny.safetensors >/dev/null
	run fmt-verify tiny-00001-of-00005.safetensors
	assert_output "tiny-00001-of-00005.safetensors: ok (safetensors, 1 tensor, 1 file, $(stat -c %s tiny-00001-of-00005.safetensors) bytes)"
	printf 'a\n1\n' >one.csv
	run fmt-inspect one.csv
	assert_line --index 3 "schema (1 column):"
	run fmt-convert --dry-run one.csv one.jsonl
	assert_line --index 0 "one.csv (csv) -> one.jsonl (jsonl), 1 row"
	run fmt-verify one.csv
	assert_output "one.csv: ok (csv, 1 row)"
	run fmt-shard concat one.csv -o all.csv
	assert_output "all.csv: 1 row from 1 file"
	run fmt-shard merge tiny-00001-of-00005.safetensors -o merged.safetensors
	assert_output "merged.safetensors: 1 tensor from 1 file"
	run fmt-convert --dry-run tiny-00001-of-00005.safetensors one.gguf
	assert_line --index 0 --partial "(gguf, 1 tensor)"
}

@test "a bundle on standard input is verified as the file is (tar and tar.zst, a pipe or a redirect); other formats still are" {
	cp "$SAMPLES/tiny.safetensors" .
	fmt-shard pack tiny.safetensors -o b.tar >/dev/null
	fmt-shard pack tiny.safetensors -o b.tar.zst >/dev/null
	run --separate-stderr fmt-verify - <b.tar
	assert_success
	assert_output "-: ok (bundle of safetensors, 1 file, 468 bytes)"
	run fmt-verify - < <(cat b.tar.zst)
	assert_success
	assert_output "-: ok (bundle of safetensors, 1 file, 468 bytes, zstd)"
	run fmt-verify --json - <b.tar
	assert_output '{"file":"-","ok":true,"format":"bundle","contains":"safetensors","files":1,"bytes":468,"zstd":false}'
	# a member changed: exit 6 as for the file
	/usr/bin/python3 -c 'b = bytearray(open("b.tar", "rb").read()); b[1536 + 400] ^= 1; open("bad.tar", "wb").write(b)'
	run fmt-verify bad.tar
	assert_failure 6
	run --separate-stderr fmt-verify - < <(cat bad.tar)
	assert_failure 6
	assert_equal "$stderr" "$(fmt-verify bad.tar 2>&1 | sed 's/^fmt-verify: error: bad.tar:/fmt-verify: error: -:/')"
	head -c 1000 b.tar >short.tar
	run fmt-verify - <short.tar
	assert_failure 4
	assert_output "fmt-verify: error: -: truncated: the bundle ends after member 'MANIFEST.json', inside the next header or the end-of-archive marker (Truncated input file (needed 512 bytes, only 488 available))"
	run fmt-verify - < <(cat tiny.safetensors)
	assert_success
	assert_output "-: ok (safetensors, 5 tensors, 1 file, 468 bytes)"
	run fmt-verify - < <(printf 'a\n1\n')
	assert_output "-: ok (csv, 1 row)"
}

# reset_after N FILE CMD...: CMD with standard input a socket that gives the first N bytes of
# FILE, then fails (ECONNRESET: the other end closes with data it never read): a read error.
reset_after() {
	python3 - "$@" <<'PY'
import socket, subprocess, sys, time
n, path, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
mine, theirs = socket.socketpair()
theirs.send(b'x')
p = subprocess.Popen(cmd, stdin=theirs)
theirs.close()
mine.sendall(open(path, 'rb').read()[:n])
time.sleep(0.3)
mine.close()
sys.exit(p.wait())
PY
}

@test "a read error on a bundle on standard input is exit 3 (io), a malformed bundle stays 4" {
	# It was exit 4, "not a tar bundle: read: Connection reset by peer".
	cp "$SAMPLES/tiny.safetensors" .
	fmt-shard pack tiny.safetensors -o b.tar >/dev/null
	run --separate-stderr reset_after 6000 b.tar fmt-verify -
	assert_failure 3
	assert_equal "$stderr" "fmt-verify: error: -: read: Connection reset by peer"
	run --separate-stderr reset_after 6000 b.tar fmt-verify --json -
	assert_failure 3
	assert_equal "$output" '{"file":"-","ok":false,"exit":3,"error":"IoError","message":"read: Connection reset by peer","failed_file":"-"}'
	# the same bytes, then the end of the stream: a truncated bundle
	head -c 1000 b.tar >short.tar
	run --separate-stderr fmt-verify - < <(cat short.tar)
	assert_failure 4
	assert_equal "$stderr" "$(fmt-verify short.tar 2>&1 | sed 's/^fmt-verify: error: short.tar:/fmt-verify: error: -:/')"
}

@test "a good shard set: ok for the whole set" {
	run fmt-verify set/model.safetensors.index.json
	assert_success
	assert_output "set/model.safetensors.index.json: ok (safetensors-index, 5 tensors, 3 files, 855 bytes)"
}

@test "--json ok object" {
	run fmt-verify --json set/model.safetensors.index.json
	assert_success
	[ "$(echo "$output" | jq -c .)" = '{"file":"set/model.safetensors.index.json","ok":true,"format":"safetensors-index","files":3,"tensors":5,"bytes":855}' ]
}

@test "--quiet prints nothing; the status tells" {
	run fmt-verify -q "$SAMPLES/tiny.safetensors"
	assert_success
	assert_output ""
	printf 'x' > bad.safetensors
	run fmt-verify -q bad.safetensors
	assert_failure 4
}

@test "one appended byte is refused (exit 4)" {
	cp "$SAMPLES/tiny.safetensors" t.safetensors
	printf 'X' >> t.safetensors
	run --separate-stderr fmt-verify t.safetensors
	assert_failure 4
	[ -z "$output" ]
	[[ "$stderr" == "fmt-verify: error: t.safetensors: "* ]]
}

@test "one byte cut off is refused (exit 4)" {
	head -c 467 "$SAMPLES/tiny.safetensors" > t.safetensors
	run fmt-verify t.safetensors
	assert_failure 4
}

@test "a missing shard is SchemaMismatch (exit 9) naming the shard" {
	rm set/model-00002-of-00002.safetensors
	run --separate-stderr fmt-verify --json set/model.safetensors.index.json
	assert_failure 9
	[ "$(echo "$output" | jq -r .error)" = SchemaMismatch ]
	[ "$(echo "$output" | jq .exit)" = 9 ]
	[ "$(echo "$output" | jq -r .message)" = "shard 'model-00002-of-00002.safetensors' named in weight_map does not exist (set/model-00002-of-00002.safetensors)" ]
}

@test "a damaged shard fails the set with the shard's own error" {
	printf 'X' >> set/model-00001-of-00002.safetensors
	run fmt-verify set/model.safetensors.index.json
	assert_failure 4
	assert_output --partial "model-00001-of-00002.safetensors"
}

@test "a tensor mapped to the wrong shard is exit 9" {
	sed -i 's/"step": "model-00002-of-00002.safetensors"/"step": "model-00001-of-00002.safetensors"/' set/model.safetensors.index.json
	run fmt-verify set/model.safetensors.index.json
	assert_failure 9
	assert_output --partial "step"
}

@test "a tensor missing from weight_map is exit 9" {
	jq 'del(.weight_map.step)' set/model.safetensors.index.json > i && mv i set/model.safetensors.index.json
	run fmt-verify set/model.safetensors.index.json
	assert_failure 9
	assert_output --partial "step"
}

@test "a wrong total_size is exit 9" {
	jq '.metadata.total_size = 93' set/model.safetensors.index.json > i && mv i set/model.safetensors.index.json
	run fmt-verify set/model.safetensors.index.json
	assert_failure 9
	assert_output --partial "total_size"
}

@test "a shard name with a path is refused (exit 4)" {
	jq '.weight_map.step = "../model-00002-of-00002.safetensors"' set/model.safetensors.index.json > i && mv i set/model.safetensors.index.json
	run fmt-verify set/model.safetensors.index.json
	assert_failure 4
	assert_output --partial "../model-00002-of-00002.safetensors"
	jq '.weight_map.step = "/etc/passwd"' set/model.safetensors.index.json > i && mv i set/model.safetensors.index.json
	run fmt-verify set/model.safetensors.index.json
	assert_failure 4
}

@test "several files: each reported, exit is the highest" {
	cp "$SAMPLES/tiny.safetensors" good.safetensors
	printf 'X' > bad.safetensors
	rm set/model-00002-of-00002.safetensors
	run --separate-stderr fmt-verify good.safetensors bad.safetensors set/model.safetensors.index.json
	assert_failure 9
	assert_output "good.safetensors: ok (safetensors, 5 tensors, 1 file, 468 bytes)"
	[ "$(echo "$stderr" | grep -c 'fmt-verify: error:')" -eq 2 ]
}
