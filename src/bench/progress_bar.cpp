#include "bench/progress_bar.h"

#include <unistd.h>

#include <algorithm>

namespace strata::bench {

std::string ProgressBar::render(const std::string& label, const LoadProgress& p, int width) {
  const double frac = p.total > 0 ? static_cast<double>(p.finished) / static_cast<double>(p.total) : 1.0;
  const int filled = std::clamp(static_cast<int>(frac * width + 1e-9), 0, width);
  std::string bar = label;
  if (!bar.empty()) bar += ' ';
  bar += '[';
  bar.append(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  bar += ']';
  char tail[160];
  std::snprintf(tail, sizeof tail, " %lld/%lld  failed %lld  in flight %lld  %.1fs",
                static_cast<long long>(p.finished), static_cast<long long>(p.total),
                static_cast<long long>(p.failed), static_cast<long long>(p.in_flight), p.elapsed_s);
  return bar + tail;
}

void ProgressBar::update(const LoadProgress& p) {
  if (!enabled_) return;
  // "\33[K" clears what a longer previous frame left on the line.
  std::fprintf(out_, "\r%s\33[K", render(label_, p).c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  drawn_ = false;
}

bool stderr_is_tty() {
  return isatty(STDERR_FILENO) == 1;
}

}  // namespace strata::bench
