// API-key comparison, Authorization parsing, byte sizes, error bodies, the task queue.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/byte_size.h"
#include "server/elastic_task_queue.h"

namespace strata::server {
namespace {

TEST(ApiKey, EqualOnlyWhenIdentical) {
  EXPECT_TRUE(api_key_equals("sk-123", "sk-123"));
  EXPECT_FALSE(api_key_equals("sk-123", "sk-124"));
  EXPECT_FALSE(api_key_equals("sk-123", "sk-12"));
  EXPECT_FALSE(api_key_equals("sk-123", "sk-1234"));
  EXPECT_FALSE(api_key_equals("sk-123", "sk-123sk-123"));  // the key repeated is still a different key
  EXPECT_FALSE(api_key_equals("sk-123", ""));
  EXPECT_FALSE(api_key_equals("", ""));  // no key configured never authenticates anything
}

TEST(ApiKey, BearerToken) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer   abc  "), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearerabc"), "");
  EXPECT_EQ(bearer_token("Bearer"), "");
  EXPECT_EQ(bearer_token(""), "");
}

TEST(ByteSize, UnitsAndErrors) {
  EXPECT_EQ(parse_byte_size("1000"), 1000u);
  EXPECT_EQ(parse_byte_size("512MiB"), 512u << 20);
  EXPECT_EQ(parse_byte_size("2GiB"), size_t{2} << 30);
  EXPECT_EQ(parse_byte_size("2gib"), size_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1.5G"), size_t{3} << 29);
  EXPECT_EQ(parse_byte_size("64K"), 65536u);
  EXPECT_EQ(parse_byte_size("3MB"), 3000000u);
  EXPECT_EQ(parse_byte_size("10 KiB"), 10240u);
  EXPECT_EQ(parse_byte_size("7B"), 7u);
  for (const char* bad : {"", "MiB", "-5MiB", "5XB", "1.2.3G", "1e3", "99999999999TiB"})
    EXPECT_THROW(parse_byte_size(bad), Error) << bad;
}

TEST(ApiErrorBody, OpenAiShape) {
  const auto j = nlohmann::json::parse(invalid_value("top_p", "'top_p' must be in (0, 1], got 2.").body());
  EXPECT_EQ(j, nlohmann::json::parse(R"({"error": {"message": "'top_p' must be in (0, 1], got 2.",
                                         "type": "invalid_request_error", "param": "top_p", "code": "invalid_value"}})"));
  const auto q = nlohmann::json::parse(queue_full().body());
  EXPECT_TRUE(q["error"]["param"].is_null());
  EXPECT_EQ(queue_full().status(), 429);
  EXPECT_EQ(unauthorized().status(), 401);
  EXPECT_EQ(unavailable("x").status(), 503);
  // A message quoting invalid UTF-8 still makes valid JSON.
  EXPECT_NO_THROW(nlohmann::json::parse(bad_request("bad \xFF byte").body()));
}

TEST(ElasticTaskQueue, RunsEveryJobConcurrentlyUpToTheLimit) {
  std::atomic<int> running{0}, peak{0}, done{0};
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  {
    ElasticTaskQueue q(4);
    for (int i = 0; i < 10; ++i) {
      q.enqueue([&] {
        const int now = ++running;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return release; });
        --running;
        ++done;
      });
    }
    // Four jobs block at once (the limit); the rest wait for a free thread. Waiting for the
    // fourth to start takes as long as the machine needs (a broken limit fails, not a slow one).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (peak.load() < 4 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(peak.load(), 4);
    EXPECT_EQ(q.threads(), 4u);
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    cv.notify_all();
    q.shutdown();  // runs what is queued first
  }
  EXPECT_EQ(done.load(), 10);
}

}  // namespace
}  // namespace strata::server
