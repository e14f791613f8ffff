// gRPC status codes (doc/statuscodes.md) and how an edri answer maps onto
// them (../shared/specs/grpc.md): what the edge or a hop refused is a gRPC
// error; what a handler answered, whatever its status, is an OK call that
// carries the handler's status in the Event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edri::grpc {

enum class Code : std::uint8_t {
  Ok = 0,
  Cancelled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
};

// The code's name as gRPC writes it ("OK", "UNIMPLEMENTED"); "" past 16.
std::string_view code_name(Code code);

// The code for an HTTP-style status that the listener's edge or a hop
// (broker, router, manager) gave instead of a handler: 404 (no such
// command or handler) UNIMPLEMENTED, 422 and 400 INVALID_ARGUMENT, 413 and
// 429 RESOURCE_EXHAUSTED, 502 and 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED,
// 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 500 INTERNAL; any other
// UNKNOWN.
Code code_for_refusal(int http_status);

// The code for a handler's 4xx/5xx answer to a typed method, whose
// response message has no status of its own (google.rpc.Code's HTTP
// mapping, read backwards): 404 NOT_FOUND, 409 ABORTED, 412
// FAILED_PRECONDITION, 416 OUT_OF_RANGE, 499 CANCELLED, 501 UNIMPLEMENTED;
// the rest as code_for_refusal, and what it leaves UNKNOWN
// FAILED_PRECONDITION below 500, INTERNAL from 500.
Code code_for_answer(int http_status);

// The most grpc-message carries, encoded: a refusal may echo what the
// client sent (an event type, a service name), and a trailer past the
// peer's header block limit (nghttp2: 64 KiB) is never sent, so the call
// would never end.
inline constexpr std::size_t kMaxMessageBytes = 1024;

// grpc-message is percent-encoded (PROTOCOL-HTTP2.md): every byte outside
// printable ASCII, and '%' itself, as %XX. At most `max` bytes: cut before
// the UTF-8 character that would pass it, so neither an escape nor a
// character is split.
std::string percent_encode(std::string_view message, std::size_t max = kMaxMessageBytes);

}  // namespace edri::grpc
