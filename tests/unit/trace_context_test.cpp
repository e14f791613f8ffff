// W3C Trace Context parsing and ids (runtime/trace_context.hpp) and the
// OTLP JSON of spans (runtime/span_exporter.hpp), without processes.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "manager/traced_database.hpp"
#include "runtime/span_exporter.hpp"
#include "runtime/trace_context.hpp"

using namespace edri;

namespace {
const std::string kGiven = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
}

TEST_CASE("traceparent: a valid header is read and written back the same", "[trace]") {
  const auto c = parse_traceparent(kGiven);
  REQUIRE(c);
  CHECK(c->sampled());
  CHECK(hex_of(c->trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(hex_of(c->span_id) == "00f067aa0ba902b7");
  CHECK(c->text() == kGiven);
  const auto quiet = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  REQUIRE(quiet);
  CHECK_FALSE(quiet->sampled());
}

TEST_CASE("traceparent: what the standard refuses is refused", "[trace]") {
  for (const std::string& bad :
       {std::string(""), std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"),
        std::string("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
        std::string("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
        std::string("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), kGiven + "-more",
        std::string("0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        std::string("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        std::string("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x")}) {
    INFO(bad);
    CHECK_FALSE(parse_traceparent(bad));
  }
  // Any byte but a lowercase hex digit, in any digit's place (the
  // neighbours of '0'-'9' and 'a'-'f', uppercase, bytes past 0x7f), and
  // only those: a place's every hex digit is taken (but version ff).
  int wrong = 0;
  for (std::size_t at = 0; at < kGiven.size(); ++at) {
    if (kGiven[at] == '-') continue;
    for (int c = 0; c < 256; ++c) {
      std::string text = kGiven;
      text[at] = static_cast<char>(c);
      const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      const bool valid = hex && text.substr(0, 2) != "ff";
      if (parse_traceparent(text).has_value() != valid) ++wrong;
    }
  }
  CHECK(wrong == 0);
  // A later version may add fields after a '-'.
  CHECK(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));
}

TEST_CASE("trace ids: new traces and spans are random and never zero", "[trace]") {
  std::set<std::string> traces, spans;
  for (int i = 0; i < 1000; ++i) {
    const TraceContext t = new_trace(i % 2 == 0);
    CHECK(t.sampled() == (i % 2 == 0));
    traces.insert(hex_of(t.trace_id));
    spans.insert(hex_of(t.child().span_id));
    CHECK(parse_traceparent(t.text()));
  }
  CHECK(traces.size() == 1000);
  CHECK(spans.size() == 1000);
  const TraceContext t = new_trace(true);
  CHECK(t.child().trace_id == t.trace_id);
  CHECK(t.child().span_id != t.span_id);
  int sampled = 0;
  for (int i = 0; i < 10000; ++i) sampled += sample(0.25);
  CHECK(sampled > 2000);
  CHECK(sampled < 3000);
  CHECK_FALSE(sample(0));
  CHECK(sample(1));
}

TEST_CASE("OTLP JSON: spans as an export request, ids in hex, integers as strings", "[trace]") {
  SpanRecord s;
  s.context = *parse_traceparent(kGiven);
  s.parent = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01")->span_id;
  s.kind = SpanKind::Server;
  s.name = "GET /notes/{id}";
  s.start_ns = 1796601382371691018;
  s.end_ns = 1796601382372014330;
  s.error = true;
  s.attributes.push_back({"http.response.status_code", std::int64_t{503}});
  s.attributes.push_back({"url.path", std::string("/notes/\"7\"\n")});
  SpanRecord root = s;
  root.parent = {};
  const auto j = nlohmann::json::parse(otlp_json({s, root}, "edri-server", "manager notes"));
  const auto& rs = j.at("resourceSpans").at(0);
  CHECK(rs.at("resource").at("attributes").at(0) ==
        nlohmann::json{{"key", "service.name"}, {"value", {{"stringValue", "edri-server"}}}});
  const auto& spans = rs.at("scopeSpans").at(0).at("spans");
  REQUIRE(spans.size() == 2);
  const auto& a = spans.at(0);
  CHECK(a.at("traceId") == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(a.at("spanId") == "00f067aa0ba902b7");
  CHECK(a.at("parentSpanId") == "1111111111111111");
  CHECK(a.at("kind") == 2);
  CHECK(a.at("startTimeUnixNano") == "1796601382371691018");
  CHECK(a.at("status").at("code") == 2);
  CHECK(a.at("attributes").at(0).at("value").at("intValue") == "503");
  CHECK(a.at("attributes").at(1).at("value").at("stringValue") == "/notes/\"7\"\n");
  CHECK_FALSE(spans.at(1).contains("parentSpanId"));
}

TEST_CASE("span queue: spans read back as pushed, the buffer kept after clear", "[trace]") {
  SpanQueue q;
  SpanRecord a;
  a.context = new_trace(true);
  a.parent = new_span_id();
  a.kind = SpanKind::Client;
  a.name = std::string("SELECT notes\0x", 14);  // any bytes
  a.start_ns = 1;
  a.end_ns = std::numeric_limits<std::uint64_t>::max();
  a.error = true;
  a.attributes.push_back({"db.system", std::string("sqlite")});
  a.attributes.push_back({"http.response.status_code", std::int64_t{-7}});
  a.attributes.push_back({"empty", std::string()});
  SpanRecord b;  // a root span with nothing but defaults
  b.context = new_trace(false);
  SpanRecord c = a;
  c.name.assign(70000, 'n');                                          // cut to 65535
  c.attributes.assign(300, SpanAttribute("k", std::string(3, 'v')));  // 255 kept
  for (const auto* s : {&a, &b, &c}) q.push(*s);
  REQUIRE(q.size() == 3);
  std::vector<SpanView> views;
  std::vector<std::vector<std::string>> texts;
  q.for_each([&](const SpanView& v) {
    views.push_back(v);
    texts.emplace_back();
    for (const auto& at : v.attributes)
      texts.back().push_back(std::string(at.key) + "=" +
                             (at.is_number ? std::to_string(at.number) : std::string(at.text)));
    views.back().attributes = {};  // the span is valid in the call only
  });
  REQUIRE(views.size() == 3);
  CHECK(views[0].context.trace_id == a.context.trace_id);
  CHECK(views[0].context.span_id == a.context.span_id);
  CHECK(views[0].context.flags == a.context.flags);
  CHECK(views[0].parent == a.parent);
  CHECK(views[0].kind == SpanKind::Client);
  CHECK(views[0].name == a.name);
  CHECK(views[0].start_ns == 1);
  CHECK(views[0].end_ns == a.end_ns);
  CHECK(views[0].error);
  CHECK(texts[0] == std::vector<std::string>{"db.system=sqlite", "http.response.status_code=-7", "empty="});
  CHECK(views[1].name.empty());
  CHECK(views[1].parent == SpanId{});
  CHECK_FALSE(views[1].context.sampled());
  CHECK(texts[1].empty());
  CHECK(views[2].name.size() == 65535);
  CHECK(texts[2].size() == 255);
  CHECK(texts[2].back() == "k=vvv");

  SpanQueue other;
  other.swap(q);
  CHECK(q.empty());
  CHECK(other.size() == 3);
  other.clear();
  CHECK(other.empty());
  int seen = 0;
  other.for_each([&](const SpanView&) { ++seen; });
  CHECK(seen == 0);
  other.push(b);
  other.for_each([&](const SpanView& v) {
    CHECK(v.context.trace_id == b.context.trace_id);
    ++seen;
  });
  CHECK(seen == 1);
}

TEST_CASE("span exporter: spans queued by one thread reach the file, a batch per line", "[trace][threads]") {
  char folder[] = "/tmp/edri-spans.XXXXXX";
  REQUIRE(::mkdtemp(folder));
  const std::string path = std::string(folder) + "/spans.jsonl";
  std::uint64_t dropped = 0;
  {
    SpanExporter exporter({"", path, 64, "test", {}});
    for (int i = 0; i < 100; ++i) {
      SpanRecord s;
      s.context = new_trace(true);
      s.name = "span " + std::to_string(i);
      exporter.submit(std::move(s));
    }
    dropped = exporter.dropped();  // past the buffer of 64 waiting
  }                                // the destructor writes what is queued
  std::ifstream in(path);
  std::size_t spans = 0, lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    spans += nlohmann::json::parse(line).at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").size();
  CHECK(lines >= 1);
  CHECK(spans >= 64);
  CHECK(spans + dropped == 100);
  std::filesystem::remove_all(folder);
}

TEST_CASE("a database span is named by its statement's operation and the database", "[trace]") {
  using edri::Statement;
  using edri::manager::statement_span_name;
  CHECK(statement_span_name({Statement{"select 1", {}}}, "notes") == "SELECT notes");
  CHECK(statement_span_name({Statement{"  (SELECT 1) UNION (SELECT 2)", {}}}, "notes") == "SELECT notes");
  CHECK(statement_span_name({Statement{"INSERT INTO t VALUES ($1)", {}}}, "db") == "INSERT db");
  CHECK(statement_span_name({Statement{"", {}}}, "db") == "SQL db");
  CHECK(statement_span_name({Statement{"SELECT 1", {}}, Statement{"SELECT 2", {}}}, "db") == "BATCH db");
}
