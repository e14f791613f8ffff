#include "grpc/status.hpp"

namespace edri::grpc {

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

std::string percent_encode(std::string_view message) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(message.size());
  for (const char ch : message) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b <= 0x7e && b != '%') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xf]);
    }
  }
  return out;
}

}  // namespace edri::grpc
