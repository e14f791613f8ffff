#include "runtime/closest_name.hpp"

#include <algorithm>
#include <cstddef>

namespace edri {
namespace {

// Optimal string alignment distance: Levenshtein with transpositions.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t w = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * w);
  for (std::size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t change = a[i - 1] == b[j - 1] ? 0 : 1;
      auto& cell = d[i * w + j];
      cell = std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + change});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cell = std::min(cell, d[(i - 2) * w + j - 2] + 1);
    }
  }
  return d.back();
}

}  // namespace

std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& names) {
  const std::size_t near_enough = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = near_enough + 1;
  for (const auto& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& names) {
  const auto near = closest_name(word, names);
  return near ? " (did you mean " + *near + "?)" : std::string();
}

}  // namespace edri
