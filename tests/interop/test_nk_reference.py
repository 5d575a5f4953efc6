"""nk-run against an independent reference (nkgen.py): generated .nk models covering every layer
kind and activation, the §4 padding encodings, non-square kernels and pools; float outputs
compared with a float64 NumPy forward pass (1e-4 absolute), int8 outputs with exact Python
integer arithmetic (bit for bit: clamps, per-channel and per-tensor scales, pools, the UIB
residual and its leading-layer quirk, the softmax and its radius wrap). Each float model also
carries its reference outputs as embedded tests, which `nk-run --test` must pass.
Ends with "N passed, N failed"."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nkgen as g  # noqa: E402

BIN = os.environ.get("FMTKIT_BIN", os.path.join(os.path.dirname(__file__), "../../build/bin"))
NKRUN = os.path.join(BIN, "nk-run")
TOL = 1e-4
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + ": " + detail)


def run_json(path, inputs, raw_dtype, *extra, kernels=None):
    """kernels="generic": the portable build of the kernels instead of the CPU's (AVX2)."""
    f = path + ".in"
    np.asarray(inputs, dtype=raw_dtype).tofile(f)
    env = dict(os.environ, NK_KERNELS=kernels) if kernels else None
    r = subprocess.run([NKRUN, "--json", "--input-file", f, *extra, path], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("nk-run exited %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def fw(rng, *shape, scale=0.5):
    return (rng.uniform(-scale, scale, size=shape)).astype(np.float32)


# ------------------------------------------------------------------ float models

def float_models(rng):
    """(name, network, input_shape, layers, pairs, input scale)."""
    M = []
    # every activation on dense layers, MLP batch 2 (softmax over the whole batch x units)
    layers = [g.dense(6, "relu"), g.dense(6, "sigmoid"), g.dense(6, "tanh"), g.dense(6, "leaky", 0.3),
              g.dense(5, "relu6"), g.dense(4, "softmax")]
    dims = [5, 6, 6, 6, 6, 5, 4]
    pairs = [(fw(rng, dims[i + 1], dims[i], scale=1.5), fw(rng, dims[i + 1])) for i in range(6)]
    M.append(("mlp_all_activations_batch2", 1, (2, 5), layers, pairs, 2.0))
    # every activation on convolutions; conv softmax over all H*W*C values
    layers = [g.conv2d(3, 1, 3, "sigmoid", 1, 1), g.conv2d(3, 1, 3, "tanh", 1, 1), g.conv2d(1, 1, 3, "leaky", alpha=0.2),
              g.conv2d(3, 1, 4, "relu6", 1, 1), g.conv2d(1, 1, 2, "softmax")]
    chans = [2, 3, 3, 3, 4, 2]
    ks = [3, 3, 1, 3, 1]
    pairs = [(fw(rng, chans[i + 1], ks[i], ks[i], chans[i], scale=1.0), fw(rng, chans[i + 1])) for i in range(5)]
    M.append(("conv_activations_softmax", 2, (5, 4, 2), layers, pairs, 2.0))
    # conv2d asymmetric padding (pad_extra nibbles: bottom +1, right +2), stride 2
    layers = [g.conv2d(3, 2, 4, "none", 1, 0, extra_b=1, extra_r=2), g.flatten(), g.dense(3, "none")]
    pairs = [(fw(rng, 4, 3, 3, 3), fw(rng, 4)), (fw(rng, 3, 4 * 3 * 4), fw(rng, 3))]  # 7x6 -> 4x3
    M.append(("conv_asymmetric_padding_stride2", 2, (7, 6, 3), layers, pairs, 1.0))
    # depthwise: square kernel with the pad nibbles in the kw byte (rule 2: 3x3, b=+2 r=+1)
    layers = [g.depthwise(3, 3, 1, 3, "relu", 1, 1, pb=3, pr=2, byte15=0x12)]
    M.append(("depthwise_square_nibble_pads", 2, (5, 5, 3), layers, [(fw(rng, 3, 3, 3), fw(rng, 3))], 1.0))
    # depthwise: non-square 3x2 (rule 3: the byte is the width), stride 2
    layers = [g.depthwise(3, 2, 2, 4, "leaky", 1, 0, byte15=2, alpha=0.1)]
    M.append(("depthwise_nonsquare_3x2", 2, (7, 6, 4), layers, [(fw(rng, 4, 3, 2), fw(rng, 4))], 1.0))
    # depthwise: non-square 2x3 with nibble pads, width from the weight count (rule 4)
    layers = [g.depthwise(2, 3, 1, 2, "none", 0, 1, pb=1, pr=2, byte15=0x11)]
    M.append(("depthwise_nonsquare_width_from_weights", 2, (4, 5, 2), layers, [(fw(rng, 2, 2, 3), fw(rng, 2))], 1.0))
    # the kernels' channel blocking (tools/nk-run/kernels.h): depthwise blocks of 8 (12 channels:
    # the last block overlaps), 32 (40 channels) and scalar (5 channels); convolutions vectorized
    # over output channels in blocks of 16 (20: overlapping) and 32 (40), and planar (5 outputs)
    layers = [g.depthwise(3, 3, 1, 12, "relu", 1, 1), g.conv2d(1, 1, 20, "none"), g.depthwise(3, 3, 2, 20, "relu6", 1, 1),
              g.conv2d(3, 1, 40, "relu", 1, 1), g.depthwise(3, 3, 1, 40, "none", 1, 1), g.conv2d(1, 1, 5, "none"),
              g.depthwise(3, 3, 1, 5, "tanh", 1, 1)]
    pairs = [(fw(rng, 12, 3, 3), fw(rng, 12)), (fw(rng, 20, 1, 1, 12), fw(rng, 20)), (fw(rng, 20, 3, 3), fw(rng, 20)),
             (fw(rng, 40, 3, 3, 20, scale=0.2), fw(rng, 40)), (fw(rng, 40, 3, 3), fw(rng, 40)),
             (fw(rng, 5, 1, 1, 40, scale=0.2), fw(rng, 5)), (fw(rng, 5, 3, 3), fw(rng, 5))]
    M.append(("kernel_channel_blocks", 2, (9, 8, 12), layers, pairs, 1.0))
    # more taps than a kernel's weight tile: a 33x33 depthwise (scalar on the file's layout) and
    # a 3x3 convolution over 64 channels (576 taps: blocks of 8 output channels, 12 overlapping)
    layers = [g.depthwise(33, 33, 1, 8, "none", 0, 0), g.conv2d(1, 1, 64, "none"), g.conv2d(3, 1, 12, "none", 1, 1)]
    pairs = [(fw(rng, 8, 33, 33, scale=0.05), fw(rng, 8)), (fw(rng, 64, 1, 1, 8), fw(rng, 64)),
             (fw(rng, 12, 3, 3, 64, scale=0.1), fw(rng, 12))]
    M.append(("kernel_large_tiles", 2, (34, 35, 8), layers, pairs, 1.0))
    # pools over 27 channels (vectors of 16 and 8 and a scalar tail), padded windows
    layers = [g.pool("avg_pool2d", 3, 2, 1, 1, 1, extra_b=1, extra_r=0), g.pool("max_pool2d", 3, 3, 2, 1, 1, extra_b=0, extra_r=1),
              g.pool("avg_pool2d", 2, 2, 2, 0, 0)]
    M.append(("pools_vector_channels", 2, (7, 6, 27), layers, [], 2.0))
    # pools: non-square max pool with extra padding (padding ignored), avg pool excluding pads
    layers = [g.pool("max_pool2d", 2, 3, 1, 1, 0, extra_b=0, extra_r=1), g.pool("avg_pool2d", 3, 2, 2, 1, 1, extra_b=1, extra_r=0),
              g.batchnorm(2), g.layernorm(2, 1e-3), g.flatten(), g.dense(2, "none")]
    M.append(("pools_bn_ln_flatten", 2, (5, 6, 2), layers, None, 2.0))
    # ConvNeXt V2 block (dw7x7, LN, GELU-tanh, GRN, residual)
    C = 3
    pairs = [(fw(rng, C, 7, 7, scale=0.3), fw(rng, C)), (1 + fw(rng, C, scale=0.2), fw(rng, C)),
             (fw(rng, 4 * C, C), fw(rng, 4 * C)), (fw(rng, 4 * C), fw(rng, 4 * C)), (fw(rng, C, 4 * C), fw(rng, C))]
    M.append(("convnextv2_block", 2, (5, 4, C), [g.convnext(C, 1e-6)], pairs, 1.0))
    # ResNet basic blocks: identity, then projection with stride 2
    def res_pairs(i, o, proj):
        p = [(fw(rng, o, 3, 3, i, scale=0.3), fw(rng, o)), (1 + fw(rng, o, scale=0.2), fw(rng, o)),
             (fw(rng, o, 3, 3, o, scale=0.3), fw(rng, o)), (1 + fw(rng, o, scale=0.2), fw(rng, o))]
        if proj:
            p += [(fw(rng, o, 1, 1, i), fw(rng, o)), (1 + fw(rng, o, scale=0.2), fw(rng, o))]
        return p
    M.append(("resnet_identity_and_projection", 2, (6, 5, 4), [g.resnet(4, 4, 1), g.resnet(4, 6, 2)],
              res_pairs(4, 4, False) + res_pairs(4, 6, True), 1.0))
    # MobileNetV4 UIBs: start+middle with downsample in the middle; middle only with residual
    # (k=5); start only with stride 2
    def uib_pairs(L):
        E = g.make_divisible8(np.float32(L["cin"]) * np.float32(L["ratio"]))
        p = []
        bn = lambda n: (1 + fw(rng, n, scale=0.2), fw(rng, n))  # noqa: E731
        if L["start"]:
            p += [(fw(rng, L["cin"], L["start"], L["start"]), fw(rng, L["cin"])), bn(L["cin"])]
        p += [(fw(rng, E, 1, 1, L["cin"]), fw(rng, E)), bn(E)]
        if L["middle"]:
            p += [(fw(rng, E, L["middle"], L["middle"]), fw(rng, E)), bn(E)]
        p += [(fw(rng, L["cout"], 1, 1, E), fw(rng, L["cout"])), bn(L["cout"])]
        return p
    U = [g.uib(4, 8, 3, 3, 2, 1, 2.0), g.uib(8, 8, 0, 5, 1, 0, 1.5), g.uib(8, 6, 3, 0, 2, 0, 3.0)]
    M.append(("mobilenetv4_uib_three_configs", 2, (8, 7, 4), U, sum((uib_pairs(L) for L in U), []), 1.0))
    # YOLOX decoupled head alone (2 convs per branch)
    hid, nc, cin = 4, 3, 5
    hp = [(fw(rng, hid, 1, 1, cin), fw(rng, hid))] + [(fw(rng, hid, 3, 3, hid, scale=0.3), fw(rng, hid)) for _ in range(4)] + \
         [(fw(rng, nc, 1, 1, hid), fw(rng, nc)), (fw(rng, 4, 1, 1, hid), fw(rng, 4)), (fw(rng, 1, 1, 1, hid), fw(rng, 1))]
    M.append(("yolox_decoupled_head", 2, (4, 3, cin), [g.yolox_head(cin, hid, nc, 2)], hp, 1.0))
    # feature taps + PAFPN: tap0 at 8x8, conv stride 2, tap1 at 4x4, conv stride 2 -> C5 2x2
    c3, c4, c5, H, nc, convs = 3, 4, 5, 4, 2, 1
    layers = [g.feature_tap(c3, 0), g.conv2d(3, 2, c4, "relu", 1, 1), g.feature_tap(c4, 1), g.conv2d(3, 2, c5, "relu", 1, 1),
              g.pafpn(c3, c4, c5, H, nc, convs)]
    pp = [(fw(rng, c4, 3, 3, c3), fw(rng, c4)), (fw(rng, c5, 3, 3, c4), fw(rng, c5))]
    pp += [(fw(rng, H, 1, 1, c), fw(rng, H)) for c in (c3, c4, c5)]
    for _ in range(4):
        pp += [(fw(rng, H, 3, 3), fw(rng, H)), (fw(rng, H, 1, 1, H), fw(rng, H))]
    for _ in range(3):
        pp += [(fw(rng, H, 1, 1, H), fw(rng, H))] + [(fw(rng, H, 3, 3, H, scale=0.3), fw(rng, H)) for _ in range(2 * convs)] + \
              [(fw(rng, nc, 1, 1, H), fw(rng, nc)), (fw(rng, 4, 1, 1, H), fw(rng, 4)), (fw(rng, 1, 1, 1, H), fw(rng, 1))]
    M.append(("feature_taps_pafpn", 2, (8, 8, c3), layers, pp, 1.0))
    return M


def bn_ln_pairs(rng):
    return [(1 + fw(rng, 2, scale=0.3), fw(rng, 2)), (1 + fw(rng, 2, scale=0.3), fw(rng, 2)), (fw(rng, 2, 4 * 3 * 2), fw(rng, 2))]  # 5x6 -> 6x5 -> 4x3


def test_float(tmp, rng):
    for name, net, shape, layers, pairs, scale in float_models(rng):
        if pairs is None:
            pairs = bn_ln_pairs(rng)
        n_in = int(np.prod(shape))
        xs = [rng.uniform(-scale, scale, n_in).astype(np.float32) for _ in range(3)]
        refs = [g.forward_float(net, shape, layers, pairs, x) for x in xs]
        path = os.path.join(tmp, name + ".nk")
        cases = [("case %d" % i, -1, x, r.astype(np.float32)) for i, (x, r) in enumerate(zip(xs, refs))]
        g.write_nk(path, net, shape, layers, pairs, cases=cases, tolerance=TOL)
        worst = 0.0
        ok = True
        same = True
        for x, ref in zip(xs, refs):
            out = run_json(path, x, "<f4")
            # every build of the kernels gives the same floats, bit for bit
            same = same and all(run_json(path, x, "<f4", kernels=k)["values"] == out["values"] for k in ("avx2", "generic"))
            got = np.array(out["values"], dtype=np.float64)
            if got.shape != ref.shape:
                ok = False
                worst = float("inf")
                break
            worst = max(worst, float(np.abs(got - ref).max()))
        check("float %s: nk-run = float64 reference (max |diff| %.2e <= %g)" % (name, worst, TOL), ok and worst <= TOL,
              "max |diff| %g" % worst)
        check("float %s: CPU's, AVX2 and generic kernels give identical outputs" % name, same, "outputs differ")
        r = subprocess.run([NKRUN, "--test", path], capture_output=True, text=True)
        check("float %s: nk-run --test passes its embedded reference cases" % name, r.returncode == 0,
              r.stdout + r.stderr)


# ------------------------------------------------------------------ int8 models

def qw(rng, *shape):
    return rng.integers(-127, 128, size=shape, dtype=np.int64).astype(np.int8)


def qb(rng, n, scale=2000):
    return rng.integers(-scale, scale, size=n, dtype=np.int64).astype(np.int32)


def rec(in_s, in_z, w_s, w_z, out_s, out_z):
    return (in_s, in_z, w_s, w_z, in_s * w_s, 0, out_s, out_z)


def int8_models(rng):
    """(name, network, input_shape, layers, pairs, quant, per_channel)."""
    M = []
    # CNN: conv relu with per-channel scales, depthwise relu6, padded max pool, padded avg pool
    # (round half away from zero), flatten, dense relu, dense softmax with a real fixed-point
    # softmax (logit scale 2^-9 < 2^-8)
    layers = [g.conv2d(3, 1, 4, "relu", 1, 1), g.depthwise(3, 3, 1, 4, "relu6", 1, 1), g.pool("max_pool2d", 2, 2, 2, 1, 1),
              g.pool("avg_pool2d", 2, 2, 1, 1, 1), g.flatten(), g.dense(6, "relu"), g.dense(5, "softmax")]
    pairs = [(qw(rng, 4, 3, 3, 2), qb(rng, 4)), (qw(rng, 4, 3, 3), qb(rng, 4)), (qw(rng, 6, 5 * 5 * 4), qb(rng, 6)),
             (qw(rng, 5, 6), qb(rng, 5))]
    quant = [rec(0.02, -10, 0.01, 0, 0.05, -128), rec(0.05, -128, 0.02, 0, 0.03, -100), rec(0.03, -100, 0.005, 0, 0.08, -128),
             rec(0.08, -128, 0.01, 0, 2 ** -9, 3)]
    pcs = [[0.008, 0.011, 0.009, 0.015], [0.02, 0.018, 0.03, 0.01], None, [0.01, 0.012]]  # last: count mismatch -> per-tensor
    M.append(("int8_cnn_clamps_pools_softmax", 2, (6, 6, 2), layers, pairs, quant, pcs))
    # MLP: relu6 is ignored in int8 MLPs; softmax with logit scale 1.0 (R = 0: one-hot 127)
    layers = [g.dense(7, "relu6"), g.dense(4, "softmax")]
    pairs = [(qw(rng, 7, 5), qb(rng, 7)), (qw(rng, 4, 7), qb(rng, 4))]
    quant = [rec(0.1, 5, 0.01, 0, 0.02, -20), rec(0.02, -20, 0.05, 0, 1.0, 0)]
    M.append(("int8_mlp_relu6_ignored_softmax_scale1", 1, (1, 5), layers, pairs, quant, None))
    # MLP with batch 3: rows are independent, but softmax converts the first row only (upstream);
    # a real fixed-point softmax (logit scale 2^-10)
    layers = [g.dense(6, "relu"), g.dense(5, "softmax")]
    pairs = [(qw(rng, 6, 4), qb(rng, 6)), (qw(rng, 5, 6), qb(rng, 5))]
    quant = [rec(0.05, -3, 0.02, 0, 0.04, -128), rec(0.04, -128, 0.03, 0, 2 ** -10, 1)]
    M.append(("int8_mlp_batch3_softmax_first_row", 1, (3, 4), layers, pairs, quant, None))
    # softmax radius wrap: logit scale 2^-4 (shift 22 -> R wraps negative): every output -128
    layers = [g.dense(6, "softmax")]
    M.append(("int8_softmax_wrap_all_minus128", 1, (1, 4), layers, [(qw(rng, 6, 4), qb(rng, 6))], [rec(0.1, 0, 0.01, 0, 2 ** -4, 0)], None))
    # softmax with logit scale 0.75 (shift 26: R = INT32_MIN, every logit passes, d wraps)
    layers = [g.dense(6, "softmax")]
    M.append(("int8_softmax_scale_0_75", 1, (1, 4), layers, [(qw(rng, 6, 4), qb(rng, 6, 20000))], [rec(0.1, 0, 0.01, 0, 0.75, 0)], None))
    # UIB as the first layer with residual (block input taken as scale 1.0, zp 0), non-zero
    # weight zero point, then a UIB after it (real block-input params), then a strided UIB
    layers = [g.uib(4, 4, 3, 3, 1, 0, 2.0), g.uib(4, 4, 0, 3, 1, 0, 2.0), g.uib(4, 8, 3, 3, 2, 1, 1.0)]
    E1, E3 = g.make_divisible8(8.0), g.make_divisible8(4.0)
    pairs = [(qw(rng, 4, 3, 3), qb(rng, 4)), (qw(rng, E1, 1, 1, 4), qb(rng, E1)), (qw(rng, E1, 3, 3), qb(rng, E1)),
             (qw(rng, 4, 1, 1, E1), qb(rng, 4)),
             (qw(rng, E1, 1, 1, 4), qb(rng, E1)), (qw(rng, E1, 3, 3), qb(rng, E1)), (qw(rng, 4, 1, 1, E1), qb(rng, 4)),
             (qw(rng, 4, 3, 3), qb(rng, 4)), (qw(rng, E3, 1, 1, 4), qb(rng, E3)), (qw(rng, E3, 3, 3), qb(rng, E3)),
             (qw(rng, 8, 1, 1, E3), qb(rng, 8))]
    quant = [rec(0.04, 3, 0.01, 2, 0.05, -5), rec(0.05, -5, 0.01, -3, 0.03, -128), rec(0.03, -128, 0.02, 0, 0.04, -128),
             rec(0.04, -128, 0.01, 1, 0.06, 7),
             rec(0.06, 7, 0.01, 0, 0.03, -128), rec(0.03, -128, 0.02, 0, 0.04, -128), rec(0.04, -128, 0.01, 0, 0.05, 2),
             rec(0.05, 2, 0.02, 0, 0.05, 0), rec(0.05, 0, 0.01, 0, 0.03, -128), rec(0.03, -128, 0.02, 0, 0.04, -128),
             rec(0.04, -128, 0.01, 0, 0.07, -3)]
    M.append(("int8_uib_leading_residual_quirk", 2, (6, 6, 4), layers, pairs, quant, None))
    # the int8 kernels' paths (tools/nk-run/qkern.inc): a 3x3 convolution (per-channel scales),
    # a pointwise one as a dense over pixels (20 inputs, a multiplier above 1: left shift), a
    # depthwise over 70 channels (blocks of 64 + 6, weight zero point 3), a 17x17 depthwise (more
    # taps than the int16 tile: the file's layout directly), dense layers of 140 and 12 inputs
    layers = [g.conv2d(3, 1, 20, "relu", 1, 1), g.conv2d(1, 1, 70, "none"), g.depthwise(3, 3, 2, 70, "relu6", 1, 1),
              g.depthwise(17, 17, 1, 70, "none", 4, 4), g.flatten(), g.dense(12, "relu"), g.dense(5, "none")]
    pairs = [(qw(rng, 20, 3, 3, 3), qb(rng, 20)), (qw(rng, 70, 1, 1, 20), qb(rng, 70)), (qw(rng, 70, 3, 3), qb(rng, 70)),
             (qw(rng, 70, 17, 17), qb(rng, 70, 200000)), (qw(rng, 12, 140), qb(rng, 12)), (qw(rng, 5, 12), qb(rng, 5))]
    quant = [rec(0.02, -10, 0.01, 0, 0.05, -128), rec(0.5, -128, 0.5, 0, 0.01, 4), rec(0.01, 4, 0.02, 3, 0.03, -100),
             rec(0.03, -100, 0.001, -2, 0.05, 1), rec(0.05, 1, 0.01, 0, 0.08, -128), rec(0.08, -128, 0.01, 0, 0.1, 9)]
    pcs = [list(rng.uniform(0.005, 0.02, 20)), None, list(rng.uniform(0.01, 0.03, 70)), None, list(rng.uniform(0.005, 0.02, 12)), None]
    M.append(("int8_kernel_paths", 2, (19, 18, 3), layers, pairs, quant, pcs))
    # the load-time forms (libcommon/nkrt/qvnni.inc, int8_ops.c): a one-input pointwise
    # convolution (its table of 256 codes), depthwise convolutions over 32, 64 and 128 channels
    # with stride 1 and no padding (rows of 64 bytes, the last partial), pointwise ones of 32
    # and 64 inputs (packed broadcasts), one with weight zero point 2 (not packed), a dense of
    # 512 inputs (in place) and one of 20
    layers = [g.conv2d(1, 1, 32, "relu"), g.depthwise(3, 3, 1, 32, "relu6"), g.conv2d(1, 1, 64, "none"),
              g.depthwise(3, 3, 1, 64, "relu"), g.conv2d(1, 1, 128, "relu"), g.depthwise(3, 3, 1, 128, "none"),
              g.pool("max_pool2d", 2, 2, 1), g.flatten(), g.dense(20, "relu"), g.dense(5, "none")]
    pairs = [(qw(rng, 32, 1, 1, 1), qb(rng, 32)), (qw(rng, 32, 3, 3), qb(rng, 32)), (qw(rng, 64, 1, 1, 32), qb(rng, 64)),
             (qw(rng, 64, 3, 3), qb(rng, 64)), (qw(rng, 128, 1, 1, 64), qb(rng, 128)), (qw(rng, 128, 3, 3), qb(rng, 128)),
             (qw(rng, 20, 512), qb(rng, 20)), (qw(rng, 5, 20), qb(rng, 5))]
    quant = [rec(0.02, -7, 0.01, 0, 0.03, -128), rec(0.03, -128, 0.02, 0, 0.04, -100), rec(0.04, -100, 0.01, 0, 0.05, 3),
             rec(0.05, 3, 0.02, 2, 0.04, -128), rec(0.04, -128, 0.01, 0, 0.06, -128), rec(0.06, -128, 0.02, 0, 0.09, 5),
             rec(0.09, 5, 0.004, 0, 0.2, -128), rec(0.2, -128, 0.01, 0, 0.3, 2)]
    pcs = [list(rng.uniform(0.005, 0.02, 32)), None, list(rng.uniform(0.005, 0.02, 64)), None, None,
           list(rng.uniform(0.01, 0.03, 128)), None, None]
    M.append(("int8_load_time_forms", 2, (9, 9, 1), layers, pairs, quant, pcs))
    # depthwise convolutions whose 2 x 2 max pool of stride 2 runs with them (32 channels, an odd
    # output width; 128 channels), and one whose requantization is not monotonic (a multiplier
    # of 2^20: the sums shifted left by 21 wrap; biases near 2^30), whose pool must run after it
    # (taking the pool of the sums there gives other bytes); each network ends with the pool
    for c, k, act, q, bias in ((32, 3, "relu6", rec(0.03, -128, 0.02, 0, 0.04, -100), 2000),
                               (128, 3, "relu", rec(0.03, -128, 0.01, 0, 0.03, 4), 2000),
                               (64, 1, "none", rec(0.03, -128, 0.5, 0, 1.5e-8, 4), 2 ** 30)):
        layers = [g.conv2d(1, 1, c, "relu"), g.depthwise(k, k, 1, c, act), g.pool("max_pool2d", 2, 2, 2)]
        pairs = [(qw(rng, c, 1, 1, 1), qb(rng, c)), (qw(rng, c, k, k), qb(rng, c, bias))]
        pcs = [None, list(rng.uniform(0.01, 0.03, c)) if c == 128 else None]
        M.append(("int8_depthwise_max_pool_%d" % c, 2, (6 + k, 10 + k, 1), layers, pairs,
                  [rec(0.02, -7, 0.01, 0, 0.03, -128), q], pcs))
    return M


def test_int8(tmp, rng):
    for name, net, shape, layers, pairs, quant, pcs in int8_models(rng):
        path = os.path.join(tmp, name + ".nk")
        n_in = int(np.prod(shape))
        xs = [rng.integers(-128, 128, n_in) for _ in range(4)]
        refs = [g.forward_int8(net, shape, layers, pairs, quant, pcs, x) for x in xs]
        cases = [("case %d" % i, int(np.argmax(r)), x, np.array(r, dtype=np.float32)) for i, (x, r) in enumerate(zip(xs, refs))]
        g.write_nk(path, net, shape, layers, pairs, quant=quant, per_channel=pcs, cases=cases, tolerance=0.05)
        bad = []
        for i, (x, ref) in enumerate(zip(xs, refs)):
            for kernels in (None, "avx512", "avx2", "generic"):
                got = run_json(path, x, np.int8, kernels=kernels)["values"]
                if got != ref:
                    bad.append("input %d (%s kernels): nk-run %s, reference %s" % (i, kernels or "CPU's", got[:12], ref[:12]))
        check("int8 %s: nk-run = integer reference bit for bit (CPU's, AVX-512, AVX2 and generic kernels)" % name, not bad,
              "; ".join(bad[:2]))
        if name == "int8_softmax_wrap_all_minus128":
            check("int8 softmax wrap: every output is -128", all(v == -128 for r in refs for v in r), str(refs[0]))
        if name == "int8_mlp_relu6_ignored_softmax_scale1":
            check("int8 softmax scale 1.0: one 127 per case", all(sorted(r)[-1] == 127 and r.count(127) == 1 for r in refs
                                                                    if r.count(max(r)) == 1), str(refs))
    # --quantize-input: floats quantized with the first op's scale and zero point (round half even)
    name, net, shape, layers, pairs, quant, pcs = int8_models(rng)[1]
    path = os.path.join(tmp, "quantize_input.nk")
    g.write_nk(path, net, shape, layers, pairs, quant=quant)
    xf = np.array([0.05, -0.25, 0.15, 12.0, -20.0], dtype=np.float32)  # ties to even, clamps
    codes = [int(min(max(np.rint(np.float32(v) / np.float32(0.1)) + 5, -128), 127)) for v in xf]
    r = subprocess.run([NKRUN, "--json", "--quantize-input", "--input", ",".join(str(v) for v in xf), path],
                       capture_output=True, text=True)
    ref = g.forward_int8(net, shape, layers, pairs, quant, pcs, codes)
    check("int8 --quantize-input = reference on codes %s" % codes, r.returncode == 0 and json.loads(r.stdout)["values"] == ref,
          r.stdout + r.stderr)


def main():
    rng = np.random.default_rng(20261201)
    with tempfile.TemporaryDirectory(prefix="nk-ref-") as tmp:
        for t in (test_float, test_int8):
            try:
                t(tmp, rng)
            except Exception as e:  # a crash of the suite is a failure, not a silent pass
                check(t.__name__, False, repr(e))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
