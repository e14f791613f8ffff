// JSON string text for log lines (the access log's, the server's own in
// JSON): what a client or a handler wrote, escaped so that a line is one
// valid JSON object whatever bytes it holds. Unlike append_json_escaped
// (edri/problem.hpp, answers), bytes that start no valid UTF-8 sequence
// become U+FFFD, and runs that need nothing are appended at once.
#pragma once

#include <string>
#include <string_view>

namespace edri {

// Appends `text` escaped for the inside of a JSON string (no quotes).
void append_json_text(std::string& out, std::string_view text);

// The most bytes `text` can take escaped: a byte becomes at most 6.
constexpr std::size_t json_text_bound(std::string_view text) { return 6 * text.size(); }

// Writes `text` escaped at `out`, which has json_text_bound(text) bytes
// of room; returns the end of what it wrote.
char* write_json_text(char* out, std::string_view text);

}  // namespace edri
