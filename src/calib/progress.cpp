#include "calib/progress.h"

#include <unistd.h>

#include <algorithm>

namespace strata::calib {

Progress::Progress(std::string label, int64_t total, std::FILE* out)
    : label_(std::move(label)),
      total_(std::max<int64_t>(1, total)),
      out_(out),
      tty_(::isatty(::fileno(out)) == 1),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::render(const std::string& label, int64_t done, int64_t total, const std::string& item,
                             double elapsed_s, int width) {
  done = std::clamp<int64_t>(done, 0, total);
  const int filled = static_cast<int>(static_cast<double>(done) / static_cast<double>(total) * width);
  std::string s = label + " [" + std::string(static_cast<size_t>(filled), '#') +
                  std::string(static_cast<size_t>(width - filled), '.') + "] " + std::to_string(done) + "/" +
                  std::to_string(total);
  if (!item.empty()) s += " " + item;
  if (done > 0 && done < total) {
    const auto left =
        static_cast<int64_t>(elapsed_s / static_cast<double>(done) * static_cast<double>(total - done));
    char buf[32];
    std::snprintf(buf, sizeof buf, " | %lld:%02lld left", static_cast<long long>(left / 60),
                  static_cast<long long>(left % 60));
    s += buf;
  }
  return s;
}

void Progress::update(int64_t done, const std::string& item) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (tty_) {
    std::fprintf(out_, "\r%-100.100s", render(label_, done, total_, item, elapsed).c_str());
    std::fflush(out_);
    drawn_ = true;
    return;
  }
  const int64_t tenth = done * 10 / total_;
  if (tenth == last_tenth_) return;
  last_tenth_ = tenth;
  std::fprintf(out_, "%s\n", render(label_, done, total_, item, elapsed).c_str());
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) std::fputc('\n', out_);
}

}  // namespace strata::calib
