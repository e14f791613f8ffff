#include "router/router.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"
#include "runtime/setting_parsers.hpp"

namespace edri::router {

namespace env = edri::envelope;
using transport::Topology;

Router::Router(ProcessLoop& loop, const Config& config)
    : loop_(loop),
      to_broker_(loop.outbox_to(Topology::kBroker)),
      managers_(loop.topology().managers()),
      least_loaded_(config.least_loaded),
      ledger_(loop.topology().destinations()),
      held_limit_(config.outbox_limit) {
  const auto& topo = loop.topology();
  learn_names();
  subscribed_.assign(topo.destinations(), false);
  group_of_.assign(topo.destinations(), 0);
  for (std::uint32_t j = 0; j < topo.destinations(); ++j) {
    const auto slot = topo.destination_slot(j);
    to_manager_.push_back(&loop.outbox_to(slot));
    loop.on_records_from(slot, [this, j](std::span<const std::byte> rec) { on_manager(j, rec); });
  }
  loop.on_records_from(Topology::kBroker, [this](std::span<const std::byte> rec) { on_broker(rec); });
  // Clients' requests straight from the listeners (0026), read after the
  // broker's ring in every batch.
  for (std::uint32_t i = 0; i < topo.listeners(); ++i)
    loop.on_records_from(topo.listener_slot(i), [this](std::span<const std::byte> rec) { on_listener(rec); });
  loop.on_peer_death([this](std::uint32_t slot) {
    const auto& t = loop_.topology();
    if (t.is_destination(slot)) on_manager_death(slot - t.manager_slot(0));
  });
  // A request a manager sent straight to another may be reported answered
  // before its notice is read (0028): settled once every ring was read.
  loop.after_drain([this] {
    settle_unmatched();
    return false;
  });
  // Nobody is subscribed to this (possibly restarted) router yet.
  loop_.segment().header().managers_subscribed.store(0, std::memory_order_release);
  // After a restart of this process the managers are already running:
  // ask them for their subscriptions. At first start this is harmless.
  const auto hello = env::make_header(env::Kind::Control, env::kControlResubscribe, 0);
  env::EnvelopeWriter w(hello);
  for (auto* out : to_manager_)
    if (!env::send(*out, w, transport::Admission::Answer))
      spdlog::error("cannot ask a manager to resubscribe: its channel is full");
  if (!env::send(to_broker_, w, transport::Admission::Answer))
    spdlog::error("cannot ask the broker for its push events: its channel is full");
}

void Router::on_broker(std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (auto e = env::peek_header(record, h); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope: {}", env::to_string(e));
    return;
  }
  if (h.kind == static_cast<std::uint8_t>(env::Kind::Response)) {
    // The broker's answer to a manager's stream publish or read.
    if (!reply_channel(h).push(record, transport::Admission::Answer))
      spdlog::error("a stream answer for slot {} was lost", h.reply_to);
    return;
  }
  if (h.kind != static_cast<std::uint8_t>(env::Kind::Control)) return on_request(h, record);
  if (h.event_type == env::kControlStreamCredit || h.event_type == env::kControlStreamCancel) {
    // To the manager that streams the answer (its slot is in reply_to).
    const auto& topo = loop_.topology();
    if (!topo.is_manager(h.reply_to)) {
      spdlog::error("dropping a stream credit for slot {}, not a manager", h.reply_to);
      return;
    }
    if (!to_manager_[h.reply_to - topo.manager_slot(0)]->push(record, transport::Admission::Answer))
      spdlog::error("manager channel full: a stream credit was lost");
    return;
  }
  if (h.event_type == env::kControlStreamReplay && loop_.topology().has_switch()) {
    if (!to_manager_[managers_]->push(record, transport::Admission::Answer))
      spdlog::error("switch channel full: the broker's stream replay was lost");
    return;
  }
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None || h.event_type != env::kControlPushEvents) {
    spdlog::error("dropping an unknown control envelope from the broker");
    return;
  }
  const auto body = v.section(env::SectionType::Control);
  push_events_.resize(body.size() / sizeof(std::uint64_t));
  if (!push_events_.empty()) std::memcpy(push_events_.data(), body.data(), push_events_.size() * sizeof(std::uint64_t));
}

void Router::on_listener(std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  const bool read = env::peek_header(record, h) == env::DecodeError::None;
  if (read && h.kind == static_cast<std::uint8_t>(env::Kind::Control)) return on_listener_control(record);
  if (!read || h.kind != static_cast<std::uint8_t>(env::Kind::Request) || h.reply_to != 0) {
    spdlog::error("dropping an envelope from a listener that is not a client's request");
    return;
  }
  on_request(h, record);
}

void Router::on_listener_control(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (env::decode(record, v) != env::DecodeError::None) {
    spdlog::error("dropping a malformed control envelope from a listener");
  } else if (v.header.event_type == env::kControlRouted) {
    env::for_each_item<env::RoutedRequest>(v.section(env::SectionType::Control),
                                           [&](const env::RoutedRequest& r) { track_routed(r); });
  } else if (v.header.event_type == env::kControlAnswered) {
    // Its manager's channel refused it; its notice came first on this ring.
    forget_answered(v.section(env::SectionType::Control), 0, false);
  } else if (v.header.event_type == env::kControlClientGone) {
    // Any manager may hold a handler waiting for that connection.
    for (std::uint32_t i = 0; i < managers_; ++i)
      if (!to_manager_[i]->push(record, transport::Admission::Answer))
        spdlog::warn("manager channel full: a closed connection's waiting handlers run on");
  } else {
    spdlog::error("dropping an unknown control envelope from a listener");
  }
}

void Router::learn_names() {
  const char* listed = std::getenv("EDRI_INTERNAL_MANAGERS");
  const auto titles = comma_list(listed ? listed : "");
  const auto& topo = loop_.topology();
  for (std::uint32_t j = 0; j < topo.destinations(); ++j)
    names_.push_back(j >= managers_ ? std::string("switch")
                                    : "manager " + (j < titles.size() ? titles[j] : std::to_string(j)));
}

void Router::track_routed(const env::RoutedRequest& r) {
  if (r.manager >= managers_) {
    spdlog::error("dropping the notice of a request sent to manager {}, which does not exist", r.manager);
    return;
  }
  Taken taken{r.manager, r.request, 0};
  taken.direct = true;
  ledger_.keep(taken);
}

void Router::learn_routed() {
  const auto& topo = loop_.topology();
  if (!topo.direct_requests() || learning_) return;  // never a ring read inside its own reading
  learning_ = true;
  for (std::uint32_t i = 0; i < topo.listeners(); ++i) loop_.drain_from(topo.listener_slot(i));
  learning_ = false;
}

void Router::learn_routed_by_managers() {
  const auto& topo = loop_.topology();
  if (!topo.direct_between_managers()) return;
  for (std::uint32_t j = 0; j < managers_; ++j) loop_.drain_from(topo.manager_slot(j));
}

transport::Outbox& Router::reply_channel(const env::EnvelopeHeader& h) {
  // reply_to names the manager (or the switch) that asked; 0 is the
  // broker (a client).
  const auto& topo = loop_.topology();
  if (topo.is_destination(h.reply_to)) return *to_manager_[h.reply_to - topo.manager_slot(0)];
  return to_broker_;
}

void Router::on_request(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  auto it = routes_.find(h.event_type);
  if (it == routes_.end() || it->second.managers.empty()) {
    if (subscribed_count_ < subscribed_.size() && held_bytes_ + record.size() <= held_limit_) {
      held_.emplace_back(record.begin(), record.end());
      held_bytes_ += record.size();
      return;
    }
    return refuse(h, "no manager handles this event");
  }
  auto& subs = it->second;
  auto manager = subs.managers[subs.next++ % subs.managers.size()];
  if (least_loaded_ && subs.managers.size() > 1) {
    // The fewest requests in flight; ties keep the round-robin choice.
    for (const auto m : subs.managers)
      if (ledger_.in_flight(m) < ledger_.in_flight(manager)) manager = m;
  }
  const bool sent = to_manager_[manager]->emplace(record.size(), [&](std::byte* p) {
    std::memcpy(p, record.data(), record.size());
    env::stamp(*env::header_at(p), env::kStampRouterIn);
  });
  if (sent) return ledger_.keep(Taken{manager, h, to_manager_[manager]->last_position()});
  refuse(h, "the manager is overloaded; retry later");
}

void Router::refuse(const env::EnvelopeHeader& h, const char* detail) {
  // Its notice, if it followed one that was kept, is answered too.
  ledger_.forget(key_of(h));
  if (!env::send_problem(reply_channel(h), h, 503, detail)) spdlog::error("reply channel full: a 503 was lost");
}

void Router::forget_answered(std::span<const std::byte> ids, std::uint16_t reply_to, bool learn) {
  bool listeners_read = !learn;
  env::for_each_answered(ids, [&](std::uint64_t id) { forget_answer(RequestKey{id, reply_to}, listeners_read); });
}

void Router::forget_answer(const RequestKey& key, bool& listeners_read) {
  if (ledger_.forget(key)) return;
  if (key.reply_to == 0 && !listeners_read) {
    // Perhaps one its listener sent straight, its notice unread yet.
    listeners_read = true;
    learn_routed();
    if (ledger_.forget(key)) return;
  }
  // Perhaps one a manager sent straight (0028): settled once every ring
  // was read, never from inside a ring's reading.
  const auto& topo = loop_.topology();
  if (topo.direct_between_managers() && topo.is_manager(key.reply_to)) ledger_.defer(key);
}

void Router::settle_unmatched() {
  if (ledger_.unsettled()) ledger_.settle([this](std::uint16_t asker) { loop_.drain_from(asker); });
}

RequestKeys Router::untaken_requests_to(std::uint32_t manager) const {
  const auto& topo = loop_.topology();
  const auto slot = topo.manager_slot(manager);
  RequestKeys untaken;
  auto note_untaken = [&](const env::EnvelopeHeader& h) {
    if (h.kind == static_cast<std::uint8_t>(env::Kind::Request)) untaken.insert(key_of(h));
  };
  for_each_untaken_envelope(*to_manager_[manager], note_untaken);
  if (topo.direct_requests() && manager < managers_)
    for (std::uint32_t i = 0; i < topo.listeners(); ++i)
      for_each_untaken_envelope(loop_.watched_channel(topo.listener_slot(i), slot), note_untaken);
  if (topo.direct_between_managers())
    for (std::uint32_t j = 0; j < managers_; ++j)
      if (j != manager) for_each_untaken_envelope(loop_.watched_channel(topo.manager_slot(j), slot), note_untaken);
  return untaken;
}

void Router::on_manager_death(std::uint32_t manager) {
  const auto& topo = loop_.topology();
  const auto slot = topo.manager_slot(manager);
  // Every request the listeners and the other managers sent it straight
  // is known, then its answers already sent count: take them first.
  learn_routed();
  learn_routed_by_managers();
  loop_.drain_from(slot);
  settle_unmatched();  // what the dead one answered before its notices were read
  // Requests still in its channels were never taken: its successor handles
  // them. The others it took, and their answers died with it.
  const auto untaken = untaken_requests_to(manager);
  const auto orphans = ledger_.orphans_of(manager, untaken);
  for (const auto& request : orphans.lost) answer_lost(request);
  const auto replayed = replay(manager, orphans);
  spdlog::warn(
      "{} died: {} requests it had taken answered 503, {} handed to its successor again, {} it "
      "never took left for it",
      name_of(manager), orphans.lost.size() + orphans.replays.size() - replayed, replayed, untaken.size());
}

std::size_t Router::replay(std::uint32_t manager, const InFlightLedger::Orphans& orphans) {
  // Behind what the dead manager never took, in the order they first came.
  auto& out = *to_manager_[manager];
  std::vector<std::byte> copy;
  std::size_t replayed = 0;
  for (const auto& [position, key] : orphans.replays) {
    const auto rec = out.record_at(position);
    copy.assign(rec.begin(), rec.end());  // the ring may move under a push
    if (!copy.empty() && out.push(copy, transport::Admission::Answer)) {
      ledger_.replayed(key, out.last_position());
      ++replayed;
    } else {
      answer_lost(ledger_.give_up(key));  // written over since: no process holds it
    }
  }
  return replayed;
}

void Router::answer_lost(const env::EnvelopeHeader& request) {
  if (!env::send_problem(reply_channel(request), request, 503,
                         "the process handling this request stopped; it is being restarted, retry"))
    spdlog::error("reply channel full: a 503 was lost");
}

void Router::on_manager(std::uint32_t manager, std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (auto e = env::peek_header(record, h); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from {}: {}", name_of(manager), env::to_string(e));
    return;
  }
  switch (static_cast<env::Kind>(h.kind)) {
    case env::Kind::Control: {
      env::EnvelopeView v;
      if (env::decode(record, v) != env::DecodeError::None) {
        spdlog::error("dropping a malformed control envelope from {}", name_of(manager));
      } else if (h.event_type == env::kControlAnswered) {
        forget_answered(v.section(env::SectionType::Control), h.reply_to);
      } else if (h.event_type == env::kControlRouted) {
        env::for_each_item<env::RoutedRequest>(v.section(env::SectionType::Control),
                                               [&](const env::RoutedRequest& r) { track_routed(r); });
      } else if (env::is_stream_control(h.event_type)) {
        on_stream_control(manager, h, record);
      } else if (h.event_type == env::kControlSubscribe) {
        subscribe(manager, v.section(env::SectionType::Control));
      } else if (h.event_type == env::kControlPushesLost) {
        const auto body = v.section(env::SectionType::Control);
        std::uint64_t type = 0;
        if (body.size() == sizeof type) std::memcpy(&type, body.data(), sizeof type);
        if (std::find(push_events_.begin(), push_events_.end(), type) != push_events_.end()) pushes_lost(type);
      } else {
        spdlog::error("dropping an unknown control envelope from {}", name_of(manager));
      }
      return;
    }
    case env::Kind::Request: return on_request(h, record);
    case env::Kind::Notification: return fan_out(h, record);
    case env::Kind::Response: {
      // A streamed answer's pieces after its head are not answers.
      bool listeners_read = false;
      if (!(h.flags & env::kFlagStreamPiece)) forget_answer(key_of(h), listeners_read);
      const bool sent = reply_channel(h).emplace(
          record.size(),
          [&](std::byte* p) {
            std::memcpy(p, record.data(), record.size());
            env::stamp(*env::header_at(p), env::kStampRouterOut);
          },
          transport::Admission::Answer);
      if (!sent) spdlog::error("broker channel full: response {} lost", h.request_id);
      return;
    }
    default: spdlog::error("dropping an envelope of kind {} from {}", h.kind, name_of(manager));
  }
}

void Router::on_stream_control(std::uint32_t manager, const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  // A live stream's publish or read: the broker orders streams, or the
  // switch where instances are joined (then the broker only fans out what
  // the switch sends it).
  const bool to_switch = manager < managers_ && loop_.topology().has_switch() &&
                         (h.event_type == env::kControlStreamPublish || h.event_type == env::kControlStreamRead);
  auto& out = to_switch ? *to_manager_[managers_] : to_broker_;
  if (!out.push(record) && !env::send_problem(*to_manager_[manager], h, 503,
                                              to_switch ? "the switch is far behind" : "the broker is far behind"))
    spdlog::error("{}'s channel full: a 503 was lost", name_of(manager));
}

void Router::subscribe(std::uint32_t manager, std::span<const std::byte> body) {
  const std::size_t n = body.size() / sizeof(std::uint64_t);
  if (n > 0) std::memcpy(&group_of_[manager], body.data(), sizeof(std::uint64_t));
  for (std::size_t i = 1; i < n; ++i) {
    std::uint64_t id;
    std::memcpy(&id, body.data() + i * sizeof id, sizeof id);
    auto& m = routes_[id].managers;
    if (std::find(m.begin(), m.end(), manager) == m.end()) m.push_back(manager);
  }
  if (!subscribed_[manager]) {
    subscribed_[manager] = true;
    ++subscribed_count_;
    spdlog::debug("{} subscribed to {} events", name_of(manager), n ? n - 1 : 0);
  }
  // /ready reads this: the managers that subscribed (not the switch).
  const auto managers =
      static_cast<std::uint32_t>(std::count(subscribed_.begin(), subscribed_.begin() + managers_, true));
  loop_.segment().header().managers_subscribed.store(managers, std::memory_order_release);
  if (subscribed_count_ == subscribed_.size() && !held_.empty()) {
    auto held = std::move(held_);
    held_.clear();
    held_bytes_ = 0;
    for (const auto& rec : held) {
      env::EnvelopeHeader h;
      if (env::peek_header(rec, h) == env::DecodeError::None) on_request(h, rec);
    }
  }
}

}  // namespace edri::router
