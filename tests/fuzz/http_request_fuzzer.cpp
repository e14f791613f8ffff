// HTTP request -> event: arbitrary bytes through the request parser (fed in
// two pieces, split where the input says), each request it delivers routed
// through a route table and written into an envelope, which must decode
// back to what was written. Nothing may crash, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "envelope/envelope.hpp"
#include "http/request_parser.hpp"
#include "http/route_table.hpp"

namespace {

using namespace edri;

const http::RouteTable& routes() {
  static const http::RouteTable table = [] {
    http::RouteTable t;
    t.add(Method::Get, "/", 0);
    t.add(Method::Get, "/notes/{id:int}", 1);
    t.add(Method::Put, "/notes/{id:int}", 2);
    t.add(Method::Post, "/notes", 3);
    t.add(Method::Get, "/items/{key:uuid}/{name}", 4);
    t.add(Method::Delete, "/a/{x}/b/{y}/c", 5);
    return t;
  }();
  return table;
}

void to_event(http::HttpRequest& req) {
  const std::string_view target = req.target;
  const auto q = target.find('?');
  const auto path = target.substr(0, q);
  const auto query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  const auto method = http::to_method(req.method);
  if (!method) return;
  const auto m = routes().find(*method, path);
  if (m.result != http::RouteTable::Match::Result::Found) return;
  envelope::EnvelopeWriter w(envelope::make_header(envelope::Kind::Request, m.target, 1));
  const auto params = m.path_params();
  if (!params.empty())
    w.key_values(envelope::SectionType::PathParams, params, envelope::ParamKey{}, envelope::ParamValue{});
  if (!query.empty()) w.text(envelope::SectionType::Query, query);
  if (!req.headers.empty())
    w.key_values(envelope::SectionType::Headers, req.headers, envelope::StringPairKey{}, envelope::StringPairValue{});
  w.text(envelope::SectionType::Body, req.body);
  std::string buf(w.size(), '\0');
  w.write(reinterpret_cast<std::byte*>(buf.data()));
  envelope::EnvelopeView v;
  if (envelope::decode(std::as_bytes(std::span(buf.data(), buf.size())), v) != envelope::DecodeError::None)
    __builtin_trap();
  if (v.text(envelope::SectionType::Body) != req.body) __builtin_trap();
  envelope::KeyValueReader kv(v.section(envelope::SectionType::Headers));
  std::string_view k, val;
  std::size_t n = 0;
  while (kv.next(k, val)) {
    if (n >= req.headers.size() || k != req.headers[n].first || val != req.headers[n].second) __builtin_trap();
    ++n;
  }
  if (!kv.ok() || n != req.headers.size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  http::ParserLimits limits;
  limits.max_body_bytes = 1 << 16;
  http::RequestParser parser(limits, [](http::HttpRequest& req) { to_event(req); });
  const auto* bytes = reinterpret_cast<const char*>(data);
  const std::size_t split = size ? data[0] % (size + 1) : 0;
  const auto first = parser.feed(bytes, split);
  if (first.ok && !first.upgrade && !first.paused) parser.feed(bytes + split, size - split);
  return 0;
}
