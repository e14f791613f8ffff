// One publish to a live stream: the checks and the merge that whoever
// orders the stream applies (the broker on one instance, the switch when
// instances are joined over NATS), so both refuse the same patches alike.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include <edri/live_stream.hpp>

namespace edri::envelope {

struct PatchRefused {
  int status;
  std::string detail;
};

// A stream's state as whoever orders it keeps it (the broker, the switch),
// with an upper bound of its size as JSON, so that a publish costs its
// patch, not the state: no copy and no serialization of the state while
// the bound says it fits.
struct StreamState {
  static constexpr std::size_t kUnknown = std::numeric_limits<std::size_t>::max() / 2;
  nlohmann::json value = nlohmann::json::object();
  std::size_t bound = 2;  // >= value.dump().size()

  // A state from elsewhere (a listener's recovery, the switch, the
  // bucket): its size is learned at the next publish.
  void replace(nlohmann::json v) {
    value = std::move(v);
    bound = kUnknown;
  }
};

struct PatchApplied {
  nlohmann::json patch;
  std::string text;  // patch.dump()
};

// The merge patch `patch_text` (RFC 7386) applied to `state` in place, or
// why not (`state` then unchanged): 422 for a bad name or a patch that is
// not an object, 413 for a patch or a merged state past `max_bytes` as
// JSON.
//
// Why the bound holds: merging a patch whose dump is P bytes grows the
// state's dump by less than P. Each member "k":v of the patch either
// removes k (v null: no growth), or sets or merges k to at most v without
// its nulls: at most `"k":` + dump(v) and a comma, which is what the
// member takes in P beside the braces; a nested merge obeys the same rule.
// Only where the bound says the state may pass `max_bytes` is the merge
// made on a copy and the copy serialized, the bound exact again.
inline std::variant<PatchApplied, PatchRefused> apply_stream_patch(std::string_view name, StreamState& state,
                                                                   std::string_view patch_text, std::size_t max_bytes) {
  if (!is_valid_stream_name(name)) return PatchRefused{422, "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -"};
  if (patch_text.size() > max_bytes) return PatchRefused{413, "the patch is larger than EDRI_STREAM_MAX_BYTES"};
  auto patch = nlohmann::json::parse(patch_text, nullptr, false);
  if (patch.is_discarded() || !patch.is_object())
    return PatchRefused{422, "a stream's patch must be a JSON object (RFC 7386)"};
  std::string text = patch.dump();
  if (state.bound + text.size() <= max_bytes) {
    state.value.merge_patch(patch);
    state.bound += text.size();
    return PatchApplied{std::move(patch), std::move(text)};
  }
  nlohmann::json next = state.value;
  next.merge_patch(patch);
  const std::size_t exact = next.dump().size();
  if (exact > max_bytes) return PatchRefused{413, "the stream's state would be larger than EDRI_STREAM_MAX_BYTES"};
  state.value = std::move(next);
  state.bound = exact;
  return PatchApplied{std::move(patch), std::move(text)};
}

}  // namespace edri::envelope
