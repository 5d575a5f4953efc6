#!/usr/bin/env bats
# Issue 23, the presets: fmt-convert --dtype Q4_K_M (and llama-quantize's other presets) with
# --output-tensor-type, --token-embedding-type, --tensor-type, --leave-output-tensor and --pure
# gives every tensor the type llama-quantize gives it and writes the same bytes. The proof is
# what llama-quantize itself wrote (tests/data/llama-quantize: per tensor its type and the
# SHA-256 of its data, and general.file_type; scripts/gen/llama-quantize-golden) for the models
# of tests/data/llama-quantize/models, remade here by scripts/gen/llama-tiny; gguf-py (from
# scripts/llama-src) reads fmt-convert's output for the comparison.

bats_require_minimum_version 1.5.0
# at file level, not in setup(): the same functions for every test, ~12 ms less CPU per test
load helpers

setup_file() {
	export LQ="$REPO_ROOT/tests/data/llama-quantize"
	export PM="$BATS_FILE_TMPDIR/presets"
	mkdir -p "$PM"
	local name args opts
	while read -r name args; do
		case "$name" in '#'* | '') continue ;; esac
		opts=()
		[[ "$args" == *' -- '* ]] && read -r -a opts <<<"${args#* -- }"
		read -r -a args <<<"${args%% -- *}"
		"$REPO_ROOT/scripts/gen/llama-tiny" "$PM/$name" "${args[@]}"
		[[ " ${opts[*]} " == *' --arch '* ]] || opts+=(--arch llama)
		fmt-convert -q --dtype f32 --metadata-from "$PM/$name/vocab.gguf" --keys 'tokenizer.*' \
			--set-from "$PM/$name/hparams.json" "${opts[@]}" "$PM/$name/weights.safetensors" "$PM/$name.gguf"
	done <"$LQ/models"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

# Per tensor "NAME TYPE SHA256", sorted, and general.file_type: as the golden files list them.
listing() {
	"$REPO_ROOT/scripts/gen/llama-quantize-golden" --list "$1"
}

@test "every preset and override of the golden cases: llama-quantize's types, bytes and file type" {
	# with the widest SIMD this CPU has, and the same bytes with the narrower paths forced
	local model case type opts level n=0 out
	while read -r model case type opts; do
		case "$model" in '#'* | '') continue ;; esac
		opts=${opts//@MODEL@/$PM/$model}
		read -r -a opts <<<"${opts//@DATA@/$LQ}"
		run fmt-convert --dtype "$type" "${opts[@]}" "$PM/$model.gguf" "$model-$case.gguf"
		assert_success
		for level in portable avx2; do
			FMTKIT_QUANT_SIMD=$level fmt-convert -q --dtype "$type" "${opts[@]}" "$PM/$model.gguf" forced.gguf
			cmp "$model-$case.gguf" forced.gguf || fail "$model $case: FMTKIT_QUANT_SIMD=$level writes other bytes"
			rm forced.gguf
		done
		n=$((n + 1))
	done <"$LQ/cases"
	assert_equal "$n" 77
	# one gguf-py for the 77 listings (OUT.gguf.txt each), then each against its golden
	"$REPO_ROOT/scripts/gen/llama-quantize-golden" --list-each ./*.gguf
	n=0
	for out in ./*.gguf; do
		out=${out#./}
		diff "$LQ/${out%.gguf}.txt" "$out.txt" || fail "${out%.gguf} differs from llama-quantize"
		n=$((n + 1))
	done
	assert_equal "$n" 77
}

@test "the golden cases cover each preset, the fallbacks, GQA, tied embeddings, experts, 70B and falcon" {
	# the types llama-quantize chose vary as the rules say: a few spot checks of the goldens
	assert_equal "$(grep -c ' Q6_K ' "$LQ/a-Q4_K_M.txt")" 5     # output + attn_v of layers 0 3 6 7
	grep -q '^blk.0.ffn_down.weight Q8_0 ' "$LQ/a-Q4_K_M.txt"      # Q6_K, rows of 320: Q8_0
	grep -q '^blk.1.ffn_down.weight Q5_0 ' "$LQ/a-Q4_K_M.txt"      # Q4_K, rows of 320: Q5_0
	grep -q '^blk.0.attn_v.weight Q4_K ' "$LQ/a-Q2_K.txt"          # GQA 4
	grep -q '^blk.0.attn_v.weight Q3_K ' "$LQ/b-Q2_K.txt"          # GQA 2
	grep -q '^token_embd.weight Q6_K ' "$LQ/b-Q4_K_M.txt"          # tied: the output's rule
	grep -q '^blk.2.attn_v.weight Q5_K ' "$LQ/c-Q4_K_M.txt"        # 70B: Q4_K -> Q5_K
	grep -q '^blk.0.attn_k.weight Q8_0 ' "$LQ/d-Q4_K_M.txt"        # 8 experts
	grep -q '^blk.0.attn_output.weight Q5_K ' "$LQ/d-Q4_K_M.txt"   # 8 experts
	grep -q '^blk.0.ffn_down_exps.weight Q5_0 ' "$LQ/d-Q4_K_M.txt" # experts' rows of 32
	grep -q '^blk.1.ffn_down.weight Q4_0 ' "$LQ/e-Q3_K_M.txt"      # falcon: Q3_K, rows of 320: Q4_0
	grep -q '^blk.1.ffn_down.weight Q5_0 ' "$LQ/a-Q3_K_M.txt"      # llama: Q4_K, rows of 320: Q5_0
	grep -q '^blk.0.attn_output.weight Q4_K ' "$LQ/e-Q3_K_L.txt"   # falcon
	grep -q '^blk.0.attn_output.weight Q5_K ' "$LQ/a-Q3_K_L.txt"   # llama
	grep -q '^output.weight Q8_0 ' "$LQ/e-Q4_K_M.txt"              # falcon's output
	grep -q '^general.file_type 14$' "$LQ/a-Q4_K_S.txt"
}

@test "in one step from safetensors (--set-from the hyperparameters): the same tensors as from the F32 GGUF" {
	fmt-convert -q --dtype f32 --metadata-from "$PM/a/vocab.gguf" --keys 'tokenizer.*' --set-from "$PM/a/hparams.json" \
		--arch llama --dtype q4_k_m "$PM/a/weights.safetensors" one-step.gguf 2>/dev/null && fail "two --dtype accepted"
	fmt-convert --arch llama --metadata-from "$PM/a/vocab.gguf" --keys 'tokenizer.*' --set-from "$PM/a/hparams.json" \
		--dtype q4_k_m "$PM/a/weights.safetensors" one-step.gguf
	diff "$LQ/a-Q4_K_M.txt" <(listing one-step.gguf)
}

@test "--dry-run names each tensor's type and bytes as llama-quantize chose them; nothing written" {
	run --separate-stderr fmt-convert --dry-run --json --dtype Q4_K_M "$PM/a.gguf" out.gguf
	assert_success
	assert_equal "$(jq -r '.tensors[] | "\(.name) \(.to)"' <<<"$output" | sort)" "$(awk 'NF == 3 {print $1, $2}' "$LQ/a-Q4_K_M.txt")"
	assert_equal "$(jq -c '.tensors[] | select(.name == "blk.1.ffn_down.weight") | [.from, .to, .bytes, .note]' <<<"$output")" \
		'["F32","Q5_0",56320,"rows do not divide into the mixture'"'"'s type: llama-quantize'"'"'s fallback"]'
	assert_equal "$(jq -c '.tensors[] | select(.name == "blk.0.attn_norm.weight") | [.to, .note]' <<<"$output")" \
		'["F32","llama-quantize keeps it as it is"]'
	assert_equal "$(jq -c '.tensors[] | select(.name == "blk.0.ffn_up.weight") | [.to, .bytes, .note]' <<<"$output")" '["Q4_K",46080,null]'
	nothing_written out.gguf
	run fmt-convert --dry-run --dtype Q4_K_M --tensor-type attn_q=q8_0 "$PM/a.gguf" out.gguf
	assert_success
	assert_line "  blk.0.attn_q.weight  F32 -> Q8_0  69632 bytes  (--tensor-type)"
	assert_line "  output.weight  F32 -> Q6_K  71610 bytes"
	nothing_written out.gguf
}

@test "--dry-run ends with the tensor data's size, what the real run writes (llama-quantize --dry-run's quant size)" {
	run --separate-stderr fmt-convert --dry-run --dtype Q4_K_M --tensor-type 'attn_v=q8_0' "$PM/a.gguf" out.gguf
	assert_success
	nothing_written out.gguf
	fmt-convert -q --dtype Q4_K_M --tensor-type 'attn_v=q8_0' "$PM/a.gguf" out.gguf
	local bytes
	bytes=$(fmt-inspect --json out.gguf | jq '.data_bytes')
	assert_equal "${lines[-1]}" "tensor data: $bytes bytes ($(LC_ALL=C awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1048576 }') MiB)"
	assert_equal "$(fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type 'attn_v=q8_0' "$PM/a.gguf" out2.gguf | jq '.data_bytes')" "$bytes"
}

@test "a preset that is a dtype's name stays that dtype for every tensor of a model without its layers" {
	# no general.architecture: Q4_0 and q4_k are the plain types, as before presets
	fmt-convert -q --dtype f32 "$PM/b/weights.safetensors" plain.gguf
	fmt-convert --dtype Q4_0 plain.gguf q40.gguf
	assert_equal "$(fmt-inspect --json q40.gguf | jq -r '[.tensors[] | select(.shape | length == 2) | .dtype] | unique | join(" ")')" "Q4_0"
	# a mixture-only preset needs them, as the overrides do: exit 2, nothing written
	run --separate-stderr fmt-convert --dtype Q4_K_M plain.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: plain.gguf: --dtype Q4_K_M needs the model's general.architecture and its block_count, as llama-quantize (the mixture depends on the layers)"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dtype Q4_0 --pure plain.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: plain.gguf: --dtype Q4_0 needs the model's general.architecture and its block_count, as llama-quantize (the mixture depends on the layers)"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dtype Q4_K_M --set llama.block_count:u32=0 --arch llama plain.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: plain.gguf: --dtype Q4_K_M needs llama.block_count (1 to 512), as llama-quantize"
	nothing_written out.gguf
}

@test "bad overrides: exit 2 with the reason, nothing written" {
	local bad
	for bad in "--tensor-type attn_v" "--tensor-type =q8_0" "--tensor-type attn_v=" ; do
		run --separate-stderr fmt-convert --dtype Q4_K_M $bad "$PM/b.gguf" out.gguf
		assert_failure 2
		assert_equal "$stderr" "$(usage_error fmt-convert "--tensor-type takes PATTERN=TYPE (attn_v=q8_0), not '${bad#--tensor-type }'")"
		nothing_written out.gguf
	done
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type 'attn_(v=q8_0' "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--tensor-type: 'attn_(v' is not a regular expression")"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dtype Q4_K_M --output-tensor-type q9_k "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--output-tensor-type takes a ggml type (q8_0, q6_k, q4_k, iq4_nl, f16, ...), not 'q9_k'")"
	nothing_written out.gguf
	# a type fmt-convert does not write
	run --separate-stderr fmt-convert --dtype Q4_K_M --token-embedding-type iq2_xxs "$PM/b.gguf" out.gguf
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: $PM/b.gguf: tensor 'token_embd.weight': cannot convert F32 to IQ2_XXS"
	nothing_written out.gguf
	# llama-quantize's fallback applies to a --tensor-type type (Q6_K on rows of 32: Q8_0) ...
	fmt-convert --dtype Q4_K_M --tensor-type 'ffn_down_exps=q6_k' "$PM/d.gguf" out.gguf
	assert_equal "$(fmt-inspect --json out.gguf | jq -r '.tensors[] | select(.name == "blk.0.ffn_down_exps.weight") | .dtype')" Q8_0
	rm out.gguf
	# ... and with --pure (Q4_K on rows of 320: Q5_0)
	run --separate-stderr fmt-convert --dtype Q8_0 --tensor-type 'ffn_down=q4_k' --pure "$PM/a.gguf" out.gguf
	assert_success
	assert_equal "$(fmt-inspect --json out.gguf | jq -r '.tensors[] | select(.name == "blk.0.ffn_down.weight") | .dtype')" Q5_0
	rm out.gguf
	# the options are GGUF's, and need a preset
	run --separate-stderr fmt-convert --pure "$PM/b.gguf" out.safetensors
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--pure needs .gguf output")"
	nothing_written out.safetensors
	run --separate-stderr fmt-convert --pure "$PM/b.gguf" out3.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $PM/b.gguf: --pure goes with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), which is not given"
	nothing_written out3.gguf
}

@test "--tensor-type reads llama-quantize's ECMAScript patterns: \d, (?:), [\d], \w, lazy quantifiers; a lookaround is exit 2" {
	# llama-quantize (std::regex) gives these the same types as the plain patterns (checked with
	# its build of scripts/llama-src on model a); POSIX alone read \d as 'd' and matched nothing
	fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type 'ffn_down=q8_0' --tensor-type 'attn_[qk]=q5_k' \
		"$PM/a.gguf" out.gguf | jq -r '.tensors[] | "\(.name) \(.to)"' >want
	assert_equal "$(grep -c 'ffn_down.weight Q8_0$' want) $(grep -c 'attn_[qk].weight Q5_K$' want)" "8 16"
	local pair
	for pair in 'blk\.\d+\.ffn_down|attn_[qk]' 'BLK\.\D+?\.FFN_DOWN|ATTN_(?:Q|K)\.' 'blk\.[\d]+\.ffn_d\w+n|attn_[\dqk]\.'; do
		run --separate-stderr fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type "${pair%%|*}=q8_0" \
			--tensor-type "${pair#*|}=q5_k" "$PM/a.gguf" out.gguf
		assert_success
		assert_equal "$(jq -r '.tensors[] | "\(.name) \(.to)"' <<<"$output")" "$(cat want)"
	done
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type 'attn_(?!v)=q8_0' "$PM/a.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--tensor-type: 'attn_(?!v)' has a lookaround (?= (?! (?<=, which POSIX expressions do not have")"
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type 'blk\.[0\-1]\.attn_k=q8_0' "$PM/a.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--tensor-type: 'blk\.[0\-1]\.attn_k' has an escaped ] - ^ or \\ inside [...] (in POSIX: ] first, - last, ^ not first)")"
	# ECMAScript's [^] is any character (llama-quantize: every attn_ tensor Q8_0), [] none
	run --separate-stderr fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type 'attn_[^]=q8_0' "$PM/a.gguf" out.gguf
	assert_success
	assert_equal "$(jq -r '[.tensors[] | select(.name | test("attn_[qkvo]")) | .to] | unique | join(" ")' <<<"$output")" Q8_0
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type 'attn_[]=q8_0' "$PM/a.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--tensor-type: 'attn_[]' has an empty [], which matches nothing")"
	# a } that closes no {n,m} is a plain character: its ? is a quantifier, kept
	run --separate-stderr fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type 'ffn_down}?=q8_0' "$PM/a.gguf" out.gguf
	assert_success
	assert_equal "$(jq -r '.tensors[] | "\(.name) \(.to)"' <<<"$output" | grep -c 'ffn_down.weight Q8_0$')" 8
	nothing_written out.gguf
}

@test "a --tensor-type pattern that matches no tensor's name: a warning naming it (llama-quantize says nothing), on --dry-run too" {
	fmt-convert -q --dtype Q4_K_M --tensor-type 'attn_q=q8_0' "$PM/b.gguf" want.gguf
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type 'attn_qkv=q5_k' --tensor-type 'attn_q=q8_0' \
		--tensor-type 'blk\.9\.=q8_0' "$PM/b.gguf" out.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: --tensor-type 'attn_qkv', 'blk\\\\.9\\\\.': match no tensor's name (none of them changed)"
	cmp want.gguf out.gguf
	run --separate-stderr fmt-convert --dry-run --dtype Q4_K_M --tensor-type 'ATTN_QKV=q5_k' "$PM/b.gguf" dry.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: --tensor-type 'attn_qkv': matches no tensor's name (none of them changed)"
	nothing_written dry.gguf
	# one that matches only tensors llama-quantize keeps (the norms) is no mistake of spelling: no warning
	run --separate-stderr fmt-convert -f --dtype Q4_K_M --tensor-type 'norm=q8_0' "$PM/b.gguf" out.gguf
	assert_success
	assert_equal "$stderr" ""
}

@test "llama-quantize's presets fmt-convert does not write: exit 2 naming the ones it does, nothing written" {
	local what="it writes Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0"
	local name
	# every name of llama-quantize's list (tools/quantize/quantize.cpp) that is not a preset here
	for name in Q1_0 Q2_0 MXFP4_MOE IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ1_S IQ1_M TQ1_0 TQ2_0 Q2_K_S IQ3_XXS IQ3_S IQ3_M IQ3_XS; do
		run --separate-stderr fmt-convert --dtype "$name" "$PM/b.gguf" out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: --dtype $name: fmtkit does not write llama-quantize's $name; $what
Try 'fmt-convert --help'."
		nothing_written out.gguf
	done
	# in any case, as llama-quantize reads them; --dry-run refuses the same
	run --separate-stderr fmt-convert --dry-run --dtype iq2_xxs "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype iq2_xxs: fmtkit does not write llama-quantize's IQ2_XXS; $what
Try 'fmt-convert --help'."
	run --separate-stderr fmt-convert --dtype COPY "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype COPY: llama-quantize's COPY is --dtype keep here
Try 'fmt-convert --help'."
	nothing_written out.gguf
	# a name that is no llama-quantize type keeps the general message
	run --separate-stderr fmt-convert --dtype Q9_K "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --dtype takes f32, f16, bf16, q8_0, q4_0, int8, int4, fp8, fp6, fp4 or keep, or the ggml types q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, or for GGUF output the presets Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S or Q5_K_M (not 'Q9_K')
Try 'fmt-convert --help'."
}

@test "requantizing a quantized model with a preset: refused without --allow-requantize (exit 2, nothing written)" {
	fmt-convert -q --dtype Q8_0 "$PM/b.gguf" q8.gguf
	run --separate-stderr fmt-convert --dtype Q4_K_M q8.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: q8.gguf: tensor 'token_embd.weight' is already quantized (Q8_0): requantizing it to Q6_K loses precision twice; --allow-requantize does it"
	nothing_written out.gguf
	run fmt-convert --allow-requantize --dtype Q4_K_M q8.gguf out.gguf
	assert_success
	assert_equal "$(fmt-inspect --json out.gguf | jq '.metadata["general.file_type"]')" 15
}

# A safetensors file of 2x2 F32 tensors named NAME... (values 1, 2, ...).
names_model() {
	local out=$1
	shift
	python3 - "$out" "$@" <<'PY'
import json, struct, sys
names = sys.argv[2:]
header = {n: {"dtype": "F32", "shape": [2, 2], "data_offsets": [16 * i, 16 * i + 16]} for i, n in enumerate(names)}
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
data = struct.pack("<%df" % (4 * len(names)), *range(1, 4 * len(names) + 1))
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
}

@test "a Hugging Face checkpoint's tensor names into GGUF: kept, with a warning (llama.cpp looks tensors up by its own names), on --dry-run too; none for llama.cpp's names, other formats or -q" {
	names_model hf.safetensors model.embed_tokens.weight model.layers.0.self_attn.v_proj.weight lm_head.weight
	local why="tensor names are a Hugging Face checkpoint's ('model.embed_tokens.weight'), not llama.cpp's ('token_embd.weight', 'blk.N.attn_q.weight'): llama.cpp will not find the tensors and a preset sees no tensor roles; names are kept as they are (llama.cpp's convert_hf_to_gguf.py renames them)"
	run --separate-stderr fmt-convert --arch llama hf.safetensors hf.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: $why"
	assert_equal "$(fmt-inspect --json hf.gguf | jq -r '[.tensors[].name] | join(" ")')" \
		"model.embed_tokens.weight model.layers.0.self_attn.v_proj.weight lm_head.weight"
	run --separate-stderr fmt-convert --dry-run --arch llama hf.safetensors dry.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: $why"
	nothing_written dry.gguf
	run --separate-stderr fmt-convert --json -f --arch llama hf.safetensors hf.gguf
	assert_success
	assert_equal "$(printf '%s' "$stderr" | jq -r '.level + " " + .message')" "warning $why"
	run --separate-stderr fmt-convert -q -f --arch llama hf.safetensors hf.gguf
	assert_success
	assert_equal "$stderr" ""
	# GPT-2's names too; not into another format
	names_model gpt2.safetensors transformer.wte.weight transformer.h.0.attn.c_attn.weight
	run --separate-stderr fmt-convert --arch gpt2 gpt2.safetensors gpt2.gguf
	assert_equal "$stderr" "fmt-convert: warning: ${why/model.embed_tokens.weight/transformer.wte.weight}"
	run --separate-stderr fmt-convert hf.safetensors hf.apr
	assert_success
	assert_equal "$stderr" ""
	# llama.cpp's names, alone or beside others: nothing to say
	names_model cpp.safetensors token_embd.weight blk.0.attn_v.weight output.weight
	names_model mixed.safetensors blk.0.attn_v.weight model.layers.0.extra.weight
	for m in cpp mixed; do
		run --separate-stderr fmt-convert --arch llama $m.safetensors $m.gguf
		assert_success
		assert_equal "$stderr" ""
	done
}

@test "--dtype takes llama-quantize's type numbers (llama_ftype): 15 is Q4_K_M, 7 Q8_0, 12 Q3_K_M, 1 F16, 32 BF16, 0 F32" {
	local pair
	for pair in 15:Q4_K_M 7:Q8_0 12:Q3_K_M 18:Q6_K 30:IQ4_XS 1:f16 32:bf16 0:f32; do
		fmt-convert -q --dtype "${pair#*:}" "$PM/b.gguf" name.gguf
		run --separate-stderr fmt-convert --dtype "${pair%%:*}" "$PM/b.gguf" number.gguf
		assert_success
		assert_equal "$stderr" ""
		cmp name.gguf number.gguf || fail "--dtype ${pair%%:*} is not --dtype ${pair#*:}"
		rm name.gguf number.gguf
	done
	# with the overrides, and in --dry-run's JSON (the plan names the preset)
	fmt-convert -q --dtype Q4_K_M --output-tensor-type q8_0 "$PM/a.gguf" name.gguf
	fmt-convert -q --dtype 15 --output-tensor-type q8_0 "$PM/a.gguf" number.gguf
	cmp name.gguf number.gguf
	assert_equal "$(fmt-inspect --json number.gguf | jq '.metadata["general.file_type"]')" 15
	assert_equal "$(fmt-convert --dry-run --json --dtype 15 "$PM/a.gguf" dry.gguf | jq -r '.tensors[] | select(.name == "output.weight") | .to')" Q6_K
	nothing_written dry.gguf
}

@test "--dtype NUMBER: the numbers llama-quantize refuses, and those of types fmtkit does not write, are exit 2 naming them" {
	local n
	for n in 4 5 6 33 34 35 39 42 255 99999999999; do
		run --separate-stderr fmt-convert --dtype "$n" "$PM/b.gguf" out.gguf
		assert_failure 2
		assert_equal "$stderr" "$(usage_error fmt-convert "--dtype $n: llama-quantize's type numbers (llama_ftype) are 0-3, 7-32, 36-38, 40 and 41; of those fmtkit writes 0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 7 Q8_0, 8 Q5_0, 9 Q5_1, 10 Q2_K, 11 Q3_K_S, 12 Q3_K_M, 13 Q3_K_L, 14 Q4_K_S, 15 Q4_K_M, 16 Q5_K_S, 17 Q5_K_M, 18 Q6_K, 25 IQ4_NL, 30 IQ4_XS, 32 BF16")"
		nothing_written out.gguf
	done
	local what="it writes Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS, Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0"
	local pair
	for pair in 19:IQ2_XXS 21:Q2_K_S 31:IQ1_M 36:TQ1_0 38:MXFP4_MOE 41:Q2_0; do
		run --separate-stderr fmt-convert --dtype "${pair%%:*}" "$PM/b.gguf" out.gguf
		assert_failure 2
		assert_equal "$stderr" "$(usage_error fmt-convert "--dtype ${pair%%:*}: fmtkit does not write llama-quantize's ${pair#*:}; $what")"
		nothing_written out.gguf
	done
	# a number for another output format: GGUF's, said before any file is read
	for n in 15 1; do
		run --separate-stderr fmt-convert --dtype "$n" "$PM/b.gguf" out.safetensors
		assert_failure 2
		assert_equal "$stderr" "$(usage_error fmt-convert "--dtype $n needs GGUF output (its name of one of its presets or dtypes; safetensors has none)")"
		nothing_written out.safetensors
	done
	# negative, or beyond an int (std::stoi's out_of_range): the numbers' message
	for n in -1 -15 2147483648; do
		run --separate-stderr fmt-convert --dtype "$n" "$PM/b.gguf" out.gguf
		assert_failure 2
		[[ "$stderr" == "fmt-convert: error: --dtype $n: llama-quantize's type numbers (llama_ftype) are 0-3, "* ]] || fail "--dtype '$n': $stderr"
		nothing_written out.gguf
	done
	# no digit after the blanks and the sign: no number (std::stoi's invalid_argument), the general message
	for n in + ' ' ' -' x15; do
		run --separate-stderr fmt-convert --dtype "$n" "$PM/b.gguf" out.gguf
		assert_failure 2
		[[ "$stderr" == "fmt-convert: error: --dtype takes f32, f16, "*"(not '$n'"* ]] || fail "--dtype '$n': $stderr"
		nothing_written out.gguf
	done
}

@test "--dtype NUMBER is read as llama-quantize's std::stoi reads it: zeros, a sign, blanks before, anything after the digits" {
	fmt-convert -q --dtype Q4_K_M "$PM/b.gguf" want.gguf
	local n
	for n in 0000000015 00000000000000000000015 +15 ' 15' $'\t15' 15x 15.9 ' +15abc'; do
		run --separate-stderr fmt-convert --dtype "$n" "$PM/b.gguf" number.gguf
		assert_success
		assert_equal "$stderr" ""
		cmp want.gguf number.gguf || fail "--dtype '$n' is not --dtype 15"
		rm number.gguf
	done
	# 0x15, -0 and +0 are 0 (stoi stops at the x): F32
	fmt-convert -q --dtype f32 "$PM/b.gguf" f32.gguf
	for n in 0x15 -0 +0 00; do
		fmt-convert -q --dtype "$n" "$PM/b.gguf" number.gguf
		cmp f32.gguf number.gguf || fail "--dtype '$n' is not --dtype 0"
		rm number.gguf
	done
	# and 1e3 is 1: F16, with an override llama-quantize's F16
	fmt-convert -q --dtype F16 --output-tensor-type q8_0 "$PM/b.gguf" f16.gguf
	fmt-convert -q --dtype 1e3 --output-tensor-type q8_0 "$PM/b.gguf" number.gguf
	cmp f16.gguf number.gguf
}

@test "a preset writes llama-quantize's whole file byte for byte: its tensor order, its key order, --override-kv, --prune-layers, --imatrix's keys (files.sha256)" {
	local model case type opts n=0 want
	while read -r model case type opts; do
		case "$model" in '#'* | '') continue ;; esac
		read -r -a opts <<<"$opts"
		# in the model's directory, as the golden script ran llama-quantize (--imatrix imatrix.gguf)
		(cd "$PM/$model" && fmt-convert -q --dtype "$type" "${opts[@]}" "$PM/$model.gguf" "$BATS_TEST_TMPDIR/$model-$case.gguf")
		want=$(awk -v c="$model-$case" '$1 == c { print $2 }' "$LQ/files.sha256")
		assert_equal "$model-$case $(sha256sum <"$model-$case.gguf" | cut -d' ' -f1)" "$model-$case $want"
		n=$((n + 1))
	done <"$LQ/file-cases"
	assert_equal "$n" 13
	# llama-quantize's order: outside the layers by name, then layer by layer (2 before 10)
	assert_equal "$(fmt-inspect --json a-Q8_0.gguf | jq -r '[.tensors[].name][:5] | join(" ")')" \
		"output.weight output_norm.weight token_embd.weight blk.0.attn_k.weight blk.0.attn_norm.weight"
	assert_equal "$(fmt-inspect --json a-Q8_0.gguf | jq -r '.metadata_types | keys_unsorted[-2:] | join(" ")')" \
		"general.quantization_version general.file_type"
}

@test "--override-kv KEY=TYPE:VALUE: int as u32, float as f32, bool, str; the key moved last, after --set" {
	fmt-convert -q --dtype Q8_0 --set x.s=first --override-kv x.i=int:4294967295 --override-kv x.f=float:0.5 \
		--override-kv x.b=bool:false --override-kv 'x.s=str:a b=c' --override-kv general.architecture=str:llama \
		--override-kv x.i=int:0 "$PM/a.gguf" kv.gguf
	assert_equal "$(fmt-inspect --json kv.gguf | jq -c '[.metadata_types | to_entries[-7:][] | .key + " " + .value]')" \
		'["general.quantization_version u32","general.file_type u32","x.f f32","x.b bool","x.s str","general.architecture str","x.i u32"]'
	assert_equal "$(fmt-inspect --json kv.gguf | jq -c '.metadata | [.["x.i"], .["x.f"], .["x.b"], .["x.s"]]')" '[0,0.5,false,"a b=c"]'
	# a key a preset reads changes its choices, as in llama-quantize's loader: model c's 80 layers back to 8
	fmt-convert -q --dtype Q3_K_M --set llama.block_count:u32=8 "$PM/c.gguf" set.gguf
	fmt-convert -q --dtype Q3_K_M --override-kv llama.block_count=int:8 "$PM/c.gguf" over.gguf
	assert_equal "$(listing over.gguf)" "$(listing set.gguf)"
	# with --in-place, and for safetensors output strings only
	cp "$PM/b.gguf" edit.gguf
	fmt-convert --in-place --override-kv general.name=str:edited edit.gguf
	assert_equal "$(fmt-inspect --json edit.gguf | jq -r '.metadata["general.name"]')" edited
	fmt-convert -q --override-kv note=str:yes "$PM/b.gguf" out.safetensors
	assert_equal "$(fmt-inspect --json out.safetensors | jq -r '.metadata.note')" yes
	run --separate-stderr fmt-convert --override-kv n=int:1 "$PM/b.gguf" bad.safetensors
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $PM/b.gguf: --override-kv n: safetensors metadata holds strings only"
	nothing_written bad.safetensors
}

@test "--override-kv hostile: no '=', a key of 128 bytes, another type, a bad value: exit 2 naming the option, nothing written" {
	local long
	long=$(printf 'k%.0s' {1..128})
	local -a cases=(
		"noequals|--override-kv takes KEY=TYPE:VALUE, KEY of 1 to 127 bytes (not 'noequals')"
		"=int:5|--override-kv takes KEY=TYPE:VALUE, KEY of 1 to 127 bytes (not '=int:5')"
		"$long=int:1|--override-kv takes KEY=TYPE:VALUE, KEY of 1 to 127 bytes (not '$long=int:1')"
		"k=u32:5|--override-kv k: the value must start with int:, float:, bool: or str: (not 'u32:5')"
		"k=5|--override-kv k: the value must start with int:, float:, bool: or str: (not '5')"
		"k=int:-5|--override-kv k: int takes a whole number from 0 to 4294967295 (written as u32, as llama-quantize does), not '-5'"
		"k=int:4294967296|--override-kv k: int takes a whole number from 0 to 4294967295 (written as u32, as llama-quantize does), not '4294967296'"
		"k=int:99999999999999999999999|--override-kv k: int takes a whole number from 0 to 4294967295 (written as u32, as llama-quantize does), not '99999999999999999999999'"
		"k=int:12abc|--override-kv k: int takes a whole number from 0 to 4294967295 (written as u32, as llama-quantize does), not '12abc'"
		"k=int:|--override-kv k: int takes a whole number from 0 to 4294967295 (written as u32, as llama-quantize does), not ''"
		"k=float:abc|--override-kv k: 'abc' is not a valid f32"
		"k=float:1e39|--override-kv k: '1e39' is not a valid f32"
		"k=bool:1|--override-kv k: bool takes true or false, not '1'"
		"k=str:$(printf 'x%.0s' {1..128})|--override-kv k: a str value holds at most 127 bytes (llama-quantize's limit), not 128"
	)
	local c
	for c in "${cases[@]}"; do
		run --separate-stderr fmt-convert --dtype Q8_0 --override-kv "${c%%|*}" "$PM/b.gguf" out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: $PM/b.gguf: ${c#*|}"
		nothing_written out.gguf
	done
	# a str of 127 bytes is taken
	fmt-convert -q --dtype Q8_0 --override-kv "k=str:$(printf 'x%.0s' {1..127})" "$PM/b.gguf" out.gguf
	assert_equal "$(fmt-inspect --json out.gguf | jq -r '.metadata.k | length')" 127
}

@test "a quantized GGUF into F16, BF16 or F32 GGUF: exit 2 naming the tensor without --allow-requantize, as llama-quantize" {
	fmt-convert -q --dtype Q8_0 "$PM/a.gguf" q8.gguf
	local t
	for t in F16:F16 bf16:BF16 F32:F32 f32:F32 1:F16 32:BF16 0:F32; do
		run --separate-stderr fmt-convert --dtype "${t%%:*}" q8.gguf out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: q8.gguf: tensor 'output.weight' is already quantized (Q8_0): expanding it to ${t#*:} is requantizing to llama-quantize, which refuses it; --allow-requantize does it"
		nothing_written out.gguf
	done
	# with overrides: the first tensor it would expand (llama-quantize names the same one)
	run --separate-stderr fmt-convert --dtype F16 --output-tensor-type q8_0 --token-embedding-type q8_0 q8.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: q8.gguf: tensor 'blk.0.attn_k.weight' is already quantized (Q8_0): expanding it to F16 is requantizing to llama-quantize, which refuses it; --allow-requantize does it"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dry-run --dtype bf16 --output-tensor-type q8_0 q8.gguf out.gguf
	assert_failure 2
	nothing_written out.gguf
	# --allow-requantize expands them; keep and Q8_0 need nothing; another format is not llama-quantize's
	fmt-convert -q --allow-requantize --dtype F16 q8.gguf f16.gguf
	assert_equal "$(fmt-inspect --json f16.gguf | jq -r '[.tensors[] | select(.shape | length == 2) | .dtype] | unique | join(" ")')" F16
	fmt-convert -q --dtype keep q8.gguf keep.gguf
	fmt-convert -q --dtype Q8_0 q8.gguf same.gguf
	cmp q8.gguf same.gguf
	fmt-convert -q --dtype f16 q8.gguf out.safetensors
	assert_equal "$(fmt-inspect --json out.safetensors | jq -r '[.tensors[].dtype] | unique | join(" ")')" F16
}

@test "--dtype F16, BF16, F32 take llama-quantize's overrides: its types, bytes, file type and quantization_version" {
	# the tensors are in the golden cases (a-F16-types ...); here the keys llama-quantize writes
	# that the listings do not hold: general.quantization_version 2 on its F16/BF16/F32 outputs
	local pair
	for pair in F16:1 bf16:32 f32:0; do
		fmt-convert -q --dtype "${pair%%:*}" --output-tensor-type q8_0 "$PM/a.gguf" out.gguf
		assert_equal "$(fmt-inspect --json out.gguf | jq -c '.metadata | [.["general.file_type"], .["general.quantization_version"]]')" "[${pair#*:},2]"
		assert_equal "$(fmt-inspect --json out.gguf | jq -r '.tensors[] | select(.name == "output.weight") | .dtype')" Q8_0
		rm out.gguf
	done
	# --output-tensor-type f16 quantizes nothing: llama-quantize writes the version all the same
	fmt-convert -q --dtype f16 --output-tensor-type f32 "$PM/a.gguf" out.gguf
	assert_equal "$(fmt-inspect --json out.gguf | jq -c '.metadata | [.["general.file_type"], .["general.quantization_version"]]')" "[1,2]"
	assert_equal "$(fmt-inspect --json out.gguf | jq -r '[.tensors[] | select(.shape | length == 2) | .dtype] | unique | join(" ")')" "F16 F32"
	# with an importance matrix: the keys llama-quantize writes for it with F16 (checked with it)
	fmt-convert -q --dtype f16 --imatrix "$PM/b/imatrix.gguf" --include-weights attn "$PM/b.gguf" im.gguf
	assert_equal "$(fmt-inspect --json im.gguf | jq -c '.metadata | [.["general.file_type"], .["quantize.imatrix.entries_count"], .["quantize.imatrix.chunks_count"]]')" "[1,8,4]"
	# without an override f16 stays fmt-convert's plain dtype, as before: the same bytes, no version
	fmt-convert -q --dtype f16 "$PM/a.gguf" plain.gguf
	assert_equal "$(fmt-inspect --json plain.gguf | jq -c '.metadata | [.["general.file_type"], .["general.quantization_version"]]')" "[1,null]"
	fmt-convert -q --dtype f16 "$PM/a/weights.safetensors" plain-st.gguf
	assert_equal "$(fmt-inspect --json plain-st.gguf | jq -r '[.tensors[].dtype] | unique | join(" ")')" "F16 F32"
}

@test "--tensor-type with --dtype F16/BF16/F32: no tensor changes, as in llama-quantize, and a warning says so" {
	fmt-convert -q --dtype f16 --output-tensor-type q8_0 "$PM/a.gguf" want.gguf
	run --separate-stderr fmt-convert --dtype F16 --output-tensor-type q8_0 --tensor-type attn_q=q8_0 \
		--tensor-type 'ffn_down=q4_k' "$PM/a.gguf" out.gguf
	assert_success
	assert_equal "$stderr" "fmt-convert: warning: --tensor-type 'attn_q', 'ffn_down': no tensor changed: llama-quantize applies --tensor-type with its quantized types only, not with F16 (--output-tensor-type and --token-embedding-type apply)"
	cmp want.gguf out.gguf
	# a bad pattern is still exit 2
	run --separate-stderr fmt-convert --dtype bf16 --tensor-type 'attn_(q=q8_0' "$PM/a.gguf" bad.gguf
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert "--tensor-type: 'attn_(q' is not a regular expression")"
	nothing_written bad.gguf
}

@test "--tensor-type-file reads llama-quantize's file: PATTERN=TYPE words between spaces and newlines, in its place among the --tensor-type options" {
	# the golden case a-Q4_K_M-tensor-type-file has llama-quantize's bytes for the file with
	# --tensor-type around it; the same words given as --tensor-type options plan the same
	fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type attn=q5_0 --tensor-type-file "$LQ/tensor-types.txt" \
		--tensor-type ffn_up=q8_0 "$PM/a.gguf" out.gguf | jq -r '.tensors[] | "\(.name) \(.to)"' >file
	fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type attn=q5_0 --tensor-type attn_q=q8_0 \
		--tensor-type ffn_down=q5_k --tensor-type attn_v=q6_k --tensor-type 'blk\.0\..*=q4_0' --tensor-type output=q5_0 \
		--tensor-type ffn_up=q8_0 "$PM/a.gguf" out.gguf | jq -r '.tensors[] | "\(.name) \(.to)"' >options
	diff options file
	# the file first: its attn_q=q8_0 comes before --tensor-type attn=q5_0 (the first match counts)
	assert_equal "$(fmt-convert --dry-run --json --dtype Q4_K_M --tensor-type-file "$LQ/tensor-types.txt" --tensor-type attn=q5_0 \
		"$PM/a.gguf" out.gguf | jq -r '.tensors[] | select(.name == "blk.1.attn_q.weight" or .name == "blk.1.attn_k.weight") | "\(.name) \(.to)"' | sort | tr '\n' ' ')" \
		"blk.1.attn_k.weight Q5_0 blk.1.attn_q.weight Q8_0 "
	# an empty file changes nothing; so does a file read from standard input
	: >empty.txt
	fmt-convert -q --dtype Q4_K_M "$PM/b.gguf" want.gguf
	fmt-convert -q --dtype Q4_K_M --tensor-type-file empty.txt "$PM/b.gguf" out.gguf
	cmp want.gguf out.gguf
	fmt-convert -q --dtype Q4_K_M --tensor-type attn_q=q8_0 "$PM/b.gguf" want2.gguf
	printf 'attn_q=q8_0' | fmt-convert -q --dtype Q4_K_M --tensor-type-file - "$PM/b.gguf" out2.gguf
	cmp want2.gguf out2.gguf
}

@test "--tensor-type-file hostile: missing (3), a directory (3), a NUL byte (4), over 1 MiB (4), a bad word (2, naming its line)" {
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type-file nope.txt "$PM/b.gguf" out.gguf
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: nope.txt: --tensor-type-file: cannot open: No such file or directory"
	nothing_written out.gguf
	mkdir dir
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type-file dir "$PM/b.gguf" out.gguf
	assert_failure 3
	assert_equal "$stderr" "fmt-convert: error: dir: --tensor-type-file: is a directory (expected a regular file or a pipe)"
	printf 'attn_q=q8_0\nffn\0_down=q5_k\n' >nul.txt
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type-file nul.txt "$PM/b.gguf" out.gguf
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: nul.txt: --tensor-type-file: a NUL byte on line 2 (a text file of PATTERN=TYPE words was expected)"
	nothing_written out.gguf
	# one line of 3 MB: refused by its size before any word is read
	head -c 3000000 /dev/zero | tr '\0' a >huge.txt
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type-file huge.txt "$PM/b.gguf" out.gguf
	assert_failure 4
	assert_equal "$stderr" "fmt-convert: error: huge.txt: --tensor-type-file: more than 1048576 bytes (the limit for this file)"
	nothing_written out.gguf
	# words llama-quantize refuses too (it prints its usage, exit 1): exit 2 naming file and line
	local long
	long=$(head -c 300 /dev/zero | tr '\0' b)
	local -a texts=("# a comment
attn_q=q8_0" "attn_q = q8_0" "

attn_q=q9_k" "attn_q=q8_0 attn_(v=q8_0" "attn_q=q8_0 $long=q8_0")
	local -a says=("takes PATTERN=TYPE (attn_v=q8_0), not '#'" "takes PATTERN=TYPE (attn_v=q8_0), not 'attn_q'"
		"takes a ggml type (q8_0, q6_k, q4_k, iq4_nl, f16, ...), not 'q9_k'" ": 'attn_(v' is not a regular expression"
		": a word of 305 bytes (PATTERN=TYPE, the pattern at most 127 characters)")
	local -a at=(1 1 3 1 1)
	local t i   # (not i for the words: bats's run changes it)
	for t in "${!texts[@]}"; do
		printf '%s\n' "${texts[$t]}" >bad.txt
		run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type-file bad.txt "$PM/b.gguf" out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: --tensor-type-file bad.txt, line ${at[$t]}${says[$t]/#t/ t}"
		nothing_written out.gguf
	done
	# more patterns than fit (1,024 with the --tensor-type ones)
	for i in $(seq 0 1024); do printf 'blk\\.%d\\.attn_q=q8_0\n' "$i"; done >many.txt
	run --separate-stderr fmt-convert --dtype Q4_K_M --tensor-type-file many.txt "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: --tensor-type-file many.txt, line 1025: at most 1024 patterns of 127 characters"
	nothing_written out.gguf
	# without a preset, as the other options
	printf 'attn_q=q8_0\n' >one.txt
	run --separate-stderr fmt-convert --tensor-type-file one.txt "$PM/b.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $PM/b.gguf: --tensor-type-file goes with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), which is not given"
	nothing_written out.gguf
}

@test "--output-tensor-type / --token-embedding-type of blocks the rows do not divide into: exit 2 naming the type that holds them (llama-quantize aborts)" {
	# a model 320 wide: llama-quantize --output-tensor-type iq4_xs stops on a failed GGML_ASSERT
	# (exit 134); these two options get no fallback there, so the message says what to ask
	"$REPO_ROOT/scripts/gen/llama-tiny" w --embd 320 --ff 256 --layers 2 --heads 4 --kv-heads 2 >/dev/null
	fmt-convert -q --arch llama --dtype f32 --metadata-from w/vocab.gguf --keys 'tokenizer.*' --set-from w/hparams.json \
		w/weights.safetensors w.gguf
	local dry
	for dry in "" --dry-run; do
		run --separate-stderr fmt-convert $dry --dtype Q4_K_M --output-tensor-type iq4_xs w.gguf out.gguf
		assert_failure 2
		assert_equal "$stderr" "fmt-convert: error: w.gguf: --output-tensor-type iq4_xs: tensor 'output.weight' has rows of 320 elements, which do not divide into IQ4_XS blocks of 256 (llama-quantize stops there); --output-tensor-type iq4_nl holds them"
		nothing_written out.gguf
	done
	run --separate-stderr fmt-convert --dtype F16 --token-embedding-type Q2_K w.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: w.gguf: --token-embedding-type q2_k: tensor 'token_embd.weight' has rows of 320 elements, which do not divide into Q2_K blocks of 256 (llama-quantize stops there); --token-embedding-type q4_0 holds them"
	nothing_written out.gguf
	# what it names works (llama-quantize writes the same tensors: checked with its build)
	fmt-convert -q --dtype Q4_K_M --output-tensor-type iq4_nl --token-embedding-type q4_0 w.gguf out.gguf
	assert_equal "$(fmt-inspect --json out.gguf | jq -r '.tensors[] | select(.name == "output.weight" or .name == "token_embd.weight") | "\(.name) \(.dtype)"' | sort | tr '\n' ' ')" \
		"output.weight IQ4_NL token_embd.weight Q4_0 "
}

@test "an architecture name of 140 bytes gets the mixture its hyperparameters give (head_count_kv read)" {
	# The keys "<arch>.<suffix>" were made in 160 bytes: from 136 bytes of name on,
	# "<arch>.attention.head_count_kv" was cut, went unread, and GQA models got another mixture
	# (attn_v Q3_K instead of Q4_K under Q2_K).
	/usr/bin/python3 - m.safetensors <<'PY'
import json, struct, sys
names = ["token_embd.weight", "blk.0.attn_v.weight", "blk.0.attn_k.weight", "blk.0.ffn_down.weight", "output.weight"]
n = 256 * 256
h = {t: {"dtype": "F32", "shape": [256, 256], "data_offsets": [i * 4 * n, (i + 1) * 4 * n]} for i, t in enumerate(names)}
b = json.dumps(h).encode()
b += b" " * (-len(b) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(b)) + b + struct.pack("<%df" % n, *[(i % 97 - 48) / 50 for i in range(n)]) * len(names))
PY
	local arch mix=()
	for arch in llama "$(printf 'b%.0s' $(seq 140))"; do
		fmt-convert -q -f --arch "$arch" --set "$arch.block_count:u32=1" --set "$arch.attention.head_count:u32=8" \
			--set "$arch.attention.head_count_kv:u32=2" m.safetensors m.gguf
		run --separate-stderr fmt-convert --dry-run --json --dtype Q2_K m.gguf out.gguf
		assert_success
		mix+=("$(jq -c '[.tensors[] | [.name, .to]]' <<<"$output")")
	done
	assert_equal "${mix[0]}" '[["token_embd.weight","Q2_K"],["blk.0.attn_v.weight","Q4_K"],["blk.0.attn_k.weight","Q2_K"],["blk.0.ffn_down.weight","Q3_K"],["output.weight","Q6_K"]]'
	assert_equal "${mix[1]}" "${mix[0]}"
}

@test "--prune-layers L0,L1,...: the layers left out, the others renumbered, block_count the layers left (last key)" {
	fmt-convert -q --dtype Q8_0 --prune-layers 2,5 "$PM/a.gguf" p.gguf
	assert_equal "$(fmt-inspect --json p.gguf | jq -r '[.tensors[].name | select(endswith("attn_q.weight"))] | join(" ")')" \
		"blk.0.attn_q.weight blk.1.attn_q.weight blk.2.attn_q.weight blk.3.attn_q.weight blk.4.attn_q.weight blk.5.attn_q.weight"
	assert_equal "$(fmt-inspect --json p.gguf | jq -c '[.tensor_count, (.metadata_types | keys_unsorted[-1]), .metadata["llama.block_count"]]')" \
		'[57,"llama.block_count",6]'
	# layer 3 of the input is layer 2 of the output: the same bytes
	fmt-convert -q --dtype Q8_0 "$PM/a.gguf" full.gguf
	assert_equal "$(tensor_hex p.gguf blk.2.attn_q.weight | sha256sum)" "$(tensor_hex full.gguf blk.3.attn_q.weight | sha256sum)"
	# repeated, unsorted, twice the same, blanks and what follows the digits ignored (std::stoi)
	fmt-convert -q --dtype Q8_0 --prune-layers '5, 2x' --prune-layers 5 "$PM/a.gguf" again.gguf
	cmp p.gguf again.gguf
	# a layer beyond the last: nothing left out, block_count rewritten all the same
	fmt-convert -q --dtype Q8_0 --prune-layers 99 "$PM/a.gguf" none.gguf
	assert_equal "$(fmt-inspect --json none.gguf | jq -c '[.tensor_count, (.metadata_types | keys_unsorted[-1]), .metadata["llama.block_count"]]')" \
		'[75,"llama.block_count",8]'
	# --dry-run lists the new names
	assert_equal "$(fmt-convert --dry-run --json --dtype Q8_0 --prune-layers 0 "$PM/a.gguf" dry.gguf | jq -r '[.tensors[].name | select(startswith("blk.6."))] | length')" 9
	nothing_written dry.gguf
}

@test "--prune-layers hostile: an empty, negative, non-numeric or too large id is exit 2; it needs a preset" {
	local p
	for p in '' , 1, ,1 1,,2 -1 a ' ' 2147483648 99999999999; do
		run --separate-stderr fmt-convert --dtype Q8_0 --prune-layers "$p" "$PM/a.gguf" out.gguf
		assert_failure 2
		[[ "$stderr" == "fmt-convert: error: --prune-layers: invalid layer id '"*"' (L0,L1,...: layer numbers from 0)"* ]] || fail "'$p': $stderr"
		nothing_written out.gguf
	done
	run --separate-stderr fmt-convert --prune-layers 1 "$PM/a.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $PM/a.gguf: --prune-layers goes with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), which is not given"
	nothing_written out.gguf
	run --separate-stderr fmt-convert --dtype Q8_0 --prune-layers 1 "$PM/a/weights.safetensors" out.gguf
	assert_failure 2
	nothing_written out.gguf
	# a tensor's layer number beyond an int (llama-quantize's std::stoi throws): exit 5 naming it
	names_model huge.safetensors token_embd.weight blk.0.attn_q.weight blk.99999999999.attn_q.weight
	fmt-convert -q --arch llama --set llama.block_count:u32=2 huge.safetensors huge.gguf
	run --separate-stderr fmt-convert --dtype Q8_0 --prune-layers 0 huge.gguf out.gguf
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: huge.gguf: --prune-layers: tensor 'blk.99999999999.attn_q.weight': its layer number is beyond an int"
	nothing_written out.gguf
}

@test "--keep-split: llama-quantize --keep-split's set byte for byte: its file names, each shard's tensors and split keys, shards emptied by --prune-layers (split.sha256)" {
	local model case type split opts n=0 files f want
	while read -r model case type split opts; do
		case "$model" in '#'* | '') continue ;; esac
		read -r -a opts <<<"$opts"
		IFS=, read -r -a split <<<"$split"
		mkdir "in-$model-$case"
		fmt-shard split -q "$PM/$model.gguf" "${split[@]}" -o "in-$model-$case/m"
		fmt-convert -q --dtype "$type" --keep-split "${opts[@]}" "in-$model-$case"/m-00001-of-*.gguf "$model-$case.gguf"
		nothing_written "$model-$case.gguf"
		# the files llama-quantize wrote, named OUT without .gguf + -0000I-of-0000N.gguf, and no other
		files=$(awk -v c="$model-$case-" 'index($1, c) == 1 { print $1 ".gguf" }' "$LQ/split.sha256")
		assert_equal "$(ls "$model-$case"-*.gguf)" "$files"
		for f in $files; do
			want=$(awk -v c="${f%.gguf}" '$1 == c { print $2 }' "$LQ/split.sha256")
			assert_equal "$f $(sha256sum <"$f" | cut -d' ' -f1)" "$f $want"
			n=$((n + 1))
		done
	done <"$LQ/split-cases"
	assert_equal "$n" 39
	# model r's first shard emptied by --prune-layers 0 stays, of metadata only; its last one
	# emptied by --prune-layers 7 is not written and not counted (split.count 8)
	assert_equal "$(fmt-inspect --json r-prune-first-00001-of-00009.gguf | jq -c '[.tensors[] | select(.file | endswith("00001-of-00009.gguf"))] | length')" 0
	assert_equal "$(fmt-inspect --json r-prune-last-00008-of-00008.gguf | jq -c '[.tensor_count, .metadata["llama.block_count"]]')" '[66,7]'
	# read back as one set: each tensor in the shard (and order) it had in the input, and the
	# whole-file Q8_0's types
	assert_equal "$(fmt-inspect --json a-Q8_0-00001-of-00003.gguf | jq -c '[.tensor_count, .metadata["general.file_type"]]')" '[75,7]'
	assert_equal "$(fmt-inspect --json a-Q8_0-00001-of-00003.gguf | jq -r '.tensors[] | .name + " " + .file[-19:]')" \
		"$(fmt-inspect --json in-a-Q8_0/m-00001-of-00003.gguf | jq -r '.tensors[] | .name + " " + .file[-19:]')"
	fmt-convert -q --dtype Q8_0 "$PM/a.gguf" whole.gguf
	assert_equal "$(fmt-inspect --json a-Q8_0-00001-of-00003.gguf | jq -r '[.tensors[] | .name + " " + .dtype] | sort[]')" \
		"$(fmt-inspect --json whole.gguf | jq -r '[.tensors[] | .name + " " + .dtype] | sort[]')"
}

@test "--keep-split refusals: not a split set, a set of one, --shard, no preset, other output: exit 2, nothing written" {
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split "$PM/a.gguf" out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: $PM/a.gguf: --keep-split: the input is not a GGUF split set (NAME-00001-of-0000N.gguf, N of 2 or more)"
	nothing_written out-00001-of-00001.gguf
	fmt-shard split -q "$PM/a.gguf" --max-tensors 100 -o one
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split one-00001-of-00001.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: one-00001-of-00001.gguf: --keep-split: the input is not a GGUF split set (NAME-00001-of-0000N.gguf, N of 2 or more)"
	nothing_written out-00001-of-00001.gguf
	fmt-shard split -q "$PM/a.gguf" --max-tensors 40 -o two
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split --shard 1MB two-00001-of-00002.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: two-00001-of-00002.gguf: --shard cuts the output by size, but --keep-split keeps the input's shards: give one or the other"
	nothing_written out-00001-of-00002.gguf
	run --separate-stderr fmt-convert --keep-split two-00001-of-00002.gguf out.gguf
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: two-00001-of-00002.gguf: --keep-split goes with --dtype naming a llama-quantize type (Q4_K_M, Q8_0, ...), which is not given"
	nothing_written out-00001-of-00002.gguf
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split two-00001-of-00002.gguf out.safetensors
	assert_failure 2
	assert_equal "$stderr" "$(usage_error fmt-convert '--keep-split needs .gguf output')"
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split --to gguf two-00001-of-00002.gguf -
	assert_failure 2
	assert_equal "$stderr" "fmt-convert: error: two-00001-of-00002.gguf: a shard set cannot go to standard output"
	[ -z "$output" ] || fail "wrote to stdout"
	assert_equal "$(ls ./*.gguf)" "$(printf './%s\n' one-00001-of-00001.gguf two-00001-of-00002.gguf two-00002-of-00002.gguf)"
	# a middle shard left without tensors by --prune-layers (shard 2: blk.1 and blk.2's first
	# tensor; llama-quantize crashes on it): exit 5
	fmt-shard split -q "$PM/a.gguf" --max-tensors 10 -o ten
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split --prune-layers 1,2 ten-00001-of-00008.gguf out.gguf
	assert_failure 5
	assert_equal "$stderr" "fmt-convert: error: ten-00001-of-00008.gguf: --keep-split: shard 2 of the input would hold no tensor (llama-quantize cannot write such a set either)"
	nothing_written out-00001-of-00008.gguf
}

@test "--keep-split input sets: a missing shard, shards renamed out of their order, a shard of another set: exit 9, nothing written; any member names its set" {
	fmt-shard split -q "$PM/a.gguf" --max-tensors 20 -o m
	fmt-convert -q --dtype Q8_0 --keep-split m-00001-of-00004.gguf first.gguf
	# named by its third shard: the same set (llama-quantize refuses: "model must be loaded
	# with the first split")
	mkdir third
	fmt-convert -q --dtype Q8_0 --keep-split m-00003-of-00004.gguf third/first.gguf
	local i
	for i in 1 2 3 4; do cmp "first-0000$i-of-00004.gguf" "third/first-0000$i-of-00004.gguf"; done
	assert_equal "$(ls third)" "$(printf 'first-0000%d-of-00004.gguf\n' 1 2 3 4)"
	# shard 3 missing (llama-quantize: "failed to load GGUF split from m-00003-of-00004.gguf")
	mv m-00003-of-00004.gguf three
	local no   # not i: bats' run sets i
	for no in 1 4; do
		run --separate-stderr fmt-convert --dtype Q8_0 --keep-split "m-0000$no-of-00004.gguf" out.gguf
		assert_failure 9
		assert_equal "$stderr" "fmt-convert: error: m-0000$no-of-00004.gguf: 1 of the set's 4 shards is missing: m-00003-of-00004.gguf"
		nothing_written out-00001-of-00004.gguf
	done
	# shards 2 and 3 swapped by name (llama-quantize: "invalid split file idx: 2 (file:
	# m-00002-of-00004.gguf), expected 1")
	mv m-00002-of-00004.gguf m-00003-of-00004.gguf
	mv three m-00002-of-00004.gguf
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split m-00001-of-00004.gguf out.gguf
	assert_failure 9
	assert_equal "$stderr" "fmt-convert: error: m-00002-of-00004.gguf: shard 2 of 4 says split.no = 2, split.count = 4, split.tensors.count = 75 (expected 1, 4, 75)"
	nothing_written out-00001-of-00004.gguf
	# the last shard of another split of the model (19 tensors a shard): 78 tensors, not 75
	mv m-00002-of-00004.gguf three
	mv m-00003-of-00004.gguf m-00002-of-00004.gguf
	mv three m-00003-of-00004.gguf
	fmt-shard split -q "$PM/a.gguf" --max-tensors 19 -o other
	cp other-00004-of-00004.gguf m-00004-of-00004.gguf
	run --separate-stderr fmt-convert --dtype Q8_0 --keep-split m-00001-of-00004.gguf out.gguf
	assert_failure 9
	assert_equal "$stderr" "fmt-convert: error: m-00001-of-00004.gguf: the set holds 78 tensors, split.tensors.count says 75"
	nothing_written out-00001-of-00004.gguf
	assert_equal "$(ls out* 2>/dev/null)" ""
}

@test "--keep-split --dry-run: each shard's file, tensors, tensor data and file bytes (those written), in text and --json; nothing written" {
	fmt-shard split -q "$PM/r.gguf" --max-tensors 9 -o m
	run --separate-stderr fmt-convert --dry-run --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf out.gguf
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(ls ./*.gguf)" "$(printf './m-0000%d-of-00009.gguf\n' 1 2 3 4 5 6 7 8 9)"
	local text=$output
	fmt-convert -q --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf out.gguf
	# the text: after the tensors and their total, one line a file, its bytes those written
	local want f n
	want=$(for f in out-0000?-of-00008.gguf; do
		n=$(fmt-inspect --json "$f" | jq --arg f "$f" '[.tensors[] | select(.file | endswith($f))] | length')
		printf 'shard %s: %d tensor%s, %d bytes of tensor data, %d bytes\n' "$f" "$n" "$([ "$n" = 1 ] || echo s)" \
			"$(fmt-inspect --json "$f" | jq --arg f "$f" '[.tensors[] | select(.file | endswith($f)) | .bytes] | add // 0')" \
			"$(stat -c %s "$f")"
	done)
	assert_equal "$(tail -n 8 <<<"$text")" "$want"
	assert_equal "$(head -n 3 <<<"$want")" "shard out-00001-of-00008.gguf: 0 tensors, 0 bytes of tensor data, 8352 bytes
shard out-00002-of-00008.gguf: 9 tensors, 437248 bytes of tensor data, 437888 bytes
shard out-00003-of-00008.gguf: 9 tensors, 437248 bytes of tensor data, 437888 bytes"
	assert_equal "$(sed -n '/^tensor data:/p' <<<"$text")" "tensor data: 2810016 bytes (2.68 MiB)"
	# --json: "shards", one object a file
	run --separate-stderr fmt-convert --dry-run --json --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf dry.gguf
	assert_success
	assert_equal "$(jq -c '[.dry_run, .data_bytes, (.shards | length), .shards[0], .shards[7]]' <<<"$output")" \
		'[true,2810016,8,{"file":"dry-00001-of-00008.gguf","tensors":0,"bytes":0,"file_bytes":8352},{"file":"dry-00008-of-00008.gguf","tensors":3,"bytes":186528,"file_bytes":186848}]'
	assert_equal "$(jq -r '.shards[] | "\(.file[3:]) \(.file_bytes)"' <<<"$output")" \
		"$(for f in out-0000?-of-00008.gguf; do echo "${f#out}" "$(stat -c %s "$f")"; done)"
	nothing_written dry-00001-of-00008.gguf
	# without --keep-split: no "shards"
	run --separate-stderr fmt-convert --dry-run --json --dtype Q8_0 "$PM/a.gguf" whole.gguf
	assert_equal "$(jq -c 'has("shards")' <<<"$output")" false
}

@test "--keep-split run: its --json and -v reports list the files written as --dry-run lists them, file_bytes their sizes (old: no file listed)" {
	fmt-shard split -q "$PM/r.gguf" --max-tensors 9 -o m
	run --separate-stderr fmt-convert --dry-run --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf out.gguf
	assert_success
	local text=$output
	run --separate-stderr fmt-convert --dry-run --json --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf out.gguf
	assert_success
	local dry=$output
	run --separate-stderr fmt-convert --json --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf out.gguf
	assert_success
	assert_equal "$stderr" ""
	assert_equal "$(jq -c '[.dry_run, (.shards | length), .shards[0], .shards[7], .index]' <<<"$output")" \
		'[false,8,{"file":"out-00001-of-00008.gguf","tensors":0,"bytes":0,"file_bytes":8352},{"file":"out-00008-of-00008.gguf","tensors":3,"bytes":186528,"file_bytes":186848},null]'
	assert_equal "$(jq -c .shards <<<"$output")" "$(jq -c .shards <<<"$dry")"
	# each file listed is a file written: its tensors, their data and its size
	local f
	assert_equal "$(jq -r '.shards[] | "\(.file) \(.tensors) \(.bytes) \(.file_bytes)"' <<<"$output")" \
		"$(for f in out-0000?-of-00008.gguf; do
			echo "$f $(fmt-inspect --json "$f" | jq -r --arg f "$f" \
				'[.tensors[] | select(.file | endswith($f))] | "\(length) \(map(.bytes) | add // 0)"') $(stat -c %s "$f")"
		done)"
	# -v: after the plan on stderr, the lines --dry-run prints
	run --separate-stderr fmt-convert -v -f --dtype Q8_0 --keep-split --prune-layers 0,7 m-00001-of-00009.gguf out.gguf
	assert_success
	assert_equal "$output" ""
	assert_equal "$(grep -c '^shard ' <<<"$stderr")" 8
	assert_equal "$(sed -n '/^tensor data:/,$p' <<<"$stderr")" "$(sed -n '/^tensor data:/,$p' <<<"$text")"
}

@test "--keep-split names: OUT without a trailing .gguf (any case), else OUT itself; not llama-quantize's cut of 5 bytes when .gguf is elsewhere in OUT" {
	fmt-shard split -q "$PM/a.gguf" --max-tensors 40 -o m
	mkdir out.gguf.d
	# OUT and the prefix of its files; llama-quantize (find(".gguf"), then the last 5 bytes cut)
	# writes the same for the first three, but out.ggu-0000I-of-00002.gguf in the current
	# directory for out.gguf.d/m, x.ggu-* for x.gguf.tmp, OUT.GGUF-* for OUT.GGUF and
	# -0000I-of-00002.gguf for .gguf
	local name prefix n=0
	while read -r name prefix; do
		fmt-convert -q --dtype Q8_0 --keep-split --to gguf m-00001-of-00002.gguf "$name"
		assert_equal "$name: $(find . -name '*-of-00002.gguf' ! -path './m-*' | sort | tr '\n' ' ')" \
			"$name: ./$prefix-00001-of-00002.gguf ./$prefix-00002-of-00002.gguf "
		rm "$prefix"-0000[12]-of-00002.gguf
		n=$((n + 1))
	done <<'EOF'
out.gguf.d/m.gguf out.gguf.d/m
m.gguf-x.gguf m.gguf-x
noext noext
out.gguf.d/m out.gguf.d/m
x.gguf.tmp x.gguf.tmp
OUT.GGUF OUT
.gguf .gguf
EOF
	assert_equal "$n" 7
	assert_equal "$(find . -name '*.gguf' | sort)" "$(printf './m-0000%d-of-00002.gguf\n' 1 2)"
}
