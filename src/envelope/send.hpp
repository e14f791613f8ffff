// Sending an envelope: the one way a process queues an event it built for
// another process.
#pragma once

#include "envelope/envelope.hpp"
#include "transport/outbox.hpp"

namespace edri::envelope {

// Queues the envelope `w` describes into `out`. `admission` says whether it
// is new work, refused past EDRI_OUTBOX_LIMIT, or an answer, never refused
// for room (transport/outbox.hpp). False when it was refused.
[[nodiscard]] inline bool send(transport::Outbox& out, const EnvelopeWriter& w,
                               transport::Admission admission = transport::Admission::Work) {
  return out.emplace(
      w.size(), [&](std::byte* p) { w.write(p); }, admission);
}

}  // namespace edri::envelope
