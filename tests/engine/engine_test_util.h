// Helpers for engine tests: a loaded stories260K and a synchronous way to run requests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/fixtures.h"
#include "engine/engine.h"
#include "common/direct_session.h"
#include "model/model.h"

namespace strata::test {

struct LoadedStories {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
};

inline LoadedStories& stories() {
  static LoadedStories s = [] {
    LoadedStories l;
    l.backend = make_cpu_backend(1);
    l.model = Model::load(shared_path("models/stories260K/stories260K.gguf"), *l.backend);
    return l;
  }();
  return s;
}

struct ChoiceResult {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason finish = FinishReason::None;
};

struct RequestResult {
  std::map<int32_t, ChoiceResult> choices;
  bool done = false;
  Usage usage;
};

// Collects events of many requests (engine thread or synchronous stepping).
class Collector {
 public:
  EventCallback callback(RequestResult* r) {
    return [r](const EngineEvent& ev) {
      ChoiceResult& c = r->choices[ev.index];
      for (const TokenOutput& t : ev.tokens) c.tokens.push_back(t.token);
      c.text += ev.text;
      if (ev.finish != FinishReason::None) c.finish = ev.finish;
      if (ev.request_done) {
        r->done = true;
        r->usage = ev.usage;
      }
    };
  }
};

inline RequestParams greedy_params(const Model& m, const std::string& prompt, int32_t max_tokens) {
  RequestParams p;
  p.prompt = m.tokenizer().encode(prompt, true, false);
  p.sampling.temperature = 0.0f;
  p.stop.max_tokens = max_tokens;
  return p;
}

}  // namespace strata::test
