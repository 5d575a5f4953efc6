// GGUF written by fmt-convert, parsed by @huggingface/gguf: every key (value and type), every
// tensor (name, ggml dims, type id, offset) against what we wrote and against fmt-inspect --json;
// the layout rules of specs/gguf.md §6–§7 and the non-quantized tensor bytes. Also the reverse:
// a GGUF whose header the library rewrote (its own serializer) is read by fmt-inspect/fmt-verify.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gguf, buildGgufHeader, GGUFValueType as VT, GGMLFileQuantizationType as FT } from "@huggingface/gguf";
import {
	convert, inspectJson, tool, scratch, prng, encode, decode, writeSafetensors, GGML_TYPE_ID,
	ggmlBytes, alignUp,
} from "./lib.mjs";

/* The input model: one tensor of every kind the issue names, deterministic values. */
export function inputModel() {
	const rand = prng(1234);
	const values = (n, scale = 1) => Array.from({ length: n }, () => Math.fround((rand() * 2 - 1) * scale));
	const spec = [
		["blk.0.attn_q.weight", "F32", [64, 128], 0.5],
		["blk.0.attn_norm.weight", "F32", [128], 2],
		["blk.0.ffn_up.weight", "F16", [64, 64], 1],
		["blk.0.ffn_down.weight", "BF16", [32, 64], 3],
		["blk.0.cube", "F32", [2, 3, 32], 10],
		["blk.0.odd_rows", "F32", [3, 40], 1],
		["blk.0.pos_ids", "I32", [2, 5], 0],
	];
	return spec.map(([name, dtype, shape, scale]) => {
		const n = shape.reduce((a, b) => a * b, 1);
		const vals = dtype === "I32" ? Array.from({ length: n }, (_, i) => i * 1000 - 4999) : values(n, scale);
		const bytes = encode(dtype, vals);
		return { name, dtype, shape, bytes, values: decode(dtype, bytes) };
	});
}

const ST_METADATA = { format: "pt", note: "h\u00e9llo" };

/* What fmt-convert must make of a tensor for --dtype want (issue 3 / plan rules). */
function expectedDtype(t, want) {
	if (t.dtype.startsWith("I")) return t.dtype;
	if (want === "keep") return t.dtype;
	if (want === "f32") return "F32";
	if (t.shape.length <= 1) return "F32";
	if (want.startsWith("q") && t.shape.at(-1) % 32 !== 0) return "F16";
	return want.toUpperCase();
}

/* Every metadata type on the command line and from a JSON file: [arg, key, type, value, subType]. */
const SETS = [
	["u8", 255, VT.UINT8], ["i8", -128, VT.INT8], ["u16", 65535, VT.UINT16], ["i16", -32768, VT.INT16],
	["u32", 4294967295, VT.UINT32], ["i32", -2147483648, VT.INT32],
	["u64", 18446744073709551615n, VT.UINT64], ["i64", -9223372036854775808n, VT.INT64],
	["f32", 0.1, VT.FLOAT32, Math.fround(0.1)], ["f64", 0.1, VT.FLOAT64],
	["bool", true, VT.BOOL], ["str", "h\u00e9llo \u2713 = world", VT.STRING],
];
const SET_FROM = {
	"tokenizer.ggml.tokens": [["<s>", "</s>", "h\u00e9llo", ""], VT.ARRAY, VT.STRING],
	"test.json.u32s": [[1, 2, 4294967295], VT.ARRAY, VT.UINT32],
	"test.json.f32s": [[0.5, -1.25, 0.1], VT.ARRAY, VT.FLOAT32, [0.5, -1.25, Math.fround(0.1)]],
	"test.json.bools": [[true, false, true], VT.ARRAY, VT.BOOL],
	"test.json.count": [7, VT.UINT32],
	"test.json.neg": [-5, VT.INT32],
	"test.json.typed": [{ type: "u64", value: 7 }, VT.UINT64, 7n],
	"test.json.false": [false, VT.BOOL],
};

function setArgs() {
	const args = ["--arch", "llama"];
	for (const [type, value] of SETS) args.push("--set", `test.set.${type}:${type}=${value}`);
	args.push("--set", "test.set.untyped=a=b", "--set", "test.set.bool0:bool=false");
	return args;
}

/* general.file_type (llama_ftype) fmt-convert writes for --dtype want of inputModel(), and
 * whether a tensor is quantized (general.quantization_version = 2). keep: F32 holds most of
 * the 2-D bytes. */
const FILE_TYPE = { keep: [0, false], f32: [0, false], f16: [1, false], bf16: [32, false],
	q8_0: [7, true], q4_0: [2, true] };

/* key -> {type, value, subType}, in the order the keys must appear in the file. */
function expectedMetadata(want) {
	const m = new Map();
	m.set("general.architecture", { type: VT.STRING, value: "llama" });
	for (const [k, v] of Object.entries(ST_METADATA)) m.set(k, { type: VT.STRING, value: v });
	const [ft, quantized] = FILE_TYPE[want];
	m.set("general.file_type", { type: VT.UINT32, value: ft });
	if (quantized) m.set("general.quantization_version", { type: VT.UINT32, value: 2 });
	for (const [k, [value, type, sub, stored]] of Object.entries(SET_FROM)) {
		if (type === VT.ARRAY) m.set(k, { type, subType: sub, value: stored ?? value });
		else m.set(k, { type, value: sub ?? value });
	}
	for (const [type, value, vt, stored] of SETS) m.set(`test.set.${type}`, { type: vt, value: stored ?? value });
	m.set("test.set.untyped", { type: VT.STRING, value: "a=b" });
	m.set("test.set.bool0", { type: VT.BOOL, value: false });
	return m;
}

const INSPECT_TYPE = { [VT.UINT8]: "u8", [VT.INT8]: "i8", [VT.UINT16]: "u16", [VT.INT16]: "i16",
	[VT.UINT32]: "u32", [VT.INT32]: "i32", [VT.UINT64]: "u64", [VT.INT64]: "i64", [VT.FLOAT32]: "f32",
	[VT.FLOAT64]: "f64", [VT.BOOL]: "bool", [VT.STRING]: "str" };

function makeInput(dir) {
	const src = join(dir, "in.safetensors");
	const model = inputModel();
	writeSafetensors(src, model, ST_METADATA);
	const setFrom = join(dir, "set.json");
	writeFileSync(setFrom, JSON.stringify(Object.fromEntries(Object.entries(SET_FROM).map(([k, [v]]) => [k, v]))));
	return { src, model, setFrom };
}

/* Layout per specs/gguf.md §6 rule 5 and §7: data start aligned, offsets exactly sequential,
 * every tensor (the last too) padded, nothing after. */
function checkLayout(hf, fileLength, align) {
	assert.equal(hf.tensorDataOffset % BigInt(align), 0n, "data start aligned");
	let expected = 0;
	for (const ti of hf.tensorInfos) {
		assert.equal(Number(ti.offset), expected, `${ti.name}: offset sequential`);
		const count = ti.shape.reduce((a, b) => a * Number(b), 1);
		expected += alignUp(ggmlBytes(ti.dtype, count), align);
	}
	assert.equal(fileLength, Number(hf.tensorDataOffset) + expected, "file ends after the last padded tensor");
}

for (const want of ["keep", "f32", "f16", "bf16", "q8_0", "q4_0"]) {
	test(`@huggingface/gguf reads fmt-convert --dtype ${want} output: metadata, tensors, layout`, async (t) => {
		const dir = scratch(t);
		const { src, model, setFrom } = makeInput(dir);
		const out = join(dir, `out-${want}.gguf`);
		convert(src, out, "--dtype", want, "--set-from", setFrom, ...setArgs());
		const raw = readFileSync(out);
		const hf = await gguf(out, { allowLocalFile: true, typedMetadata: true });

		// metadata: every key, value and type, in order, nothing else
		const expected = expectedMetadata(want);
		const { version, tensor_count, kv_count, ...typed } = hf.typedMetadata;
		assert.equal(version.value, 3);
		assert.equal(tensor_count.value, BigInt(model.length));
		assert.equal(kv_count.value, BigInt(expected.size));
		assert.deepEqual(Object.keys(typed), [...expected.keys()], "key order");
		for (const [key, e] of expected) {
			assert.equal(typed[key].type, e.type, `${key}: type`);
			assert.deepEqual(typed[key].value, e.value, `${key}: value`);
			if (e.subType !== undefined) assert.equal(typed[key].subType, e.subType, `${key}: array type`);
		}

		// fmt-inspect agrees on types (and values where JSON can carry them exactly)
		const info = inspectJson(out);
		for (const [key, e] of expected) {
			const name = e.type === VT.ARRAY ? `array[${INSPECT_TYPE[e.subType]}]` : INSPECT_TYPE[e.type];
			assert.equal(info.metadata_types[key], name, `inspect type of ${key}`);
			if (typeof e.value !== "bigint") assert.deepEqual(info.metadata[key], e.value, `inspect value of ${key}`);
		}

		// tensors: library vs what we wrote vs fmt-inspect
		assert.equal(hf.tensorInfos.length, model.length);
		for (const ti of hf.tensorInfos) {
			const src_t = model.find((m) => m.name === ti.name);
			assert.ok(src_t, `unexpected tensor ${ti.name}`);
			const dtype = expectedDtype(src_t, want);
			const ins = info.tensors.find((x) => x.name === ti.name);
			assert.equal(ti.dtype, GGML_TYPE_ID[dtype], `${ti.name}: ggml type`);
			assert.equal(ins.dtype, dtype, `${ti.name}: inspect dtype`);
			assert.deepEqual(ti.shape.map(Number), [...src_t.shape].reverse(), `${ti.name}: ggml dims`);
			assert.equal(ti.n_dims, src_t.shape.length);
			assert.deepEqual(ins.shape, src_t.shape, `${ti.name}: inspect shape`);
			assert.equal(BigInt(ins.offset), ti.offset, `${ti.name}: offset`);
			const count = src_t.values.length;
			assert.equal(ins.bytes, ggmlBytes(ti.dtype, count), `${ti.name}: bytes`);
			if (!dtype.startsWith("Q")) {
				const start = Number(hf.tensorDataOffset + ti.offset);
				const got = raw.subarray(start, start + ins.bytes);
				assert.ok(got.equals(encode(dtype, src_t.values)), `${ti.name}: data bytes as ${dtype}`);
			}
		}
		assert.deepEqual(hf.tensorInfos.map((x) => x.name), info.tensors.map((x) => x.name), "tensor order");
		checkLayout(hf, raw.length, 32);
		assert.equal(tool("fmt-verify", [out]).status, 0);

		// the file type: the library's own llama_ftype table names it as fmt-inspect does
		const ft = typed["general.file_type"].value;
		assert.equal(ft, FILE_TYPE[want][0]);
		const libName = FT[ft];
		assert.equal(info.format_info.file_type, libName === "F32" ? "ALL_F32" : `MOSTLY_${libName}`);
	});
}

test("general.alignment 64 is honoured: @huggingface/gguf finds data and offsets on 64", async (t) => {
	const dir = scratch(t);
	const { src, model } = makeInput(dir);
	const out = join(dir, "align64.gguf");
	convert(src, out, "--dtype", "f32", "--set", "general.alignment:u32=64");
	const raw = readFileSync(out);
	const hf = await gguf(out, { allowLocalFile: true, typedMetadata: true });
	assert.equal(hf.typedMetadata["general.alignment"].type, VT.UINT32);
	assert.equal(hf.typedMetadata["general.alignment"].value, 64);
	checkLayout(hf, raw.length, 64);
	for (const ti of hf.tensorInfos) {
		const m = model.find((x) => x.name === ti.name);
		const start = Number(hf.tensorDataOffset + ti.offset);
		const bytes = encode(m.dtype === "I32" ? "I32" : "F32", m.values);
		assert.ok(raw.subarray(start, start + bytes.length).equals(bytes), `${ti.name}: data`);
	}
});

test("a GGUF whose header @huggingface/gguf rewrote is read by fmt-inspect and fmt-verify", async (t) => {
	const dir = scratch(t);
	const { src, model } = makeInput(dir);
	const ours = join(dir, "ours.gguf");
	convert(src, ours, "--dtype", "f16");
	const hf = await gguf(ours, { allowLocalFile: true, typedMetadata: true });
	const added = {
		"general.name": { value: "rewritten by @huggingface/gguf", type: VT.STRING },
		"theirs.u64": { value: 12345678901234n, type: VT.UINT64 },
		"theirs.i16": { value: -300, type: VT.INT16 },
		"theirs.f64": { value: Math.PI, type: VT.FLOAT64 },
		"theirs.f32s": { value: [1.5, -2], type: VT.ARRAY, subType: VT.FLOAT32 },
		"theirs.strs": { value: ["x", "y\u00e9"], type: VT.ARRAY, subType: VT.STRING },
	};
	const md = { ...hf.typedMetadata, ...added };
	md.kv_count = { value: BigInt(Object.keys(md).length - 3), type: VT.UINT64 };
	const raw = readFileSync(ours);
	const header = await buildGgufHeader(new Blob([raw]), md, {
		littleEndian: true, tensorInfoByteRange: hf.tensorInfoByteRange, alignment: 32,
	});
	const theirs = join(dir, "theirs.gguf");
	writeFileSync(theirs, Buffer.concat([Buffer.from(await header.arrayBuffer()), raw.subarray(Number(hf.tensorDataOffset))]));

	assert.equal(tool("fmt-verify", [theirs]).status, 0);
	const info = inspectJson(theirs);
	assert.equal(info.metadata["general.name"], "rewritten by @huggingface/gguf");
	assert.equal(info.metadata["theirs.u64"], 12345678901234);
	assert.equal(info.metadata_types["theirs.u64"], "u64");
	assert.equal(info.metadata["theirs.i16"], -300);
	assert.equal(info.metadata["theirs.f64"], Math.PI);
	assert.deepEqual(info.metadata["theirs.f32s"], [1.5, -2]);
	assert.equal(info.metadata_types["theirs.f32s"], "array[f32]");
	assert.deepEqual(info.metadata["theirs.strs"], ["x", "y\u00e9"]);
	for (const m of model) {
		const s = inspectJson(theirs, "--tensor", m.name, "--stats").stats;
		const want = expectedDtype(m, "f16");
		const vals = decode(want, encode(want, m.values));
		assert.deepEqual(s.first, vals.slice(0, 8), `${m.name}: first values`);
		assert.equal(s.min, Math.min(...vals));
		assert.equal(s.max, Math.max(...vals));
	}
});

test("edge cases: 63-byte name, empty tensor, empty array, large JSON integer; 64-byte name refused", async (t) => {
	const dir = scratch(t);
	const src = join(dir, "edge.safetensors");
	const long = "blk." + "x".repeat(59);
	writeSafetensors(src, [
		{ name: long, dtype: "F32", shape: [2, 32], bytes: encode("F32", new Array(64).fill(0.25)) },
		{ name: "empty", dtype: "F32", shape: [0, 32], bytes: Buffer.alloc(0) },
		{ name: "after", dtype: "F16", shape: [1, 32], bytes: encode("F16", new Array(32).fill(-2)) },
	]);
	const setFrom = join(dir, "edge.json");
	writeFileSync(setFrom, JSON.stringify({ "edge.none": [], "edge.big": 5000000000, "edge.min": -2147483649 }));
	const out = join(dir, "edge.gguf");
	convert(src, out, "--dtype", "q8_0", "--set-from", setFrom);
	const raw = readFileSync(out);
	const hf = await gguf(out, { allowLocalFile: true, typedMetadata: true });
	assert.deepEqual(hf.typedMetadata["edge.none"], { value: [], type: VT.ARRAY, subType: VT.STRING });
	assert.deepEqual(hf.typedMetadata["edge.big"], { value: 5000000000n, type: VT.INT64 });
	assert.deepEqual(hf.typedMetadata["edge.min"], { value: -2147483649n, type: VT.INT64 });
	assert.deepEqual(hf.tensorInfos.map((x) => [x.name, x.dtype, x.shape.map(Number), Number(x.offset)]),
		[[long, 8, [32, 2], 0], ["empty", 8, [32, 0], 96], ["after", 8, [32, 1], 96]]);
	checkLayout(hf, raw.length, 32);
	assert.equal(tool("fmt-verify", [out]).status, 0);

	const src64 = join(dir, "name64.safetensors");
	writeSafetensors(src64, [{ name: "y".repeat(64), dtype: "F32", shape: [32], bytes: Buffer.alloc(128) }]);
	const r = tool("fmt-convert", ["--quiet", src64, join(dir, "name64.gguf")], { allowFail: true });
	assert.equal(r.status, 5);
	assert.match(r.stderr, /64 bytes; GGUF allows at most 63/);
});

test("fmt-inspect --json prints u64 metadata >= 2^63 exactly, as a decimal string", (t) => {
	const dir = scratch(t);
	const out = join(dir, "u64.gguf");
	writeSafetensors(join(dir, "u64.safetensors"), [{ name: "w", dtype: "F32", shape: [32], bytes: Buffer.alloc(128) }]);
	convert(join(dir, "u64.safetensors"), out, "--set", "big:u64=18446744073709551615");
	const text = tool("fmt-inspect", ["--json", "--metadata", out]).stdout;
	assert.match(text, /"big":"18446744073709551615"[,}]/);
	assert.match(text, /"big":"u64"/);
	const meta = JSON.parse(text).metadata;
	assert.equal(BigInt(meta.big), 18446744073709551615n);
});

test("nested arrays (arrays of arrays) written by fmt-convert are read by @huggingface/gguf", async (t) => {
	const dir = scratch(t);
	writeSafetensors(join(dir, "n.safetensors"), [{ name: "w", dtype: "F32", shape: [32], bytes: Buffer.alloc(128) }]);
	writeFileSync(join(dir, "n.json"), JSON.stringify({ "a.nested": [[1, 2], [3, 4, 5]], "a.words": [["x"], ["y", "z"]] }));
	const out = join(dir, "n.gguf");
	convert(join(dir, "n.safetensors"), out, "--set-from", join(dir, "n.json"));
	const hf = await gguf(out, { allowLocalFile: true, typedMetadata: true });
	const nested = hf.typedMetadata["a.nested"];
	assert.equal(nested.type, VT.ARRAY);
	assert.equal(nested.subType, VT.ARRAY);
	assert.deepEqual(nested.value.map((inner) => (Array.isArray(inner) ? inner : inner.value)).map((a) => a.map(Number)), [[1, 2], [3, 4, 5]]);
	const words = hf.typedMetadata["a.words"];
	assert.deepEqual(words.value.map((inner) => (Array.isArray(inner) ? inner : inner.value)), [["x"], ["y", "z"]]);
	const info = inspectJson(out);
	assert.deepEqual(info.metadata["a.nested"], [[1, 2], [3, 4, 5]]);
	assert.equal(info.metadata_types["a.nested"], "array[array]");
});
