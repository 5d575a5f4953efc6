#!/usr/bin/python3
"""fmt-convert --dtype bf16 (and f16) read with numpy: bf16 bits widened by << 16 equal numpy's
round-to-nearest-even of the original float32 (specs/gguf.md §10.2), for safetensors and GGUF
output; f16 equals numpy's astype(float16)."""
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import (Suite, bf16_rne, bf16_to_f32, convert, inspect_stats,  # noqa: E402
                          read_safetensors, run, write_safetensors)

rng = np.random.default_rng(7)
edge = np.array([1.0, 1.00390625, 1.01171875, 1.0039063, -0.0, 0.0, 3.0e38, 3.3895314e38,
                 1e-40, -1e-45, 65504.0, 65520.0, 1e-8, 5.96e-8], dtype=np.float32)
# ties between two bf16 values (low 16 bits exactly 0x8000), both parities of the kept bit
ties = (np.arange(64, dtype=np.uint32) * 0x10000 + 0x3F808000).view(np.float32)
ARRAYS = {
    "w.normal": (rng.standard_normal((16, 64)) * 2).astype(np.float32),
    "w.wide": (rng.standard_normal((8, 32)) * np.float32(10.0) ** rng.integers(-30, 30, (8, 32))).astype(np.float32),
    "w.edge": np.concatenate([edge, ties, np.zeros(128 - edge.size - ties.size, np.float32)]).reshape(4, 32),
}
suite = Suite("numpy bf16/f16")


def source(d):
    p = os.path.join(d, "src.safetensors")
    if not os.path.exists(p):
        write_safetensors(p, ARRAYS, compact=True)
    return p


@suite.test
def safetensors_bf16(d):
    """safetensors --dtype bf16: bits == numpy RNE of the float32 input"""
    out = os.path.join(d, "bf16.safetensors")
    convert(source(d), out, "--dtype", "bf16")
    got = read_safetensors(out)
    for name, a in ARRAYS.items():
        dtype, bits = got[name]
        assert dtype == "BF16", (name, dtype)
        want = bf16_rne(a)
        bad = np.flatnonzero(bits.ravel() != want.ravel())
        assert bad.size == 0, (name, [(hex(a.ravel().view(np.uint32)[i]), hex(bits.ravel()[i]), hex(want.ravel()[i])) for i in bad[:5]])
        s = inspect_stats(out, name)
        assert np.array_equal(np.array(s["first"], np.float32), bf16_to_f32(want).ravel()[:8]), name


@suite.test
def gguf_bf16(d):
    """GGUF --dtype bf16: the tensor data at its offset == numpy RNE, widened values match"""
    out = os.path.join(d, "bf16.gguf")
    convert(source(d), out, "--dtype", "bf16")
    back = os.path.join(d, "bf16-back.safetensors")
    convert(out, back, "--dtype", "f32")
    got = read_safetensors(back)
    for name, a in ARRAYS.items():
        _, f32 = got[name]
        want = bf16_to_f32(bf16_rne(a)).reshape(a.shape)
        assert np.array_equal(f32.view(np.uint32), want.view(np.uint32)), name
    # and the raw bits in the GGUF file itself, found from fmt-inspect's offsets
    info = json.loads(run("fmt-inspect", "--json", out).stdout.splitlines()[0])
    raw = open(out, "rb").read()
    data_start = len(raw) - sum((t["bytes"] + 31) // 32 * 32 for t in info["tensors"])
    for t in info["tensors"]:
        bits = np.frombuffer(raw[data_start + t["offset"]:data_start + t["offset"] + t["bytes"]], "<u2")
        assert np.array_equal(bits, bf16_rne(ARRAYS[t["name"]]).ravel()), t["name"]


@suite.test
def safetensors_f16(d):
    """safetensors --dtype f16: refused beyond F16; saturated, equal to numpy astype(float16) of the clipped values"""
    out = os.path.join(d, "f16.safetensors")
    # w.wide and w.edge hold values beyond F16 (65520, 3e38, 1e30...): refused by default (exit 4,
    # issue 9); --overflow=saturate clamps them to +-65504, numpy's astype of the clipped values
    r = run("fmt-convert", "--quiet", "--dtype", "f16", source(d), out, check=False)
    assert r.returncode == 4 and "beyond what F16 holds" in r.stderr, r.stderr
    assert not os.path.exists(out)
    convert(source(d), out, "--dtype", "f16", "--overflow=saturate")
    got = read_safetensors(out)
    for name, a in ARRAYS.items():
        dtype, h = got[name]
        want = np.clip(a, -65504, 65504).astype(np.float16)
        assert dtype == "F16" and np.array_equal(h.view(np.uint16), want.view(np.uint16)), name
    assert got["w.edge"][1].view(np.uint16)[0, 11] == 0x7BFF  # 65520 -> 65504


suite.finish()
