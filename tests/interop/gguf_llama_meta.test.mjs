// Issue 27: a llama-architecture GGUF made as a llama.cpp user makes one with fmt-convert
// (scripts/gen/llama-tiny's safetensors weights + --metadata-from its gguf-py vocabulary +
// typed hyperparameters), read by @huggingface/gguf: every tokenizer key with the type and
// value gguf-py wrote, the llama.* keys with llama.cpp's types, the tensors; and the same after
// fmt-convert --in-place.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { gguf, GGUFValueType as VT } from "@huggingface/gguf";
import { REPO, convert, scratch, tool, GGML_TYPE_ID } from "./lib.mjs";

function tinyModel(dir) {
	const r = spawnSync(join(REPO, "scripts/gen/llama-tiny"), [dir], { encoding: "utf8" });
	assert.equal(r.status, 0, `llama-tiny: ${r.stderr}`);
	const out = join(dir, "tiny.gguf");
	convert(join(dir, "weights.safetensors"), out, "--arch", "llama", "--dtype", "q8_0", "--metadata-from",
		join(dir, "vocab.gguf"), "--keys", "tokenizer.*", "--set-from", join(dir, "hparams.json"));
	return out;
}

const read = async (file) => gguf(file, { allowLocalFile: true, typedMetadata: true });

test("@huggingface/gguf reads the llama GGUF built with --metadata-from: tokenizer keys as gguf-py wrote them", async (t) => {
	const dir = scratch(t);
	const out = tinyModel(dir);
	const vocab = (await read(join(dir, "vocab.gguf"))).typedMetadata;
	const hf = await read(out);
	const m = hf.typedMetadata;
	const tokenizerKeys = Object.keys(vocab).filter((k) => k.startsWith("tokenizer."));
	assert.equal(tokenizerKeys.length, 9);
	for (const k of tokenizerKeys) {
		assert.equal(m[k].type, vocab[k].type, `${k}: type`);
		assert.equal(m[k].subType, vocab[k].subType, `${k}: item type`);
		assert.deepEqual(m[k].value, vocab[k].value, `${k}: value`);
	}
	assert.equal(m["tokenizer.ggml.token_type"].subType, VT.INT32);
	assert.equal(m["tokenizer.ggml.scores"].subType, VT.FLOAT32);
	assert.equal(m["tokenizer.ggml.tokens"].value.length, 341);
	const u32 = ["context_length", "embedding_length", "block_count", "feed_forward_length",
		"rope.dimension_count", "attention.head_count", "attention.head_count_kv"];
	for (const k of u32) assert.equal(m[`llama.${k}`].type, VT.UINT32, k);
	assert.equal(m["llama.attention.layer_norm_rms_epsilon"].type, VT.FLOAT32);
	assert.equal(m["llama.context_length"].value, 256);
	assert.equal(m["general.architecture"].value, "llama");
	assert.equal(Object.keys(m).filter((k) => !["version", "tensor_count", "kv_count"].includes(k)).length, 20);
	assert.equal(hf.tensorInfos.length, 21);
	for (const ti of hf.tensorInfos)
		assert.equal(ti.dtype, ti.n_dims === 1 ? GGML_TYPE_ID.F32 : GGML_TYPE_ID.Q8_0, ti.name);
});

test("@huggingface/gguf reads fmt-convert --in-place edits: the value, the data offset kept or moved", async (t) => {
	const dir = scratch(t);
	const out = tinyModel(dir);
	const before = await read(out);
	const small = join(dir, "small.gguf");
	copyFileSync(out, small);
	tool("fmt-convert", ["--in-place", "--set", "llama.context_length:u32=512", small]);
	const a = await read(small);
	assert.equal(a.typedMetadata["llama.context_length"].value, 512);
	assert.equal(a.tensorDataOffset, before.tensorDataOffset);
	const big = join(dir, "big.gguf");
	copyFileSync(out, big);
	tool("fmt-convert", ["--in-place", "--set", `general.description=${"x".repeat(100)}`, big]);
	const b = await read(big);
	assert.equal(b.typedMetadata["general.description"].value, "x".repeat(100));
	assert.equal(b.tensorDataOffset, before.tensorDataOffset + 128n);
	assert.deepEqual(b.tensorInfos.map((x) => x.offset), before.tensorInfos.map((x) => x.offset));
});
