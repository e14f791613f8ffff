#include "http/request_parser.hpp"

namespace edri::http {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = char(x + 32);
    if (y >= 'A' && y <= 'Z') y = char(y + 32);
    if (x != y) return false;
  }
  return true;
}

RequestParser& self(llhttp_t* p) { return *static_cast<RequestParser*>(p->data); }

}  // namespace

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
  llhttp_init(&parser_, HTTP_REQUEST, &settings_);
  parser_.data = this;
}

RequestParser::Result RequestParser::feed(const char* data, std::size_t size) {
  Result r;
  if (error_status_) return Result{false, error_status_, error_reason_, 0};
  feed_begin_ = data;
  feed_end_ = data + size;
  const llhttp_errno_t err = llhttp_execute(&parser_, data, size);
  if (err == HPE_OK) {
    r.consumed = size;
    return r;
  }
  if (err == HPE_PAUSED && !error_status_) {
    llhttp_resume(&parser_);
    r.paused = true;
    r.consumed = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data);
    return r;
  }
  if (err == HPE_PAUSED_UPGRADE && !error_status_) {
    r.upgrade = true;
    r.consumed = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data);
    return r;
  }
  if (!error_status_) {
    error_status_ = 400;
    error_reason_ = llhttp_get_error_reason(&parser_);
    if (!error_reason_ || !*error_reason_) error_reason_ = llhttp_errno_name(err);
  }
  r.ok = false;
  r.status = error_status_;
  r.reason = error_reason_;
  r.consumed = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) ? llhttp_get_error_pos(&parser_) - data : 0);
  return r;
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
  // RFC 9112 3.2: an HTTP/1.1 request has exactly one Host; none or two
  // is a 400 (HTTP/1.0 may have none).
  int hosts = 0;
  for (const auto& [name, value] : r.headers)
    if (iequals(name, "host")) ++hosts;
  if (hosts > 1 || (hosts == 0 && r.http_minor >= 1)) return s.fail(400, "a request must have exactly one Host header");
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

}  // namespace edri::http
