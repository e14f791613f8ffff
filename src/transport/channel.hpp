// Channel: the two ends of a single-producer single-consumer byte ring in
// shared memory (layout and protocol: shm_layout.hpp).
//
// Each end keeps its own position and a cached copy of the other side's, so
// that a busy pipeline touches the shared cache line of the other side only
// when its cached view runs out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/shm_layout.hpp"

namespace edri::transport {

class ChannelProducer {
 public:
  ChannelProducer() = default;
  ChannelProducer(ChannelControl* control, std::byte* data, std::size_t ring_bytes);

  // Reserves room for one record of `n` payload bytes and returns where to
  // write it, or nullptr when the ring has no room (the consumer is then
  // asked to ring our doorbell when it frees space). Nothing is visible to
  // the consumer before commit().
  std::byte* reserve(std::size_t n, std::uint32_t tag = 0);
  void commit();

  // reserve + copy + commit.
  bool try_push(std::span<const std::byte> payload, std::uint32_t tag = 0);

  std::size_t max_record() const { return max_record_bytes(ring_bytes_); }
  std::size_t ring_bytes() const { return ring_bytes_; }
  // Bytes written and not yet consumed, as last seen (for metrics).
  std::uint64_t depth() const;

  // With the consumer dead: calls f(payload) for each record it never
  // took, those its successor will handle (from where the successor will
  // start, past a record the consumer died on, to the tail). Everything
  // before them the dead consumer took.
  template <class F>
  void for_each_untaken(F&& f) const;

  // Where the last record reserve() placed starts.
  std::uint64_t last_record() const { return last_record_; }
  // The payload of the record that starts at `position`, while the ring has
  // not been written over it since (only this producer writes it: records
  // are overwritten a whole ring later); empty when it has been.
  std::span<const std::byte> record_at(std::uint64_t position) const;

 private:
  ChannelControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t ring_bytes_ = 0;
  std::uint64_t tail_ = 0;
  std::uint64_t cached_head_ = 0;
  std::size_t reserved_ = 0;  // bytes of the reserved, uncommitted record
  std::uint64_t last_record_ = 0;
};

// The header of the record at position `h`. A wrap marker there moves `h`
// to the ring's start, where the next record is.
struct RecordHeader {
  std::uint32_t length;
  std::uint32_t tag;
  std::size_t offset;  // of the record in the ring
};
inline RecordHeader record_header(const std::byte* data, std::size_t ring_bytes, std::uint64_t& h) {
  std::size_t off = h & (ring_bytes - 1);
  std::uint32_t hdr[2];
  __builtin_memcpy(hdr, data + off, sizeof hdr);
  if (hdr[1] == kWrapTag) {
    h += ring_bytes - off;
    off = 0;
    __builtin_memcpy(hdr, data, sizeof hdr);
  }
  return {hdr[0], hdr[1], off};
}

// Where a consumer that starts now begins: the published head, or just past
// the record a dead predecessor was handling (`in_progress`), which is not
// handled twice.
std::uint64_t resume_position(const ChannelControl& control, const std::byte* data, std::size_t ring_bytes);

class ChannelConsumer {
 public:
  ChannelConsumer() = default;
  ChannelConsumer(ChannelControl* control, std::byte* data, std::size_t ring_bytes);

  struct DrainResult {
    std::size_t records = 0;
    bool wake_producer = false;  // the producer waits for room: ring its doorbell
    bool corrupt = false;        // a record header was invalid; the rest was dropped
  };

  // Calls f(std::span<const std::byte> payload, std::uint32_t tag) for each
  // available record, at most max_records, then publishes the new head once.
  // The span is valid only during the call.
  template <class F>
  DrainResult drain(F&& f, std::size_t max_records = SIZE_MAX);

  bool empty() const;
  // True when this consumer started past a record its predecessor died on.
  bool skipped_poison() const { return skipped_poison_; }

 private:
  DrainResult finish(std::uint64_t new_head, std::size_t records, bool corrupt);

  ChannelControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t ring_bytes_ = 0;
  std::uint64_t head_ = 0;
  bool skipped_poison_ = false;
};

template <class F>
ChannelConsumer::DrainResult ChannelConsumer::drain(F&& f, std::size_t max_records) {
  const std::uint64_t tail = control_->tail.load(std::memory_order_acquire);
  const std::size_t limit = max_record_bytes(ring_bytes_);
  std::uint64_t h = head_;
  std::size_t n = 0;
  bool corrupt = false;
  while (h != tail && n < max_records) {
    const RecordHeader hdr = record_header(data_, ring_bytes_, h);
    const std::size_t off = hdr.offset;
    const std::size_t len = hdr.length;
    const std::size_t step = align_up(kRecordHeaderBytes + len, kRecordAlign);
    if (len > limit || off + step > ring_bytes_ || h + step > tail) {
      corrupt = true;
      h = tail;
      break;
    }
    control_->in_progress.store(h + 1, std::memory_order_relaxed);
    f(std::span<const std::byte>(data_ + off + kRecordHeaderBytes, len), hdr.tag);
    h += step;
    ++n;
  }
  return finish(h, n, corrupt);
}

template <class F>
void ChannelProducer::for_each_untaken(F&& f) const {
  std::uint64_t h = resume_position(*control_, data_, ring_bytes_);
  while (h < tail_) {
    const RecordHeader hdr = record_header(data_, ring_bytes_, h);
    const std::size_t step = align_up(kRecordHeaderBytes + hdr.length, kRecordAlign);
    if (hdr.length > max_record() || hdr.offset + step > ring_bytes_) return;  // we wrote it: cannot happen
    f(std::span<const std::byte>(data_ + hdr.offset + kRecordHeaderBytes, hdr.length));
    h += step;
  }
}

}  // namespace edri::transport
