#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace strata::server {

ApiError::ApiError(int status, std::string message, std::string type, std::string param, std::string code)
    : std::runtime_error(std::move(message)),
      status_(status),
      type_(std::move(type)),
      param_(std::move(param)),
      code_(std::move(code)) {}

std::string ApiError::body() const {
  return error_body(what(), type_, param_, code_);
}

std::string error_body(const std::string& message, const std::string& type, const std::string& param,
                       const std::string& code) {
  using Json = nlohmann::ordered_json;  // the fields in OpenAI's order
  Json err = {{"message", message},
              {"type", type},
              {"param", param.empty() ? Json(nullptr) : Json(param)},
              {"code", code.empty() ? Json(nullptr) : Json(code)}};
  // Messages may quote client input that is not valid UTF-8: replace rather than throw.
  return Json{{"error", std::move(err)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

ApiError invalid_type(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param, "invalid_type");
}

ApiError invalid_value(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param, "invalid_value");
}

ApiError bad_request(const std::string& message, const std::string& code) {
  return ApiError(400, message, "invalid_request_error", {}, code);
}

ApiError not_found(const std::string& message, const std::string& code) {
  return ApiError(404, message, "invalid_request_error", {}, code);
}

ApiError unauthorized() {
  return ApiError(401, "Incorrect or missing API key (send it as 'Authorization: Bearer KEY').",
                  "invalid_request_error", {}, "invalid_api_key");
}

ApiError payload_too_large(size_t limit) {
  return ApiError(413, "Request body too large: the limit is " + std::to_string(limit) + " bytes.",
                  "invalid_request_error", {}, "request_too_large");
}

ApiError queue_full() {
  return ApiError(429, "The server is at capacity: too many requests are waiting. Retry later.",
                  "rate_limit_error", {}, "queue_full");
}

ApiError unavailable(const std::string& message) {
  return ApiError(503, message, "service_unavailable", {}, "service_unavailable");
}

ApiError internal_error(const std::string& message) {
  return ApiError(500, message, "server_error", {}, {});
}

}  // namespace strata::server
