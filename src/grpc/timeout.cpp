#include "grpc/timeout.hpp"

#include <algorithm>
#include <cstdint>

namespace edri::grpc {

std::optional<std::chrono::nanoseconds> parse_timeout(std::string_view text) {
  if (text.size() < 2 || text.size() > 9) return std::nullopt;
  std::int64_t value = 0;
  for (const char ch : text.substr(0, text.size() - 1)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    value = value * 10 + (ch - '0');
  }
  using namespace std::chrono;
  switch (text.back()) {
    // Eight digits of hours pass what nanoseconds hold; ten years is as
    // good as none.
    case 'H': return duration_cast<nanoseconds>(hours(std::min<std::int64_t>(value, 87600)));
    case 'M': return duration_cast<nanoseconds>(minutes(value));
    case 'S': return duration_cast<nanoseconds>(seconds(value));
    case 'm': return duration_cast<nanoseconds>(milliseconds(value));
    case 'u': return duration_cast<nanoseconds>(microseconds(value));
    case 'n': return nanoseconds(value);
    default: return std::nullopt;
  }
}

}  // namespace edri::grpc
