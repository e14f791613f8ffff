#include "http_request.hpp"

namespace edri::bench {

std::string serialize_request(const HttpRequest& request, std::string_view host) {
  std::string out;
  out.reserve(64 + request.target.size() + request.body.size());
  out.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\n");
  out.append("Host: ").append(host).append("\r\n");
  for (const auto& [name, value] : request.headers) out.append(name).append(": ").append(value).append("\r\n");
  if (!request.body.empty()) out.append("Content-Length: ").append(std::to_string(request.body.size())).append("\r\n");
  out.append("\r\n").append(request.body);
  return out;
}

}  // namespace edri::bench
