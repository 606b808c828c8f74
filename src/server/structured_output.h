// The structured-output fields of /v1/completions and /v1/chat/completions (internal to the
// request parsers), all compiled by the grammar layer into one token constraint:
//   OpenAI      response_format {"type": "json_object"} | {"type": "json_schema",
//               "json_schema": {"name", "schema", "strict"}} (and llama.cpp's
//               {"type": "json_object", "schema": {...}})
//   llama.cpp   grammar (GBNF text), json_schema (a schema)
//   vLLM        guided_json, guided_regex, guided_choice, guided_grammar, and the newer
//               structured_outputs {"json" | "regex" | "choice" | "grammar" | "json_object"}
// At most one may be given. Compiling happens here, on the request's own thread; an invalid
// or too costly grammar, schema or regex is a 400 naming the field.
#pragma once

#include "server/generation_request.h"
#include "server/json_fields.h"

namespace strata::server {

// Sets req.params.constraint when the request asks for structured output.
void parse_structured_output(const JsonFields& f, const ServedModel& model, GenerationRequest& req);

}  // namespace strata::server
