#include "eval/progress_meter.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace strata::eval {

ProgressMeter::ProgressMeter(bool enabled, std::string label, std::FILE* out)
    : enabled_(enabled), label_(std::move(label)), out_(out), start_(std::chrono::steady_clock::now()) {}

std::string ProgressMeter::render(const std::string& label, const EvalProgress& p, double elapsed_s,
                                  int width) {
  const double frac =
      p.n_windows > 0 ? static_cast<double>(p.windows_done) / static_cast<double>(p.n_windows) : 0.0;
  const int filled = static_cast<int>(std::lround(frac * width));
  std::string s = label + " [" + std::string(static_cast<size_t>(filled), '#') +
                  std::string(static_cast<size_t>(width - filled), '-') + "] ";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lld/%lld windows | %lld tokens | PPL %.4f",
                static_cast<long long>(p.windows_done), static_cast<long long>(p.n_windows),
                static_cast<long long>(p.tokens_scored), p.running_ppl);
  s += buf;
  if (p.running_kld >= 0.0) {
    std::snprintf(buf, sizeof buf, " | KLD %.6f", p.running_kld);
    s += buf;
  }
  if (elapsed_s > 0.0 && p.windows_done > 0) {
    const double remaining_s = elapsed_s / frac - elapsed_s;
    const long long eta = std::llround(remaining_s);
    std::snprintf(buf, sizeof buf, " | %.0f scored tok/s | ETA %lld:%02lld",
                  static_cast<double>(p.tokens_scored) / elapsed_s, eta / 60, eta % 60);
    s += buf;
  }
  return s;
}

void ProgressMeter::update(const EvalProgress& p) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Clear to the end of the line: a frame may be shorter than the previous one.
  std::fprintf(out_, "\r%s\033[K", render(label_, p, elapsed).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressMeter::finish() {
  if (drawn_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    drawn_ = false;
  }
}

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

}  // namespace strata::eval
