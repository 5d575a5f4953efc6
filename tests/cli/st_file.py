"""A safetensors file written for the bats tests from (name, dtype, struct format, values)."""
import json
import struct


def st(path, tensors):
    header, data = {}, b""
    for name, dtype, fmt, vals in tensors:
        b = struct.pack("<%d%s" % (len(vals), fmt), *vals)
        header[name] = {"dtype": dtype, "shape": [len(vals)], "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
