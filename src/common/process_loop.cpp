#include "common/process_loop.hpp"

#include <spdlog/spdlog.h>

namespace edri {

using transport::Doorbell;

ProcessLoop::ProcessLoop(const transport::Segment& segment, const transport::Topology& topology, std::uint32_t slot,
                         const std::vector<int>& doorbell_fds, const Config& config)
    : segment_(segment),
      topology_(topology),
      slot_(slot),
      doorbell_fds_(doorbell_fds),
      spin_(config.spin),
      own_(&segment.doorbell(slot), doorbell_fds.at(slot)),
      doorbell_stream_(io_),
      signals_(io_, SIGTERM, SIGINT) {
  // The eventfd is shared with the supervisor, which keeps it across our
  // restarts: dup it so closing the stream does not close the original.
  doorbell_stream_.assign(::dup(own_.fd()));
  doorbell_stream_.non_blocking(true);
  own_ = Doorbell(&segment.doorbell(slot), doorbell_stream_.native_handle());
  own_.state()->pid.store(static_cast<std::uint32_t>(::getpid()), std::memory_order_relaxed);

  outboxes_.resize(topology.process_slots());
  const auto& specs = topology.channels();
  for (std::uint32_t c = 0; c < specs.size(); ++c) {
    if (specs[c].producer != slot) continue;
    const auto to = specs[c].consumer;
    outboxes_[to] = std::make_unique<transport::Outbox>(
        segment.producer(c), Doorbell(&segment.doorbell(to), doorbell_fds.at(to)), config.outbox_limit);
    active_outboxes_.push_back(outboxes_[to].get());
  }
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: stopping", sig);
    if (on_stop_signal_)
      on_stop_signal_();
    else
      stop();
  });
}

ProcessLoop::~ProcessLoop() = default;

void ProcessLoop::on_records_from(std::uint32_t producer_slot, RecordHandler handler) {
  const auto c = topology_.channel(producer_slot, slot_);
  // The producer's eventfd is only needed to wake it when it waits for room.
  inbound_.push_back(Inbound{segment_.consumer(c),
                             Doorbell(&segment_.doorbell(producer_slot), doorbell_fds_.at(producer_slot)),
                             std::move(handler), producer_slot});
}

transport::Outbox& ProcessLoop::outbox_to(std::uint32_t consumer_slot) {
  if (consumer_slot >= outboxes_.size() || !outboxes_[consumer_slot])
    throw std::logic_error("no channel to slot " + std::to_string(consumer_slot));
  return *outboxes_[consumer_slot];
}

void ProcessLoop::arm_doorbell() {
  doorbell_stream_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;
    own_.clear();
    arm_doorbell();
  });
}

std::size_t ProcessLoop::drain_inbound() {
  std::size_t total = 0;
  for (auto& in : inbound_) {
    auto r = in.consumer.drain([&](std::span<const std::byte> rec, std::uint32_t) { in.handler(rec); }, 1024);
    total += r.records;
    if (r.corrupt) spdlog::error("corrupt record in channel from slot {}: rest of the batch dropped", in.producer_slot);
    if (r.wake_producer) {
      // The producer may be between setting its flag and sleeping: ring
      // unconditionally (rare path).
      in.producer.ring();
    }
  }
  return total;
}

bool ProcessLoop::inbound_empty() const {
  for (const auto& in : inbound_)
    if (!in.consumer.empty()) return false;
  return true;
}

void ProcessLoop::run() {
  arm_doorbell();
  auto& sleeping = own_.state()->sleeping;
  std::uint32_t idle = 0;
  std::uint32_t busy = 0;
  while (!stopped_) {
    std::size_t work = drain_inbound();
    if (after_drain_) after_drain_();
    for (auto* o : active_outboxes_) {
      o->flush_overflow();
      o->notify();
    }
    if (stopped_) break;
    // Sockets, timers and signals are polled on every idle turn, and every
    // 16th busy one: a busy turn then costs no epoll_wait.
    if (!work || (++busy & 15) == 0) work += io_.poll();
    if (work) {
      idle = 0;
      continue;
    }
    if (idle < spin_) {
      ++idle;
      __builtin_ia32_pause();
      continue;
    }
    sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!inbound_empty()) {
      sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    io_.run_one();
    sleeping.store(0, std::memory_order_relaxed);
    idle = 0;
  }
}

void ProcessLoop::stop() {
  stopped_ = true;
  io_.stop();
}

}  // namespace edri
