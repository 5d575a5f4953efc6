"""Write netkit .nk files (specs/nk.md) and compute their outputs independently of nk-run:
float models in float64 NumPy (§11), int8 models with exact Python integers (§12).

Used by test_nk_reference.py (every layer kind and activation against nk-run) and by
scripts/gen/nk-malformed (hostile files for the bats suite). Written from the spec only."""
import math
import struct

import numpy as np

KIND = dict(dense=1, conv2d=2, max_pool2d=3, flatten=4, avg_pool2d=5, batch_norm2d=6, depthwise=7,
            convnext=8, uib=9, resnet=10, layernorm=11, yolox_head=12, feature_tap=13, pafpn=14)
ACT = dict(none=0, relu=1, sigmoid=2, tanh=3, leaky=4, relu6=5, softmax=6)


# ---------------------------------------------------------------- layer records (§4)

def rec(kind, body):
    return struct.pack("<B3x", KIND[kind]) + body


def dense(units, act="none", alpha=0.01):
    return dict(kind="dense", units=units, act=act, alpha=alpha,
                raw=rec("dense", struct.pack("<IB3xf", units, ACT[act], alpha)))


def conv2d(k, stride, filters, act="none", pt=0, pl=0, extra_b=0, extra_r=0, alpha=0.01):
    extra = extra_b | (extra_r << 4)
    return dict(kind="conv2d", k=k, stride=stride, filters=filters, act=act, alpha=alpha, pads=(pt, pl, pt + extra_b, pl + extra_r),
                raw=rec("conv2d", struct.pack("<IIIBBBBf", k, stride, filters, ACT[act], pt, pl, extra, alpha)))


def depthwise(kh, kw, stride, channels, act="none", pt=0, pl=0, pb=None, pr=None, byte15=None, alpha=0.01):
    """byte15 is the overloaded kw byte; the caller chooses an encoding that §4.3 decodes to
    (kh, kw, pads)."""
    pb = pt if pb is None else pb
    pr = pl if pr is None else pr
    if byte15 is None:
        byte15 = kw
    return dict(kind="depthwise", kh=kh, kw=kw, stride=stride, channels=channels, act=act, alpha=alpha,
                pads=(pt, pl, pb, pr),
                raw=rec("depthwise", struct.pack("<IIIBBBBf", kh, stride, channels, ACT[act], pt, pl, byte15, alpha)))


def pool(kind, ph, pw, stride, pt=0, pl=0, extra_b=0, extra_r=0):
    meta = (pw if pw != ph else 0) | (extra_b << 8) | (extra_r << 12)
    return dict(kind=kind, kh=ph, kw=pw, stride=stride, pads=(pt, pl, pt + extra_b, pl + extra_r),
                raw=rec(kind, struct.pack("<IIBBH", ph, stride, pt, pl, meta)))


def flatten():
    return dict(kind="flatten", raw=rec("flatten", b""))


def batchnorm(c):
    return dict(kind="batch_norm2d", c=c, raw=rec("batch_norm2d", struct.pack("<II", c, 0)))


def layernorm(c, eps):
    return dict(kind="layernorm", c=c, eps=eps, raw=rec("layernorm", struct.pack("<IIf", c, 0, eps)))


def convnext(c, eps):
    return dict(kind="convnext", c=c, eps=eps, raw=rec("convnext", struct.pack("<IIf", c, 0, eps)))


def uib(cin, cout, start, middle, stride, down, ratio):
    return dict(kind="uib", cin=cin, cout=cout, start=start, middle=middle, stride=stride, down=down, ratio=ratio,
                raw=rec("uib", struct.pack("<IIBBBBfI", cin, cout, start, middle, stride, down, ratio, 0)))


def resnet(cin, cout, stride):
    return dict(kind="resnet", cin=cin, cout=cout, stride=stride, raw=rec("resnet", struct.pack("<IIB3x", cin, cout, stride)))


def yolox_head(cin, hid, nc, convs):
    return dict(kind="yolox_head", cin=cin, hid=hid, nc=nc, convs=convs,
                raw=rec("yolox_head", struct.pack("<IIIB3x", cin, hid, nc, convs)))


def feature_tap(c, tap):
    return dict(kind="feature_tap", c=c, tap=tap, raw=rec("feature_tap", struct.pack("<IB3x", c, tap)))


def pafpn(c3, c4, c5, hid, nc, convs):
    return dict(kind="pafpn", c3=c3, c4=c4, c5=c5, hid=hid, nc=nc, convs=convs,
                raw=rec("pafpn", struct.pack("<IIIIIB3x", c3, c4, c5, hid, nc, convs)))


def make_divisible8(v):
    v = np.float32(v)
    r = int(np.float32(v + np.float32(4))) // 8 * 8
    r = max(8, r)
    if r < int(np.float32(np.float32(0.9) * v)):
        r += 8
    return r


# ---------------------------------------------------------------- file writer (§2-§8)

def catalog_entry(arr, dtype):
    dims = list(arr.shape) + [0] * (4 - arr.ndim)
    return struct.pack("<BBH4II", arr.ndim, dtype, 0, *dims, arr.size)


def write_nk(path, network, input_shape, layers, pairs, quant=None, per_channel=None, cases=None, tolerance=1e-4,
             version=None, raw_header=None):
    """pairs: [(weight array, bias array)] in catalog order. quant: one 8-tuple per pair (§6);
    per_channel: one list of scales per pair (or None). cases: [(name, label, inputs, expected)].
    Returns the bytes written."""
    quantized = quant is not None
    version = version or (4 if quantized else 3)
    flags = (2 if quantized else 0) | (1 if cases else 0) | (4 if cases and quantized else 0)
    rank = len(input_shape)
    shape = list(input_shape) + [0] * (4 - rank)
    wdt, bdt = (2, 3) if quantized else (1, 1)
    wbytes = b"".join(np.ascontiguousarray(w, dtype=np.int8 if quantized else "<f4").tobytes() for w, _ in pairs)
    wbytes += b"\0" * (-len(wbytes) % 4)
    bbytes = b"".join(np.ascontiguousarray(b, dtype="<i4" if quantized else "<f4").tobytes() for _, b in pairs)
    head = struct.pack("<4sIBBH4IIIIII", b"NKIT", version, network, rank, flags, *shape, len(layers), len(pairs),
                       len(pairs), len(wbytes), len(bbytes))
    meta = head + b"".join(l["raw"] for l in layers)
    meta += b"".join(catalog_entry(np.asarray(w), wdt) for w, _ in pairs)
    meta += b"".join(catalog_entry(np.asarray(b), bdt) for _, b in pairs)
    if quantized:
        qflags = 1 if per_channel else 0
        meta += struct.pack("<4sHH", b"QUAN", len(quant), qflags)
        for q in quant:
            meta += struct.pack("<fifififi", *q)
        if per_channel:
            for sc in per_channel:
                sc = sc or []
                meta += struct.pack("<I", len(sc)) + struct.pack("<%df" % len(sc), *sc)
    meta += b"\0" * (-len(meta) % 4)
    data = meta + wbytes + bbytes
    if cases:
        t = struct.pack("<4sIf", b"TCAS", len(cases), tolerance)
        for name, label, inputs, expected in cases:
            nb = name.encode()
            t += struct.pack("<B", len(nb)) + nb + b"\0" * (-(1 + len(nb)) % 4)
            t += struct.pack("<iI", label, len(inputs))
            t += np.asarray(inputs, dtype=np.int8 if quantized else "<f4").tobytes()
            t += struct.pack("<I", len(expected)) + np.asarray(expected, dtype="<f4").tobytes()
        data += t
    if path:
        with open(path, "wb") as f:
            f.write(data)
    return data


# ---------------------------------------------------------------- float64 reference (§11)

def act(y, a, alpha=0.01):
    if a == "relu":
        return np.where(y > 0, y, 0.0)
    if a == "relu6":
        return np.clip(y, 0.0, 6.0)
    if a == "sigmoid":
        return 1.0 / (1.0 + np.exp(-y))
    if a == "tanh":
        return np.tanh(y)
    if a == "leaky":
        return np.where(y > 0, y, np.float64(np.float32(alpha)) * y)
    if a == "softmax":
        e = np.exp(y - y.max())
        return e / e.sum()
    return y


def f_conv(x, w, b, stride, pads):
    """x [H,W,C], w [O,kh,kw,C] (zero padding = skipped taps), pads (t, l, b, r)."""
    pt, pl, pb, pr = pads
    H, W, C = x.shape
    O, kh, kw, _ = w.shape
    xp = np.zeros((H + pt + pb, W + pl + pr, C))
    xp[pt:pt + H, pl:pl + W] = x
    oh = (H + pt + pb - kh) // stride + 1
    ow = (W + pl + pr - kw) // stride + 1
    y = np.zeros((oh, ow, O))
    for oy in range(oh):
        for ox in range(ow):
            patch = xp[oy * stride:oy * stride + kh, ox * stride:ox * stride + kw]
            y[oy, ox] = np.tensordot(w, patch, axes=([1, 2, 3], [0, 1, 2])) + b
    return y


def f_dw(x, w, b, stride, pads):
    """w [C,kh,kw]."""
    pt, pl, pb, pr = pads
    H, W, C = x.shape
    _, kh, kw = w.shape
    xp = np.zeros((H + pt + pb, W + pl + pr, C))
    xp[pt:pt + H, pl:pl + W] = x
    oh = (H + pt + pb - kh) // stride + 1
    ow = (W + pl + pr - kw) // stride + 1
    y = np.zeros((oh, ow, C))
    for oy in range(oh):
        for ox in range(ow):
            patch = xp[oy * stride:oy * stride + kh, ox * stride:ox * stride + kw]  # kh,kw,C
            y[oy, ox] = np.einsum("ijc,cij->c", patch, w) + b
    return y


def f_pool(x, kind, kh, kw, stride, pads):
    pt, pl, pb, pr = pads
    H, W, C = x.shape
    oh = (H + pt + pb - kh) // stride + 1
    ow = (W + pl + pr - kw) // stride + 1
    y = np.zeros((oh, ow, C))
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * stride - pt, ox * stride - pl
            cells = x[max(y0, 0):min(y0 + kh, H), max(x0, 0):min(x0 + kw, W)].reshape(-1, C)
            if len(cells) == 0:
                y[oy, ox] = -np.finfo(np.float32).max if kind == "max_pool2d" else 0.0
            else:
                y[oy, ox] = cells.max(0) if kind == "max_pool2d" else cells.mean(0)
    return y


def f_ln(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + np.float64(np.float32(eps))) * g + b


def f_pw(x, w, b):
    """1x1 convolution, w [O, C] (any trailing 1x1 dims)."""
    return x @ w.reshape(w.shape[0], -1).T + b


def silu(x):
    return x / (1.0 + np.exp(-x))


def f_head(x, P, convs):
    """P: iterator of (w, b) pairs."""
    stem = silu(f_pw(x, *next(P)))
    feats = []
    for _ in range(2):
        t = stem
        for _ in range(convs):
            w, b = next(P)
            t = silu(f_conv(t, w, b, 1, (1, 1, 1, 1)))
        feats.append(t)
    cls = f_pw(feats[0], *next(P))
    reg = f_pw(feats[1], *next(P))
    obj = f_pw(feats[1], *next(P))
    return np.concatenate([reg, obj, cls], axis=-1)


def up2(x):
    return x.repeat(2, axis=0).repeat(2, axis=1)


def forward_float(network, input_shape, layers, pairs, x):
    """The float64 output of a float model for input x (flat float32 values)."""
    x = np.asarray(x, dtype=np.float64)
    if network == 1:
        x = x.reshape(input_shape[0], input_shape[1])
    else:
        x = x.reshape(input_shape[0], input_shape[1], input_shape[2])
    P = iter([(np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64)) for w, b in pairs])
    taps = {}
    for L in layers:
        k = L["kind"]
        if k == "dense":
            w, b = next(P)
            rows = x.reshape(-1, w.shape[-1]) if network == 1 else x.reshape(1, -1)
            x = act(rows @ w.reshape(w.shape[0], -1).T + b, L["act"], L["alpha"])
        elif k == "conv2d":
            w, b = next(P)
            x = act(f_conv(x, w, b, L["stride"], L["pads"]), L["act"], L["alpha"])
        elif k == "depthwise":
            w, b = next(P)
            x = act(f_dw(x, w.reshape(L["channels"], L["kh"], L["kw"]), b, L["stride"], L["pads"]), L["act"], L["alpha"])
        elif k in ("max_pool2d", "avg_pool2d"):
            x = f_pool(x, k, L["kh"], L["kw"], L["stride"], L["pads"])
        elif k == "flatten":
            x = x.reshape(1, -1)
        elif k == "batch_norm2d":
            s, t = next(P)
            x = x * s + t
        elif k == "layernorm":
            g, b = next(P)
            x = f_ln(x, g, b, L["eps"])
        elif k == "convnext":
            C, eps = L["c"], np.float64(np.float32(L["eps"]))
            w, b = next(P)
            t = f_dw(x, w, b, 1, (3, 3, 3, 3))
            t = f_ln(t, *next(P), L["eps"])
            u = f_pw(t, *next(P))
            u = 0.5 * u * (1 + np.tanh(0.7978845608 * (u + 0.044715 * u ** 3)))
            g = np.sqrt((u ** 2).sum(axis=(0, 1)))
            n = g / (g.mean() + eps)
            gam, bet = next(P)
            u = gam * (u * n) + bet + u
            x = f_pw(u, *next(P)) + x
        elif k == "uib":
            E = make_divisible8(np.float32(L["cin"]) * np.float32(L["ratio"]))
            s1 = 1 if (L["start"] == 0 or (L["down"] and L["middle"] > 0)) else L["stride"]
            s2 = L["stride"] if L["down"] else 1
            t = x
            if L["start"]:
                kk = L["start"]
                w, b = next(P)
                t = f_dw(t, w.reshape(-1, kk, kk), b, s1, ((kk - 1) // 2,) * 4)
                s, sh = next(P)
                t = t * s + sh
            t = f_pw(t, *next(P))
            s, sh = next(P)
            t = np.maximum(t * s + sh, 0)
            if L["middle"]:
                kk = L["middle"]
                w, b = next(P)
                t = f_dw(t, w.reshape(-1, kk, kk), b, s2, ((kk - 1) // 2,) * 4)
                s, sh = next(P)
                t = np.maximum(t * s + sh, 0)
            t = f_pw(t, *next(P))
            s, sh = next(P)
            t = t * s + sh
            if L["stride"] == 1 and L["cin"] == L["cout"]:
                t = t + x
            assert t.shape[-1] == L["cout"] and E > 0
            x = t
        elif k == "resnet":
            s = L["stride"]
            w, b = next(P)
            a = f_conv(x, w, b, s, (1, 1, 1, 1))
            g, h = next(P)
            a = np.maximum(a * g + h, 0)
            w, b = next(P)
            c = f_conv(a, w, b, 1, (1, 1, 1, 1))
            g, h = next(P)
            c = c * g + h
            if s != 1 or L["cin"] != L["cout"]:
                w, b = next(P)
                sc = f_conv(x, w, b, s, (0, 0, 0, 0))
                g, h = next(P)
                sc = sc * g + h
            else:
                sc = x
            x = np.maximum(c + sc, 0)
        elif k == "yolox_head":
            x = f_head(x, P, L["convs"])
        elif k == "feature_tap":
            taps[L["tap"]] = x
        elif k == "pafpn":
            l3 = f_pw(taps[0], *next(P))
            l4 = f_pw(taps[1], *next(P))
            l5 = f_pw(x, *next(P))

            def dwpw(z, stride):
                w, b = next(P)
                d = f_dw(z, w.reshape(-1, 3, 3), b, stride, (1, 1, 1, 1))
                return silu(f_pw(d, *next(P)))
            p4 = dwpw(l4 + up2(l5), 1)
            p3 = dwpw(l3 + up2(p4), 1)
            n4 = dwpw(p3, 2) + p4
            n5 = dwpw(n4, 2) + l5
            outs = [f_head(t, P, L["convs"]).reshape(-1) for t in (p3, n4, n5)]
            x = np.concatenate(outs)
    return x.reshape(-1)


# ---------------------------------------------------------------- int8 reference (§12)

def w32(v):
    return ((v + (1 << 31)) % (1 << 32)) - (1 << 31)


def quantize_multiplier(d):
    if not d > 0:
        return 0, 0
    m, e = math.frexp(d)
    q = m * (1 << 31)
    q = int(math.floor(q + 0.5)) if q >= 0 else -int(math.floor(-q + 0.5))  # llround
    if q == 1 << 31:
        q, e = 1 << 30, e + 1
    if e < -31:
        q, e = 0, 0
    if e > 30:
        q, e = (1 << 31) - 1, 30
    return q, e


def tdiv(a, b):
    """C division (truncating)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def srdhm(a, b):
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    p = a * b
    nudge = (1 << 30) if p >= 0 else 1 - (1 << 30)
    return tdiv(p + nudge, 1 << 31)


def rdivpot(x, n):
    if n == 0:
        return x
    mask = (1 << n) - 1
    rem = x & mask
    thr = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> n) + (1 if rem > thr else 0)


def mulq(x, q, e):
    left, right = max(e, 0), max(-e, 0)
    return rdivpot(srdhm(w32(x * (1 << left)), q), right)


def f32(x):
    return float(np.float32(x))


def requant_params(rec, channels, scales):
    in_s, in_z, w_s, w_z, _, _, out_s, out_z = rec
    use = scales if scales and len(scales) == channels else [w_s] * channels
    return [quantize_multiplier(f32(in_s) * f32(s) / f32(out_s)) for s in use]


def clamp_range(actname, out_z, out_s):
    lo, hi = -128, 127
    if actname in ("relu", "relu6"):
        lo = min(max(out_z, -128), 127)
    if actname == "relu6":
        h = 6.0 / f32(out_s)
        h = int(math.floor(h + 0.5)) + out_z
        hi = min(max(h, lo), 127)
    return lo, hi


def q_conv(x, w, b, rec, scales, stride, pads, actname, depthwise=False):
    """x int [H,W,C]; w int [O,kh,kw,C] or [C,kh,kw] (depthwise); b int [O]."""
    in_s, in_z, w_s, w_z, _, _, out_s, out_z = rec
    H, W, C = x.shape
    if depthwise:
        O, kh, kw = w.shape
    else:
        O, kh, kw, _ = w.shape
    pt, pl, pb, pr = pads
    oh = (H + pt + pb - kh) // stride + 1
    ow = (W + pl + pr - kw) // stride + 1
    mult = requant_params(rec, O, scales)
    lo, hi = clamp_range(actname, out_z, out_s)
    y = np.zeros((oh, ow, O), dtype=np.int64)
    xs = x.astype(np.int64) - in_z
    ws = w.astype(np.int64) - w_z
    for oy in range(oh):
        for ox in range(ow):
            for o in range(O):
                acc = int(b[o])
                for ky in range(kh):
                    iy = oy * stride + ky - pt
                    if iy < 0 or iy >= H:
                        continue
                    for kx in range(kw):
                        ix = ox * stride + kx - pl
                        if ix < 0 or ix >= W:
                            continue
                        if depthwise:
                            acc += int(xs[iy, ix, o] * ws[o, ky, kx])
                        else:
                            acc += int(np.dot(xs[iy, ix], ws[o, ky, kx]))
                acc = w32(acc)
                v = w32(mulq(acc, *mult[o]) + out_z)
                y[oy, ox, o] = min(max(v, lo), hi)
    return y


def q_dense(x, w, b, rec, scales, actname):
    in_s, in_z, w_s, w_z, _, _, out_s, out_z = rec
    rows = x.reshape(-1, w.shape[1]).astype(np.int64) - in_z
    mult = requant_params(rec, w.shape[0], scales)
    lo, hi = clamp_range(actname, out_z, out_s)
    acc = rows @ (w.astype(np.int64) - w_z).T + b.astype(np.int64)
    y = np.zeros(acc.shape, dtype=np.int64)
    for r in range(acc.shape[0]):
        for o in range(acc.shape[1]):
            v = w32(mulq(w32(int(acc[r, o])), *mult[o]) + out_z)
            y[r, o] = min(max(v, lo), hi)
    return y


def q_pool(x, kind, kh, kw, stride, pads, zp):
    pt, pl, pb, pr = pads
    H, W, C = x.shape
    oh = (H + pt + pb - kh) // stride + 1
    ow = (W + pl + pr - kw) // stride + 1
    y = np.zeros((oh, ow, C), dtype=np.int64)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * stride - pt, ox * stride - pl
            cells = x[max(y0, 0):min(y0 + kh, H), max(x0, 0):min(x0 + kw, W)].reshape(-1, C).astype(np.int64)
            n = len(cells)
            for c in range(C):
                if kind == "max_pool2d":
                    y[oy, ox, c] = int(cells[:, c].max()) if n else 0
                else:
                    s = int((cells[:, c] - zp).sum()) if n else 0
                    avg = 0 if not n else (tdiv(abs(s) + n // 2, n) * (1 if s >= 0 else -1))
                    y[oy, ox, c] = min(max(avg + zp, -128), 127)
    return y


def q_add(a, b, s1, z1, s2, z2, so, zo):
    tw = 2.0 * max(f32(s1), f32(s2))
    m1 = quantize_multiplier(f32(s1) / tw)
    m2 = quantize_multiplier(f32(s2) / tw)
    mo = quantize_multiplier(tw / (1048576.0 * f32(so)))
    out = np.zeros(a.shape, dtype=np.int64)
    for i, (va, vb) in enumerate(zip(a.reshape(-1), b.reshape(-1))):
        ra = mulq((int(va) - z1) << 20, *m1)
        rb = mulq((int(vb) - z2) << 20, *m2)
        v = w32(mulq(w32(ra + rb), *mo) + zo)
        out.reshape(-1)[i] = min(max(v, -128), 127)
    return out


def dhm(a, b):
    nudge = (1 - (1 << 30)) if ((a < 0) != (b < 0)) else (1 << 30)
    return w32(tdiv(a * b + nudge, 1 << 31))


def dpot(x, n):
    return w32((x + (-1 if x < 0 else 0) + (1 << (n - 1))) >> n)


def expn(v):
    ks = [1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242]
    vm = w32((v & ((1 << 24) - 1)) - (1 << 24))
    rem = w32(vm - v)
    x = w32(w32(vm << 5) + (1 << 28))
    x2 = dhm(x, x)
    o1 = w32(dpot(dhm(x2, x2), 2) + dhm(x2, x))
    o2 = w32(x + dpot(w32(dhm(o1, 715827883) + x2), 1))
    r = w32(1895147668 + dhm(1895147668, o2))
    for j, k in enumerate(ks):
        if (rem & 0xFFFFFFFF) & (1 << (24 + j)):
            r = dhm(r, k)
    if v == 0:
        r = (1 << 31) - 1
    return r


def q_softmax(x, logit_scale):
    s = f32(logit_scale) if logit_scale > 0 else 1.0
    mult, shift = quantize_multiplier(min(s * (1 << 26), (1 << 31) - 1))
    t = shift + 5
    R = w32(int(math.floor(255.0 * 2.0 ** t + 0.5))) if 0 <= t < 64 else 0
    diff_min = w32(-R)
    left = 1 << shift if shift > 0 else 1
    xs = [int(v) for v in x]
    mx = max(xs)
    total = 0
    for v in xs:
        d = v - mx
        if d >= diff_min:
            total = w32(total + dpot(expn(dhm(w32(d * left), mult)), 12))
    u = total & 0xFFFFFFFF
    hr = 32 - u.bit_length() if u else 32
    z = w32((w32(u << hr) if total > 0 else 0) - (1 << 31))
    S = z + (1 << 31)
    inv = (1 << 31) - 1 if S <= (1 << 31) else w32(((1 << 62) + S // 2) // S)
    bou = 12 - hr + 23
    out = []
    for v in xs:
        d = v - mx
        if d >= diff_min:
            o = w32(dpot(dhm(inv, expn(dhm(w32(d * left), mult))), bou) - 128)
            out.append(min(max(o, -128), 127))
        else:
            out.append(-128)
    return out


def forward_int8(network, input_shape, layers, pairs, quant, per_channel, x):
    """The int8 output codes of an int8 model for input codes x."""
    x = np.asarray(x, dtype=np.int64)
    x = x.reshape(input_shape[0], input_shape[1]) if network == 1 else x.reshape(*input_shape[:3])
    pc = per_channel or [None] * len(pairs)
    it = iter(range(len(pairs)))
    zp, scale = 0, 1.0
    for L in layers:
        k = L["kind"]
        if k == "dense":
            p = next(it)
            w, b = pairs[p]
            a = L["act"] if L["act"] in ("relu", "relu6") else "none"
            if network == 1 and a == "relu6":
                a = "none"
            rows = x if network == 1 else x.reshape(1, -1)
            x = q_dense(rows, w, b, quant[p], pc[p], a)
            zp, scale = quant[p][7], quant[p][6]
            if L["act"] == "softmax":
                first = q_softmax(x[0], quant[p][6])
                x = x.copy()
                x[0] = first
                zp, scale = -128, 1 / 256
        elif k in ("conv2d", "depthwise"):
            p = next(it)
            w, b = pairs[p]
            a = L["act"] if L["act"] in ("relu", "relu6") else "none"
            if k == "depthwise":
                x = q_conv(x, w.reshape(L["channels"], L["kh"], L["kw"]), b, quant[p], pc[p], L["stride"], L["pads"], a, True)
            else:
                x = q_conv(x, w, b, quant[p], pc[p], L["stride"], L["pads"], a)
            zp, scale = quant[p][7], quant[p][6]
        elif k in ("max_pool2d", "avg_pool2d"):
            x = q_pool(x, k, L["kh"], L["kw"], L["stride"], L["pads"], zp)
        elif k == "flatten":
            x = x.reshape(1, -1)
        elif k == "uib":
            s1 = 1 if (L["start"] == 0 or (L["down"] and L["middle"] > 0)) else L["stride"]
            s2 = L["stride"] if L["down"] else 1
            t = x
            if L["start"]:
                p = next(it)
                kk = L["start"]
                w, b = pairs[p]
                t = q_conv(t, w.reshape(-1, kk, kk), b, quant[p], pc[p], s1, ((kk - 1) // 2,) * 4, "none", True)
            p = next(it)
            w, b = pairs[p]
            t = q_dense(t.reshape(-1, t.shape[-1]), w.reshape(w.shape[0], -1), b, quant[p], pc[p], "relu").reshape(t.shape[0], t.shape[1], -1)
            if L["middle"]:
                p = next(it)
                kk = L["middle"]
                w, b = pairs[p]
                t = q_conv(t, w.reshape(-1, kk, kk), b, quant[p], pc[p], s2, ((kk - 1) // 2,) * 4, "relu", True)
            p = next(it)
            w, b = pairs[p]
            t = q_dense(t.reshape(-1, t.shape[-1]), w.reshape(w.shape[0], -1), b, quant[p], pc[p], "none").reshape(t.shape[0], t.shape[1], -1)
            so, zo = quant[p][6], quant[p][7]
            if L["stride"] == 1 and L["cin"] == L["cout"]:
                t = q_add(t, x, so, zo, scale, zp, so, zo)
            x = t
            zp, scale = zo, so
        else:
            raise ValueError("not an int8 layer: " + k)
    return [int(v) for v in x.reshape(-1)]
