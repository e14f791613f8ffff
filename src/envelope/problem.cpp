#include "envelope/problem.hpp"

#include <time.h>

#include <edri/problem.hpp>

#include "envelope/send.hpp"

namespace edri::envelope {

EnvelopeHeader response_header_for(const EnvelopeHeader& request, int status) {
  EnvelopeHeader h = request;
  h.kind = static_cast<std::uint8_t>(Kind::Response);
  h.status = static_cast<std::uint16_t>(status);
  h.section_count = 0;
  h.total_length = 0;
  return h;
}

bool send_problem(transport::Outbox& out, const EnvelopeHeader& request, int status, std::string_view detail) {
  const std::string body = edri::problem_json(status, detail);
  EnvelopeHeader h = response_header_for(request, status);
  h.flags |= kFlagProblem;
  EnvelopeWriter w(h);
  w.text(SectionType::ContentType, "application/problem+json");
  w.text(SectionType::Body, body);
  return send(out, w, transport::Admission::Answer);
}

bool send_json_answer(transport::Outbox& out, const EnvelopeHeader& request, int status, std::string_view json) {
  EnvelopeWriter w(response_header_for(request, status));
  w.text(SectionType::ContentType, "application/json");
  w.text(SectionType::Body, json);
  return send(out, w, transport::Admission::Answer);
}

std::uint64_t monotonic_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

void stamp(EnvelopeHeader& h, Stamp which) {
  if (!(h.flags & kFlagTiming)) return;
  const std::uint64_t now = monotonic_ns();
  h.stamps[which] = now > h.t0_ns ? static_cast<std::uint32_t>(std::min<std::uint64_t>(now - h.t0_ns, UINT32_MAX)) : 0;
}

}  // namespace edri::envelope
