// EventSender: what leaves this listener for the pipeline. A request or a
// WebSocket command becomes an event addressed back to its connection's
// slot; controls ask for subscriptions, grant a stream's producer more
// room, or say this listener started afresh. A client's HTTP request goes
// straight to the router, and the broker is told of it without a wake-up
// (docs/decisions/0026); commands, which may follow a subscription the
// broker must have taken first, and every control go to the broker.
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
  EventSender(transport::Outbox& to_broker, transport::Outbox& to_router, std::uint16_t listener_index);

  // A header addressed back to slot `seq` of connection `c`; a request's
  // carries the time it leaves (Request::id, Server-Timing).
  envelope::EnvelopeHeader origin_header(const Connection& c, envelope::Kind kind, std::uint64_t type,
                                         std::uint32_t seq);
  // False when the broker's channel refused it (new work past
  // EDRI_OUTBOX_LIMIT).
  bool send(const envelope::EnvelopeWriter& w, transport::Admission admission = transport::Admission::Work);
  // A client's request, straight to the router. The broker is told first,
  // without a wake-up (kControlSent), so that it knows the request before
  // anything the router answers for it can reach it. False when the
  // router's channel refused it (new work past EDRI_OUTBOX_LIMIT); the
  // broker is then told it is answered.
  bool send_request(const envelope::EnvelopeWriter& w);
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
  transport::Outbox& to_router_;
  std::uint16_t index_;
  std::uint64_t next_request_;
};

// The declared query, header and cookie fields that passed, as sections.
void add_validated(envelope::EnvelopeWriter& w, const ValidatedFields& validated);

}  // namespace edri::listener
