// Hostile or broken servers: random bytes through the parsers, and raw sockets that answer with
// garbage, close early or flood — every request must end as a classified failure, never a
// crash, hang or unbounded buffer.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "bench/http_response_parser.h"
#include "bench/openai_stream.h"
#include "bench/sse_parser.h"
#include "bench/stream_client.h"

namespace strata::bench {
namespace {

TEST(HostileInput, RandomBytesThroughTheParsers) {
  std::mt19937 rng(17);
  const std::string alphabet = "HTTP/1.1 200\r\n:data{}[]\"choices\"text0123456789abcdef;\n\r ";
  for (int trial = 0; trial < 2000; ++trial) {
    HttpResponseParser http;
    SseParser sse(4096);
    std::string body;
    std::vector<SseEvent> events;
    // A valid start half the time, so the body and SSE layers get random input too.
    if (trial % 2) http.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", body);
    for (int piece = 0; piece < 20; ++piece) {
      std::string bytes(rng() % 64, '\0');
      for (char& ch : bytes)
        ch = rng() % 4 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() % 256);
      body.clear();
      if (http.feed(bytes, body) == HttpResponseParser::State::kError) break;
      sse.feed(body, events);
    }
    http.finish_eof();
    sse.finish(events);
    for (const SseEvent& e : events) {
      interpret_event(e, EndpointKind::kChat);
      interpret_event(e, EndpointKind::kCompletions);
    }
  }
  SUCCEED();  // the property is: no crash, no sanitizer report, no exception
}

// Accepts connections and answers each with `reply` (then closes), on a thread.
class RawServer {
 public:
  explicit RawServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 16);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[4096];
        [[maybe_unused]] ssize_t got = recv(c, buf, sizeof buf, 0);  // the request head
        size_t pos = 0;
        while (pos < reply_.size()) {
          const ssize_t n = send(c, reply_.data() + pos, reply_.size() - pos, MSG_NOSIGNAL);
          if (n <= 0) break;
          pos += static_cast<size_t>(n);
        }
        close(c);
      }
    });
  }
  ~RawServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  LoadOptions options() const {
    LoadOptions o;
    o.target = parse_http_url("http://127.0.0.1:" + std::to_string(port_));
    o.path = "/v1/completions";
    o.timeout_s = 10;
    return o;
  }

 private:
  std::string reply_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

RequestRecord run_one(const RawServer& server) {
  const LoadResult r = run_load({LoadRequest{"{}", 1, 0.0}}, server.options());
  return r.records.at(0);
}

TEST(HostileServer, GarbageInsteadOfHttp) {
  RawServer server("SSH-2.0-OpenSSH_9.2\r\n\r\nnot http at all");
  EXPECT_EQ(run_one(server).error_class, kErrorMalformed);
}

TEST(HostileServer, ClosesWithoutAnswering) {
  RawServer server("");
  EXPECT_EQ(run_one(server).error_class, kErrorConnect);
}

TEST(HostileServer, NonStreamingJsonAnswer) {
  RawServer server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  const RequestRecord r = run_one(server);
  EXPECT_EQ(r.error_class, kErrorMalformed);
  EXPECT_NE(r.error_message.find("application/json"), std::string::npos);
}

TEST(HostileServer, EndlessEventIsCutOff) {
  // 17 MiB of one "data:" line: over the 16 MiB event limit, refused while it arrives.
  std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ";
  reply.append(17u << 20, 'x');
  RawServer server(reply);
  const RequestRecord r = run_one(server);
  EXPECT_EQ(r.error_class, kErrorMalformed);
  EXPECT_NE(r.error_message.find("larger than"), std::string::npos) << r.error_message;
}

TEST(HostileServer, BadChunkFraming) {
  RawServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata: {}\r\n");
  EXPECT_EQ(run_one(server).error_class, kErrorMalformed);
}

TEST(HostileServer, ErrorStatusWithoutBodyFraming) {
  RawServer server("HTTP/1.1 500 Internal Server Error\r\n\r\n{\"error\": {\"message\": \"model crashed\"}}");
  const RequestRecord r = run_one(server);
  EXPECT_EQ(r.error_class, "http_500");
  EXPECT_NE(r.error_message.find("model crashed"), std::string::npos) << r.error_message;
}

}  // namespace
}  // namespace strata::bench
