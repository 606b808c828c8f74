#include "bench/stream_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/http_response_parser.h"
#include "bench/thread_latency.h"
#include "core/check.h"

namespace strata::bench {

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kMaxErrorBody = 4096;  // bytes of an HTTP error body kept for the message
constexpr size_t kMaxOverheadSamples = 1u << 20;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Clock::time_point after(Clock::time_point t, double seconds) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string errno_text(int err) {
  return std::strerror(err);
}

double thread_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// Lets unlimited concurrency open as many sockets as the hard limit allows.
void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

struct ResolvedAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
};

// Blocking connect with a timeout; true when the server accepted.
bool probe_connect(const addrinfo* ai) {
  const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = poll(&p, 1, 3000) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  close(fd);
  return ok;
}

// Resolves once before the run (name lookups must not be timed); prefers the first address
// that accepts a connection, since "localhost" may list ::1 first for an IPv4-only server.
ResolvedAddress resolve(const HttpTarget& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(target.port);
  if (int rc = getaddrinfo(target.host.c_str(), port.c_str(), &hints, &list); rc != 0)
    STRATA_THROW("cannot resolve ", target.host, ": ", gai_strerror(rc));
  const addrinfo* chosen = list;
  for (const addrinfo* ai = list; ai && list->ai_next; ai = ai->ai_next) {  // only if there is a choice
    if (probe_connect(ai)) {
      chosen = ai;
      break;
    }
  }
  ResolvedAddress out;
  std::memcpy(&out.addr, chosen->ai_addr, chosen->ai_addrlen);
  out.len = chosen->ai_addrlen;
  out.family = chosen->ai_family;
  freeaddrinfo(list);
  return out;
}

std::string host_header(const HttpTarget& t) {
  const bool v6 = t.host.find(':') != std::string::npos;
  return (v6 ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
}

std::string http_error_message(int status, const std::string& body) {
  std::string msg = "HTTP " + std::to_string(status);
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return msg + ": " + e["message"].get<std::string>();
    if (e.is_string()) return msg + ": " + e.get<std::string>();
  }
  if (!body.empty()) msg += ": " + body.substr(0, 200);
  return msg;
}

struct Connection {
  Connection(size_t i, EndpointKind kind, Clock::time_point sent) : index(i), tracker(kind, sent) {}
  size_t index;
  int fd = -1;
  bool connected = false;
  std::string out;  // request bytes not yet sent
  size_t out_pos = 0;
  Clock::time_point deadline;
  HttpResponseParser http;
  SseParser sse;
  StreamTracker tracker;
  std::string body;        // decoded body bytes of the current read
  std::string error_body;  // start of a non-2xx body
  std::vector<SseEvent> events;
};

class LoadRunner {
 public:
  LoadRunner(const std::vector<LoadRequest>& requests, const LoadOptions& options)
      : requests_(requests), options_(options), records_(requests.size()) {}
  ~LoadRunner();
  LoadResult run();

 private:
  void launch_due(Clock::time_point now);
  void start_request(size_t index, Clock::time_point now);
  void on_event(Connection& c, uint32_t events);
  void send_pending(Connection& c);
  void on_readable(Connection& c);
  void consume(Connection& c, std::string_view bytes, Clock::time_point now);
  void on_eof(Connection& c);
  void complete(Connection& c);
  void fail_and_complete(Connection& c, const char* error_class, const std::string& message);
  void expire(Clock::time_point now);
  void wait_for_events(Clock::time_point now);
  void report_progress(Clock::time_point now);
  bool slot_free() const { return options_.max_concurrency <= 0 || in_flight_ < options_.max_concurrency; }

  const std::vector<LoadRequest>& requests_;
  const LoadOptions& options_;
  std::vector<RequestRecord> records_;
  ResolvedAddress address_;
  std::string request_head_;  // request line + fixed headers, without Content-Length
  int epoll_fd_ = -1, timer_fd_ = -1;
  Clock::time_point start_;
  size_t next_ = 0;  // next request to send
  int64_t finished_ = 0, failed_ = 0, in_flight_ = 0, peak_in_flight_ = 0;
  std::vector<std::unique_ptr<Connection>> active_;
  Clock::time_point earliest_deadline_ = Clock::time_point::max();
  Clock::time_point timer_armed_ = Clock::time_point::max();  // when the timerfd fires next
  Clock::time_point next_progress_;
  Clock::time_point last_finish_;
  std::vector<float> overhead_us_;
  double overhead_sum_us_ = 0.0, overhead_max_us_ = 0.0;
  int64_t reads_ = 0;
};

LoadRunner::~LoadRunner() {
  for (auto& c : active_)
    if (c->fd >= 0) close(c->fd);
  if (timer_fd_ >= 0) close(timer_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

LoadResult LoadRunner::run() {
  raise_fd_limit();
  request_short_time_slice();
  address_ = resolve(options_.target);
  request_head_ = "POST " + options_.path + " HTTP/1.1\r\nHost: " + host_header(options_.target) +
                  "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
                  "Connection: close\r\nUser-Agent: strata-bench\r\n";
  if (!options_.api_key.empty()) request_head_ += "Authorization: Bearer " + options_.api_key + "\r\n";
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || timer_fd_ < 0) STRATA_THROW("cannot create event loop: ", errno_text(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the timer
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev);

  const double cpu_start = thread_cpu_seconds();
  start_ = last_finish_ = Clock::now();
  next_progress_ = start_;
  while (finished_ < static_cast<int64_t>(requests_.size())) {
    Clock::time_point now = Clock::now();
    launch_due(now);
    expire(now);
    report_progress(now);
    if (finished_ == static_cast<int64_t>(requests_.size())) break;
    wait_for_events(now);
  }
  LoadResult result;
  result.start = start_;
  result.records = std::move(records_);
  result.duration_s = seconds_between(start_, last_finish_);
  result.peak_in_flight = peak_in_flight_;
  result.overhead.reads = reads_;
  result.overhead.cpu_s = thread_cpu_seconds() - cpu_start;
  if (reads_ > 0) {
    result.overhead.mean_us = overhead_sum_us_ / static_cast<double>(reads_);
    result.overhead.max_us = overhead_max_us_;
    std::sort(overhead_us_.begin(), overhead_us_.end());
    result.overhead.p99_us =
        overhead_us_[static_cast<size_t>(0.99 * static_cast<double>(overhead_us_.size() - 1))];
  }
  if (options_.on_progress) {
    options_.on_progress({static_cast<int64_t>(requests_.size()), finished_, failed_, 0,
                          seconds_between(start_, Clock::now())});
  }
  return result;
}

void LoadRunner::launch_due(Clock::time_point now) {
  // A burst of due requests is opened a batch at a time, with reads in between, so that
  // thousands of simultaneous arrivals do not delay the timestamps of streams already running.
  constexpr int kMaxLaunchesPerTurn = 32;
  for (int launched = 0; launched < kMaxLaunchesPerTurn && next_ < requests_.size() && slot_free() &&
                         after(start_, requests_[next_].scheduled_s) <= now;
       ++launched) {
    start_request(next_++, now);
    now = Clock::now();
  }
}

void LoadRunner::start_request(size_t index, Clock::time_point now) {
  auto conn = std::make_unique<Connection>(index, options_.endpoint, now);
  Connection& c = *conn;
  records_[index].scheduled_s = requests_[index].scheduled_s;
  records_[index].sent_s = seconds_between(start_, now);
  c.deadline = after(now, options_.timeout_s);
  earliest_deadline_ = std::min(earliest_deadline_, c.deadline);
  const std::string& body = requests_[index].body;
  c.out = request_head_ + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  active_.push_back(std::move(conn));
  ++in_flight_;
  peak_in_flight_ = std::max(peak_in_flight_, in_flight_);

  c.fd = socket(address_.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) return fail_and_complete(c, kErrorConnect, "socket: " + errno_text(errno));
  const int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c.fd, reinterpret_cast<const sockaddr*>(&address_.addr), address_.len) != 0 &&
      errno != EINPROGRESS) {
    return fail_and_complete(c, kErrorConnect, "connect: " + errno_text(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN;
  ev.data.ptr = &c;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c.fd, &ev);
}

void LoadRunner::on_event(Connection& c, uint32_t events) {
  if (!c.connected) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return fail_and_complete(c, kErrorConnect, "connect: " + errno_text(err));
    if (!(events & (EPOLLOUT | EPOLLIN))) return;
    c.connected = true;
  }
  if (!c.out.empty() && (events & EPOLLOUT)) send_pending(c);
  if (c.fd >= 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_readable(c);
}

void LoadRunner::send_pending(Connection& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n = send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // EPOLLOUT will call again
      // The server may have answered (e.g. 413) and closed: read what it sent.
      c.out_pos = c.out.size();
      break;
    }
    c.out_pos += static_cast<size_t>(n);
  }
  c.out.clear();
  c.out.shrink_to_fit();
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &c;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void LoadRunner::on_readable(Connection& c) {
  char buf[65536];
  const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
  const Clock::time_point now = Clock::now();
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    // A reset before any response means the server never took the request.
    const char* cls = c.http.headers_done() ? kErrorMalformed : kErrorConnect;
    return fail_and_complete(c, cls, "recv: " + errno_text(errno));
  }
  if (n == 0) return on_eof(c);
  consume(c, std::string_view(buf, static_cast<size_t>(n)), now);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - now).count();
  ++reads_;
  overhead_sum_us_ += us;
  overhead_max_us_ = std::max(overhead_max_us_, us);
  if (overhead_us_.size() < kMaxOverheadSamples) overhead_us_.push_back(static_cast<float>(us));
}

void LoadRunner::consume(Connection& c, std::string_view bytes, Clock::time_point now) {
  const bool had_headers = c.http.headers_done();
  c.body.clear();
  const auto state = c.http.feed(bytes, c.body);
  if (state == HttpResponseParser::State::kError)
    return fail_and_complete(c, kErrorMalformed, "bad HTTP response: " + c.http.error());
  if (!c.http.headers_done()) return;
  const int status = c.http.status();
  if (status < 200 || status > 299) {
    if (c.error_body.size() < kMaxErrorBody) c.error_body.append(c.body.substr(0, kMaxErrorBody));
    if (state == HttpResponseParser::State::kDone)
      fail_and_complete(c, ("http_" + std::to_string(status)).c_str(),
                        http_error_message(status, c.error_body));
    return;
  }
  if (!had_headers && c.http.header("content-type").rfind("application/json", 0) == 0) {
    return fail_and_complete(c, kErrorMalformed,
                             "server answered application/json instead of an event stream");
  }
  c.events.clear();
  if (!c.sse.feed(c.body, c.events)) return fail_and_complete(c, kErrorMalformed, c.sse.error());
  if (state == HttpResponseParser::State::kDone) c.sse.finish(c.events);
  for (const SseEvent& e : c.events) {
    c.tracker.on_event(e, now);
    if (c.tracker.finished()) break;
  }
  if (c.tracker.finished() || state == HttpResponseParser::State::kDone) complete(c);
}

void LoadRunner::on_eof(Connection& c) {
  const bool had_headers = c.http.headers_done();
  const auto state = c.http.finish_eof();
  if (state == HttpResponseParser::State::kError) {
    const char* cls = had_headers ? kErrorMalformed : kErrorConnect;
    return fail_and_complete(c, cls, c.http.error());
  }
  const int status = c.http.status();
  if (status < 200 || status > 299)
    return fail_and_complete(c, ("http_" + std::to_string(status)).c_str(),
                             http_error_message(status, c.error_body));
  c.events.clear();
  c.sse.finish(c.events);
  const Clock::time_point now = Clock::now();
  for (const SseEvent& e : c.events) c.tracker.on_event(e, now);
  complete(c);
}

void LoadRunner::fail_and_complete(Connection& c, const char* error_class, const std::string& message) {
  c.tracker.fail(error_class, message);
  complete(c);
}

void LoadRunner::complete(Connection& c) {
  if (c.fd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.fd = -1;
  }
  RequestRecord& rec = records_[c.index];
  const double scheduled = rec.scheduled_s, sent = rec.sent_s;
  rec = c.tracker.take_record(requests_[c.index].estimated_input_tokens);
  rec.scheduled_s = scheduled;
  rec.sent_s = sent;
  ++finished_;
  --in_flight_;
  if (!rec.success) ++failed_;
  last_finish_ = Clock::now();
  // The epoll loop may still hold a pointer to this connection in the current batch: it is
  // only marked here (fd < 0) and erased in wait_for_events after the batch.
}

void LoadRunner::expire(Clock::time_point now) {
  if (now < earliest_deadline_) return;
  earliest_deadline_ = Clock::time_point::max();
  for (auto& c : active_) {
    if (c->fd < 0) continue;
    if (c->deadline <= now) {
      fail_and_complete(*c, kErrorTimeout, "no complete response within the timeout");
    } else {
      earliest_deadline_ = std::min(earliest_deadline_, c->deadline);
    }
  }
  std::erase_if(active_, [](const auto& c) { return c->fd < 0; });
}

void LoadRunner::report_progress(Clock::time_point now) {
  if (!options_.on_progress || now < next_progress_) return;
  next_progress_ = after(now, options_.progress_interval_s);
  options_.on_progress(
      {static_cast<int64_t>(requests_.size()), finished_, failed_, in_flight_, seconds_between(start_, now)});
}

void LoadRunner::wait_for_events(Clock::time_point now) {
  Clock::time_point wake = earliest_deadline_;
  if (next_ < requests_.size() && slot_free())
    wake = std::min(wake, after(start_, requests_[next_].scheduled_s));
  if (options_.on_progress) wake = std::min(wake, next_progress_);
  int timeout_ms = -1;
  if (wake <= now) {
    timeout_ms = 0;
  } else if (wake != Clock::time_point::max() && (wake < timer_armed_ || timer_armed_ <= now)) {
    // timerfd gives the wake-up nanosecond resolution (epoll_wait's own timeout is in ms).
    // It is re-armed only when it would fire too late: an early wake-up just loops once more,
    // and saving the system call matters when every token wakes the loop.
    timer_armed_ = wake;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wake.time_since_epoch()).count();
    itimerspec spec{};
    spec.it_value.tv_sec = ns / 1'000'000'000;
    spec.it_value.tv_nsec = ns % 1'000'000'000;
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }
  epoll_event events[256];
  const int n = epoll_wait(epoll_fd_, events, 256, timeout_ms);
  if (n < 0 && errno != EINTR) STRATA_THROW("epoll_wait: ", errno_text(errno));
  for (int i = 0; i < n; ++i) {
    if (events[i].data.ptr == nullptr) {
      uint64_t expirations;
      [[maybe_unused]] ssize_t r = read(timer_fd_, &expirations, sizeof expirations);
      timer_armed_ = Clock::time_point::max();
      continue;
    }
    Connection& c = *static_cast<Connection*>(events[i].data.ptr);
    if (c.fd >= 0) on_event(c, events[i].events);
  }
  std::erase_if(active_, [](const auto& c) { return c->fd < 0; });
}

}  // namespace

HttpTarget parse_http_url(std::string_view url) {
  const std::string original(url);
  if (url.rfind("https://", 0) == 0) STRATA_THROW("https is not supported (use http://): ", original);
  if (url.rfind("http://", 0) != 0) STRATA_THROW("--url must start with http://, got '", original, "'");
  url.remove_prefix(7);
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  HttpTarget t;
  if (slash != std::string_view::npos) t.base_path = std::string(url.substr(slash));
  while (!t.base_path.empty() && t.base_path.back() == '/') t.base_path.pop_back();
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) STRATA_THROW("bad IPv6 host in --url: ", original);
    t.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') STRATA_THROW("bad --url: ", original);
      port_text = authority.substr(close + 2);
      has_port = true;
    }
  } else {
    const size_t colon = authority.find(':');
    t.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (t.host.empty()) STRATA_THROW("--url has no host: ", original);
  if (has_port) {
    int port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) STRATA_THROW("bad port in --url: ", original);
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) STRATA_THROW("bad port in --url: ", original);
    t.port = static_cast<uint16_t>(port);
  }
  return t;
}

std::string request_path(const HttpTarget& target, std::string_view endpoint_path) {
  const std::string& base = target.base_path;
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0 && endpoint_path.rfind("/v1/", 0) == 0)
    endpoint_path.remove_prefix(3);
  return base + std::string(endpoint_path);
}

LoadResult run_load(const std::vector<LoadRequest>& requests, const LoadOptions& options) {
  LoadRunner runner(requests, options);
  return runner.run();
}

}  // namespace strata::bench
