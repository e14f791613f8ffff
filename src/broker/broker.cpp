#include "broker/broker.hpp"

#include <spdlog/spdlog.h>

#include <cstring>

#include "envelope/envelope.hpp"
#include "envelope/problem.hpp"

namespace edri::broker {

namespace env = edri::envelope;
using transport::Topology;

Broker::Broker(ProcessLoop& loop, const Config& config)
    : loop_(loop),
      timeout_(std::chrono::nanoseconds(static_cast<std::int64_t>(config.api_response_timeout_s * 1e9))),
      to_router_(loop.outbox_to(Topology::kRouter)),
      timer_(loop.events(), [this] {
        timer_armed_ = false;
        expire();
        arm_deadline_timer();
      }) {
  const auto& topo = loop.topology();
  for (std::uint32_t i = 0; i < topo.listeners(); ++i) {
    const auto slot = topo.listener_slot(i);
    to_listener_.push_back(&loop.outbox_to(slot));
    loop.on_records_from(slot,
                         [this, i](std::span<const std::byte> rec) { on_request(static_cast<std::uint16_t>(i), rec); });
  }
  loop.on_records_from(Topology::kRouter, [this](std::span<const std::byte> rec) { on_response(rec); });
  pending_.reserve(4096);
}

void Broker::on_request(std::uint16_t listener, std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (auto e = env::peek_header(record, h); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from listener {}: {}", listener, env::to_string(e));
    return;
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
  pending_.insert_or_assign(h.request_id, Pending{h});
  // Skip the ids already answered before queueing this one.
  while (!deadlines_.empty() && !pending_.count(deadlines_.front().second)) deadlines_.pop_front();
  deadlines_.emplace_back(now + timeout_, h.request_id);
  if (!timer_armed_) arm_deadline_timer();
}

void Broker::on_response(std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (auto e = env::peek_header(record, h); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from the router: {}", env::to_string(e));
    return;
  }
  // A response whose request this broker does not know (it was answered 504
  // already, or it was sent before this broker restarted) still goes to its
  // listener, which drops it if the slot is no longer waiting.
  if (auto it = pending_.find(h.request_id); it != pending_.end()) pending_.erase(it);
  const auto listener = h.origin_listener;
  if (listener >= to_listener_.size()) {
    spdlog::error("dropping a response for unknown listener {}", listener);
    return;
  }
  const bool sent = to_listener_[listener]->emplace(record.size(), [&](std::byte* p) {
    std::memcpy(p, record.data(), record.size());
    env::stamp(*env::header_at(p), env::kStampBrokerOut);
  });
  if (!sent) spdlog::error("listener {} channel full: response {} lost", listener, h.request_id);
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
