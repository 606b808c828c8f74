// Entry point of `strata`: builds the subcommand tree from the registry and turns every
// recoverable error into one clean line on stderr and a non-zero exit status.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/check.h"

namespace strata::cli {
namespace {

std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> commands;
  return commands;
}

int g_exit_code = 0;

// llama.cpp's multi-letter single-dash flags, which CLI11 cannot declare, spelled out.
std::vector<std::string> expand_aliases(int argc, char** argv) {
  static const std::map<std::string, std::string> kAliases = {{"-ctk", "--cache-type-k"},
                                                              {"-ctv", "--cache-type-v"}};
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& a : args)
    for (const auto& [alias, name] : kAliases)
      if (a == alias || a.rfind(alias + "=", 0) == 0) a = name + a.substr(alias.size());
  return args;
}

}  // namespace

bool register_command(CommandSpec spec) {
  registry().push_back(std::move(spec));
  return true;
}

const std::vector<CommandSpec>& registered_commands() { return registry(); }
void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

}  // namespace strata::cli

int main(int argc, char** argv) {
  using namespace strata::cli;
  CLI::App app{"strata: LLM inference engine and OpenAI-compatible server"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");

  std::map<std::string, CLI::App*> created;
  // Parents first: two passes keep registration order irrelevant.
  for (int pass = 0; pass < 2; ++pass) {
    for (const CommandSpec& spec : registered_commands()) {
      if (spec.parent.empty() != (pass == 0)) continue;
      CLI::App* parent = &app;
      if (!spec.parent.empty()) {
        auto it = created.find(spec.parent);
        if (it == created.end()) continue;
        parent = it->second;
      }
      CLI::App* cmd = parent->add_subcommand(spec.name, spec.description);
      spec.setup(*cmd);
      created[spec.parent.empty() ? spec.name : spec.parent + " " + spec.name] = cmd;
    }
  }

  try {
    std::vector<std::string> args = expand_aliases(argc, argv);
    std::vector<char*> ptrs;
    for (std::string& a : args) ptrs.push_back(a.data());
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const strata::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "strata: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 1;
  }
  return exit_code();
}
