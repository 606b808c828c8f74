#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strata {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tok, bool after_bos, bool render_special)
    : tok_(tok), render_special_(render_special), after_bos_(after_bos) {}

std::string StreamingDetokenizer::push(TokenId id) {
  std::string piece = tok_.token_to_piece(id, render_special_);
  if (after_bos_ && tok_.adds_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  after_bos_ = id == tok_.bos();
  pending_ += piece;

  // Emit every complete sequence; hold back a valid but unfinished one at the end (at most 3
  // bytes), replace bytes that can never become valid.
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const unicode::Utf8Scan scan = unicode::scan_utf8(pending_, pos);
    if (scan.kind == unicode::Utf8Scan::kTruncated) break;
    if (scan.kind == unicode::Utf8Scan::kValid)
      out.append(pending_, pos, scan.length);
    else
      unicode::append_utf8(out, unicode::kReplacementChar);
    pos += scan.length;
  }
  pending_.erase(0, pos);
  return out;
}

std::string StreamingDetokenizer::finish() {
  std::string out = unicode::sanitize_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace strata
