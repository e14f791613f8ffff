#include "listener/access_line.hpp"

#include "runtime/json_text.hpp"

#include <charconv>
#include <cstdio>
#include <ctime>

namespace edri::listener {

namespace {

constexpr char kHex[] = "0123456789abcdef";

bool plain_in_combined(unsigned char c) { return c >= 32 && c <= 126 && c != '"' && c != '\\'; }

// As nginx escapes its combined format: '"', '\' and bytes outside
// 32..126 as \xHH, so a line is one line of ASCII whatever a client sent.
void append_escaped(std::string& out, std::string_view text) {
  if (text.empty()) return out.push_back('-');
  for (std::size_t i = 0; i < text.size();) {
    // The run of bytes that need nothing, appended at once.
    std::size_t j = i;
    while (j < text.size() && plain_in_combined(static_cast<unsigned char>(text[j]))) ++j;
    out.append(text.substr(i, j - i));
    if (j == text.size()) return;
    const auto c = static_cast<unsigned char>(text[j]);
    const char escaped[] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    out.append(escaped, sizeof escaped);
    i = j + 1;
  }
}

// A JSON string, with its quotes, valid UTF-8 whatever `text` holds.
void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  append_json_text(out, text);
  out.push_back('"');
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
}

// `us` microseconds as seconds ("0.000123") or milliseconds ("0.123").
void append_fixed(std::string& out, std::uint64_t whole, std::uint64_t fraction, int digits) {
  append_number(out, whole);
  out.push_back('.');
  char buf[8];
  for (int i = digits - 1; i >= 0; --i, fraction /= 10) buf[i] = static_cast<char>('0' + fraction % 10);
  out.append(buf, static_cast<std::size_t>(digits));
}

std::uint64_t duration_us(const AccessRecord& r, const AccessOutcome& o) {
  if (o.ended <= r.started) return 0;
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(o.ended - r.started).count());
}

std::string_view request_protocol(std::string_view protocol) {
  if (protocol == "http/1.1") return "HTTP/1.1";
  if (protocol == "http/1.0") return "HTTP/1.0";
  if (protocol == "h2" || protocol == "grpc") return "HTTP/2.0";
  return protocol;
}

}  // namespace

std::string_view trace_id_of(std::string_view tp) {
  // The standard's rules are parse_traceparent's alone.
  return parse_traceparent(tp) ? tp.substr(3, 32) : std::string_view();
}

void AccessFormatter::set_second(std::chrono::system_clock::time_point t) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  if (s == second_) return;
  second_ = s;
  const std::time_t tt = static_cast<std::time_t>(s);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[64];
  combined_time_.assign(buf, std::strftime(buf, sizeof buf, "%d/%b/%Y:%H:%M:%S +0000", &tm));
  iso_time_.assign(buf, std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm));
}

void AccessFormatter::append(std::string& out, const AccessRecord& r, const AccessOutcome& o) {
  set_second(r.received);
  if (format_ == AccessFormat::Json) return append_json(out, r, o);
  if (format_ == AccessFormat::Combined) append_combined(out, r, o);
}

void AccessFormatter::append_combined(std::string& out, const AccessRecord& r, const AccessOutcome& o) {
  // nginx's combined format, then what it lacks (docs/operations.md).
  append_escaped(out, r.client);
  out.append(" - - [").append(combined_time_).append("] \"");
  append_escaped(out, r.method);
  out.push_back(' ');
  append_escaped(out, r.target);
  out.push_back(' ');
  out.append(request_protocol(r.protocol)).append("\" ");
  append_number(out, static_cast<std::uint64_t>(o.status));
  out.push_back(' ');
  append_number(out, o.bytes_out);
  out.append(" \"");
  append_escaped(out, r.referer);
  out.append("\" \"");
  append_escaped(out, r.user_agent);
  out.append("\" ");
  const auto us = duration_us(r, o);
  append_fixed(out, us / 1000000, us % 1000000, 6);
  out.push_back(' ');
  out.append(r.protocol).append(" \"");
  append_escaped(out, r.route);
  out.push_back('"');
  for (const std::string_view field : {r.domain, std::string_view(r.request_id), std::string_view(r.trace_id)}) {
    out.push_back(' ');
    append_escaped(out, field);
  }
  out.push_back(' ');
  if (o.grpc_status < 0)
    out.push_back('-');
  else
    append_number(out, static_cast<std::uint64_t>(o.grpc_status));
  out.push_back('\n');
}

void AccessFormatter::append_json(std::string& out, const AccessRecord& r, const AccessOutcome& o) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.received.time_since_epoch()).count() % 1000;
  out.append(R"({"time":")").append(iso_time_).push_back('.');
  out.push_back(static_cast<char>('0' + ms / 100));
  out.push_back(static_cast<char>('0' + ms / 10 % 10));
  out.push_back(static_cast<char>('0' + ms % 10));
  out.append(R"(Z","client":)");
  append_json_string(out, r.client);
  out.append(R"(,"protocol":")").append(r.protocol).append(R"(","method":)");
  append_json_string(out, r.method);
  out.append(R"(,"target":)");
  append_json_string(out, r.target);
  auto optional = [&](const char* key, std::string_view v) {
    if (v.empty()) return;
    out.append(",\"").append(key).append("\":");
    append_json_string(out, v);
  };
  optional("route", r.route);
  out.append(R"(,"status":)");
  append_number(out, static_cast<std::uint64_t>(o.status));
  if (o.grpc_status >= 0) {
    out.append(R"(,"grpc_status":)");
    append_number(out, static_cast<std::uint64_t>(o.grpc_status));
  }
  out.append(R"(,"bytes_in":)");
  append_number(out, r.bytes_in);
  out.append(R"(,"bytes_out":)");
  append_number(out, o.bytes_out);
  out.append(R"(,"duration_ms":)");
  const auto us = duration_us(r, o);
  append_fixed(out, us / 1000, us % 1000, 3);
  optional("domain", r.domain);
  optional("request_id", r.request_id);
  optional("trace_id", r.trace_id);
  optional("user_agent", r.user_agent);
  optional("referer", r.referer);
  out.append("}\n");
}

}  // namespace edri::listener
