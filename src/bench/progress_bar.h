// A one-line progress bar on stderr, redrawn in place while requests run.
//
// Enabled only when asked (the CLI enables it when stderr is a terminal and --quiet is absent),
// so logs and pipes never receive carriage-return noise.
#pragma once

#include <cstdio>
#include <string>

#include "bench/stream_client.h"

namespace strata::bench {

class ProgressBar {
 public:
  ProgressBar(bool enabled, std::string label, std::FILE* out = stderr)
      : enabled_(enabled), label_(std::move(label)), out_(out) {}
  ~ProgressBar() { finish(); }

  void update(const LoadProgress& p);
  // Ends the line (once).
  void finish();

  // The text of one frame, without the leading carriage return ("label [####....] 3/10 ...").
  static std::string render(const std::string& label, const LoadProgress& p, int width = 30);

 private:
  bool enabled_;
  bool drawn_ = false;
  std::string label_;
  std::FILE* out_;
};

// True when stderr is a terminal.
bool stderr_is_tty();

}  // namespace strata::bench
