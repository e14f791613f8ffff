// The envelope decoder: any byte string is decoded or refused, never read
// past its end; every section of an accepted one, and every key-value list
// in it, can be walked.
#include <cstddef>
#include <cstdint>
#include <span>

#include "envelope/envelope.hpp"

using namespace edri::envelope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = std::as_bytes(std::span(data, size));
  EnvelopeHeader h;
  const bool peeked = peek_header(in, h) == DecodeError::None;
  EnvelopeView v;
  if (decode(in, v) != DecodeError::None) return 0;
  if (!peeked) __builtin_trap();  // decode accepts only what peek accepts
  for (std::uint16_t t = 0; t < 16; ++t) {
    const auto type = static_cast<SectionType>(t);
    const auto s = v.section(type);
    if (!s.empty() && (s.data() < in.data() || s.data() + s.size() > in.data() + in.size())) __builtin_trap();
    KeyValueReader kv(s);
    std::string_view k, val;
    while (kv.next(k, val)) {
    }
  }
  return 0;
}
