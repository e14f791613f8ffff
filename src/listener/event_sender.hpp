// EventSender: what leaves this listener for the broker. A request or a
// WebSocket command becomes an event addressed back to its connection's
// slot; controls ask for subscriptions, grant a stream's producer more
// room, or say this listener started afresh.
#pragma once

#include <cstdint>
#include <span>

#include "envelope/envelope.hpp"
#include "listener/connection.hpp"
#include "listener/request_validator.hpp"
#include "transport/outbox.hpp"

namespace edri::listener {

class EventSender {
 public:
  EventSender(transport::Outbox& to_broker, std::uint16_t listener_index);

  // A header addressed back to slot `seq` of connection `c`; a request's
  // carries the time it leaves (Request::id, Server-Timing).
  envelope::EnvelopeHeader origin_header(const Connection& c, envelope::Kind kind, std::uint64_t type,
                                         std::uint32_t seq);
  // False when the broker's channel refused it (new work past
  // EDRI_OUTBOX_LIMIT).
  bool send(const envelope::EnvelopeWriter& w, transport::Admission admission = transport::Admission::Work);
  // A control about connection `c` (a subscription is new work; an
  // unsubscription must arrive).
  bool send_control(const Connection& c, std::uint64_t code, std::uint32_t seq, std::span<const std::byte> payload);
  void stream_credit(const StreamRef& s, std::uint64_t bytes);
  void stream_cancel(const StreamRef& s);
  // This listener (re)started: the broker forgets its old subscriptions.
  void listener_reset();
  transport::Outbox& outbox() { return to_broker_; }
  std::uint16_t index() const { return index_; }

 private:
  void stream_control(const StreamRef& s, std::uint64_t code, std::span<const std::byte> payload);

  transport::Outbox& to_broker_;
  std::uint16_t index_;
  std::uint64_t next_request_;
};

// The declared query, header and cookie fields that passed, as sections.
void add_validated(envelope::EnvelopeWriter& w, const ValidatedFields& validated);

}  // namespace edri::listener
