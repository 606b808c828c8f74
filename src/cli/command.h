// Subcommand registry of the `strata` executable.
//
// Each src/cli/cmd_*.cpp file defines one subcommand and registers it with
// STRATA_REGISTER_COMMAND; main.cpp builds the CLI11 tree from the registry, so adding a
// command never touches another file. Files in src/cli are linked into the executable
// directly (not through a static library), so the registrars always run.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace strata::cli {

struct CommandSpec {
  std::string parent;  // "" for a top-level command, else the parent command's name ("bench")
  std::string name;
  // Adds options to `cmd` (already created with name and description) and sets its callback.
  std::function<void(CLI::App& cmd)> setup;
  std::string description;
};

bool register_command(CommandSpec spec);
const std::vector<CommandSpec>& registered_commands();

// The callback of a command reports its exit status here (default 0).
void set_exit_code(int code);
int exit_code();

}  // namespace strata::cli

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)
#define STRATA_REGISTER_COMMAND(...) \
  static const bool STRATA_CONCAT(strata_command_registered_, __LINE__) = \
      ::strata::cli::register_command(::strata::cli::CommandSpec{__VA_ARGS__})
