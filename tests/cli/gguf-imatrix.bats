#!/usr/bin/env bats
# Issue 23, importance matrices: fmt-convert --dtype PRESET --imatrix FILE reads llama-imatrix's
# GGUF imatrix and the legacy .dat (scripts/gen/llama-tiny --imatrix writes both) and writes
# what llama-quantize --imatrix writes (the golden cases b-*-imatrix* of tests/data/llama-quantize,
# compared in gguf-presets.bats); --include-weights / --exclude-weights choose entries. Here: the
# hostile matrices (scripts/gen/imatrix-hostile) are exit 4 with the reason and nothing written,
# and what is not implemented or not meant says so.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export IM="$BATS_FILE_TMPDIR/imatrix"
	"$REPO_ROOT/scripts/gen/llama-tiny" "$IM/b" --embd 256 --ff 512 --layers 2 --heads 4 --kv-heads 2 --tied --imatrix
	fmt-convert -q --arch llama --dtype f32 --metadata-from "$IM/b/vocab.gguf" --keys 'tokenizer.*' \
		--set-from "$IM/b/hparams.json" "$IM/b/weights.safetensors" "$IM/b.gguf"
	"$REPO_ROOT/scripts/gen/imatrix-hostile" "$IM/bad"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

@test "hostile importance matrices: exit 4 naming the file and what is wrong, nothing written" {
	local file msg n=0
	while IFS='|' read -r file msg; do
		run --separate-stderr fmt-convert --dtype Q6_K --imatrix "$IM/bad/$file" "$IM/b.gguf" out.gguf
		assert_failure 4
		assert_equal "$stderr" "fmt-convert: error: $IM/bad/$file: --imatrix: $msg"
		nothing_written out.gguf
		n=$((n + 1))
	done <<-'EOF'
		empty.dat|not an importance matrix: no GGUF magic, and no entry count of a legacy .dat file
		zero-entries.dat|not an importance matrix: no GGUF magic, and no entry count of a legacy .dat file
		negative-count.dat|not an importance matrix: no GGUF magic, and no entry count of a legacy .dat file
		more-entries-than-file.dat|entry 2: no name of a length 0 to 4096 in the file
		negative-name-length.dat|entry 1: no name of a length 0 to 4096 in the file
		huge-name-length.dat|entry 1: no name of a length 0 to 4096 in the file
		name-past-end.dat|entry 1: no name of a length 0 to 4096 in the file
		nul-in-name.dat|entry 1: its name holds a NUL byte
		zero-values.dat|entry 1 ('blk.0.attn_q.weight'): no count of 1 or more values that the file holds
		values-past-end.dat|entry 1 ('blk.0.attn_q.weight'): no count of 1 or more values that the file holds
		nan.dat|entry 'blk.0.attn_q.weight': value 1 is not finite
		twice.dat|entry 'blk.0.attn_q.weight' appears twice
		no-imatrix-keys.gguf|a GGUF without imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size: not an importance matrix
		no-tensors.gguf|no in_sum2 and counts tensors: no data
		sums-without-counts.gguf|'w' has in_sum2 but no counts
		counts-without-sums.gguf|'w' has counts but no in_sum2
		f16-sums.gguf|tensor 'w.in_sum2' is F16; the sums and counts must be F32
		sums-not-per-count.gguf|'w': 5 sums do not divide among 2 counts
		infinite-sum.gguf|entry 'w': value 1 is not finite
		truncated.gguf|tensor 'w.counts': data at offset 320 + 4 bytes runs past the end of the file (312 bytes)
	EOF
	assert_equal "$n" 20
}

@test "an entry of another size than the tensor's rows is exit 4; a missing file exit 3" {
	run --separate-stderr fmt-convert --dtype Q6_K --imatrix "$IM/bad/wrong-size.dat" "$IM/b.gguf" out.gguf
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: $IM/b.gguf: --imatrix $IM/bad/wrong-size.dat: entry 'blk.0.attn_q.weight' holds 2 values; the tensor's rows need 256 (a matrix of another model?)"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dtype Q6_K --imatrix nothing.dat "$IM/b.gguf" out.gguf
	assert_failure 3
	assert_output ""
	[[ "$stderr" == "fmt-convert: error: nothing.dat: "* ]] || fail "$stderr"
	nothing_written out.gguf
}

@test "--dry-run notes the tensors quantized with importance weights; the weights change the bytes" {
	run fmt-convert --dry-run --dtype IQ4_XS --imatrix "$IM/b/imatrix.dat" "$IM/b.gguf" out.gguf
	assert_success
	assert_line "  blk.1.ffn_down.weight  F32 -> IQ4_XS  69632 bytes  (importance weights)"
	assert_line "  token_embd.weight  F32 -> Q6_K  71610 bytes"
	nothing_written out.gguf
	# without the matrix the same tensors have no weights, and other bytes
	fmt-convert --dtype IQ4_XS "$IM/b.gguf" plain.gguf
	fmt-convert --dtype IQ4_XS --imatrix "$IM/b/imatrix.gguf" "$IM/b.gguf" weighted.gguf
	[ "$(tensor_hex plain.gguf blk.1.ffn_down.weight)" != "$(tensor_hex weighted.gguf blk.1.ffn_down.weight)" ] ||
		fail "the weights changed nothing"
	assert_equal "$(tensor_hex plain.gguf token_embd.weight)" "$(tensor_hex weighted.gguf token_embd.weight)"
}

@test "the output records the matrix as llama-quantize does: quantize.imatrix.file, .dataset, .entries_count, .chunks_count" {
	# the values llama-quantize (built from scripts/llama-src) wrote for the same commands; the
	# entries are those --exclude-weights kept (14 - 2 attn_k)
	local im keys
	for im in imatrix.gguf imatrix.dat; do
		fmt-convert -f --dtype Q6_K --imatrix "$IM/b/$im" --exclude-weights attn_k "$IM/b.gguf" out.gguf
		keys=$(fmt-inspect --json --full out.gguf | jq -c '.metadata_typed | with_entries(select(.key | startswith("quantize.")))')
		assert_equal "$keys" '{"quantize.imatrix.file":{"type":"str","value":"'"$IM/b/$im"'"},"quantize.imatrix.dataset":{"type":"str","value":"fmtkit-tiny.txt"},"quantize.imatrix.entries_count":{"type":"u32","value":12},"quantize.imatrix.chunks_count":{"type":"u32","value":4}}'
	done
	# a matrix of which nothing is kept, or none: no keys (llama-quantize writes none then)
	fmt-convert -f -q --dtype Q6_K --imatrix "$IM/b/imatrix.gguf" --include-weights nosuch "$IM/b.gguf" out.gguf
	assert_equal "$(fmt-inspect --json --full out.gguf | jq -c '[.metadata_typed | keys[] | select(startswith("quantize."))]')" '[]'
	# --set has the last word, as on every derived key
	fmt-convert -f --dtype Q6_K --imatrix "$IM/b/imatrix.dat" --set quantize.imatrix.file=calib.dat "$IM/b.gguf" out.gguf
	assert_equal "$(fmt-inspect --json --full out.gguf | jq -r '.metadata_typed["quantize.imatrix.file"].value')" calib.dat
}

@test "an --imatrix of another model, or --include-weights keeping none of it: a warning, the bytes without a matrix" {
	# one entry named as a Hugging Face checkpoint names it (llama-quantize says "did not find
	# weights" per tensor on stdout and exits 0); here one warning, on --dry-run too
	python3 -c 'import struct, sys; n = b"model.layers.0.mlp.down_proj.weight"; sys.stdout.buffer.write(struct.pack("<ii", 1, len(n)) + n + struct.pack("<ii", 1, 256) + struct.pack("<256f", *[1.0] * 256))' >other.dat
	fmt-convert -q --dtype Q4_K_M "$IM/b.gguf" plain.gguf
	local warning="fmt-convert: warning: --imatrix other.dat: none of its 1 entries names a tensor of this model (the first: 'model.layers.0.mlp.down_proj.weight'; a matrix of another model?): quantized without importance weights"
	run --separate-stderr fmt-convert --dtype Q4_K_M --imatrix other.dat "$IM/b.gguf" out.gguf
	assert_success
	assert_equal "$stderr" "$warning"
	# the tensors of no matrix; the keys that record it as llama-quantize writes them (1 entry)
	assert_equal "$(fmt-inspect --json --full out.gguf | jq -r '.metadata_typed["quantize.imatrix.entries_count"].value')" 1
	fmt-convert -q --in-place --unset 'quantize.*' out.gguf
	cmp plain.gguf out.gguf
	run --separate-stderr fmt-convert --dry-run --dtype Q4_K_M --imatrix other.dat "$IM/b.gguf" dry.gguf
	assert_success
	assert_equal "$stderr" "$warning"
	nothing_written dry.gguf
	run --separate-stderr fmt-convert -f --dtype Q4_K_M --imatrix "$IM/b/imatrix.gguf" --include-weights nosuch "$IM/b.gguf" out.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: --imatrix $IM/b/imatrix.gguf: --include-weights left none of its entries: quantized without importance weights"
	cmp plain.gguf out.gguf
	# with --json, one JSON warning; -q, none; a matrix that names the tensors, none
	run --separate-stderr fmt-convert -f --json --dtype Q4_K_M --imatrix other.dat "$IM/b.gguf" out.gguf
	assert_success
	assert_equal "$(jq -c '[.level, (.message | startswith("--imatrix other.dat: none of its 1 entries"))]' <<<"$stderr")" '["warning",true]'
	run --separate-stderr fmt-convert -f -q --dtype Q4_K_M --imatrix other.dat "$IM/b.gguf" out.gguf
	assert_success
	assert_equal "$stderr" ""
	run --separate-stderr fmt-convert -f --dtype Q4_K_M --imatrix "$IM/b/imatrix.dat" "$IM/b.gguf" out.gguf
	assert_success
	assert_equal "$stderr" ""
}

@test "--include-weights and --exclude-weights: not together, and only with --imatrix (exit 2)" {
	run --separate-stderr fmt-convert --dtype Q6_K --imatrix "$IM/b/imatrix.gguf" --include-weights attn \
		--exclude-weights ffn "$IM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --include-weights and --exclude-weights cannot be used together"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dtype Q6_K --exclude-weights ffn "$IM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --exclude-weights chooses entries of --imatrix FILE, which is not given"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --imatrix "$IM/b/imatrix.gguf" "$IM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $IM/b.gguf: --imatrix goes with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), which is not given"
	nothing_written out.gguf
	# (f16 is llama-quantize's F16 with them, which takes a matrix: gguf-presets.bats)
	run --separate-stderr fmt-convert --dtype keep --imatrix "$IM/b/imatrix.gguf" --include-weights attn "$IM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $IM/b.gguf: --imatrix and --include-weights go with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), not 'keep'"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --imatrix "$IM/b/imatrix.gguf" "$IM/b.gguf" out.safetensors
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--imatrix needs .gguf output")"
	nothing_written out.safetensors
}

@test "an importance matrix of 400,000 entries is read in linear time, its entries found by name" {
	# Each entry was checked against every one before it, and each tensor's weights looked up
	# entry by entry: a 4.5 MB .dat of 200,000 entries kept fmt-convert busy for more than a
	# minute (a hostile file of a few MB, hours). The model's own entries come first, then
	# 400,000 that no tensor has: the weights found are the model's, the bytes those of its own
	# matrix.
	python3 - "$IM/b/imatrix.dat" many.dat <<-'EOF'
		import struct, sys
		src = open(sys.argv[1], "rb").read()
		n, = struct.unpack_from("<i", src, 0)
		at = 4
		for _ in range(n):
		    length, = struct.unpack_from("<i", src, at)
		    at += 4 + length
		    ncall, nval = struct.unpack_from("<ii", src, at)
		    at += 8 + 4 * nval
		extra = b"".join(struct.pack("<i", len(name)) + name + struct.pack("<iif", 1, 1, 1.0)
		                 for name in (b"x.%d" % i for i in range(400000)))
		open(sys.argv[2], "wb").write(struct.pack("<i", n + 400000) + src[4:at] + extra + src[at:])
	EOF
	run timeout 60 fmt-convert -q --dtype IQ4_XS --imatrix many.dat "$IM/b.gguf" many.gguf
	assert_success
	fmt-convert -q --dtype IQ4_XS --imatrix "$IM/b/imatrix.dat" "$IM/b.gguf" own.gguf
	# the same but for the keys that name the matrix and count its entries
	assert_equal "$(fmt-inspect --json many.gguf | jq '.metadata["quantize.imatrix.entries_count"]')" \
		$(($(fmt-inspect --json own.gguf | jq '.metadata["quantize.imatrix.entries_count"]') + 400000))
	fmt-convert -q --unset 'quantize.imatrix.*' many.gguf many-keys-out.gguf
	fmt-convert -q --unset 'quantize.imatrix.*' own.gguf own-keys-out.gguf
	cmp many-keys-out.gguf own-keys-out.gguf
}
