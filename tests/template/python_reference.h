// The independent reference of the template tests: Python's Jinja2 configured as Hugging Face
// transformers renders chat templates (tests/template/hf_jinja_reference.py, Debian's
// python3-jinja2), run once per batch of cases.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace strata::test {

struct ReferenceCase {
  std::string template_source;
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  std::optional<int64_t> now;  // strftime_now's clock (UTC), as the engine's now_unix
};

struct ReferenceResult {
  bool ok = false;
  std::string output;      // when ok
  std::string error_type;  // Python exception class, when !ok
  std::string message;
  bool raised = false;  // the template called raise_exception
};

// Throws std::runtime_error when python3 or its jinja2 module is unavailable.
std::vector<ReferenceResult> render_with_python(const std::vector<ReferenceCase>& cases);

// Reads a JSON file of the test sources (tests/template/NAME).
nlohmann::ordered_json load_test_json(const std::string& name);

}  // namespace strata::test
