// The "did you mean" of an unknown name: a setting's variable, a config
// file's key, a command-line option.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edri {

// The name of `names` nearest `word` by edits (a letter added, dropped,
// changed, or two neighbours swapped: PROT is one from PORT), if one is
// near enough to be a likely typo: at most a third of the word's length,
// and one edit for a word of up to five letters. Ties go to the first.
std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& names);

// " (did you mean X?)", or nothing: the end of an error message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& names);

}  // namespace edri
