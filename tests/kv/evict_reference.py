#!/usr/bin/env python3
"""Float64 reference for KV eviction (a test reference; Python standard library only).

Usage: evict_reference.py MODEL.gguf SPEC.json -> JSON {"logits": [[...] per position],
"scores": [[[...] per kv head, layer-major] per event]}.

SPEC: {"tokens": [...], "events": [{"from": P, "kept": [[positions] per (layer, kv head)]}]}.
The llama forward of llama_reference.py (the same formulas), except that after an event the
queries at positions q >= P of layer l, kv head g see only the keys at that event's kept
positions for (l, g) and at positions P..q: what attending to exactly the kept tokens, at their
original positions, means. Keys and values themselves are never changed (a token's K and V
depend only on the queries before it). "scores" are H2O's: for each event, per (layer, kv head),
the softmax probabilities each position < P got from every query < P (each query over the keys
it could see), summed over the query heads of the group.
"""
import json
import math
import operator
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
from llama_reference import hparams, load, matvec, rms_norm, rope  # noqa: E402


def forward(kv, t, tokens, events):
    (n_embd, n_layer, n_head, n_head_kv, head_dim, n_rot, base, eps, group, embd, out_w) = hparams(kv, t)
    events = sorted(events, key=lambda e: e["from"])
    keys = [[] for _ in range(n_layer)]
    values = [[] for _ in range(n_layer)]
    acc = [[[0.0] * len(tokens) for _ in range(n_head_kv)] for _ in range(n_layer)]
    snapshots = []
    logits = []
    for pos, tok in enumerate(tokens):
        for e in events:
            if e["from"] == pos:
                snapshots.append([list(acc[il][g][:pos]) for il in range(n_layer) for g in range(n_head_kv)])
        ev = None
        for e in events:
            if e["from"] <= pos:
                ev = e
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
                if ev is None:
                    visible = list(range(pos + 1))
                else:
                    visible = sorted(set(ev["kept"][il * n_head_kv + g]) | set(range(ev["from"], pos + 1)))
                qh = q[hh * head_dim:(hh + 1) * head_dim]
                scores = [sum(map(operator.mul, qh, keys[il][j][g * head_dim:(g + 1) * head_dim])) /
                          math.sqrt(head_dim) for j in visible]
                m = max(scores)
                p = [math.exp(s - m) for s in scores]
                z = sum(p)
                for j, pj in zip(visible, p):
                    acc[il][g][j] += pj / z
                for e in range(head_dim):
                    attn.append(sum(pj * values[il][j][g * head_dim + e] for pj, j in zip(p, visible)) / z)
            x = [a + b for a, b in zip(x, matvec(t[blk + "attn_output.weight"], attn))]
            h = rms_norm(x, t[blk + "ffn_norm.weight"], eps)
            gate = matvec(t[blk + "ffn_gate.weight"], h)
            up = matvec(t[blk + "ffn_up.weight"], h)
            act = [gv / (1.0 + math.exp(-gv)) * uv for gv, uv in zip(gate, up)]
            x = [a + b for a, b in zip(x, matvec(t[blk + "ffn_down.weight"], act))]
        logits.append(matvec(out_w, rms_norm(x, t["output_norm.weight"], eps)))
    return logits, snapshots


def main():
    kv, tensors = load(sys.argv[1])
    with open(sys.argv[2]) as f:
        spec = json.load(f)
    logits, scores = forward(kv, tensors, spec["tokens"], spec["events"])
    json.dump({"logits": logits, "scores": scores}, sys.stdout)


if __name__ == "__main__":
    main()
