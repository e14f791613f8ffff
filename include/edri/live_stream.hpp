// Live streams (docs/streams.md): what a stream's name may be, and how two
// JSON Merge Patches (RFC 7386) become one.
//
// Applying a patch is nlohmann's json::merge_patch. Composing is ours:
// coalescing gives a subscriber that fell behind one patch for everything
// it missed, and that patch must take it exactly where the patches one by
// one would have. Composition is exact except in one case: the first
// patch sets a member to a non-object (or deletes it) and the second
// patches that member as an object. Applied in turn, the member becomes
// the second's object alone; no single merge patch can say "replace this
// object" without knowing the target's members. compose_merge_patch()
// then answers false, and the subscriber gets a snapshot instead.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace edri {

inline constexpr std::size_t kMaxStreamNameBytes = 128;

// 1..128 characters of A-Z a-z 0-9 . _ : -
inline bool is_valid_stream_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxStreamNameBytes) return false;
  for (const char ch : name) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                    ch == '_' || ch == ':' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

// Makes `first` the patch that does what `first` then `second` do. False
// when no single merge patch can (see above): `first` is then unspecified.
inline bool compose_merge_patch(nlohmann::json& first, const nlohmann::json& second) {
  if (!second.is_object()) {  // replaces whatever was there
    first = second;
    return true;
  }
  if (!first.is_object()) return false;
  for (auto it = second.begin(); it != second.end(); ++it) {
    auto mine = first.find(it.key());
    if (mine == first.end()) {
      first[it.key()] = it.value();  // untouched by `first`: `second` alone decides
    } else if (it.value().is_object()) {
      if (!compose_merge_patch(*mine, it.value())) return false;
    } else {
      *mine = it.value();
    }
  }
  return true;
}

}  // namespace edri
