#include "grammar/number_range.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace strata::grammar {
namespace {

constexpr uint64_t kUnboundedMagnitude = 9999999999999999ull;  // 16 digits
constexpr uint64_t kMaxMagnitude = 999999999999999999ull;      // 18 digits

ExprId digit_range(GrammarAst& ast, char lo, char hi) {
  return ast.chars(CodepointSet(static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)));
}

// Digit strings of one length between lo and hi (leading zeros are digits here).
ExprId fixed_width(GrammarAst& ast, const std::string& lo, const std::string& hi) {
  if (lo == hi) return ast.literal(lo);
  const size_t n = lo.size();
  if (n == 1) return digit_range(ast, lo[0], hi[0]);
  if (lo[0] == hi[0])
    return ast.seq({ast.literal(lo.substr(0, 1)), fixed_width(ast, lo.substr(1), hi.substr(1))});
  const bool lo_rest_min = lo.find_first_not_of('0', 1) == std::string::npos;
  const bool hi_rest_max = hi.find_first_not_of('9', 1) == std::string::npos;
  std::vector<ExprId> parts;
  if (!lo_rest_min)
    parts.push_back(
        ast.seq({ast.literal(lo.substr(0, 1)), fixed_width(ast, lo.substr(1), std::string(n - 1, '9'))}));
  const char first = static_cast<char>(lo_rest_min ? lo[0] : lo[0] + 1);
  const char last = static_cast<char>(hi_rest_max ? hi[0] : hi[0] - 1);
  if (first <= last)
    parts.push_back(ast.seq(
        {digit_range(ast, first, last),
         ast.repeat(digit_range(ast, '0', '9'), static_cast<int32_t>(n - 1), static_cast<int32_t>(n - 1))}));
  if (!hi_rest_max)
    parts.push_back(
        ast.seq({ast.literal(hi.substr(0, 1)), fixed_width(ast, std::string(n - 1, '0'), hi.substr(1))}));
  return ast.alt(std::move(parts));
}

uint64_t pow10(size_t k) {
  uint64_t v = 1;
  while (k--) v *= 10;
  return v;
}

// Magnitudes a..b without leading zeros (a <= b).
ExprId magnitude_range(GrammarAst& ast, uint64_t a, uint64_t b) {
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  std::vector<ExprId> parts;
  for (size_t len = sa.size(); len <= sb.size(); ++len) {
    const uint64_t lo = len == sa.size() ? a : pow10(len - 1);
    const uint64_t hi = len == sb.size() ? b : pow10(len) - 1;
    parts.push_back(fixed_width(ast, std::to_string(lo), std::to_string(hi)));
  }
  return ast.alt(std::move(parts));
}

// Magnitude bounds clipped to what is expressible; false when nothing is left.
bool clip(std::optional<uint64_t> lo, std::optional<uint64_t> hi, uint64_t& a, uint64_t& b) {
  a = lo.value_or(0);
  b = hi ? std::min(*hi, kMaxMagnitude) : kUnboundedMagnitude;
  return a <= b;
}

uint64_t magnitude(int64_t v) {
  return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
}

// A double bound as an int64, saturating (|v| beyond 2^62 means "unbounded" for our digits).
std::optional<int64_t> saturate(std::optional<double> v) {
  if (!v) return std::nullopt;
  constexpr double kBig = 4.0e18;
  if (*v >= kBig) return INT64_MAX / 2;
  if (*v <= -kBig) return INT64_MIN / 2;
  return static_cast<int64_t>(*v);
}

}  // namespace

ExprId integer_range(GrammarAst& ast, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return -1;
  std::vector<ExprId> parts;
  // Negative values: "-" and a magnitude (never "-0").
  if (!lo || *lo < 0) {
    const std::optional<uint64_t> mag_lo =
        (hi && *hi < 0) ? std::optional<uint64_t>(magnitude(*hi)) : std::optional<uint64_t>(1);
    const std::optional<uint64_t> mag_hi = lo ? std::optional<uint64_t>(magnitude(*lo)) : std::nullopt;
    uint64_t a, b;
    if (clip(mag_lo, mag_hi, a, b)) parts.push_back(ast.seq({ast.literal("-"), magnitude_range(ast, a, b)}));
  }
  if (!hi || *hi >= 0) {
    uint64_t a, b;
    const std::optional<uint64_t> mag_hi =
        hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt;
    if (clip(lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0, mag_hi, a, b))
      parts.push_back(magnitude_range(ast, a, b));
  }
  if (parts.empty()) return -1;
  return ast.alt(std::move(parts));
}

ExprId integer_in(GrammarAst& ast, const NumberBounds& bounds) {
  std::optional<double> lo, hi;
  if (bounds.min) lo = bounds.min_exclusive ? std::floor(*bounds.min) + 1 : std::ceil(*bounds.min);
  if (bounds.max) hi = bounds.max_exclusive ? std::ceil(*bounds.max) - 1 : std::floor(*bounds.max);
  return integer_range(ast, saturate(lo), saturate(hi));
}

ExprId number_in(GrammarAst& ast, const NumberBounds& b) {
  std::vector<ExprId> parts;
  const ExprId whole = integer_in(ast, b);
  if (whole >= 0) parts.push_back(whole);
  const ExprId fraction = ast.seq({ast.literal("."), ast.repeat(ast.chars(CodepointSet('0', '9')), 1, 16)});
  // n.ddd with n >= 0 lies in [n, n + 1): n must meet the minimum and n + 1 <= maximum.
  {
    std::optional<double> lo = 0.0, hi;
    if (b.min) lo = std::max(0.0, b.min_exclusive ? std::floor(*b.min) + 1 : std::ceil(*b.min));
    if (b.max) hi = std::floor(*b.max) - 1;
    const ExprId ints = integer_range(ast, saturate(lo), saturate(hi));
    if (ints >= 0) parts.push_back(ast.seq({ints, fraction}));
  }
  // -m.ddd lies in (-(m + 1), -m]: -(m + 1) >= minimum and -m must meet the maximum.
  {
    std::optional<double> lo = 0.0, hi;
    if (b.max) lo = std::max(0.0, b.max_exclusive ? std::floor(-*b.max) + 1 : std::ceil(-*b.max));
    if (b.min) hi = std::floor(-*b.min - 1);
    const ExprId ints = integer_range(ast, saturate(lo), saturate(hi));
    if (ints >= 0) parts.push_back(ast.seq({ast.literal("-"), ints, fraction}));
  }
  if (parts.empty()) return -1;
  return ast.alt(std::move(parts));
}

}  // namespace strata::grammar
