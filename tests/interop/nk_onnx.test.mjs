// nk-run against ONNX Runtime: every .nk fixture with an ONNX twin, 100 random inputs each,
// outputs equal within 1e-4 absolute (issue 11). Inputs go to nk-run as raw float32 files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO, tool, scratch, prng } from "./lib.mjs";
import { session, runNk } from "./nk_ort.mjs";

const FIX = join(REPO, "tests/data/fixtures/nk");
const TWINS = [
	["test_mlp", [1, 2], 4],
	["import_asym_depthwise_conv", [6, 6, 2], 2],
	["mnist_cnn_dw", [28, 28, 1], 1],
];

for (const [name, shape, scale] of TWINS) {
	test(`nk-run ${name}.nk equals onnxruntime on 100 random inputs (1e-4)`, async (t) => {
		const dir = scratch(t);
		const s = await session(join(FIX, `${name}.onnx`));
		const rand = prng(1100 + name.length);
		const n = shape.reduce((a, b) => a * b, 1);
		let worst = 0;
		for (let i = 0; i < 100; i++) {
			// MNIST-like [0, 1) for the image model, signed values of a few units elsewhere
			const x = Float32Array.from({ length: n }, () => name === "mnist_cnn_dw" ? rand() : (rand() * 2 - 1) * scale);
			const f = join(dir, `in${i}.f32`);
			writeFileSync(f, Buffer.from(x.buffer));
			const r = tool("nk-run", ["--json", "--input-file", f, join(FIX, `${name}.nk`)]);
			const got = JSON.parse(r.stdout).values;
			const want = await runNk(s, x, shape);
			assert.equal(got.length, want.length, `${name}: output length`);
			for (let k = 0; k < want.length; k++) {
				const d = Math.abs(got[k] - want[k]);
				worst = Math.max(worst, d);
				assert.ok(d <= 1e-4, `${name} input ${i} output ${k}: nk-run ${got[k]} vs onnxruntime ${want[k]}`);
			}
		}
		t.diagnostic(`${name}: largest difference ${worst.toExponential(2)}`);
	});
}
