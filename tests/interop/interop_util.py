"""Helpers of the numpy interoperability tests: a minimal safetensors writer and reader done
with numpy and json only, the tools, and a small test harness that ends with `N passed, N failed`."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("FMTKIT_BIN", os.path.join(REPO, "build", "bin"))

NP_TO_ST = {"float32": "F32", "float16": "F16", "float64": "F64", "int64": "I64", "int32": "I32",
            "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}
ST_TO_NP = {v: k for k, v in NP_TO_ST.items()}
ST_TO_NP["BF16"] = "uint16"  # raw bits; widened by the test


def write_safetensors(path, arrays, metadata=None, compact=False):
    """Write arrays (dict name -> np.ndarray) in the dict's order, a header as json.dumps makes it
    (with spaces unless compact), padded with spaces to a multiple of 8: not the reference
    writer's layout, on purpose."""
    header, data, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in arrays.items():
        raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": NP_TO_ST[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        data.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":") if compact else None).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(data))


def read_safetensors(path):
    """name -> (dtype string, np.ndarray); checks length, padding and contiguity."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0 and 8 + n <= len(raw), "header length %d" % n
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    end, out = 0, {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        assert b == end, "tensor %s begins at %d, previous ends at %d" % (name, b, end)
        dt = np.dtype(ST_TO_NP[info["dtype"]]).newbyteorder("<")
        arr = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=dt).reshape(info["shape"])
        out[name] = (info["dtype"], arr)
        end = e
    assert len(raw) == 8 + n + end, "file length %d != %d" % (len(raw), 8 + n + end)
    return out


def run(tool, *args, check=True):
    r = subprocess.run([os.path.join(BIN, tool), *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("%s %s exited %d: %s" % (tool, " ".join(args), r.returncode, r.stderr))
    return r


def inspect_stats(path, name):
    r = run("fmt-inspect", "--json", "--tensor", name, "--stats", path)
    return json.loads(r.stdout.splitlines()[0])["stats"]


def convert(src, dst, *args):
    return run("fmt-convert", "--force", "--quiet", "--no-progress", *args, src, dst)


def bf16_rne(a32):
    """float32 array -> bf16 bits, round to nearest even (specs/gguf.md §10.2; no NaN here)."""
    u = a32.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


class Suite:
    def __init__(self, title):
        self.title, self.passed, self.failed = title, 0, 0
        self.dir = tempfile.mkdtemp(prefix="fmtkit-interop-py-")

    def test(self, fn):
        try:
            fn(self.dir)
            self.passed += 1
            print("ok - %s: %s" % (self.title, fn.__doc__ or fn.__name__))
        except Exception:  # noqa: BLE001 - report every failure and go on
            self.failed += 1
            print("not ok - %s: %s" % (self.title, fn.__doc__ or fn.__name__))
            traceback.print_exc(file=sys.stdout)
        return fn

    def finish(self):
        if not os.environ.get("FMTKIT_KEEP_SCRATCH"):
            shutil.rmtree(self.dir, ignore_errors=True)
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
