// Issue 23, the presets: fmt-convert --dtype Q4_K_M (and the other llama-quantize presets) on
// the tied-embeddings model "b" of tests/data/llama-quantize/models, read by @huggingface/gguf:
// every tensor has the ggml type llama-quantize gave it, the bytes at the data offset the
// library finds hash to what llama-quantize wrote (tests/data/llama-quantize/b-CASE.txt), and
// general.file_type is the preset's llama_ftype.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { gguf } from "@huggingface/gguf";
import { REPO, convert, scratch } from "./lib.mjs";

const LQ = join(REPO, "tests/data/llama-quantize");
// ggml type ids and [bytes, elements] per block of the types the presets write
const TYPES = { F32: [0, 4, 1], Q4_0: [2, 18, 32], Q4_1: [3, 20, 32], Q5_0: [6, 22, 32], Q5_1: [7, 24, 32],
	Q8_0: [8, 34, 32], Q2_K: [10, 84, 256], Q3_K: [11, 110, 256], Q4_K: [12, 144, 256], Q5_K: [13, 176, 256],
	Q6_K: [14, 210, 256], IQ4_NL: [20, 18, 32], IQ4_XS: [23, 136, 256] };

function modelB(dir) {
	const line = readFileSync(join(LQ, "models"), "utf8").split("\n").find((l) => l.startsWith("b "));
	const r = spawnSync(join(REPO, "scripts/gen/llama-tiny"), [dir, ...line.split(" ").slice(1)], { encoding: "utf8" });
	assert.equal(r.status, 0, `llama-tiny: ${r.stderr}`);
	const f32 = join(dir, "b.gguf");
	convert(join(dir, "weights.safetensors"), f32, "--arch", "llama", "--dtype", "f32", "--metadata-from",
		join(dir, "vocab.gguf"), "--keys", "tokenizer.*", "--set-from", join(dir, "hparams.json"));
	return f32;
}

const cases = readFileSync(join(LQ, "cases"), "utf8").split("\n").filter((l) => /^b \S+ \S+$/.test(l))
	.map((l) => l.split(" ").slice(1));

test("@huggingface/gguf reads each preset's output: llama-quantize's types, bytes and file type", async (t) => {
	assert.equal(cases.length, 8);
	const dir = scratch(t);
	const f32 = modelB(dir);
	for (const [name, preset] of cases) {
		const out = join(dir, `b-${name}.gguf`);
		convert(f32, out, "--dtype", preset);
		const want = readFileSync(join(LQ, `b-${name}.txt`), "utf8").trim().split("\n").map((l) => l.split(" "));
		const raw = readFileSync(out);
		const hf = await gguf(out, { allowLocalFile: true });
		const [, ftype] = want.pop();
		assert.equal(hf.metadata["general.file_type"], Number(ftype), `${name}: file type`);
		assert.equal(hf.tensorInfos.length, want.length, `${name}: tensors`);
		for (const [tensor, type, sha] of want) {
			const ti = hf.tensorInfos.find((x) => x.name === tensor);
			const [id, size, block] = TYPES[type];
			assert.equal(ti.dtype, id, `${name} ${tensor}: type`);
			const n = ti.shape.reduce((a, b) => a * Number(b), 1);
			const start = Number(hf.tensorDataOffset + ti.offset);
			const got = createHash("sha256").update(raw.subarray(start, start + (n / block) * size)).digest("hex");
			assert.equal(got, sha, `${name} ${tensor}: bytes`);
		}
	}
});
