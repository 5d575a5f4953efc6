#!/usr/bin/python3
"""The types fmt-convert quantizes to since issue 23 (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
Q6_K, IQ4_NL, IQ4_XS): what fmt-convert writes from tests/data/golden/kquant_input.f32 equals
ggml's own blocks (tests/data/golden/kquant_input.<type>, scripts/gen/ggml-quant-golden), and
what fmt-convert decodes from it back to float32 equals, bit for bit, what gguf-py's dequantize
made of the same blocks (tests/data/ggufpy/kquant.json, scripts/gen/ggufpy-kquant-values)."""
import hashlib
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import REPO, Suite, convert, inspect_stats, read_safetensors, run, write_safetensors  # noqa: E402

GOLDEN = os.path.join(REPO, "tests", "data", "golden")
ROWS, ROW = 21, 256  # the rows before the one whose scales overflow
TYPES = {"Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q2_K": (256, 84), "Q3_K": (256, 110),
         "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210), "IQ4_NL": (32, 18),
         "IQ4_XS": (256, 136)}
suite = Suite("gguf-py dequantize of quantized output")


def model(d):
    x = np.fromfile(os.path.join(GOLDEN, "kquant_input.f32"), dtype="<f4")[:ROWS * ROW].reshape(ROWS, ROW)
    path = os.path.join(d, "kq.safetensors")
    write_safetensors(path, {"blk.0.ffn_down.weight": x})
    return path


def quantized(d, name):
    out = os.path.join(d, "kq-%s.gguf" % name.lower())
    if not os.path.exists(out):
        convert(model(d), out, "--dtype", name.lower())
    return out


def tensor_bytes(path, name):
    info = json.loads(run("fmt-inspect", "--json", path).stdout)
    t = [t for t in info["tensors"] if t["name"] == name][0]
    last = info["tensors"][-1]
    start = info["file_bytes"] - (last["offset"] + (last["bytes"] + 31) // 32 * 32)
    with open(path, "rb") as f:
        f.seek(start + t["offset"])
        return t["dtype"], f.read(t["bytes"])


@suite.test
def bytes_are_ggmls(d):
    """fmt-convert --dtype TYPE writes ggml's blocks (ggml_quantize_chunk, no imatrix)"""
    for name, (block, size) in TYPES.items():
        dtype, got = tensor_bytes(quantized(d, name), "blk.0.ffn_down.weight")
        assert dtype == name, (name, dtype)
        with open(os.path.join(GOLDEN, "kquant_input." + name.lower()), "rb") as f:
            want = f.read()[:ROWS * ROW // block * size]
        assert got == want, "%s: bytes differ from ggml's" % name


@suite.test
def decoded_equals_ggufpy(d):
    """fmt-convert --dtype f32 of the output: every float bit-identical to gguf-py's dequantize"""
    with open(os.path.join(REPO, "tests", "data", "ggufpy", "kquant.json")) as f:
        want = json.load(f)
    for name in TYPES:
        back = os.path.join(d, "back-%s.safetensors" % name)
        convert(quantized(d, name), back, "--dtype", "f32")
        dtype, arr = read_safetensors(back)["blk.0.ffn_down.weight"]
        assert dtype == "F32" and arr.shape == (ROWS, ROW), (name, dtype, arr.shape)
        y = arr.astype("<f4").reshape(-1)
        w = want[name]
        assert [float(v) for v in y[:8]] == w["first"], (name, y[:8], w["first"])
        assert (float(y.min()), float(y.max())) == (w["min"], w["max"]), name
        assert hashlib.sha256(y.tobytes()).hexdigest() == w["sha256"], "%s: values differ from gguf-py's" % name


@suite.test
def stats_match(d):
    """fmt-inspect --stats of the quantized tensor: count, min, max, first values as gguf-py's"""
    with open(os.path.join(REPO, "tests", "data", "ggufpy", "kquant.json")) as f:
        want = json.load(f)
    for name in TYPES:
        s = inspect_stats(quantized(d, name), "blk.0.ffn_down.weight")
        w = want[name]
        assert s["dtype"] == name and s["count"] == w["count"], (name, s["dtype"], s["count"])
        assert s["min"] == w["min"] and s["max"] == w["max"], (name, s["min"], s["max"], w)
        assert s["first"] == w["first"][:len(s["first"])], (name, s["first"])


suite.finish()
