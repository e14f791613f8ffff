// The fuzz targets' oracle for JSON nesting: the depth of a parsed
// document, walked with a stack of its own (the oracle must not recurse
// over what it checks).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace edri::fuzz {

inline std::size_t dom_depth(const nlohmann::json& root) {
  std::size_t deepest = 0;
  std::vector<std::pair<const nlohmann::json*, std::size_t>> todo{{&root, 0}};
  while (!todo.empty()) {
    const auto [j, depth] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    if (depth + 1 > deepest) deepest = depth + 1;
    for (const auto& child : *j) todo.emplace_back(&child, depth + 1);
  }
  return deepest;
}

}  // namespace edri::fuzz
