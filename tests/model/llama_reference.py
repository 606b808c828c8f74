#!/usr/bin/env python3
"""Float64 forward pass of a llama GGUF (Python standard library only), a test reference.

Usage: llama_reference.py MODEL.gguf TOKEN,TOKEN,...  ->  JSON {"logits": [[...], ...]}, the
logits of every position. It reads only llama.cpp's standard keys and tensor names and computes
llama.cpp's llama graph from them, written from the published formulas: RMSNorm with
llama.attention.layer_norm_rms_epsilon, interleaved-pair rope with llama.rope.freq_base over
llama.rope.dimension_count dims, grouped-query attention scaled by 1/sqrt(head_dim), SwiGLU, and
the output matrix or, when output.weight is absent, token_embd (tied). Tensors must be F32 or F16.
It knows nothing of how a file was made, so a file it computes correctly needs no other keys.
"""
import array
import json
import math
import operator
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "formats"))
from gguf_reference import Reader  # noqa: E402  (the independent GGUF parser of the format tests)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert r.take("<I") == 0x46554747, "not a GGUF file"
    r.take("<I")  # version
    n_tensors = r.take("<Q")
    n_kv = r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = bytes.fromhex(r.string()).decode()
        t = r.take("<I")
        v = r.value(t)
        if t == 6:
            v = struct.unpack("<f", struct.pack("<I", v))[0]
        elif t == 8:
            v = bytes.fromhex(v).decode("utf-8", "replace")
        kv[key] = v
    infos = []
    for _ in range(n_tensors):
        name = bytes.fromhex(r.string()).decode()
        n_dims = r.take("<I")
        ne = [r.take("<Q") for _ in range(n_dims)]
        infos.append((name, ne, r.take("<I"), r.take("<Q")))
    alignment = kv.get("general.alignment", 32)
    base = (r.pos + alignment - 1) // alignment * alignment
    tensors = {}
    for name, ne, t, off in infos:
        n = math.prod(ne)
        start = base + off
        if t == 0:
            values = array.array("f", data[start:start + 4 * n])
        elif t == 1:
            values = array.array("d", struct.unpack("<%de" % n, data[start:start + 2 * n]))
        else:
            raise SystemExit("%s: tensor type %d is not F32/F16" % (name, t))
        tensors[name] = (ne, values)
    return kv, tensors


def matvec(w, x):
    """w: (ne, values) with ne = [n_in, n_out]; x: [n_in] -> [n_out]."""
    (n_in, n_out), v = w
    return [sum(map(operator.mul, v[r * n_in:(r + 1) * n_in], x)) for r in range(n_out)]


def rms_norm(x, w, eps):
    scale = 1.0 / math.sqrt(sum(a * a for a in x) / len(x) + eps)
    return [a * scale * b for a, b in zip(x, w[1])]


def rope(x, pos, n_heads, head_dim, n_rot, base):
    out = list(x)
    for h in range(n_heads):
        o = h * head_dim
        for i in range(n_rot // 2):
            theta = pos * base ** (-2.0 * i / n_rot)
            c, s = math.cos(theta), math.sin(theta)
            a, b = x[o + 2 * i], x[o + 2 * i + 1]
            out[o + 2 * i] = a * c - b * s
            out[o + 2 * i + 1] = a * s + b * c
    return out


def hparams(kv, t):
    """The llama hyper-parameters and the embedding/output matrices every forward here reads:
    (n_embd, n_layer, n_head, n_head_kv, head_dim, n_rot, rope base, rms eps, group, embd, out_w)."""
    assert kv["general.architecture"] == "llama", "llama models only"
    n_embd = kv["llama.embedding_length"]
    n_layer = kv["llama.block_count"]
    n_head = kv["llama.attention.head_count"]
    n_head_kv = kv.get("llama.attention.head_count_kv", n_head)
    head_dim = n_embd // n_head
    n_rot = kv.get("llama.rope.dimension_count", head_dim)
    base = kv.get("llama.rope.freq_base", 10000.0)
    eps = kv["llama.attention.layer_norm_rms_epsilon"]
    group = n_head // n_head_kv
    embd = t["token_embd.weight"]
    out_w = t.get("output.weight", embd)
    return (n_embd, n_layer, n_head, n_head_kv, head_dim, n_rot, base, eps, group, embd, out_w)


def forward(kv, t, tokens):
    (n_embd, n_layer, n_head, n_head_kv, head_dim, n_rot, base, eps, group, embd, out_w) = hparams(kv, t)
    keys = [[] for _ in range(n_layer)]
    values = [[] for _ in range(n_layer)]
    logits = []
    for pos, tok in enumerate(tokens):
        x = list(embd[1][tok * n_embd:(tok + 1) * n_embd])
        for il in range(n_layer):
            blk = "blk.%d." % il
            h = rms_norm(x, t[blk + "attn_norm.weight"], eps)
            q = rope(matvec(t[blk + "attn_q.weight"], h), pos, n_head, head_dim, n_rot, base)
            keys[il].append(rope(matvec(t[blk + "attn_k.weight"], h), pos, n_head_kv, head_dim, n_rot, base))
            values[il].append(matvec(t[blk + "attn_v.weight"], h))
            attn = []
            for hh in range(n_head):
                g = hh // group
                qh = q[hh * head_dim:(hh + 1) * head_dim]
                scores = [sum(map(operator.mul, qh, k[g * head_dim:(g + 1) * head_dim])) / math.sqrt(head_dim)
                          for k in keys[il]]
                m = max(scores)
                p = [math.exp(s - m) for s in scores]
                z = sum(p)
                for e in range(head_dim):
                    attn.append(sum(pi * v[g * head_dim + e] for pi, v in zip(p, values[il])) / z)
            x = [a + b for a, b in zip(x, matvec(t[blk + "attn_output.weight"], attn))]
            h = rms_norm(x, t[blk + "ffn_norm.weight"], eps)
            gate = matvec(t[blk + "ffn_gate.weight"], h)
            up = matvec(t[blk + "ffn_up.weight"], h)
            act = [gv / (1.0 + math.exp(-gv)) * uv for gv, uv in zip(gate, up)]
            x = [a + b for a, b in zip(x, matvec(t[blk + "ffn_down.weight"], act))]
        logits.append(matvec(out_w, rms_norm(x, t["output_norm.weight"], eps)))
    return logits


def main():
    kv, tensors = load(sys.argv[1])
    tokens = [int(v) for v in sys.argv[2].split(",")]
    json.dump({"logits": forward(kv, tensors, tokens)}, sys.stdout)


if __name__ == "__main__":
    main()
