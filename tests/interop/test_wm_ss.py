#!/usr/bin/python3
"""An independent fmtkit-ss/2 and fmtkit-ss/1 extractor, written from man/fmtkit-watermark.7 alone
(Python's hmac and hashlib, ChaCha20 in numpy from RFC 8439), checked against fmt-watermark: the
embedded values (fmtkit-ss/2's bit for bit, fmtkit-ss/1's within one float32 rounding), the decoded
payload, the byte scores and prove's p-value, on a marked model (either scheme), an attacked copy
(noise, scaling, half the tensors renamed), a GGUF F16 copy and the unmarked model; and the
distortion bound (RMS change <= 1 % of each tensor's std) on heavy-tailed and hostile tensors."""
import hashlib
import hmac
import json
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import Suite, convert, read_safetensors, run, write_safetensors  # noqa: E402

KEY = bytes(range(32))
BUYER = "interop-buyer"
suite = Suite("fmtkit-ss/2 and fmtkit-ss/1 reference")


# --- RFC 8439 ChaCha20, vectorised over blocks -----------------------------------------------
def _rotl(x, n):
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def _qr(s, a, b, c, d):
    s[a] += s[b]; s[d] ^= s[a]; s[d] = _rotl(s[d], 16)  # noqa: E702
    s[c] += s[d]; s[b] ^= s[c]; s[b] = _rotl(s[b], 12)  # noqa: E702
    s[a] += s[b]; s[d] ^= s[a]; s[d] = _rotl(s[d], 8)  # noqa: E702
    s[c] += s[d]; s[b] ^= s[c]; s[b] = _rotl(s[b], 7)  # noqa: E702


def chacha20_stream(key, nonce, nbytes):
    blocks = (nbytes + 63) // 64
    init = np.zeros((16, blocks), dtype=np.uint32)
    init[0:4] = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], np.uint32)[:, None]
    init[4:12] = np.frombuffer(key, "<u4")[:, None]
    init[12] = np.arange(blocks, dtype=np.uint32)
    init[13:16] = np.frombuffer(nonce, "<u4")[:, None]
    s = init.copy()
    with np.errstate(over="ignore"):
        for _ in range(10):
            _qr(s, 0, 4, 8, 12); _qr(s, 1, 5, 9, 13); _qr(s, 2, 6, 10, 14); _qr(s, 3, 7, 11, 15)  # noqa: E702
            _qr(s, 0, 5, 10, 15); _qr(s, 1, 6, 11, 12); _qr(s, 2, 7, 8, 13); _qr(s, 3, 4, 9, 14)  # noqa: E702
        s += init
    return s.T.astype("<u4").tobytes()[:nbytes]


def rfc8439_vector():
    """RFC 8439 §2.4.2's key, nonce and counter 1: the first keystream bytes."""
    key = bytes(range(32))
    nonce = bytes([0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0])
    ks = chacha20_stream(key, nonce, 128)[64:]   # block 1
    plain = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
    c = bytes(a ^ b for a, b in zip(plain, ks))
    assert c[:16].hex() == "6e2e359a2568f98041ba0728dd0d6981", c[:16].hex()


# --- the scheme --------------------------------------------------------------------------------
def crc16(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def payload(key, buyer):
    h = hmac.new(key, b"fmtkit-wm/1 buyer" + buyer.encode(), hashlib.sha256).digest()
    return h[:6] + crc16(h[:6]).to_bytes(2, "big")


def stream_key(key, version):
    return hmac.new(key, b"fmtkit-ss/%d stream" % version, hashlib.sha256).digest()


def keystream(key, version, n, word, nbytes):
    return chacha20_stream(stream_key(key, version), n.to_bytes(8, "little") + word.to_bytes(4, "little"), nbytes)


def positions(key, n, version=1):
    ks = np.frombuffer(keystream(key, version, n, 0, 2 * n), "<u2")
    return (ks & 2047).astype(np.int64), np.where(ks & 2048, -1.0, 1.0)


POPC = np.array([bin(i).count("1") for i in range(256)])
HADAMARD = np.where(POPC[np.arange(256)[:, None] & np.arange(256)[None, :]] % 2, -1.0, 1.0)


def codeword(pay):
    return np.concatenate([HADAMARD[b] for b in pay])   # row P[b]: d_{256b+x}


def embed1(key, pay, v, alpha=0.01):
    """What fmt-watermark embed --scheme ss1 should write for one float32 tensor (flat)."""
    j, s = positions(key, v.size)
    d = codeword(pay)
    out = v.astype(np.float64).copy()
    for k in range(0, v.size, 65536):
        blk = out[k:k + 65536]
        a = alpha * blk.std()
        blk += a * s[k:k + 65536] * d[j[k:k + 65536]]
    return out.astype(np.float32)


def scores1(key, tensors):
    zw, nn = np.zeros(2048), np.zeros(2048)
    for v in tensors:
        v = v.astype(np.float64).ravel()
        j, s = positions(key, v.size)
        n = np.bincount(j, minlength=2048).astype(np.float64)
        S = np.bincount(j, s, 2048)
        C = np.bincount(j, s * v, 2048)
        V = np.bincount(j, v, 2048)
        Q = np.bincount(j, v * v, 2048)
        m = V.sum() / n.sum()
        den = Q - 2 * m * V + n * m * m
        ok = (n > 0) & (den > 1e-12 * n * Q.sum() / n.sum())
        z = np.where(ok, (C - m * S) / np.sqrt(np.where(ok, den, 1)), 0)
        zw += np.sqrt(n) * z
        nn += n
    y = np.where(nn > 0, zw / np.sqrt(np.where(nn > 0, nn, 1)), 0)
    return np.stack([HADAMARD @ y[256 * b:256 * b + 256] / 16 for b in range(8)])


# fmtkit-ss/2: runs of 512, groups of 128 runs, one marked run per group
RUN, GROUP = 512, 128


def marked_runs(key, n):
    runs = (n + RUN - 1) // RUN
    groups = (runs + GROUP - 1) // GROUP
    u = np.frombuffer(keystream(key, 2, n, 1, 4 * groups), "<u4").astype(np.int64)
    first = GROUP * np.arange(groups)
    return first + u % np.minimum(GROUP, runs - first), groups


def run_sums(v, j, s):
    """n_k, q_k, c_kj and the sum of squares over the run's finite values."""
    ok = np.isfinite(v)
    v, j, s = v[ok], j[ok], s[ok]
    m = v.mean() if v.size else 0.0
    return v.size, float(((v - m) ** 2).sum()), np.bincount(j, s * (v - m), 2048), float((v * v).sum())


def spread(v, c):
    """THE GROUP'S SPREAD for a float32 slice starting on a run boundary: (n, S1, S2), the sums in
    the page's order: lane i mod 32, per run of 512 a float32 partial sum of d = v - c and of
    d x d (each rounded to float32), added to the lane's double sum; the 32 lanes as a tree."""
    v = v.astype(np.float32)
    pad = -v.size % RUN
    v = np.concatenate([v, np.full(pad, np.nan, np.float32)])
    ok = np.isfinite(v)
    d = np.where(ok, v - np.float32(c), np.float32(0)).astype(np.float32).reshape(-1, RUN // 32, 32)
    sq = (d * d).astype(np.float32)
    a1, a2 = np.zeros((d.shape[0], 32), np.float32), np.zeros((d.shape[0], 32), np.float32)
    for t in range(RUN // 32):   # in order within each lane
        a1 = a1 + d[:, t, :]
        a2 = a2 + sq[:, t, :]
    l1 = np.cumsum(a1.astype(np.float64), axis=0)[-1]   # runs added in order
    l2 = np.cumsum(a2.astype(np.float64), axis=0)[-1]

    def tree(x):
        while x.size > 1:
            x = x[0::2] + x[1::2]
        return float(x[0])
    return int(ok.sum()), tree(l1[:16]) + tree(l1[16:]), tree(l2[:16]) + tree(l2[16:])


def shift(run):
    """c: 0 when 16 R1^2 <= n R2, else the run's mean rounded to float32."""
    n, r1, r2 = spread(run, 0)
    if n == 0 or not np.isfinite(r1) or not np.isfinite(r2) or 16 * (r1 * r1) <= n * r2:
        return 0.0
    return float(np.float32(r1 / n))


def budget(g, c):
    """q_g = (S2 - S2 x 2^-14) - S1 x S1 / n, a lower bound of the group's sum of squares."""
    n, s1, s2 = spread(g, c)
    if n == 0 or not np.isfinite(s1) or not np.isfinite(s2) or not s2 >= 2.0 ** -100:
        return 0.0
    return max((s2 - s2 * 2.0 ** -14) - s1 * s1 / n, 0.0)


def round_toward(delta, x_hi, x_lo):
    """x = x_hi + x_lo = v + delta (exact) rounded to float32 toward v."""
    f = x_hi.astype(np.float32)
    beyond = (f.astype(np.float64) - x_hi) - x_lo     # f - x, its sign exact
    up = delta > 0
    over = np.where(up, beyond > 0, beyond < 0)
    back = np.nextafter(f, np.where(up, -np.inf, np.inf).astype(np.float32))
    return np.where(over, back, f)


def embed2(key, pay, v, alpha=0.01):
    """What fmt-watermark embed should write for one float32 tensor (flat)."""
    v32 = v.astype(np.float32).ravel()
    v = v32.astype(np.float64)
    n = v.size
    j, s = positions(key, n, 2)
    d = codeword(pay)
    runs, groups = marked_runs(key, n)
    mu = 1 - 2.0 ** -16
    out = v32.copy()
    w = np.array([2.0] * 6 + [1.0] * 2)
    for k in runs:
        lo, hi = RUN * k, min(RUN * (k + 1), n)
        g0, g1 = RUN * GROUP * (k // GROUP), min(RUN * GROUP * (k // GROUP + 1), n)
        q = budget(v32[g0:g1], shift(v32[lo:hi]))
        ok = np.isfinite(v[lo:hi])
        cnt, _, c, _ = run_sums(v[lo:hi], j[lo:hi], s[lo:hi])
        per_byte = np.bincount(j[lo:hi][ok] >> 8, minlength=8)
        energy = float((per_byte * w * w).sum())
        if q <= 0 or energy <= 0:
            continue
        a = (alpha * mu) * np.sqrt(q / energy)
        e = np.where((d * c).reshape(8, 256).sum(axis=1) >= 0, 1.0, -1.0)
        jj = j[lo:hi]
        delta = (a * w * e)[jj >> 8] * d[jj] * s[lo:hi]
        x_hi = v[lo:hi] + delta                          # TwoSum: x_hi + x_lo = v + delta exactly
        z = x_hi - v[lo:hi]
        x_lo = (v[lo:hi] - (x_hi - z)) + (delta - z)
        out[lo:hi] = np.where(ok, round_toward(delta, x_hi, x_lo), v32[lo:hi])
    return out


def scores2(key, tensors):
    y, w = np.zeros((8, 256)), 0.0
    for v in tensors:
        v = v.astype(np.float64).ravel()
        j, s = positions(key, v.size, 2)
        for k in marked_runs(key, v.size)[0]:
            lo, hi = RUN * k, min(RUN * (k + 1), v.size)
            cnt, q, c, sq = run_sums(v[lo:hi], j[lo:hi], s[lo:hi])
            if not (cnt > 0 and q > 0 and q > 1e-12 * sq):
                continue
            sc = np.stack([HADAMARD @ c[256 * b:256 * b + 256] for b in range(8)]) / np.sqrt(q / 8)
            y += np.sqrt(cnt) * np.abs(sc)
            w += cnt
    return y / np.sqrt(w) if w > 0 else y


def decode(sc):
    pay = bytes(int(np.argmax(sc[b])) for b in range(8))
    tied = sum(int((sc[b] >= sc[b].max()).sum() > 1) for b in range(8))
    return pay, tied == 0 and crc16(pay[:6]) == int.from_bytes(pay[6:], "big")


def prove_p(sc, pay):
    t = sum(sc[b][pay[b]] for b in range(6))
    dist, shift = np.array([1], dtype=np.int64), 0
    for b in range(6):
        atoms = np.ceil(sc[b] * 32).astype(np.int64)
        lo = atoms.min()
        one = np.bincount(atoms - lo).astype(np.int64)
        dist = np.convolve(dist, one)
        shift += lo
    first = int(np.ceil(t * 32)) - shift
    return float(dist[max(first, 0):].sum()) / 2.0 ** 48


# --- the tests ---------------------------------------------------------------------------------
rng = np.random.default_rng(11)
MODEL = {"a.weight": rng.normal(0, 0.02, (300, 1024)).astype(np.float32),
         "b.weight": rng.normal(0.5, 3.0, (1024, 200)).astype(np.float32),
         "c.weight": rng.normal(0, 1, (130000,)).astype(np.float32),
         "norm": (1 + rng.normal(0, 0.01, (1024,))).astype(np.float32)}


def files(d):
    """The model, its fmtkit-ss/2 copy (the default), its fmtkit-ss/1 copy and the key."""
    src, out, out1 = (os.path.join(d, f) for f in ("m.safetensors", "marked.safetensors", "marked1.safetensors"))
    key = os.path.join(d, "seller.key")
    if not os.path.exists(out):
        write_safetensors(src, MODEL)
        with open(key, "wb") as f:
            f.write(KEY)
        os.chmod(key, 0o600)
        run("fmt-watermark", "embed", "-q", "--key", key, "--buyer", BUYER, "--strength", "0.03", src, out)
        run("fmt-watermark", "embed", "-q", "--scheme", "ss1", "--key", key, "--buyer", BUYER, "--strength", "0.03",
            src, out1)
    return src, out, out1, key


def tool(cmd, key, path, *extra):
    r = run("fmt-watermark", cmd, "-j", "--key", key, *extra, path, check=False)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def agree(path, key, scheme="fmtkit-ss/2"):
    """extract and prove report scheme on path and agree with the reference; returns its view."""
    tensors = [a for _, a in read_safetensors(path).values()] if path.endswith(".safetensors") else None
    sc = (scores2 if scheme == "fmtkit-ss/2" else scores1)(KEY, tensors)
    pay, valid = decode(sc)
    x = tool("extract", key, path)
    assert x["scheme"] == scheme, (x["scheme"], scheme)
    assert x["payload"] == pay.hex() and x["valid"] == valid, (x["payload"], pay.hex(), valid)
    for b in range(8):
        assert abs(x["bytes"][b]["score"] - sc[b][pay[b]]) < 1e-9 * max(1, abs(sc[b][pay[b]])), (b, x["bytes"][b])
    want = payload(KEY, BUYER)
    p = tool("prove", key, path, "--buyer", BUYER)
    assert p["scheme"] == scheme, (p["scheme"], scheme)
    ref_p = prove_p(sc, want)
    assert abs(p["p_value"] - ref_p) <= 1e-9 * ref_p, (p["p_value"], ref_p)
    assert abs(p["score"] - sum(sc[b][want[b]] for b in range(6))) < 1e-9 * 64
    return pay, valid, ref_p


@suite.test
def chacha(d):
    """ChaCha20 in numpy reproduces RFC 8439's test vector"""
    rfc8439_vector()


def same_values(got, want, name):
    ulp = np.abs(np.spacing(want))
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert (diff <= ulp).all(), (name, diff.max())
    assert (diff == 0).mean() > 0.999, (name, (diff == 0).mean())


@suite.test
def embedded_values(d):
    """embed's values: fmtkit-ss/2's marked runs bit for bit, everything else as it was;
    fmtkit-ss/1's v + alpha x block std x s_i x d_j within one float32 rounding"""
    _, out, out1, _ = files(d)
    got, got1 = read_safetensors(out), read_safetensors(out1)
    pay = payload(KEY, BUYER)
    for name, a in MODEL.items():
        want = embed2(KEY, pay, a.ravel(), 0.03)
        assert np.array_equal(got[name][1].ravel().view(np.uint32), want.view(np.uint32)), \
            (name, int((got[name][1].ravel() != want).sum()))
        moved = int((got[name][1].ravel() != a.ravel()).sum())
        assert 0 < moved <= RUN * marked_runs(KEY, a.size)[1], (name, moved)   # a run per group at most
        same_values(got1[name][1].ravel(), embed1(KEY, pay, a.ravel(), 0.03), name)


@suite.test
def distortion_any_values(d):
    """heavy tails (Student-t 1, 2, 3), an outlier in the first group's marked run, mostly zeros,
    a constant, mean >> std, NaN and inf at the default strength: embed's values bit for bit, and
    every tensor's RMS change at most 1 % of its std (finite values, measured here)"""
    r = np.random.default_rng(17)
    n = 140000
    out = r.normal(0, 0.02, n)
    out[RUN * int(marked_runs(KEY, n)[0][0]) + 100] = 1e4
    odd = r.normal(-2, 1, n)
    odd[::1009] = np.nan
    odd[3::2003] = np.inf
    heavy = {"t1": r.standard_t(1, n), "t2": r.standard_t(2, n), "t3": 0.02 * r.standard_t(3, n), "outlier": out,
             "sparse": np.where(r.uniform(size=n) < 0.99, 0, r.normal(0, 1, n)), "constant": np.full(n, -3.0),
             "offset": 1000 + r.normal(0, 1e-3, n), "nonfinite": odd}
    heavy = {k: v.astype(np.float32) for k, v in heavy.items()}
    src, dst = os.path.join(d, "heavy.safetensors"), os.path.join(d, "heavy-marked.safetensors")
    write_safetensors(src, heavy)
    key = files(d)[3]
    run("fmt-watermark", "embed", "-q", "--key", key, "--buyer", BUYER, src, dst)
    got = read_safetensors(dst)
    pay = payload(KEY, BUYER)
    for name, a in heavy.items():
        b = got[name][1]
        want = embed2(KEY, pay, a)
        assert np.array_equal(b.view(np.uint32), want.view(np.uint32)), (name, int((b != want).sum()))
        fin = np.isfinite(a)
        x, y = a[fin].astype(np.float64), b[fin].astype(np.float64)
        ratio = np.sqrt(((y - x) ** 2).mean()) / x.std() if x.std() > 0 else 0.0
        assert ratio <= 0.01, (name, ratio)
        assert (ratio > 0.0099) == (name not in ("constant", "offset")), (name, ratio)


@suite.test
def marked(d):
    """the marked models: the buyer's payload, valid; prove's p-value 2^-48 and equal"""
    _, out, out1, key = files(d)
    for path, scheme in ((out, "fmtkit-ss/2"), (out1, "fmtkit-ss/1")):
        pay, valid, p = agree(path, key, scheme)
        assert valid and pay == payload(KEY, BUYER), pay.hex()
        assert p == 2.0 ** -48, p


@suite.test
def attacked(d):
    """noise, per-tensor scaling, half the tensors renamed and reordered: same answers as fmt-watermark"""
    _, out, _, key = files(d)
    r = np.random.default_rng(3)
    ts = read_safetensors(out)
    att = {}
    for i, name in enumerate(["c.weight", "a.weight"]):
        a = ts[name][1]
        att["t%d" % i] = (a * np.float32(0.5 + i) + r.normal(0, 0.05 * a.std(), a.shape)).astype(np.float32)
    p = os.path.join(d, "attacked.safetensors")
    write_safetensors(p, att)
    agree(p, key)


@suite.test
def unmarked_and_gguf(d):
    """the unmarked model (no match) and the marked one through GGUF F16 (values decoded from F16)"""
    src, out, _, key = files(d)
    _, valid, p = agree(src, key)
    assert not valid and p > 1e-3, p
    g = os.path.join(d, "marked.gguf")
    convert(out, g, "--dtype", "f16")
    back = os.path.join(d, "back.safetensors")
    convert(g, back, "--dtype", "f32")
    x = tool("extract", key, g)
    y = tool("extract", key, back)
    assert x["payload"] == y["payload"] == payload(KEY, BUYER).hex() and x["valid"], (x, y)
    agree(back, key)


suite.finish()
