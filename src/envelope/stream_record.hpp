// The payload of every live-stream control (control.hpp, codes 32..39):
// the stream's name, two revisions, the publish time and JSON text (a
// patch or a state), in one fixed layout so that one reader serves all.
//
//   u64 from, u64 revision, i64 ts (microseconds since the Unix epoch),
//   u16 name length, name, then the JSON text to the end
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace edri::envelope {

struct StreamRecord {
  std::uint64_t from = 0;
  std::uint64_t revision = 0;
  std::int64_t ts = 0;
  std::string_view name;
  std::string_view json;
};

inline constexpr std::size_t kStreamRecordFixed = 8 + 8 + 8 + 2;

inline std::string encode_stream_record(const StreamRecord& r) {
  std::string out(kStreamRecordFixed, '\0');
  std::memcpy(out.data(), &r.from, 8);
  std::memcpy(out.data() + 8, &r.revision, 8);
  std::memcpy(out.data() + 16, &r.ts, 8);
  const auto n = static_cast<std::uint16_t>(r.name.size());
  std::memcpy(out.data() + 24, &n, 2);
  out.append(r.name.substr(0, n));
  out.append(r.json);
  return out;
}

// nullopt for a payload too short for what it says it holds.
inline std::optional<StreamRecord> decode_stream_record(std::span<const std::byte> p) {
  if (p.size() < kStreamRecordFixed) return std::nullopt;
  StreamRecord r;
  std::uint16_t n = 0;
  std::memcpy(&r.from, p.data(), 8);
  std::memcpy(&r.revision, p.data() + 8, 8);
  std::memcpy(&r.ts, p.data() + 16, 8);
  std::memcpy(&n, p.data() + 24, 2);
  if (p.size() < kStreamRecordFixed + n) return std::nullopt;
  const char* at = reinterpret_cast<const char*>(p.data()) + kStreamRecordFixed;
  r.name = std::string_view(at, n);
  r.json = std::string_view(at + n, p.size() - kStreamRecordFixed - n);
  return r;
}

}  // namespace edri::envelope
