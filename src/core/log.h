// Logging to stderr (stdout is reserved for command results).
#pragma once

#include <string>

#include "core/check.h"

namespace strata {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const std::string& msg);

template <typename... Args>
void log_info(const Args&... args) {
  if (log_level() <= LogLevel::Info) log_message(LogLevel::Info, concat(args...));
}
template <typename... Args>
void log_warn(const Args&... args) {
  if (log_level() <= LogLevel::Warn) log_message(LogLevel::Warn, concat(args...));
}
template <typename... Args>
void log_debug(const Args&... args) {
  if (log_level() <= LogLevel::Debug) log_message(LogLevel::Debug, concat(args...));
}
template <typename... Args>
void log_error(const Args&... args) {
  if (log_level() <= LogLevel::Error) log_message(LogLevel::Error, concat(args...));
}

}  // namespace strata
