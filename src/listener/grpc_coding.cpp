#include "listener/grpc_coding.hpp"

#include "grpc/framing.hpp"
#include "http/content_coding.hpp"
#include "runtime/trace_context.hpp"

namespace edri::listener {

std::string_view grpc_accept_line(const Config& config) {
  return config.compression ? "grpc-accept-encoding: identity, gzip\r\n" : "grpc-accept-encoding: identity\r\n";
}

bool agree_encodings(const Config& config, const http::HttpRequest& head, GrpcCall& call) {
  const std::string_view encoding = head.header("grpc-encoding");
  call.gzip_in = config.compression && encoding == "gzip";
  // grpc-accept-encoding is a list of tokens: Accept-Encoding's grammar
  // without weights.
  call.gzip_out = config.compression &&
                  http::choose_coding(head.header("grpc-accept-encoding"), http::kOffersGzip) == http::Coding::Gzip;
  return encoding.empty() || encoding == "identity" || call.gzip_in;
}

std::string grpc_head_lines(const Config& config, const GrpcCall& call) {
  std::string lines(grpc_accept_line(config));
  if (call.gzip_out) lines += "grpc-encoding: gzip\r\n";
  return lines.append(grpc_trace_line(call));
}

std::string grpc_trace_line(const GrpcCall& call) {
  if (!call.access || !call.access->traced) return {};
  return "traceparent: " + call.access->trace_section.substr(0, TraceContext::kTextSize) + "\r\n";
}

std::string coded_message(const Config& config, const GrpcCall& call, std::string framed) {
  const std::string_view payload = std::string_view(framed).substr(grpc::kPrefixBytes);
  if (!call.gzip_out || payload.size() < config.compression_min_size) return framed;
  std::string packed = http::compress(http::Coding::Gzip, config.compression_gzip_level, payload);
  if (packed.size() >= payload.size()) return framed;
  std::string out;
  out.reserve(grpc::kPrefixBytes + packed.size());
  grpc::frame_prefix(out, packed.size(), true);
  return out.append(packed);
}

}  // namespace edri::listener
