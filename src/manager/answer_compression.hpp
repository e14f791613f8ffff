// A handler's answer compressed in the manager that made it, with the
// coding its client's listener chose from Accept-Encoding (the request's
// kFlagCoding* flags): the listener, which every client shares, only
// reads the header (docs/compression.md, docs/decisions/0034).
#pragma once

#include <memory>

#include <edri/response.hpp>

#include "envelope/envelope.hpp"
#include "http/content_coding.hpp"
#include "runtime/config.hpp"

namespace edri::manager {

// Compresses a body of bytes in place and says so in its headers, when
// the answer qualifies: a compressible type, not encoded by the handler,
// not a 204, 206 or 304, at least EDRI_COMPRESSION_MIN_SIZE bytes, and
// smaller for it. Adds Vary: Accept-Encoding wherever the coding depended
// on the request.
void compress_answer(const Config& config, const envelope::EnvelopeHeader& request, Response& resp);

// For a streamed answer's head: the encoder its pieces go through (null:
// they go as they are), its headers set as compress_answer sets them. A
// stream of unknown length counts as large enough.
std::unique_ptr<http::Encoder> stream_encoder(const Config& config, const envelope::EnvelopeHeader& request,
                                              Response& resp);

}  // namespace edri::manager
