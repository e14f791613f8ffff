// An HTTP request a handler makes to another service (Context::fetch and
// Context::http), and what came back. The manager runs it on its own
// loop (libcurl's multi interface): no thread per call, connections kept
// and reused per origin, HTTP/2 where a TLS server offers it, TLS
// verified.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edri {

struct HttpCall {
  std::string method = "GET";
  std::string url;  // http:// or https:// only
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The whole call, connection included; 0: EDRI_HTTP_CLIENT_TIMEOUT. Never
  // past the deadline of the request whose handler makes it.
  std::chrono::milliseconds timeout{0};
  // A longer answer body ends the call with an error; 0:
  // EDRI_HTTP_CLIENT_MAX_RESPONSE.
  std::size_t max_response_bytes = 0;
};

struct HttpReply {
  int status = 0;                                            // 0: no answer came (`error` says why)
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case, in order
  std::string body;
  std::string error;       // empty when an answer came
  bool timed_out = false;  // no answer within the call's time (`error` says which)

  // An answer came, and it is a 2xx.
  bool ok() const { return error.empty() && status >= 200 && status <= 299; }
  std::optional<std::string_view> header(std::string_view name) const {
    for (const auto& [k, v] : headers)
      if (k.size() == name.size() && equal_lower(k, name)) return v;
    return std::nullopt;
  }

 private:
  static bool equal_lower(std::string_view lower, std::string_view any) {
    for (std::size_t i = 0; i < lower.size(); ++i) {
      const char c = (any[i] >= 'A' && any[i] <= 'Z') ? static_cast<char>(any[i] + 32) : any[i];
      if (lower[i] != c) return false;
    }
    return true;
  }
};

}  // namespace edri
