#include "server/connection_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace strata::server {
namespace {

// The numeric host and port of an address, formatted as cpp-httplib formats them.
bool endpoint_of(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  char buf[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, buf, sizeof buf, nullptr, 0,
                  NI_NUMERICHOST) != 0)
    return false;
  host = buf;
  if (addr.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  else if (addr.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  else
    return false;
  return true;
}

bool socket_matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr,
                    int remote_port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  std::string host;
  int port = -1;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  if (!endpoint_of(addr, len, host, port) || port != remote_port || host != remote_addr) return false;
  len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  return endpoint_of(addr, len, host, port) && port == local_port && host == local_addr;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const std::string& local_addr, int local_port,
                                 const std::string& remote_addr, int remote_port) {
  if (local_port < 0 || remote_port < 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    if (socket_matches(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

bool ConnectionWatch::peer_gone(std::chrono::milliseconds interval) {
  if (fd_ < 0 || gone_) return gone_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_check_ < interval) return false;
  last_check_ = now;
  pollfd p{fd_, POLLRDHUP, 0};
  // POLLRDHUP: the peer closed its side (a client does so only when it gives up on the answer);
  // POLLHUP/POLLERR: reset.
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) gone_ = true;
  return gone_;
}

}  // namespace strata::server
