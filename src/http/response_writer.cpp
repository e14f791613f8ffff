#include "http/response_writer.hpp"

#include <charconv>

namespace edri::http {

std::string_view ResponseWriter::reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default:
      return status < 200   ? "Informational"
             : status < 300 ? "Success"
             : status < 400 ? "Redirection"
             : status < 500 ? "Client Error"
                            : "Server Error";
  }
}

void ResponseWriter::refresh_date() {
  const std::time_t now = std::time(nullptr);
  if (now == date_second_) return;
  date_second_ = now;
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const auto n = std::strftime(buf, sizeof buf, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
  date_line_.assign(buf, n);
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
  out += reason(status);
  out += "\r\nServer: edri\r\n";
  out += date_line_;
  const bool bodyless = status == 204 || status == 304 || status < 200;
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

std::string problem_json(int status, std::string_view detail) {
  std::string body = "{\"type\":\"about:blank\",\"title\":\"";
  append_json_escaped(body, ResponseWriter::reason(status));
  body += "\",\"status\":" + std::to_string(status) + ",\"detail\":\"";
  append_json_escaped(body, detail);
  body += "\"}";
  return body;
}

void append_json_escaped(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

}  // namespace edri::http
