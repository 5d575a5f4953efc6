// The YOLOX layers (yolox_decoupled_head, feature_tap, yolox_pafpn_multiscale) against ONNX
// Runtime: nk_yolox_gen.py writes small generated models (and their weights as JSON); this file
// builds each one's ONNX graph from specs/nk.md §11.12 with standard operators (Conv, Sigmoid,
// Mul, Add, Resize nearest, Concat, Transpose, Reshape) — independent of nk-run's code and of
// nkgen.py's NumPy forward pass — and compares nk-run with onnxruntime on 100 random inputs
// per model, within 1e-4 absolute.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { REPO, tool, scratch, prng } from "./lib.mjs";
import { runNk } from "./nk_ort.mjs";
import { Graph, INT64 } from "./onnx_proto.mjs";

/** NHWC-ordered .nk conv weights [O, K, K, I] as ONNX's [O, I, K, K]. */
function ohwiToOihw(w, [O, K, K2, I]) {
	const out = new Array(w.length);
	for (let o = 0; o < O; o++)
		for (let y = 0; y < K; y++)
			for (let x = 0; x < K2; x++)
				for (let i = 0; i < I; i++) out[((o * I + i) * K + y) * K2 + x] = w[((o * K + y) * K2 + x) * I + i];
	return out;
}

/** The ONNX network for one generated model (desc: nk_yolox_gen.py's JSON). */
function buildOnnx(desc) {
	const g = new Graph("nk_yolox");
	const P = desc.pairs;
	const [h, w, c] = desc.input_shape;
	const x = g.input("x", [1, c, h, w]);
	const conv = (z, pair, { k = 1, stride = 1, pad = 0, depthwise = false } = {}) => {
		const s = P[pair].w_shape;
		const W = depthwise ? g.init([s[0], 1, s[1], s[2]], P[pair].w) : g.init([s[0], s[3], s[1], s[2]], ohwiToOihw(P[pair].w, s));
		const B = g.init([P[pair].b.length], P[pair].b);
		return g.node("Conv", [z, W, B], { kernel_shape: [k, k], strides: [stride, stride], pads: [pad, pad, pad, pad],
			group: depthwise ? s[0] : 1 });
	};
	const silu = (z) => g.node("Mul", [z, g.node("Sigmoid", [z])]);
	// stem = SiLU(1x1); cls and reg branches of `convs` SiLU(3x3 pad 1) from the stem;
	// predictions 1x1 without activation; channels [reg0..3, obj, cls...]
	const head = (z, p, convs) => {
		const stem = silu(conv(z, p));
		let cls = stem, reg = stem;
		for (let i = 0; i < convs; i++) cls = silu(conv(cls, p + 1 + i, { k: 3, pad: 1 }));
		for (let i = 0; i < convs; i++) reg = silu(conv(reg, p + 1 + convs + i, { k: 3, pad: 1 }));
		const clsPred = conv(cls, p + 1 + 2 * convs), regPred = conv(reg, p + 2 + 2 * convs), obj = conv(reg, p + 3 + 2 * convs);
		return g.node("Concat", [regPred, obj, clsPred], { axis: 1 });
	};
	const S = desc.settings;
	if (S.kind === "head") {
		g.output(head(x, 0, S.convs), [1, 5 + S.nc, h, w]);
	} else {
		const scales = g.init([4], [1, 1, 2, 2]);
		const up2 = (z) => g.node("Resize", [z, "", scales], { mode: "nearest", coordinate_transformation_mode: "asymmetric",
			nearest_mode: "floor" });
		const dwpw = (z, stride, j) => silu(conv(conv(z, 5 + 2 * j, { k: 3, stride, pad: 1, depthwise: true }), 6 + 2 * j));
		const c4 = g.node("Relu", [conv(x, 0, { k: 3, stride: 2, pad: 1 })]); // feature_tap 0 is x itself
		const c5 = g.node("Relu", [conv(c4, 1, { k: 3, stride: 2, pad: 1 })]); // feature_tap 1 is c4
		const l3 = conv(x, 2), l4 = conv(c4, 3), l5 = conv(c5, 4);
		const p4 = dwpw(g.node("Add", [l4, up2(l5)]), 1, 0);
		const p3 = dwpw(g.node("Add", [l3, up2(p4)]), 1, 1);
		const n4 = g.node("Add", [dwpw(p3, 2, 2), p4]);
		const n5 = g.node("Add", [dwpw(n4, 2, 3), l5]);
		const hs = 4 + 2 * S.convs; // pairs per head (§9: stem, 2n convs, 3 predictions)
		const flat = g.init([2], [1, -1], INT64);
		const nhwc = (z) => g.node("Reshape", [g.node("Transpose", [z], { perm: [0, 2, 3, 1] }), flat]);
		const outs = [p3, n4, n5].map((z, i) => nhwc(head(z, 13 + i * hs, S.convs)));
		const h5 = h / 4, w5 = w / 4;
		g.output(g.node("Concat", outs, { axis: 1 }), [1, 21 * h5 * w5 * (5 + S.nc)]);
	}
	return g.encode();
}

const dir = scratch({ after });
execFileSync("/usr/bin/python3", [join(REPO, "tests/interop/nk_yolox_gen.py"), dir]);

for (const name of ["yolox_head", "yolox_head_noconv", "yolox_pafpn"]) {
	test(`nk-run ${name} (generated) equals onnxruntime on an ONNX graph built from the spec, 100 random inputs (1e-4)`,
		async (t) => {
			const desc = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
			const s = await ort.InferenceSession.create(buildOnnx(desc), { intraOpNumThreads: 1, interOpNumThreads: 1 });
			const shape = desc.input_shape, n = shape.reduce((a, b) => a * b, 1);
			const rand = prng(4100 + name.length);
			let worst = 0, largest = 0;
			for (let i = 0; i < 100; i++) {
				const x = Float32Array.from({ length: n }, () => (rand() * 2 - 1) * 2);
				const f = join(dir, `${name}.${i}.f32`);
				writeFileSync(f, Buffer.from(x.buffer));
				const got = JSON.parse(tool("nk-run", ["--json", "--input-file", f, join(dir, `${name}.nk`)]).stdout).values;
				const want = await runNk(s, x, shape);
				assert.equal(got.length, want.length, `${name}: output length`);
				for (let k = 0; k < want.length; k++) {
					const d = Math.abs(got[k] - want[k]);
					worst = Math.max(worst, d);
					largest = Math.max(largest, Math.abs(want[k]));
					assert.ok(d <= 1e-4, `${name} input ${i} output ${k}: nk-run ${got[k]} vs onnxruntime ${want[k]}`);
				}
			}
			assert.ok(largest > 0.1, `${name}: outputs are not all near zero (largest ${largest})`);
			t.diagnostic(`${name}: ${desc.pairs.length} pairs, largest difference ${worst.toExponential(2)}, largest |output| ${largest.toFixed(3)}`);
		});
}

test("tests/data/nk holds nk_yolox_gen.py's models byte for byte (the unit tests run those copies)", () => {
	for (const name of ["yolox_head", "yolox_pafpn"])
		assert.ok(readFileSync(join(dir, `${name}.nk`)).equals(readFileSync(join(REPO, "tests/data/nk", `${name}.nk`))),
			`${name}.nk differs from the generator's output`);
});
