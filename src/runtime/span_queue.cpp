#include "runtime/span_queue.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

namespace edri {

namespace {

// A span's fixed fields, then its name's bytes, then per attribute an
// EncodedAttribute and its text's bytes; copied with memcpy (the buffer
// keeps no alignment).
struct EncodedSpan {
  TraceContext context;
  SpanId parent;
  std::uint64_t start_ns, end_ns;
  std::uint16_t name_size;
  SpanKind kind;
  bool error;
  std::uint8_t attributes;
};
struct EncodedAttribute {
  const char* key;  // static: valid in every thread of the process
  std::int64_t number;
  std::uint32_t text_size;
  bool is_number;
};
static_assert(std::is_trivially_copyable_v<EncodedSpan> && std::is_trivially_copyable_v<EncodedAttribute>);

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T take(const char*& at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  at += sizeof value;
  return value;
}

}  // namespace

void SpanQueue::push(const SpanView& s) {
  const std::size_t name = std::min<std::size_t>(s.name.size(), std::numeric_limits<std::uint16_t>::max());
  const std::size_t attributes = std::min<std::size_t>(s.attributes.size(), 255);
  put(bytes_, EncodedSpan{s.context, s.parent, s.start_ns, s.end_ns, static_cast<std::uint16_t>(name), s.kind, s.error,
                          static_cast<std::uint8_t>(attributes)});
  bytes_.append(s.name.substr(0, name));
  for (std::size_t i = 0; i < attributes; ++i) {
    const SpanView::Attribute& a = s.attributes[i];
    const std::size_t text = std::min<std::size_t>(a.text.size(), std::numeric_limits<std::uint32_t>::max());
    put(bytes_, EncodedAttribute{a.key, a.number, static_cast<std::uint32_t>(text), a.is_number});
    bytes_.append(a.text.substr(0, text));
  }
  ++count_;
}

SpanView view_of(const SpanRecord& s, std::vector<SpanView::Attribute>& attributes) {
  attributes.clear();
  for (const auto& a : s.attributes) attributes.push_back({a.key, a.text, a.number, a.is_number});
  return SpanView{s.context, s.parent, s.kind, s.error, s.start_ns, s.end_ns, s.name, attributes};
}

void SpanQueue::push(const SpanRecord& s) {
  std::vector<SpanView::Attribute> attributes;
  push(view_of(s, attributes));
}

void SpanQueue::clear() {
  bytes_.clear();
  count_ = 0;
}

void SpanQueue::swap(SpanQueue& other) noexcept {
  bytes_.swap(other.bytes_);
  std::swap(count_, other.count_);
}

void SpanQueue::for_each(const std::function<void(const SpanView&)>& visit) const {
  std::vector<SpanView::Attribute> attributes;
  for (const char* at = bytes_.data(); at != bytes_.data() + bytes_.size();) {
    const auto s = take<EncodedSpan>(at);
    const std::string_view name(at, s.name_size);
    at += s.name_size;
    attributes.clear();
    for (std::uint8_t i = 0; i < s.attributes; ++i) {
      const auto a = take<EncodedAttribute>(at);
      attributes.push_back({a.key, std::string_view(at, a.text_size), a.number, a.is_number});
      at += a.text_size;
    }
    visit(SpanView{s.context, s.parent, s.kind, s.error, s.start_ns, s.end_ns, name, attributes});
  }
}

}  // namespace edri
