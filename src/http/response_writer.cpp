#include "http/response_writer.hpp"

#include <charconv>

namespace edri::http {

void ResponseWriter::refresh_date() {
  const std::time_t now = std::time(nullptr);
  if (now == date_second_) return;
  date_second_ = now;
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const auto n = std::strftime(buf, sizeof buf, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
  date_line_.assign(buf, n);
  standard_lines_.assign("Server: edri\r\n").append(date_line_);
}

std::string_view ResponseWriter::standard_lines() {
  refresh_date();
  return standard_lines_;
}

namespace {
void append_int(std::string& out, std::size_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, p);
}
}  // namespace

void ResponseWriter::write(std::string& out, const ResponseHead& h, std::string_view extra_headers,
                           std::string_view body) {
  refresh_date();
  const int status = (h.status >= 100 && h.status <= 999) ? h.status : 500;
  out += h.http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  append_int(out, static_cast<std::size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\nServer: edri\r\n";
  out += date_line_;
  const bool bodyless = bodyless_status(status);
  if (!h.content_type.empty() && !bodyless) {
    out += "Content-Type: ";
    out += h.content_type;
    out += "\r\n";
  }
  if (!bodyless && h.framing == ResponseHead::Framing::Length) {
    out += "Content-Length: ";
    append_int(out, h.content_length);
    out += "\r\n";
  } else if (!bodyless && h.framing == ResponseHead::Framing::Chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  }
  if (!h.keep_alive)
    out += "Connection: close\r\n";
  else if (h.http10)
    out += "Connection: keep-alive\r\n";
  out += extra_headers;
  out += "\r\n";
  if (!h.head && !bodyless) out += body;
}

}  // namespace edri::http
