// Envelopes as they cross between instances (cluster/wire.hpp): bodies
// inline on the way out, back into the blob area on the way in.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cluster/wire.hpp"
#include "envelope/envelope.hpp"
#include "transport/blob_arena.hpp"
#include "transport/outbox.hpp"

namespace edri::cluster {

// A message for NATS, or why there is none.
struct WireMessage {
  std::vector<std::byte> bytes;  // a Frame, then the envelope
  int status = 0;                // not 0: it cannot cross, answer this
  std::string problem;
};

// `record` (an envelope from the router) as a message of `kind`, with
// `header` in place of its own. The body crosses inline: a Blob section's
// bytes (the blob is claimed, so freed here), or the file a File or an
// Upload section names. Past `max_bytes` in all: status 413 (a request) or
// 502 (an answer), never a cut body.
WireMessage to_wire(FrameKind kind, std::uint32_t deadline_ms, const envelope::EnvelopeHeader& header,
                    std::span<const std::byte> record, transport::BlobArena* blobs, std::size_t max_bytes);

// A problem answer for `request`, as a message (the serving side's own
// refusals).
WireMessage problem_message(const envelope::EnvelopeHeader& request, int status, std::string_view detail);

// A message from NATS, checked: its frame and its envelope (views into
// `data`). False when it is not one of ours, or malformed.
bool from_wire(std::span<const std::byte> data, Frame& frame, envelope::EnvelopeView& view);

// Queues `view` with `header` into `out` as a local record: a body of
// `threshold` bytes or more goes to the blob area (where the process has
// one and it has room), the rest inline. False when it was refused.
bool send_local(transport::Outbox& out, const envelope::EnvelopeHeader& header, const envelope::EnvelopeView& view,
                transport::BlobArena* blobs, std::size_t threshold, transport::Admission admission);

}  // namespace edri::cluster
