// The ONNX Runtime side of scripts/bench/bench-nk-run: N timed runs of an ONNX model on one
// thread after warm-up, on a random input (NCHW float32); prints one JSON line with the median.
import { session } from "./nk_ort.mjs";
import * as ort from "onnxruntime-node";

const [path, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 1000);
const s = await session(path);
const shape = s.inputMetadata[0].shape.map((d) => (typeof d === "number" ? d : 1));
const len = shape.reduce((a, b) => a * b, 1);
let seed = 1;
const data = Float32Array.from({ length: len }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32));
const feeds = { [s.inputNames[0]]: new ort.Tensor("float32", data, shape) };
for (let i = 0; i < Math.min(n, 10); i++) await s.run(feeds);
const t = [];
for (let i = 0; i < n; i++) {
	const t0 = process.hrtime.bigint();
	await s.run(feeds);
	t.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
t.sort((a, b) => a - b);
console.log(JSON.stringify({ runs: n, min_ms: t[0], median_ms: t[(n - 1) >> 1], p99_ms: t[Math.ceil(0.99 * n) - 1] }));
