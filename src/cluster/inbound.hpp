// What the switch reads from NATS as JSON, checked before anything is built
// from it: hellos, the values of the stream bucket, and the JSON inside
// requests and answers (which are binary frames, taken apart by
// for_each_entry).
//
// Whoever can publish on the app's subjects, or write to its bucket, can
// send anything: a hello nested 100,000 levels deep, a stream state of
// 900 KB, garbage by the thousand. nlohmann parses any depth without
// recursion, but dump(), copies and == recurse once per level and overflow
// the stack (edri/json_depth.hpp). So each text is measured first, size
// then depth, with a loop and no allocation, and refused past its limit;
// only then parsed, and only its known fields are kept.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <edri/json_depth.hpp>
#include <nlohmann/json.hpp>

namespace edri::cluster {

// ---- hellos ----

// A hello is {"id":..,"host":..,"pid":..,"domains":[..]} (and "bye"):
// depth 2. One level more leaves room for a field of a later version. A
// hello is edri's own small message, so it gets none of the room
// (kDefaultMaxJsonDepth) a client's JSON gets.
inline constexpr std::size_t kHelloMaxDepth = 3;
// It lists domain names: 64 KiB holds thousands.
inline constexpr std::size_t kHelloMaxBytes = 64u << 10;
// Ids are 16 hex digits; a longer one is no instance's.
inline constexpr std::size_t kInstanceIdMaxBytes = 64;

struct Hello {
  std::string id;
  std::string host;
  std::int64_t pid = 0;
  std::vector<std::string> domains;
  bool bye = false;
  bool draining = false;  // a generation a reload replaced, finishing what it holds
  // As /health lists it: the known fields only, whatever else came.
  nlohmann::json listed() const {
    nlohmann::json j{{"id", id}, {"host", host}, {"pid", pid}, {"domains", domains}};
    if (draining) j["draining"] = true;
    return j;
  }
};

// The hello `text` says, or nullopt when it is none.
inline std::optional<Hello> read_hello(std::string_view text) {
  if (text.size() > kHelloMaxBytes || json_nests_deeper_than(text, kHelloMaxDepth)) return std::nullopt;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  const auto id = j.find("id");
  if (id == j.end() || !id->is_string() || id->get_ref<const std::string&>().empty() ||
      id->get_ref<const std::string&>().size() > kInstanceIdMaxBytes)
    return std::nullopt;
  Hello h;
  h.id = id->get<std::string>();
  if (const auto bye = j.find("bye"); bye != j.end() && bye->is_boolean()) h.bye = bye->get<bool>();
  if (const auto d = j.find("draining"); d != j.end() && d->is_boolean()) h.draining = d->get<bool>();
  if (const auto host = j.find("host"); host != j.end() && host->is_string()) h.host = host->get<std::string>();
  if (const auto pid = j.find("pid"); pid != j.end() && pid->is_number_integer()) h.pid = pid->get<std::int64_t>();
  if (const auto domains = j.find("domains"); domains != j.end() && domains->is_array())
    for (const auto& d : *domains)
      if (d.is_string()) h.domains.push_back(d.get<std::string>());
  return h;
}

// ---- values of the stream bucket ----

// A stream's patches and state are a handler's JSON, which its manager
// serialized: the limit for JSON edri's own processes made
// (kJsonDepthCeiling) is theirs, and the ledger refuses a publish deeper
// than that, so it never writes what it would refuse to read. A
// bucket value holds them two levels down: {"patches":[patch],"state":..}.
inline constexpr std::size_t kStreamJsonMaxDepth = kJsonDepthCeiling;
inline constexpr std::size_t kStreamValueMaxDepth = kStreamJsonMaxDepth + 2;
// Revision numbers stay far from wrapping around (revision + patches).
inline constexpr std::uint64_t kMaxRevision = std::uint64_t{1} << 62;

// A value's revision: the stream went from `from` to `revision` by
// `patches`, and is `state` after them.
struct StoredRevision {
  std::uint64_t from = 0, revision = 0;
  std::int64_t ts = 0;
  nlohmann::json state;
};

// The most bytes a value this instance writes can take with `max_bytes`
// (EDRI_STREAM_MAX_BYTES): the state, at most max_bytes; the patches of
// one write, at most max_bytes of them (or one of max_bytes), each at
// least "{}" and a comma; and the numbers around them.
inline std::size_t stream_value_max_bytes(std::size_t max_bytes) { return 3 * max_bytes + 4096; }

namespace detail {

// {"revision":N,"from":M,"ts":T,"patches":[N-M objects],"state":{..}}, M < N.
inline bool is_revision(const nlohmann::json& v) {
  if (!v.is_object()) return false;
  const auto field = [&](const char* key) { return v.contains(key) ? &v[key] : nullptr; };
  const auto *revision = field("revision"), *from = field("from"), *ts = field("ts");
  const auto *patches = field("patches"), *state = field("state");
  if (!revision || !from || !ts || !patches || !state || !revision->is_number_unsigned() ||
      !from->is_number_unsigned() || !ts->is_number_integer() || !patches->is_array() || !state->is_object())
    return false;
  const auto n = revision->get<std::uint64_t>(), m = from->get<std::uint64_t>();
  if (m >= n || n > kMaxRevision || patches->size() != n - m) return false;
  for (const auto& p : *patches)
    if (!p.is_object()) return false;
  return true;
}

}  // namespace detail

// The revision a bucket value holds, or nullopt with `why` said. A value
// larger than this instance would write (`max_bytes`, as
// EDRI_STREAM_MAX_BYTES) is refused as a publish that large would be.
inline std::optional<StoredRevision> read_stream_value(std::string_view text, std::size_t max_bytes, std::string& why) {
  if (text.size() > stream_value_max_bytes(max_bytes)) {
    why = "larger than EDRI_STREAM_MAX_BYTES allows (" + std::to_string(text.size()) + " bytes)";
    return std::nullopt;
  }
  if (json_nests_deeper_than(text, kStreamValueMaxDepth)) {
    why = "nesting deeper than " + std::to_string(kStreamValueMaxDepth) + " levels";
    return std::nullopt;
  }
  auto v = nlohmann::json::parse(text, nullptr, false);
  if (!detail::is_revision(v)) {
    why = "no revision of edri's";
    return std::nullopt;
  }
  // The state alone within the limit, as a publish's merge measures it:
  // dumped, since its text as it came is no measure (spaces, escapes, and
  // numbers such as 1e15 that dump four times longer).
  if (v["state"].dump().size() > max_bytes) {
    why = "a state larger than EDRI_STREAM_MAX_BYTES";
    return std::nullopt;
  }
  return StoredRevision{v["from"].get<std::uint64_t>(), v["revision"].get<std::uint64_t>(), v["ts"].get<std::int64_t>(),
                        std::move(v["state"])};
}

// ---- bodies that cross ----

// Whether a body that came over NATS is JSON nesting deeper than the limit
// for JSON edri's processes made (kJsonDepthCeiling). A handler parses an
// answer to its ctx.request itself (Response::body_bytes), and the claims
// of a request as Request::claims() gives them, without measuring either:
// what another instance sends is measured here instead.
inline bool json_too_deep(std::string_view content_type, std::string_view body) {
  return content_type.find("json") != std::string_view::npos && json_nests_deeper_than(body, kJsonDepthCeiling);
}

// ---- logging what was refused ----

// One log line a second at most for each kind of garbage from NATS,
// however much comes: a flood of bad messages must not become a flood of
// lines (the disk, journald, the loop's time). The next line allowed says
// how many were not logged meanwhile. Safe from several threads.
class LogLimit {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogLimit(Clock::duration every = std::chrono::seconds(1)) : every_(every) {}

  // Whether to write a line now; if so, `unlogged` is how many were
  // counted and not written since the last line.
  bool allow(std::uint64_t& unlogged) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (said_ && now - last_ < every_) {
      ++unlogged_;
      return false;
    }
    said_ = true;
    last_ = now;
    unlogged = unlogged_;
    unlogged_ = 0;
    return true;
  }
  // For a periodic check where the garbage stopped: how many were not
  // logged, once the second since the last line has passed (0: nothing to say).
  std::uint64_t overdue() {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    if (unlogged_ == 0 || now - last_ < every_) return 0;
    last_ = now;
    return std::exchange(unlogged_, 0);
  }
  // "; N more like it ... were not logged" for a line allowed (N > 0).
  static std::string more(std::uint64_t unlogged) {
    return unlogged ? "; " + std::to_string(unlogged) + " more like it since the last such line were not logged" : "";
  }

 private:
  std::mutex mutex_;
  Clock::duration every_;
  Clock::time_point last_{};
  bool said_ = false;
  std::uint64_t unlogged_ = 0;
};

}  // namespace edri::cluster
