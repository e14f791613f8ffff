#include "runtime/process_loop.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace edri {

using transport::Doorbell;

ProcessLoop::ProcessLoop(const transport::Segment& segment, const transport::Topology& topology, std::uint32_t slot,
                         const std::vector<int>& doorbell_fds, const Config& config, std::uint32_t spin_polls)
    : owned_events_(std::make_unique<EventLoop>()),
      events_(owned_events_.get()),
      segment_(segment),
      topology_(topology),
      slot_(slot),
      doorbell_fds_(doorbell_fds),
      spin_(spin_polls),
      own_(&segment.doorbell(slot), doorbell_fds.at(slot)) {
  watch_doorbell();

  // SIGUSR1 and SIGUSR2 came blocked from the supervisor's fork, so that
  // one sent before this loop runs waits for it rather than ending the
  // process.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGUSR2);
  ::sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal_fd_.reset(::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd_) throw std::system_error(errno, std::generic_category(), "signalfd");
  events_->watch(signal_fd_.get(), EPOLLIN, [this](std::uint32_t) {
    signalfd_siginfo info;
    while (::read(signal_fd_.get(), &info, sizeof info) == sizeof info) {
      if (info.ssi_signo == SIGUSR1) {
        for (const auto& reopen : on_reopen_signal_) reopen();
        continue;
      }
      if (info.ssi_signo == SIGUSR2) {
        if (on_replaced_signal_) on_replaced_signal_();
        continue;
      }
      spdlog::info("signal {}: stopping", info.ssi_signo);
      if (on_stop_signal_)
        on_stop_signal_();
      else
        stop();
    }
  });

  open_outboxes(config);
}

ProcessLoop::ProcessLoop(ProcessLoop& host, std::uint32_t slot, const Config& config)
    : events_(host.events_),
      host_(&host),
      segment_(host.segment_),
      topology_(host.topology_),
      slot_(slot),
      doorbell_fds_(host.doorbell_fds_),
      spin_(0),
      own_(&segment_.doorbell(slot), doorbell_fds_.at(slot)) {
  watch_doorbell();
  open_outboxes(config);
  host.guests_.push_back(this);
}

void ProcessLoop::watch_doorbell() {
  // The doorbell is never read: edge-triggered epoll reports every write
  // to an eventfd, and its 64-bit counter cannot overflow in practice. A
  // wake-up thus costs the sleeper nothing beyond its epoll_wait.
  events_->watch(own_.fd(), EPOLLIN, [](std::uint32_t) {});
}

void ProcessLoop::open_outboxes(const Config& config) {
  outboxes_.resize(topology_.process_slots());
  const auto& specs = topology_.channels();
  for (std::uint32_t c = 0; c < specs.size(); ++c) {
    if (specs[c].producer != slot_) continue;
    const auto to = specs[c].consumer;
    outboxes_[to] = std::make_unique<transport::Outbox>(
        segment_.producer(c), Doorbell(&segment_.doorbell(to), doorbell_fds_.at(to)), config.outbox_limit);
    active_outboxes_.push_back(outboxes_[to].get());
  }
}

ProcessLoop::~ProcessLoop() {
  if (host_) std::erase(host_->guests_, this);
  if (signal_fd_) events_->unwatch(signal_fd_.get());
  events_->unwatch(own_.fd());
}

std::vector<std::uint32_t> ProcessLoop::hosted_slots() const {
  std::vector<std::uint32_t> out{slot_};
  for (const auto* g : guests_) out.push_back(g->slot_);
  return out;
}

void ProcessLoop::on_records_from(std::uint32_t producer_slot, RecordHandler handler) {
  const auto c = topology_.channel(producer_slot, slot_);
  auto consumer = segment_.consumer(c);
  if (consumer.skipped_poison())
    spdlog::error("the previous process died handling a record from slot {}: that record is dropped", producer_slot);
  inbound_.push_back(Inbound{std::move(consumer),
                             Doorbell(&segment_.doorbell(producer_slot), doorbell_fds_.at(producer_slot)),
                             std::move(handler), producer_slot});
}

transport::Outbox& ProcessLoop::outbox_to(std::uint32_t consumer_slot) {
  if (consumer_slot >= outboxes_.size() || !outboxes_[consumer_slot])
    throw std::logic_error("no channel to slot " + std::to_string(consumer_slot));
  return *outboxes_[consumer_slot];
}

std::size_t ProcessLoop::drain_batch(Inbound& in) {
  in.draining = true;
  auto r = in.consumer.drain([&](std::span<const std::byte> rec, std::uint32_t) { in.handler(rec); }, kBatchRecords);
  in.draining = false;
  if (r.corrupt) spdlog::error("corrupt record in channel from slot {}: rest of the batch dropped", in.producer_slot);
  // The producer may be between setting its flag and sleeping: ring it
  // whatever its flag says (rare path).
  if (r.wake_producer) in.producer.ring();
  return r.records;
}

std::size_t ProcessLoop::drain_inbound() {
  std::size_t total = 0;
  behind_ = false;
  for (auto& in : inbound_) {
    const std::size_t n = drain_batch(in);
    behind_ = behind_ || n == kBatchRecords;
    total += n;
  }
  return total;
}

void ProcessLoop::on_peer_death(std::function<void(std::uint32_t)> hook) {
  on_peer_death_ = std::move(hook);
  deaths_seen_ = segment_.header().deaths.load(std::memory_order_acquire);
  restarts_seen_.resize(topology_.process_slots());
  for (std::uint32_t s = 0; s < restarts_seen_.size(); ++s)
    restarts_seen_[s] = segment_.doorbell(s).restarts.load(std::memory_order_relaxed);
}

void ProcessLoop::check_deaths() {
  // One load of a line that changes only when a process dies.
  const auto deaths = segment_.header().deaths.load(std::memory_order_acquire);
  if (deaths == deaths_seen_) return;
  deaths_seen_ = deaths;
  for (std::uint32_t s = 0; s < restarts_seen_.size(); ++s) {
    const auto r = segment_.doorbell(s).restarts.load(std::memory_order_relaxed);
    if (r == restarts_seen_[s]) continue;
    restarts_seen_[s] = r;
    if (s != slot_) on_peer_death_(s);
  }
}

void ProcessLoop::drain_from(std::uint32_t producer_slot) {
  for (auto& in : inbound_) {
    if (in.producer_slot != producer_slot) continue;
    // Read from inside its own reading, a batch would be handled twice.
    if (in.draining) {
      spdlog::error("a ring from slot {} was asked to be read while it is being read", producer_slot);
      return;
    }
    while (drain_batch(in) == kBatchRecords) {
    }
  }
}

bool ProcessLoop::inbound_empty() const {
  for (const auto& in : inbound_)
    if (!in.consumer.empty()) return false;
  return true;
}

void ProcessLoop::flush_outboxes() {
  for (auto* o : active_outboxes_) {
    o->flush_overflow();
    o->notify();
  }
}

void ProcessLoop::mark_serving() {
  own_.state()->turn_ms.store(transport::turn_clock_ms(), std::memory_order_relaxed);
  own_.state()->pid.store(static_cast<std::uint32_t>(::getpid()), std::memory_order_release);
}

std::size_t ProcessLoop::turn() {
  own_.state()->turn_ms.store(transport::turn_clock_ms(), std::memory_order_relaxed);
  if (on_peer_death_) check_deaths();
  const std::size_t records = drain_inbound();
  std::size_t work = records;
  if (after_drain_ && after_drain_()) ++work;
  flush_outboxes();
  if (work) counted_turn(records);
  return work;
}

bool ProcessLoop::announce_sleep() {
  own_.state()->sleeping.store(1, std::memory_order_relaxed);
  for (auto* g : guests_) g->own_.state()->sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool empty = inbound_empty();
  for (const auto* g : guests_) empty = empty && g->inbound_empty();
  if (!empty) end_sleep();
  return empty;
}

void ProcessLoop::end_sleep() {
  own_.state()->sleeping.store(0, std::memory_order_relaxed);
  for (auto* g : guests_) g->own_.state()->sleeping.store(0, std::memory_order_relaxed);
}

void ProcessLoop::run() {
  mark_serving();
  for (auto* g : guests_) g->mark_serving();
  std::uint32_t idle = 0;
  std::uint32_t busy = 0;
  while (!stopped_) {
    // The host first: what a guest answers in its turn is taken by the
    // host's next one, before any sleep.
    std::size_t work = turn();
    for (auto* g : guests_) work += g->turn();
    if (stopped_) break;
    if (work) {
      // Descriptors are looked at every 16th busy turn too, so that a
      // stream of channel records cannot starve sockets and signals.
      if ((++busy & 15) == 0) events_->poll(0);
      idle = 0;
      continue;
    }
    if (idle < spin_.polls()) {
      // Spinning only pays where the processes have cores of their own:
      // it watches the rings, and descriptors every 64th turn.
      bump(own_.state()->loop.spins);
      if ((++idle & 63) == 0 && events_->poll(0)) idle = 0;
      __builtin_ia32_pause();
      continue;
    }
    if (!announce_sleep()) continue;
    sleep();
    end_sleep();
    idle = 0;
  }
}

void ProcessLoop::sleep() {
  // One system call: returns at once if a descriptor is ready, else sleeps
  // until a socket, timer, signal or the doorbell fires.
  const std::uint64_t before = transport::loop_clock_ns();
  events_->poll(-1);
  const std::uint64_t after = transport::loop_clock_ns();
  if (spin_.adaptive()) spin_.slept(std::chrono::nanoseconds(after - before));
  auto& stats = own_.state()->loop;
  bump(stats.sleeps);
  bump(stats.slept_us, (after - before) / 1000);
  // A ring made before this sleep ended: the time from it to this turn.
  // (One made while this process ran and had not slept is taken here too,
  // as an upper bound: it could not have woken it sooner.)
  // A guest's doorbell wakes this thread as the host's does: the first.
  std::uint64_t rang = own_.state()->rang_ns.exchange(0, std::memory_order_relaxed);
  for (auto* g : guests_)
    if (const auto r = g->own_.state()->rang_ns.exchange(0, std::memory_order_relaxed); r && (!rang || r < rang))
      rang = r;
  if (rang == 0 || rang > after) return;
  bump(stats.woken);
  bump(stats.wake_us, (after - std::max(rang, before)) / 1000);
}

void ProcessLoop::counted_turn(std::size_t records) {
  auto& stats = own_.state()->loop;
  bump(stats.turns);
  bump(stats.records, records);
}

}  // namespace edri
