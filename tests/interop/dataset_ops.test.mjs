// The dataset operations (issue 24) against DuckDB's SQL on the same rows: fmt-convert --where,
// --sort, --rows, --dedupe, --sample, --shuffle; fmt-shard split (disjoint parts whose union is
// the input, the same seed the same split) and merge; fmt-inspect --quality against DuckDB's
// aggregates. fmtkit's outputs go back through fmt-convert to JSON Lines; DuckDB's rows are
// compared value for value.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { convert, scratch, prng, tool, inspectJson } from "./lib.mjs";

const ROWS = 3000;
const COLS = "id, name, score, grp, ok";
const TYPES = "{'id': 'BIGINT', 'name': 'VARCHAR', 'score': 'DOUBLE', 'grp': 'VARCHAR', 'ok': 'BOOLEAN'}";

/* The input: ids in file order, names with nulls and a comma, scores with nulls and repeats,
 * three groups of unequal size, booleans. */
function inputCsv(rows) {
	const rnd = prng(24);
	const lines = ["id,name,score,grp,ok"];
	for (let i = 0; i < rows; i++) {
		const name = i % 11 === 5 ? "" : `"n${Math.floor(rnd() * 500)}, x"`;
		const score = i % 13 === 7 ? "" : (Math.round((rnd() - 0.3) * 2000) / 8).toString();
		const grp = ["a", "b", "b", "c", "c", "c"][Math.floor(rnd() * 6)];
		lines.push(`${i},${name},${score.includes(".") || score === "" ? score : score + ".0"},${grp},${rnd() < 0.4}`);
	}
	return lines.join("\n") + "\n";
}

const norm = (v) => (v === null || v === undefined ? null : String(v));
const key = (r) => JSON.stringify(r);

/* Rows of a table file, through fmt-convert to JSON Lines, each an array of text values. */
function fmtRows(dir, file) {
	const out = join(dir, "rows.jsonl");
	convert(file, out);
	return readFileSync(out, "utf8").split("\n").filter(Boolean)
		.map((l) => Object.values(JSON.parse(l)).map(norm));
}

async function duck() {
	const db = await DuckDBInstance.create(":memory:");
	const c = await db.connect();
	return {
		rows: async (sql) => (await c.runAndReadAll(sql)).getRowsJson().map((r) => r.map(norm)),
		one: async (sql) => (await c.runAndReadAll(sql)).getRowsJson()[0],
	};
}

const multiset = (rows) => rows.map(key).sort();

async function setup(t) {
	const dir = scratch(t);
	const csv = join(dir, "in.csv");
	writeFileSync(csv, inputCsv(ROWS));
	const db = await duck();
	await db.rows(`CREATE TABLE t AS SELECT * FROM read_csv('${csv}', header = true, columns = ${TYPES})`);
	return { dir, csv, db };
}

test("--where equals DuckDB's WHERE, typed, from and to every table format", async (t) => {
	const { dir, csv, db } = await setup(t);
	const cases = [
		[["score > 10.5"], "score > 10.5"],
		[["score <= -3", "ok = true"], "score <= -3 AND ok = true"],
		[["name is null"], "name IS NULL"],
		[["name is not null", "grp != b"], "name IS NOT NULL AND grp <> 'b'"],
		[["id >= 2990"], "id >= 2990"],
		[["name = 'n7, x'"], "name = 'n7, x'"],
		[["name < 'n2'"], "name < 'n2'"],
		[["id < 100", "id > 10"], "id < 100 AND id > 10"],
	];
	for (const ext of ["csv", "jsonl", "arrow", "ald"]) {
		const input = join(dir, `in.${ext}`);
		if (ext !== "csv") convert(csv, input);
		for (const [wheres, sql] of cases) {
			const out = join(dir, `w.${ext}`);
			convert(input, out, ...wheres.flatMap((w) => ["--where", w]));
			const want = await db.rows(`SELECT ${COLS} FROM t WHERE ${sql} ORDER BY id`);
			assert.deepEqual(fmtRows(dir, out), want, `${ext}: ${sql}`);
			assert.ok(want.length > 0, sql);
		}
	}
});

test("--sort (stable, nulls last), --rows, --dedupe equal ORDER BY, LIMIT/OFFSET, DISTINCT", async (t) => {
	const { dir, csv, db } = await setup(t);
	const out = join(dir, "s.arrow");
	for (const [args, sql] of [
		[["--sort", "score:desc"], "ORDER BY score DESC NULLS LAST, id"],
		[["--sort", "grp", "--sort", "score"], "ORDER BY grp, score NULLS LAST, id"],
		[["--sort", "name:desc", "--memory", "4KB"], "ORDER BY name DESC NULLS LAST, id"],
		[["--sort", "ok", "--rows", "100:150"], "ORDER BY ok, id LIMIT 50 OFFSET 100"],
		[["--where", "grp = c", "--rows", ":7"], "WHERE grp = 'c' ORDER BY id LIMIT 7"],
	]) {
		convert(csv, out, ...args);
		assert.deepEqual(fmtRows(dir, out), await db.rows(`SELECT ${COLS} FROM t ${sql}`), args.join(" "));
	}
	// --dedupe: whole rows (the data doubled), then the first row of each group
	const doubled = join(dir, "doubled.csv");
	writeFileSync(doubled, readFileSync(csv, "utf8") + readFileSync(csv, "utf8").split("\n").slice(1).join("\n"));
	convert(doubled, out, "--dedupe");
	assert.deepEqual(multiset(fmtRows(dir, out)), multiset(await db.rows(`SELECT DISTINCT ${COLS} FROM t`)));
	convert(csv, out, "--dedupe-on", "grp", "--dedupe-on", "ok");
	assert.deepEqual(fmtRows(dir, out), await db.rows(
		`SELECT ${COLS} FROM t QUALIFY row_number() OVER (PARTITION BY grp, ok ORDER BY id) = 1 ORDER BY id`));
});

test("--sample and --shuffle: subsets and permutations of the input, the same for the same seed", async (t) => {
	const { dir, csv, db } = await setup(t);
	const all = new Set(multiset(await db.rows(`SELECT ${COLS} FROM t`)));
	const run = (...args) => {
		const out = join(dir, "x.jsonl");
		convert(csv, out, ...args);
		return fmtRows(dir, out);
	};
	const a = run("--sample", "200", "--seed", "5"), b = run("--sample", "200", "--seed", "5", "--memory", "2KB");
	assert.equal(a.length, 200);
	assert.deepEqual(a, b);
	assert.ok(a.every((r) => all.has(key(r))));
	assert.deepEqual(a.map((r) => Number(r[0])), a.map((r) => Number(r[0])).sort((x, y) => x - y)); // input order
	assert.notDeepEqual(run("--sample", "200", "--seed", "6"), a);
	const f = run("--sample", "0.1", "--seed", "1");
	assert.ok(Math.abs(f.length - 300) < 5 * Math.sqrt(3000 * 0.1 * 0.9), `${f.length} rows`);
	assert.ok(f.every((r) => all.has(key(r))));
	const s = run("--shuffle", "--seed", "3");
	assert.deepEqual(multiset(s), [...all].sort());
	assert.deepEqual(run("--shuffle", "--seed", "3", "--memory", "8KB"), s);
	assert.notDeepEqual(s.map((r) => r[0]), [...Array(ROWS).keys()].map(String));
});

test("fmt-shard split: disjoint parts whose union is the input, exact fractions, stratified, repeatable; merge restores the rows", async (t) => {
	const { dir, csv, db } = await setup(t);
	const split = (out, ...args) => tool("fmt-shard", ["split", csv, "-o", join(dir, out), "--quiet", ...args]);
	split("s1", "--fractions", "0.8,0.1,0.1", "--seed", "42");
	split("s2", "--fractions", "0.8,0.1,0.1", "--seed", "42");
	split("s3", "--fractions", "0.5,0.5", "--seed", "42", "--stratify", "grp", "--rows", "700");
	const part = (d, name) => `read_csv('${join(dir, d, name)}', header = true, columns = ${TYPES})`;
	for (const name of ["train.csv", "validation.csv", "test.csv"])
		assert.equal(readFileSync(join(dir, "s1", name), "utf8"), readFileSync(join(dir, "s2", name), "utf8"));
	const counts = await db.rows(`SELECT (SELECT count(*) FROM ${part("s1", "train.csv")}),
		(SELECT count(*) FROM ${part("s1", "validation.csv")}), (SELECT count(*) FROM ${part("s1", "test.csv")})`);
	assert.deepEqual(counts[0], ["2400", "300", "300"]);
	const union = `SELECT * FROM ${part("s1", "train.csv")} UNION ALL SELECT * FROM ${part("s1", "validation.csv")}
		UNION ALL SELECT * FROM ${part("s1", "test.csv")}`;
	assert.deepEqual(await db.rows(`SELECT count(*) FROM ((${union}) EXCEPT ALL SELECT * FROM t)`), [["0"]]);
	assert.deepEqual(await db.rows(`SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL (${union}))`), [["0"]]);
	// stratified: each group halved (an odd group's extra row to train or test), the parts the
	// unstratified halves, in files of at most 700 rows
	const files = readdirSync(join(dir, "s3")).sort();
	const glob = (p) => `read_csv('${join(dir, "s3", p)}-*.csv', header = true, columns = ${TYPES})`;
	const byGroup = await db.rows(`SELECT grp, count(*) n,
		(SELECT count(*) FROM ${glob("train")} tr WHERE tr.grp = t.grp) FROM t GROUP BY grp ORDER BY grp`);
	let trainRows = 0, rows = 0;
	for (const [g, n, train] of byGroup) {
		assert.ok([Math.floor(Number(n) / 2), Math.ceil(Number(n) / 2)].includes(Number(train)), `group ${g}`);
		trainRows += Number(train);
		rows += Number(n);
	}
	assert.equal(trainRows, Math.ceil(rows / 2));
	assert.ok(files.every((f) => /^(train|test)-0000\d-of-0000\d\.csv$/.test(f)), files.join(" "));
	// merge (concat) of the parts: the input's rows
	const merged = join(dir, "merged.ald");
	tool("fmt-shard", ["concat", ...files.map((f) => join(dir, "s3", f)), "-o", merged, "--quiet"]);
	assert.deepEqual(multiset(fmtRows(dir, merged)), multiset(await db.rows(`SELECT ${COLS} FROM t`)));
});

test("fmt-inspect --quality equals DuckDB's count, count(DISTINCT), min, max, avg, stddev_samp and quantile_disc", async (t) => {
	const { dir, csv, db } = await setup(t);
	const doubled = join(dir, "doubled.csv");
	writeFileSync(doubled, readFileSync(csv, "utf8") + readFileSync(csv, "utf8").split("\n").slice(1, 101).join("\n") + "\n");
	await db.rows(`CREATE TABLE d AS SELECT * FROM read_csv('${doubled}', header = true, columns = ${TYPES})`);
	const q = inspectJson(doubled, "--quality");
	assert.equal(q.rows, ROWS + 100);
	const [distinctRows] = (await db.rows(`SELECT count(*) FROM (SELECT DISTINCT * FROM d)`))[0];
	assert.equal(q.duplicate_rows, ROWS + 100 - Number(distinctRows));
	for (const c of q.columns) {
		const [nulls, distinct] = (await db.rows(`SELECT count(*) - count(${c.name}), count(DISTINCT ${c.name}) FROM d`))[0];
		assert.equal(c.nulls, Number(nulls), c.name);
		assert.equal(c.distinct, Number(distinct), c.name);
		assert.equal(c.distinct_exact, true);
	}
	for (const name of ["id", "score"]) {
		const c = q.columns.find((x) => x.name === name);
		const [min, max, mean, std, p1, p50, p99] = (await db.rows(`SELECT min(${name}), max(${name}), avg(${name}),
			stddev_samp(${name}), quantile_disc(${name}, 0.01), quantile_disc(${name}, 0.5),
			quantile_disc(${name}, 0.99) FROM d`))[0].map(Number);
		assert.deepEqual([c.min, c.max, c.p1, c.p50, c.p99], [min, max, p1, p50, p99], name);
		assert.ok(Math.abs(c.mean - mean) <= 1e-9 * Math.abs(mean) + 1e-12, `${name} mean ${c.mean} ${mean}`);
		assert.ok(Math.abs(c.std - std) <= 1e-9 * std, `${name} std ${c.std} ${std}`);
	}
});

test("--where on DuckDB's Parquet of many row groups (skipped by their statistics) equals DuckDB's WHERE", async (t) => {
	const { dir, db } = await setup(t);
	const pq = join(dir, "groups.parquet");
	await db.rows(`COPY (SELECT * FROM t ORDER BY id) TO '${pq}' (FORMAT parquet, ROW_GROUP_SIZE 256)`);
	const cases = [
		[["id >= 2990"], "id >= 2990"],
		[["id < 100", "id > 10"], "id < 100 AND id > 10"],
		[["id = 1500"], "id = 1500"],
		[["score > 10.5", "id <= 700"], "score > 10.5 AND id <= 700"],
		[["name is null", "id < 900"], "name IS NULL AND id < 900"],
		[["name < 'n2'"], "name < 'n2'"],
	];
	for (const [wheres, sql] of cases) {
		const out = join(dir, "w.csv");
		convert(pq, out, ...wheres.flatMap((w) => ["--where", w]));
		const want = await db.rows(`SELECT ${COLS} FROM t WHERE ${sql} ORDER BY id`);
		assert.deepEqual(fmtRows(dir, out), want, `parquet: ${sql}`);
		assert.ok(want.length > 0, sql);
	}
});

test("a CSV that starts with a UTF-8 byte order mark (Excel's CSV UTF-8): DuckDB's column names and rows", async (t) => {
	const { dir, db } = await setup(t);
	const csv = join(dir, "excel.csv");
	writeFileSync(csv, "\uFEFF" + inputCsv(200).replaceAll("\n", "\r\n"));
	const names = (await db.rows(`DESCRIBE SELECT * FROM read_csv('${csv}', header = true)`)).map((r) => r[0]);
	assert.deepEqual(inspectJson(csv).schema.fields.map((f) => f.name), names);
	assert.equal(names[0], "id");
	const want = await db.rows(`SELECT ${COLS} FROM read_csv('${csv}', header = true, columns = ${TYPES}) ORDER BY id`);
	assert.deepEqual(fmtRows(dir, csv), want);
	assert.equal(want.length, 200);
});
