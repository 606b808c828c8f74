// Stop strings matched across token boundaries: text that might still turn into a stop string
// is held back, and a matched stop string (and anything after it) is never emitted.
#pragma once

#include <string>
#include <vector>

namespace strata {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds newly decoded text; returns the text that is now safe to emit.
  std::string push(const std::string& text);
  bool stopped() const { return stopped_; }
  // Emits what was held back (call when generation ends without a stop string).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace strata
