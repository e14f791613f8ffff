// grpc-timeout (PROTOCOL-HTTP2.md): "TimeoutValue TimeoutUnit", at most 8
// ASCII digits and one of H M S m u n; nullopt for anything else (the
// caller refuses the call: a deadline it cannot read is not kept).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace edri::grpc {

std::optional<std::chrono::nanoseconds> parse_timeout(std::string_view text);

}  // namespace edri::grpc
