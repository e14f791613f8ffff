// An edri.v1.Event as one framed gRPC message, for tests that speak gRPC
// by hand: uncompressed, or gzipped with the compressed flag set.
#pragma once

#include <cstdint>
#include <string>

#include "edri/v1/edri.pb.h"
#include "grpc/framing.hpp"
#include "http/content_coding.hpp"

namespace edri::test {

inline std::string event_message(const std::string& type, const std::string& body, std::uint64_t id,
                                 bool gzip = false) {
  edri::v1::Event ev;
  ev.set_type(type);
  ev.set_body(body);
  ev.set_id(id);
  std::string payload = ev.SerializeAsString();
  if (gzip) payload = edri::http::compress(edri::http::Coding::Gzip, 6, payload);
  std::string out;
  edri::grpc::frame_prefix(out, payload.size(), gzip);
  return out + payload;
}

}  // namespace edri::test
