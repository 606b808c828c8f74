#!/usr/bin/env python3
"""Independent reference for the Hugging Face loader (Python standard library only).

Reads DIR/config.json and DIR/model.safetensors, maps tensor names to GGUF names, permutes the
q/k projections of llama/mistral the way llama.cpp's convert_hf_to_gguf.py does
(w.reshape(n_head, 2, rows // n_head // 2, *rest).swapaxes(1, 2).reshape(w.shape)), and prints
JSON: {gguf_name: {"ne": [...], "dtype": "F32", "crc32": ...}} of the resulting tensor bytes.
"""
import json
import struct
import sys
import zlib

LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
SIZES = {"F32": 4, "F16": 2, "BF16": 2}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".", 3)  # model, layers, N, suffix
    return "blk.%s.%s" % (parts[2], LAYER[parts[3]])


def swap_halves(rows, n_head):
    """rows: list of row byte strings; the reshape (n_head, 2, half) -> swapaxes(1, 2)."""
    half = len(rows) // n_head // 2
    grid = [[[rows[(h * 2 + a) * half + b] for b in range(half)] for a in range(2)] for h in range(n_head)]
    swapped = [[[grid[h][a][b] for a in range(2)] for b in range(half)] for h in range(n_head)]
    return [r for h in swapped for pair in h for r in pair]


def main(d):
    config = json.load(open(d + "/config.json"))
    arch = config["architectures"][0]
    permute = arch in ("LlamaForCausalLM", "MistralForCausalLM")
    n_head = config["num_attention_heads"]
    n_kv = config.get("num_key_value_heads") or n_head
    data = open(d + "/model.safetensors", "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    names = [k for k in header if k != "__metadata__"]
    tied = config.get("tie_word_embeddings", False)
    out = {}
    for hf in names:
        info = header[hf]
        begin, end = info["data_offsets"]
        raw = body[begin:end]
        name = gguf_name(hf)
        if name == "output.weight" and tied:
            if "model.embed_tokens.weight" in names:
                continue
            name = "token_embd.weight"
        shape = info["shape"]
        if permute and (".attn_q." in name or ".attn_k." in name):
            heads = n_head if ".attn_q." in name else n_kv
            row = len(raw) // shape[0]
            rows = [raw[i * row:(i + 1) * row] for i in range(shape[0])]
            raw = b"".join(swap_halves(rows, heads))
        out[name] = {"ne": list(reversed(shape)), "dtype": info["dtype"], "crc32": zlib.crc32(raw)}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
