// Outbox: the producing end of one channel as a process uses it.
//
// A full ring never blocks the caller: records queue in a local overflow
// and move into the ring, in order, as the consumer frees room. What may
// wait there depends on what the record is (Admission): new work (requests,
// notifications) is refused past a bound in bytes and the caller answers
// 503 or says the push was lost; an answer (a response, a problem, a control
// that must arrive) is never refused for room, since it belongs to work the
// pipeline already admitted and the bound on that work bounds it. The
// consumer's doorbell is rung once per batch (notify), and only if it
// sleeps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "transport/channel.hpp"
#include "transport/doorbell.hpp"

namespace edri::transport {

// What a record is, for the overflow bound (see above).
enum class Admission : std::uint8_t {
  Work,    // refused once the overflow holds EDRI_OUTBOX_LIMIT bytes
  Answer,  // queued whatever the overflow holds
  // Into the ring now or refused: a request sent straight to its manager,
  // whose crash answer the router decides from what is unread in the ring
  // (the overflow is this process's, out of its sight; decisions 0027,
  // 0028). The caller sends it the long way instead.
  RingOnly,
};

class Outbox {
 public:
  Outbox(ChannelProducer producer, Doorbell consumer, std::size_t overflow_limit_bytes)
      : producer_(producer), consumer_(consumer), overflow_limit_(overflow_limit_bytes) {}

  // Appends a record of `n` bytes written by fill(std::byte*). Returns false
  // when the record cannot be queued (larger than a ring allows, or, for
  // work, the overflow bound is reached): the caller must answer the
  // request itself.
  template <class Fill>
  [[nodiscard]] bool emplace(std::size_t n, Fill&& fill, Admission admission = Admission::Work) {
    if (n > producer_.max_record()) return false;
    if (overflow_.empty()) {
      if (std::byte* p = producer_.reserve(n)) {
        fill(p);
        producer_.commit();
        dirty_ = true;
        last_position_ = producer_.last_record();
        return true;
      }
    }
    last_position_ = kNotInRing;
    if (admission == Admission::RingOnly) return false;
    if (admission == Admission::Work && overflow_bytes_ + n > overflow_limit_) return false;
    overflow_.emplace_back(n);
    fill(overflow_.back().data());
    overflow_bytes_ += n;
    return true;
  }

  [[nodiscard]] bool push(std::span<const std::byte> bytes, Admission admission = Admission::Work) {
    return emplace(
        bytes.size(),
        [&](std::byte* p) {
          if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
        },
        admission);
  }

  // An answer its consumer needs only when it next runs (a notice that
  // keeps its books, never a reason to wake it): queued like any answer,
  // without ringing the consumer's doorbell for it, until kQuietBytes (or a
  // quarter of a smaller ring) are unread. A consumer that nothing else
  // wakes would otherwise let notices fill its ring; past that it is woken
  // to read them: one wake-up per few hundred notices, each batch short.
  static constexpr std::size_t kQuietBytes = 64 * 1024;
  template <class Fill>
  [[nodiscard]] bool emplace_quiet(std::size_t n, Fill&& fill) {
    const bool dirty = dirty_;
    const bool queued = emplace(n, std::forward<Fill>(fill), Admission::Answer);
    const std::size_t quiet_bytes = std::min(kQuietBytes, producer_.ring_bytes() / 4);
    dirty_ = dirty || !overflow_.empty() || producer_.depth() > quiet_bytes;
    return queued;
  }

  // Moves queued records into the ring as far as room allows.
  void flush_overflow() {
    while (!overflow_.empty()) {
      auto& rec = overflow_.front();
      if (!producer_.try_push(rec)) return;
      overflow_bytes_ -= rec.size();
      overflow_.pop_front();
      dirty_ = true;
    }
  }

  // Ends a batch: wakes the consumer if it sleeps and anything was written.
  // Returns true if it wrote to the ring since the last call.
  bool notify() {
    if (!dirty_) return false;
    dirty_ = false;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    consumer_.ring_if_sleeping();
    return true;
  }

  // With the consumer dead: calls f(payload) for each record it never took,
  // in the ring and then in the local overflow.
  template <class F>
  void for_each_untaken(F&& f) const {
    producer_.for_each_untaken(f);
    for (const auto& rec : overflow_) f(std::span<const std::byte>(rec));
  }

  // Where in the ring the last record accepted went, or kNotInRing when it
  // waits in the overflow: with record_at(), to read a record again.
  static constexpr std::uint64_t kNotInRing = UINT64_MAX;
  std::uint64_t last_position() const { return last_position_; }
  std::span<const std::byte> record_at(std::uint64_t position) const {
    return position == kNotInRing ? std::span<const std::byte>() : producer_.record_at(position);
  }

  bool has_overflow() const { return !overflow_.empty(); }
  std::size_t overflow_bytes() const { return overflow_bytes_; }
  std::uint64_t depth() const { return producer_.depth(); }
  std::size_t max_record() const { return producer_.max_record(); }

 private:
  ChannelProducer producer_;
  Doorbell consumer_;
  std::size_t overflow_limit_;
  std::deque<std::vector<std::byte>> overflow_;
  std::size_t overflow_bytes_ = 0;
  bool dirty_ = false;
  std::uint64_t last_position_ = kNotInRing;
};

}  // namespace edri::transport
