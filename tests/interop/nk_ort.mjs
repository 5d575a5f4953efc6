// ONNX Runtime (onnxruntime-node, CPU, one thread) as the independent reference for .nk
// networks with an ONNX twin: the twins take NCHW, the .nk files NHWC.
import * as ort from "onnxruntime-node";

export async function session(path) {
	return ort.InferenceSession.create(path, {
		intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: "sequential",
	});
}

/* NHWC [h, w, c] values to NCHW (batch 1). */
export function toNCHW(v, h, w, c) {
	const out = new Float32Array(v.length);
	for (let y = 0; y < h; y++)
		for (let x = 0; x < w; x++)
			for (let k = 0; k < c; k++) out[(k * h + y) * w + x] = v[(y * w + x) * c + k];
	return out;
}

/* Run the session on one input given in .nk order; returns the output in .nk order
 * (NCHW [1, c, h, w] outputs back to NHWC). */
export async function runNk(s, nhwc, shape) {
	const meta = s.inputMetadata[0].shape;
	let data = Float32Array.from(nhwc);
	if (meta.length === 4) data = toNCHW(data, shape[0], shape[1], shape[2]);
	const r = await s.run({ [s.inputNames[0]]: new ort.Tensor("float32", data, meta) });
	const t = r[s.outputNames[0]];
	if (t.dims.length !== 4) return Array.from(t.data);
	const [, c, h, w] = t.dims;
	const out = new Array(t.data.length);
	for (let k = 0; k < c; k++)
		for (let y = 0; y < h; y++)
			for (let x = 0; x < w; x++) out[(y * w + x) * c + k] = t.data[(k * h + y) * w + x];
	return out;
}
