// The test's own converters and quantizers checked against the spec's vectors first, so that
// the interop tests compare the tools with something known to follow specs/gguf.md; then the
// spec's worked-example blocks, hand-assembled into a GGUF file here (a file "from elsewhere"),
// read back by fmt-inspect, and the same inputs quantized by fmt-convert.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gguf } from "@huggingface/gguf";
import {
	bitsF32, f32ToF16Bits, f16BitsToF32, f32ToBf16Bits, quantQ8_0, quantQ4_0, dequantQ8_0,
	dequantQ4_0, hex, inspectJson, convert, scratch, writeSafetensors, encode, alignUp,
} from "./lib.mjs";

const F16_VECTORS = [[0x3f800000, 0x3c00], [0x477fe000, 0x7bff], [0x477fefff, 0x7bff],
	[0x477ff000, 0x7c00], [0x7f7fffff, 0x7c00], [0xff800000, 0xfc00], [0x7fc00000, 0x7e00],
	[0xffc00000, 0xfe00], [0x7fa00001, 0x7e00], [0x33000000, 0x0000], [0x33000001, 0x0001],
	[0x33800000, 0x0001], [0x38800000, 0x0400], [0x387fc000, 0x03ff], [0x3f801000, 0x3c00],
	[0x3f803000, 0x3c02], [0x3dcccccd, 0x2e66], [0x80000000, 0x8000]];

const BF16_VECTORS = [[0x3f808000, 0x3f80], [0x3f818000, 0x3f82], [0x3f808001, 0x3f81],
	[0x7f7fffff, 0x7f80], [0x7f7f7fff, 0x7f7f], [0x7f800001, 0x7fc0], [0x7fa00001, 0x7fe0],
	[0x00000001, 0x0000], [0x80008000, 0x8000]];

// specs/gguf.md §11 worked examples A and B, §12 worked example.
const Q8_A_IN = [-127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5, 3.49, -3.51, 0, -0, 100, -100.25,
	64.5, -64.5, 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, -8].map(Math.fround);
const Q8_A_OUT = "003c8103fd01ff02fe7f03fc0000649c41bf0102030405060708fffefdfcfbfaf9f8";
const Q8_B_IN = Array.from({ length: 32 }, (_, j) => 0.5 * j - 8);
const Q8_B_OUT = "082c81899199a1a9b1b9c0c8d0d8e0e8f0f8000810182028303840474f575f676f77";
const Q4_IN = [4, -4, 0.25, -0.25, 0.5, -0.5, 0.75, -0.75, 1, -1, 1.25, -1.25, 2, -2, 3.5, -3.5,
	0, 0.125, -0.125, 3.75, -3.75, 2.5, -2.5, 1.5, -1.5, 3, -3, 0.375, -0.375, 2.25, -2.25, -4];
const Q4_OUT = "00b8808f8819f739d75ab62ae67b944cd1ff";
const Q4_DEQUANT = [4, -3.5, -0, -0.5, 0.5, -0.5, 0.5, -1, 1, -1, 1, -1.5, 2, -2, 3.5, -3.5, -0, -0,
	-0, 3.5, -3.5, 2.5, -2.5, 1.5, -1.5, 3, -3, 0.5, -0.5, 2, -2.5, -3.5];

test("own fp16/bf16 converters match the spec vectors", () => {
	for (const [inp, want] of F16_VECTORS)
		assert.equal(f32ToF16Bits(bitsF32(inp)), want, `fp16(0x${inp.toString(16)})`);
	for (const [inp, want] of BF16_VECTORS)
		assert.equal(f32ToBf16Bits(bitsF32(inp)), want, `bf16(0x${inp.toString(16)})`);
	for (let h = 0; h < 0x10000; h++) {
		const x = f16BitsToF32(h);
		if (!Number.isNaN(x)) assert.equal(f32ToF16Bits(x), h, `fp16 round trip 0x${h.toString(16)}`);
	}
});

test("own quantizers and dequantizers match the spec's worked examples", () => {
	assert.equal(hex(quantQ8_0(Q8_A_IN)), Q8_A_OUT);
	assert.equal(hex(quantQ8_0(Q8_B_IN)), Q8_B_OUT);
	assert.equal(hex(quantQ4_0(Q4_IN)), Q4_OUT);
	assert.deepEqual([...dequantQ4_0(Buffer.from(Q4_OUT, "hex"))], Q4_DEQUANT);
	const b = dequantQ8_0(Buffer.from(Q8_B_OUT, "hex"));
	assert.equal(b[0], -127 * 0.06298828125);
	assert.ok(Math.abs(b[0] - -7.99951172) < 1e-8 && Math.abs(b[1] - -7.49560547) < 1e-8);
	assert.equal(hex(quantQ8_0(new Array(32).fill(0))), "00".repeat(34));
	// specs/gguf.md §12 says "00 00" here, but d = max / -8 with max = +0 is -0 in IEEE
	// arithmetic (as in ggml), and fp16 keeps the sign: 00 80 (the unit tests agree).
	assert.equal(hex(quantQ4_0(new Array(32).fill(0))), "0080" + "88".repeat(16));
});

/* A GGUF v3 file assembled byte by byte from specs/gguf.md §2–§7: one KV, tensors [32] each. */
function handmadeGguf(tensors) {
	const parts = [];
	const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
	const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
	const str = (s) => { const b = Buffer.from(s, "utf8"); u64(b.length); parts.push(b); };
	parts.push(Buffer.from("GGUF"));
	u32(3);
	u64(tensors.length);
	u64(1);
	str("general.architecture");
	u32(8);
	str("handmade");
	let offset = 0;
	for (const t of tensors) {
		str(t.name);
		u32(1);
		u64(32);
		u32(t.type);
		u64(offset);
		offset += alignUp(t.bytes.length, 32);
	}
	let head = Buffer.concat(parts);
	head = Buffer.concat([head, Buffer.alloc(alignUp(head.length, 32) - head.length)]);
	const data = tensors.map((t) => Buffer.concat([t.bytes, Buffer.alloc(alignUp(t.bytes.length, 32) - t.bytes.length)]));
	return Buffer.concat([head, ...data]);
}

test("a hand-assembled GGUF with the spec's Q8_0/Q4_0 blocks is read by fmt-inspect and @huggingface/gguf", async (t) => {
	const dir = scratch(t);
	const file = join(dir, "handmade.gguf");
	const tensors = [
		{ name: "q8.a", type: 8, bytes: Buffer.from(Q8_A_OUT, "hex"), want: dequantQ8_0(Buffer.from(Q8_A_OUT, "hex")) },
		{ name: "q8.b", type: 8, bytes: Buffer.from(Q8_B_OUT, "hex"), want: dequantQ8_0(Buffer.from(Q8_B_OUT, "hex")) },
		{ name: "q4", type: 2, bytes: Buffer.from(Q4_OUT, "hex"), want: Q4_DEQUANT },
	];
	writeFileSync(file, handmadeGguf(tensors));
	const hf = await gguf(file, { allowLocalFile: true });
	assert.equal(hf.metadata["general.architecture"], "handmade");
	assert.deepEqual(hf.tensorInfos.map((x) => [x.name, x.dtype, x.offset]), [["q8.a", 8, 0n], ["q8.b", 8, 64n], ["q4", 2, 128n]]);
	const info = inspectJson(file);
	assert.equal(info.format, "gguf");
	assert.equal(info.version, 3);
	assert.deepEqual(info.tensors.map((x) => [x.name, x.dtype, x.shape, x.offset, x.bytes]),
		[["q8.a", "Q8_0", [32], 0, 34], ["q8.b", "Q8_0", [32], 64, 34], ["q4", "Q4_0", [32], 128, 18]]);
	for (const tt of tensors) {
		const s = inspectJson(file, "--tensor", tt.name, "--stats").stats;
		assert.deepEqual(s.first, [...tt.want].slice(0, 8), `${tt.name} first values`);
		assert.equal(s.count, 32);
		assert.equal(s.min, Math.min(...tt.want));
		assert.equal(s.max, Math.max(...tt.want));
	}
});

test("fmt-convert quantizes the spec's worked-example inputs to the spec's bytes", async (t) => {
	const dir = scratch(t);
	const src = join(dir, "examples.safetensors");
	writeSafetensors(src, [
		{ name: "a", dtype: "F32", shape: [1, 32], bytes: encode("F32", Q8_A_IN) },
		{ name: "b", dtype: "F32", shape: [1, 32], bytes: encode("F32", Q8_B_IN) },
		{ name: "c", dtype: "F32", shape: [1, 32], bytes: encode("F32", Q4_IN) },
	]);
	for (const [dtype, want] of [["q8_0", { a: Q8_A_OUT, b: Q8_B_OUT }], ["q4_0", { c: Q4_OUT }]]) {
		const out = join(dir, `examples-${dtype}.gguf`);
		convert(src, out, "--dtype", dtype);
		const raw = readFileSync(out);
		const hf = await gguf(out, { allowLocalFile: true });
		for (const [name, bytes] of Object.entries(want)) {
			const ti = hf.tensorInfos.find((x) => x.name === name);
			const start = Number(hf.tensorDataOffset + ti.offset);
			assert.equal(hex(raw.subarray(start, start + bytes.length / 2)), bytes, `${dtype} tensor ${name}`);
		}
	}
});
