#include "listener/cors.hpp"

#include <algorithm>

namespace edri::listener {

Cors::Cors(std::vector<std::string> origins, std::string allow_headers, bool credentials, int max_age)
    : origins_(std::move(origins)),
      allow_headers_(std::move(allow_headers)),
      credentials_(credentials),
      max_age_(std::to_string(max_age)) {
  any_origin_ = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
}

Cors::Verdict Cors::apply(const http::HttpRequest& req, Method method, ResponseHeaders& out) const {
  const std::string_view origin = req.header("origin");
  if (origin.empty()) return Verdict::NotCors;
  const bool preflight = method == Method::Options && !req.header("access-control-request-method").empty();
  const bool allowed = any_origin_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
  if (!allowed) return preflight ? Verdict::Refused : Verdict::NotCors;

  // With credentials the origin must be named, never "*".
  if (any_origin_ && !credentials_) {
    out.add("Access-Control-Allow-Origin", "*");
  } else {
    out.add("Access-Control-Allow-Origin", origin);
    out.add("Vary", "Origin");
  }
  if (credentials_) out.add("Access-Control-Allow-Credentials", "true");
  if (!preflight) {
    out.add("Access-Control-Expose-Headers", "X-Request-Id, Server-Timing, Location");
    return Verdict::Allowed;
  }
  out.add("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS");
  const std::string_view asked = req.header("access-control-request-headers");
  if (allow_headers_ == "*" && !asked.empty())
    out.add("Access-Control-Allow-Headers", asked);
  else if (!allow_headers_.empty())
    out.add("Access-Control-Allow-Headers", allow_headers_);
  out.add("Access-Control-Max-Age", max_age_);
  return Verdict::Preflight;
}

}  // namespace edri::listener
