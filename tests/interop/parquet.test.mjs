// Parquet interoperability with DuckDB (@duckdb/node-api) and hyparquet (a pure JS reader):
// DuckDB writes every type with nulls over several row groups in each codec, page version
// and with dictionaries on and off, and what fmtkit converts to CSV holds DuckDB's values; the
// files of tests/data/parquet and their expected CSV hold them too; fmtkit writes Parquet in
// each codec and DuckDB and hyparquet read its values, types and the .ald card back; list columns
// both ways (DuckDB's LISTs read as fixed_size_list, fmtkit's fixed_size_lists written as LISTs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from "hyparquet";
import { tableFromIPC } from "apache-arrow";
import { BIN, convert, inspectJson, scratch, tool } from "./lib.mjs";
import { DATA, FILES, LIST_FILES, LISTS_SQL, LOGICAL_SQL, TYPES_SQL, duck } from "./parquet_data.mjs";

// The columns as DuckDB types them, to read fmtkit's CSV back typed (binary: fmtkit's hex).
const CSV_TYPES = {
	id: "INTEGER", big: "BIGINT", tiny: "TINYINT", small: "SMALLINT", ut: "UTINYINT", us: "USMALLINT",
	ui: "UINTEGER", ub: "UBIGINT", dbl: "DOUBLE", flt: "FLOAT", flag: "BOOLEAN", name: "VARCHAR",
	bin: "VARCHAR", day: "DATE", ts: "TIMESTAMP", tstz: "TIMESTAMPTZ", tsms: "TIMESTAMP_MS",
	tsns: "TIMESTAMP_NS",
};
const COLS = Object.keys(CSV_TYPES);
// t's columns with the binary one as fmtkit writes it in CSV: hex
const AS_CSV = COLS.map((c) => (c === "bin" ? "lower(hex(bin)) as bin" : c)).join(", ");

async function scalar(c, sql) {
	const r = await c.runAndReadAll(sql);
	return r.getRows()[0][0];
}

/* Rows of a that b lacks plus rows of b that a lacks (multisets): 0 when equal. */
async function difference(c, a, b) {
	return Number(await scalar(c, `select (select count(*) from (${a} except all ${b})) +
		(select count(*) from (${b} except all ${a}))`));
}

function csvOf(c, path) {
	const types = COLS.map((k) => `'${k}': '${CSV_TYPES[k]}'`).join(", ");
	// the dialect stated, not sniffed: RFC 4180, as fmtkit writes it (the sniffer was most of this
	// file's CPU time)
	return `select ${COLS.join(", ")} from read_csv('${path}', header = true, columns = {${types}},
		auto_detect = false, delim = ',', quote = '"', escape = '"')`;
}

test("DuckDB-written Parquet in each codec, page version and dictionary setting: fmtkit's CSV holds DuckDB's values", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${TYPES_SQL.replace("range(0, 2100)", "range(0, 5000)")}`);
	let cases = 0;
	for (const codec of ["uncompressed", "snappy", "gzip", "zstd", "lz4_raw"])
		for (const version of ["V1", "V2"])
			for (const dict of [true, false]) {
				const pq = join(dir, `${codec}-${version}-${dict}.parquet`);
				await c.run(`copy t to '${pq}' (format parquet, row_group_size 2048, compression ${codec}, parquet_version ${version}
					${dict ? "" : ", dictionary_size_limit 1"})`);
				const info = inspectJson(pq);
				assert.equal(info.rows, 5000);
				assert.ok(info.parquet.row_group_count >= 2, `${pq}: ${info.parquet.row_group_count} row groups`);
				tool("fmt-verify", [pq]);
				convert(pq, join(dir, "out.csv"));
				const diff = await difference(c, `select ${AS_CSV} from t`, csvOf(c, join(dir, "out.csv")));
				assert.equal(diff, 0, `${codec} ${version} dictionary ${dict}: ${diff} rows differ`);
				cases++;
			}
	assert.equal(cases, 20);
});

test("DuckDB-written Parquet to Arrow IPC: apache-arrow reads DuckDB's values", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${TYPES_SQL}`);
	const cols = ["id", "big", "tiny", "ut", "ub", "dbl", "flt", "flag", "name", "day"];
	const want = (await c.runAndReadAll(`select ${cols.join(", ")}, epoch_ms(day) as day_ms from t order by id`)).getRowObjects();
	for (const version of ["V1", "V2"]) {
		const pq = join(dir, `${version}.parquet`);
		await c.run(`copy t to '${pq}' (format parquet, row_group_size 2048, parquet_version ${version})`);
		convert(pq, join(dir, "out.arrow"));
		const table = tableFromIPC(readFileSync(join(dir, "out.arrow")));
		assert.equal(table.numRows, want.length);
		const get = (name) => table.getChild(name).toArray ? [...table.getChild(name)] : [];
		const got = Object.fromEntries(cols.map((k) => [k, get(k)]));
		for (let i = 0; i < want.length; i++) {
			const w = want[i];
			for (const k of ["id", "tiny", "ut", "flag", "name"])
				assert.equal(got[k][i], w[k], `${version} ${k} row ${i}`);
			assert.equal(got.big[i] === null ? null : BigInt(got.big[i]), w.big === null ? null : BigInt(w.big));
			assert.equal(BigInt(got.ub[i]), BigInt(w.ub));
			assert.equal(got.dbl[i], w.dbl);
			assert.equal(got.flt[i], Math.fround(w.flt));
			assert.equal(Number(got.day[i]), Number(w.day_ms), `${version} day row ${i}`);
		}
	}
});

test("the files of tests/data/parquet and their expected CSV hold DuckDB's values", async () => {
	const c = await duck();
	await c.run(`create table t as ${TYPES_SQL}`);
	for (const [name, , rows] of FILES) {
		const d = await difference(c, `select * from t where id < ${rows}`,
			`select * from read_parquet('${join(DATA, name)}')`);
		assert.equal(d, 0, name);
	}
	const d = await difference(c, `select ${AS_CSV} from t where id < 300`, csvOf(c, join(DATA, "types-300.csv")));
	assert.equal(d, 0, "types-300.csv");
});

test("fmtkit writes Parquet in each codec: DuckDB reads the same values and types", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${TYPES_SQL}`);
	const src = join(dir, "src.parquet");
	await c.run(`copy t to '${src}' (format parquet)`);
	const want = await c.runAndReadAll(`describe select * from read_parquet('${src}')`);
	for (const codec of ["none", "snappy", "gzip", "zstd", "zstd:19", "lz4"]) {
		const out = join(dir, `w-${codec.replace(":", "_")}.parquet`);
		convert(src, out, "-c", codec, "--row-group-rows", "700");
		const info = inspectJson(out);
		assert.equal(info.parquet.row_group_count, 3);
		const got = await c.runAndReadAll(`describe select * from read_parquet('${out}')`);
		assert.deepEqual(got.getRows().map((r) => [r[0], r[1]]), want.getRows().map((r) => [r[0], r[1]]), codec);
		assert.equal(await difference(c, "select * from t", `select * from read_parquet('${out}')`), 0, codec);
		// DuckDB's view of the statistics fmtkit wrote: min and max of each row group's id
		const st = await c.runAndReadAll(`select row_group_id, stats_min_value, stats_max_value, stats_null_count
			from parquet_metadata('${out}') where path_in_schema = 'big' order by row_group_id`);
		const want_st = await c.runAndReadAll(`select (id // 700) as g, min(big)::varchar, max(big)::varchar,
			count(*) - count(big) from t group by g order by g`);
		assert.deepEqual(st.getRows().map((r) => [r[1], r[2], Number(r[3])]),
			want_st.getRows().map((r) => [r[1], r[2], Number(r[3])]), codec);
	}
});

test("fmtkit writes Parquet that hyparquet reads value for value", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${TYPES_SQL}`);
	const src = join(dir, "src.parquet");
	await c.run(`copy t to '${src}' (format parquet)`);
	const rows = (await c.runAndReadAll("select id, big, name, dbl, flag, ub, tiny from t order by id")).getRowObjects();
	for (const codec of ["none", "snappy"]) {
		const out = join(dir, `h-${codec}.parquet`);
		convert(src, out, "-c", codec, "--row-group-rows", "1000");
		const file = await asyncBufferFromFile(out);
		const got = await parquetReadObjects({ file, columns: ["id", "big", "name", "dbl", "flag", "ub", "tiny"] });
		assert.equal(got.length, rows.length);
		for (let i = 0; i < rows.length; i++) {
			const w = rows[i], g = got[i];
			assert.equal(g.id, w.id);
			assert.equal(g.big === null ? null : BigInt(g.big), w.big === null ? null : BigInt(w.big), `big ${i}`);
			assert.equal(g.name, w.name);
			assert.equal(g.dbl, w.dbl);
			assert.equal(g.flag, w.flag);
			assert.equal(BigInt(g.ub), BigInt(w.ub), `ub ${i}`);
			assert.equal(g.tiny, w.tiny);
		}
	}
});

test("the .ald card travels to Parquet's key/value metadata (DuckDB and hyparquet read it) and back", async (t) => {
	const dir = scratch(t);
	const card = { name: "demo", version: "1.2", license: "CC-BY-4.0", tags: ["a", "b"] };
	writeFileSync(join(dir, "card.json"), JSON.stringify(card));
	writeFileSync(join(dir, "in.csv"), "id,word\n1,one\n2,two\n");
	convert(join(dir, "in.csv"), join(dir, "in.ald"), "--card", join(dir, "card.json"));
	convert(join(dir, "in.ald"), join(dir, "c.parquet"));
	const c = await duck();
	const kv = await c.runAndReadAll(`select decode(key), decode(value) from parquet_kv_metadata('${join(dir, "c.parquet")}')`);
	assert.deepEqual(kv.getRows().map((r) => [r[0], JSON.parse(r[1])]), [["ald:card", card]]);
	const meta = await parquetMetadataAsync(await asyncBufferFromFile(join(dir, "c.parquet")));
	assert.deepEqual(meta.key_value_metadata.map((x) => [x.key, JSON.parse(x.value)]), [["ald:card", card]]);
	convert(join(dir, "c.parquet"), join(dir, "back.ald"));
	const back = inspectJson(join(dir, "back.ald")).ald.card;
	delete back.sha256;
	assert.deepEqual(back, card);
	assert.equal(readFileSync(join(dir, "in.csv"), "utf8").length > 0, true);
});

test("a zoned timestamp keeps its zone in ARROW:schema (apache-arrow reads it there); DuckDB reads the same instants", async (t) => {
	const dir = scratch(t);
	writeFileSync(join(dir, "in.csv"), "id,t\n1,2024-03-01T12:00:00+01:00\n2,\n3,1999-12-31T23:59:59.5Z\n4,1970-01-01T00:00:00Z\n");
	writeFileSync(join(dir, "schema.json"), JSON.stringify({ t: "timestamp[ms, Europe/Paris]" }));
	convert(join(dir, "in.csv"), join(dir, "z.parquet"), "--schema", join(dir, "schema.json"));
	const c = await duck();
	const kv = await c.runAndReadAll(`select decode(key), value from parquet_kv_metadata('${join(dir, "z.parquet")}')`);
	const rows = kv.getRows();
	assert.deepEqual(rows.map((r) => r[0]), ["ARROW:schema"]);
	// the value: Base64 of an Arrow IPC Schema message; with an end-of-stream marker it is a stream
	const msg = Buffer.from(Buffer.from(rows[0][1].bytes).toString("latin1"), "base64");
	const stream = Buffer.concat([msg, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])]);
	const field = tableFromIPC(stream).schema.fields[1];
	assert.equal(field.name, "t");
	assert.equal(field.type.timezone, "Europe/Paris");
	assert.equal(field.type.unit, 1); // MILLISECOND
	const got = await c.runAndReadAll(`select id, epoch_ms(t) from '${join(dir, "z.parquet")}' order by id`);
	assert.deepEqual(got.getRows().map((r) => [Number(r[0]), r[1] === null ? null : Number(r[1])]),
		[[1, 1709290800000], [2, null], [3, 946684799500], [4, 0]]);
	const type = await c.runAndReadAll(`select typeof(t) from '${join(dir, "z.parquet")}' limit 1`);
	assert.equal(type.getRows()[0][0], "TIMESTAMP WITH TIME ZONE");
	// and back: fmtkit reads the zone from it
	assert.equal(inspectJson(join(dir, "z.parquet")).schema.fields[1].timezone, "Europe/Paris");
});

// List columns: DuckDB's FLOAT[4] (ARRAY), FLOAT[], INTEGER[] with null rows and null elements,
// DOUBLE[], over several row groups.
const LISTS_5000 = `select i::integer as id,
  [i / 3, -i * 0.5, i % 7, 1e-3 * i]::float[4] as emb4,
  [(i * 7) % 11 / 13.0, i]::float[] as emb,
  case when i % 9 = 0 then null else [i, case when i % 5 = 0 then null else -i end, i % 3] end::integer[] as l,
  [i * 1e10, -0.5]::double[] as d
  from range(0, 5000) r(i)`;
const LIST_COLS = "id, emb4::float[] as emb4, emb, l, d";
const LIST_JSON_TYPES = "{'id': 'INTEGER', 'emb4': 'FLOAT[]', 'emb': 'FLOAT[]', 'l': 'INTEGER[]', 'd': 'DOUBLE[]'}";

test("DuckDB-written list columns (FLOAT[4], FLOAT[], INTEGER[] with null rows and elements, DOUBLE[]) in each page version: fmtkit reads fixed_size_lists of DuckDB's values", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${LISTS_5000}`);
	for (const [version, codec, dict] of [["V1", "snappy", true], ["V2", "zstd", true], ["V1", "uncompressed", false], ["V2", "gzip", false]]) {
		const pq = join(dir, `${version}-${codec}.parquet`);
		await c.run(`copy t to '${pq}' (format parquet, row_group_size 2048, compression ${codec}, parquet_version ${version}
			${dict ? "" : ", dictionary_size_limit 1"})`);
		const info = inspectJson(pq);
		assert.ok(info.parquet.row_group_count >= 2);
		assert.deepEqual(info.schema.fields.slice(1).map((f) => [f.name, f.type, f.element, f.list_size]),
			[["emb4", "fixed_size_list", "float32", 4], ["emb", "fixed_size_list", "float32", 2],
			 ["l", "fixed_size_list", "int32", 3], ["d", "fixed_size_list", "float64", 2]]);
		tool("fmt-verify", [pq]);
		const out = join(dir, "out.jsonl");
		convert(pq, out);
		const d = await difference(c, `select ${LIST_COLS} from t`,
			`select * from read_json('${out}', format = 'newline_delimited', columns = ${LIST_JSON_TYPES})`);
		assert.equal(d, 0, `${version} ${codec}: ${d} rows differ`);
	}
});

test("fmtkit writes fixed_size_list columns from .ald and Arrow IPC as Parquet LISTs: DuckDB reads the same values, ARROW:schema says fixed_size_list", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${LISTS_5000}`);
	const src = join(dir, "src.parquet");
	await c.run(`copy t to '${src}' (format parquet)`);
	convert(src, join(dir, "src.ald"));
	convert(join(dir, "src.ald"), join(dir, "src.arrow"));
	for (const from of ["src.ald", "src.arrow"]) {
		for (const codec of ["none", "zstd"]) {
			const out = join(dir, `${from}-${codec}.parquet`);
			convert(join(dir, from), out, "-c", codec, "--row-group-rows", "1500");
			assert.equal(inspectJson(out).parquet.row_group_count, 4);
			const types = await c.runAndReadAll(`describe select * from read_parquet('${out}')`);
			assert.deepEqual(types.getRows().map((r) => [r[0], r[1]]),
				[["id", "INTEGER"], ["emb4", "FLOAT[]"], ["emb", "FLOAT[]"], ["l", "INTEGER[]"], ["d", "DOUBLE[]"]]);
			const d = await difference(c, `select ${LIST_COLS} from t`, `select * from read_parquet('${out}')`);
			assert.equal(d, 0, `${from} ${codec}: ${d} rows differ`);
		}
	}
	// ARROW:schema: an Arrow IPC Schema message (Base64) naming the list size
	const kv = await c.runAndReadAll(`select decode(key), value from parquet_kv_metadata('${join(dir, "src.ald-none.parquet")}')
		where decode(key) = 'ARROW:schema'`);
	const msg = Buffer.from(Buffer.from(kv.getRows()[0][1].bytes).toString("latin1"), "base64");
	const stream = Buffer.concat([msg, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])]);
	const emb4 = tableFromIPC(stream).schema.fields[1];
	assert.equal(emb4.name, "emb4");
	assert.equal(emb4.type.listSize, 4);
	// a list that is never null (JSON Lines' lists of numbers): a required LIST group
	writeFileSync(join(dir, "req.jsonl"), '{"v":[1.5,2]}\n{"v":[3,-4.25]}\n');
	convert(join(dir, "req.jsonl"), join(dir, "req.parquet"));
	assert.equal(inspectJson(join(dir, "req.parquet")).schema.fields[0].nullable, false);
	const req = await c.runAndReadAll(`select v from read_parquet('${join(dir, "req.parquet")}')`);
	assert.deepEqual(req.getRowsJson(), [[[1.5, 2]], [[3, -4.25]]]);
	// and fmtkit reads its own file back as it was
	convert(join(dir, "src.ald-zstd.parquet"), join(dir, "back.ald"));
	convert(join(dir, "back.ald"), join(dir, "back.jsonl"));
	convert(join(dir, "src.ald"), join(dir, "want.jsonl"));
	assert.equal(readFileSync(join(dir, "back.jsonl"), "utf8"), readFileSync(join(dir, "want.jsonl"), "utf8"));
});

test("tests/data/parquet/lists-*.parquet hold LISTS_SQL's values, which parquet.bats asserts fmtkit reads", async () => {
	const c = await duck();
	for (const [name] of LIST_FILES)
		assert.equal(await difference(c, `select * from (${LISTS_SQL})`, `select * from read_parquet('${join(DATA, name)}')`), 0, name);
});

// An INTERVAL as fmt-convert(1) writes it: an ISO 8601 duration of its parts that are not zero,
// twelve months a year, the milliseconds (Parquet's unit) in hours, minutes and seconds.
function isoInterval({ months, days, micros }) {
	const ms = Math.trunc(Number(micros) / 1000), s = Math.trunc(ms / 1000);
	let out = "P" + (months >= 12 ? `${Math.trunc(months / 12)}Y` : "") + (months % 12 ? `${months % 12}M` : "") +
		(days ? `${days}D` : "");
	if (ms || out === "P") {
		out += "T" + (s >= 3600 ? `${Math.trunc(s / 3600)}H` : "") + (Math.trunc(s / 60) % 60 ? `${Math.trunc(s / 60) % 60}M` : "");
		if (s % 60 || ms % 1000 || ms === 0)
			out += `${s % 60}` + (ms % 1000 ? "." + String(ms % 1000).padStart(3, "0") : "") + "S";
	}
	return out;
}

test("DuckDB-written DECIMAL (INT32, INT64, FIXED_LEN_BYTE_ARRAY), TIME, TIMETZ, TIME_NS, UUID and INTERVAL in each page version: fmtkit's text holds DuckDB's values exactly", async (t) => {
	const dir = scratch(t);
	const c = await duck();
	await c.run(`create table t as ${LOGICAL_SQL.replace("range(0, 6)", "range(0, 5000)")}`);
	const want = new Map((await c.runAndReadAll("select id, iv from t")).getRowObjectsJson().map((r) => [r.id, r.iv]));
	for (const [version, codec, dict] of [["V1", "snappy", true], ["V2", "zstd", true], ["V1", "uncompressed", false]]) {
		const pq = join(dir, `${version}-${codec}.parquet`);
		await c.run(`copy t to '${pq}' (format parquet, row_group_size 2048, compression ${codec}, parquet_version ${version}
			${dict ? "" : ", dictionary_size_limit 1"})`);
		assert.ok(inspectJson(pq).parquet.row_group_count >= 2);
		assert.deepEqual(inspectJson(pq).schema.fields.map((f) => f.type), ["int32", ...Array(8).fill("utf8")]);
		tool("fmt-verify", [pq]);
		const out = join(dir, "out.csv");
		convert(pq, out);
		const got = `read_csv('${out}', header = true, all_varchar = true, auto_detect = false, delim = ',', quote = '"', escape = '"',
			columns = {'id': 'VARCHAR', 'd4': 'VARCHAR', 'd18': 'VARCHAR', 'd38': 'VARCHAR', 't': 'VARCHAR', 'tz': 'VARCHAR',
			'tns': 'VARCHAR', 'u': 'VARCHAR', 'iv': 'VARCHAR'})`;
		// decimals and UUIDs as DuckDB writes them as text, times as the values DuckDB reads back
		const d = await difference(c,
			`select id, d4::varchar, d18::varchar, d38::varchar, t, tz, tns, u::varchar from t`,
			`select id::integer, d4, d18, d38, t::time, replace(tz, 'Z', '+00')::timetz, tns::time_ns, u from ${got}`);
		assert.equal(d, 0, `${version} ${codec}: ${d} rows differ`);
		const ivs = (await c.runAndReadAll(`select id::integer as id, iv from ${got}`)).getRowObjectsJson();
		assert.equal(ivs.length, 5000);
		for (const r of ivs)
			assert.equal(r.iv, want.get(r.id) === null ? null : isoInterval(want.get(r.id)), `row ${r.id}`);
	}
});

test("tests/data/parquet/logical.parquet holds LOGICAL_SQL's values, which parquet.bats asserts fmtkit reads as text", async () => {
	const c = await duck();
	assert.equal(await difference(c, `select * from (${LOGICAL_SQL})`, `select * from read_parquet('${join(DATA, "logical.parquet")}')`), 0);
});

test("a DuckDB row group of 100,000 rows of FLOAT[64] (one 25 MB page, as DuckDB writes a column chunk) to CSV and Arrow: peak RSS within 32 MiB + threads x 1 MiB in ZSTD (+ the page as stored and decompressed in SNAPPY, which has no stream), every value", async (t) => {
	// A page of PLAIN numbers is read a slice (about 1 MiB of values) at a time, its body
	// decompressed as a stream, its levels kept as stored; the batches of rows are about 1 MiB.
	// SNAPPY (DuckDB's default) cannot be decompressed in pieces: its page is held whole. Before,
	// every page was held whole with its levels at a byte a value.
	const dir = scratch(t);
	const c = await duck();
	const elems = Array.from({ length: 64 }, (_, x) => `((hash(i * 64 + ${x}) % 100000) / 1024.0)::float`).join(", ");
	for (const codec of ["zstd", "snappy"]) {
		const pq = join(dir, `emb-${codec}.parquet`);
		await c.run(`copy (select i::integer as id, [${elems}]::float[64] as emb from range(0, 100000) r(i))
			to '${pq}' (format parquet, row_group_size 100000, compression ${codec})`);
		const info = inspectJson(pq);
		assert.equal(info.parquet.row_group_count, 1);
		const chunk = info.parquet.row_groups["0"].columns["emb.list.element"];
		const pageBytes = codec === "zstd" ? 0 : chunk.compressed_bytes + chunk.uncompressed_bytes;
		const sum = Number(await scalar(c, `select sum(list_sum(emb::double[])) from read_parquet('${pq}')`));
		for (const threads of [1, 2]) {
			for (const out of ["out.csv", "out.arrow"]) {
				const r = spawnSync("/usr/bin/time", ["-f", "%M", join(BIN, "fmt-convert"), "-q", "-f", "-T", String(threads), pq, join(dir, out)],
					{ encoding: "utf8" });
				assert.equal(r.status, 0, r.stderr);
				const kib = Number(r.stderr.trim().split("\n").pop());
				const bound = (32 + threads) * 1024 + pageBytes / 1024;
				assert.ok(kib <= bound, `${codec} -T ${threads} -> ${out}: peak RSS ${kib} KiB, over ${Math.round(bound)} KiB`);
			}
			const table = tableFromIPC(readFileSync(join(dir, "out.arrow")));
			assert.equal(table.numRows, 100000);
			let got = 0;
			for (const batch of table.batches)
				for (const v of batch.getChild("emb").data[0].children[0].values)
					got += v;
			assert.ok(Math.abs(got - sum) <= 1e-9 * Math.abs(sum), `${codec}: sum ${got}, DuckDB's ${sum}`);
		}
	}
});

test("a CSV of 500 DOUBLE columns (distinct values) -> Parquet: row groups cut at --row-group-bytes (12 MiB held), peak RSS within 32 MiB + threads x 1 MiB at -T 1 and 2; DuckDB reads every row and the same sums", async (t) => {
	// The writer held a whole row group of 122880 rows: here all 12,000 rows of 500 columns with
	// their dictionaries: 136 MiB peak RSS at -T 1. It now ends a group when it holds 12 MiB.
	const dir = scratch(t);
	const c = await duck();
	const cols = Array.from({ length: 500 }, (_, x) => `((hash(i * 500 + ${x}) % 1000000) / 64.0)::double as c${x}`).join(", ");
	const csv = join(dir, "wide.csv");
	await c.run(`copy (select ${cols} from range(0, 12000) r(i)) to '${csv}' (header true)`);
	const sums = Array.from({ length: 500 }, (_, x) => `sum(c${x})`).join(" + ");
	const want = Number(await scalar(c, `select ${sums} from read_csv('${csv}')`));
	for (const threads of [1, 2]) {
		const out = join(dir, `wide-${threads}.parquet`);
		const r = spawnSync("/usr/bin/time", ["-f", "%M", join(BIN, "fmt-convert"), "-q", "-f", "-T", String(threads), csv, out],
			{ encoding: "utf8" });
		assert.equal(r.status, 0, r.stderr);
		const kib = Number(r.stderr.trim().split("\n").pop());
		assert.ok(kib <= (32 + threads) * 1024, `-T ${threads}: peak RSS ${kib} KiB, over ${32 + threads} MiB`);
		const info = inspectJson(out);
		assert.equal(info.rows, 12000);
		assert.ok(info.parquet.row_group_count >= 4, `${info.parquet.row_group_count} row groups`);
		assert.equal(Number(await scalar(c, `select count(*) from read_parquet('${out}')`)), 12000);
		assert.equal(Number(await scalar(c, `select ${sums} from read_parquet('${out}')`)), want, `-T ${threads}`);
		assert.equal(Number(await scalar(c, `select count(distinct row_group_id) from parquet_metadata('${out}')`)),
			info.parquet.row_group_count);
	}
});

test("fmtkit writes 4,000 constant BIGINT columns (DuckDB's file) as Parquet within 32 MiB + threads x 8 MiB at -T 1, 2 and 3, the same bytes at each: DuckDB reads every value", async (t) => {
	// The writer held a dictionary-encoded column's values twice, as PLAIN and as indices: 45, 54
	// and 62 MiB here. It now holds the indices only, until a dictionary is given up.
	const dir = scratch(t);
	const c = await duck();
	const n = 4000, rows = 16384;
	const src = join(dir, "wide.parquet");
	const cols = Array.from({ length: n }, (_, x) => `${x}::bigint as c${x}`).join(", ");
	await c.run(`copy (select ${cols} from range(0, ${rows})) to '${src}' (format parquet)`);
	let first;
	for (const threads of [1, 2, 3]) {
		const out = join(dir, `wide-${threads}.parquet`);
		const r = spawnSync("/usr/bin/time", ["-f", "%M", join(BIN, "fmt-convert"), "-q", "-f", "-T", String(threads), src, out],
			{ encoding: "utf8" });
		assert.equal(r.status, 0, r.stderr);
		const kib = Number(r.stderr.trim().split("\n").pop());
		assert.ok(kib <= (32 + 8 * threads) * 1024, `-T ${threads}: peak RSS ${kib} KiB, over ${32 + 8 * threads} MiB`);
		const bytes = readFileSync(out);
		if (first)
			assert.ok(bytes.equals(first), `-T ${threads}: not the bytes of -T 1`);
		first ??= bytes;
	}
	const out = join(dir, "wide-1.parquet");
	const info = inspectJson(out);
	assert.equal(info.rows, rows);
	assert.equal(Number(await scalar(c, `select count(distinct row_group_id) from parquet_metadata('${out}')`)),
		info.parquet.row_group_count);
	assert.ok(info.parquet.row_group_count > 50, `${info.parquet.row_group_count} row groups`);
	assert.equal(Number(await scalar(c, `select count(*) from read_parquet('${out}')`)), rows);
	// every value: column cX holds X in every row
	const r = await c.runAndReadAll(`select count(*), count(*) filter (where v <> substr(k, 2)::bigint)
		from (unpivot (select * from read_parquet('${out}')) on columns(*) into name k value v)`);
	assert.deepEqual(r.getRows()[0].map(Number), [n * rows, 0]);
});

test("fmtkit writes 900 columns whose dictionaries pay, are given up after a few values, or do not pay at the row group's end (DuckDB's file): DuckDB reads the sums and distinct counts of its own", async (t) => {
	// A number column's values are held as dictionary indices while its dictionary is on, and
	// put back as PLAIN when it is given up (mostly distinct values, or dropped to make room in
	// the group) or not used (dictionary and indices larger than PLAIN).
	const dir = scratch(t);
	const c = await duck();
	const n = 900, rows = 20000;
	const src = join(dir, "mixed.parquet");
	const kinds = [(x) => `(i % 50 + ${x})::bigint`, (x) => `(hash(i * 1000 + ${x}) % 1000000)::bigint`,
		(x) => `(i * 7 // 10 + ${x})::integer`];
	const cols = Array.from({ length: n }, (_, x) => `${kinds[x % 3](x)} as c${x}`).join(", ");
	await c.run(`copy (select ${cols} from range(0, ${rows}) r(i)) to '${src}' (format parquet)`);
	const agg = (f) => `select ${Array.from({ length: n }, (_, x) => `sum(c${x})::hugeint * ${x + 1}`).join(" + ")},
		${Array.from({ length: n }, (_, x) => `count(distinct c${x})`).join(" + ")} from read_parquet('${f}')`;
	const want = (await c.runAndReadAll(agg(src))).getRows()[0].map(String);
	for (const threads of [1, 2]) {
		const out = join(dir, `mixed-${threads}.parquet`);
		convert(src, out, "-T", String(threads));
		const info = inspectJson(out);
		assert.equal(info.rows, rows);
		assert.ok(info.parquet.row_group_count >= 2, `${info.parquet.row_group_count} row groups`);
		const got = (await c.runAndReadAll(agg(out))).getRows()[0].map(String);
		assert.deepEqual(got, want, `-T ${threads}`);
		// dictionary-encoded chunks and PLAIN ones both
		const encs = (await c.runAndReadAll(`select distinct encodings from parquet_metadata('${out}')`)).getRows().map(String).sort();
		assert.ok(encs.length >= 2, `encodings: ${encs}`);
	}
});

test("DuckDB's one row group of 300,000 rows of 12 nullable columns, each chunk ONE SNAPPY or LZ4_RAW page (v1) -> CSV: within 32 MiB + threads x 8 MiB at -T 1 and 2 (was 41 and 60 MiB), DuckDB's sums and null counts", async (t) => {
	// Each column held its page decompressed whole (2 MB here) for the batches it spans. A page
	// over 256 KiB, while other columns hold such pages, is now read from a temporary file.
	const dir = scratch(t);
	const c = await duck();
	const dbl = Array.from({ length: 8 }, (_, x) => `case when (i + ${x}) % 7 = 0 then null else (i * ${x + 1}) / 3.0 end::double as d${x}`);
	const big = Array.from({ length: 4 }, (_, x) => `case when i % 5 = ${x} then null else (i % 3000)::bigint end as k${x}`);
	const names = [...dbl, ...big].map((s) => s.split(" as ").pop());
	const agg = (from) => `select ${names.map((n) => `sum(${n})::double, count(${n})`).join(", ")} from ${from}`;
	for (const codec of ["snappy", "lz4_raw"]) {
		const src = join(dir, `${codec}.parquet`);
		await c.run(`copy (select ${[...dbl, ...big].join(", ")} from range(0, 300000) r(i)) to '${src}'
			(format parquet, compression ${codec}, parquet_version V1, row_group_size 300000)`);
		const want = (await c.runAndReadAll(agg(`read_parquet('${src}')`))).getRows()[0].map(Number);
		for (const threads of [1, 2]) {
			const csv = join(dir, `${codec}-${threads}.csv`);
			const r = spawnSync("/usr/bin/time", ["-f", "%M", join(BIN, "fmt-convert"), "-q", "-f", "-T", String(threads), src, csv],
				{ encoding: "utf8" });
			assert.equal(r.status, 0, r.stderr);
			const kib = Number(r.stderr.trim().split("\n").pop());
			assert.ok(kib <= (32 + 8 * threads) * 1024, `${codec} -T ${threads}: peak RSS ${kib} KiB, over ${32 + 8 * threads} MiB`);
			const got = (await c.runAndReadAll(agg(`read_csv('${csv}', header = true)`))).getRows()[0].map(Number);
			for (let i = 0; i < want.length; i++)
				assert.ok(Math.abs(got[i] - want[i]) <= 1e-9 * Math.abs(want[i]), `${codec} -T ${threads}: ${i}: ${got[i]}, DuckDB's ${want[i]}`);
		}
	}
});
