// Sending an envelope: the one way a process queues an event it built for
// another process.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "envelope/control.hpp"
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

// Queues the control `code` about `items` into `out` without waking its
// consumer (Outbox::emplace_quiet), as many items per record as fit.
template <class T>
void send_quietly(transport::Outbox& out, std::uint64_t code, std::span<const T> items, std::uint16_t origin_listener,
                  std::uint16_t reply_to = 0) {
  auto h = make_header(Kind::Control, code, 0);
  h.origin_listener = origin_listener;
  h.reply_to = reply_to;
  const std::size_t per_record = std::max<std::size_t>(1, (out.max_record() - 512) / sizeof(T));
  while (!items.empty()) {
    const auto batch = items.first(std::min(per_record, items.size()));
    items = items.subspan(batch.size());
    EnvelopeWriter w(h);
    w.raw(SectionType::Control, std::as_bytes(batch));
    (void)out.emplace_quiet(w.size(), [&](std::byte* p) { w.write(p); });
  }
}

// Queues kControlAnswered notices for `ids` into `out` without waking its
// consumer. `reply_to`: who asked them (0: clients, through the broker).
inline void send_answered(transport::Outbox& out, std::span<const std::uint64_t> ids, std::uint16_t origin_listener,
                          std::uint16_t reply_to = 0) {
  send_quietly(out, kControlAnswered, ids, origin_listener, reply_to);
}

// Queues kControlSent notices for `requests`, sent straight to the router
// or to their managers, into the broker's `out` without waking it.
inline void send_sent(transport::Outbox& out, std::span<const EnvelopeHeader> requests, std::uint16_t origin_listener) {
  send_quietly(out, kControlSent, requests, origin_listener);
}

// Queues kControlRouted notices for `requests`, sent straight to their
// managers, into the router's `out` without waking it.
inline void send_routed(transport::Outbox& out, std::span<const RoutedRequest> requests,
                        std::uint16_t origin_listener) {
  send_quietly(out, kControlRouted, requests, origin_listener);
}

// Sends request `w`, its notice queued on `to_router` already, straight to
// its manager (kFlagDirect), only where the router will see both: a notice
// held in the overflow could reach the router after the answer, and a
// request held in the sender's overflow would be out of the router's sight
// should its manager die (decisions 0027, 0028). False: nothing was sent;
// the request follows its notice to the router, which routes it to the
// same manager.
[[nodiscard]] inline bool send_straight(transport::Outbox& to_manager, const transport::Outbox& to_router,
                                        EnvelopeWriter& w) {
  if (to_router.has_overflow()) return false;
  w.header().flags |= kFlagDirect;
  if (send(to_manager, w, transport::Admission::RingOnly)) return true;
  w.header().flags &= static_cast<std::uint16_t>(~kFlagDirect);
  return false;
}

}  // namespace edri::envelope
