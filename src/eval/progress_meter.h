// A one-line progress display for the evaluation commands, redrawn in place on stderr.
//
// Enabled only when stderr is a terminal, so logs and pipes never receive carriage returns.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "eval/perplexity.h"

namespace strata::eval {

class ProgressMeter {
 public:
  ProgressMeter(bool enabled, std::string label, std::FILE* out = stderr);
  ~ProgressMeter() { finish(); }
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void update(const EvalProgress& p);
  // Ends the line (once).
  void finish();

  // One frame without the carriage return: "label [#####-----] 3/10 windows | 1536 tokens |
  // PPL 12.3456 | 850 scored tok/s | ETA 0:12". elapsed_s: time since the start.
  static std::string render(const std::string& label, const EvalProgress& p, double elapsed_s,
                            int width = 24);

 private:
  bool enabled_;
  bool drawn_ = false;
  std::string label_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
};

// True when stderr is a terminal.
bool stderr_is_terminal();

}  // namespace strata::eval
