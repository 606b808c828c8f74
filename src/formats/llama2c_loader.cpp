#include "formats/llama2c_loader.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/check.h"

namespace strata {
namespace {

// "ak42" read as a little-endian u32: the magic of llama2.c's newer export formats.
constexpr uint32_t kLlama2cExportMagic = 0x616b3432u;

enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

// Number of f32 values the checkpoint described by `h` holds; false on overflow.
bool checkpoint_floats(const Llama2cHeader& h, uint64_t& out) {
  const uint64_t D = static_cast<uint64_t>(h.dim), H = static_cast<uint64_t>(h.hidden_dim);
  const uint64_t L = static_cast<uint64_t>(h.n_layers), V = static_cast<uint64_t>(h.n_vocab());
  const uint64_t KV = static_cast<uint64_t>(h.kv_dim()), S = static_cast<uint64_t>(h.seq_len);
  const uint64_t HD = static_cast<uint64_t>(h.head_dim());
  // Per layer: 2 norms, wq, wk, wv, wo, w1, w2, w3. All factors are < 2^31.
  uint64_t per_layer = 0, t = 0, total = 0;
  bool overflow = __builtin_mul_overflow(D, D, &t);
  per_layer = 2 * D;
  overflow |= __builtin_add_overflow(per_layer, 2 * t, &per_layer);       // wq, wo
  overflow |= __builtin_add_overflow(per_layer, 2 * KV * D, &per_layer);  // wk, wv
  overflow |= __builtin_add_overflow(per_layer, 3 * H * D, &per_layer);   // w1, w2, w3
  overflow |= __builtin_mul_overflow(per_layer, L, &total);
  overflow |= __builtin_add_overflow(total, V * D * (h.shared_classifier() ? 1 : 2), &total);
  overflow |= __builtin_add_overflow(total, D + S * HD, &total);  // final norm, rope tables
  out = total;
  return !overflow;
}

bool is_byte_token(const std::string& s) {
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(s[3])) && std::isxdigit(static_cast<unsigned char>(s[4]));
}

// Translates one llama2.c token text to its SentencePiece spelling and type.
std::pair<std::string, int32_t> translate_token(std::string text) {
  const size_t first = text.find_first_not_of('\n');
  const size_t last = text.find_last_not_of('\n');
  const std::string trimmed = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  if (trimmed == "<unk>") return {trimmed, kUnknown};
  if (trimmed == "<s>" || trimmed == "</s>") return {trimmed, kControl};
  if (is_byte_token(text)) return {text, kByte};
  std::string out;
  out.reserve(text.size() + 8);
  for (const char c : text) {
    if (c == ' ')
      out += "\xe2\x96\x81";  // U+2581, SentencePiece's word boundary
    else
      out += c;
  }
  return {out, kNormal};
}

std::string file_stem(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

// Tokenizer files to try for a checkpoint: tokenizer.bin then tok*.bin in its directory.
std::vector<std::string> tokenizer_candidates(const std::string& model_path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::is_regular_file(dir / "tokenizer.bin", ec)) out.push_back((dir / "tokenizer.bin").string());
  std::vector<std::string> tok;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 7 && name.rfind("tok", 0) == 0 && name.ends_with(".bin") && name != "tokenizer.bin" &&
        it->is_regular_file(ec) && !fs::equivalent(it->path(), model_path, ec))
      tok.push_back(it->path().string());
  }
  std::sort(tok.begin(), tok.end());
  out.insert(out.end(), tok.begin(), tok.end());
  return out;
}

}  // namespace

Llama2cHeader parse_llama2c_header(const uint8_t* data, size_t size, uint64_t file_size,
                                   const std::string& name) {
  if (size < kLlama2cHeaderBytes)
    STRATA_THROW(name, ": too small for a llama2.c checkpoint (", size, " bytes)");
  uint32_t magic;
  std::memcpy(&magic, data, 4);
  if (magic == kLlama2cExportMagic)
    STRATA_THROW(name, ": llama2.c export format version ", data[4] | (data[5] << 8),
                 " is not supported (only the legacy format written by export.py --version 0)");
  Llama2cHeader h;
  std::memcpy(&h, data, kLlama2cHeaderBytes);
  if (h.dim <= 0 || h.hidden_dim <= 0 || h.n_layers <= 0 || h.n_heads <= 0 || h.n_kv_heads <= 0 ||
      h.seq_len <= 0 || h.vocab_size == 0 || h.vocab_size == INT32_MIN)
    STRATA_THROW(name, ": invalid llama2.c header (dim ", h.dim, ", hidden_dim ", h.hidden_dim, ", layers ",
                 h.n_layers, ", heads ", h.n_heads, ", kv heads ", h.n_kv_heads, ", vocab ", h.vocab_size,
                 ", seq_len ", h.seq_len, ")");
  if (h.dim % h.n_heads != 0 || h.n_heads % h.n_kv_heads != 0 || h.head_dim() % 2 != 0)
    STRATA_THROW(name, ": invalid llama2.c header: dim ", h.dim, " with ", h.n_heads, " heads and ",
                 h.n_kv_heads, " kv heads (head size must be even and heads a multiple of kv heads)");
  uint64_t floats = 0;
  if (!checkpoint_floats(h, floats) || floats > (UINT64_MAX - kLlama2cHeaderBytes) / 4 ||
      kLlama2cHeaderBytes + 4 * floats != file_size)
    STRATA_THROW(name, ": llama2.c header (dim ", h.dim, ", ", h.n_layers, " layers, vocab ", h.vocab_size,
                 ") does not match the file size ", file_size);
  return h;
}

bool looks_like_llama2c(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return false;
  uint8_t buf[kLlama2cHeaderBytes];
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const size_t got = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  try {
    parse_llama2c_header(buf, got, size, path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void add_llama2c_tokenizer_metadata(const uint8_t* data, size_t size, int64_t n_vocab,
                                    const std::string& name, Metadata& md) {
  if (size < 4) STRATA_THROW(name, ": too small for a llama2.c tokenizer");
  GgufArray tokens{GgufType::STRING, {}, {}, {}, {}};
  GgufArray scores{GgufType::FLOAT32, {}, {}, {}, {}};
  GgufArray types{GgufType::INT32, {}, {}, {}, {}};
  size_t pos = 4;  // max_token_length is only a buffer size hint for llama2.c's own reader
  for (int64_t i = 0; pos < size; ++i) {
    if (size - pos < 8) STRATA_THROW(name, ": truncated llama2.c tokenizer at token ", i);
    float score;
    int32_t len;
    std::memcpy(&score, data + pos, 4);
    std::memcpy(&len, data + pos + 4, 4);
    pos += 8;
    if (len < 0 || static_cast<uint64_t>(len) > size - pos)
      STRATA_THROW(name, ": llama2.c tokenizer token ", i, " has invalid length ", len);
    auto [text, type] =
        translate_token(std::string(reinterpret_cast<const char*>(data + pos), static_cast<size_t>(len)));
    pos += static_cast<size_t>(len);
    tokens.strings.push_back(std::move(text));
    scores.f32.push_back(score);
    types.i32.push_back(type);
  }
  if (static_cast<int64_t>(tokens.strings.size()) != n_vocab)
    STRATA_THROW(name, ": llama2.c tokenizer has ", tokens.strings.size(), " tokens, the model has ",
                 n_vocab);
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

std::unique_ptr<Llama2cFile> Llama2cFile::open(const std::string& path, const std::string& tokenizer_path) {
  std::unique_ptr<Llama2cFile> f(new Llama2cFile());
  f->format_ = ModelFormat::Llama2c;
  f->path_ = path;
  f->map_ = MappedFile(path);
  f->header_ = parse_llama2c_header(f->map_.data(), f->map_.size(), f->map_.size(), path);
  const Llama2cHeader& h = f->header_;

  Metadata& md = f->metadata_;
  md.add("general.architecture", GgufValue::of_string("llama"));
  md.add("general.name", GgufValue::of_string(file_stem(path)));
  md.add("llama.context_length", GgufValue::of_u32(static_cast<uint32_t>(h.seq_len)));
  md.add("llama.embedding_length", GgufValue::of_u32(static_cast<uint32_t>(h.dim)));
  md.add("llama.feed_forward_length", GgufValue::of_u32(static_cast<uint32_t>(h.hidden_dim)));
  md.add("llama.block_count", GgufValue::of_u32(static_cast<uint32_t>(h.n_layers)));
  md.add("llama.attention.head_count", GgufValue::of_u32(static_cast<uint32_t>(h.n_heads)));
  md.add("llama.attention.head_count_kv", GgufValue::of_u32(static_cast<uint32_t>(h.n_kv_heads)));
  md.add("llama.attention.layer_norm_rms_epsilon", GgufValue::of_f32(1e-5f));
  md.add("llama.rope.freq_base", GgufValue::of_f32(10000.0f));
  md.add("llama.rope.dimension_count", GgufValue::of_u32(static_cast<uint32_t>(h.head_dim())));

  std::vector<std::string> candidates =
      tokenizer_path.empty() ? tokenizer_candidates(path) : std::vector<std::string>{tokenizer_path};
  std::string last_error;
  for (const std::string& cand : candidates) {
    try {
      MappedFile tok(cand);
      add_llama2c_tokenizer_metadata(tok.data(), tok.size(), h.n_vocab(), cand, md);
      f->tokenizer_path_ = cand;
      break;
    } catch (const Error& e) {
      if (!tokenizer_path.empty()) throw;
      last_error = e.what();
    }
  }
  if (f->tokenizer_path_.empty())
    STRATA_THROW(path, ": no llama2.c tokenizer with ", h.n_vocab(),
                 " tokens found next to it (tokenizer.bin or tok*.bin); pass its path",
                 last_error.empty() ? "" : " (last tried: ", last_error, last_error.empty() ? "" : ")");
  f->add_tensors();
  return f;
}

void Llama2cFile::add_tensors() {
  const Llama2cHeader& h = header_;
  const int64_t D = h.dim, H = h.hidden_dim, L = h.n_layers, V = h.n_vocab(), KV = h.kv_dim();
  const auto* base = reinterpret_cast<const float*>(map_.data() + kLlama2cHeaderBytes);
  // Offsets (in floats) of each weight group, in file order.
  const int64_t emb = 0, att_norm = emb + V * D, wq = att_norm + L * D, wk = wq + L * D * D,
                wv = wk + L * KV * D, wo = wv + L * KV * D, ffn_norm = wo + L * D * D, w1 = ffn_norm + L * D,
                w2 = w1 + L * H * D, w3 = w2 + L * D * H, final_norm = w3 + L * H * D, rope = final_norm + D,
                wcls = rope + int64_t{h.seq_len} * h.head_dim();
  // ne1 == 0: a vector of ne0.
  auto add = [&](std::string name, int64_t offset, int64_t ne0, int64_t ne1) {
    TensorInfo t;
    t.name = std::move(name);
    t.type = TensorType::F32;
    t.n_dims = ne1 == 0 ? 1 : 2;
    ne1 = std::max<int64_t>(ne1, 1);
    t.ne = {ne0, ne1, 1, 1};
    t.data = base + offset;
    t.nbytes = static_cast<size_t>(ne0 * ne1) * sizeof(float);
    tensors_.push_back(std::move(t));
  };
  add("token_embd.weight", emb, D, V);
  add("output_norm.weight", final_norm, D, 0);
  if (!h.shared_classifier()) add("output.weight", wcls, D, V);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = concat("blk.", l, ".");
    add(p + "attn_q.weight", wq + l * D * D, D, D);
    add(p + "attn_k.weight", wk + l * KV * D, D, KV);
    add(p + "attn_v.weight", wv + l * KV * D, D, KV);
    add(p + "attn_output.weight", wo + l * D * D, D, D);
    add(p + "attn_norm.weight", att_norm + l * D, D, 0);
    add(p + "ffn_gate.weight", w1 + l * H * D, D, H);
    add(p + "ffn_down.weight", w2 + l * D * H, H, D);
    add(p + "ffn_up.weight", w3 + l * H * D, D, H);
    add(p + "ffn_norm.weight", ffn_norm + l * D, D, 0);
  }
}

}  // namespace strata
