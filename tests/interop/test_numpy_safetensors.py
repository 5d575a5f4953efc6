#!/usr/bin/python3
"""numpy writes safetensors (its own header layout); fmt-inspect's statistics match numpy's,
and fmt-convert to GGUF f32 and back gives numpy the same arrays."""
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import (Suite, convert, inspect_stats, read_safetensors, run,  # noqa: E402
                          write_safetensors)

rng = np.random.default_rng(20240607)
ARRAYS = {
    # deliberately not in the reference writer's order
    "z.f32": (rng.standard_normal((7, 9)) * 3).astype(np.float32),
    "a.f16": (rng.standard_normal((5, 6)) * 100).astype(np.float16),
    "m.i64": np.array([0, 1, -1, 2**40, -(2**40), 123456789, 2**53 + 1, -8, 9, 2**24 + 1], dtype=np.int64),
    "k.bool": rng.random(13) > 0.5,
    "big.f32": rng.uniform(-1e4, 1e4, (32, 64)).astype(np.float32),
}
suite = Suite("numpy safetensors")


def src_path(d):
    p = os.path.join(d, "numpy.safetensors")
    if not os.path.exists(p):
        write_safetensors(p, ARRAYS, metadata={"writer": "numpy " + np.__version__})
    return p


@suite.test
def stats_match_numpy(d):
    """fmt-inspect --stats min/max/mean/std/first match numpy"""
    src = src_path(d)
    for name, a in ARRAYS.items():
        s = inspect_stats(src, name)
        assert s["shape"] == list(a.shape), (name, s["shape"])
        if a.dtype.kind in "biu":
            # integer dtypes: min, max and first are the exact integers, mean and std doubles
            ints = [int(x) for x in a.ravel()]
            v = a.astype(np.float64).ravel()
            assert (s["min"], s["max"]) == (min(ints), max(ints)), (name, s["min"], s["max"])
            assert all(isinstance(x, int) for x in [s["min"], s["max"]] + s["first"]), (name, s)
            assert s["first"] == ints[:8], (name, s["first"], ints[:8])
        else:
            # float dtypes are decoded to float32
            v = a.astype(np.float32).astype(np.float64).ravel()
            assert s["min"] == v.min() and s["max"] == v.max(), (name, s["min"], s["max"], v.min(), v.max())
            assert np.array_equal(np.array(s["first"], dtype=np.float64), v[:8]), (name, s["first"], v[:8])
        assert s["count"] == v.size and s["nan"] == 0 and s["inf"] == 0, (name, s)
        scale = max(1.0, float(np.abs(v).max()))
        assert abs(s["mean"] - v.mean()) <= 1e-12 * scale, (name, s["mean"], v.mean())
        assert abs(s["std"] - v.std()) <= 1e-12 * scale, (name, s["std"], v.std())


@suite.test
def inspect_reads_numpy_header(d):
    """fmt-verify accepts the file; fmt-inspect lists dtypes, shapes and metadata"""
    src = src_path(d)
    run("fmt-verify", src)
    info = json.loads(run("fmt-inspect", "--json", src).stdout.splitlines()[0])
    assert info["metadata"] == {"writer": "numpy " + np.__version__}, info["metadata"]
    got = {t["name"]: (t["dtype"], t["shape"]) for t in info["tensors"]}
    want = {n: ({"float32": "F32", "float16": "F16", "int64": "I64", "bool": "BOOL"}[a.dtype.name], list(a.shape))
            for n, a in ARRAYS.items()}
    assert got == want, (got, want)


@suite.test
def gguf_f32_round_trip(d):
    """safetensors -> GGUF f32 -> safetensors: numpy reads equal arrays (BOOL refused by GGUF)"""
    src = src_path(d)
    gguf = os.path.join(d, "rt.gguf")
    r = run("fmt-convert", "--force", "--quiet", "--dtype", "f32", src, gguf, check=False)
    assert r.returncode == 5 and "BOOL" in r.stderr, (r.returncode, r.stderr)
    convert(src, gguf, "--dtype", "f32", "--exclude", "*.bool")
    back = os.path.join(d, "rt.safetensors")
    convert(gguf, back)
    got = read_safetensors(back)
    assert sorted(got) == sorted(n for n in ARRAYS if n != "k.bool"), sorted(got)
    for name, (dtype, arr) in got.items():
        a = ARRAYS[name]
        want_dtype = "I64" if a.dtype == np.int64 else "F32"
        assert dtype == want_dtype, (name, dtype)
        assert arr.shape == a.shape, (name, arr.shape, a.shape)
        assert np.array_equal(arr, a), name


@suite.test
def safetensors_keep_round_trip(d):
    """safetensors -> safetensors keep: every array, BOOL included, exactly equal"""
    src = src_path(d)
    out = os.path.join(d, "keep.safetensors")
    convert(src, out)
    got = read_safetensors(out)
    for name, a in ARRAYS.items():
        dtype, arr = got[name]
        assert arr.dtype == a.dtype and np.array_equal(arr, a), name


suite.finish()
