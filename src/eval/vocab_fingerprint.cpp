#include "eval/vocab_fingerprint.h"

#include "core/check.h"
#include "eval/perplexity.h"

namespace strata::eval {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

void fnv_bytes(uint64_t& h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
}

void fnv_u64(uint64_t& h, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  fnv_bytes(h, b, sizeof b);
}

}  // namespace

uint64_t vocab_fingerprint(const Tokenizer& tok) {
  uint64_t h = kFnvOffset;
  fnv_u64(h, static_cast<uint64_t>(tok.n_vocab()));
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const std::string_view text = tok.token_text(id);
    fnv_u64(h, text.size());
    fnv_bytes(h, text.data(), text.size());
    fnv_u64(h, static_cast<uint64_t>(tok.token_kind(id)));
  }
  return h;
}

void check_same_vocab(const Tokenizer& base, const Tokenizer& model) {
  if (base.n_vocab() != model.n_vocab())
    STRATA_THROW("the base and the model have different vocabularies (", base.n_vocab(), " vs ",
                 model.n_vocab(), " tokens)");
  for (int32_t id = 0; id < base.n_vocab(); ++id) {
    if (base.token_text(id) != model.token_text(id) || base.token_kind(id) != model.token_kind(id))
      STRATA_THROW("the base and the model have different vocabularies (token ", id, " differs)");
  }
  if (window_bos(base) != window_bos(model))
    STRATA_THROW("the base and the model disagree on the BOS token (", window_bos(base), " vs ",
                 window_bos(model), ")");
}

}  // namespace strata::eval
