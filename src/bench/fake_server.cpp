#include "bench/fake_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "bench/thread_latency.h"
#include "core/check.h"

namespace strata::bench {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxRequestBytes = 16u << 20;

// Reads one request: returns false on EOF, a read error, or an oversized request.
bool read_request(int fd, std::string& method, std::string& path, std::string& body) {
  std::string data;
  char buf[8192];
  size_t head_end = std::string::npos;
  size_t content_length = 0;
  for (;;) {
    if (head_end == std::string::npos) {
      head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = data.substr(0, head_end);
        for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const size_t cl = head.find("\r\ncontent-length:");
        if (cl != std::string::npos) content_length = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
        if (content_length > kMaxRequestBytes) return false;
        const size_t sp1 = data.find(' ');
        const size_t sp2 = data.find(' ', sp1 + 1);
        if (sp1 == std::string::npos || sp2 == std::string::npos || sp2 > head_end) return false;
        method = data.substr(0, sp1);
        path = data.substr(sp1 + 1, sp2 - sp1 - 1);
      }
    }
    if (head_end != std::string::npos && data.size() >= head_end + 4 + content_length) {
      body = data.substr(head_end + 4, content_length);
      return true;
    }
    if (data.size() > kMaxRequestBytes) return false;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
  }
}

std::string status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string plain_response(int status, const std::string& content_type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\nContent-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

int64_t count_words(const std::string& text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

// The prompt of a completions request, or the first message of a chat request.
std::string request_prompt(const json& request) {
  auto prompt = request.find("prompt");
  if (prompt != request.end() && prompt->is_string()) return prompt->get<std::string>();
  auto messages = request.find("messages");
  if (messages != request.end() && messages->is_array() && !messages->empty() && (*messages)[0].is_object()) {
    auto content = (*messages)[0].find("content");
    if (content != (*messages)[0].end() && content->is_string()) return content->get<std::string>();
  }
  return "";
}

// One OpenAI stream chunk carrying `text` (and the finish reason when given).
json chunk_json(bool chat, const std::string& text, const char* finish_reason) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}};
  if (chat) {
    choice["delta"] = text.empty() && !finish_reason ? json{{"role", "assistant"}, {"content", ""}}
                                                     : json{{"content", text}};
  } else {
    choice["text"] = text;
  }
  return {{"id", "fake-1"},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", 0},
          {"model", "fake-model"},
          {"choices", json::array({choice})}};
}

// The final chunk of include_usage: no choices, the token counts.
json usage_chunk(bool chat, const FakeResponse& r, int64_t prompt_words, int64_t n_tokens) {
  const int64_t prompt_tokens = r.usage_prompt_tokens >= 0 ? r.usage_prompt_tokens : prompt_words;
  const int64_t completion = r.usage_completion_tokens >= 0 ? r.usage_completion_tokens : n_tokens;
  json last = chunk_json(chat, "", nullptr);
  last["choices"] = json::array();
  last["usage"] = {{"prompt_tokens", prompt_tokens},
                   {"completion_tokens", completion},
                   {"total_tokens", prompt_tokens + completion}};
  return last;
}

// One event as written to the socket: with a comment line before it when asked, and framed
// as an HTTP chunk when the body is chunked.
std::string frame_event(const std::string& event, const FakeResponse& r) {
  std::string frame = r.comments ? ": ping\n\n" + event : event;
  if (!r.chunked) return frame;
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", frame.size());
  return size + frame + "\r\n";
}

}  // namespace

FakeOpenAiServer::FakeOpenAiServer(Behavior behavior) : behavior_(std::move(behavior)) {
  start_ = std::chrono::steady_clock::now();
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  STRATA_CHECK(listen_fd_ >= 0, "fake server: socket failed");
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  STRATA_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0,
               "fake server: bind failed");
  STRATA_CHECK(listen(listen_fd_, 1024) == 0, "fake server: listen failed");
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeOpenAiServer::~FakeOpenAiServer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);  // wakes threads blocked in recv/send
  }
  stop_cv_.notify_all();
  acceptor_.join();
  reap_workers(/*all=*/true);
  close(listen_fd_);
}

std::vector<FakeOpenAiServer::SentStream> FakeOpenAiServer::sent_streams() const {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_cv_.wait_for(lock, std::chrono::seconds(60), [this] { return active_.load() == 0; });
  return sent_;
}

std::vector<double> FakeOpenAiServer::receipt_times() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<double> times = receipts_;
  std::sort(times.begin(), times.end());
  return times;
}

// Joins finished connection threads so a long run does not keep thousands of dead stacks.
void FakeOpenAiServer::reap_workers(bool all) {
  std::erase_if(workers_, [all](Worker& w) {
    if (!all && !w.done->load()) return false;
    w.thread.join();
    return true;
  });
}

void FakeOpenAiServer::accept_loop() {
  while (!stop_) {
    reap_workers(/*all=*/false);
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) {
      close(fd);
      break;
    }
    open_fds_.insert(fd);
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back({std::thread([this, fd, done] {
                          serve(fd);
                          *done = true;
                        }),
                        done});
  }
}

void FakeOpenAiServer::serve(int fd) {
  request_short_time_slice();  // tokens leave on time even when the cores are busy
  std::string method, path, body;
  if (read_request(fd, method, path, body)) {
    const double received_s = now_s();
    json request = json::parse(body, nullptr, false);
    if (method == "GET" && path == "/v1/models") {
      write_all(fd,
                plain_response(200, "application/json",
                               R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})"),
                false);
    } else if (method == "POST" && (path == "/v1/completions" || path == "/v1/chat/completions") &&
               request.is_object()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        receipts_.push_back(received_s);
      }
      ++active_;
      try {
        stream(fd, path, request, received_s);
      } catch (const std::exception&) {
        // A request with fields of unexpected types: the connection just closes.
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --active_;
      }
      idle_cv_.notify_all();
    } else {
      write_all(fd, plain_response(404, "application/json", R"({"error":{"message":"not found"}})"), false);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  open_fds_.erase(fd);
  close(fd);
}

double FakeOpenAiServer::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool FakeOpenAiServer::sleep_until(double seconds) {
  const auto when = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(seconds));
  std::unique_lock<std::mutex> lock(mutex_);
  stop_cv_.wait_until(lock, when, [this] { return stop_.load(); });
  return !stop_;
}

bool FakeOpenAiServer::write_all(int fd, const std::string& bytes, bool byte_by_byte) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t len = byte_by_byte ? 1 : bytes.size() - pos;
    const ssize_t n = send(fd, bytes.data() + pos, len, MSG_NOSIGNAL);
    if (n <= 0) return false;
    pos += static_cast<size_t>(n);
  }
  return true;
}

void FakeOpenAiServer::stream(int fd, const std::string& path, const json& request, double received_s) {
  const FakeResponse r = behavior_(path, request);
  if (r.status != 200) {
    write_all(fd, plain_response(r.status, "application/json", r.error_body), r.byte_by_byte);
    return;
  }
  const bool chat = path == "/v1/chat/completions";
  SentStream log;
  log.received_s = received_s;
  log.prompt = request_prompt(request);
  // Publishes the log however the stream ends.
  struct Publish {
    FakeOpenAiServer* self;
    SentStream* log;
    ~Publish() {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->sent_.push_back(std::move(*log));
    }
  } publish{this, &log};
  const int64_t max_tokens = request.value("max_tokens", int64_t{16});
  const int64_t n_tokens = !r.token_times_s.empty() ? static_cast<int64_t>(r.token_times_s.size())
                           : r.n_tokens >= 0        ? r.n_tokens
                                                    : max_tokens;
  // Every event goes out as its own write (and its own HTTP chunk when chunked).
  auto send_event = [&](const std::string& event) {
    return write_all(fd, frame_event(event, r), r.byte_by_byte);
  };
  auto data_event = [](const json& j) { return "data: " + j.dump() + "\n\n"; };

  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n";
  head += r.chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!write_all(fd, head, r.byte_by_byte)) return;
  if (chat && !send_event(data_event(chunk_json(true, "", nullptr)))) return;  // role chunk

  static const char* kWords[] = {" once", " upon", " a", " time", " there", " was", " a", " cat"};
  for (int64_t i = 0; i < n_tokens; ++i) {
    const bool cuts_stream = r.fault != FakeResponse::Fault::kNone && r.fault != FakeResponse::Fault::kNoDone;
    if (cuts_stream && i == r.fault_after) break;
    const double t = !r.token_times_s.empty() ? r.token_times_s[static_cast<size_t>(i)]
                                              : r.ttft_s + static_cast<double>(i) * r.itl_s;
    if (!sleep_until(received_s + t)) return;
    log.token_write_s.push_back(now_s());
    if (!send_event(data_event(chunk_json(chat, kWords[i % 8], nullptr)))) return;
  }
  switch (r.fault) {
    case FakeResponse::Fault::kErrorEvent:
      send_event(R"(data: {"error":{"message":"fake failure mid-stream","type":"server_error"}})"
                 "\n\n");
      break;
    case FakeResponse::Fault::kMalformedJson:
      send_event("data: {\"choices\": [\n\n");
      break;
    case FakeResponse::Fault::kCloseEarly:
      return;  // no terminating chunk, no [DONE]
    case FakeResponse::Fault::kStall:
      sleep_until(1e9);
      return;
    case FakeResponse::Fault::kNone:
    case FakeResponse::Fault::kNoDone: {
      send_event(data_event(chunk_json(chat, "", "length")));
      const json options = request.value("stream_options", json::object());
      if (r.send_usage && options.is_object() && options.value("include_usage", false))
        send_event(data_event(usage_chunk(chat, r, count_words(log.prompt), n_tokens)));
      if (r.fault == FakeResponse::Fault::kNone) send_event("data: [DONE]\n\n");
      break;
    }
  }
  if (r.chunked) write_all(fd, "0\r\n\r\n", r.byte_by_byte);
}

}  // namespace strata::bench
