#include "broker/broker.hpp"

#include <spdlog/spdlog.h>

#include <edri/json_depth.hpp>

#include <algorithm>
#include <cstring>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"

namespace edri::broker {

namespace env = edri::envelope;
using transport::Topology;

namespace {

std::chrono::nanoseconds learn_period(std::chrono::nanoseconds timeout) {
  return std::clamp<std::chrono::nanoseconds>(timeout / 2, std::chrono::milliseconds(10), std::chrono::seconds(1));
}

std::vector<transport::Outbox*> listener_outboxes(ProcessLoop& loop) {
  std::vector<transport::Outbox*> out;
  for (std::uint32_t i = 0; i < loop.topology().listeners(); ++i)
    out.push_back(&loop.outbox_to(loop.topology().listener_slot(i)));
  return out;
}

}  // namespace

Broker::Broker(ProcessLoop& loop, const Config& config)
    : loop_(loop),
      timeout_(std::chrono::nanoseconds(static_cast<std::int64_t>(config.api_response_timeout_s * 1e9))),
      max_json_depth_(config.max_json_depth),
      to_router_(loop.outbox_to(Topology::kRouter)),
      timer_(loop.events(),
             [this] {
               timer_armed_ = false;
               drain_listeners();
               expire();
               arm_deadline_timer();
             }),
      learn_every_(learn_period(timeout_)),
      learn_timer_(loop.events(), [this] { learn(); }),
      lost_watch_(loop,
                  [this] {
                    drain_listeners();
                    answer_lost();
                  }),
      streams_(config, to_router_, listener_outboxes(loop)),
      recovery_timer_(loop.events(), [this] {
        if (streams_.recovering()) spdlog::warn("streams: not every listener said what it follows within 2 s");
        streams_.give_up_recovery();
      }) {
  const auto& topo = loop.topology();
  for (std::uint32_t i = 0; i < topo.listeners(); ++i) {
    const auto slot = topo.listener_slot(i);
    to_listener_.push_back(&loop.outbox_to(slot));
    loop.on_records_from(slot,
                         [this, i](std::span<const std::byte> rec) { on_request(static_cast<std::uint16_t>(i), rec); });
  }
  loop.on_records_from(Topology::kRouter, [this](std::span<const std::byte> rec) { on_response(rec); });
  loop.on_peer_death([this](std::uint32_t slot) {
    if (slot != Topology::kRouter) return;
    left_for_successor_.clear();
    auto untaken = [&](const env::EnvelopeHeader& h) {
      if (h.kind == static_cast<std::uint8_t>(env::Kind::Request)) left_for_successor_.insert(h.request_id);
    };
    for_each_untaken_envelope(to_router_, untaken);
    // And what the listeners sent it themselves (0026).
    for (std::uint32_t i = 0; i < loop_.topology().listeners(); ++i)
      for_each_untaken_envelope(loop_.watched_channel(loop_.topology().listener_slot(i), Topology::kRouter), untaken);
    lost_watch_.died(slot);
  });
  pending_.reserve(4096);
  streams_.replay = [this](std::int32_t listener, std::span<const std::byte> record) {
    env::EnvelopeHeader h;
    if (env::peek_header(record, h) == env::DecodeError::None) on_stream_control(listener, h, record);
  };
  streams_.start_recovery();
  recovery_timer_.expires_after(std::chrono::seconds(2));
  learn_timer_.expires_after(learn_every_);
}

void Broker::learn() {
  drain_listeners();
  learn_timer_.expires_after(learn_every_);
}

void Broker::on_stream_control(std::int32_t listener, const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  const bool recover = h.event_type == env::kControlStreamRecover;
  if (!recover && streams_.hold(listener, record)) return;
  env::EnvelopeView v;
  std::optional<env::StreamRecord> r;
  if (env::decode(record, v) == env::DecodeError::None)
    r = env::decode_stream_record(v.section(env::SectionType::Control));
  if (!r) {
    spdlog::error("dropping a malformed stream control");
    return;
  }
  if (listener < 0) return streams_.on_manager_control(h, *r);
  streams_.on_listener_control(static_cast<std::uint16_t>(listener), h, *r);
}

void Broker::on_request(std::uint16_t listener, std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (auto e = env::peek_header(record, h); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from listener {}: {}", listener, env::to_string(e));
    return;
  }
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Control) && h.origin_listener == listener) {
    // Credits and cancels of streamed answers go on to their manager.
    if (h.event_type == env::kControlStreamCredit || h.event_type == env::kControlStreamCancel) {
      if (!to_router_.push(record, transport::Admission::Answer))
        spdlog::error("a stream credit larger than a record was dropped");
      return;
    }
    if (h.event_type == env::kControlAnswered) return forget_answered(record);
    if (h.event_type == env::kControlSent) return learn_sent(listener, record);
    if (env::is_stream_control(h.event_type)) return on_stream_control(listener, h, record);
    return on_control(h, record);
  }
  if (h.kind != static_cast<std::uint8_t>(env::Kind::Request) || h.origin_listener != listener) {
    spdlog::error("dropping an envelope of kind {} from listener {}", h.kind, listener);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const bool sent = to_router_.emplace(record.size(), [&](std::byte* p) {
    std::memcpy(p, record.data(), record.size());
    env::stamp(*env::header_at(p), env::kStampBrokerIn);
  });
  if (!sent) {
    if (!env::send_problem(*to_listener_[listener], h, 503, "the server is overloaded; retry later"))
      spdlog::error("listener {} channel full: a 503 was lost", listener);
    return;
  }
  track(h, now);
}

void Broker::learn_sent(std::uint16_t listener, std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) return;
  env::for_each_item<env::EnvelopeHeader>(v.section(env::SectionType::Control), [&](const env::EnvelopeHeader& h) {
    if (h.origin_listener != listener) return;
    // Its deadline counts from when the listener sent it.
    const auto sent = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(h.t0_ns));
    track(h, h.t0_ns ? sent : std::chrono::steady_clock::now());
  });
}

void Broker::track(const env::EnvelopeHeader& h, std::chrono::steady_clock::time_point sent) {
  pending_.insert_or_assign(h.request_id, Pending{h, sent});
  // Skip the ids already answered before queueing this one.
  while (!deadlines_.empty() && !pending_.count(deadlines_.front().second)) deadlines_.pop_front();
  // In deadline order: requests learned from several listeners' notices
  // may come a little out of order, and then only from the back.
  const auto deadline = sent + timeout_;
  auto at = deadlines_.end();
  while (at != deadlines_.begin() && std::prev(at)->first > deadline) --at;
  const bool earliest = at == deadlines_.begin();
  deadlines_.emplace(at, deadline, h.request_id);
  if (!timer_armed_ || earliest) arm_deadline_timer();
}

void Broker::on_response(std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (auto e = env::peek_header(record, h); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from the router: {}", env::to_string(e));
    return;
  }
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Notification)) return push(h, record);
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Control)) {
    if (h.event_type == env::kControlResubscribe) announce_push_events(true);
    if (env::is_stream_control(h.event_type)) return on_stream_control(-1, h, record);
    if (h.event_type == env::kControlPushesLost) {
      env::EnvelopeView v;
      const auto payload = env::decode(record, v) == env::DecodeError::None ? v.section(env::SectionType::Control)
                                                                            : std::span<const std::byte>();
      std::uint64_t type = 0;
      if (payload.size() != sizeof type) return;
      std::memcpy(&type, payload.data(), sizeof type);
      close_subscribers(type);
    }
    return;
  }
  // A response whose request this broker does not know (it was answered 504
  // already, or it was sent before this broker restarted) still goes to its
  // listener, which drops it if the slot is no longer waiting.
  const auto listener = h.origin_listener;
  if (listener >= to_listener_.size()) {
    spdlog::error("dropping a response for unknown listener {}", listener);
    return;
  }
  if (!(h.flags & env::kFlagStreamPiece)) {
    auto it = pending_.find(h.request_id);
    if (it == pending_.end()) {
      // Sent straight to the router or its manager, its notice may be
      // unread yet.
      loop_.drain_from(loop_.topology().listener_slot(listener));
      it = pending_.find(h.request_id);
    }
    if (it != pending_.end()) pending_.erase(it);
  }
  const bool sent = to_listener_[listener]->emplace(
      record.size(),
      [&](std::byte* p) {
        std::memcpy(p, record.data(), record.size());
        env::stamp(*env::header_at(p), env::kStampBrokerOut);
      },
      transport::Admission::Answer);
  if (!sent) spdlog::error("response {} is larger than a record: dropped", h.request_id);
}

void Broker::on_control(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) {
    spdlog::error("dropping a malformed control envelope from listener {}", h.origin_listener);
    return;
  }
  const auto payload = v.section(env::SectionType::Control);
  std::uint64_t type = 0;
  const bool typed = payload.size() >= sizeof type;
  if (typed) std::memcpy(&type, payload.data(), sizeof type);
  auto same_connection = [&](const PushSubscription& s) {
    return s.listener == h.origin_listener && s.connection == h.origin_connection &&
           s.generation == h.origin_generation;
  };
  switch (h.event_type) {
    case env::kControlPushSubscribe: {
      if (!typed) return answer_control(h, 400);
      const std::string_view text(reinterpret_cast<const char*>(payload.data()) + sizeof type,
                                  payload.size() - sizeof type);
      nlohmann::json filter;
      if (!text.empty()) {
        // The listener measured the message it came in; measured again so
        // that matches() stays bounded whatever sent this record.
        if (json_nests_deeper_than(text, max_json_depth_)) return answer_control(h, 400);
        filter = nlohmann::json::parse(text, nullptr, false);
        if (filter.is_discarded() || !filter.is_object()) return answer_control(h, 400);
      }
      auto& subs = push_[type];
      auto it = std::find_if(subs.begin(), subs.end(), same_connection);
      if (it != subs.end())
        it->filter = std::move(filter);  // subscribing again replaces the filter
      else
        subs.push_back(
            PushSubscription{h.origin_listener, h.origin_connection, h.origin_generation, std::move(filter)});
      // The router learns of the event before the client learns it is
      // subscribed: the broker -> router channel is ordered.
      announce_push_events(false);
      return answer_control(h, 200);
    }
    case env::kControlPushUnsubscribe: {
      for (auto it = push_.begin(); it != push_.end();) {
        if (!typed || it->first == type) std::erase_if(it->second, same_connection);
        it = it->second.empty() ? push_.erase(it) : std::next(it);
      }
      announce_push_events(false);
      if (h.origin_stream != env::kNoAnswer) answer_control(h, 200);
      return;
    }
    case env::kControlListenerReset: {
      streams_.listener_reset(h.origin_listener);
      for (auto it = push_.begin(); it != push_.end();) {
        std::erase_if(it->second, [&](const PushSubscription& s) { return s.listener == h.origin_listener; });
        it = it->second.empty() ? push_.erase(it) : std::next(it);
      }
      announce_push_events(false);
      return;
    }
    default: spdlog::error("dropping unknown control {} from listener {}", h.event_type, h.origin_listener);
  }
}

void Broker::answer_control(const env::EnvelopeHeader& h, int status) {
  if (h.origin_listener >= to_listener_.size()) return;
  env::EnvelopeWriter w(env::response_header_for(h, status));
  if (!env::send(*to_listener_[h.origin_listener], w, transport::Admission::Answer))
    spdlog::error("listener {}: a subscription answer did not fit a record", h.origin_listener);
}

void Broker::announce_push_events(bool force) {
  std::vector<std::uint64_t> events;
  events.reserve(push_.size());
  for (const auto& [type, subs] : push_)
    if (!subs.empty()) events.push_back(type);
  std::sort(events.begin(), events.end());
  if (!force && events == announced_) return;
  announced_ = events;
  auto h = env::make_header(env::Kind::Control, env::kControlPushEvents, 0);
  env::EnvelopeWriter w(h);
  w.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(announced_)));
  if (!env::send(to_router_, w, transport::Admission::Answer))
    spdlog::error("the push event list does not fit a record: not sent");
}

// No recursion over unbounded data here. The payload is a handler's JSON,
// parsed and destroyed by nlohmann without recursion whatever its depth.
// `*at != want` recurses only while both sides hold an array (or both an
// object) at the same place: std::vector/std::map == compare sizes, then
// elements; a scalar against a structure, or two of different types, is
// unequal at once. So it goes no deeper than `want`, which is part of a
// filter no deeper than EDRI_MAX_JSON_DEPTH (checked in the listener and
// on_control), however deep the payload is.
bool Broker::matches(const nlohmann::json& filter, const nlohmann::json& payload) {
  for (const auto& [path, want] : filter.items()) {
    // "a.b" looks inside objects.
    const nlohmann::json* at = &payload;
    std::string_view rest = path;
    while (at) {
      const auto dot = rest.find('.');
      const std::string key(rest.substr(0, dot));
      if (!at->is_object()) {
        at = nullptr;
        break;
      }
      auto it = at->find(key);
      at = it == at->end() ? nullptr : &*it;
      if (dot == std::string_view::npos) break;
      rest.remove_prefix(dot + 1);
    }
    if (!at || *at != want) return false;
  }
  return true;
}

void Broker::push(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  auto it = push_.find(h.event_type);
  if (it == push_.end()) return;
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) {
    spdlog::error("dropping a malformed notification from the router");
    return;
  }
  // The matching connections, by listener. The payload is parsed once,
  // and only when a subscriber filters.
  targets_.resize(to_listener_.size());
  for (auto& t : targets_) t.clear();
  nlohmann::json payload;
  bool parsed = false;
  for (const auto& s : it->second) {
    if (!s.filter.is_null()) {
      if (!parsed) {
        payload = nlohmann::json::parse(v.text(env::SectionType::Body), nullptr, false);
        parsed = true;
      }
      if (payload.is_discarded() || !matches(s.filter, payload)) continue;
    }
    if (s.listener < targets_.size()) targets_[s.listener].push_back(env::PushTarget{s.connection, s.generation});
  }
  for (std::uint16_t l = 0; l < targets_.size(); ++l)
    if (!targets_[l].empty()) push_to(l, v, targets_[l]);
}

void Broker::push_to(std::uint16_t listener, const env::EnvelopeView& v, std::span<const env::PushTarget> targets) {
  auto h = v.header;
  h.origin_listener = listener;
  env::EnvelopeWriter base(h);
  for (std::size_t i = 0; i < v.section_count; ++i) base.raw(v.sections[i].type, v.sections[i].data);
  // As many targets per record as a record holds beside the payload.
  auto& out = *to_listener_[listener];
  const std::size_t room = out.max_record() - std::min(out.max_record(), base.size() + sizeof(env::SectionHeader));
  const std::size_t per_record = std::max<std::size_t>(1, room / sizeof(env::PushTarget));
  while (!targets.empty()) {
    const auto batch = targets.first(std::min(per_record, targets.size()));
    targets = targets.subspan(batch.size());
    env::EnvelopeWriter w = base;
    w.raw(env::SectionType::Targets, std::as_bytes(batch));
    // New work: refused once the listener is EDRI_OUTBOX_LIMIT behind. The
    // connections that would miss it are closed instead.
    if (!env::send(out, w)) {
      spdlog::warn("listener {} is too far behind: {} WebSocket connections missed a push and are closed", listener,
                   batch.size());
      close_targets(listener, batch);
    }
  }
}

void Broker::close_subscribers(std::uint64_t type) {
  auto it = push_.find(type);
  if (it == push_.end()) return;
  spdlog::warn("a push was lost on its way here: closing its {} subscribers", it->second.size());
  targets_.resize(to_listener_.size());
  for (auto& t : targets_) t.clear();
  for (const auto& s : it->second)
    if (s.listener < targets_.size()) targets_[s.listener].push_back(env::PushTarget{s.connection, s.generation});
  for (std::uint16_t l = 0; l < targets_.size(); ++l)
    if (!targets_[l].empty()) close_targets(l, targets_[l]);
}

void Broker::close_targets(std::uint16_t listener, std::span<const env::PushTarget> targets) {
  auto h = env::make_header(env::Kind::Control, env::kControlPushClose, 0);
  h.origin_listener = listener;
  env::EnvelopeWriter w(h);
  w.raw(env::SectionType::Control, std::as_bytes(targets));
  if (!env::send(*to_listener_[listener], w, transport::Admission::Answer))
    spdlog::error("listener {}: a close of {} connections does not fit a record", listener, targets.size());
  // They get nothing more: their subscriptions end here, before the
  // listener's unsubscribe arrives.
  std::unordered_set<std::uint64_t> closed;
  for (const auto& t : targets) closed.insert(std::uint64_t{t.connection} << 32 | t.generation);
  for (auto it = push_.begin(); it != push_.end();) {
    std::erase_if(it->second, [&](const PushSubscription& s) {
      return s.listener == listener && closed.count(std::uint64_t{s.connection} << 32 | s.generation);
    });
    it = it->second.empty() ? push_.erase(it) : std::next(it);
  }
  announce_push_events(false);
}

void Broker::forget_answered(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) return;
  env::for_each_answered(v.section(env::SectionType::Control), [&](std::uint64_t id) { pending_.erase(id); });
}

void Broker::drain_listeners() {
  const auto& topo = loop_.topology();
  for (std::uint32_t i = 0; i < topo.listeners(); ++i) loop_.drain_from(topo.listener_slot(i));
}

void Broker::arm_deadline_timer() {
  while (!deadlines_.empty() && !pending_.count(deadlines_.front().second)) deadlines_.pop_front();
  if (deadlines_.empty()) {
    timer_armed_ = false;
    return;
  }
  timer_armed_ = true;
  timer_.expires_after(deadlines_.front().first - std::chrono::steady_clock::now());
}

void Broker::answer_lost() {
  std::size_t lost = 0;
  for (auto it = pending_.begin(); it != pending_.end();) {
    // One its listener sent straight to its manager (0027) never was the
    // router's: its answer comes as if the router had not died.
    if (it->second.sent > lost_watch_.died_at() || left_for_successor_.count(it->first) ||
        (it->second.request.flags & env::kFlagDirect)) {
      ++it;
      continue;
    }
    const env::EnvelopeHeader req = it->second.request;
    it = pending_.erase(it);
    ++lost;
    if (!env::send_problem(*to_listener_[req.origin_listener], req, 503, kLostWithProcess))
      spdlog::error("listener {} channel full: a 503 was lost", req.origin_listener);
  }
  left_for_successor_.clear();
  if (lost) spdlog::warn("the router died: {} requests without an answer since answered 503", lost);
}

void Broker::expire() {
  const auto now = std::chrono::steady_clock::now();
  while (!deadlines_.empty() && deadlines_.front().first <= now) {
    const auto id = deadlines_.front().second;
    deadlines_.pop_front();
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    const env::EnvelopeHeader req = it->second.request;
    pending_.erase(it);
    spdlog::warn("request {} got no answer in time: 504", id);
    if (!env::send_problem(*to_listener_[req.origin_listener], req, 504,
                           "the handler did not answer within EDRI_API_RESPONSE_TIMEOUT"))
      spdlog::error("listener {} channel full: a 504 was lost", req.origin_listener);
  }
}

}  // namespace edri::broker
