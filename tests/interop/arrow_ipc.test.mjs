// Arrow IPC interoperability with the apache-arrow package (an independent reader and writer):
// tables it writes (stream and file, several batches, every type fmtkit converts, with nulls)
// are read by fmt-convert value for value, and tables fmtkit writes (Arrow IPC file and
// stream, and the payload of an uncompressed .ald) are read back by it value for value.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as A from "apache-arrow";
import { convert, inspectJson, scratch, prng, tool } from "./lib.mjs";

const ROWS = 300; // two batches of 150
const rnd = prng(12);
const pick = (i, v) => (i % 7 === 3 ? null : v); // a null in every seventh row

function columns() {
	const c = {};
	const range = (f) => Array.from({ length: ROWS }, (_, i) => pick(i, f(i)));
	c.b = [range((i) => rnd() < 0.5), new A.Bool()];
	c.i8 = [range((i) => (i % 256) - 128), new A.Int8()];
	c.i16 = [range((i) => i * 211 - 32768), new A.Int16()];
	c.i32 = [range((i) => (i === 1 ? 2147483647 : i * 7919 - 2147483648)), new A.Int32()];
	c.i64 = [range((i) => BigInt(i) * 30000000000000n - 9223372036854775807n), new A.Int64()];
	c.u8 = [range((i) => (i * 13) % 256), new A.Uint8()];
	c.u16 = [range((i) => (i * 997) % 65536), new A.Uint16()];
	c.u32 = [range((i) => (i * 14316557) % 4294967296), new A.Uint32()];
	c.u64 = [range((i) => 18446744073709551615n - BigInt(i) * 61489146912365172n), new A.Uint64()];
	c.f16 = [range((i) => [0.5, -2, 65504, 0.0999755859375, 1e-7 * 0][i % 5]), new A.Float16()];
	c.f32 = [range((i) => Math.fround((rnd() - 0.5) * 1e6)), new A.Float32()];
	c.f64 = [range((i) => (rnd() - 0.5) * 10 ** ((i % 40) - 20)), new A.Float64()];
	c.s = [range((i) => `row ${i} "quoted", é ✓`.slice(0, 5 + (i % 20))), new A.Utf8()];
	c.ls = [range((i) => "x".repeat(i % 9) + "\n" + i), new A.LargeUtf8()];
	c.bin = [range((i) => Uint8Array.from({ length: i % 6 }, (_, k) => (i * 31 + k) % 256)), new A.Binary()];
	c.d = [range((i) => new Date(Date.UTC(1900 + (i % 200), i % 12, 1 + (i % 28)))), new A.DateDay()];
	c.ts = [range((i) => 1700000000000 + i * 86400123 - 90000000000000), new A.TimestampMillisecond("UTC")];
	c.tsn = [range((i) => (1700000000 + i * 3607) * 1000), new A.TimestampSecond()]; // ms in, seconds stored
	c.emb = [range((i) => [i / 4, -i, rnd()].map(Math.fround)),
		new A.FixedSizeList(3, new A.Field("item", new A.Float32(), true))];
	return c;
}

function jsTable(c, from, to) {
	const cols = {};
	for (const [name, [values, type]] of Object.entries(c))
		cols[name] = A.vectorFromArray(values.slice(from, to), type);
	return new A.Table(cols);
}

const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join("");
const pad = (n, w) => String(n).padStart(w, "0");
// ISO 8601's expanded years, as fmt-convert(1) writes them: a '-' and at least 4 digits before 0000
const year = (y) => (y < 0 ? "-" + pad(-y, 4) : pad(y, 4));
function rfc3339(ms, unitDigits, zoned) {
	const d = new Date(Number(ms));
	const base = `${year(d.getUTCFullYear())}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}` +
		`T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
	const frac = ((Number(ms) % 1000) + 1000) % 1000;
	return base + (unitDigits && frac ? "." + pad(frac, 3) : "") + (zoned ? "Z" : "");
}

// What fmt-convert's JSON Lines holds for a value (fmt-convert(1): numbers as JSON numbers,
// 64-bit integers exactly, floats in their shortest round-trip form, dates, timestamps, binary as
// text), computed here from the JS value independently of fmtkit.
function expected(name, v) {
	if (v === null) return null;
	switch (name) {
		case "bin": return hex(v);
		case "d": return v.toISOString().slice(0, 10);
		case "ts": return rfc3339(v, 3, true);
		case "tsn": return rfc3339(v, 0, false);
		case "emb": return v;
		case "i64": case "u64": return BigInt(v);
		default: return v;
	}
}

// Parse JSON Lines keeping integers exact (64-bit values do not fit a double).
function parseExact(line) {
	return JSON.parse(line.replace(/([:\[,])(-?\d{16,})(?=[,\]}])/g, '$1"$2n"'), (k, v) =>
		typeof v === "string" && /^-?\d+n$/.test(v) ? BigInt(v.slice(0, -1)) : v);
}

function compareRows(rows, c) {
	assert.equal(rows.length, ROWS);
	for (const [name, [values]] of Object.entries(c))
		for (let i = 0; i < ROWS; i++) {
			let got = rows[i][name];
			const want = expected(name, values[i]);
			if (typeof want === "bigint" && typeof got === "number") got = BigInt(got);
			if (typeof want === "bigint" && typeof got === "string") got = BigInt(got);
			// floats: the shortest decimal that reads back to the same value of the column's type
			if (name === "f16" && got !== null) got = A.util.uint16ToFloat64(A.util.float64ToUint16(got));
			if (name === "f32" && got !== null) got = Math.fround(got);
			if (name === "emb" && got !== null) got = got.map(Math.fround);
			assert.deepEqual(got, want, `column ${name}, row ${i}`);
		}
}

for (const kind of ["stream", "file"]) {
	test(`apache-arrow ${kind} (2 batches, every type, nulls) read by fmt-convert value for value`, (t) => {
		const dir = scratch(t);
		const c = columns();
		const table = new A.Table([...jsTable(c, 0, 150).batches, ...jsTable(c, 150, ROWS).batches]);
		assert.equal(table.batches.length, 2);
		const input = join(dir, kind === "file" ? "js.arrow" : "js.arrows");
		writeFileSync(input, A.tableToIPC(table, kind));
		// rows, batches and codec from the batch headers
		const facts = inspectJson(input);
		assert.equal(facts.rows, ROWS);
		assert.deepEqual(facts[kind === "file" ? "arrow" : "arrow-stream"], { ipc: kind, record_batches: 2, compression: "none" });
		const out = join(dir, "out.jsonl");
		convert(input, out);
		const rows = readFileSync(out, "utf8").trimEnd().split("\n").map(parseExact);
		compareRows(rows, c);
	});
}

// Cells as apache-arrow gives them, for comparing two tables it read.
function cells(table) {
	return table.toArray().map((r) => {
		const o = r.toJSON();
		for (const k of Object.keys(o)) {
			const v = o[k];
			if (v instanceof Uint8Array) o[k] = hex(v);
			else if (v && typeof v === "object" && typeof v.toArray === "function") o[k] = Array.from(v.toArray());
			else if (typeof v === "bigint") o[k] = v.toString();
		}
		return o;
	});
}

for (const [ext, kind] of [["arrow", "file"], ["feather", "file"], ["arrows", "stream"], ["ald", "ald"]]) {
	test(`fmt-convert writes ${kind}: apache-arrow reads the same schema and values back`, (t) => {
		const dir = scratch(t);
		const c = columns();
		const table = new A.Table([...jsTable(c, 0, 100).batches, ...jsTable(c, 100, ROWS).batches]);
		const input = join(dir, "js.arrows");
		writeFileSync(input, A.tableToIPC(table, "stream"));
		const out = join(dir, `ours.${ext}`);
		convert(input, out, ...(kind === "ald" ? ["--compression", "none"] : []));
		let bytes = readFileSync(out);
		if (kind === "ald") {
			// the payload of an uncompressed .ald is an Arrow IPC stream (specs/ald.md §1)
			const metaSize = bytes.readUInt32LE(8), payloadSize = bytes.readUInt32LE(12);
			const schemaSize = bytes.readUInt16LE(22);
			const start = 32 + metaSize + schemaSize;
			bytes = bytes.subarray(start, start + payloadSize);
		} else if (kind === "file") {
			assert.equal(bytes.subarray(0, 6).toString(), "ARROW1");
			assert.equal(bytes.subarray(bytes.length - 6).toString(), "ARROW1");
		}
		const back = A.tableFromIPC(bytes);
		assert.equal(back.numRows, ROWS);
		assert.deepEqual(back.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`),
			table.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`));
		assert.deepEqual(cells(back), cells(table));
		assert.equal(back.getChild("s").nullCount, table.getChild("s").nullCount);
	});
}

test("TRUENO_NATIVE: the aligned arrays hold apache-arrow's values; the payload is an IPC stream of the rest", (t) => {
	const dir = scratch(t);
	const table = new A.Table({
		x: A.vectorFromArray([1.5, -2, 3e300, 0.1], new A.Float64()),
		i: A.vectorFromArray([1, -2, 3, 2147483647], new A.Int32()),
		s: A.vectorFromArray(["a", "b, c", "", "d"], new A.Utf8()),
	});
	const input = join(dir, "js.arrows");
	writeFileSync(input, A.tableToIPC(table, "stream"));
	const out = join(dir, "native.ald");
	convert(input, out, "--trueno-native");
	const bytes = readFileSync(out);
	assert.equal(bytes[21], 0x10); // flags: TRUENO_NATIVE
	assert.equal(bytes[20], 0); // compression: none
	const meta = bytes.readUInt32LE(8), payloadSize = bytes.readUInt32LE(12), schemaSize = bytes.readUInt16LE(22);
	const at = 32 + meta + schemaSize, n = bytes.readUInt32LE(at);
	const arrays = [];
	for (let k = 0; k < n; k++) {
		const e = at + 4 + 31 * k;
		arrays.push({ column: bytes.readUInt32LE(e), dtype: bytes[e + 4], length: Number(bytes.readBigUInt64LE(e + 5)),
			alignment: bytes[e + 13], offset: Number(bytes.readBigUInt64LE(e + 15)), size: Number(bytes.readBigUInt64LE(e + 23)) });
	}
	assert.deepEqual(arrays.map((a) => [a.column, a.dtype, a.length, a.alignment, a.offset % 64, a.size]),
		[[0, 1, 4, 64, 0, 32], [1, 2, 4, 64, 0, 16]]);
	const copy = (a) => bytes.buffer.slice(bytes.byteOffset + a.offset, bytes.byteOffset + a.offset + a.size);
	assert.deepEqual(Array.from(new Float64Array(copy(arrays[0]))), Array.from(table.getChild("x").toArray()));
	assert.deepEqual(Array.from(new Int32Array(copy(arrays[1]))), Array.from(table.getChild("i").toArray()));
	const payload = Math.ceil((arrays[1].offset + arrays[1].size) / 64) * 64;
	const rest = A.tableFromIPC(bytes.subarray(payload, payload + payloadSize));
	assert.deepEqual(rest.schema.fields.map((f) => `${f.name}:${f.type}`), ["s:Utf8"]);
	assert.deepEqual(rest.getChild("s").toArray(), ["a", "b, c", "", "d"]);
	// and fmt-convert reads it back to the table apache-arrow wrote
	const back = join(dir, "back.arrow");
	convert(out, back);
	assert.deepEqual(cells(A.tableFromIPC(readFileSync(back))), cells(table));
});

test("CSV through .ald to Arrow: apache-arrow reads the inferred types and the nulls", (t) => {
	const dir = scratch(t);
	const csv = join(dir, "in.csv");
	writeFileSync(csv, 'id,score,name,ok,when\n1,0.5,"a, b",true,2024-02-29T12:00:00Z\n2,,"",false,\n' +
		'3,1e300,"say ""hi""",,1969-12-31T23:59:59.999Z\n');
	const ald = join(dir, "in.ald"), arrow = join(dir, "out.arrow");
	convert(csv, ald);
	convert(ald, arrow);
	const back = A.tableFromIPC(readFileSync(arrow));
	assert.deepEqual(back.schema.fields.map((f) => `${f.name}:${f.type}`),
		["id:Int64", "score:Float64", "name:Utf8", "ok:Bool", "when:Timestamp<MILLISECOND, UTC>"]);
	const rows = back.toArray().map((r) => r.toJSON());
	assert.deepEqual(rows.map((r) => r.id), [1n, 2n, 3n]);
	assert.deepEqual(rows.map((r) => r.score), [0.5, null, 1e300]);
	assert.deepEqual(rows.map((r) => r.name), ["a, b", "", 'say "hi"']);
	assert.deepEqual(rows.map((r) => r.ok), [true, false, null]);
	assert.deepEqual(rows.map((r) => r.when), [Date.UTC(2024, 1, 29, 12), null, -1]);
});

test("types fmtkit does not convert (dictionary, list, struct): inspect names them, convert refuses them and reads the rest with --exclude, verify checks the rest", (t) => {
	const dir = scratch(t);
	const table = new A.Table({
		ok: A.vectorFromArray([1, 2, 3], new A.Int32()),
		dict: A.vectorFromArray(["a", "b", "a"], new A.Dictionary(new A.Utf8(), new A.Int32())),
		list: A.vectorFromArray([[1], [2, 3], []], new A.List(new A.Field("item", new A.Int32(), true))),
		st: A.vectorFromArray([{ a: 1 }, { a: 2 }, { a: 3 }], new A.Struct([new A.Field("a", new A.Int32(), true)])),
	});
	for (const kind of ["stream", "file"]) {
		const input = join(dir, `other.${kind === "file" ? "arrow" : "arrows"}`);
		writeFileSync(input, A.tableToIPC(table, kind));
		const r = tool("fmt-inspect", ["--json", "--schema", input]);
		const types = JSON.parse(r.stdout).schema.fields.map((f) => `${f.name}:${f.type}`);
		assert.deepEqual(types, ["ok:int32", "dict:dictionary<utf8>", "list:list", "st:struct"]);
		// the stream's dictionary batch is passed by: one record batch of 3 rows
		const facts = inspectJson(input);
		assert.equal(facts.rows, 3);
		assert.equal(facts[kind === "file" ? "arrow" : "arrow-stream"].record_batches, 1);
		const c = tool("fmt-convert", ["--force", "--quiet", input, join(dir, "out.csv")], { allowFail: true });
		assert.equal(c.status, 5);
		assert.match(c.stderr, /column 'dict' has type dictionary<utf8>, which fmtkit does not convert/);
		// the columns fmtkit reads are read past the others (their nodes and buffers stepped over)
		const out = join(dir, "out.arrow");
		tool("fmt-convert", ["--force", "--quiet", "--exclude", "dict", "--exclude", "list", "--exclude", "st", input, out]);
		const back = A.tableFromIPC(readFileSync(out));
		assert.deepEqual(back.schema.fields.map((f) => `${f.name}:${f.type}`), ["ok:Int32"]);
		assert.deepEqual(back.toArray().map((row) => row.ok), [1, 2, 3]);
		// fmt-verify checks those rows
		const v = tool("fmt-verify", [input]);
		assert.equal(v.stdout, `${input}: ok (${kind === "file" ? "arrow" : "arrow-stream"}, 3 rows)\n`);
	}
});

// Issue 20 (items 5, 6): a table apache-arrow writes with uint64's and int64's extremes and
// timestamps with and without a zone goes through CSV and JSON Lines and comes back with the
// same types (unit, zone or none) and values, as apache-arrow reads them.
for (const via of ["csv", "jsonl"]) {
	test(`apache-arrow -> ${via} -> Arrow keeps uint64, int64 and zone-less or UTC timestamps exactly`, (t) => {
		const dir = scratch(t);
		const cols = {
			u: A.vectorFromArray([18446744073709551615n, 0n, 9223372036854775808n], new A.Uint64()),
			i: A.vectorFromArray([-9223372036854775808n, 9223372036854775807n, -1n], new A.Int64()),
			naive: A.vectorFromArray([-100000000000, 0, 946684923456], new A.TimestampMillisecond()),
			utc: A.vectorFromArray([-100000000000, 1, 946684923456], new A.TimestampMillisecond("UTC")),
		};
		const input = join(dir, "js.arrow");
		writeFileSync(input, A.tableToIPC(new A.Table(cols), "file"));
		const mid = join(dir, `mid.${via}`), back = join(dir, "back.arrow");
		convert(input, mid);
		convert(mid, back);
		const got = A.tableFromIPC(readFileSync(back));
		const want = A.tableFromIPC(readFileSync(input));
		for (const f of want.schema.fields) {
			const g = got.schema.fields.find((x) => x.name === f.name);
			assert.ok(g, `column ${f.name}`);
			assert.equal(g.type.typeId, f.type.typeId, `${f.name}: type`);
			assert.equal(String(g.type), String(f.type), `${f.name}: ${g.type} for ${f.type}`);
			assert.equal(g.type.timezone ?? null, f.type.timezone ?? null, `${f.name}: zone`);
		}
		assert.deepEqual(cells(got), cells(want));
		assert.equal(String(got.getChild("naive").get(0)), String(-100000000000));
	});
}

// fmt-convert -c lz4 / -c zstd: record batches compressed buffer by buffer, read by apache-arrow
// with LZ4-frame and zstd codecs from python3-lz4 and python3-zstandard (apache-arrow brings
// none): the same table as the uncompressed file, the BodyCompression codec in each batch.
test("fmt-convert -c lz4 / zstd Arrow IPC: apache-arrow decompresses every buffer to the same table", (t) => {
	const dir = scratch(t);
	const python = (code) => (data) => new Uint8Array(execFileSync("/usr/bin/python3", ["-c",
		`import sys; ${code}; sys.stdout.buffer.write(f(sys.stdin.buffer.read()))`], { input: Buffer.from(data) }));
	A.compressionRegistry.set(A.CompressionType.LZ4_FRAME, { decode: python("import lz4.frame; f = lz4.frame.decompress") });
	A.compressionRegistry.set(A.CompressionType.ZSTD, { decode: python("import zstandard; f = zstandard.ZstdDecompressor().decompress") });
	const csv = join(dir, "in.csv");
	const lines = ["id,name,x,ok"];
	for (let i = 0; i < 5000; i++) lines.push(`${i},${i % 5 === 2 ? "" : "name_" + (i % 11)},${i % 9 === 4 ? "" : (i / 8).toFixed(3)},${i % 3 === 0}`);
	writeFileSync(csv, lines.join("\n") + "\n");
	const plain = join(dir, "plain.arrow");
	convert(csv, plain);
	const rows = (table) => table.toArray().map((r) => JSON.stringify(r.toJSON(), (k, v) => (typeof v === "bigint" ? `${v}n` : v)));
	const want = rows(A.tableFromIPC(readFileSync(plain)));
	assert.equal(want.length, 5000);
	for (const [codec, name] of [["lz4", "c.arrow"], ["zstd", "c.arrows"], ["zstd:19", "d.arrow"]]) {
		const out = join(dir, name);
		tool("fmt-convert", ["--quiet", "-c", codec, csv, out]);
		const bytes = readFileSync(out);
		assert.ok(bytes.length < readFileSync(plain).length / 2, `${codec}: ${bytes.length} bytes`);
		const got = A.tableFromIPC(bytes);
		assert.deepEqual(rows(got), want, codec);
	}
});
