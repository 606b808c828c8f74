// Hostile or broken servers: random bytes through the parsers, and raw sockets that answer with
// garbage, close early or flood — every request must end as a classified failure, never a
// crash, hang or unbounded buffer.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench/http_response_parser.h"
#include "bench/openai_stream.h"
#include "bench/sse_parser.h"
#include "bench/stream_client.h"

namespace strata::bench {
namespace {

// What the HTTP and SSE parsers make of a byte stream, fed in the given pieces.
struct ParseOutcome {
  HttpResponseParser::State state;
  int status = 0;
  std::string body;
  bool sse_failed = false;
  std::vector<SseEvent> events;
  bool operator==(const ParseOutcome& o) const {
    auto same = [](const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].type != b[i].type || a[i].data != b[i].data) return false;
      return true;
    };
    return state == o.state && status == o.status && body == o.body && sse_failed == o.sse_failed &&
           same(events, o.events);
  }
};

constexpr size_t kMaxEvent = 4096;

ParseOutcome parse_in_pieces(const std::vector<std::string>& pieces) {
  HttpResponseParser http;
  SseParser sse(kMaxEvent);
  ParseOutcome out;
  std::string body;
  for (const std::string& piece : pieces) {
    body.clear();
    const auto state = http.feed(piece, body);
    out.body += body;  // what was decoded before an error counts too
    if (!sse.failed()) sse.feed(body, out.events);
    if (state == HttpResponseParser::State::kError) break;
  }
  if (http.state() != HttpResponseParser::State::kError) http.finish_eof();
  if (!sse.failed()) sse.finish(out.events);
  out.state = http.state();
  out.status = http.status();
  out.sse_failed = sse.failed();
  return out;
}

// Random streams, mostly garbage with well-formed pieces mixed in so that every layer is reached.
// The parsers are incremental: however the same bytes are split, they must decode the same
// response, body and events; the body never exceeds the input; no event exceeds the limit; and
// an event is a content chunk or [DONE] only when its data says so.
TEST(HostileInput, RandomBytesThroughTheParsers) {
  std::mt19937 rng(17);
  const std::string alphabet = "HTTP/1.1 200\r\n:data{}[]\"choices\"text0123456789abcdef;\n\r ";
  const std::vector<std::string> good_events = {"data: {\"choices\":[{\"text\":\"x\"}]}\n\n",
                                                "data: [DONE]\n\n", ": ping\n\n",
                                                "event: error\ndata: {\"error\":{}}\n\n"};
  auto chunk = [](const std::string& data) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + data + "\r\n";
  };
  int done = 0, errors = 0, content = 0, finished = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string stream;
    // A valid start most of the time, so the body and SSE layers get input too.
    if (trial % 4) stream = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int piece = 0; piece < 20; ++piece) {
      if (rng() % 3 == 0) {
        stream += chunk(good_events[rng() % good_events.size()]);
        continue;
      }
      std::string bytes(rng() % 64, '\0');
      for (char& ch : bytes)
        ch = rng() % 4 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() % 256);
      stream += rng() % 2 ? chunk(bytes) : bytes;
    }
    if (trial % 8 == 1) stream += "0\r\n\r\n";
    std::vector<std::string> random_split;
    for (size_t pos = 0; pos < stream.size();) {
      const size_t n = std::min(stream.size() - pos, size_t{1} + rng() % 97);
      random_split.push_back(stream.substr(pos, n));
      pos += n;
    }
    std::vector<std::string> bytewise;
    for (char c : stream) bytewise.emplace_back(1, c);

    const ParseOutcome whole = parse_in_pieces({stream});
    EXPECT_TRUE(parse_in_pieces(random_split) == whole) << "trial " << trial;
    EXPECT_TRUE(parse_in_pieces(bytewise) == whole) << "trial " << trial;
    EXPECT_LE(whole.body.size(), stream.size());
    if (whole.state == HttpResponseParser::State::kDone) ++finished;
    for (const SseEvent& e : whole.events) {
      EXPECT_LE(e.data.size(), kMaxEvent);
      for (EndpointKind kind : {EndpointKind::kChat, EndpointKind::kCompletions}) {
        const StreamEventInfo info = interpret_event(e, kind);
        using K = StreamEventInfo::Kind;
        EXPECT_EQ(info.kind == K::kDone, e.data == "[DONE]");
        if (info.kind == K::kChunk) {
          EXPECT_TRUE(nlohmann::json::accept(e.data)) << e.data;
        }
        if (info.has_content) {
          EXPECT_NE(e.data.find(kind == EndpointKind::kChat ? "\"delta\"" : "\"text\""), std::string::npos)
              << e.data;
        }
        if (kind == EndpointKind::kCompletions) {
          done += info.kind == K::kDone;
          errors += info.kind == K::kError;
          content += info.has_content;
        }
      }
    }
  }
  // The generator reached every outcome (so the properties above were exercised).
  EXPECT_GT(done, 0);
  EXPECT_GT(errors, 0);
  EXPECT_GT(content, 0);
  EXPECT_GT(finished, 0);
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
