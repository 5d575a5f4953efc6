#!/usr/bin/python3
"""Small generated YOLOX models for the ONNX Runtime check (nk_yolox_onnx.test.mjs): writes into
OUTDIR, for each model, NAME.nk (tests/interop/nkgen.py's writer) and NAME.json with what the
ONNX side needs to build the same network from specs/nk.md §11.12 on its own: the input shape,
the layer settings and every weight/bias pair in file order (shapes and float32 values).
Deterministic (fixed seed): tests/data/nk/ holds the .nk files for the unit tests.
Usage: nk_yolox_gen.py OUTDIR"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nkgen as g  # noqa: E402

rng = np.random.default_rng(20261211)


def f32(*shape, scale=0.5):
    return rng.uniform(-scale, scale, size=shape).astype(np.float32)


def head_pairs(cin, hid, nc, convs):
    """stem, convs cls convs, convs reg convs, cls_pred, reg_pred, obj_pred: 4 + 2n pairs (§9)."""
    p = [(f32(hid, 1, 1, cin), f32(hid))]
    p += [(f32(hid, 3, 3, hid, scale=0.25), f32(hid)) for _ in range(2 * convs)]
    p += [(f32(nc, 1, 1, hid), f32(nc)), (f32(4, 1, 1, hid), f32(4)), (f32(1, 1, 1, hid), f32(1))]
    return p


def models():
    M = []
    cin, hid, nc, convs = 12, 16, 3, 2
    M.append(("yolox_head", (6, 5, cin), [g.yolox_head(cin, hid, nc, convs)],
              dict(kind="head", cin=cin, hid=hid, nc=nc, convs=convs), head_pairs(cin, hid, nc, convs)))
    cin, hid, nc, convs = 5, 8, 2, 0
    M.append(("yolox_head_noconv", (4, 7, cin), [g.yolox_head(cin, hid, nc, convs)],
              dict(kind="head", cin=cin, hid=hid, nc=nc, convs=convs), head_pairs(cin, hid, nc, convs)))
    # C3 (the input) 8x8, a strided conv to C4 4x4, another to C5 2x2, then the PAFPN
    c3, c4, c5, H, nc, convs = 8, 12, 16, 8, 2, 1
    layers = [g.feature_tap(c3, 0), g.conv2d(3, 2, c4, "relu", 1, 1), g.feature_tap(c4, 1),
              g.conv2d(3, 2, c5, "relu", 1, 1), g.pafpn(c3, c4, c5, H, nc, convs)]
    p = [(f32(c4, 3, 3, c3, scale=0.3), f32(c4)), (f32(c5, 3, 3, c4, scale=0.3), f32(c5))]
    p += [(f32(H, 1, 1, c), f32(H)) for c in (c3, c4, c5)]
    for _ in range(4):  # td_p4, td_p3, bu_n4, bu_n5: dw 3x3, pw 1x1
        p += [(f32(H, 3, 3), f32(H)), (f32(H, 1, 1, H), f32(H))]
    for _ in range(3):
        p += head_pairs(H, H, nc, convs)
    M.append(("yolox_pafpn", (8, 8, c3), layers, dict(kind="pafpn", c3=c3, c4=c4, c5=c5, hid=H, nc=nc, convs=convs), p))
    return M


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, shape, layers, settings, pairs in models():
        g.write_nk(os.path.join(out, name + ".nk"), 2, shape, layers, pairs)
        desc = dict(input_shape=list(shape), settings=settings,
                    pairs=[dict(w_shape=list(w.shape), w=[float(v) for v in w.ravel()], b=[float(v) for v in b])
                           for w, b in pairs])
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(desc, f)


if __name__ == "__main__":
    main()
