// TraceContext: where a call stands in a W3C Trace Context trace
// (https://www.w3.org/TR/trace-context/): the trace it belongs to, the
// span that is its parent or its own, and whether it is sampled. Parsed
// from and written as a `traceparent` header
// ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"), which is also
// how it crosses between processes (envelope::SectionType::Trace) and to
// other services. Ids are random (a thread's own generator, seeded by the
// kernel): the trace ids of unrelated requests never meet.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edri {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

struct TraceContext {
  static constexpr std::size_t kTextSize = 55;  // a traceparent's length
  static constexpr std::uint8_t kSampled = 1;

  TraceId trace_id{};
  SpanId span_id{};
  std::uint8_t flags = 0;

  bool sampled() const { return flags & kSampled; }
  // The `traceparent` text.
  std::string text() const;
  void write(char (&out)[kTextSize]) const;
  // The same trace and flags with a new span id: a child's context.
  TraceContext child() const;
};

// A `traceparent` header's context, or none when it is not a valid one
// (then the receiver starts a trace of its own, as the standard says):
// version 00 exactly 55 characters, a later version at least that with a
// '-' after the flags; lowercase hex; the trace and span ids not all
// zeros; version ff refused.
std::optional<TraceContext> parse_traceparent(std::string_view text);

// A new trace: random ids, sampled or not.
TraceContext new_trace(bool sampled);
SpanId new_span_id();
// True with probability `rate` (0..1), from the same generator.
bool sample(double rate);

// Lowercase hex of `bytes`: written at `out` (2 x size bytes of room; the
// end is returned), appended to `out`, or as a string.
char* write_hex(char* out, const std::uint8_t* bytes, std::size_t size);
void append_hex(std::string& out, const std::uint8_t* bytes, std::size_t size);
template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  append_hex(out, bytes.data(), N);
}
std::string hex_of(const std::uint8_t* bytes, std::size_t size);
template <std::size_t N>
std::string hex_of(const std::array<std::uint8_t, N>& bytes) {
  return hex_of(bytes.data(), N);
}

}  // namespace edri
