#!/usr/bin/python3
"""Decoding of Q2_K, Q3_K, TQ1_0, TQ2_0, MXFP4, NVFP4 and Q1_0 against gguf-py: the floats that
gguf-py's dequantize returned for tests/data/ggufpy/blocks.gguf (tests/data/ggufpy/README) equal,
bit for bit, what fmt-convert --dtype f32 and fmt-inspect --stats make of the same blocks."""
import json
import os
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import REPO, Suite, convert, inspect_stats, read_safetensors, run  # noqa: E402

DATA = os.path.join(REPO, "tests", "data", "ggufpy")
GGUF = os.path.join(DATA, "blocks.gguf")
ORDER = [("q2_k", "Q2_K"), ("q3_k", "Q3_K"), ("tq1_0", "TQ1_0"), ("tq2_0", "TQ2_0"),
         ("mxfp4", "MXFP4"), ("nvfp4", "NVFP4"), ("q1_0", "Q1_0")]
suite = Suite("gguf-py dequantize")


def expected():
    """name -> float32 array, cut from blocks.f32 by the tensors' element counts."""
    info = json.loads(run("fmt-inspect", "--json", GGUF).stdout)
    flat = np.fromfile(os.path.join(DATA, "blocks.f32"), dtype="<f4")
    out, at = {}, 0
    for t in info["tensors"]:
        n = t["shape"][0] * t["shape"][1]
        out[t["name"]] = flat[at:at + n].reshape(t["shape"])
        at += n
    assert at == flat.size, "blocks.f32 holds %d floats, the tensors %d" % (flat.size, at)
    return info, out


@suite.test
def tensor_types(d):
    """blocks.gguf holds one tensor of each newly decoded type"""
    info, _ = expected()
    assert [(t["name"], t["dtype"]) for t in info["tensors"]] == ORDER


@suite.test
def convert_f32_bits(d):
    """fmt-convert --dtype f32: every float bit-identical to gguf-py's dequantize"""
    _, want = expected()
    out = os.path.join(d, "blocks.safetensors")
    convert(GGUF, out, "--dtype", "f32")
    got = read_safetensors(out)
    for name, _ in ORDER:
        dtype, arr = got[name]
        assert dtype == "F32", (name, dtype)
        same = arr.view(np.uint32) == want[name].view(np.uint32)
        assert same.all(), "%s: %d of %d floats differ, first at %d" % (
            name, (~same).sum(), same.size, int(np.argmin(same.reshape(-1))))


@suite.test
def stats_match(d):
    """fmt-inspect --stats: count, min, max and the first values match gguf-py's floats"""
    _, want = expected()
    for name, _ in ORDER:
        s = inspect_stats(GGUF, name)
        w = want[name].reshape(-1).astype(np.float64)
        assert s["count"] == w.size, name
        assert s["min"] == w.min() and s["max"] == w.max(), (name, s["min"], s["max"])
        assert s["first"] == [float(x) for x in w[:len(s["first"])]], name


@suite.test
def generator_reproduces_fixture(d):
    """scripts/gen/gguf-fidelity-fixtures writes the same blocks.gguf (the bats suite uses it)"""
    subprocess.run([os.path.join(REPO, "scripts", "gen", "gguf-fidelity-fixtures"), d], check=True)
    with open(os.path.join(d, "blocks.gguf"), "rb") as a, open(GGUF, "rb") as b:
        assert a.read() == b.read()


suite.finish()
