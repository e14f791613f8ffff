// A handler's response headers (the envelope's Headers section) as
// "Name: value\r\n" lines, for an HTTP answer or a gRPC call's metadata.
// Response::header refuses CR, LF and NUL; a handler that pushed such a
// header into Response::headers directly meets the same rule here, so it
// can never split a line into two.
#pragma once

#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include <edri/response.hpp>

#include "envelope/envelope.hpp"

namespace edri::listener {

// Appends the lines to `out`, leaving out those `skip(name)` names.
template <class Skip>
void append_header_lines(std::string& out, const envelope::EnvelopeView& v, Skip&& skip) {
  if (!v.has(envelope::SectionType::Headers)) return;
  envelope::KeyValueReader kv(v.section(envelope::SectionType::Headers));
  std::string_view k, val;
  while (kv.next(k, val)) {
    if (!is_valid_header(k, val)) {
      spdlog::warn("dropping a response header with CR, LF or NUL from a handler");
      continue;
    }
    if (!skip(k)) out.append(k).append(": ").append(val).append("\r\n");
  }
}

}  // namespace edri::listener
