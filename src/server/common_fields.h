// The request fields /v1/completions and /v1/chat/completions share: model, n, sampling,
// penalties, stop conditions, streaming options (internal to the request parsers).
#pragma once

#include <optional>

#include "server/generation_request.h"
#include "server/json_fields.h"

namespace strata::server {

// Checks `model`: absent or the served name, else ApiError 404 (also /v1/embeddings).
void parse_model(const JsonFields& f, const ServedModel& model);

// Fills req.params (except max_tokens), req.stream and req.include_usage from `f`.
// Returns the requested output limit (max_tokens or max_completion_tokens), if any.
std::optional<int32_t> parse_common_fields(const JsonFields& f, const ServedModel& model,
                                           GenerationRequest& req);

// Sets params.stop.max_tokens (the request's, else `default_max_tokens(prompt length)`) and
// checks every prompt: non-empty, and prompt + output within the model's sequence limit.
void resolve_output_limit(GenerationRequest& req, const ServedModel& model, std::optional<int32_t> max_tokens,
                          bool default_fills_context);

}  // namespace strata::server
