// Test helper: fake-server behaviour encoded in the prompt ("ttft=20 itl=5 n=3 fault=close"),
// so each request of a run can ask for its own known timing or failure.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "bench/fake_server.h"
#include "bench/openai_stream.h"
#include "bench/stream_client.h"

namespace strata::bench::test_support {

// Keys: ttft, itl (ms), n, status, fault (error|malformed|close|stall|nodone), after, usage (0/1),
// completion (usage completion_tokens), chunked (0/1), bytes (1: byte by byte), comments (1).
inline FakeResponse scenario_from_prompt(const std::string& prompt) {
  FakeResponse r;
  std::istringstream in(prompt);
  std::string item;
  while (in >> item) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "ttft") r.ttft_s = std::stod(value) / 1e3;
    if (key == "itl") r.itl_s = std::stod(value) / 1e3;
    if (key == "n") r.n_tokens = std::stoll(value);
    if (key == "status") r.status = std::stoi(value);
    if (key == "after") r.fault_after = std::stoll(value);
    if (key == "usage") r.send_usage = value == "1";
    if (key == "completion") r.usage_completion_tokens = std::stoll(value);
    if (key == "chunked") r.chunked = value == "1";
    if (key == "bytes") r.byte_by_byte = value == "1";
    if (key == "comments") r.comments = value == "1";
    if (key == "fault") {
      using F = FakeResponse::Fault;
      r.fault = value == "error"       ? F::kErrorEvent
                : value == "malformed" ? F::kMalformedJson
                : value == "close"     ? F::kCloseEarly
                : value == "stall"     ? F::kStall
                : value == "nodone"    ? F::kNoDone
                                       : F::kNone;
    }
  }
  return r;
}

inline FakeOpenAiServer::Behavior prompt_scenarios() {
  return [](const std::string&, const nlohmann::json& body) {
    std::string prompt;
    if (body.contains("prompt") && body["prompt"].is_string()) prompt = body["prompt"];
    if (body.contains("messages")) prompt = body["messages"][0]["content"];
    return scenario_from_prompt(prompt);
  };
}

inline std::vector<LoadRequest> requests_for(const std::vector<std::string>& prompts,
                                             EndpointKind kind = EndpointKind::kCompletions,
                                             const std::vector<double>& offsets = {}) {
  GenerationOptions gen;
  gen.model = "fake-model";
  gen.endpoint = kind;
  std::vector<LoadRequest> out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    out.push_back({build_request_body({prompts[i], 1000 + static_cast<int64_t>(i), 16}, gen),
                   1000 + static_cast<int64_t>(i), offsets.empty() ? 0.0 : offsets[i]});
  }
  return out;
}

inline LoadOptions options_for(const FakeOpenAiServer& server, EndpointKind kind = EndpointKind::kCompletions,
                               int64_t max_concurrency = 0, double timeout_s = 20.0) {
  LoadOptions o;
  o.target = parse_http_url(server.url());
  o.path = endpoint_path(kind);
  o.endpoint = kind;
  o.max_concurrency = max_concurrency;
  o.timeout_s = timeout_s;
  return o;
}

}  // namespace strata::bench::test_support

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace strata::bench::test_support {

// Timing comparisons that are collected instead of failing at once, so a scenario can be
// re-run when a loaded machine (2 shared cores) delays one wake-up: a real error fails every
// attempt, a scheduling hiccup rarely hits three in a row.
class SoftCheck {
 public:
  void near(double actual, double expected, double tol, const std::string& what) {
    if (std::abs(actual - expected) <= tol) return;
    failures_ += "  " + what + ": " + std::to_string(actual) + ", expected " + std::to_string(expected) +
                 " +- " + std::to_string(tol) + "\n";
  }
  void that(bool condition, const std::string& what) {
    if (!condition) failures_ += "  " + what + "\n";
  }
  bool ok() const { return failures_.empty(); }
  const std::string& failures() const { return failures_; }

 private:
  std::string failures_;
};

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

template <typename Attempt>
void with_retries(Attempt attempt, int tries = 4) {
  if (kSanitizedBuild) {
    // Sanitizers slow every step several-fold: the functional checks still run, the timing
    // comparisons are only reported.
    SoftCheck check;
    attempt(check);
    if (!check.ok()) std::printf("timing not enforced in a sanitizer build:\n%s", check.failures().c_str());
    return;
  }
  std::string log;
  for (int i = 1; i <= tries; ++i) {
    SoftCheck check;
    attempt(check);
    if (check.ok()) return;
    log += "attempt " + std::to_string(i) + ":\n" + check.failures();
    // Give a burst of other work (a browser, a compiler) time to pass.
    std::this_thread::sleep_for(std::chrono::milliseconds(300 * i));
  }
  ADD_FAILURE() << "timing checks failed in every attempt:\n" << log;
}

}  // namespace strata::bench::test_support
