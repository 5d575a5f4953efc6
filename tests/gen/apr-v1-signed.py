#!/usr/bin/python3
"""A signed APR v1 file (specs/apr.md §16.2), made independently of fmtkit: Python's zlib CRC-32,
msgpack and python3-cryptography's Ed25519 over header + metadata + payload, then the 32-byte
public key, then the CRC32 of everything before it. Also writes the key's minisign public key
file (untrusted comment line, base64 of "Ed" || key id || public key) so fmt-verify -p trusts it.

usage: apr-v1-signed.py OUT.apr OUT.pub SEED_HEX(64) KEY_ID_HEX(16)
"""
import base64
import struct
import sys
import zlib

import msgpack
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def main():
    out_apr, out_pub, seed_hex, keyid_hex = sys.argv[1:5]
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))
    pk = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    meta = msgpack.packb({"created_at": "1700000000", "aprender_version": "0.25.0", "model_name": "signed-lr"})
    payload = bytes(range(40))
    flags = 0x02  # SIGNED
    hdr = b"APRN" + bytes([1, 0]) + struct.pack("<HIII", 1, len(meta), len(payload), len(payload)) \
        + bytes([0, flags, 80]) + bytes(9)
    body = hdr + meta + payload
    signed = body + key.sign(body) + pk
    with open(out_apr, "wb") as f:
        f.write(signed + struct.pack("<I", zlib.crc32(signed)))
    keynum = bytes.fromhex(keyid_hex)[::-1]  # minisign prints the id as a little-endian number
    with open(out_pub, "w") as f:
        f.write("untrusted comment: APR v1 test key\n")
        f.write(base64.b64encode(b"Ed" + keynum + pk).decode() + "\n")


main()
