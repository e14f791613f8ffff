// Attaching a body to an envelope: the one rule for where its bytes travel.
#pragma once

#include <cstddef>
#include <string_view>

#include "envelope/envelope.hpp"
#include "transport/blob_arena.hpp"

namespace edri::envelope {

// A body of `threshold` bytes or more is written once into the blob area
// (when the process has one), held by `blob`, and the record carries its
// handle (transport/blob_layout.hpp); a smaller one travels inline, an
// empty one not at all. `blob` must outlive the writing of the record (the
// record points at its handle); once the record is sent the caller take()s
// it, and the reader frees it. False when the body belonged in the blob
// area and the area had no room: nothing was written, and the caller
// refuses, or attaches it inline where a record holds it.
[[nodiscard]] inline bool attach_body(EnvelopeWriter& w, transport::BlobLease& blob, transport::BlobArena* blobs,
                                      std::size_t threshold, std::string_view bytes) {
  if (blobs && bytes.size() >= threshold) {
    blob = transport::BlobLease(blobs, blobs->store(bytes));
    if (!blob) return false;
    w.raw(SectionType::Blob, transport::BlobArena::section_of(blob.handle()));
  } else if (!bytes.empty()) {
    w.text(SectionType::Body, bytes);
  }
  return true;
}

}  // namespace edri::envelope
