// A progress bar on stderr for the calibration commands: redrawn in place on a terminal
// ("label [######......] 12/40 blk.3.ffn_up.weight | 0:41 left"), one line per tenth of the work
// otherwise, so logs and pipes stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace strata::calib {

class Progress {
 public:
  Progress(std::string label, int64_t total, std::FILE* out = stderr);
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of `total` finished; `item` names what is being worked on.
  void update(int64_t done, const std::string& item = "");
  void finish();

  // One frame, without the carriage return.
  static std::string render(const std::string& label, int64_t done, int64_t total, const std::string& item,
                            double elapsed_s, int width = 24);

 private:
  std::string label_;
  int64_t total_;
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false;
  bool finished_ = false;
  int64_t last_tenth_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace strata::calib
