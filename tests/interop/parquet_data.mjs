// Writes the small DuckDB-made Parquet files of tests/data/parquet/ (the bats tests read them
// without Node): every type fmtkit converts, with nulls, over two row groups, in each page
// version and codec, with and without dictionaries; a decimal column for the refusal, list
// columns (lists-*.parquet). Run from tests/interop: node parquet_data.mjs. parquet.test.mjs checks that what
// fmtkit reads from them equals what DuckDB reads.
import { DuckDBInstance } from "@duckdb/node-api";
import { join } from "node:path";
import { REPO } from "./lib.mjs";

export const DATA = join(REPO, "tests/data/parquet");

// 2100 rows: DuckDB cuts row groups at 2048 rows at the least, so two row groups.
export const TYPES_SQL = `select i::integer as id,
  case when i % 7 = 0 then null else (i * 37) % 1000 - 500 end::bigint as big,
  (i % 100)::tinyint as tiny, (i % 30000 - 15000)::smallint as small,
  (i % 200)::utinyint as ut, (i * 3)::usmallint as us, (i * 11)::uinteger as ui,
  (i * 1000003)::ubigint as ub,
  case when i % 5 = 0 then null else i / 3.0 end::double as dbl, (i / 7.0)::float as flt,
  case when i % 11 = 0 then null else i % 2 = 0 end as flag,
  case when i % 3 = 0 then null else 'name_' || (i % 50) end as name,
  case when i % 4 = 0 then null else ('x' || i)::blob end as bin,
  (date '2020-01-01' + (i % 400)::integer) as day,
  (timestamp '2021-03-04 05:06:07.123456' + to_seconds(i)) as ts,
  (timestamptz '2021-03-04 05:06:07.123456+00' + to_seconds(i * 60)) as tstz,
  (timestamp '2021-03-04 05:06:07' + to_seconds(i))::timestamp_ms as tsms,
  (timestamp '2021-03-04 05:06:07' + to_seconds(i))::timestamp_ns as tsns
  from range(0, 2100) r(i)`;

// [file, COPY options, rows]: the v2 files hold every row (two row groups), the v1 files, larger
// per row, the first 300.
export const FILES = [
	["types-v2-zstd.parquet", "compression zstd, parquet_version V2", 2100],
	["types-v2-lz4raw.parquet", "compression lz4_raw, parquet_version V2", 2100],
	["types-v1-snappy.parquet", "compression snappy, parquet_version V1", 300],
	["types-v1-gzip-nodict.parquet", "compression gzip, parquet_version V1, dictionary_size_limit 1", 300],
	["types-v1-none.parquet", "compression uncompressed, parquet_version V1", 300],
];

// List columns (issue: Hugging Face embeddings): FLOAT[4] (DuckDB's ARRAY), FLOAT[] of one
// length, INTEGER[] with a null row and a null element, DOUBLE[]; fmtkit reads each as a
// fixed_size_list. [file, COPY options].
export const LISTS_SQL = `select i::integer as id,
  [i::float, i + 0.5, -i, 1.25]::float[4] as emb,
  [i / 4, 2.5]::float[] as f,
  case when i = 2 then null else [i, case when i = 3 then null else i * 10 end, 7] end::integer[] as l,
  [i * 1.5, -i]::double[] as d
  from range(0, 5) r(i)`;
export const LIST_FILES = [
	["lists-v1.parquet", "compression snappy, parquet_version V1"],
	["lists-v2.parquet", "compression zstd, parquet_version V2"],
];

// The logical types fmtkit reads as text: DECIMAL on INT32, INT64 and a fixed-length array
// (with the widest values), TIME in us, UTC-adjusted (DuckDB's TIMETZ) and in ns (with
// 00:00:00 and 24:00:00), UUID and INTERVAL, each with nulls. (TIMETZ's offset is +00: Parquet keeps
// the instant, not the offset.)
export const LOGICAL_SQL = `select i::integer as id,
  case when i = 1 then null else (i % 80 * 12.34 - 50)::decimal(4, 1) end as d4,
  (i * 1234567.891 - 99999)::decimal(18, 3) as d18,
  case i when 0 then '9999999999999999999999999999.9999999999'::decimal(38, 10)
    when 1 then '-9999999999999999999999999999.9999999999'::decimal(38, 10)
    when 2 then null else (i * -0.0000000001)::decimal(38, 10) end as d38,
  case i when 0 then '00:00:00'::time when 1 then '24:00:00'::time when 2 then null
    else '23:59:59.999999'::time - to_seconds(i) end as t,
  case when i = 3 then null else ('05:06:07.5+00'::timetz + to_seconds(i * 3661)) end as tz,
  case when i = 4 then null else ('13:14:15.123456789'::time_ns) end as tns,
  case when i = 5 then null else ('0badf00d-0000-4000-8000-' || lpad((i * 1234567)::varchar, 12, 'f'))::uuid end as u,
  case i when 0 then interval 0 seconds when 1 then null
    else to_months(i * 7) + to_days(i * 2) + to_milliseconds(i % 1000 * 3723004) end as iv
  from range(0, 6) r(i)`;

export async function writeLogicalFile(c) {
	await c.run(`copy (${LOGICAL_SQL}) to '${join(DATA, "logical.parquet")}' (format parquet)`);
}

export async function writeListFiles(c) {
	for (const [name, opts] of LIST_FILES)
		await c.run(`copy (${LISTS_SQL}) to '${join(DATA, name)}' (format parquet, ${opts})`);
}

export async function duck() {
	const db = await DuckDBInstance.create(":memory:");
	const c = await db.connect();
	await c.run("SET threads = 1; SET TimeZone = 'UTC'");
	return c;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const c = await duck();
	await c.run(`create table t as ${TYPES_SQL}`);
	for (const [name, opts, rows] of FILES)
		await c.run(`copy (select * from t where id < ${rows} order by id) to '${join(DATA, name)}' (format parquet, row_group_size 2048, ${opts})`);
	await c.run(`copy (select i::integer as id, (i / 100.0)::decimal(10, 2) as price, [i, i + 1] as pair,
		['t' || i] as tags from range(0, 5) r(i)) to '${join(DATA, "decimal-list.parquet")}' (format parquet)`);
	await writeListFiles(c);
	await writeLogicalFile(c);
}
