// EventSender: what leaves this listener for the pipeline. A request or a
// WebSocket command becomes an event addressed back to its connection's
// slot; controls ask for subscriptions, grant a stream's producer more
// room, or say this listener started afresh. A client's HTTP request goes
// straight to its manager where one manager alone handles its event
// (docs/decisions/0027), else straight to the router (0026); the broker,
// and the router for the former, are told of it without a wake-up.
// Commands, which may follow a subscription the broker must have taken
// first, and every control go to the broker.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "envelope/envelope.hpp"
#include "listener/connection.hpp"
#include "listener/request_validator.hpp"
#include "plugin/direct_routes.hpp"
#include "transport/outbox.hpp"

namespace edri::listener {

class EventSender {
 public:
  // `to_managers`: by manager index, for the requests `direct` sends
  // straight (both empty where there are no such channels).
  EventSender(transport::Outbox& to_broker, transport::Outbox& to_router, std::vector<transport::Outbox*> to_managers,
              plugin::DirectRoutes direct, std::uint16_t listener_index);

  // A header addressed back to slot `seq` of connection `c`; a request's
  // carries the time it leaves (Request::id, Server-Timing).
  envelope::EnvelopeHeader origin_header(const Connection& c, envelope::Kind kind, std::uint64_t type,
                                         std::uint32_t seq);
  // False when the broker's channel refused it (new work past
  // EDRI_OUTBOX_LIMIT).
  bool send(const envelope::EnvelopeWriter& w, transport::Admission admission = transport::Admission::Work);
  // A client's request, straight to its manager (kFlagDirect) or to the
  // router. The broker is told first, without a wake-up (kControlSent), so
  // that it knows the request before anything answered for it can reach
  // it, and for a manager the router too (kControlRouted), for the 503
  // should that manager die with it. False when the channel refused it
  // (new work past EDRI_OUTBOX_LIMIT); those told are then told it is
  // answered.
  bool send_request(envelope::EnvelopeWriter& w);
  // A control about connection `c` (a subscription is new work; an
  // unsubscription must arrive).
  bool send_control(const Connection& c, std::uint64_t code, std::uint32_t seq, std::span<const std::byte> payload);
  void stream_credit(const StreamRef& s, std::uint64_t bytes);
  void stream_cancel(const StreamRef& s);
  // The answer to slot `seq` of connection `c` (kEveryStream: every
  // slot) will not be wanted: the managers cancel the coroutine handlers
  // that wait for it (kControlClientGone).
  void client_gone(const Connection& c, std::uint32_t seq);
  // This listener (re)started: the broker forgets its old subscriptions.
  void listener_reset();
  transport::Outbox& outbox() { return to_broker_; }
  std::uint16_t index() const { return index_; }

 private:
  void stream_control(const StreamRef& s, std::uint64_t code, std::span<const std::byte> payload);

  transport::Outbox& to_broker_;
  transport::Outbox& to_router_;
  std::vector<transport::Outbox*> to_managers_;
  plugin::DirectRoutes direct_;
  std::uint16_t index_;
  std::uint64_t next_request_;
};

// The declared query, header and cookie fields that passed, as sections.
void add_validated(envelope::EnvelopeWriter& w, const ValidatedFields& validated);

}  // namespace edri::listener
