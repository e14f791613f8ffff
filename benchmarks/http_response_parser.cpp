#include <utility>

#include "http_response_parser.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>

namespace edri::bench {
namespace {

using State = ParsedResponse::State;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool icontains_token(std::string_view list, std::string_view token) {
  if (list.size() < token.size()) return false;
  for (std::size_t i = 0; i + token.size() <= list.size(); ++i) {
    if (iequals(list.substr(i, token.size()), token)) return true;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::size_t> parse_decimal(std::string_view s) {
  std::size_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// Returns the size of a complete chunked body starting at `body`, 0 while it
// is incomplete, or nullopt when it is not valid chunked encoding.
std::optional<std::size_t> chunked_body_size(std::string_view body) {
  std::size_t pos = 0;
  for (;;) {
    const std::size_t line_end = body.find("\r\n", pos);
    if (line_end == std::string_view::npos) return 0;
    std::string_view size_field = body.substr(pos, line_end - pos);
    size_field = size_field.substr(0, size_field.find(';'));  // drop chunk extensions
    size_field = trim(size_field);
    std::uint64_t chunk = 0;
    auto [end, ec] = std::from_chars(size_field.data(), size_field.data() + size_field.size(), chunk, 16);
    if (ec != std::errc{} || end != size_field.data() + size_field.size() || size_field.empty()) return std::nullopt;
    pos = line_end + 2;
    if (chunk == 0) {
      // Trailer section: zero or more header lines, then an empty line.
      for (;;) {
        const std::size_t trailer_end = body.find("\r\n", pos);
        if (trailer_end == std::string_view::npos) return 0;
        const bool empty_line = trailer_end == pos;
        pos = trailer_end + 2;
        if (empty_line) return pos;
      }
    }
    if (body.size() < pos + chunk + 2) return 0;
    if (body.substr(pos + chunk, 2) != "\r\n") return std::nullopt;
    pos += chunk + 2;
  }
}

}  // namespace

ParsedResponse parse_http_response(std::string_view bytes) {
  ParsedResponse out;
  const std::size_t header_end = bytes.find("\r\n\r\n");
  if (header_end == std::string_view::npos) {
    // A server sending more than this without a blank line is not answering us.
    if (bytes.size() > 64 * 1024) out.state = State::kMalformed;
    return out;
  }
  const std::size_t body_start = header_end + 4;
  std::string_view head = bytes.substr(0, header_end);

  const std::size_t status_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, status_end);
  // "HTTP/1.x NNN reason"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    out.state = State::kMalformed;
    return out;
  }
  const auto status = parse_decimal(status_line.substr(9, 3));
  if (!status || *status < 100 || *status > 599) {
    out.state = State::kMalformed;
    return out;
  }
  out.status = static_cast<int>(*status);
  out.connection_close = status_line[7] == '0';  // HTTP/1.0 closes unless told otherwise

  std::optional<std::size_t> content_length;
  bool chunked = false;
  std::string_view rest = status_end == std::string_view::npos ? std::string_view{} : head.substr(status_end + 2);
  while (!rest.empty()) {
    const std::size_t line_end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, line_end);
    rest = line_end == std::string_view::npos ? std::string_view{} : rest.substr(line_end + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      out.state = State::kMalformed;
      return out;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      content_length = parse_decimal(value);
      if (!content_length) {
        out.state = State::kMalformed;
        return out;
      }
    } else if (iequals(name, "transfer-encoding")) {
      chunked = icontains_token(value, "chunked");
    } else if (iequals(name, "connection")) {
      if (icontains_token(value, "close")) out.connection_close = true;
      if (icontains_token(value, "keep-alive")) out.connection_close = false;
    }
  }

  std::size_t body_size = 0;
  if (out.status < 200 || out.status == 204 || out.status == 304) {
    body_size = 0;
  } else if (chunked) {
    const auto size = chunked_body_size(bytes.substr(body_start));
    if (!size) {
      out.state = State::kMalformed;
      return out;
    }
    if (*size == 0) return out;
    body_size = *size;
    out.chunked = true;
  } else if (content_length) {
    body_size = *content_length;
  } else {
    out.state = State::kMalformed;
    return out;
  }

  if (bytes.size() < body_start + body_size) return out;
  out.state = State::kComplete;
  out.body_offset = body_start;
  out.total_size = body_start + body_size;
  return out;
}

}  // namespace edri::bench
