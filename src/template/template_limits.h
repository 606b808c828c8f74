// Sandbox limits of one template render. Each one, when hit, stops the render with a
// TemplateError of kind LimitExceeded, so a hostile template (e.g. from a GGUF file) cannot
// crash or hang the server.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

struct TemplateLimits {
  int max_call_depth = 64;                  // nested macro / caller() / recursive loop calls
  int64_t max_loop_iterations = 1'000'000;  // loop iterations over the whole render
  size_t max_output_bytes = 32u << 20;      // the rendered text, and any single string value
  size_t max_container_items = 1'000'000;   // elements of any one list or dict
  uint32_t max_value_depth = 256;           // nesting of lists/dicts (JSON input included)
  size_t max_alloc_bytes = 512u << 20;      // bytes of strings/containers created, cumulated
  int64_t max_time_ms = 2000;               // wall-clock time of the render
};

// Limits on the template source itself, checked when it is parsed.
struct TemplateParseLimits {
  size_t max_source_bytes = 4u << 20;
  int max_nesting = 128;  // nested blocks plus nested expressions (parentheses, calls, ...)
};

}  // namespace strata
