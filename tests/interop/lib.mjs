// Shared helpers of the interoperability tests: running the tools, writing inputs, and
// independent (from-the-spec) float conversions, quantizers and dequantizers.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = process.env.FMTKIT_BIN ?? join(REPO, "build/bin");

/* Run a tool; throws with its stderr when it exits non-zero (unless allowFail). */
export function tool(name, args, { allowFail = false } = {}) {
	const r = spawnSync(join(BIN, name), args, { encoding: "utf8", maxBuffer: 64 << 20 });
	if (r.error) throw r.error;
	if (r.status !== 0 && !allowFail)
		throw new Error(`${name} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
	return r;
}

/* fmt-inspect --json FILE [args]: the first JSON line. */
export function inspectJson(file, ...args) {
	const r = tool("fmt-inspect", ["--json", ...args, file]);
	return JSON.parse(r.stdout.split("\n")[0]);
}

/* fmt-convert IN OUT args, always --force --no-progress --quiet. */
export function convert(input, output, ...args) {
	return tool("fmt-convert", ["--force", "--no-progress", "--quiet", ...args, input, output]);
}

export function scratch(t) {
	const dir = mkdtempSync(join(tmpdir(), "fmtkit-interop-"));
	if (!process.env.FMTKIT_KEEP_SCRATCH) t.after(() => rmSync(dir, { recursive: true, force: true }));
	return dir;
}

/* Deterministic PRNG (mulberry32): the same inputs on every run. */
export function prng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/* ---- bit-level float conversions, written from specs/gguf.md §10 ---- */

const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);

export function f32Bits(x) {
	f32buf[0] = x;
	return u32buf[0];
}

export function bitsF32(u) {
	u32buf[0] = u >>> 0;
	return f32buf[0];
}

/* Round the integer value `full` right by `shift` bits, to nearest, ties to even. */
function shiftRne(full, shift) {
	const r = Math.floor(full / 2 ** shift);
	const rem = full - r * 2 ** shift;
	const half = 2 ** (shift - 1);
	return rem > half || (rem === half && (r & 1)) ? r + 1 : r;
}

/* fp32 -> fp16 bits (RNE, overflow to Inf, subnormals, NaN -> 0x7E00 | sign). */
export function f32ToF16Bits(x) {
	const u = f32Bits(x);
	const sign = (u >>> 16) & 0x8000;
	const exp = (u >>> 23) & 0xff;
	const mant = u & 0x7fffff;
	if (exp === 0xff) return sign | (mant ? 0x7e00 : 0x7c00);
	const e = exp - 127 + 15;
	if (e >= 0x1f) return sign | 0x7c00;
	if (e <= 0) {
		if (e < -10) return sign;
		return sign | shiftRne(0x800000 | mant, 14 - e);
	}
	const r = shiftRne((e << 23) | mant, 13); // a carry into the exponent (even to Inf) is right
	return sign | Math.min(r, 0x7c00);
}

export function f16BitsToF32(h) {
	const sign = h & 0x8000 ? -1 : 1;
	const e = (h >>> 10) & 0x1f;
	const m = h & 0x3ff;
	if (e === 0) return sign * m * 2 ** -24;
	if (e === 0x1f) return m ? NaN : sign * Infinity;
	return sign * (1024 + m) * 2 ** (e - 25);
}

/* fp32 -> bf16 bits (§10.2). */
export function f32ToBf16Bits(x) {
	const u = f32Bits(x);
	if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x0040) & 0xffff;
	return Math.floor((u + 0x7fff + ((u >>> 16) & 1)) / 65536) & 0xffff;
}

export function bf16BitsToF32(b) {
	return bitsF32((b & 0xffff) << 16);
}

/* ---- element encodings ---- */

export const ELEM_BYTES = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

/* Encode numbers (or bigints for I64) as dtype bytes, little-endian. */
export function encode(dtype, values) {
	const n = values.length;
	const buf = Buffer.alloc(n * ELEM_BYTES[dtype]);
	for (let i = 0; i < n; i++) {
		const v = values[i];
		switch (dtype) {
		case "F64": buf.writeDoubleLE(v, i * 8); break;
		case "F32": buf.writeFloatLE(v, i * 4); break;
		case "F16": buf.writeUInt16LE(f32ToF16Bits(v), i * 2); break;
		case "BF16": buf.writeUInt16LE(f32ToBf16Bits(v), i * 2); break;
		case "I64": buf.writeBigInt64LE(BigInt(v), i * 8); break;
		case "I32": buf.writeInt32LE(v, i * 4); break;
		case "I16": buf.writeInt16LE(v, i * 2); break;
		case "I8": buf.writeInt8(v, i); break;
		case "U8": case "BOOL": buf.writeUInt8(v, i); break;
		default: throw new Error(`encode: ${dtype}`);
		}
	}
	return buf;
}

/* Decode dtype bytes to numbers (I64 as Number: the tests keep them small). */
export function decode(dtype, buf) {
	const n = buf.length / ELEM_BYTES[dtype];
	const out = new Array(n);
	for (let i = 0; i < n; i++) {
		switch (dtype) {
		case "F64": out[i] = buf.readDoubleLE(i * 8); break;
		case "F32": out[i] = buf.readFloatLE(i * 4); break;
		case "F16": out[i] = f16BitsToF32(buf.readUInt16LE(i * 2)); break;
		case "BF16": out[i] = bf16BitsToF32(buf.readUInt16LE(i * 2)); break;
		case "I64": out[i] = Number(buf.readBigInt64LE(i * 8)); break;
		case "I32": out[i] = buf.readInt32LE(i * 4); break;
		case "I16": out[i] = buf.readInt16LE(i * 2); break;
		case "I8": out[i] = buf.readInt8(i); break;
		case "U8": case "BOOL": out[i] = buf.readUInt8(i); break;
		default: throw new Error(`decode: ${dtype}`);
		}
	}
	return out;
}

/* ---- safetensors, written as the reference writer does (specs/safetensors.md §6) ---- */

const ST_RANK = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
	"F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64",
	"I64", "U64"];
export const ST_DTYPES = new Set(ST_RANK);

const byteCmp = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/* tensors: [{name, dtype, shape, bytes}] -> file bytes; reference order, sorted metadata. */
export function safetensorsBytes(tensors, metadata) {
	const order = [...tensors].sort((a, b) =>
		ST_RANK.indexOf(b.dtype) - ST_RANK.indexOf(a.dtype) || byteCmp(a.name, b.name));
	const header = {};
	if (metadata && Object.keys(metadata).length) {
		header.__metadata__ = {};
		for (const k of Object.keys(metadata).sort(byteCmp)) header.__metadata__[k] = metadata[k];
	}
	let offset = 0;
	for (const t of order) {
		header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes.length] };
		offset += t.bytes.length;
	}
	let text = Buffer.from(JSON.stringify(header), "utf8");
	text = Buffer.concat([text, Buffer.alloc((8 - (text.length % 8)) % 8, 0x20)]);
	const len = Buffer.alloc(8);
	len.writeBigUInt64LE(BigInt(text.length));
	return Buffer.concat([len, text, ...order.map((t) => t.bytes)]);
}

export function writeSafetensors(path, tensors, metadata) {
	writeFileSync(path, safetensorsBytes(tensors, metadata));
}

/* A plain reader with every structural check of specs/safetensors.md §5 asserted by `check`
 * (a function (cond, message) that fails the test). Returns {header, metadata, tensors, raw}. */
export function readSafetensors(path, check) {
	const raw = readFileSync(path);
	check(raw.length >= 8, "file shorter than 8 bytes");
	const n = Number(raw.readBigUInt64LE(0));
	check(8 + n <= raw.length, `header length ${n} beyond file`);
	check(n % 8 === 0, `header length ${n} not a multiple of 8`);
	const text = raw.subarray(8, 8 + n).toString("utf8");
	check(text.startsWith("{"), "header does not start with {");
	const body = text.replace(/ +$/, "");
	check(body.endsWith("}"), "header padded with something else than spaces");
	check(n - Buffer.byteLength(body) < 8, "more padding than needed to reach a multiple of 8");
	const header = JSON.parse(body);
	const metadata = header.__metadata__ ?? null;
	if (metadata)
		for (const [k, v] of Object.entries(metadata)) check(typeof v === "string", `metadata ${k} not a string`);
	const tensors = Object.entries(header).filter(([k]) => k !== "__metadata__")
		.map(([name, info]) => ({ name, ...info }));
	const sorted = [...tensors].sort((a, b) => a.data_offsets[0] - b.data_offsets[0]);
	let end = 0;
	for (const t of sorted) {
		check(ST_DTYPES.has(t.dtype), `tensor ${t.name}: dtype ${t.dtype}`);
		check(Object.keys(t).join() === "name,dtype,shape,data_offsets", `tensor ${t.name}: fields`);
		const [b, e] = t.data_offsets;
		check(b === end, `tensor ${t.name}: begins at ${b}, previous ends at ${end}`);
		const count = t.shape.reduce((p, d) => p * d, 1);
		check(e - b === count * ELEM_BYTES[t.dtype], `tensor ${t.name}: ${e - b} bytes for ${count} ${t.dtype}`);
		t.bytes = raw.subarray(8 + n + b, 8 + n + e);
		end = e;
	}
	check(raw.length === 8 + n + end, `file length ${raw.length} != 8 + ${n} + ${end}`);
	return { header, metadata, tensors, raw };
}

/* ---- GGUF ---- */

export const GGML_TYPE_ID = { F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q5_0: 6, Q5_1: 7, Q8_0: 8, I8: 24,
	I16: 25, I32: 26, I64: 27, F64: 28, BF16: 30 };

/* Bytes per block and elements per block (specs/gguf.md §9). */
export const GGML_BLOCK = { 0: [4, 1], 1: [2, 1], 2: [18, 32], 8: [34, 32], 24: [1, 1], 25: [2, 1],
	26: [4, 1], 27: [8, 1], 28: [8, 1], 30: [2, 1] };

export function ggmlBytes(typeId, count) {
	const [size, block] = GGML_BLOCK[typeId];
	return (count / block) * size;
}

export const alignUp = (x, a) => Math.ceil(x / a) * a;

/* ---- Q8_0 / Q4_0: dequantizers (specs/gguf.md §9, §11, §12) and reference quantizers ---- */

export function dequantQ8_0(buf) {
	const out = new Float32Array((buf.length / 34) * 32);
	for (let b = 0; b * 34 < buf.length; b++) {
		const d = f16BitsToF32(buf.readUInt16LE(b * 34));
		for (let j = 0; j < 32; j++) out[b * 32 + j] = buf.readInt8(b * 34 + 2 + j) * d;
	}
	return out;
}

export function dequantQ4_0(buf) {
	const out = new Float32Array((buf.length / 18) * 32);
	for (let b = 0; b * 18 < buf.length; b++) {
		const d = f16BitsToF32(buf.readUInt16LE(b * 18));
		for (let j = 0; j < 16; j++) {
			const byte = buf[b * 18 + 2 + j];
			out[b * 32 + j] = ((byte & 0x0f) - 8) * d;
			out[b * 32 + j + 16] = ((byte >> 4) - 8) * d;
		}
	}
	return out;
}

const fr = Math.fround;
const roundAway = (x) => Math.sign(x) * Math.floor(Math.abs(x) + 0.5);

/* The float32 scale d each block is quantized with (before its fp16 rounding). */
export function q8Scale(block) {
	let amax = 0;
	for (const x of block) amax = Math.max(amax, Math.abs(x));
	return fr(amax / 127);
}

export function q4Scale(block) {
	let max = 0, amax = 0;
	for (const x of block) if (Math.abs(x) > amax) { amax = Math.abs(x); max = x; }
	return fr(max / -8);
}

export function quantQ8_0(values) {
	const out = Buffer.alloc((values.length / 32) * 34);
	for (let b = 0; b * 32 < values.length; b++) {
		const x = values.slice(b * 32, b * 32 + 32);
		const d = q8Scale(x);
		const id = d !== 0 ? fr(1 / d) : 0;
		out.writeUInt16LE(f32ToF16Bits(d), b * 34);
		for (let j = 0; j < 32; j++) out.writeInt8(roundAway(fr(x[j] * id)), b * 34 + 2 + j);
	}
	return out;
}

export function quantQ4_0(values) {
	const out = Buffer.alloc((values.length / 32) * 18);
	for (let b = 0; b * 32 < values.length; b++) {
		const x = values.slice(b * 32, b * 32 + 32);
		const d = q4Scale(x);
		const id = d !== 0 ? fr(1 / d) : 0;
		const q = x.map((v) => Math.min(15, Math.trunc(fr(fr(v * id) + 8.5))));
		out.writeUInt16LE(f32ToF16Bits(d), b * 18);
		for (let j = 0; j < 16; j++) out[b * 18 + 2 + j] = q[j] | (q[j + 16] << 4);
	}
	return out;
}

/* Mean and population std in double, two passes (the tools use double too). */
export function meanStd(values) {
	let sum = 0;
	for (const v of values) sum += v;
	const mean = sum / values.length;
	let m2 = 0;
	for (const v of values) m2 += (v - mean) ** 2;
	return { mean, std: Math.sqrt(m2 / values.length) };
}

export const hex = (buf) => Buffer.from(buf).toString("hex");
