// Envelopes as they cross between instances (cluster/wire.hpp): bodies
// inline on the way out, back into the blob area on the way in.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cluster/wire.hpp"
#include "envelope/envelope.hpp"
#include "transport/blob_arena.hpp"
#include "transport/outbox.hpp"

namespace edri::cluster {

// A message for NATS being filled: a Frame, then entries.
class WireMessage {
 public:
  explicit WireMessage(FrameKind kind);
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return bytes_.size(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  // `record` (an envelope from the router) with `header` in place of its
  // own, as one more entry. The body crosses inline: a Blob section's
  // bytes (the blob is claimed, so freed here), or the file a File or an
  // Upload section names. Returns 0, or the status to answer instead when
  // it cannot cross, with `problem` saying why: past `max_bytes` for the
  // entry alone, 413 (a request) or 502 (an answer), never a cut body.
  int add(std::uint64_t id, std::uint32_t deadline_ms, const envelope::EnvelopeHeader& header,
          std::span<const std::byte> record, transport::BlobArena* blobs, std::size_t max_bytes, std::string& problem);
  // A problem answer for `request` as one more entry.
  void add_problem(std::uint64_t id, const envelope::EnvelopeHeader& request, int status, std::string_view detail);
  // Empties it for the next message of the same kind.
  void clear();
  // Where the last entry made the message too large to publish: takes it
  // out (clear(), then put_back() it into the next message).
  std::vector<std::byte> take_last();
  void put_back(std::span<const std::byte> entry);

 private:
  void add_entry(std::uint64_t id, std::uint32_t deadline_ms, const envelope::EnvelopeWriter& w);
  void set_count(std::uint32_t n);

  FrameKind kind_;
  std::vector<std::byte> bytes_;
  std::uint32_t count_ = 0;
  std::size_t last_at_ = 0;  // offset of the last entry
};

// One entry of a message from NATS: views into the message.
struct WireEntry {
  Entry entry;
  envelope::EnvelopeView view;
};

// Calls `f` for each entry of a message of `kind`. False when the message
// is not one of ours, or malformed (entries before the fault were handed
// out).
bool for_each_entry(std::span<const std::byte> data, FrameKind kind, const std::function<void(const WireEntry&)>& f);

// Queues `view` with `header` into `out` as a local record: a body of
// `threshold` bytes or more goes to the blob area (where the process has
// one and it has room), the rest inline. False when it was refused.
bool send_local(transport::Outbox& out, const envelope::EnvelopeHeader& header, const envelope::EnvelopeView& view,
                transport::BlobArena* blobs, std::size_t threshold, transport::Admission admission);

}  // namespace edri::cluster
