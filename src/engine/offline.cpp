#include "engine/offline.h"

#include <cstring>

#include "core/check.h"

namespace strata::offline {

Output generate(Engine& engine, RequestParams params, const EventCallback& on_event) {
  Output out;
  bool done = false;
  const SubmitResult r = engine.submit(std::move(params), [&](const EngineEvent& ev) {
    if (on_event) on_event(ev);
    if (ev.index != 0 && !ev.request_done) return;
    if (ev.index == 0) {
      for (const TokenOutput& t : ev.tokens) out.tokens.push_back(t.token);
      out.text += ev.text;
      if (ev.finish != FinishReason::None) out.finish = ev.finish, out.error = ev.error;
    }
    if (ev.request_done) {
      out.usage = ev.usage;
      done = true;
    }
  });
  if (r.status != SubmitStatus::Accepted)
    STRATA_THROW("the engine refused the request (queue full or shutting down)");
  while (!done && engine.step()) {
  }
  STRATA_CHECK(done, "the engine went idle before the request finished");
  return out;
}

void score(Engine& engine, const std::vector<int32_t>& tokens, int64_t from, const RowsCallback& on_rows) {
  RequestParams p;
  p.prompt = tokens;
  p.prompt_logits_from = from;
  p.stop.max_tokens = 0;
  p.sampling.temperature = 0.0f;
  const Output o = generate(engine, std::move(p), [&](const EngineEvent& ev) {
    if (ev.n_logits_rows > 0) on_rows(ev.logits_first_row, ev.n_logits_rows, ev.logits);
  });
  if (o.finish == FinishReason::Error) STRATA_THROW("evaluation failed: ", o.error);
}

EngineConfig single_stream_config(int64_t n_ctx, int32_t max_batched_tokens) {
  EngineConfig c;
  c.kv_cache_tokens = n_ctx;
  c.max_model_len = n_ctx;
  c.max_num_seqs = 1;
  c.max_batched_tokens = max_batched_tokens;
  c.prefix_caching = false;
  return c;
}

std::vector<float> all_logits(Model& model, const std::vector<int32_t>& tokens, const KvCacheType& kv_type) {
  EngineConfig c = single_stream_config(static_cast<int64_t>(tokens.size()));
  c.kv_type = kv_type;
  Engine engine(model, c);
  const auto n_vocab = static_cast<size_t>(model.config().n_vocab);
  std::vector<float> out(tokens.size() * n_vocab);
  score(engine, tokens, 0, [&](int64_t first, int64_t n, const float* rows) {
    std::memcpy(out.data() + static_cast<size_t>(first) * n_vocab, rows,
                static_cast<size_t>(n) * n_vocab * sizeof(float));
  });
  return out;
}

}  // namespace strata::offline
