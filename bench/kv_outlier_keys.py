#!/usr/bin/env python3
"""Copies a llama GGUF (F32 projections) into one whose keys have outlier channels.

Trained LLMs' key caches have a few channels far larger than the rest (KIVI, KVQuant), which is
what a Hadamard rotation of K before 4-bit quantization is for. The small fixtures have none, so
this gives them some without changing what the model computes: in every layer, one RoPE pair of
channels of each KV head (channels 2p and 2p + 1, p = (7 * layer + 3 * head) mod (head_dim / 2);
interleaved RoPE rotates within such a pair, so a common factor commutes with it) is multiplied
by S in attn_k and by 1 / S in the attn_q rows of every query head that reads that KV head. Every
score q . k is unchanged up to float rounding; only the stored K differs.

    bench/kv_outlier_keys.py IN.gguf OUT.gguf [--scale S]

Standard library only. Refuses anything but a llama-architecture file with interleaved RoPE and
F32 attn_q / attn_k tensors (convert with `strata quantize IN OUT F32` first).
"""
import argparse
import array
import shutil
import struct
import sys

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
           12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def value(self, t):
        if t in SCALARS:
            return self.take(SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        raise ValueError("unknown GGUF value type %d" % t)


def parse(data):
    r = Reader(data)
    if r.take("<I") != 0x46554747:
        raise ValueError("not a GGUF file")
    r.take("<I")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        kv[key] = r.value(r.take("<I"))
    tensors = {}
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take("<Q") for _ in range(r.take("<I"))]
        tensors[name] = (ne, r.take("<I"), r.take("<Q"))
    align = kv.get("general.alignment", 32)
    return kv, tensors, (r.pos + align - 1) // align * align


def scale_rows(f, data_offset, tensor, rows, factor):
    ne, _, offset = tensor
    n_in = ne[0]
    for row in rows:
        pos = data_offset + offset + 4 * n_in * row
        f.seek(pos)
        v = array.array("f")
        v.frombytes(f.read(4 * n_in))
        if sys.byteorder != "little":
            v.byteswap()
        v = array.array("f", (x * factor for x in v))
        if sys.byteorder != "little":
            v.byteswap()
        f.seek(pos)
        f.write(v.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--scale", type=float, default=10.0)
    args = ap.parse_args()
    if not args.scale > 0:
        sys.exit("--scale must be positive")
    try:
        with open(args.src, "rb") as f:
            data = f.read()
        kv, tensors, data_offset = parse(data)
    except (OSError, ValueError, struct.error, UnicodeDecodeError) as e:
        sys.exit("%s: cannot read as GGUF: %s" % (args.src, e))
    if kv.get("general.architecture") != "llama":
        sys.exit("only llama-architecture files (interleaved RoPE, no q/k norms or biases)")
    n_layer = kv["llama.block_count"]
    n_head = kv["llama.attention.head_count"]
    n_kv = kv.get("llama.attention.head_count_kv", n_head)
    head_dim = kv.get("llama.attention.key_length", kv["llama.embedding_length"] // n_head)
    if kv.get("llama.rope.dimension_count", head_dim) != head_dim:
        sys.exit("partial RoPE is not handled")
    names = ["blk.%d.attn_%s.weight" % (layer, t) for layer in range(n_layer) for t in "qk"]
    missing = [n for n in names if n not in tensors]
    if missing:
        sys.exit("%s: no tensor %s" % (args.src, missing[0]))
    if any(tensors[n][1] != 0 for n in names):
        sys.exit("attn_q / attn_k must be F32: convert with `strata quantize IN OUT F32` first")
    for n in names:
        ne, _, offset = tensors[n]
        count = 1
        for d in ne:
            count *= d
        if data_offset + offset + 4 * count > len(data):
            sys.exit("%s: tensor %s runs past the end of the file" % (args.src, n))
    shutil.copyfile(args.src, args.dst)
    with open(args.dst, "r+b") as f:
        for layer in range(n_layer):
            k_rows, q_rows = [], []
            for g in range(n_kv):
                p = (7 * layer + 3 * g) % (head_dim // 2)
                k_rows += [g * head_dim + 2 * p, g * head_dim + 2 * p + 1]
                for h in range(g * (n_head // n_kv), (g + 1) * (n_head // n_kv)):
                    q_rows += [h * head_dim + 2 * p, h * head_dim + 2 * p + 1]
            scale_rows(f, data_offset, tensors["blk.%d.attn_k.weight" % layer], k_rows, args.scale)
            scale_rows(f, data_offset, tensors["blk.%d.attn_q.weight" % layer], q_rows, 1.0 / args.scale)
    print("%s: %d layers, one RoPE pair of K channels per KV head x %g (Q / %g)" %
          (args.dst, n_layer, args.scale, args.scale))


if __name__ == "__main__":
    main()
