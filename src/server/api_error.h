// Errors the server reports to clients, shaped like OpenAI's:
//   {"error": {"message": "...", "type": "...", "param": "..." | null, "code": "..." | null}}
//
// Handlers throw ApiError; the HTTP layer turns it into the status and body. Messages are
// written for clients: they never carry file paths, addresses or internal state.
#pragma once

#include <stdexcept>
#include <string>

namespace strata::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = {}, std::string code = {});

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }  // "" -> null
  const std::string& code() const { return code_; }    // "" -> null

  // The JSON body (one line).
  std::string body() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 for a request field: wrong type ("invalid_type") or value ("invalid_value").
ApiError invalid_type(const std::string& param, const std::string& message);
ApiError invalid_value(const std::string& param, const std::string& message);
// 400 without a specific field (malformed JSON, unsupported combinations).
ApiError bad_request(const std::string& message, const std::string& code = {});
ApiError not_found(const std::string& message, const std::string& code = "not_found");
ApiError unauthorized();
ApiError payload_too_large(size_t limit);
ApiError queue_full();
ApiError unavailable(const std::string& message);
ApiError internal_error(const std::string& message = "internal server error");

// OpenAI's error body (also for responses built outside handlers).
std::string error_body(const std::string& message, const std::string& type, const std::string& param = {},
                       const std::string& code = {});

}  // namespace strata::server
