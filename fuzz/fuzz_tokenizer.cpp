// libFuzzer target for the tokenizers: text through fixed SPM / BPE tokenizers (every
// pre-tokenizer family), and vocabularies built from the input itself. Checks that ids stay in
// the vocabulary and that streaming detokenization only ever emits valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "formats/metadata.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using strata::GgufArray;
using strata::GgufType;
using strata::GgufValue;
using strata::Metadata;
using strata::Tokenizer;

GgufValue strings(std::vector<std::string> v) {
  GgufArray a;
  a.elem_type = GgufType::STRING;
  a.strings = std::move(v);
  return GgufValue::of_array(std::move(a));
}

Metadata vocab(const std::string& model, const std::string& pre, std::vector<std::string> tokens,
               std::vector<int32_t> types, std::vector<std::string> merges) {
  Metadata md;
  md.add("tokenizer.ggml.model", GgufValue::of_string(model));
  if (!pre.empty()) md.add("tokenizer.ggml.pre", GgufValue::of_string(pre));
  md.add("tokenizer.ggml.tokens", strings(std::move(tokens)));
  GgufArray t;
  t.elem_type = GgufType::INT32;
  t.i32 = std::move(types);
  md.add("tokenizer.ggml.token_type", GgufValue::of_array(std::move(t)));
  if (!merges.empty()) md.add("tokenizer.ggml.merges", strings(std::move(merges)));
  return md;
}

std::vector<std::unique_ptr<Tokenizer>> fixed_tokenizers() {
  std::vector<std::unique_ptr<Tokenizer>> toks;
  std::vector<std::string> spm = {"<unk>",
                                  "<s>",
                                  "</s>",
                                  "<|im_end|>",
                                  "<tool>",
                                  "\xE2\x96\x81",
                                  "a",
                                  "b",
                                  "ab",
                                  "\xE2\x96\x81"
                                  "a"};
  std::vector<int32_t> spm_types = {2, 3, 3, 3, 4, 1, 1, 1, 1, 1};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    spm.push_back(name);
    spm_types.push_back(6);
  }
  toks.push_back(Tokenizer::from_metadata(vocab("llama", "", spm, spm_types, {})));
  toks.push_back(Tokenizer::from_metadata(vocab("llama", "", spm, spm_types, {"a b", "\xE2\x96\x81 a"})));
  // Byte-level: every byte's symbol plus a few merges.
  std::vector<std::string> bpe = {"<|endoftext|>", "<tool>",
                                  "\xC4\xA0"
                                  "a",
                                  "ab"};
  std::vector<int32_t> bpe_types = {3, 4, 1, 1};
  for (int b = 0; b < 256; ++b) {
    std::string sym;
    const int cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? b : -1;
    if (cp < 0) continue;  // the remapped bytes are left out on purpose: fallback paths
    strata::unicode::append_utf8(sym, static_cast<uint32_t>(cp));
    bpe.push_back(sym);
    bpe_types.push_back(1);
  }
  for (const std::string& pre : strata::known_pre_tokenizer_names())
    toks.push_back(
        Tokenizer::from_metadata(vocab("gpt2", pre, bpe, bpe_types, {"\xC4\xA0 a", "a b", "ab c"})));
  return toks;
}

void exercise(const Tokenizer& tok, std::string_view text, uint8_t flags) {
  const std::vector<int32_t> ids = tok.encode(text, flags & 1, flags & 2);
  strata::StreamingDetokenizer stream(tok, flags & 4, flags & 8);
  std::string out;
  for (int32_t id : ids) {
    STRATA_CHECK(id >= 0 && id < tok.n_vocab(), "token id out of range");
    out += stream.push(id);
  }
  out += stream.finish();
  STRATA_CHECK(strata::unicode::sanitize_utf8(out) == out, "streaming output is not valid UTF-8");
  (void)tok.decode(ids, flags & 8);
}

// A vocabulary from the input: tokens separated by '\n', each token's first byte its type.
void fuzz_vocab(std::string_view spec, std::string_view text, uint8_t flags) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  size_t pos = 0;
  while (pos <= spec.size() && tokens.size() < 512) {
    size_t nl = spec.find('\n', pos);
    if (nl == std::string_view::npos) nl = spec.size();
    std::string_view t = spec.substr(pos, nl - pos);
    pos = nl + 1;
    types.push_back(t.empty() ? 1 : static_cast<uint8_t>(t[0]) % 8);
    tokens.emplace_back(t.empty() ? t : t.substr(1));
    if (tokens.size() >= 2) merges.push_back(tokens[tokens.size() - 2] + " " + tokens.back());
  }
  const bool bpe = flags & 16;
  try {
    const auto tok =
        Tokenizer::from_metadata(vocab(bpe ? "gpt2" : "llama", bpe ? "llama-bpe" : "", tokens, types,
                                       (flags & 32) ? merges : std::vector<std::string>{}));
    exercise(*tok, text, flags);
  } catch (const strata::Error&) {
    // A malformed vocabulary or an ambiguous special-token set: a clean error is the contract.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::unique_ptr<Tokenizer>> toks = fixed_tokenizers();
  if (size < 2) return 0;
  const uint8_t mode = data[0], flags = data[1];
  const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  if (mode & 0x80) {
    const size_t split = rest.find('\0');
    fuzz_vocab(rest.substr(0, split), split == std::string_view::npos ? "" : rest.substr(split + 1), flags);
  } else {
    exercise(*toks[mode % toks.size()], rest, flags);
  }
  return 0;
}
