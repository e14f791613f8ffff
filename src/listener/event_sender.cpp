#include "listener/event_sender.hpp"
#include <spdlog/spdlog.h>

#include "envelope/control.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"

namespace edri::listener {

namespace env = edri::envelope;

EventSender::EventSender(transport::Outbox& to_broker, transport::Outbox& to_router,
                         std::vector<transport::Outbox*> to_managers, plugin::DirectRoutes direct,
                         std::uint16_t listener_index)
    : to_broker_(to_broker),
      to_router_(to_router),
      to_managers_(std::move(to_managers)),
      direct_(std::move(direct)),
      index_(listener_index),
      next_request_(std::uint64_t{listener_index} << 48) {}

env::EnvelopeHeader EventSender::origin_header(const Connection& c, env::Kind kind, std::uint64_t type,
                                               std::uint32_t seq) {
  auto h = env::make_header(kind, type, ++next_request_);
  h.origin_listener = index_;
  h.origin_connection = c.id();
  h.origin_generation = c.generation();
  h.origin_stream = seq;
  // With request_id, unique across listener restarts (which start the
  // counter over): Request::id.
  if (kind == env::Kind::Request) h.t0_ns = env::monotonic_ns();
  return h;
}

bool EventSender::send(const env::EnvelopeWriter& w, transport::Admission admission) {
  return env::send(to_broker_, w, admission);
}

bool EventSender::send_request(env::EnvelopeWriter& w) {
  const auto manager = direct_.manager_for(w.header().event_type);
  if (manager) {
    const env::RoutedRequest routed{w.header(), *manager};
    env::send_routed(to_router_, std::span(&routed, 1), index_);
  }
  // The broker learns how it went (kFlagDirect: the router's death does
  // not touch it): after the request where it went straight, whose answer
  // comes here, not there; before it where it goes to the router, which
  // may answer it through the broker.
  if (manager && env::send_straight(*to_managers_[*manager], to_router_, w)) {
    env::send_sent(to_broker_, std::span(&w.header(), 1), index_);
    return true;
  }
  const auto& h = w.header();
  env::send_sent(to_broker_, std::span(&h, 1), index_);
  if (env::send(to_router_, w)) return true;
  env::send_answered(to_broker_, std::span(&h.request_id, 1), index_);
  if (manager) env::send_answered(to_router_, std::span(&h.request_id, 1), index_);
  return false;
}

bool EventSender::send_control(const Connection& c, std::uint64_t code, std::uint32_t seq,
                               std::span<const std::byte> payload) {
  env::EnvelopeWriter w(origin_header(c, env::Kind::Control, code, seq));
  if (!payload.empty()) w.raw(env::SectionType::Control, payload);
  // A subscription is new work (refused when the broker is far behind); an
  // unsubscription must arrive, or the broker keeps pushing to nobody.
  return send(w, code == env::kControlPushSubscribe ? transport::Admission::Work : transport::Admission::Answer);
}

void EventSender::stream_credit(const StreamRef& s, std::uint64_t bytes) {
  stream_control(s, env::kControlStreamCredit, std::as_bytes(std::span<const std::uint64_t>(&bytes, 1)));
}

void EventSender::stream_cancel(const StreamRef& s) { stream_control(s, env::kControlStreamCancel, {}); }

// A connection's "every slot" is the envelope's "every stream".
static_assert(ConnectionOwner::kEverySlot == env::kEveryStream);

void EventSender::client_gone(const Connection& c, std::uint32_t seq) {
  env::EnvelopeWriter w(origin_header(c, env::Kind::Control, env::kControlClientGone, seq));
  // After each request on the channel it went by: the router's for what
  // went through the router, each manager's own for what went straight.
  if (!env::send(to_router_, w, transport::Admission::Answer))
    spdlog::warn("the router's channel is full: waiting handlers of a closed connection run on");
  for (auto* out : to_managers_)
    if (!env::send(*out, w, transport::Admission::Answer))
      spdlog::warn("a manager's channel is full: waiting handlers of a closed connection run on");
}

void EventSender::stream_control(const StreamRef& s, std::uint64_t code, std::span<const std::byte> payload) {
  auto h = env::make_header(env::Kind::Control, code, s.id);
  h.origin_listener = index_;
  h.reply_to = s.manager_slot;
  env::EnvelopeWriter w(h);
  if (!payload.empty()) w.raw(env::SectionType::Control, payload);
  if (!send(w, transport::Admission::Answer)) spdlog::error("a stream credit did not fit a record");
}

void EventSender::listener_reset() {
  // Subscriptions of this listener's previous life died with its
  // connections; the broker forgets them before anything new arrives.
  auto h = env::make_header(env::Kind::Control, env::kControlListenerReset, 0);
  h.origin_listener = index_;
  if (!send(env::EnvelopeWriter(h), transport::Admission::Answer))
    spdlog::error("cannot tell the broker this listener restarted");
}

void add_validated(env::EnvelopeWriter& w, const ValidatedFields& validated) {
  if (!validated.query.empty())
    w.key_values(env::SectionType::QueryParams, validated.query, env::StringPairKey{}, env::StringPairValue{});
  if (!validated.headers.empty())
    w.key_values(env::SectionType::Headers, validated.headers, env::StringPairKey{}, env::StringPairValue{});
  if (!validated.cookies.empty())
    w.key_values(env::SectionType::Cookies, validated.cookies, env::StringPairKey{}, env::StringPairValue{});
}

}  // namespace edri::listener
