// Notices a client that went away while its request waits in the queue or runs.
//
// cpp-httplib 0.11 gives a handler no handle on its connection, and a closed connection only
// shows when a write fails — too late for a request that is queued or not streaming. The
// connection is found instead among the process's sockets by its two endpoints (as the
// request records them); it stays open, and so keeps its descriptor, until the handler is done.
#pragma once

#include <chrono>
#include <string>

namespace strata::server {

class ConnectionWatch {
 public:
  // Finds the socket whose local and peer endpoints are these (numeric host, port).
  ConnectionWatch(const std::string& local_addr, int local_port, const std::string& remote_addr,
                  int remote_port);

  bool found() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection. Checks at most every `interval`
  // (a poll() without waiting); false when the socket was not found.
  bool peer_gone(std::chrono::milliseconds interval = std::chrono::milliseconds(20));

 private:
  int fd_ = -1;
  bool gone_ = false;
  std::chrono::steady_clock::time_point last_check_{};
};

}  // namespace strata::server
