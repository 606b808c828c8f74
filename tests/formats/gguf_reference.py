#!/usr/bin/env python3
"""Independent GGUF parser (Python standard library only) used as a test reference.

Prints one JSON object: version, alignment, data_offset, kv (list of [key, type_id, value]) and
tensors (name, type id, ne, offset, nbytes, crc32 of the data). Floats are given as their IEEE
bit patterns so the comparison is exact (and NaN/inf survive JSON); strings (keys, values, tensor
names) as the hex of their bytes, so any byte sequence survives.
"""
import json
import struct
import sys
import zlib

# ggml type id -> (block size, bytes per block), from the GGUF block layouts.
BLOCKS = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
          8: (32, 34), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210)}
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 7: "<?", 10: "<Q", 11: "<q"}


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        size = struct.calcsize(fmt)
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].hex()
        self.pos += n
        return s

    def value(self, t):
        if t in SCALARS:
            return self.take(SCALARS[t])
        if t == 6:
            return self.take("<I")  # f32 bits
        if t == 12:
            return self.take("<Q")  # f64 bits
        if t == 8:
            return self.string()
        if t == 9:
            et = self.take("<I")
            n = self.take("<Q")
            return {"elem_type": et, "items": [self.value(et) for _ in range(n)]}
        raise ValueError("bad type %d" % t)


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert r.take("<I") == 0x46554747
    out = {"version": r.take("<I")}
    n_tensors = r.take("<Q")
    n_kv = r.take("<Q")
    kv = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        kv.append([key, t, r.value(t)])
    out["kv"] = kv
    alignment = 32
    for key, t, v in kv:
        if key == bytes.hex(b"general.alignment"):
            alignment = v
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        ne = [r.take("<Q") for _ in range(n_dims)]
        t = r.take("<I")
        off = r.take("<Q")
        infos.append((name, n_dims, ne, t, off))
    data_offset = (r.pos + alignment - 1) // alignment * alignment
    out["alignment"] = alignment
    out["data_offset"] = data_offset
    tensors = []
    for name, n_dims, ne, t, off in infos:
        bs, bb = BLOCKS[t]
        n = 1
        for d in ne[1:]:
            n *= d
        nbytes = ne[0] // bs * bb * n
        start = data_offset + off
        tensors.append({"name": name, "n_dims": n_dims, "ne": ne, "type": t, "offset": off,
                        "nbytes": nbytes, "crc32": zlib.crc32(data[start:start + nbytes])})
    out["tensors"] = tensors
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
