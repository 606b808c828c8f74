#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace strata {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::mutex g_mutex;
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void log_message(LogLevel level, const std::string& msg) {
  static const char* const kTags[] = {"debug", "info", "warn", "error"};
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "strata %s: %s\n", kTags[static_cast<int>(level)], msg.c_str());
}

}  // namespace strata
