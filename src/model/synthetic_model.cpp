#include "model/synthetic_model.h"

#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "quant/quantize.h"
#include "sampling/rng.h"

namespace strata {

namespace {

SynthPreset arch_preset(std::string name, std::string arch, int64_t n_embd, int64_t n_layer, int64_t n_head,
                        int64_t n_head_kv, int64_t n_ff, int64_t n_vocab, int64_t n_ctx, float rope_base,
                        int64_t sliding_window, int64_t head_dim) {
  SynthPreset p{std::move(name), std::move(arch), n_embd,    n_layer,       n_head, n_head_kv, n_ff,
                n_vocab,         n_ctx,           rope_base, sliding_window};
  p.head_dim = head_dim;
  return p;
}

SynthPreset moe_preset(SynthPreset p, int64_t n_expert, int64_t n_used, int64_t n_ff_exp) {
  p.n_expert = n_expert;
  p.n_expert_used = n_used;
  p.n_ff_exp = n_ff_exp;
  return p;
}

// DeepSeek-V3's layout scaled down: q-LoRA 512, kv-LoRA 512 + rope 64 (the real latent row),
// 128 + 64 query dims and 128 value dims per head, one dense leading layer, one shared expert,
// sigmoid routing over 4 groups of which 2.
SynthPreset deepseek_preset(SynthPreset p) {
  p.n_expert_shared = 1;
  p.n_dense_lead = 1;
  p.n_group = 4;
  p.n_group_used = 2;
  p.q_lora = 512;
  p.kv_lora = 512;
  p.qk_nope = 128;
  p.qk_rope = 64;
  p.v_head = 128;
  return p;
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> presets = {
      {"tinyllama-1.1b", "llama", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, 0},
      {"synth-tiny", "llama", 256, 4, 4, 2, 768, 512, 2048, 10000.0f, 0},
      {"tinyllama-mini", "llama", 512, 6, 8, 4, 512, 2048, 2048, 10000.0f, 0},
      {"llama-7b", "llama", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, 0},
      {"mistral-7b", "mistral", 4096, 32, 32, 8, 14336, 32000, 32768, 10000.0f, 4096},
      {"qwen2-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 0},
      // The newer families at ~1B (real shapes where a model of that size exists).
      arch_preset("qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 3072, 151936, 40960, 1e6f, 0, 128),
      moe_preset(arch_preset("qwen3-moe-tiny", "qwen3moe", 1024, 16, 16, 4, 0, 151936, 40960, 1e6f, 0, 64), 8,
                 2, 2048),
      arch_preset("gemma2-2b", "gemma2", 2304, 26, 8, 4, 9216, 256000, 8192, 10000.0f, 4096, 256),
      arch_preset("gemma3-1b", "gemma3", 1152, 26, 4, 1, 6912, 262144, 32768, 1e6f, 512, 256),
      arch_preset("phi3-1b", "phi3", 2048, 16, 32, 8, 5632, 32064, 4096, 10000.0f, 0, 0),
      moe_preset(arch_preset("mixtral-tiny", "llama", 1024, 16, 16, 4, 2048, 32000, 32768, 1e6f, 0, 0), 8, 2,
                 2048),
      deepseek_preset(moe_preset(
          arch_preset("deepseek-v3-tiny", "deepseek2", 1024, 16, 16, 1, 4096, 129280, 4096, 10000.0f, 0, 0),
          16, 4, 768)),
      moe_preset(
          arch_preset("gpt-oss-tiny", "gpt-oss", 1024, 16, 16, 4, 0, 201088, 131072, 150000.0f, 128, 64), 16,
          4, 1024),
      arch_preset("olmo2-1b", "olmo2", 2048, 16, 16, 16, 8192, 100352, 4096, 500000.0f, 0, 0),
  };
  return presets;
}

const SynthPreset& find_synth_preset(const std::string& name) {
  std::string known;
  for (const SynthPreset& p : synth_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  STRATA_THROW("unknown preset '", name, "' (known: ", known, ")");
}

void add_synthetic_vocab(Metadata& md, int64_t n_vocab) {
  STRATA_CHECK(n_vocab >= 259 + 26, "synthetic vocab needs at least 285 tokens");
  GgufArray tokens, scores, types;
  tokens.elem_type = GgufType::STRING;
  scores.elem_type = GgufType::FLOAT32;
  types.elem_type = GgufType::INT32;
  auto add = [&](std::string text, int32_t kind) {
    if (static_cast<int64_t>(tokens.strings.size()) >= n_vocab) return;
    scores.f32.push_back(kind == 1 ? -static_cast<float>(tokens.strings.size()) : 0.0f);
    tokens.strings.push_back(std::move(text));
    types.i32.push_back(kind);
  };
  add("<unk>", 2);
  add("<s>", 3);
  add("</s>", 3);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, 6);
  }
  const std::string space = "\xe2\x96\x81";  // "▁"
  for (char ch = 'a'; ch <= 'z'; ++ch) add(std::string(1, ch), 1);
  for (char ch = 'a'; ch <= 'z'; ++ch) add(space + ch, 1);
  for (const char* p : {".", ",", "!", "?", "'", "\"", ":", ";", "-"}) add(p, 1);
  add(space, 1);
  // Letter bigrams and trigrams, with and without the word-start marker, until the vocab is full.
  for (int len = 2; len <= 4 && static_cast<int64_t>(tokens.strings.size()) < n_vocab; ++len) {
    int64_t combos = 1;
    for (int i = 0; i < len; ++i) combos *= 26;
    for (int64_t c = 0; c < combos && static_cast<int64_t>(tokens.strings.size()) < n_vocab; ++c) {
      std::string s;
      for (int64_t v = c, i = 0; i < len; ++i, v /= 26) s.insert(s.begin(), static_cast<char>('a' + v % 26));
      add(space + s, 1);
      add(s, 1);
    }
  }
  STRATA_CHECK(static_cast<int64_t>(tokens.strings.size()) == n_vocab);
  md.set("tokenizer.ggml.model", GgufValue::of_string("llama"));
  md.set("tokenizer.ggml.tokens", GgufValue::of_array(std::move(tokens)));
  md.set("tokenizer.ggml.scores", GgufValue::of_array(std::move(scores)));
  md.set("tokenizer.ggml.token_type", GgufValue::of_array(std::move(types)));
  md.set("tokenizer.ggml.unknown_token_id", GgufValue::of_u32(0));
  md.set("tokenizer.ggml.bos_token_id", GgufValue::of_u32(1));
  md.set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(2));
  md.set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(true));
  md.set("tokenizer.ggml.add_eos_token", GgufValue::of_bool(false));
}

namespace {

Metadata preset_metadata(const SynthPreset& p, TensorType type) {
  Metadata md;
  const std::string& a = p.arch;
  md.set("general.architecture", GgufValue::of_string(a));
  md.set("general.name", GgufValue::of_string("strata-synth-" + p.name));
  md.set(a + ".context_length", GgufValue::of_u32(static_cast<uint32_t>(p.n_ctx)));
  md.set(a + ".embedding_length", GgufValue::of_u32(static_cast<uint32_t>(p.n_embd)));
  md.set(a + ".feed_forward_length", GgufValue::of_u32(static_cast<uint32_t>(p.n_ff)));
  md.set(a + ".block_count", GgufValue::of_u32(static_cast<uint32_t>(p.n_layer)));
  md.set(a + ".attention.head_count", GgufValue::of_u32(static_cast<uint32_t>(p.n_head)));
  md.set(a + ".attention.head_count_kv", GgufValue::of_u32(static_cast<uint32_t>(p.n_head_kv)));
  md.set(a + ".attention.layer_norm_rms_epsilon", GgufValue::of_f32(1e-5f));
  md.set(a + ".rope.freq_base", GgufValue::of_f32(p.rope_base));
  md.set(a + ".rope.dimension_count", GgufValue::of_u32(static_cast<uint32_t>(p.n_embd / p.n_head)));
  if (p.sliding_window > 0)
    md.set(a + ".attention.sliding_window", GgufValue::of_u32(static_cast<uint32_t>(p.sliding_window)));
  md.set(a + ".vocab_size", GgufValue::of_u32(static_cast<uint32_t>(p.n_vocab)));
  md.set("general.file_type", GgufValue::of_u32(llama_file_type(type)));
  add_synthetic_vocab(md, p.n_vocab);
  return md;
}

}  // namespace

void fill_gaussian_row(float* out, int64_t n, uint64_t seed, uint64_t tensor, int64_t row, float sigma) {
  Rng rng(seed ^ (tensor * 0x9e3779b97f4a7c15ULL) ^ (static_cast<uint64_t>(row) * 0xd1b54a32d192ed03ULL));
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
    const double r = std::sqrt(-2.0 * std::log(u1)) * sigma;
    out[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
}

namespace {

// The preset's metadata with the tokenizer of `vocab_path` instead of the synthetic one.
Metadata with_vocab_of(Metadata md, const SynthPreset& p, const std::string& vocab_path) {
  const auto vocab = GgufFile::open(vocab_path);
  const GgufValue* tokens = vocab->metadata().find("tokenizer.ggml.tokens");
  if (!tokens || !tokens->as_array() || static_cast<int64_t>(tokens->as_array()->size()) != p.n_vocab)
    STRATA_THROW("--vocab ", vocab_path, " must hold ", p.n_vocab, " tokens for preset ", p.name);
  Metadata out;
  for (const auto& [key, value] : md.entries())
    if (key.rfind("tokenizer.", 0) != 0) out.add(key, value);
  for (const auto& [key, value] : vocab->metadata().entries())
    if (key.rfind("tokenizer.", 0) == 0) out.add(key, value);
  return out;
}

}  // namespace

void write_synthetic_model(const SynthPreset& p, const SynthOptions& o, const std::string& path,
                           const std::function<void(size_t, size_t)>& progress) {
  if (is_arch_preset(p)) return write_arch_synthetic_model(p, o, path, progress);
  GgufWriter w;
  Metadata md = preset_metadata(p, o.type);
  w.set_metadata(o.vocab_path.empty() ? std::move(md) : with_vocab_of(std::move(md), p, o.vocab_path));
  ThreadPool pool(o.n_threads);
  const int64_t head_dim = p.n_embd / p.n_head, n_q = p.n_head * head_dim, n_kv = p.n_head_kv * head_dim;
  uint64_t tensor_index = 0;
  auto ones = [&](const std::string& name, int64_t n) {
    w.add_tensor(name, TensorType::F32, {n}, [n](void* dst, size_t) {
      std::fill(static_cast<float*>(dst), static_cast<float*>(dst) + n, 1.0f);
    });
  };
  auto matrix = [&](const std::string& name, int64_t n_out, int64_t n_in, float sigma) {
    const TensorType type = fallback_type(o.type, n_in);
    const uint64_t id = tensor_index++;
    w.add_tensor(name, type, {n_in, n_out}, [=, &pool, &o](void* dst, size_t) {
      std::vector<float> rows(static_cast<size_t>(n_in * n_out));
      pool.parallel_for(n_out, 64, [&](int64_t b, int64_t e, int) {
        for (int64_t r = b; r < e; ++r) fill_gaussian_row(rows.data() + r * n_in, n_in, o.seed, id, r, sigma);
      });
      quantize_rows(type, rows.data(), dst, n_out, n_in, nullptr, &pool);
    });
  };
  auto bias = [&](const std::string& name, int64_t n) {
    const uint64_t id = tensor_index++;
    w.add_tensor(name, TensorType::F32, {n}, [=, &o](void* dst, size_t) {
      fill_gaussian_row(static_cast<float*>(dst), n, o.seed, id, 0, 0.02f);
    });
  };
  matrix("token_embd.weight", p.n_vocab, p.n_embd, 0.02f);
  for (int64_t il = 0; il < p.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    ones(b + "attn_norm.weight", p.n_embd);
    matrix(b + "attn_q.weight", n_q, p.n_embd, 0.02f);
    matrix(b + "attn_k.weight", n_kv, p.n_embd, 0.02f);
    matrix(b + "attn_v.weight", n_kv, p.n_embd, 0.02f);
    if (p.arch == "qwen2") {
      bias(b + "attn_q.bias", n_q);
      bias(b + "attn_k.bias", n_kv);
      bias(b + "attn_v.bias", n_kv);
    }
    matrix(b + "attn_output.weight", p.n_embd, n_q, 0.02f);
    ones(b + "ffn_norm.weight", p.n_embd);
    matrix(b + "ffn_gate.weight", p.n_ff, p.n_embd, 0.02f);
    matrix(b + "ffn_up.weight", p.n_ff, p.n_embd, 0.02f);
    matrix(b + "ffn_down.weight", p.n_embd, p.n_ff, 0.02f);
  }
  ones("output_norm.weight", p.n_embd);
  matrix("output.weight", p.n_vocab, p.n_embd, 0.02f);
  const size_t total = w.tensor_count();
  w.write(path, [&](size_t i) {
    if (progress) progress(i + 1, total);
  });
}

}  // namespace strata
