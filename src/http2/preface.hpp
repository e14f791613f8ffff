// The HTTP/2 client connection preface (RFC 9113 3.4): a cleartext
// connection that opens with it speaks HTTP/2 with prior knowledge, any
// other speaks HTTP/1.1. No HTTP/1.1 request line can begin with it ("PRI"
// is no method a route can name), so the first bytes decide.
#pragma once

#include <string_view>

namespace edri::http2 {

inline constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

enum class PrefaceMatch { No, Partial, Whole };

// What the first bytes of a connection say so far: Partial while they are a
// strict prefix of the preface (read more before deciding).
constexpr PrefaceMatch match_preface(std::string_view first) {
  const std::size_t n = first.size() < kClientPreface.size() ? first.size() : kClientPreface.size();
  if (first.substr(0, n) != kClientPreface.substr(0, n)) return PrefaceMatch::No;
  return n == kClientPreface.size() ? PrefaceMatch::Whole : PrefaceMatch::Partial;
}

static_assert(match_preface("GET / HTTP/1.1\r\n") == PrefaceMatch::No);
static_assert(match_preface("PRI * HT") == PrefaceMatch::Partial);
static_assert(match_preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00") == PrefaceMatch::Whole);

}  // namespace edri::http2
