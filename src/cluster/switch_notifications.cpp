// The switch's notifications: to the domains that run on no local manager
// and to every instance's WebSocket clients, and those from other
// instances to the router (docs/cluster.md).
#include <spdlog/spdlog.h>

#include "cluster/inbound.hpp"
#include "cluster/portable.hpp"
#include "cluster/switch.hpp"
#include "envelope/problem.hpp"

namespace edri::cluster {

namespace env = edri::envelope;

void Switch::publish_notification(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  const auto it = notifications_.find(h.event_type);
  if (it == notifications_.end() || !nats_.connected()) return;
  WireMessage msg(FrameKind::Notification);
  std::string problem;
  if (msg.add(0, 0, h, record, loop_.blobs(), message_limit(), problem)) {
    spdlog::error("a notification too large to cross to other instances was not sent: {}", problem);
    return;
  }
  std::uint64_t sent = 0;
  for (const auto& d : it->second.remote_domains)
    sent += nats_.publish(note_subject(config_.cluster, d), "", msg.bytes()) ? 1 : 0;
  if (it->second.push) sent += nats_.publish(push_subject(config_.cluster), "", msg.bytes()) ? 1 : 0;
  state_.notifications_sent.fetch_add(sent, std::memory_order_relaxed);
}

void Switch::on_notification(const NatsMessage& m, std::uint64_t domain_id) {
  const bool ok = for_each_entry(m.data, FrameKind::Notification, [&](const WireEntry& e) {
    if (e.view.header.kind != static_cast<std::uint8_t>(env::Kind::Notification)) return;
    auto header = e.view.header;
    header.flags = static_cast<std::uint16_t>(env::kFlagFromCluster);
    header.request_id = domain_id;
    header.reply_to = static_cast<std::uint16_t>(loop_.slot());
    if (!send_local(to_router_, header, e.view, loop_.blobs(), config_.blob_threshold, transport::Admission::Work))
      spdlog::error("router channel full: a notification from another instance was dropped");
    state_.notifications_received.fetch_add(1, std::memory_order_relaxed);
  });
  if (std::uint64_t unlogged = 0; !ok && notification_log_.allow(unlogged))
    spdlog::warn("dropping a malformed notification from NATS on {}{}", m.subject, LogLimit::more(unlogged));
}

}  // namespace edri::cluster
