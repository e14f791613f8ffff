// Cors: the built-in CORS middleware (Fetch standard, CORS protocol),
// configured by EDRI_CORS_ORIGINS, EDRI_CORS_HEADERS, EDRI_CORS_CREDENTIALS
// and EDRI_CORS_MAX_AGE.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <edri/plugin.hpp>

#include "http/request_parser.hpp"

namespace edri::listener {

class Cors {
 public:
  enum class Verdict {
    NotCors,    // no Origin header, or an origin not allowed on a simple request
    Allowed,    // headers added; the request goes on
    Preflight,  // an allowed preflight: answer 204 with the headers added
    Refused,    // a preflight from an origin not allowed: answer 403
  };

  Cors(std::vector<std::string> origins, std::string allow_headers, bool credentials, int max_age);

  Verdict apply(const http::HttpRequest& req, Method method, ResponseHeaders& out) const;
  // Whether `origin` is one of EDRI_CORS_ORIGINS (WebSocket handshakes from
  // other origins are refused: browsers do not apply CORS to WebSocket).
  bool allows(std::string_view origin) const {
    return any_origin_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
  }

 private:
  std::vector<std::string> origins_;
  bool any_origin_ = false;
  std::string allow_headers_;
  bool credentials_;
  std::string max_age_;
};

}  // namespace edri::listener
