#!/usr/bin/python3
"""The Ed25519 signatures fmtkit embeds, checked by an independent verifier: python3-cryptography's
Ed25519PublicKey.verify over the exact message bytes the specifications name.

  .ald (specs/ald.md §6): bytes 0 .. payload_end (header with the SIGNED flag, card, schema
       block, payload), then signature (64) || public key (32); CRC-32 over all before it.
  .apsim (specs/apsim.md §6.1): "ed25519:<key-id>:<base64>" over S = "APSI-SIG/1\\ncount 1\\n1 <sha256>\\n",
       sha256 recomputed here from the canonical table T (§5) and the data.
And the other way: a block signed here is accepted by fmt-verify with the key given as -P, and
refused without it."""
import base64
import hashlib
import json
import os
import struct
import sys
import zlib

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import Suite, run, write_safetensors  # noqa: E402

suite = Suite("Ed25519 blocks (python3-cryptography)")


def keypair(d):
    """An unencrypted fmt-sign key pair: (secret path, public path, key id, raw public key)."""
    pub, sec = os.path.join(d, "k.pub"), os.path.join(d, "k.key")
    if not os.path.exists(pub):
        run("fmt-sign", "keygen", "-W", "-q", "-p", pub, "-s", sec)
    raw = base64.b64decode(open(pub).read().splitlines()[1])
    key_id = "%016X" % int.from_bytes(raw[2:10], "little")
    return sec, pub, key_id, raw[10:42]


def ald_layout(data):
    meta, payload, flags, schema = struct.unpack_from("<I", data, 8)[0], struct.unpack_from("<I", data, 12)[0], \
        data[21], struct.unpack_from("<H", data, 22)[0]
    start = 32 + meta + schema
    assert not flags & 0x05, "test files are neither encrypted nor streaming"
    return flags, start + payload


def make_ald(d, name, *args):
    csv = os.path.join(d, "rows.csv")
    with open(csv, "w") as f:
        f.write("id,name,score\n" + "".join("%d,row %d,%d.5\n" % (i, i, i * 3) for i in range(50)))
    out = os.path.join(d, name)
    run("fmt-convert", "--force", "-q", *args, csv, out)
    return out


@suite.test
def ald_block_verifies(d):
    """.ald written with --sign-key: the block's signature verifies over bytes 0..payload_end, its key is ours"""
    sec, _, _, pk = keypair(d)
    data = open(make_ald(d, "s.ald", "--sign-key", sec), "rb").read()
    flags, end = ald_layout(data)
    assert flags & 0x02, "SIGNED flag not set"
    sig, embedded = data[end:end + 64], data[end + 64:end + 96]
    assert embedded == pk, "embedded public key is not the signer's"
    assert end + 96 == len(data) - 4, "signature block not right before the CRC"
    Ed25519PublicKey.from_public_bytes(embedded).verify(sig, data[:end])
    assert struct.unpack("<I", data[-4:])[0] == zlib.crc32(data[:-4]), "CRC-32 does not cover the block"


@suite.test
def ald_resign_verifies(d):
    """fmt-sign sign --embed on an unsigned .ald: same dataset bytes, SIGNED set, block verifies"""
    sec, _, _, pk = keypair(d)
    path = make_ald(d, "u.ald")
    before = open(path, "rb").read()
    run("fmt-sign", "sign", "--embed", "-q", "-s", sec, path)
    data = open(path, "rb").read()
    _, end = ald_layout(data)
    assert data[:21] == before[:21] and data[22:end] == before[22:end], "dataset bytes changed"
    assert data[21] == before[21] | 0x02
    Ed25519PublicKey.from_public_bytes(pk).verify(data[end:end + 64], data[:end])


@suite.test
def ald_signed_here_verifies_there(d):
    """an .ald signed by python3-cryptography: fmt-verify -P accepts it, a different key is refused (7)"""
    path = make_ald(d, "p.ald")
    data = bytearray(open(path, "rb").read())
    _, end = ald_layout(data)
    data[21] |= 0x02
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    pk = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    body = bytes(data[:end])
    signed = body + key.sign(body) + pk
    signed += struct.pack("<I", zlib.crc32(signed))
    out = os.path.join(d, "py-signed.ald")
    open(out, "wb").write(signed)
    minisign_b64 = base64.b64encode(b"Ed" + bytes.fromhex("0807060504030201") + pk).decode()
    r = run("fmt-verify", "-P", minisign_b64, out)
    assert "ed25519 signature by trusted key 0102030405060708" in r.stdout, r.stdout
    _, other, _, _ = keypair(d)
    r = run("fmt-verify", "-p", other, out, check=False)
    assert r.returncode == 7, (r.returncode, r.stderr)


def apsim_table(meta, tensors):
    """The canonical table T of specs/apsim.md §5."""
    t = b"APSI-TABLE/1\n"
    for k in sorted((k for k in meta if k not in ("sha256", "signature")), key=lambda k: k.encode()):
        kb, vb = k.encode(), meta[k].encode()
        t += b"M %d:%s %d:%s\n" % (len(kb), kb, len(vb), vb)
    for name, info in sorted(tensors.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        nb = name.encode()
        t += b"T %d:%s %s [%s] %d %d\n" % (len(nb), nb, info["dtype"].encode(),
                                            ",".join(map(str, info["shape"])).encode(), *info["data_offsets"])
    return t + b"END\n"


@suite.test
def apsim_signature_verifies(d):
    """.apsim written with --sign-key: sha256 recomputed from T and the data, ed25519 value verifies over S"""
    sec, _, key_id, pk = keypair(d)
    src = os.path.join(d, "m.safetensors")
    write_safetensors(src, {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(4, np.float16)})
    out = os.path.join(d, "m.apsim")
    run("fmt-convert", "--force", "-q", "--sign-key", sec, src, out)
    data = open(out, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__")
    digest = hashlib.sha256(apsim_table(meta, header) + data[8 + n:]).hexdigest()
    assert meta["sha256"] == digest, (meta["sha256"], digest)
    kind, sig_id, b64 = meta["signature"].split(":")
    assert kind == "ed25519" and sig_id == key_id, meta["signature"]
    message = b"APSI-SIG/1\ncount 1\n1 " + digest.encode() + b"\n"
    Ed25519PublicKey.from_public_bytes(pk).verify(base64.b64decode(b64, validate=True), message)


suite.finish()
