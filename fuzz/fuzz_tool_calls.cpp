// libFuzzer target for the tool-call parser: the first byte picks the family and forced mode,
// the second seeds where the rest is cut into streaming pieces. Parsing in pieces must give
// what parsing in one piece gives, and the deltas must add up to the accumulated answer.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "core/check.h"
#include "server/tool_calls.h"

namespace {

using strata::server::ToolCallDelta;
using strata::server::ToolCallParser;
using strata::server::ToolFamily;

struct Rebuilt {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;
};

void apply(Rebuilt& r, const std::vector<ToolCallDelta>& deltas) {
  for (const ToolCallDelta& d : deltas) {
    if (d.kind == ToolCallDelta::Kind::Content) {
      r.content += d.text;
    } else if (d.kind == ToolCallDelta::Kind::CallStart) {
      STRATA_CHECK(d.index == static_cast<int32_t>(r.calls.size()));
      r.calls.push_back({d.text, ""});
    } else {
      STRATA_CHECK(!r.calls.empty() && d.index + 1 == static_cast<int32_t>(r.calls.size()));
      r.calls.back().second += d.text;
    }
  }
}

Rebuilt parse(ToolFamily family, bool forced, const std::string& text, std::mt19937* cuts) {
  ToolCallParser p(family, forced);
  Rebuilt r;
  size_t at = 0;
  while (cuts && at < text.size()) {
    const size_t n = 1 + (*cuts)() % 8;
    apply(r, p.push(std::string_view(text).substr(at, n)));
    at += n;
  }
  if (!cuts) apply(r, p.push(text));
  apply(r, p.finish());
  STRATA_CHECK(r.content == p.content());
  STRATA_CHECK(r.calls.size() == p.calls().size());
  for (size_t i = 0; i < r.calls.size(); ++i)
    STRATA_CHECK(r.calls[i].first == p.calls()[i].name && r.calls[i].second == p.calls()[i].arguments);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 4096) return 0;
  const auto family = static_cast<ToolFamily>(data[0] % 4);
  const bool forced = (data[0] & 4) != 0;
  std::mt19937 cuts(data[1]);
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  const Rebuilt whole = parse(family, forced, text, nullptr);
  const Rebuilt pieces = parse(family, forced, text, &cuts);
  STRATA_CHECK(whole.content == pieces.content, "streamed content differs");
  STRATA_CHECK(whole.calls == pieces.calls, "streamed calls differ");
  return 0;
}
