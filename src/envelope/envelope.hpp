// Envelope: the binary form of an event on the wire between edri processes
// (contract, versioned).
//
//   EnvelopeHeader (88 bytes, little-endian, fixed)
//   section_count x { SectionHeader (8 bytes), payload }
//
// Broker and router read and patch the header only; sections are parsed
// where they are needed (listener, manager). Key/value sections (path
// parameters, headers) are a sequence of { u16 key_len, key, u32 value_len,
// value }.
//
// decode() accepts any byte string and answers malformed input with an
// error code: it never reads outside the given span.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>

namespace edri::envelope {

inline constexpr std::uint32_t kMagic = 0x49524445;  // "EDRI"
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kMaxSections = 16;
inline constexpr std::size_t kStampCount = 8;

enum class Kind : std::uint8_t { Request = 1, Response = 2, Notification = 3, Control = 4 };

enum Flags : std::uint16_t {
  kFlagTiming = 1u << 0,  // hops record their stamps
  // Request: the asker takes no streamed answer (a WebSocket command, a
  // manager's request): a Response::stream is collected into one body.
  kFlagWholeAnswer = 1u << 1,
  // Response: a piece of a streamed body after its head (a Body or Blob
  // section, possibly empty). Hops forward it like any response.
  kFlagStreamPiece = 1u << 2,
  // With kFlagStreamPiece: the last piece.
  kFlagStreamEnd = 1u << 3,
  // With kFlagStreamPiece: the producer failed; the client's response is
  // cut short.
  kFlagStreamAbort = 1u << 4,
  // On a request: its event is replayed (Registry::replay). When the
  // manager that took it dies unanswered, the router hands it once more to
  // the successor instead of answering 503.
  kFlagReplay = 1u << 5,
  // On a notification: it came from another instance through the switch
  // (docs/cluster.md), and request_id says where it goes here: the id of
  // the one domain it is for (event_type_id of its name), or 0 for the
  // WebSocket clients subscribed to it only. Never sent back to the switch.
  kFlagFromCluster = 1u << 6,
  // On a response: a hop's problem (send_problem), not a handler's answer.
  // A gRPC Call ends with a gRPC status for these (docs/grpc.md).
  kFlagProblem = 1u << 7,
  // On a client's request: its listener sent it straight to its manager
  // (docs/decisions/0027), telling the router by a notice (kControlRouted).
  // The router's death loses nothing of it: its answer and the books of
  // its crash answer do not pass there.
  kFlagDirect = 1u << 8,
  // On a client's HTTP request, with EDRI_COMPRESSION on: its listener read
  // Accept-Encoding (a compressible answer varies on it), and the coding
  // it prefers of those the server makes, if any. The manager compresses
  // the answer with that coding (docs/compression.md).
  kFlagCodingAsked = 1u << 9,
  kFlagCodingGzip = 1u << 10,
  kFlagCodingBrotli = 1u << 11,
};

// Hop stamps, nanoseconds after t0_ns, written when kFlagTiming is set.
enum Stamp : std::uint8_t {
  kStampBrokerIn = 0,
  kStampRouterIn = 1,
  kStampManagerIn = 2,
  kStampManagerOut = 3,
  kStampRouterOut = 4,
  kStampBrokerOut = 5,
};

enum class SectionType : std::uint16_t {
  PathParams = 1,   // key/value
  Query = 2,        // raw query string
  Headers = 3,      // key/value
  Body = 4,         // raw bytes
  ContentType = 5,  // response content type
  Control = 6,      // control payload (process-internal)
  QueryParams = 7,  // key/value: declared query fields, decoded, defaults applied
  Cookies = 8,      // key/value: declared cookies
  File = 9,         // response: path of a file the listener sends as the body
  Blob = 10,        // the body, in the blob area: a transport::BlobHandle
  Stream = 11,      // response: the head of a streamed body (a StreamHead)
  BodyType = 12,    // request: the body's Content-Type
  Upload = 13,      // request: the body is in this file (u64 size, then the path)
  Targets = 14,     // notification to a listener: the connections it goes to (PushTarget each)
  Deadline = 15,    // request: u64, the nanoseconds after t0_ns the client waits (gRPC grpc-timeout)
  Client = 16,      // request: the client's address, text (Request::client_address)
  Protocol = 17,    // request: the protocol the client spoke, text (Request::protocol)
  Principal = 18,   // request: who the caller is, as middleware named it
  Claims = 19,      // request: the principal's claims, JSON text
  // Request: the W3C `traceparent` (55 characters) of the span that sent
  // it, then, after a '\n', the client's `tracestate` where it sent one
  // (runtime/trace_context.hpp). Only where tracing is on.
  Trace = 20,
};

// The Stream section of a streamed response's head. Its pieces follow as
// responses with kFlagStreamPiece and the same request id; the listener
// grants `window` bytes at first, then the bytes of each piece the client
// has taken (kControlStreamCredit, addressed to `manager_slot`).
struct StreamHead {
  std::uint16_t manager_slot;
  std::uint16_t reserved;
  std::uint32_t window;
  std::int64_t length;  // Content-Length, or -1: chunked
};
static_assert(sizeof(StreamHead) == 16);

// One WebSocket connection of a listener that a push goes to (a Targets
// section, or the payload of kControlPushClose, is an array of them).
struct PushTarget {
  std::uint32_t connection;
  std::uint32_t generation;
};
static_assert(sizeof(PushTarget) == 8);

struct EnvelopeHeader {
  std::uint32_t magic;
  std::uint8_t version;
  std::uint8_t kind;
  std::uint16_t flags;
  std::uint64_t event_type;  // fnv1a64 of the event name
  std::uint64_t request_id;  // unique per listener (listener index in the top 16 bits)
  std::uint32_t origin_connection;
  std::uint32_t origin_stream;
  std::uint16_t origin_listener;
  std::uint16_t status;
  std::uint16_t reply_to;  // process slot the response goes back to (0: the broker)
  std::uint16_t section_count;
  std::uint32_t total_length;       // header + sections, bytes
  std::uint32_t origin_generation;  // listener's connection generation
  std::uint64_t t0_ns;              // CLOCK_MONOTONIC when the listener dispatched (with request_id: Request::id)
  std::array<std::uint32_t, kStampCount> stamps;
};
static_assert(sizeof(EnvelopeHeader) == 88);

struct SectionHeader {
  std::uint16_t type;
  std::uint16_t reserved;
  std::uint32_t length;
};
static_assert(sizeof(SectionHeader) == 8);

enum class DecodeError : std::uint8_t {
  None = 0,
  Truncated,  // shorter than its header or its declared length
  BadMagic,
  BadVersion,
  BadKind,
  LengthMismatch,  // total_length differs from the bytes given
  TooManySections,
  SectionOverflow,  // a section runs past the end
  TrailingBytes,    // bytes after the last declared section
  DuplicateSection,
};

const char* to_string(DecodeError e);

struct Section {
  SectionType type;
  std::span<const std::byte> data;
};

// Sixteen slots of which a user sets the first few and reads only those:
// never zeroed or constructed as a whole (an envelope pays for the sections
// it has, not for sixteen). T must be trivially copyable.
template <class T>
union SectionSlots {
  SectionSlots() {}
  T& operator[](std::size_t i) { return at[i]; }
  const T& operator[](std::size_t i) const { return at[i]; }
  T at[kMaxSections];
};

// A decoded envelope: a copy of the header and views into the input.
struct EnvelopeView {
  EnvelopeHeader header{};
  SectionSlots<Section> sections;  // the first section_count, set by decode()
  std::size_t section_count = 0;

  // The section of the given type, or an empty span.
  std::span<const std::byte> section(SectionType t) const {
    for (std::size_t i = 0; i < section_count; ++i)
      if (sections[i].type == t) return sections[i].data;
    return {};
  }
  bool has(SectionType t) const {
    for (std::size_t i = 0; i < section_count; ++i)
      if (sections[i].type == t) return true;
    return false;
  }
  std::string_view text(SectionType t) const {
    auto s = section(t);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }
};

[[nodiscard]] DecodeError decode(std::span<const std::byte> in, EnvelopeView& out);

// Reads only the fixed header (broker, router). Checks magic, version and
// that the length matches.
[[nodiscard]] DecodeError peek_header(std::span<const std::byte> in, EnvelopeHeader& out);

// Iterates a key/value section. next() returns false at the end or on a
// malformed entry; ok() tells which.
class KeyValueReader {
 public:
  explicit KeyValueReader(std::span<const std::byte> data) : data_(data) {}
  bool next(std::string_view& key, std::string_view& value);
  bool ok() const { return ok_; }

 private:
  std::span<const std::byte> data_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// Builds an envelope in two passes: add sections (sizes only are kept),
// then size() to reserve room and write() into it. Section payloads are
// written by the caller-supplied spans or key/value lists.
class EnvelopeWriter {
 public:
  explicit EnvelopeWriter(const EnvelopeHeader& header) : header_(header) {}

  EnvelopeWriter& raw(SectionType type, std::span<const std::byte> data);
  EnvelopeWriter& text(SectionType type, std::string_view data) {
    return raw(type, std::as_bytes(std::span<const char>(data.data(), data.size())));
  }
  // A key/value section from pairs (anything with .first/.second or
  // .name/.value convertible to string_view) given as a span of entries.
  template <class Range, class Key, class Value>
  EnvelopeWriter& key_values(SectionType type, const Range& range, Key key, Value value);

  std::size_t size() const { return size_; }
  const EnvelopeHeader& header() const { return header_; }
  EnvelopeHeader& header() { return header_; }  // its flags may change until written
  // Writes exactly size() bytes to out.
  void write(std::byte* out) const;

 private:
  struct Pending {
    SectionType type;
    std::span<const std::byte> raw;
    const void* kv_range = nullptr;
    void (*kv_write)(const void*, std::byte*) = nullptr;
    std::uint32_t length = 0;
  };
  EnvelopeHeader header_;
  SectionSlots<Pending> pending_;  // the first count_
  std::size_t count_ = 0;
  std::size_t size_ = sizeof(EnvelopeHeader);
};

inline std::size_t key_value_entry_size(std::string_view k, std::string_view v) { return 2 + k.size() + 4 + v.size(); }

inline std::byte* write_key_value(std::byte* p, std::string_view k, std::string_view v) {
  const auto kl = static_cast<std::uint16_t>(k.size());
  const auto vl = static_cast<std::uint32_t>(v.size());
  std::memcpy(p, &kl, 2);
  std::memcpy(p + 2, k.data(), k.size());
  p += 2 + k.size();
  std::memcpy(p, &vl, 4);
  std::memcpy(p + 4, v.data(), v.size());
  return p + 4 + v.size();
}

template <class Range, class Key, class Value>
EnvelopeWriter& EnvelopeWriter::key_values(SectionType type, const Range& range, Key, Value) {
  std::size_t len = 0;
  for (const auto& e : range) len += key_value_entry_size(Key{}(e), Value{}(e));
  if (count_ == kMaxSections) throw std::length_error("envelope: too many sections");
  Pending& p = pending_[count_++];
  p.type = type;
  p.raw = {};
  p.kv_range = &range;
  p.kv_write = [](const void* r, std::byte* out) {
    for (const auto& e : *static_cast<const Range*>(r)) out = write_key_value(out, Key{}(e), Value{}(e));
  };
  p.length = static_cast<std::uint32_t>(len);
  size_ += sizeof(SectionHeader) + len;
  return *this;
}

// Key and value of a std::pair<std::string, std::string>, for key_values().
struct StringPairKey {
  template <class P>
  std::string_view operator()(const P& p) const {
    return p.first;
  }
};
struct StringPairValue {
  template <class P>
  std::string_view operator()(const P& p) const {
    return p.second;
  }
};
// Name and value of a path parameter (edri::Param), for key_values().
struct ParamKey {
  template <class P>
  std::string_view operator()(const P& p) const {
    return p.name;
  }
};
struct ParamValue {
  template <class P>
  std::string_view operator()(const P& p) const {
    return p.value;
  }
};

// fnv1a-64: the event type id of an event name, stable across processes.
constexpr std::uint64_t event_type_id(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

inline EnvelopeHeader make_header(Kind kind, std::uint64_t event_type, std::uint64_t request_id) {
  EnvelopeHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.kind = static_cast<std::uint8_t>(kind);
  h.event_type = event_type;
  h.request_id = request_id;
  return h;
}

// Header field access in place, for hops that patch a record they forward.
inline EnvelopeHeader* header_at(std::byte* record) { return reinterpret_cast<EnvelopeHeader*>(record); }

}  // namespace edri::envelope
