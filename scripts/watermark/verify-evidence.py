#!/usr/bin/python3
"""Check the Ed25519 signature of fmt-watermark prove's evidence with python3-cryptography, from
the text of the man page alone: the canonical JSON of every member but "signature" (keys sorted,
no whitespace, reals with 17 significant digits, ASCII).

usage: verify-evidence.py EVIDENCE.json PUBKEY (minisign's format)
Prints "signature ok" and exits 0, or raises (exit 1)."""
import base64
import json
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def canon(v):
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + canon(v[k]) for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, float):
        t = "%.17g" % v
        return t if any(ch in t for ch in ".eE") else t + ".0"
    return json.dumps(v)


ev = json.load(open(sys.argv[1]))
sig = ev.pop("signature")
pk = base64.b64decode(open(sys.argv[2]).read().splitlines()[1])[10:42]
Ed25519PublicKey.from_public_bytes(pk).verify(base64.b64decode(sig["value"]), canon(ev).encode())
print("signature ok")
