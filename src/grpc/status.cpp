#include "grpc/status.hpp"

#include <algorithm>

namespace edri::grpc {

std::string_view code_name(Code code) {
  static constexpr std::string_view kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  const auto n = static_cast<std::size_t>(code);
  return n < std::size(kNames) ? kNames[n] : std::string_view();
}

Code code_for_refusal(int http_status) {
  switch (http_status) {
    case 400:
    case 422: return Code::InvalidArgument;
    case 401: return Code::Unauthenticated;
    case 403: return Code::PermissionDenied;
    case 404: return Code::Unimplemented;
    case 413:
    case 429: return Code::ResourceExhausted;
    case 500: return Code::Internal;
    case 502:
    case 503: return Code::Unavailable;
    case 504: return Code::DeadlineExceeded;
    default: return Code::Unknown;
  }
}

Code code_for_answer(int http_status) {
  switch (http_status) {
    case 404: return Code::NotFound;
    case 409: return Code::Aborted;
    case 412: return Code::FailedPrecondition;
    case 416: return Code::OutOfRange;
    case 499: return Code::Cancelled;
    case 501: return Code::Unimplemented;
    default: break;
  }
  const Code c = code_for_refusal(http_status);
  if (c != Code::Unknown) return c;
  return http_status < 500 ? Code::FailedPrecondition : Code::Internal;
}

namespace {

bool printable(unsigned char b) { return b >= 0x20 && b <= 0x7e && b != '%'; }

// The bytes of the UTF-8 character `lead` begins (1 for ASCII and for a
// byte that begins none: it is escaped alone).
std::size_t char_bytes(std::string_view s, std::size_t at) {
  const auto lead = static_cast<unsigned char>(s[at]);
  const std::size_t n = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  for (std::size_t k = 1; k < n; ++k)
    if (at + k >= s.size() || (static_cast<unsigned char>(s[at + k]) & 0xc0) != 0x80) return 1;
  return n;
}

}  // namespace

std::string percent_encode(std::string_view message, std::size_t max) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(std::min(message.size(), max));
  for (std::size_t at = 0; at < message.size();) {
    const std::size_t n = char_bytes(message, at);
    const bool plain = n == 1 && printable(static_cast<unsigned char>(message[at]));
    if (out.size() + (plain ? 1 : 3 * n) > max) break;
    for (const char ch : message.substr(at, n)) {
      const auto b = static_cast<unsigned char>(ch);
      if (plain) {
        out.push_back(ch);
        continue;
      }
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xf]);
    }
    at += n;
  }
  return out;
}

}  // namespace edri::grpc
