#include "fixtures.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace strata::test {

std::string shared_dir() {
  if (const char* env = std::getenv("STRATA_SHARED"); env && *env) return env;
  return STRATA_SHARED_DIR_DEFAULT;
}

std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }

std::string strata_binary() { return STRATA_BINARY; }

std::string source_dir() { return STRATA_SOURCE_DIR; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& stdin_text) {
  signal(SIGPIPE, SIG_IGN);  // a child that stops reading stdin must not kill the test
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) || pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {in_pipe[1], out_pipe[0], err_pipe[0], in_pipe[0], out_pipe[1], err_pipe[1]})
    posix_spawn_file_actions_addclose(&actions, fd);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("spawn failed: " + argv[0]);
  }
  fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (stdin_text.empty()) {
    close(in_pipe[1]);
    in_pipe[1] = -1;
  }
  CommandResult result;
  pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_pipe[1], POLLOUT, 0}};
  int open_outputs = 2;
  char buf[65536];
  while (open_outputs > 0) {
    nfds_t n = in_pipe[1] >= 0 ? 3 : 2;
    if (poll(fds, n, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_outputs;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(got));
      }
    }
    if (in_pipe[1] >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t put = write(in_pipe[1], stdin_text.data() + written, stdin_text.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if (put < 0 || written == stdin_text.size()) {
        close(in_pipe[1]);
        in_pipe[1] = -1;
        fds[2].fd = -1;
      }
    }
  }
  if (in_pipe[1] >= 0) close(in_pipe[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace strata::test
