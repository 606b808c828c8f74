// Test helper: fake-server behaviour encoded in the prompt ("ttft=20 itl=5 n=3 fault=close"),
// so each request of a run can ask for its own known timing or failure.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
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

// Seconds between the fake server's start and the load run's start (both on the steady clock),
// to put the client's timestamps on the server's time axis.
inline double run_offset_s(const LoadResult& result, const FakeOpenAiServer& server) {
  return std::chrono::duration<double>(result.start - server.start_time()).count();
}

// The stream the server logged for `prompt` (the prompts of a run must be distinct).
inline const FakeOpenAiServer::SentStream* stream_for(const std::vector<FakeOpenAiServer::SentStream>& sent,
                                                      const std::string& prompt) {
  const FakeOpenAiServer::SentStream* found = nullptr;
  for (const auto& s : sent)
    if (s.prompt == prompt) {
      EXPECT_EQ(found, nullptr) << "two streams for " << prompt;
      found = &s;
    }
  return found;
}

// Double rounding of clock ticks and the server's deadlines (truncated to whole nanoseconds).
inline constexpr double kClockSlackS = 1e-6;

// What the load generator guarantees about one successful stream, checked against the fake
// server's log of the same stream. None of it depends on how busy the machine is:
//  - counts: one content chunk per chunk the server wrote, one ITL gap fewer;
//  - the latencies are differences of the client's own timestamps: E2E = TTFT + sum of ITLs,
//    and the request finished within the run;
//  - causality on the shared steady clock: the request left the client before the server had
//    read it, and no chunk arrived before the server began writing it;
//  - so, since the server never writes chunk k before ttft + k * itl after reading the request,
//    the measured TTFT and E2E are at least the scheduled ones.
inline void expect_consistent_with_server(const LoadResult& result, const FakeOpenAiServer& server,
                                          const RequestRecord& r, const FakeOpenAiServer::SentStream& s,
                                          const std::string& what) {
  SCOPED_TRACE(what);
  const FakeResponse plan = scenario_from_prompt(s.prompt);
  ASSERT_TRUE(r.success) << r.error_class << ": " << r.error_message;
  ASSERT_FALSE(s.token_write_s.empty());
  ASSERT_EQ(static_cast<size_t>(r.content_chunks), s.token_write_s.size());
  ASSERT_EQ(r.itl_s.size() + 1, s.token_write_s.size());

  double sum_itl = 0.0;
  for (double gap : r.itl_s) {
    EXPECT_GE(gap, 0.0);  // arrivals are timestamped in order
    sum_itl += gap;
  }
  EXPECT_NEAR(r.e2e_s, r.ttft_s + sum_itl, 1e-9);
  EXPECT_LE(r.sent_s + r.e2e_s, result.duration_s + kClockSlackS);

  const double sent = run_offset_s(result, server) + r.sent_s;  // on the server's time axis
  EXPECT_LE(sent, s.received_s + kClockSlackS) << "the server read the request before it was sent";
  double arrival = sent + r.ttft_s;
  for (size_t k = 0; k < s.token_write_s.size(); ++k) {
    if (k > 0) arrival += r.itl_s[k - 1];
    EXPECT_GE(arrival, s.token_write_s[k] - kClockSlackS)
        << "chunk " << k << " arrived before it was written";
    const double scheduled = plan.ttft_s + static_cast<double>(k) * plan.itl_s;
    EXPECT_GE(s.token_write_s[k] - s.received_s, scheduled - kClockSlackS)
        << "chunk " << k << " written early";
  }
  EXPECT_GE(r.ttft_s, plan.ttft_s - kClockSlackS);
  EXPECT_GE(r.e2e_s,
            plan.ttft_s + static_cast<double>(s.token_write_s.size() - 1) * plan.itl_s - kClockSlackS);
}

}  // namespace strata::bench::test_support
