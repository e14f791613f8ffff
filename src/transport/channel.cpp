#include "transport/channel.hpp"

#include <atomic>
#include <cstring>

namespace edri::transport {

ChannelProducer::ChannelProducer(ChannelControl* control, std::byte* data, std::size_t ring_bytes)
    : control_(control), data_(data), ring_bytes_(ring_bytes) {
  // A restarted producer continues where its predecessor published.
  tail_ = control_->tail.load(std::memory_order_relaxed);
  cached_head_ = control_->head.load(std::memory_order_acquire);
}

std::byte* ChannelProducer::reserve(std::size_t n, std::uint32_t tag) {
  if (n > max_record()) return nullptr;
  const std::size_t need = align_up(kRecordHeaderBytes + n, kRecordAlign);
  const std::size_t off = tail_ & (ring_bytes_ - 1);
  const std::size_t contiguous = ring_bytes_ - off;
  const bool wrap = need > contiguous;
  const std::size_t total = wrap ? contiguous + need : need;

  if (ring_bytes_ - (tail_ - cached_head_) < total) {
    cached_head_ = control_->head.load(std::memory_order_acquire);
    if (ring_bytes_ - (tail_ - cached_head_) < total) {
      // Ask the consumer to wake us when it frees room, then look once more
      // so that a consumer that drained in between is not missed.
      control_->producer_waiting.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      cached_head_ = control_->head.load(std::memory_order_acquire);
      if (ring_bytes_ - (tail_ - cached_head_) < total) return nullptr;
      control_->producer_waiting.store(0, std::memory_order_relaxed);
    }
  }

  std::size_t at = off;
  if (wrap) {
    const std::uint32_t marker[2] = {0, kWrapTag};
    std::memcpy(data_ + off, marker, sizeof marker);
    tail_ += contiguous;
    at = 0;
  }
  const std::uint32_t hdr[2] = {static_cast<std::uint32_t>(n), tag};
  std::memcpy(data_ + at, hdr, sizeof hdr);
  reserved_ = need;
  last_record_ = tail_;
  return data_ + at + kRecordHeaderBytes;
}

void ChannelProducer::commit() {
  tail_ += reserved_;
  reserved_ = 0;
  control_->tail.store(tail_, std::memory_order_release);
}

bool ChannelProducer::try_push(std::span<const std::byte> payload, std::uint32_t tag) {
  std::byte* p = reserve(payload.size(), tag);
  if (!p) return false;
  if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
  commit();
  return true;
}

std::span<const std::byte> ChannelProducer::record_at(std::uint64_t position) const {
  // Written over once the tail (with a reservation in progress) passed the
  // same offset a ring later.
  if (position >= tail_ || tail_ + reserved_ > position + ring_bytes_) return {};
  std::uint32_t hdr[2];
  std::memcpy(hdr, data_ + (position & (ring_bytes_ - 1)), sizeof hdr);
  if (hdr[1] == kWrapTag || hdr[0] > max_record()) return {};
  return {data_ + (position & (ring_bytes_ - 1)) + kRecordHeaderBytes, hdr[0]};
}

std::uint64_t ChannelProducer::depth() const { return tail_ - control_->head.load(std::memory_order_relaxed); }

ChannelConsumer::ChannelConsumer(ChannelControl* control, std::byte* data, std::size_t ring_bytes)
    : control_(control), data_(data), ring_bytes_(ring_bytes) {
  head_ = control_->head.load(std::memory_order_relaxed);
  const std::uint64_t start = resume_position(*control_, data_, ring_bytes_);
  if (start == head_) return;
  finish(start, 0, false);
  skipped_poison_ = true;
}

std::uint64_t resume_position(const ChannelControl& control, const std::byte* data, std::size_t ring_bytes) {
  const std::uint64_t head = control.head.load(std::memory_order_acquire);
  // A predecessor that died while handling a record left its position: the
  // records of its batch before it were handled, that one killed it. Start
  // after it.
  const std::uint64_t ip = control.in_progress.load(std::memory_order_relaxed);
  const std::uint64_t tail = control.tail.load(std::memory_order_acquire);
  if (ip == 0 || ip - 1 < head || ip - 1 >= tail) return head;
  const std::uint64_t at = ip - 1;
  std::uint32_t hdr[2];
  std::memcpy(hdr, data + (at & (ring_bytes - 1)), sizeof hdr);
  const std::uint64_t step = align_up(kRecordHeaderBytes + hdr[0], kRecordAlign);
  if (hdr[1] == kWrapTag || at + step > tail) return head;  // not a record start: leave it
  return at + step;
}

bool ChannelConsumer::empty() const { return control_->tail.load(std::memory_order_acquire) == head_; }

ChannelConsumer::DrainResult ChannelConsumer::finish(std::uint64_t new_head, std::size_t records, bool corrupt) {
  DrainResult r{records, false, corrupt};
  if (new_head == head_) return r;
  head_ = new_head;
  control_->head.store(head_, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (control_->producer_waiting.load(std::memory_order_relaxed) &&
      control_->producer_waiting.exchange(0, std::memory_order_acq_rel))
    r.wake_producer = true;
  return r;
}

}  // namespace edri::transport
