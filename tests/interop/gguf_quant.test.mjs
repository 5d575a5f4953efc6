// Q8_0 and Q4_0 tensors written by fmt-convert, decoded by this file's own dequantizer (written
// from specs/gguf.md §9, §11, §12, with fp16 decoded by hand), located through @huggingface/gguf:
// the values agree with fmt-inspect --stats, stay within the quantization error bound of the
// original float32 input, and the bytes equal an independent JS quantizer of the spec's rules.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gguf } from "@huggingface/gguf";
import {
	convert, inspectJson, tool, scratch, prng, encode, writeSafetensors, readSafetensors,
	dequantQ8_0, dequantQ4_0, quantQ8_0, quantQ4_0, q8Scale, q4Scale, f16BitsToF32, f32ToF16Bits,
	meanStd, GGML_TYPE_ID,
} from "./lib.mjs";

/* Blocks of many kinds: scales from 1e-6 (fp16-subnormal d) to 1e4, zero blocks, one outlier,
 * negative extremes, exact ties (k/2 steps), repeated maxima of both signs. */
function quantInput() {
	const rand = prng(99);
	const blockKinds = [
		() => Array.from({ length: 32 }, () => (rand() * 2 - 1)),
		() => Array.from({ length: 32 }, () => (rand() * 2 - 1) * 1e4),
		() => Array.from({ length: 32 }, () => (rand() * 2 - 1) * 1e-6),
		() => new Array(32).fill(0),
		() => Array.from({ length: 32 }, (_, j) => (j === 7 ? -50 : (rand() - 0.5) * 0.01)),
		() => Array.from({ length: 32 }, (_, j) => 0.5 * j - 8),
		() => Array.from({ length: 32 }, (_, j) => (j % 2 ? 3 : -3)),
		() => Array.from({ length: 32 }, () => Math.round((rand() * 2 - 1) * 16) / 2),
		() => Array.from({ length: 32 }, () => -rand() * 7),
	];
	const make = (n) => {
		const v = [];
		for (let b = 0; v.length < n; b++) v.push(...blockKinds[(b * 5 + (b >> 3)) % blockKinds.length]());
		return v.slice(0, n).map(Math.fround);
	};
	return [
		{ name: "w.big", dtype: "F32", shape: [64, 128], values: make(64 * 128) },
		{ name: "w.cube", dtype: "F32", shape: [2, 3, 64], values: make(2 * 3 * 64) },
	].map((t) => ({ ...t, bytes: encode("F32", t.values) }));
}

const SCHEMES = {
	q8_0: { id: GGML_TYPE_ID.Q8_0, blockBytes: 34, dequant: dequantQ8_0, quant: quantQ8_0, scale: q8Scale,
		// |q·d − x| ≤ d/2 with the float32 d used for rounding; the stored d is its fp16
		// rounding, which moves q·d by |q|·|d16 − d| ≤ 127·|d16 − d|.
		bound: (d, d16) => Math.abs(d) / 2 + 127 * Math.abs(d16 - d) },
	q4_0: { id: GGML_TYPE_ID.Q4_0, blockBytes: 18, dequant: dequantQ4_0, quant: quantQ4_0, scale: q4Scale,
		// round-half-up of x/d except the clamp of +8 to code 15 (error |d|); fp16 term ≤ 8·|d16 − d|.
		bound: (d, d16) => Math.abs(d) + 8 * Math.abs(d16 - d) },
};

for (const [dtype, sch] of Object.entries(SCHEMES)) {
	test(`${dtype}: own dequantizer vs fmt-inspect --stats, error bound, reference bytes`, async (t) => {
		const dir = scratch(t);
		const src = join(dir, "in.safetensors");
		const model = quantInput();
		writeSafetensors(src, model);
		const out = join(dir, `out-${dtype}.gguf`);
		convert(src, out, "--dtype", dtype);
		const raw = readFileSync(out);
		const hf = await gguf(out, { allowLocalFile: true });
		for (const m of model) {
			const ti = hf.tensorInfos.find((x) => x.name === m.name);
			assert.equal(ti.dtype, sch.id, `${m.name}: ggml type`);
			const nbytes = (m.values.length / 32) * sch.blockBytes;
			const start = Number(hf.tensorDataOffset + ti.offset);
			const data = raw.subarray(start, start + nbytes);
			const y = sch.dequant(data);

			// (a) fmt-inspect decodes the same values
			const s = inspectJson(out, "--tensor", m.name, "--stats").stats;
			assert.equal(s.dtype, dtype.toUpperCase());
			assert.equal(s.count, y.length);
			assert.equal(s.nan + s.inf, 0);
			assert.deepEqual(s.first, [...y.slice(0, 8)], `${m.name}: first values`);
			assert.equal(s.min, Math.min(...y), `${m.name}: min`);
			assert.equal(s.max, Math.max(...y), `${m.name}: max`);
			const { mean, std } = meanStd(y);
			assert.ok(Math.abs(s.mean - mean) <= 1e-12 * Math.max(1, Math.abs(mean)) + 1e-9 * std, `${m.name}: mean ${s.mean} vs ${mean}`);
			assert.ok(Math.abs(s.std - std) <= 1e-9 * Math.max(1, std), `${m.name}: std ${s.std} vs ${std}`);

			// (b) blockwise error bound against the original float32 input
			for (let b = 0; b < m.values.length / 32; b++) {
				const x = m.values.slice(b * 32, b * 32 + 32);
				const d = sch.scale(x);
				const d16 = f16BitsToF32(data.readUInt16LE(b * sch.blockBytes));
				assert.equal(d16, f16BitsToF32(f32ToF16Bits(d)), `${m.name} block ${b}: stored scale`);
				const bound = sch.bound(d, d16) * (1 + 2 ** -20);
				for (let j = 0; j < 32; j++) {
					const err = Math.abs(y[b * 32 + j] - x[j]);
					assert.ok(err <= bound, `${m.name} block ${b} elem ${j}: |${y[b * 32 + j]} - ${x[j]}| = ${err} > ${bound}`);
				}
			}

			// (c) bit-identical to the spec's quantizer re-implemented here
			assert.ok(data.equals(sch.quant(m.values)), `${m.name}: bytes differ from the spec quantizer`);
		}
		assert.equal(tool("fmt-verify", [out]).status, 0);

		// dequantized back to safetensors: exactly the values decoded here
		const back = join(dir, `back-${dtype}.safetensors`);
		convert(out, back, "--dtype", "f32");
		const st = readSafetensors(back, assert.ok);
		for (const m of model) {
			const bt = st.tensors.find((x) => x.name === m.name);
			assert.equal(bt.dtype, "F32");
			assert.deepEqual(bt.shape, m.shape);
			const ti = hf.tensorInfos.find((x) => x.name === m.name);
			const start = Number(hf.tensorDataOffset + ti.offset);
			const y = sch.dequant(raw.subarray(start, start + (m.values.length / 32) * sch.blockBytes));
			assert.ok(Buffer.from(bt.bytes).equals(encode("F32", [...y])), `${m.name}: dequantized safetensors values`);
		}
	});
}

test("quantizing NaN or Inf is refused and leaves no output", (t) => {
	const dir = scratch(t);
	for (const bad of [NaN, Infinity, -Infinity]) {
		const src = join(dir, "bad.safetensors");
		const values = Array.from({ length: 64 }, (_, i) => (i === 40 ? bad : i / 7));
		writeSafetensors(src, [{ name: "w", dtype: "F32", shape: [2, 32], bytes: encode("F32", values) }]);
		for (const dtype of ["q8_0", "q4_0"]) {
			const out = join(dir, `bad-${dtype}.gguf`);
			const r = tool("fmt-convert", ["--quiet", "--dtype", dtype, src, out], { allowFail: true });
			assert.notEqual(r.status, 0, `${dtype} of ${bad}: exit status`);
			assert.match(r.stderr, /NaN|Inf/);
			assert.ok(!existsSync(out), `${dtype} of ${bad}: no output file`);
		}
		// f16 of the same tensor keeps the non-finite value (§10.1)
		const out = join(dir, "bad-f16.gguf");
		convert(src, out, "--dtype", "f16");
		const s = inspectJson(out, "--tensor", "w", "--stats").stats;
		assert.equal(Number.isNaN(bad) ? s.nan : s.inf, 1);
	}
});
