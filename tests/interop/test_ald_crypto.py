#!/usr/bin/python3
"""The .ald encryption layer (specs/ald.md §5) checked by an independent implementation: Debian's
python3-cryptography (AES-256-GCM, X25519, HKDF-SHA256) and python3-argon2 (Argon2id). Files
fmt-convert encrypts decrypt here to the very payload bytes of the plain file; files encrypted
here, from a plain .ald fmt-convert wrote, decrypt in fmtkit; the §5.2/§5.3 vectors agree; a
licence's seller_sig (fmt-sign license) verifies over the message fmt-sign.1 documents."""
import base64
import json
import os
import struct
import sys
import zlib

from argon2.low_level import Type, hash_secret_raw
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.exceptions import InvalidSignature

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_util import Suite, run  # noqa: E402

PASSWORD = b"tr0ub4dor & 3"
CSV = "id,name,score\n1,ann,0.5\n2,\"b, c\",\n3,cy,-2.25\n"
suite = Suite("python-cryptography .ald")


def argon2id(password, salt):
    return hash_secret_raw(password, salt, time_cost=2, memory_cost=19456, parallelism=1, hash_len=32,
                           type=Type.ID, version=19)


def hkdf(shared):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"ald-v1-encrypt").derive(shared)


def parse(data):
    """The sections of a standard .ald (no chunk index): header fields, encryption header, payload."""
    assert data[:4] == b"ALDF"
    meta, pay = struct.unpack_from("<II", data, 8)
    flags, schema = data[21], struct.unpack_from("<H", data, 22)[0]
    enc = 32 + meta + schema
    hlen = (29 if data[enc] == 0 else 45) if flags & 1 else 0
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == zlib.crc32(data[:-4]), "standard CRC-32"
    return {"flags": flags, "enc": enc, "header": data[enc:enc + hlen],
            "payload": data[enc + hlen:enc + hlen + pay], "rest": data[enc + hlen + pay:-4]}


def scratch(d):
    """A CSV, the plain .ald fmtkit writes from it, a password file and an X25519 key pair."""
    paths = {k: os.path.join(d, v) for k, v in (("csv", "in.csv"), ("plain", "plain.ald"), ("pw", "pw.txt"),
                                                ("pub", "r.pub"), ("key", "r.key"))}
    if not os.path.exists(paths["plain"]):
        open(paths["csv"], "w").write(CSV)
        open(paths["pw"], "wb").write(PASSWORD + b"\n")  # one trailing newline: not part of it
        run("fmt-convert", "--quiet", paths["csv"], paths["plain"])
        run("fmt-sign", "keygen", "-W", "--x25519", "-p", paths["pub"], "-s", paths["key"])
    return paths


def key_line(path):
    return base64.b64decode(open(path).read().splitlines()[1])


@suite.test
def spec_vectors(d):
    """§5.2 Argon2id and §5.3 HKDF check vectors hold in the independent libraries"""
    assert argon2id(b"password", bytes(range(16))).hex() == \
        "39903a34cd393876436e671cd690dfe8ab9ce7b13459a7e04ec0e4f0694ddb0d"
    assert hkdf(b"\x01" * 32).hex() == "a7280deb53817d5140e4b20754d7bba3103c75b3224015a55ed0be2e38b06de9"


@suite.test
def ours_password_decrypts_here(d):
    """fmt-convert --encrypt-password-file: Argon2id + AES-GCM here give the plain file's payload"""
    p = scratch(d)
    out = os.path.join(d, "pw.ald")
    run("fmt-convert", "--quiet", "--force", "--encrypt-password-file", p["pw"], p["csv"], out)
    enc, plain = parse(open(out, "rb").read()), parse(open(p["plain"], "rb").read())
    h = enc["header"]
    assert enc["flags"] == 1 and len(h) == 29 and h[0] == 0
    key = argon2id(PASSWORD, h[1:17])
    got = AESGCM(key).decrypt(h[17:29], enc["payload"], None)
    assert got == plain["payload"], "decrypted payload differs from the plain file's"
    assert enc["rest"] == b""


@suite.test
def ours_recipient_decrypts_here(d):
    """fmt-convert --encrypt-to: X25519 with our secret key + HKDF + AES-GCM here give the payload"""
    p = scratch(d)
    out = os.path.join(d, "r.ald")
    run("fmt-convert", "--quiet", "--force", "--encrypt-to", p["pub"], p["csv"], out)
    enc, plain = parse(open(out, "rb").read()), parse(open(p["plain"], "rb").read())
    h = enc["header"]
    assert len(h) == 45 and h[0] == 1
    me = X25519PrivateKey.from_private_bytes(key_line(p["key"]))
    assert me.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw) == \
        key_line(p["pub"])
    shared = me.exchange(X25519PublicKey.from_public_bytes(h[1:33]))
    got = AESGCM(hkdf(shared)).decrypt(h[33:45], enc["payload"], None)
    assert got == plain["payload"]


def encrypt_here(plain_path, header, key, out_path):
    """The plain .ald with ENCRYPTED set, the header after the schema block, payload sealed, CRC."""
    data = open(plain_path, "rb").read()
    s = parse(data)
    sealed = AESGCM(key).encrypt(header[-12:], s["payload"], None)
    head = bytearray(data[:32])
    head[21] |= 0x01
    struct.pack_into("<I", head, 12, len(sealed))
    body = bytes(head) + data[32:s["enc"]] + header + sealed + s["rest"]
    open(out_path, "wb").write(body + struct.pack("<I", zlib.crc32(body)))


@suite.test
def theirs_password_decrypts_in_fmtkit(d):
    """a password-encrypted .ald built here is read by fmt-convert, fmt-inspect and fmt-verify"""
    p = scratch(d)
    salt, nonce = os.urandom(16), os.urandom(12)
    out = os.path.join(d, "py-pw.ald")
    encrypt_here(p["plain"], b"\x00" + salt + nonce, argon2id(PASSWORD, salt), out)
    r = run("fmt-convert", "--password-file", p["pw"], out, "-", "--to", "csv")
    assert r.stdout == CSV, r.stdout
    v = json.loads(run("fmt-verify", "--json", "--password-file", p["pw"], out).stdout)
    assert v["ok"] and v["payload_authenticated"], v
    bad = os.path.join(d, "bad.txt")
    open(bad, "w").write("not it\n")
    r = run("fmt-convert", "--password-file", bad, out, "-", "--to", "csv", check=False)
    assert r.returncode == 8 and r.stdout == "", (r.returncode, r.stdout)


@suite.test
def theirs_recipient_decrypts_in_fmtkit(d):
    """an .ald encrypted here to our X25519 public key is read with --identity; JSON rows equal"""
    p = scratch(d)
    eph = X25519PrivateKey.generate()
    eph_pub = eph.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    key = hkdf(eph.exchange(X25519PublicKey.from_public_bytes(key_line(p["pub"]))))
    out = os.path.join(d, "py-r.ald")
    encrypt_here(p["plain"], b"\x01" + eph_pub + os.urandom(12), key, out)
    r = run("fmt-inspect", "--json", "--head", "3", "--identity", p["key"], out)
    rows = json.loads(r.stdout)["head"]
    assert rows == [{"id": 1, "name": "ann", "score": 0.5}, {"id": 2, "name": "b, c", "score": None},
                    {"id": 3, "name": "cy", "score": -2.25}], rows


@suite.test
def licence_seller_sig_verifies_here(d):
    """fmt-sign license: seller_sig verifies here over the documented message; a changed term does not"""
    import hashlib
    p = scratch(d)
    sec, pub = os.path.join(d, "seller.key"), os.path.join(d, "seller.pub")
    terms = os.path.join(d, "terms.json")
    open(terms, "w").write('{"use": "research", "fee": 12.5}')
    if not os.path.exists(sec):
        run("fmt-sign", "keygen", "-W", "-p", pub, "-s", sec)
    out = os.path.join(d, "lic.ald")
    run("fmt-convert", "--quiet", "--force", p["csv"], out)
    run("fmt-sign", "license", "-q", "--licensee", "acme", "--expires", "2999-01-01", "--terms", terms,
        "--sign-key", sec, out)
    f = open(out, "rb").read()
    s = parse(f)
    assert s["flags"] == 0x0A, s["flags"]
    end = s["enc"] + len(s["payload"])
    file_sig, pk_block, lic = f[end:end + 64], f[end + 64:end + 96], f[end + 96:-4]
    Ed25519PublicKey.from_public_bytes(pk_block).verify(file_sig, f[:end])  # the §6 block
    n = struct.unpack_from("<I", lic, 71)[0]
    text = lic[75:75 + n]
    doc = json.loads(text)
    assert doc["terms"] == {"use": "research", "fee": 12.5} and doc["fmtkit_licence"] == 1
    key = base64.b64decode(doc["seller_key"])
    assert key[:2] == b"Ed" and key == base64.b64decode(open(pub).read().splitlines()[1])
    prefix = text[:text.rindex(b',"seller_sig":"')]
    msg = b"fmtkit-ald-licence-v1\0" + lic[:71] + prefix + hashlib.sha256(f[:end]).digest() + file_sig
    seller = Ed25519PublicKey.from_public_bytes(key[10:])
    seller.verify(base64.b64decode(doc["seller_sig"]), msg)
    try:
        seller.verify(base64.b64decode(doc["seller_sig"]), msg.replace(b"research", b"commerce"))
        raise AssertionError("a changed term verified")
    except InvalidSignature:
        pass


suite.finish()
