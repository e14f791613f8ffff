#include "runtime/json_text.hpp"

#include <algorithm>

namespace edri {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// The length of the valid UTF-8 sequence at the start of `s`, or 0.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  if (n == 0 || s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i)
    if ((b(i) & 0xC0) != 0x80) return 0;
  if (n == 3 && ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F))) return 0;  // overlong, surrogates
  if (n == 4 && ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F))) return 0;  // overlong, > U+10FFFF
  return n;
}

bool plain_in_json(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

}  // namespace

char* write_json_text(char* out, std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t j = i;
    while (j < text.size() && plain_in_json(static_cast<unsigned char>(text[j]))) ++j;
    out = std::copy(text.data() + i, text.data() + j, out);
    if (j == text.size()) break;
    i = j;
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_length(text.substr(i));
      out = n == 0 ? std::copy_n("\\ufffd", 6, out) : std::copy_n(text.data() + i, n, out);
      i += n == 0 ? 1 : n;
      continue;
    }
    if (c == '"' || c == '\\') {
      *out++ = '\\';
      *out++ = static_cast<char>(c);
    } else {  // a control character
      out = std::copy_n("\\u00", 4, out);
      *out++ = kHex[c >> 4];
      *out++ = kHex[c & 15];
    }
    ++i;
  }
  return out;
}

void append_json_text(std::string& out, std::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return plain_in_json(static_cast<unsigned char>(c)); })) {
    out.append(text);  // most text: nothing to escape, no room to clear
    return;
  }
  const std::size_t at = out.size();
  out.resize(at + json_text_bound(text));
  out.resize(static_cast<std::size_t>(write_json_text(out.data() + at, text) - out.data()));
}

}  // namespace edri
