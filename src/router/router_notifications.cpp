// The router's notifications: to one replica of every subscribed domain,
// to the broker for the WebSocket clients subscribed to them, and those
// from other instances to the one domain they name.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "envelope/send.hpp"
#include "router/router.hpp"

namespace edri::router {

namespace env = edri::envelope;

void Router::pushes_lost(std::uint64_t type) {
  // Its subscribers would miss it without knowing: the broker closes them.
  spdlog::warn("a push could not be queued: its WebSocket subscribers are closed");
  auto lost = env::make_header(env::Kind::Control, env::kControlPushesLost, 0);
  env::EnvelopeWriter w(lost);
  w.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(&type, 1)));
  if (!env::send(to_broker_, w, transport::Admission::Answer)) spdlog::error("cannot tell the broker a push was lost");
}

bool Router::pushed(std::uint64_t type) {
  auto announced = [&] { return std::find(push_events_.begin(), push_events_.end(), type) != push_events_.end(); };
  if (announced()) return true;
  // A subscription the broker confirmed to its client before this
  // notification was caused is announced on the broker's ring, maybe not
  // read yet: read it first, or the push would be lost.
  loop_.drain_from(transport::Topology::kBroker);
  return announced();
}

void Router::push_to_broker(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  if (pushed(h.event_type) && !to_broker_.push(record)) pushes_lost(h.event_type);
}

void Router::deliver_from_cluster(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  if (h.request_id == 0) return push_to_broker(h, record);
  const auto it = routes_.find(h.event_type);
  if (it == routes_.end()) return;
  auto& subs = it->second;
  const auto n = subs.managers.size();
  const auto start = subs.next_notify++;
  for (std::size_t i = 0; i < n; ++i) {
    const auto manager = subs.managers[(start + i) % n];
    if (manager >= managers_ || group_of_[manager] != h.request_id) continue;
    if (!to_manager_[manager]->push(record))
      spdlog::error("{}'s channel full: a notification was dropped", name_of(manager));
    return;
  }
}

void Router::fan_out(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  if (h.flags & env::kFlagFromCluster) return deliver_from_cluster(h, record);
  push_to_broker(h, record);
  auto it = routes_.find(h.event_type);
  if (it == routes_.end()) return;  // no manager listens
  // One replica of each domain, taking turns.
  auto& subs = it->second;
  const auto n = subs.managers.size();
  const auto start = subs.next_notify++;
  groups_seen_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const auto manager = subs.managers[(start + i) % n];
    const auto group = group_of_[manager];
    if (std::find(groups_seen_.begin(), groups_seen_.end(), group) != groups_seen_.end()) continue;
    groups_seen_.push_back(group);
    if (!to_manager_[manager]->push(record))
      spdlog::error("{}'s channel full: a notification was dropped", name_of(manager));
  }
}

}  // namespace edri::router
