// GGUF files of the types fmt-convert quantizes to since issue 23 (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS), read by @huggingface/gguf: the tensor infos name the ggml
// type and shape, the data offset found through the library holds exactly ggml's blocks
// (tests/data/golden/kquant_input.<type>, made by ggml itself: scripts/gen/ggml-quant-golden),
// the 1-D tensor stays F32, and general.file_type is the llama_ftype of the type.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gguf } from "@huggingface/gguf";
import { REPO, convert, scratch, writeSafetensors } from "./lib.mjs";

const ROWS = 21; // the rows of kquant_input.f32 before the one whose scales overflow
const ROW = 256;
// ggml type id, elements and bytes per block, and the llama_ftype fmt-convert writes
const TYPES = {
	q4_1: [3, 32, 20, 3], q5_0: [6, 32, 22, 8], q5_1: [7, 32, 24, 9], q2_k: [10, 256, 84, 10],
	q3_k: [11, 256, 110, 12], q4_k: [12, 256, 144, 15], q5_k: [13, 256, 176, 17], q6_k: [14, 256, 210, 18],
	iq4_nl: [20, 32, 18, 25], iq4_xs: [23, 256, 136, 30],
};

function model(dir) {
	const golden = readFileSync(join(REPO, "tests/data/golden/kquant_input.f32"));
	const src = join(dir, "kq.safetensors");
	writeSafetensors(src, [
		{ name: "blk.0.ffn_down.weight", dtype: "F32", shape: [ROWS, ROW], bytes: golden.subarray(0, ROWS * ROW * 4) },
		{ name: "blk.0.attn_norm.weight", dtype: "F32", shape: [ROW], bytes: golden.subarray(0, ROW * 4) },
	]);
	return { src, golden: golden.subarray(0, ROW * 4) };
}

for (const [dtype, [id, block, size, ftype]] of Object.entries(TYPES)) {
	test(`${dtype}: @huggingface/gguf reads fmt-convert's output; the bytes are ggml's`, async (t) => {
		const dir = scratch(t);
		const { src, golden } = model(dir);
		const out = join(dir, `kq-${dtype}.gguf`);
		convert(src, out, "--dtype", dtype);
		const raw = readFileSync(out);
		const hf = await gguf(out, { allowLocalFile: true });
		assert.equal(hf.metadata["general.file_type"], ftype);
		const w = hf.tensorInfos.find((x) => x.name === "blk.0.ffn_down.weight");
		assert.equal(w.dtype, id);
		assert.deepEqual(w.shape.map(Number), [ROW, ROWS]); // ggml order: innermost first
		const nbytes = (ROWS * ROW / block) * size;
		const start = Number(hf.tensorDataOffset + w.offset);
		const want = readFileSync(join(REPO, `tests/data/golden/kquant_input.${dtype}`)).subarray(0, nbytes);
		assert.ok(raw.subarray(start, start + nbytes).equals(want), `${dtype}: bytes differ from ggml's`);
		const norm = hf.tensorInfos.find((x) => x.name === "blk.0.attn_norm.weight");
		assert.equal(norm.dtype, 0);
		const ns = Number(hf.tensorDataOffset + norm.offset);
		assert.ok(raw.subarray(ns, ns + ROW * 4).equals(golden), "the 1-D tensor stays F32, unchanged");
	});
}
