// libFuzzer target for /v1/embeddings request parsing: any body either parses into inputs that
// the engine can run (non-empty, ids in the vocabulary, within the sequence limit, at most
// kMaxEmbeddingInputs of them) or is refused with an ApiError; nothing else escapes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "formats/metadata.h"
#include "server/api_error.h"
#include "server/embedding_request.h"
#include "server/json_fields.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace strata;

GgufValue strings(std::vector<std::string> v) {
  GgufArray a;
  a.elem_type = GgufType::STRING;
  a.strings = std::move(v);
  return GgufValue::of_array(std::move(a));
}

// A SentencePiece vocabulary: specials, a few pieces and the 256 byte tokens.
std::unique_ptr<Tokenizer> make_tokenizer() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "ab"};
  std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
    types.push_back(6);
  }
  Metadata md;
  md.add("tokenizer.ggml.model", GgufValue::of_string("llama"));
  md.add("tokenizer.ggml.tokens", strings(std::move(tokens)));
  GgufArray t;
  t.elem_type = GgufType::INT32;
  t.i32 = std::move(types);
  md.add("tokenizer.ggml.token_type", GgufValue::of_array(std::move(t)));
  return Tokenizer::from_metadata(md);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<Tokenizer> tok = make_tokenizer();
  server::ServedModel model;
  model.tokenizer = tok.get();
  model.name = "m";
  model.max_sequence_tokens = 64;
  try {
    const ChatJson body =
        server::parse_json_body(std::string_view(reinterpret_cast<const char*>(data), size));
    const server::EmbeddingRequest req = server::parse_embedding_request(body, model, /*n_embd=*/16);
    STRATA_CHECK(!req.inputs.empty() && req.inputs.size() <= server::kMaxEmbeddingInputs);
    for (const auto& in : req.inputs) {
      STRATA_CHECK(!in.empty() && static_cast<int64_t>(in.size()) <= model.max_sequence_tokens);
      for (int32_t id : in) STRATA_CHECK(id >= 0 && id < tok->n_vocab());
    }
  } catch (const server::ApiError&) {
  }
  return 0;
}
