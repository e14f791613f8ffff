// SpanQueue: finished spans waiting for the exporter's thread, as bytes
// in one buffer (each span's fixed fields, then its name and attributes'
// texts). A role's loop encodes a span into it and the thread reads the
// spans back from it, so no span's memory is allocated by one thread and
// freed by the other: that made the two take turns on malloc's lock, the
// most of what a traced request cost the loop (docs/decisions/0048).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/trace_context.hpp"

namespace edri {

// OTLP's span kinds.
enum class SpanKind : std::uint8_t { Internal = 1, Server = 2, Client = 3, Producer = 4, Consumer = 5 };

// A string or an integer, by a static key (a semantic-convention name).
struct SpanAttribute {
  SpanAttribute(const char* k, std::string t) : key(k), text(std::move(t)) {}
  SpanAttribute(const char* k, std::int64_t n) : key(k), number(n), is_number(true) {}
  const char* key;
  std::string text;
  std::int64_t number = 0;
  bool is_number = false;
};

struct SpanRecord {
  TraceContext context;  // its trace, its own span id and flags
  SpanId parent{};       // all zeros: the trace's root
  SpanKind kind = SpanKind::Internal;
  std::string name;
  std::uint64_t start_ns = 0;  // Unix time
  std::uint64_t end_ns = 0;
  bool error = false;  // OTLP status ERROR (else UNSET)
  std::vector<SpanAttribute> attributes;
};

// A span whose texts are elsewhere: one read back from a queue (they
// point into it), or one a loop writes from what it holds (no copies).
struct SpanView {
  struct Attribute {
    const char* key;
    std::string_view text;
    std::int64_t number;
    bool is_number;
    static Attribute of_text(const char* key, std::string_view text) { return {key, text, 0, false}; }
    static Attribute of_number(const char* key, std::int64_t n) { return {key, {}, n, true}; }
  };
  TraceContext context;
  SpanId parent;
  SpanKind kind;
  bool error;
  std::uint64_t start_ns, end_ns;
  std::string_view name;
  std::span<const Attribute> attributes;
};

// `span` as a view, its attributes' in `attributes`.
SpanView view_of(const SpanRecord& span, std::vector<SpanView::Attribute>& attributes);

class SpanQueue {
 public:
  // Longer names are cut; attributes past the 255th are left out.
  void push(const SpanView& span);
  void push(const SpanRecord& span);
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void clear();  // keeps the buffer's room, for the next spans
  void swap(SpanQueue& other) noexcept;
  // `visit` for each span, in the order pushed.
  void for_each(const std::function<void(const SpanView&)>& visit) const;

 private:
  std::string bytes_;
  std::size_t count_ = 0;
};

}  // namespace edri
