// Answers built by the hops themselves (broker, router, manager) when a
// request cannot reach or leave its handler: a response envelope carrying an
// RFC 9457 problem, addressed back to the request's origin.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "envelope/envelope.hpp"
#include "transport/outbox.hpp"

namespace edri::envelope {

// The response header for `request`: same id and origin, kind Response.
EnvelopeHeader response_header_for(const EnvelopeHeader& request, int status);

// Queues a problem response for `request` into `out`, as an answer (never
// refused for room). Returns false only if it cannot fit a record.
[[nodiscard]] bool send_problem(transport::Outbox& out, const EnvelopeHeader& request, int status,
                                std::string_view detail);

// Queues a JSON answer (a 2xx whose body is `json`) like send_problem.
[[nodiscard]] bool send_json_answer(transport::Outbox& out, const EnvelopeHeader& request, int status,
                                    std::string_view json);

// The clock of t0_ns and of hop stamps: CLOCK_MONOTONIC, in nanoseconds.
std::uint64_t monotonic_ns();

// Records the time of a hop when the request asked for timing.
void stamp(EnvelopeHeader& h, Stamp which);

}  // namespace edri::envelope
