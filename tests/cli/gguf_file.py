"""GGUF v3 bytes written by hand for the bats tests (specs/gguf.md): the callers make the
key-value pairs and tensor infos with s(); gguf() lays out the header, the 32-byte alignment
and the data."""
import struct


def s(x):
    """A GGUF string: its u64 length, then its bytes."""
    b = x.encode() if isinstance(x, str) else x
    return struct.pack("<Q", len(b)) + b


def gguf(path, n_tensors, n_kv, kv, infos=b"", data=b""):
    head = b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kv + infos
    with open(path, "wb") as f:
        f.write(head + b"\0" * (-len(head) % 32) + data)
