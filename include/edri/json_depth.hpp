// How deep JSON text nests, measured before it is parsed.
//
// nlohmann::json parses and destroys a document without recursion, but
// dump(), operator== and copies recurse once per level of nesting: a
// client's `[[[[...]]]]` 70,000 deep overflows the stack of whatever
// process serializes it. So every JSON document that comes from a client
// is measured first, with a counter and a loop (no recursion, O(n), no
// allocation), and refused beyond EDRI_MAX_JSON_DEPTH.
//
// Depth is the nesting of arrays and objects: `1` and `"a"` are depth 0,
// `[]` and `{"a":1}` depth 1, `[{"a":[]}]` depth 3. The scan does not
// validate (the parser does): for valid JSON the answer is exact; for
// invalid JSON it is some answer, and the parser then refuses the text.
#pragma once

#include <cstddef>
#include <limits>
#include <string_view>

namespace edri {

// The default of EDRI_MAX_JSON_DEPTH, and of Request::max_json_depth.
inline constexpr std::size_t kDefaultMaxJsonDepth = 128;

// The most EDRI_MAX_JSON_DEPTH allows, and the limit for JSON that edri's own
// processes made (notifications, requests between managers). In a release
// build dump(), copies and == of a document this deep take under 2 MiB of
// stack (8 MiB runs out beyond some 50,000 levels); sanitizer builds take
// several times that per level.
inline constexpr std::size_t kJsonDepthCeiling = 10000;

// The deepest nesting of arrays and objects in `text`, or, as soon as that
// passes `stop_above`, stop_above + 1 without reading further.
inline std::size_t json_depth(std::string_view text, std::size_t stop_above = std::numeric_limits<std::size_t>::max()) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, `"` or `\` included, is content
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > deepest) deepest = depth;
        if (deepest > stop_above) return deepest;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced: invalid, the parser says so
        break;
      default: break;
    }
  }
  return deepest;
}

// Whether `text` nests arrays and objects more than `limit` levels deep.
inline bool json_nests_deeper_than(std::string_view text, std::size_t limit) { return json_depth(text, limit) > limit; }

}  // namespace edri
