#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edri::bench {

// The request a load run sends on every connection, over and over.
struct HttpRequest {
  std::string method = "GET";
  std::string target = "/noop";
  // Sent after Host; Content-Length is added by serialize_request, not here.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// The bytes on the wire: request line, Host, `headers`, Content-Length when
// there is a body, a blank line, the body. Built once per run, so the hot path
// only writes a ready buffer.
std::string serialize_request(const HttpRequest& request, std::string_view host);

}  // namespace edri::bench
