// The small text rules of header fields that the HTTP/1.1 parser, the
// multipart reader and the HTTP/2 session share: names compare ASCII
// case-insensitively (RFC 9110 5.1), values lose their optional
// whitespace at both ends (RFC 9110 5.5).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace edri::http {

constexpr char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

constexpr bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

// A header name as handlers see them: lower case.
inline std::string lowered(std::string_view name) {
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

constexpr std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

static_assert(iequals("Content-Type", "content-type") && !iequals("@", "`"));
static_assert(trim_ows(" \t a b\t ") == "a b");

}  // namespace edri::http
