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

struct PatchMerged {
  nlohmann::json patch;
  nlohmann::json state;  // the state after the patch
};

inline constexpr const char* kStateTooLarge = "the stream's state would be larger than EDRI_STREAM_MAX_BYTES";

// The checks before any merge: the name, the patch's size, and the patch
// parsed (a JSON object), or why not.
inline std::variant<nlohmann::json, PatchRefused> parse_stream_patch(std::string_view name, std::string_view patch_text,
                                                                     std::size_t max_bytes) {
  if (!is_valid_stream_name(name)) return PatchRefused{422, "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -"};
  if (patch_text.size() > max_bytes) return PatchRefused{413, "the patch is larger than EDRI_STREAM_MAX_BYTES"};
  auto patch = nlohmann::json::parse(patch_text, nullptr, false);
  if (patch.is_discarded() || !patch.is_object())
    return PatchRefused{422, "a stream's patch must be a JSON object (RFC 7386)"};
  return patch;
}

// `state` with the merge patch `patch_text` (RFC 7386) applied, or why not.
inline std::variant<PatchMerged, PatchRefused> merge_stream_patch(std::string_view name, const nlohmann::json& state,
                                                                  std::string_view patch_text, std::size_t max_bytes) {
  auto parsed = parse_stream_patch(name, patch_text, max_bytes);
  if (auto* refused = std::get_if<PatchRefused>(&parsed)) return std::move(*refused);
  auto& patch = std::get<nlohmann::json>(parsed);
  nlohmann::json next = state;
  next.merge_patch(patch);
  if (next.dump().size() > max_bytes) return PatchRefused{413, kStateTooLarge};
  return PatchMerged{std::move(patch), std::move(next)};
}

// A stream's state as whoever orders it keeps it, with an upper bound of
// its size as JSON, so that a publish costs its patch, not the state: no
// copy and no serialization of the state while the bound says it fits.
struct StreamState {
  static constexpr std::size_t kUnknown = std::numeric_limits<std::size_t>::max() / 2;
  nlohmann::json value = nlohmann::json::object();
  std::size_t bound = 2;  // >= value.dump().size()

  // A state from elsewhere (a listener's recovery, the switch): its size
  // is learned at the next publish.
  void replace(nlohmann::json v) {
    value = std::move(v);
    bound = kUnknown;
  }
};

struct PatchApplied {
  nlohmann::json patch;
  std::string text;  // patch.dump()
};

// The merge patch `patch_text` applied to `state` in place, or why not
// (`state` then unchanged): the same outcome as merge_stream_patch.
//
// Why the bound holds: merging a patch whose dump is P bytes grows the
// state's dump by less than P. Each member "k":v of the patch either
// removes k (v null: no growth), or sets or merges k to at most v without
// its nulls: at most `"k":` + dump(v) and a comma, which is what the
// member takes in P beside the braces; a nested merge obeys the same rule.
// Only where the bound says the state may pass EDRI_STREAM_MAX_BYTES is
// the merged state serialized, and the bound made exact again.
inline std::variant<PatchApplied, PatchRefused> apply_stream_patch(std::string_view name, StreamState& state,
                                                                   std::string_view patch_text, std::size_t max_bytes) {
  auto parsed = parse_stream_patch(name, patch_text, max_bytes);
  if (auto* refused = std::get_if<PatchRefused>(&parsed)) return std::move(*refused);
  auto& patch = std::get<nlohmann::json>(parsed);
  std::string text = patch.dump();
  if (state.bound + text.size() <= max_bytes) {
    state.value.merge_patch(patch);
    state.bound += text.size();
    return PatchApplied{std::move(patch), std::move(text)};
  }
  nlohmann::json next = state.value;
  next.merge_patch(patch);
  const std::size_t exact = next.dump().size();
  if (exact > max_bytes) return PatchRefused{413, kStateTooLarge};
  state.value = std::move(next);
  state.bound = exact;
  return PatchApplied{std::move(patch), std::move(text)};
}

}  // namespace edri::envelope
