// The head of a manager's answer envelope, shared by whole and streamed
// answers.
#pragma once

#include <edri/response.hpp>

#include "envelope/envelope.hpp"
#include "envelope/problem.hpp"

namespace edri::manager {

// The header of the answer to `request`, stamped as it leaves the manager.
inline envelope::EnvelopeHeader answer_header(const envelope::EnvelopeHeader& request, int status) {
  auto h = envelope::response_header_for(request, status);
  envelope::stamp(h, envelope::kStampManagerOut);
  return h;
}

// An answer's content type and headers.
inline void add_head(envelope::EnvelopeWriter& w, const Response& resp) {
  w.text(envelope::SectionType::ContentType, resp.content_type);
  if (!resp.headers.empty())
    w.key_values(envelope::SectionType::Headers, resp.headers, envelope::StringPairKey{}, envelope::StringPairValue{});
}

}  // namespace edri::manager
