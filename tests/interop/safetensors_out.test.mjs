// safetensors written by fmt-convert, read by a plain JSON reader (lib.mjs readSafetensors:
// 8-byte length, space padding to 8, JSON.parse, contiguous data_offsets, exact file length,
// dtype strings) and compared with the input: byte-identical on the keep/f32 paths, equal to
// this file's own RNE converters for f16/bf16, and the whole file equal to the reference
// writer's bytes (specs/safetensors.md §6).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import {
	REPO, convert, tool, scratch, prng, encode, decode, writeSafetensors, readSafetensors,
	safetensorsBytes,
} from "./lib.mjs";

const check = (cond, msg) => assert.ok(cond, msg);

function inputModel() {
	const rand = prng(4321);
	const spec = [
		["embed.weight", "F32", [48, 64], 4], ["norm.weight", "F32", [64], 1], ["cube", "F32", [2, 3, 8], 100],
		["up.weight", "F16", [16, 32], 2], ["down.weight", "BF16", [32, 16], 0.01], ["ids", "I32", [3, 4], 0],
		["tiny", "F32", [40], 1e-6], ["huge", "F32", [8], 1e5],
	];
	return spec.map(([name, dtype, shape, scale]) => {
		const n = shape.reduce((a, b) => a * b, 1);
		const vals = dtype === "I32" ? Array.from({ length: n }, (_, i) => (i - 6) * 123457)
			: Array.from({ length: n }, () => Math.fround((rand() * 2 - 1) * scale));
		if (name === "huge") vals.splice(0, 3, 65519, 65520, -1e6); // f16 rounding/overflow edges
		const bytes = encode(dtype, vals);
		return { name, dtype, shape, bytes, values: decode(dtype, bytes) };
	});
}

const META = { format: "pt", "z.last": "\u00e9t\u00e9 \"quoted\"\n", "a.first": "1" };

function compareTensors(got, want) {
	assert.deepEqual(got.tensors.map((x) => x.name).sort(), want.map((x) => x.name).sort(), "tensor names");
	for (const w of want) {
		const g = got.tensors.find((x) => x.name === w.name);
		assert.equal(g.dtype, w.dtype, `${w.name}: dtype`);
		assert.deepEqual(g.shape, w.shape, `${w.name}: shape`);
		assert.ok(Buffer.from(g.bytes).equals(w.bytes), `${w.name}: bytes`);
	}
}

for (const [want, target] of [["keep", null], ["f32", "F32"], ["f16", "F16"], ["bf16", "BF16"]]) {
	test(`safetensors -> safetensors --dtype ${want}: plain reader, bytes, reference writer layout`, (t) => {
		const dir = scratch(t);
		const model = inputModel();
		const src = join(dir, "in.safetensors");
		writeSafetensors(src, model, META);
		const out = join(dir, `out-${want}.safetensors`);
		if (want === "f16") {
			// 65520 and -1e6 do not fit F16: refused by default (issue 9), saturated on request
			const r = tool("fmt-convert", ["--no-progress", "--dtype", "f16", src, out], { allowFail: true });
			assert.equal(r.status, 4);
			assert.match(r.stderr, /tensor 'huge': element 1 is 65520, beyond what F16 holds/);
			convert(src, out, "--dtype", want, "--overflow=saturate");
		} else {
			convert(src, out, "--dtype", want);
		}
		const st = readSafetensors(out, check);
		assert.deepEqual(st.metadata, META);
		const saturate = (v) => (target === "F16" && Number.isFinite(v) && Math.abs(v) > 65504 ? Math.sign(v) * 65504 : v);
		const expected = model.map((m) => {
			const dtype = target && !m.dtype.startsWith("I") ? target : m.dtype;
			return { ...m, dtype, bytes: dtype === m.dtype ? m.bytes : encode(dtype, m.values.map(saturate)) };
		});
		compareTensors(st, expected);
		assert.ok(st.raw.equals(safetensorsBytes(expected, META)), "file bytes differ from the reference writer's");
		if (want === "keep") assert.ok(st.raw.equals(readFileSync(src)), "keep: file identical to the input");
	});
}

test("safetensors -> GGUF (keep) -> safetensors: byte-identical tensors, string metadata kept", (t) => {
	const dir = scratch(t);
	const model = inputModel();
	const src = join(dir, "in.safetensors");
	writeSafetensors(src, model, META);
	const mid = join(dir, "mid.gguf");
	convert(src, mid, "--dtype", "keep", "--arch", "llama", "--set", "n:u32=5");
	const out = join(dir, "back.safetensors");
	const r = tool("fmt-convert", ["--no-progress", mid, out]);
	assert.match(r.stderr, /1 metadata entry dropped/, "the u32 key is reported as dropped");
	const st = readSafetensors(out, check);
	const meta = { ...META, "general.architecture": "llama" };
	assert.deepEqual(st.metadata, meta);
	compareTensors(st, model);
	assert.ok(st.raw.equals(safetensorsBytes(model, meta)), "file bytes differ from the reference writer's");
});

test("GGUF f16 -> safetensors keep/f32: F16 bytes carried, f32 widening exact", (t) => {
	const dir = scratch(t);
	const model = inputModel();
	const src = join(dir, "in.safetensors");
	writeSafetensors(src, model);
	const mid = join(dir, "mid.gguf");
	convert(src, mid, "--dtype", "f16");
	const asF16 = model.map((m) => {
		const dtype = m.dtype === "I32" ? "I32" : m.shape.length <= 1 ? "F32" : "F16";
		return { ...m, dtype, bytes: encode(dtype, m.values) };
	});
	const keep = join(dir, "keep.safetensors");
	convert(mid, keep);
	compareTensors(readSafetensors(keep, check), asF16);
	const f32 = join(dir, "f32.safetensors");
	convert(mid, f32, "--dtype", "f32");
	const widened = asF16.map((m) => m.dtype === "I32" ? m : { ...m, dtype: "F32", bytes: encode("F32", decode(m.dtype, m.bytes)) });
	compareTensors(readSafetensors(f32, check), widened);
});

test("sharded safetensors (sample-models) -> one file equals the single-file sample byte for byte", (t) => {
	const dir = scratch(t);
	const r = spawnSync(join(REPO, "scripts/gen/sample-models"), [dir], { encoding: "utf8" });
	assert.equal(r.status, 0, r.stderr);
	const out = join(dir, "joined.safetensors");
	convert(join(dir, "sharded/model.safetensors.index.json"), out);
	const st = readSafetensors(out, check);
	assert.ok(st.raw.equals(readFileSync(join(dir, "tiny.safetensors"))));
});
