// A small OpenAI-compatible streaming server that emits tokens at exactly scheduled times.
//
// It is the reference the load generator is checked against (tests) and calibrated with
// (`strata bench serve --calibrate`): since it knows when it sent every token, the latencies a
// client reports can be compared with the truth. It can also misbehave on purpose (HTTP errors,
// error events, malformed JSON, truncated or stalled streams, byte-by-byte writes).
//
// One thread per connection, listening on 127.0.0.1 on an ephemeral port. Serves
// GET /v1/models, POST /v1/completions and POST /v1/chat/completions (streaming only).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace strata::bench {

struct FakeResponse {
  int status = 200;
  std::string error_body = R"({"error":{"message":"fake error","type":"server_error"}})";
  // Token i is sent at ttft_s + i * itl_s seconds after the request was read, or at
  // token_times_s[i] when that list is given (it then also sets the token count).
  double ttft_s = 0.0;
  double itl_s = 0.0;
  std::vector<double> token_times_s;
  int64_t n_tokens = -1;                 // -1: the request's max_tokens
  int64_t usage_completion_tokens = -1;  // reported in usage; -1: n_tokens
  int64_t usage_prompt_tokens = -1;      // -1: words in the prompt
  bool send_usage = true;                // when the request asks for it (include_usage)
  bool chunked = true;                   // false: the body ends when the connection closes
  bool byte_by_byte = false;             // every write as single-byte sends
  bool comments = false;                 // ": ping" comment lines between events
  enum class Fault { kNone, kErrorEvent, kMalformedJson, kCloseEarly, kStall, kNoDone };
  Fault fault = Fault::kNone;
  int64_t fault_after = 0;  // tokens sent before the fault
};

class FakeOpenAiServer {
 public:
  // Decides how to answer a request from its path and JSON body; called concurrently.
  using Behavior = std::function<FakeResponse(const std::string& path, const nlohmann::json& body)>;

  explicit FakeOpenAiServer(Behavior behavior);
  ~FakeOpenAiServer();
  FakeOpenAiServer(const FakeOpenAiServer&) = delete;
  FakeOpenAiServer& operator=(const FakeOpenAiServer&) = delete;

  uint16_t port() const { return port_; }
  // t = 0 of the times below.
  std::chrono::steady_clock::time_point start_time() const { return start_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Seconds since the server started at which each generation request had been read, sorted.
  std::vector<double> receipt_times() const;

  // What the server actually did for one generation request (times in seconds since the
  // server started): the ground truth a client's measurements are compared with.
  struct SentStream {
    std::string prompt;  // the prompt, or the first message's content
    double received_s = 0.0;  // the whole request had been read
    // When the write of each content chunk began (stamped before send()): a client cannot have
    // read a chunk earlier, and the server never starts one before its scheduled time.
    std::vector<double> token_write_s;
  };
  // Waits (up to 60 s) until no generation request is being answered: a client can see the end of
  // a stream before the server's handler has returned and logged it.
  std::vector<SentStream> sent_streams() const;

 private:
  void accept_loop();
  void serve(int fd);
  void stream(int fd, const std::string& path, const nlohmann::json& body, double received_s);
  // Sleeps until `seconds` after the server's start, or until the server stops (false).
  bool sleep_until(double seconds);
  double now_s() const;
  bool write_all(int fd, const std::string& bytes, bool byte_by_byte);

  Behavior behavior_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> active_{0};
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  mutable std::condition_variable idle_cv_;  // notified when active_ drops
  std::set<int> open_fds_;
  std::vector<double> receipts_;
  std::vector<SentStream> sent_;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void reap_workers(bool all);
  std::vector<Worker> workers_;  // touched by the acceptor thread only (and the destructor)
  std::thread acceptor_;
};

}  // namespace strata::bench
