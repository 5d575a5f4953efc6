#!/usr/bin/env bats
# Signed shard sets in bundles (issue 19 item 9, issue 20 items 8 and 10): fmt-shard unpack takes
# fmt-verify's key options (-p, -P, --trusted-keys); pack carries each FILE.minisig as a member,
# fmt-verify -p and a keyed unpack check them and say which they checked; hostile bundles from
# scripts/gen/hostile-bundles; an unpacked set verifies with Debian's minisign; split --list
# names exactly the files a split writes.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	make_samples
	export HB="$BATS_FILE_TMPDIR/bundles"
	"$REPO_ROOT/scripts/gen/hostile-bundles" "$HB" >/dev/null
}

setup() {
	load helpers
	make_samples
	cd "$BATS_TEST_TMPDIR"
	cp "$SAMPLES/tiny.safetensors" model.safetensors
	fmt-sign keygen -q -W -p k.pub -s k.key
	fmt-sign keygen -q -W -p other.pub -s other.key
	K=$(fmt-sign key-id -p k.pub)
}

# A GGUF q8_0 set of three shards m-0000i-of-00003.gguf, each with its .minisig by k.key.
signed_gguf_set() {
	fmt-convert -q --dtype q8_0 model.safetensors m.gguf
	fmt-shard split -q --max-tensors 2 m.gguf
	rm m.gguf
	fmt-sign sign -q -s k.key m-0000?-of-00003.gguf
}

sum_sizes() {
	stat -c %s "$@" | awk '{s += $1} END {print s}'
}

# ---- 19.9: unpack takes fmt-verify's key options ----

@test "unpack -p, -P and --trusted-keys check an Ed25519-signed .apsim; an untrusted key is 7 and writes nothing" {
	fmt-convert -q --to apsim --sign-key k.key model.safetensors e.apsim
	fmt-shard pack -q e.apsim -o e.tar
	run --separate-stderr fmt-shard unpack -p k.pub e.tar -C out1
	assert_success
	assert_output "out1/e.apsim
e.tar: 1 file, $(stat -c %s e.apsim) bytes (apsim, ed25519 signature by trusted key $K)"
	cmp e.apsim out1/e.apsim
	run fmt-shard unpack -q -P "$(tail -n 1 k.pub)" e.tar -C out2
	assert_success
	mkdir keys && cp other.pub k.pub keys/
	run fmt-shard unpack -q --trusted-keys keys e.tar -C out3
	assert_success
	run --separate-stderr fmt-shard unpack -p other.pub e.tar -C out4
	assert_failure 7
	assert_equal "$stderr" "fmt-shard: error: e.tar (member e.apsim): signed by Ed25519 key $K, which is not a trusted key"
	assert_equal "$output" ""
	[ ! -e out4 ]
	# an HMAC key cannot check it: the message names the options that can, and unpack has them now
	printf 'team\n' >team.secret
	run --separate-stderr fmt-shard unpack --secret-file team.secret e.tar -C out5
	assert_failure 7
	[[ "$stderr" == *"check it with -p, -P or --trusted-keys, not an HMAC key"* ]] || fail "$stderr"
	[ ! -e out5 ]
}

@test "unpack with an HMAC key still checks an HMAC-signed set; both kinds of key options may be given" {
	printf 'team\n' >team.secret
	fmt-convert -q --to apsim --sign --secret-file team.secret model.safetensors h.apsim
	fmt-shard pack -q h.apsim -o h.tar
	run fmt-shard unpack --secret-file team.secret h.tar -C out
	assert_success
	assert_output "out/h.apsim"
	run fmt-shard unpack -q --secret-file team.secret -p k.pub h.tar -C out2
	assert_success
	cmp h.apsim out2/h.apsim
}

@test "the key options are unpack's only; a bad key file is refused before anything is written" {
	run --separate-stderr fmt-shard split -p k.pub model.safetensors
	assert_failure 2
	[[ "$stderr" == *"-p"* ]] || fail "$stderr"
	fmt-shard pack -q model.safetensors -o m.tar
	echo "not a key" >bad.pub
	run --separate-stderr fmt-shard unpack -p bad.pub m.tar -C out
	assert_failure 4
	[ ! -e out ]
	run --separate-stderr fmt-shard unpack -p missing.pub m.tar -C out
	assert_failure 3
	[ ! -e out ]
	mkdir empty
	run --separate-stderr fmt-shard unpack --trusted-keys empty m.tar -C out
	assert_failure 2
	[ ! -e out ]
	run fmt-shard --help
	assert_line --partial "  -p, --pubkey FILE"
	assert_line --partial "      --trusted-keys DIR"
}

# ---- 20.8: the shards' .minisig files travel in the bundle ----

@test "pack carries each FILE.minisig, listed in the manifest; fmt-verify -p checks them (text and JSON)" {
	signed_gguf_set
	run fmt-shard pack m-00001-of-00003.gguf -o b.tar.zst
	assert_success
	total=$(sum_sizes m-0000?-of-00003.gguf*)
	assert_output "b.tar.zst: 6 files, $total bytes (gguf, zstd, .minisig of 3 members (not checked: no key given))"
	zstd -dcq b.tar.zst | tar t >list
	assert_equal "$(cat list)" "MANIFEST.json
m-00001-of-00003.gguf
m-00001-of-00003.gguf.minisig
m-00002-of-00003.gguf
m-00002-of-00003.gguf.minisig
m-00003-of-00003.gguf
m-00003-of-00003.gguf.minisig"
	zstd -dcq b.tar.zst | tar xO MANIFEST.json >manifest.json
	assert_equal "$(jq -r '.files | keys | join(" ")' manifest.json)" "$(tail -n +2 list | tr '\n' ' ' | sed 's/ $//')"
	assert_equal "$(jq -r '.files["m-00002-of-00003.gguf.minisig"].sha256' manifest.json)" \
		"$(sha256sum m-00002-of-00003.gguf.minisig | cut -d' ' -f1)"
	run --separate-stderr fmt-verify -p k.pub b.tar.zst
	assert_success
	assert_output "b.tar.zst: ok (bundle of gguf, 6 files, $total bytes, zstd, .minisig of 3 members by trusted key $K)"
	run --separate-stderr fmt-verify -j -p k.pub b.tar.zst
	assert_success
	assert_equal "$(jq -c .signatures <<<"$output")" "[$(for i in 1 2 3; do
		printf '{"file":"m-0000%d-of-00003.gguf","kind":"minisig","signature":"m-0000%d-of-00003.gguf.minisig","checked":true,"key_id":"%s","trusted":true}' $i $i "$K"
		[ $i -lt 3 ] && printf ,; done)]"
	# without a key: listed, and said not to be checked
	run --separate-stderr fmt-verify -j b.tar.zst
	assert_success
	assert_equal "$(jq -c '[.signatures[] | [.file, .checked, has("key_id")]]' <<<"$output")" \
		'[["m-00001-of-00003.gguf",false,false],["m-00002-of-00003.gguf",false,false],["m-00003-of-00003.gguf",false,false]]'
	run --separate-stderr fmt-verify -p other.pub b.tar.zst
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: b.tar.zst (member m-00001-of-00003.gguf.minisig): signed by key $K, not by the key given (wrong key id)"
}

@test "a bundle without signatures reports none (the JSON has no signatures member)" {
	fmt-shard pack -q model.safetensors -o plain.tar
	run fmt-verify -j plain.tar
	assert_success
	assert_equal "$(jq -c 'has("signatures")' <<<"$output")" false
	run fmt-verify plain.tar
	assert_output "plain.tar: ok (bundle of safetensors, 1 file, 468 bytes)"
}

@test "keyed unpack checks the .minisig members, writes them, and the set verifies with fmt-verify and minisign -V" {
	signed_gguf_set
	fmt-shard pack -q m-00001-of-00003.gguf -o b.tar
	run --separate-stderr fmt-shard unpack -j -p k.pub b.tar -C out
	assert_success
	assert_equal "$(jq -c '[.signatures[] | [.signature, .checked, .key_id]]' <<<"$output")" \
		"[[\"m-00001-of-00003.gguf.minisig\",true,\"$K\"],[\"m-00002-of-00003.gguf.minisig\",true,\"$K\"],[\"m-00003-of-00003.gguf.minisig\",true,\"$K\"]]"
	for f in m-0000?-of-00003.gguf m-0000?-of-00003.gguf.minisig; do cmp "$f" "out/$f"; done
	run fmt-verify -p k.pub out/m-00001-of-00003.gguf
	assert_success
	assert_output "out/m-00001-of-00003.gguf: ok (gguf, 5 tensors, 3 files, $(sum_sizes m-0000?-of-00003.gguf) bytes, .minisig by trusted key $K)"
	cd out
	for f in m-0000?-of-00003.gguf; do
		run minisign -V -q -p ../k.pub -m "$f"
		assert_success
	done
	cd ..
	# the text report says what it checked after the files it wrote
	run fmt-shard unpack -p k.pub b.tar -C out2
	assert_success
	assert_line --index 6 "b.tar: 6 files, $(sum_sizes m-0000?-of-00003.gguf*) bytes (gguf, .minisig of 3 members by trusted key $K)"
	run fmt-shard unpack -p other.pub b.tar -C out3
	assert_failure 7
	[ ! -e out3 ]
}

@test "a signed bundle: its own .minisig and the members' are all checked and reported" {
	signed_gguf_set
	fmt-shard pack -q m-00001-of-00003.gguf -o b.tar
	fmt-sign sign -q -s k.key b.tar
	run --separate-stderr fmt-verify -p k.pub b.tar
	assert_success
	assert_output "b.tar: ok (bundle of gguf, 6 files, $(sum_sizes m-0000?-of-00003.gguf*) bytes, .minisig by trusted key $K, .minisig of 3 members by trusted key $K)"
	run fmt-verify -j -p k.pub b.tar
	assert_equal "$(jq -c '[.signatures[] | .file // "BUNDLE"]' <<<"$output")" '["BUNDLE","m-00001-of-00003.gguf","m-00002-of-00003.gguf","m-00003-of-00003.gguf"]'
	# a member signed by another key fails, although the bundle's own signature is good
	fmt-sign sign -q -s other.key m-00002-of-00003.gguf
	fmt-shard pack -q -f m-00001-of-00003.gguf -o b.tar
	fmt-sign sign -q -s k.key b.tar
	run --separate-stderr fmt-verify -p k.pub b.tar
	assert_failure 7
	assert_equal "$stderr" "fmt-verify: error: b.tar (member m-00002-of-00003.gguf.minisig): signed by key $(fmt-sign key-id -p other.pub), not by the key given (wrong key id)"
}

hostile_minisig() { # CASE EXIT_WITH_KEY MESSAGE [EXIT_WITHOUT_KEY]
	local b="$HB/minisig-$1.tar"
	run --separate-stderr fmt-verify -p "$HB/key.pub" "$b"
	[ "$status" -eq "$2" ] || fail "$1: fmt-verify -p: exit $status, expected $2; stderr: $stderr"
	[[ "$stderr" == *"$3"* ]] || fail "$1: stderr lacks '$3': $stderr"
	[ -z "$output" ] || fail "$1: stdout: $output"
	mkdir -p "out-$1"
	run --separate-stderr fmt-shard unpack -p "$HB/key.pub" "$b" -C "out-$1"
	[ "$status" -eq "$2" ] || fail "$1: unpack -p: exit $status, expected $2; stderr: $stderr"
	[[ "$stderr" == *"$3"* ]] || fail "$1: unpack stderr lacks '$3': $stderr"
	[ -z "$(ls -A "out-$1")" ] || fail "$1: left behind: $(ls -A "out-$1")"
	run --separate-stderr fmt-verify "$b"
	[ "$status" -eq "${4:-0}" ] || fail "$1: fmt-verify without a key: exit $status, expected ${4:-0}; $stderr"
}

@test "hostile signature members: wrong, swapped, foreign, tampered, untrusted, missing are 7" {
	hostile_minisig swapped 7 "(member model-00001-of-00002.safetensors.minisig): bad signature by key EFCDAB8967452301: the file or the signature was altered"
	hostile_minisig foreign 7 "(member model-00001-of-00002.safetensors.minisig): bad signature by key EFCDAB8967452301"
	hostile_minisig tampered 7 "(member model-00002-of-00002.safetensors.minisig): bad signature by key EFCDAB8967452301"
	hostile_minisig untrusted 7 "(member model-00002-of-00002.safetensors.minisig): signed by key 1032547698BADCFE, not by the key given (wrong key id)"
	hostile_minisig unsigned 7 "(member model-00002-of-00002.safetensors): member 'model-00002-of-00002.safetensors' is not covered by the verified signature"
}

@test "hostile signature members: orphan, malformed, oversized and escaping names are 4" {
	hostile_minisig orphan 4 "minisig-orphan.tar: member 'gone.safetensors.minisig' is the signature of 'gone.safetensors', which is not in the bundle" 4
	hostile_minisig malformed 4 "(member model-00001-of-00002.safetensors.minisig): model-00001-of-00002.safetensors.minisig: a signature file has exactly four lines"
	hostile_minisig huge 4 "member 'model-00001-of-00002.safetensors.minisig' is 20000 bytes: not a signature (at most 16384)"
	hostile_minisig escape 4 "file '../model.safetensors.index.json.minisig' has a '..' component" 4
	[ ! -e ../model.safetensors.index.json.minisig ]
}

@test "the generator's signed set unpacks and verifies with minisign -V (Debian's minisign reads its keys)" {
	fmt-shard unpack -q -p "$HB/key.pub" "$HB/minisig-set.tar" -C set
	for f in set/*.safetensors set/*.json; do
		run minisign -V -p "$HB/key.pub" -m "$f"
		assert_success
		assert_line --index 0 "Signature and comment signature verified"
	done
	run fmt-verify -p "$HB/key.pub" set/model.safetensors.index.json
	assert_success
}

# ---- 20.10: split --list ----

# list_matches ARGS...: fmt-shard split --list ARGS names exactly the files fmt-shard split ARGS
# writes (in a fresh directory), in the plan's order, and --list writes nothing.
list_matches() {
	local input=$1
	shift
	mkdir -p listed written
	cp "$input" listed/ && cp "$input" written/
	local base
	base=$(basename "$input")
	(cd listed && fmt-shard split --list "$@" "$base") >names
	assert_equal "$(ls listed)" "$base"
	(cd written && fmt-shard split -q "$@" "$base")
	assert_equal "$(sort names)" "$(ls written | grep -vx "$base" | sort)"
	(cd listed && fmt-shard split --list --json "$@" "$base") >names.json
	assert_equal "$(jq -r '.files[]' names.json)" "$(cat names)"
	rm -r listed written
}

@test "split --list names exactly what a split writes: safetensors, GGUF, .apr, .apsim" {
	list_matches model.safetensors --max-tensors 2
	assert_equal "$(cat names)" "model-00001-of-00003.safetensors
model-00002-of-00003.safetensors
model-00003-of-00003.safetensors
model.safetensors.index.json"
	fmt-convert -q --dtype q8_0 model.safetensors m.gguf
	list_matches m.gguf --max-tensors 2
	assert_equal "$(cat names)" "m-00001-of-00003.gguf
m-00002-of-00003.gguf
m-00003-of-00003.gguf"
	list_matches m.gguf --max-tensors 1 --no-tensor-first-split
	[ "$(wc -l <names)" -eq 6 ]
	fmt-convert -q --to apr model.safetensors m.apr
	list_matches m.apr --max-tensors 2
	assert_equal "$(head -n 1 names)" "m-00001-of-00003.apr"
	fmt-convert -q --to apsim model.safetensors m.apsim
	list_matches m.apsim --max-tensors 2
	assert_equal "$(tail -n 1 names)" "m.apsim.index.json"
	list_matches m.gguf
	assert_equal "$(cat names)" "m-00001-of-00001.gguf"
}

@test "split --list: -o PREFIX, JSON record, existing outputs are no obstacle, a dataset is refused" {
	run fmt-shard split --list --json --max-tensors 3 -o out/x model.safetensors
	assert_success
	assert_output '{"input":"model.safetensors","format":"safetensors","files":["out/x-00001-of-00002.safetensors","out/x-00002-of-00002.safetensors","out/x.safetensors.index.json"]}'
	[ ! -e out ]
	fmt-shard split -q --max-tensors 3 model.safetensors
	run fmt-shard split --list --max-tensors 3 model.safetensors
	assert_success
	assert_equal "${#lines[@]}" 3
	printf 'a,b\n1,2\n' >d.csv
	# a dataset is split by rows (issue 24): without --fractions or --rows, a usage error
	run --separate-stderr fmt-shard split --list d.csv
	assert_failure 2
	assert_equal "$output" ""
	assert_equal "$stderr" "fmt-shard: error: d.csv: splitting a dataset needs --fractions or --rows"
}
