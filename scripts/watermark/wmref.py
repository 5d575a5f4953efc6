#!/usr/bin/python3
"""An independent reference of specs/watermark.md (fmtkit-wm/1) in plain Python: key derivation,
PRF (SipHash-2-4 written out here, not libsodium), selection and QIM in doubles exactly as the
spec writes them. Used by the tests to check fmt-watermark's output value by value.

usage: wmref.py payload KEYFILE BUYER          -> buyer hash hex, payload hex
       wmref.py mark KEYFILE BUYER F32HEX...   -> the marked values (hex bit patterns)
"""
import hashlib
import hmac
import math
import struct
import sys

M64 = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key, msg):
    k0, k1 = struct.unpack("<QQ", key)
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rnd(v0, v1, v2, v3):
        v0 = (v0 + v1) & M64; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
        v2 = (v2 + v3) & M64; v3 = rotl(v3, 16); v3 ^= v2
        v0 = (v0 + v3) & M64; v3 = rotl(v3, 21); v3 ^= v0
        v2 = (v2 + v1) & M64; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(msg)
    tail = msg[n - n % 8:] + b"\0" * (7 - n % 8) + bytes([n & 0xFF])
    blocks = msg[: n - n % 8] + tail
    for i in range(0, len(blocks), 8):
        m = struct.unpack("<Q", blocks[i:i + 8])[0]
        v3 ^= m
        v0, v1, v2, v3 = rnd(v0, v1, v2, v3)
        v0, v1, v2, v3 = rnd(v0, v1, v2, v3)
        v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = rnd(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def crc16(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


class Key:
    def __init__(self, k):
        self.k = k
        self.prf = hmac.new(k, b"fmtkit-wm/1 prf", hashlib.sha256).digest()[:16]

    def buyer_hash(self, buyer):
        return hmac.new(self.k, b"fmtkit-wm/1 buyer" + buyer.encode(), hashlib.sha256).digest()

    def payload_bits(self, buyer):
        h = self.buyer_hash(buyer)[:6]
        p = h + struct.pack(">H", crc16(h))
        return [(p[i // 8] >> (7 - i % 8)) & 1 for i in range(64)]

    def position(self, anchor, width, density=0.5):
        h = siphash24(self.prf, struct.pack("<Q", anchor) + bytes([width]))
        return (h & 0xFFFF) < density * 65536, ((h >> 16) & 0xFFFF) % 64, (h >> 32) & 1


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def bits_f32(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def mark_f32(key, bits_list, buyer, density=0.5, s=12):
    P = key.payload_bits(buyer)
    out = []
    for b in bits_list:
        exp = (b >> 23) & 0xFF
        if exp in (0, 0xFF):
            out.append(b)
            continue
        anchor = b & ~((1 << 15) - 1)
        sel, j, m = key.position(anchor, 4, density)
        if not sel:
            out.append(b)
            continue
        c = P[j] ^ m
        e = exp - 127
        v = bits_f32(b)
        delta = math.ldexp(1.0, e - s)
        r = v / delta
        v1 = delta * (math.floor(r - c / 2 + 0.5) + c / 2)
        b1 = f32_bits(v1)
        if (b1 & ~((1 << 15) - 1)) != anchor:
            out.append(b)
        else:
            out.append(b1)
    return out


def main():
    cmd, keyfile, buyer = sys.argv[1:4]
    key = Key(open(keyfile, "rb").read())
    if cmd == "payload":
        h = key.buyer_hash(buyer)
        print(h.hex(), "%016x" % int("".join(map(str, key.payload_bits(buyer))), 2))
    elif cmd == "mark":
        for b in mark_f32(key, [int(x, 16) for x in sys.argv[4:]], buyer):
            print("%08x" % b)


if __name__ == "__main__":
    main()
