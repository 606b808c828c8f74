#include "tokenizer/vocab_tokenizer.h"

#include "core/check.h"
#include "tokenizer/byte_level.h"

namespace strata {
namespace {

bool is_special_kind(TokenKind k) {
  return k == TokenKind::Control || k == TokenKind::UserDefined || k == TokenKind::Unknown;
}

// "<0xAB>" -> 0xAB, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9')
      value |= c - '0';
    else if (c >= 'A' && c <= 'F')
      value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      value |= c - 'a' + 10;
    else
      return -1;
  }
  return value;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(s.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace

VocabTokenizer::VocabTokenizer(VocabData vocab)
    : v_(std::move(vocab)),
      user_defined_(v_.tokens, [](TokenKind k) { return k == TokenKind::UserDefined; }),
      all_special_(v_.tokens, is_special_kind) {
  const size_t n = v_.tokens.size();
  std::vector<std::string_view> texts(n);
  for (size_t i = 0; i < n; ++i) texts[i] = v_.tokens[i].text;
  ids_.build(texts);
  pieces_.resize(n);
  for (size_t i = 0; i < n; ++i) pieces_[i] = make_piece(static_cast<TokenId>(i));
  is_eog_.assign(n, 0);
  for (TokenId id : v_.eog) is_eog_[id] = 1;
}

// The piece of a token as llama.cpp renders it with special = true.
std::string VocabTokenizer::make_piece(TokenId id) const {
  const VocabToken& t = v_.tokens[id];
  switch (t.kind) {
    case TokenKind::Control:
    case TokenKind::Unknown:
    case TokenKind::UserDefined:
      return t.text;
    case TokenKind::Normal:
      if (v_.model == "gpt2") return byte_level::decode(t.text);
      return replace_all(t.text, "\xE2\x96\x81", " ");
    case TokenKind::Byte:
      if (v_.model == "llama") {
        const int b = parse_byte_token(t.text);
        if (b >= 0) return std::string(1, static_cast<char>(b));
      }
      return {};
    case TokenKind::Undefined:
    case TokenKind::Unused:
      break;
  }
  return {};
}

void VocabTokenizer::check_id(TokenId id) const {
  if (id < 0 || id >= n_vocab())
    STRATA_THROW("token id ", id, " is outside the vocabulary of ", n_vocab(), " tokens");
}

std::string VocabTokenizer::token_to_piece(TokenId id, bool render_special) const {
  check_id(id);
  const TokenKind k = v_.tokens[id].kind;
  if (!render_special && (k == TokenKind::Control || k == TokenKind::Unknown)) return {};
  return pieces_[id];
}

std::string_view VocabTokenizer::token_text(TokenId id) const {
  check_id(id);
  return v_.tokens[id].text;
}

TokenKind VocabTokenizer::token_kind(TokenId id) const {
  check_id(id);
  return v_.tokens[id].kind;
}

bool VocabTokenizer::is_eog(TokenId id) const {
  return id >= 0 && id < n_vocab() && is_eog_[id];
}

TokenId VocabTokenizer::find_token(std::string_view text) const {
  return ids_.find(text);
}

std::vector<TokenId> VocabTokenizer::encode(std::string_view text, bool add_special,
                                            bool parse_special) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && v_.add_bos) out.push_back(v_.bos);
  const SpecialTokenMatcher& matcher = parse_special ? all_special_ : user_defined_;
  bool after_special = true;
  for (const TextFragment& f : matcher.partition(text)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_fragment(text.substr(f.begin, f.end - f.begin), after_special, out);
      after_special = false;
    }
  }
  if (add_special && v_.add_eos) out.push_back(v_.eos);
  return out;
}

}  // namespace strata
