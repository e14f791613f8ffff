// One publish to a live stream: the checks and the merge that whoever
// orders the stream applies (the broker on one instance, the switch when
// instances are joined over NATS), so both refuse the same patches alike.
#pragma once

#include <cstddef>
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

// `state` with the merge patch `patch_text` (RFC 7386) applied, or why not.
inline std::variant<PatchMerged, PatchRefused> merge_stream_patch(std::string_view name, const nlohmann::json& state,
                                                                  std::string_view patch_text, std::size_t max_bytes) {
  if (!is_valid_stream_name(name)) return PatchRefused{422, "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -"};
  if (patch_text.size() > max_bytes) return PatchRefused{413, "the patch is larger than EDRI_STREAM_MAX_BYTES"};
  auto patch = nlohmann::json::parse(patch_text, nullptr, false);
  if (patch.is_discarded() || !patch.is_object())
    return PatchRefused{422, "a stream's patch must be a JSON object (RFC 7386)"};
  nlohmann::json next = state;
  next.merge_patch(patch);
  if (next.dump().size() > max_bytes)
    return PatchRefused{413, "the stream's state would be larger than EDRI_STREAM_MAX_BYTES"};
  return PatchMerged{std::move(patch), std::move(next)};
}

}  // namespace edri::envelope
