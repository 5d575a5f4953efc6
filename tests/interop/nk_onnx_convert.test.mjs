// fmt-convert MODEL.onnx OUT.nk against ONNX Runtime: nk_onnx_gen.py writes one small ONNX graph
// per supported op and fusion (python3-onnx); each is converted, and nk-run on the .nk agrees with
// onnxruntime on the .onnx for 100 random inputs within 1e-5 absolute (issue 22).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, tool, convert, prng } from "./lib.mjs";
import { session, runNk } from "./nk_ort.mjs";

const DIR = mkdtempSync(join(tmpdir(), "fmtkit-onnx-"));
process.on("exit", () => { if (!process.env.FMTKIT_KEEP_SCRATCH) rmSync(DIR, { recursive: true, force: true }); });
execFileSync("/usr/bin/python3", [join(REPO, "tests/interop/nk_onnx_gen.py"), DIR]);
const CASES = JSON.parse(readFileSync(join(DIR, "cases.json"), "utf8"));

for (const [name, shape] of Object.entries(CASES)) {
	test(`fmt-convert ${name}.onnx: nk-run equals onnxruntime on 100 random inputs (1e-5)`, async (t) => {
		const onnx = join(DIR, `${name}.onnx`), nk = join(DIR, `${name}.nk`);
		convert(onnx, nk);
		const s = await session(onnx);
		const rand = prng(2200 + name.length);
		const n = shape.reduce((a, b) => a * b, 1);
		let worst = 0;
		for (let i = 0; i < 100; i++) {
			const x = Float32Array.from({ length: n }, () => rand() * 2 - 1);
			const f = join(DIR, `${name}.in.f32`);
			writeFileSync(f, Buffer.from(x.buffer));
			const got = JSON.parse(tool("nk-run", ["--json", "--input-file", f, nk]).stdout).values;
			const want = await runNk(s, x, shape.length === 1 ? [1, shape[0]] : shape);
			assert.equal(got.length, want.length, `${name}: output length`);
			for (let k = 0; k < want.length; k++) {
				const d = Math.abs(got[k] - want[k]);
				worst = Math.max(worst, d);
				assert.ok(d <= 1e-5, `${name} input ${i} output ${k}: nk-run ${got[k]} vs onnxruntime ${want[k]}`);
			}
		}
		t.diagnostic(`${name}: largest difference ${worst.toExponential(2)}`);
	});
}
