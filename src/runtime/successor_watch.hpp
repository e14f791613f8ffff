// Answering for what died with a peer process.
//
// SuccessorWatch: after a process died, waits for its successor to serve
// and then for kLostAnswerGrace more, and only then declares lost what is
// still unanswered. Answers of requests the dead process had passed on
// come back through its successor; timing from the death instead would
// call them lost whenever a restart is slow (a backoff, a loaded machine,
// a sanitizer build), and answer 503 for work that was done.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>

#include "envelope/envelope.hpp"
#include "runtime/process_loop.hpp"
#include "transport/outbox.hpp"

namespace edri {

class SuccessorWatch {
 public:
  // A successor that has not served after this is not waited for longer.
  static constexpr std::chrono::seconds kSuccessorWait{5};

  SuccessorWatch(ProcessLoop& loop, std::function<void()> on_lost)
      : loop_(loop), on_lost_(std::move(on_lost)), timer_(loop.events(), [this] { check(); }) {}

  // Slot `slot` died (ProcessLoop::on_peer_death): on_lost runs once its
  // successor has served for kLostAnswerGrace.
  void died(std::uint32_t slot) {
    slot_ = slot;
    dead_pid_ = loop_.segment().doorbell(slot).pid.load(std::memory_order_acquire);
    died_at_ = std::chrono::steady_clock::now();
    successor_serving_ = false;
    timer_.expires_after(kPoll);
  }
  // When the last death came: what was sent after it went to the successor.
  std::chrono::steady_clock::time_point died_at() const { return died_at_; }

 private:
  static constexpr std::chrono::milliseconds kPoll{20};

  void check() {
    if (!successor_serving_) {
      // A process writes its pid into its slot when it enters its loop.
      const auto pid = loop_.segment().doorbell(slot_).pid.load(std::memory_order_acquire);
      const bool serving = pid != 0 && pid != dead_pid_;
      if (!serving && std::chrono::steady_clock::now() - died_at_ < kSuccessorWait) {
        timer_.expires_after(kPoll);
        return;
      }
      successor_serving_ = true;
      if (serving) {
        timer_.expires_after(kLostAnswerGrace);
        return;
      }
    }
    on_lost_();
  }

  ProcessLoop& loop_;
  std::function<void()> on_lost_;
  EventLoop::Timer timer_;
  std::uint32_t slot_ = 0;
  std::uint32_t dead_pid_ = 0;
  std::chrono::steady_clock::time_point died_at_{};
  bool successor_serving_ = false;
};

// The detail of the 503 for a request that died with a process on its way.
inline constexpr std::string_view kLostWithProcess =
    "a process this request went through stopped; it is being restarted, retry";

// Calls f(header) for each envelope in `out` (an Outbox, or a channel this
// process only watches: ProcessLoop::watched_channel) that its dead
// consumer never took: its successor handles those, so they are not lost
// with it.
template <class Producer, class F>
void for_each_untaken_envelope(const Producer& out, F&& f) {
  out.for_each_untaken([&](std::span<const std::byte> rec) {
    envelope::EnvelopeHeader h;
    if (envelope::peek_header(rec, h) == envelope::DecodeError::None) f(h);
  });
}

}  // namespace edri
