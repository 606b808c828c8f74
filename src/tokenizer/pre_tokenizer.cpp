#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>

#include "tokenizer/unicode.h"

namespace strata {
namespace {

using unicode::kLetter;
using unicode::kNumber;
using unicode::kPunctuation;
using unicode::kWhitespace;

struct Family {
  std::vector<std::string> names;
  std::vector<SplitRule> rules;
  bool ignore_merges = false;
  bool add_bos = false;
};

const std::vector<Family>& families() {
  using R = SplitRule;
  static const std::vector<Family> kFamilies = {
      {{"default"}, {R::PunctuationRun, R::Gpt2, R::NumberRun, R::AsciiDigits3}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {R::Llama3},
       true,
       true},
      {{"dbrx", "smaug-bpe"}, {R::Llama3}},
      {{"deepseek-llm"},
       {R::LineBreak, R::DeepseekLetters, R::DeepseekPunctuation, R::TrailingSpace, R::CjkRun, R::NumberRun}},
      {{"deepseek-coder"}, {R::LineBreak, R::SpaceLetters, R::SpacePunctuation, R::CjkRun, R::SingleNumber}},
      {{"falcon"}, {R::PunctuationRunTick, R::Gpt2, R::AsciiDigits3}},
      {{"gpt-2", "gpt2", "mpt", "olmo", "gpt-neox", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de",
        "gigachat", "jais", "trillion", "granite-docling", "exaone4", "a.x-4.0", "mellum"},
       {R::Gpt2}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R::SingleNumber, R::Gpt2}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "stablelm2", "megrez", "hunyuan", "grok-2"}, {R::Qwen2}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {R::BloomWords}},
      {{"viking"}, {R::BloomWords, R::SingleNumber}},
  };
  return kFamilies;
}

struct Range {
  uint32_t first, last;
};

// DeepSeek LLM's letter class: the cased letters its tokenizer.json lists explicitly.
constexpr Range kDeepseekLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},   {0x00D8, 0x00F6},
    {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},   {0x0295, 0x02AF},   {0x0370, 0x0373},
    {0x0376, 0x0377},   {0x037B, 0x037D},   {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},
    {0x038C, 0x038C},   {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
constexpr Range kDeepseekPunctuation[] = {{0x0021, 0x002F}, {0x003A, 0x007E}, {0x2018, 0x201F},
                                          {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}};
constexpr Range kCjk[] = {{0x0800, 0x4E00}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7FF}};
constexpr uint32_t kBloomStops[] = {'(',    ')',    '|',    '.',    ',',    '!',    '?',
                                    0x2026, 0x3002, 0xFF0C, 0x3001, 0x0964, 0x06D4, 0x060C};

template <size_t N>
bool in_ranges(const Range (&ranges)[N], uint32_t cp) {
  for (const Range& r : ranges)
    if (cp >= r.first && cp <= r.last) return true;
  return false;
}

// The input of one split: code points and their class flags.
struct Text {
  const std::vector<uint32_t>& cps;  // [n]
  std::vector<uint16_t> flags;       // [n]
  bool is(size_t i, uint16_t flag) const { return flags[i] & flag; }
  bool ws(size_t i) const { return flags[i] & kWhitespace; }
};

// Patterns written with literal code point ranges (no \p{..}) see non-ASCII whitespace as a
// vertical tab in llama.cpp (std::wregex's \s is ASCII-only), so such code points never match
// the literal ranges even where a range spans them (U+3000 in "　-。", U+2000.. in "ࠀ-一").
bool in_literal_class(const Text& t, size_t i, bool (*member)(uint32_t)) {
  return !(t.cps[i] >= 0x80 && t.ws(i)) && member(t.cps[i]);
}

bool is_ascii_digit(uint32_t c) {
  return c >= '0' && c <= '9';
}
bool is_line_break(uint32_t c) {
  return c == '\r' || c == '\n';
}
uint32_t ascii_lower(uint32_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

// Length of the contraction ('s 't 'm 'd 're 've 'll) at `pos`, or 0.
size_t contraction_length(const Text& t, size_t pos, size_t end, bool any_case) {
  if (t.cps[pos] != '\'' || pos + 1 >= end) return 0;
  const auto norm = [&](size_t i) { return any_case ? ascii_lower(t.cps[i]) : t.cps[i]; };
  const uint32_t a = norm(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= end) return 0;
  const uint32_t b = norm(pos + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

size_t run_end(const Text& t, size_t pos, size_t end, uint16_t flag) {
  while (pos < end && t.is(pos, flag)) ++pos;
  return pos;
}

// End of the whitespace part of \s+(?!\S) | \s+ at `pos` (a run followed by a non-space keeps
// its last space for the next word), or `pos` when there is no whitespace.
size_t whitespace_word_end(const Text& t, size_t pos, size_t end) {
  const size_t w = run_end(t, pos, end, kWhitespace);
  if (w - pos > 1 && w < end) return w - 1;
  return w;
}

// End of the GPT-2 word starting at `pos`.
size_t gpt2_word_end(const Text& t, size_t pos, size_t end) {
  if (const size_t n = contraction_length(t, pos, end, false)) return pos + n;
  const size_t q = pos + (t.cps[pos] == ' ' ? 1 : 0);  // the optional leading space
  if (q < end) {
    if (t.is(q, kLetter)) return run_end(t, q, end, kLetter);
    if (t.is(q, kNumber)) return run_end(t, q, end, kNumber);
    if (!t.is(q, kWhitespace | kLetter | kNumber)) {
      size_t e = q + 1;
      while (e < end && !t.is(e, kWhitespace | kLetter | kNumber)) ++e;
      return e;
    }
  }
  const size_t w = whitespace_word_end(t, pos, end);
  return w > pos ? w : pos + 1;
}

// End of the llama3 (max_digits 3) or qwen2 (max_digits 1) word starting at `pos`.
size_t llama3_word_end(const Text& t, size_t pos, size_t end, size_t max_digits) {
  if (const size_t n = contraction_length(t, pos, end, true)) return pos + n;
  const uint32_t c = t.cps[pos];
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!is_line_break(c) && !t.is(pos, kNumber) &&
      (t.is(pos, kLetter) || (pos + 1 < end && t.is(pos + 1, kLetter))))
    return run_end(t, pos + 1, end, kLetter);
  // \p{N}{1,max_digits}
  if (t.is(pos, kNumber)) {
    size_t e = pos;
    while (e < end && e - pos < max_digits && t.is(e, kNumber)) ++e;
    return e;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const size_t q = pos + (c == ' ' ? 1 : 0);
  if (q < end && !t.is(q, kWhitespace | kLetter | kNumber)) {
    size_t e = q + 1;
    while (e < end && !t.is(e, kWhitespace | kLetter | kNumber)) ++e;
    while (e < end && is_line_break(t.cps[e])) ++e;
    return e;
  }
  // \s*[\r\n]+ : whitespace up to and including its last line break
  size_t last_break = 0;
  size_t w = pos;
  for (; w < end && t.ws(w); ++w)
    if (is_line_break(t.cps[w])) last_break = w + 1;
  if (last_break > 0) return last_break;
  const size_t ws_end = whitespace_word_end(t, pos, end);
  return ws_end > pos ? ws_end : pos + 1;
}

bool deepseek_letter(uint32_t cp) {
  return in_ranges(kDeepseekLetters, cp);
}
bool deepseek_punctuation(uint32_t cp) {
  return in_ranges(kDeepseekPunctuation, cp);
}
bool cjk(uint32_t cp) {
  return in_ranges(kCjk, cp);
}
bool bloom_word_char(uint32_t cp) {
  return !unicode::is_whitespace(cp) &&
         std::find(std::begin(kBloomStops), std::end(kBloomStops), cp) == std::end(kBloomStops);
}
bool falcon_extra(uint32_t cp, bool tick) {
  switch (cp) {
    case '$':
    case '+':
    case '<':
    case '=':
    case '>':
    case '^':
    case '~':
    case '|':
      return true;
    case '`':
      return tick;
    default:
      return false;
  }
}

// Match of `\s?X+` at `pos` where `in_class(i)` tests X: length, or 0.
template <typename InClass>
size_t optional_space_run(const Text& t, size_t pos, size_t end, bool space_is_any_ws, InClass in_class) {
  size_t q = pos;
  if (!in_class(q)) {
    const bool space = space_is_any_ws ? t.ws(pos) : t.cps[pos] == ' ';
    if (!space || pos + 1 >= end || !in_class(pos + 1)) return 0;
    q = pos + 1;
  }
  while (q < end && in_class(q)) ++q;
  return q - pos;
}

// Length of the match of a "search" rule starting exactly at `pos` (0 = none).
size_t match_at(SplitRule rule, const Text& t, size_t pos, size_t end) {
  const uint32_t c = t.cps[pos];
  const auto literal = [&](bool (*member)(uint32_t)) {
    return [&t, member](size_t i) { return in_literal_class(t, i, member); };
  };
  switch (rule) {
    case SplitRule::PunctuationRun:
    case SplitRule::PunctuationRunTick: {
      const bool tick = rule == SplitRule::PunctuationRunTick;
      size_t e = pos;
      while (e < end && (t.is(e, kPunctuation) || falcon_extra(t.cps[e], tick))) ++e;
      return e - pos;
    }
    case SplitRule::AsciiDigits3:
      return pos + 3 <= end && is_ascii_digit(c) && is_ascii_digit(t.cps[pos + 1]) &&
                     is_ascii_digit(t.cps[pos + 2])
                 ? 3
                 : 0;
    case SplitRule::NumberRun:
      return run_end(t, pos, end, kNumber) - pos;
    case SplitRule::SingleNumber:
      return t.is(pos, kNumber) ? 1 : 0;
    case SplitRule::LineBreak:
      return is_line_break(c) ? 1 : 0;
    case SplitRule::SpaceLetters:
      return optional_space_run(t, pos, end, true, [&](size_t i) { return t.is(i, kLetter); });
    case SplitRule::SpacePunctuation:
      return optional_space_run(t, pos, end, true, [&](size_t i) { return t.is(i, kPunctuation); });
    case SplitRule::DeepseekLetters:
      return optional_space_run(t, pos, end, true, literal(deepseek_letter));
    case SplitRule::DeepseekPunctuation:
      return optional_space_run(t, pos, end, true, literal(deepseek_punctuation));
    case SplitRule::CjkRun: {
      const auto in = literal(cjk);
      size_t e = pos;
      while (e < end && in(e)) ++e;
      return e - pos;
    }
    case SplitRule::BloomWords:
      return optional_space_run(t, pos, end, false, [&](size_t i) { return bloom_word_char(t.cps[i]); });
    case SplitRule::Gpt2:
    case SplitRule::Llama3:
    case SplitRule::Qwen2:
    case SplitRule::TrailingSpace:
      break;
  }
  return 0;
}

// Splits the word [begin, end) by `rule`, appending the end of every piece to `out`.
void split_word(SplitRule rule, const Text& t, size_t begin, size_t end, std::vector<size_t>& out) {
  switch (rule) {
    case SplitRule::Gpt2:
      for (size_t p = begin; p < end;) out.push_back(p = gpt2_word_end(t, p, end));
      return;
    case SplitRule::Llama3:
    case SplitRule::Qwen2: {
      const size_t digits = rule == SplitRule::Llama3 ? 3 : 1;
      for (size_t p = begin; p < end;) out.push_back(p = llama3_word_end(t, p, end, digits));
      return;
    }
    case SplitRule::TrailingSpace: {
      // \s+$ matches the maximal run of whitespace that reaches the end of the word.
      size_t s = end;
      while (s > begin && t.ws(s - 1)) --s;
      if (s > begin && s < end) out.push_back(s);
      out.push_back(end);
      return;
    }
    default:
      break;
  }
  // Leftmost matches, with the text between them kept as words of their own.
  size_t gap_start = begin;
  for (size_t p = begin; p < end;) {
    const size_t n = match_at(rule, t, p, end);
    if (n == 0) {
      ++p;
      continue;
    }
    if (p > gap_start) out.push_back(p);
    p += n;
    out.push_back(p);
    gap_start = p;
  }
  if (gap_start < end) out.push_back(end);
}

}  // namespace

PreTokenizer PreTokenizer::for_name(std::string_view pre, bool* known) {
  const Family* found = &families().front();
  bool is_known = false;
  for (const Family& f : families()) {
    if (std::find(f.names.begin(), f.names.end(), pre) != f.names.end()) {
      found = &f;
      is_known = true;
      break;
    }
  }
  if (known) *known = is_known;
  PreTokenizer p(found->rules);
  p.ignore_merges_ = found->ignore_merges;
  p.default_add_bos_ = found->add_bos;
  return p;
}

std::vector<size_t> PreTokenizer::split(const std::vector<uint32_t>& cps) const {
  Text t{cps, std::vector<uint16_t>(cps.size())};
  for (size_t i = 0; i < cps.size(); ++i) t.flags[i] = unicode::codepoint_flags(cps[i]);
  std::vector<size_t> ends;
  if (!cps.empty()) ends.push_back(cps.size());
  std::vector<size_t> next;
  for (SplitRule rule : rules_) {
    next.clear();
    size_t begin = 0;
    for (size_t end : ends) {
      split_word(rule, t, begin, end, next);
      begin = end;
    }
    ends.swap(next);
  }
  return ends;
}

const std::vector<std::string>& known_pre_tokenizer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const Family& f : families()) all.insert(all.end(), f.names.begin(), f.names.end());
    return all;
  }();
  return names;
}

}  // namespace strata
