// Runs one SQL statement in DuckDB (@duckdb/node-api) on N threads: the peer of fmtkit's dataset
// conversions in scripts/bench/bench-dataset. Usage: node duck_sql.mjs THREADS SQL
import { DuckDBInstance } from "@duckdb/node-api";

const [threads, sql] = process.argv.slice(2);
const db = await DuckDBInstance.create(":memory:", { threads: String(threads) });
const c = await db.connect();
await c.run(sql);
