#include "http/request_parser.hpp"

#include <arpa/inet.h>

#include <array>
#include <cstring>

#include "http/field_text.hpp"

namespace edri::http {
namespace {

RequestParser& self(llhttp_t* p) { return *static_cast<RequestParser*>(p->data); }

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// RFC 3986 unreserved and sub-delims: what a reg-name holds besides
// pct-encodings. A table, as this runs on every request.
constexpr std::array<bool, 256> kRegNameChars = [] {
  std::array<bool, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (char c : std::string_view("-._~!$&'()*+,;=")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

// reg-name = *( unreserved / pct-encoded / sub-delims ); an IPv4 address
// is one too.
bool is_reg_name(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (kRegNameChars[static_cast<unsigned char>(s[i])]) continue;
    if (s[i] != '%' || i + 2 >= s.size() || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) return false;
    i += 2;
  }
  return true;
}

// What is between the brackets of an IP-literal: IPvFuture
// ("v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )) or an IPv6 address.
bool is_ip_literal(std::string_view s) {
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) {
    const auto dot = s.find('.');
    if (dot == std::string_view::npos || dot < 2 || dot + 1 == s.size()) return false;
    for (std::size_t i = 1; i < dot; ++i)
      if (!is_hex(s[i])) return false;
    for (std::size_t i = dot + 1; i < s.size(); ++i)
      if (s[i] != ':' && (s[i] == '%' || !kRegNameChars[static_cast<unsigned char>(s[i])])) return false;
    return true;
  }
  char text[INET6_ADDRSTRLEN];
  if (s.empty() || s.size() >= sizeof text) return false;
  std::memcpy(text, s.data(), s.size());
  text[s.size()] = '\0';
  in6_addr addr;
  return inet_pton(AF_INET6, text, &addr) == 1;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

bool is_valid_host(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  std::string_view port;
  if (!v.empty() && v.front() == '[') {
    const auto close = v.find(']');
    if (close == std::string_view::npos || !is_ip_literal(v.substr(1, close - 1))) return false;
    port = v.substr(close + 1);
  } else {
    // ':' is no reg-name character: the first one starts the port.
    const auto colon = v.find(':');
    if (!is_reg_name(v.substr(0, colon))) return false;
    if (colon != std::string_view::npos) port = v.substr(colon);
  }
  if (port.empty()) return true;
  if (port.front() != ':') return false;
  for (char c : port.substr(1))
    if (!is_digit(c)) return false;
  return true;
}

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

void HttpRequest::clear() {
  target.clear();
  headers.clear();
  body.clear();
  spill.reset();
  body_size = 0;
  keep_alive = true;
  upgrade = false;
}

RequestParser::RequestParser(ParserLimits limits, OnRequest on_request, OnContinue on_continue, OnSpill on_spill)
    : limits_(limits),
      on_request_(std::move(on_request)),
      on_continue_(std::move(on_continue)),
      on_spill_(std::move(on_spill)) {
  llhttp_settings_init(&settings_);
  settings_.on_message_begin = &RequestParser::on_message_begin;
  settings_.on_url = &RequestParser::on_url;
  settings_.on_header_field = &RequestParser::on_header_field;
  settings_.on_header_value = &RequestParser::on_header_value;
  settings_.on_headers_complete = &RequestParser::on_headers_complete;
  settings_.on_body = &RequestParser::on_body;
  settings_.on_message_complete = &RequestParser::on_message_complete;
  settings_.on_chunk_header = &RequestParser::on_chunk_header;
  settings_.on_chunk_extension_name = &RequestParser::on_chunk_extension_name;
  llhttp_init(&parser_, HTTP_REQUEST, &settings_);
  // RFC 9110 2.5: a request of a higher minor version than we implement
  // (HTTP/1.2) is served as the highest we do (1.1), and a major version
  // other than 1 is answered 505; strict llhttp refuses anything but 0.9,
  // 1.0, 1.1 and 2.0 itself. Lenient about the version only, it takes any
  // digit.digit and on_headers_complete decides. llhttp 8.1 has no setter
  // for this flag, so it is set directly.
  parser_.lenient_flags |= LENIENT_VERSION;
  parser_.data = this;
}

RequestParser::Result RequestParser::feed(const char* data, std::size_t size) {
  Result r;
  if (error_status_) return Result{false, error_status_, error_reason_, 0};
  feed_begin_ = data;
  feed_end_ = data + size;
  const char* at = data;
  llhttp_errno_t err = llhttp_execute(&parser_, at, size);
  // Pauses for chunk-line marks are this class's own: measure, go on.
  while (err == HPE_PAUSED && chunk_mark_ != ChunkMark::None && !error_status_) {
    at = llhttp_get_error_pos(&parser_);
    llhttp_resume(&parser_);
    if (!mark_chunk_line(at)) return failed(data, at);
    err = llhttp_execute(&parser_, at, static_cast<std::size_t>(feed_end_ - at));
  }
  if (err == HPE_OK) {
    // A line still open at the end of the bytes is refused as soon as it is
    // too long, not when (if ever) it ends.
    if (chunk_line_too_long(offset(feed_end_))) {
      fail(400, "chunk-size line too long");
      return failed(data, feed_end_);
    }
    r.consumed = size;
    feed_offset_ += r.consumed;
    return r;
  }
  if (err == HPE_PAUSED && !error_status_) {
    llhttp_resume(&parser_);
    r.paused = true;
    r.consumed = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data);
    feed_offset_ += r.consumed;
    return r;
  }
  if (err == HPE_PAUSED_UPGRADE && !error_status_) {
    r.upgrade = true;
    r.consumed = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data);
    feed_offset_ += r.consumed;
    return r;
  }
  if (!error_status_) {
    error_status_ = 400;
    error_reason_ = llhttp_get_error_reason(&parser_);
    if (!error_reason_ || !*error_reason_) error_reason_ = llhttp_errno_name(err);
    // HTTP/2's preface past a connection's first bytes: llhttp's own words
    // ("Pause on PRI/Upgrade") say nothing to the client.
    if (err == HPE_PAUSED_H2_UPGRADE || parser_.method == HTTP_PRI)
      error_reason_ =
          "HTTP/2 is spoken from a connection's first bytes (prior knowledge) or after TLS ALPN h2, not after "
          "HTTP/1.1 requests";
  }
  return failed(data, llhttp_get_error_pos(&parser_));
}

RequestParser::Result RequestParser::failed(const char* data, const char* at) {
  return Result{false, error_status_, error_reason_, at ? static_cast<std::size_t>(at - data) : 0};
}

bool RequestParser::mark_chunk_line(const char* at) {
  const auto mark = std::exchange(chunk_mark_, ChunkMark::None);
  const std::uint64_t here = offset(at);
  if (mark == ChunkMark::LineStart) {
    expect_chunk_line(here);
    return true;
  }
  // The line's end: `here` is just past its LF.
  const std::uint64_t length = here - chunk_line_start_;
  const char* problem = nullptr;
  if (length > kMaxChunkLineBytes)
    problem = "chunk-size line too long";
  else if (!chunk_extension_seen_ && length - 2 > kMaxChunkSizeDigits)
    problem = "chunk size has too many digits";
  if (problem) {
    fail(400, problem);
    return false;
  }
  if (chunk_size_ == 0) {
    in_chunked_body_ = false;  // the last chunk: trailer fields follow
    return true;
  }
  // Strict llhttp: exactly CRLF follows the chunk's data.
  expect_chunk_line(saturating_add(here, saturating_add(chunk_size_, 2)));
  return true;
}

void RequestParser::expect_chunk_line(std::uint64_t start) {
  in_chunked_body_ = true;
  chunk_line_start_ = start;
  chunk_extension_seen_ = false;
}

bool RequestParser::chunk_line_too_long(std::uint64_t end) const {
  return in_chunked_body_ && end > chunk_line_start_ && end - chunk_line_start_ > kMaxChunkLineBytes;
}

int RequestParser::fail(int status, const char* reason) {
  error_status_ = status;
  error_reason_ = reason;
  return -1;
}

bool RequestParser::count_header_bytes(std::size_t n) {
  header_bytes_ += n;
  return header_bytes_ <= limits_.max_header_bytes;
}

int RequestParser::on_message_begin(llhttp_t* p) {
  auto& s = self(p);
  s.request_.clear();
  s.header_bytes_ = 0;
  s.last_was_value_ = false;
  s.in_message_ = true;
  s.head_done_ = false;
  s.in_chunked_body_ = false;
  s.chunk_mark_ = ChunkMark::None;
  return 0;
}

int RequestParser::on_url(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = self(p);
  if (s.request_.target.size() + n > s.limits_.max_url_bytes) return s.fail(414, "request-target too long");
  s.request_.target.append(at, n);
  return 0;
}

int RequestParser::on_header_field(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = self(p);
  if (!s.count_header_bytes(n)) return s.fail(431, "request header fields too large");
  auto& h = s.request_.headers;
  if (h.empty() || s.last_was_value_) {
    if (h.size() == s.limits_.max_header_count) return s.fail(431, "too many header fields");
    h.emplace_back();
  }
  h.back().first.append(at, n);
  s.last_was_value_ = false;
  return 0;
}

int RequestParser::on_header_value(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = self(p);
  if (!s.count_header_bytes(n)) return s.fail(431, "request header fields too large");
  auto& h = s.request_.headers;
  if (h.empty() || h.back().first.empty()) return s.fail(400, "empty header field name");
  if (s.last_was_value_ && !(s.value_at_buffer_end_ && at == s.feed_begin_)) {
    // llhttp reports a value in pieces only where a read ended. Another
    // piece that does not start the next read came after a line break: a
    // folded line (obs-fold), which RFC 9112 lets a server refuse, and
    // which proxies may read otherwise.
    return s.fail(400, "obsolete line folding in a header field");
  }
  h.back().second.append(at, n);
  s.last_was_value_ = true;
  s.value_at_buffer_end_ = at + n == s.feed_end_;
  return 0;
}

int RequestParser::on_headers_complete(llhttp_t* p) {
  auto& s = self(p);
  s.head_done_ = true;
  auto& r = s.request_;
  r.method = static_cast<llhttp_method_t>(p->method);
  r.http_major = p->http_major;
  r.http_minor = p->http_minor;
  if (r.http_major != 1) return s.fail(505, "HTTP version not supported");
  // HTTP/1.2 and up: served as 1.1, and answered as 1.1 (llhttp's
  // keep-alive rules already read any minor above 0 as 1.1).
  if (r.http_minor > 1) r.http_minor = 1;
  // RFC 9112 3.2: an HTTP/1.1 request has exactly one Host; none or two
  // is a 400 (HTTP/1.0 may have none).
  int hosts = 0;
  std::string_view host;
  for (const auto& [name, value] : r.headers)
    if (iequals(name, "host")) {
      ++hosts;
      host = value;
    }
  if (hosts > 1 || (hosts == 0 && r.http_minor >= 1)) return s.fail(400, "a request must have exactly one Host header");
  if (!is_valid_host(host)) return s.fail(400, "the Host header is not a valid host");
  if (p->content_length > s.limits_.max_body_bytes && (p->flags & F_CONTENT_LENGTH))
    return s.fail(413, "request body too large");
  if (const auto expect = r.header("expect"); !expect.empty()) {
    // RFC 9110 10.1.1: 100-continue is the only expectation defined.
    std::string lower(expect);
    for (auto& c : lower)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (lower != "100-continue") return s.fail(417, "unsupported expectation");
    const bool has_body = (p->flags & F_CHUNKED) || ((p->flags & F_CONTENT_LENGTH) && p->content_length > 0);
    if (r.http_minor >= 1 && has_body && s.on_continue_) s.on_continue_();
  }
  if (p->flags & F_CHUNKED) {
    // Pause to learn where the first chunk-size line starts (feed() goes on).
    s.chunk_mark_ = ChunkMark::LineStart;
    return HPE_PAUSED;
  }
  return 0;
}

int RequestParser::on_body(llhttp_t* p, const char* at, std::size_t n) {
  auto& s = self(p);
  auto& r = s.request_;
  // Checked as the bytes arrive (a chunked body declares no length).
  if (r.body_size + n > s.limits_.max_body_bytes) return s.fail(413, "request body too large");
  r.body_size += n;
  if (s.on_spill_ && (r.spill || r.body.size() + n > s.limits_.spill_bytes)) {
    if (!r.spill && !r.body.empty() && !s.on_spill_(r, r.body)) return s.fail(500, "the request body cannot be stored");
    r.body.clear();
    if (!s.on_spill_(r, std::string_view(at, n))) return s.fail(500, "the request body cannot be stored");
    return 0;
  }
  r.body.append(at, n);
  return 0;
}

int RequestParser::on_message_complete(llhttp_t* p) {
  auto& s = self(p);
  s.request_.keep_alive = llhttp_should_keep_alive(p);
  s.request_.upgrade = p->upgrade;
  s.in_message_ = false;
  // After an upgrade request llhttp pauses (HPE_PAUSED_UPGRADE): feed()
  // tells its caller, which decides what the following bytes are.
  s.on_request_(s.request_);
  if (s.pause_requested_ && !p->upgrade) {
    s.pause_requested_ = false;
    return HPE_PAUSED;
  }
  s.pause_requested_ = false;
  return 0;
}

int RequestParser::on_chunk_header(llhttp_t* p) {
  auto& s = self(p);
  // Pause to learn where the line ends; the size is what llhttp read.
  s.chunk_size_ = p->content_length;
  s.chunk_mark_ = ChunkMark::LineEnd;
  return HPE_PAUSED;
}

int RequestParser::on_chunk_extension_name(llhttp_t* p, const char* at, std::size_t) {
  auto& s = self(p);
  if (s.chunk_extension_seen_ || !s.in_chunked_body_) return 0;
  // The first extension's name starts just after "<digits>;" (strict
  // llhttp allows nothing between): the digits are counted here, as the
  // line may end much later.
  s.chunk_extension_seen_ = true;
  if (s.offset(at) - 1 - s.chunk_line_start_ > kMaxChunkSizeDigits)
    return s.fail(400, "chunk size has too many digits");
  return 0;
}

}  // namespace edri::http
