// Test helpers: where the read-only fixtures live and how to reach the strata binary.
#pragma once

#include <string>
#include <vector>

namespace strata::test {

// Root of ../shared. Overridden at run time by the STRATA_SHARED environment variable,
// else the STRATA_SHARED_DIR CMake cache path.
std::string shared_dir();
// shared_dir() + "/" + rel.
std::string shared_path(const std::string& rel);
// Path of the built `strata` executable (for CLI tests).
std::string strata_binary();
// Root of the source tree.
std::string source_dir();
// Whole file as bytes; throws std::runtime_error if unreadable.
std::string read_file(const std::string& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `argv` (no shell), optional stdin text; captures stdout and stderr.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& stdin_text = "");

}  // namespace strata::test
