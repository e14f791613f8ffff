#include "http/multipart.hpp"

#include <algorithm>
#include <functional>

#include "http/field_text.hpp"

namespace edri::http {

namespace {

// The value of parameter `key` in `type; a=b; c="d;e"` (a quoted value
// without its quotes; backslash escapes are kept as sent).
std::string_view parameter(std::string_view h, std::string_view key) {
  constexpr auto npos = std::string_view::npos;
  std::size_t i = h.find(';');
  while (i != npos && i < h.size()) {
    ++i;  // past ';'
    const std::size_t k = i;
    while (i < h.size() && h[i] != '=' && h[i] != ';') ++i;
    const std::string_view name = trim_ows(h.substr(k, i - k));
    if (i >= h.size() || h[i] == ';') continue;  // no value
    ++i;                                         // past '='
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
    std::string_view value;
    if (i < h.size() && h[i] == '"') {
      const std::size_t from = ++i;
      while (i < h.size() && h[i] != '"') i += h[i] == '\\' ? 2 : 1;
      if (i >= h.size()) return {};  // unterminated
      value = h.substr(from, i - from);
      i = h.find(';', i);
    } else {
      const std::size_t from = i;
      i = h.find(';', i);
      value = trim_ows(h.substr(from, i == npos ? npos : i - from));
    }
    if (iequals(name, key)) return value;
  }
  return {};
}

}  // namespace

bool is_multipart_form(std::string_view content_type) {
  const auto semi = content_type.find(';');
  return iequals(trim_ows(content_type.substr(0, semi)), "multipart/form-data");
}

std::string parse_multipart(std::string_view content_type, std::string_view body, std::vector<MultipartPart>& out,
                            std::size_t max_parts) {
  out.clear();
  const std::string_view boundary = parameter(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 70) return "multipart/form-data without a valid boundary parameter";
  const std::string delimiter = "\r\n--" + std::string(boundary);
  const std::boyer_moore_horspool_searcher find_delimiter(delimiter.begin(), delimiter.end());
  // The first delimiter may open the body (no CRLF before it) or follow a
  // preamble.
  std::size_t pos;
  if (body.substr(0, delimiter.size() - 2) == std::string_view(delimiter).substr(2)) {
    pos = delimiter.size() - 2;
  } else {
    const auto it = std::search(body.begin(), body.end(), find_delimiter);
    if (it == body.end()) return "the body holds no multipart delimiter";
    pos = static_cast<std::size_t>(it - body.begin()) + delimiter.size();
  }
  for (;;) {
    // After a delimiter: "--" ends the body, else padding and CRLF.
    if (body.substr(pos, 2) == "--") return {};
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") return "a multipart delimiter is not followed by CRLF";
    pos += 2;
    if (out.size() == max_parts) return "more than " + std::to_string(max_parts) + " parts";
    const std::size_t head_end = body.find("\r\n\r\n", pos);
    if (head_end == std::string_view::npos && body.substr(pos, 2) != "\r\n") return "a part's headers do not end";
    MultipartPart part;
    // Headers: "Name: value" lines up to the blank line.
    std::size_t line = pos;
    const std::size_t headers_end = body.substr(pos, 2) == "\r\n" ? pos : head_end;
    bool has_disposition = false;
    while (line < headers_end) {
      std::size_t eol = body.find("\r\n", line);
      if (eol > headers_end) eol = headers_end;
      const std::string_view h = body.substr(line, eol - line);
      const auto colon = h.find(':');
      if (colon == std::string_view::npos) return "a part header without ':'";
      const std::string_view name = trim_ows(h.substr(0, colon));
      const std::string_view value = trim_ows(h.substr(colon + 1));
      if (iequals(name, "content-disposition")) {
        if (!iequals(trim_ows(value.substr(0, value.find(';'))), "form-data"))
          return "a part's Content-Disposition is not form-data";
        has_disposition = true;
        part.name = parameter(value, "name");
        part.filename = parameter(value, "filename");
      } else if (iequals(name, "content-type")) {
        part.content_type = value;
      }
      line = eol + 2;
    }
    if (!has_disposition || part.name.empty()) return "a part without a Content-Disposition name";
    const std::size_t data_start = headers_end + (headers_end == pos ? 2 : 4);
    const auto it = std::search(body.begin() + static_cast<std::ptrdiff_t>(std::min(data_start, body.size())),
                                body.end(), find_delimiter);
    if (it == body.end()) return "the multipart body does not end with its closing delimiter";
    const std::size_t data_end = static_cast<std::size_t>(it - body.begin());
    part.data = body.substr(data_start, data_end - data_start);
    out.push_back(part);
    pos = data_end + delimiter.size();
  }
}

}  // namespace edri::http
