// AccessFormatter and trace_id_of: the access log's text, without a server.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "listener/access_line.hpp"
#include "support/access_record_sample.hpp"

using edri::listener::AccessFormat;
using edri::listener::AccessFormatter;
using edri::listener::AccessOutcome;
using edri::listener::AccessRecord;
using edri::listener::trace_id_of;
using nlohmann::json;

namespace {

// 2026-12-06T07:45:12.345Z, and (outcome) an answer 1,234 µs later.
AccessRecord record() { return edri::test::sample_access_record(); }

AccessOutcome outcome(const AccessRecord& r, int status = 200, int grpc_status = -1) {
  return AccessOutcome{status, grpc_status, 42, r.started + std::chrono::microseconds(1234)};
}

std::string line(AccessFormat f, const AccessRecord& r, const AccessOutcome& o) {
  std::string out;
  AccessFormatter(f).append(out, r, o);
  return out;
}

}  // namespace

TEST_CASE("access line: combined is nginx's then what nginx's lacks", "[access_log]") {
  const auto r = record();
  CHECK(line(AccessFormat::Combined, r, outcome(r)) ==
        "10.0.0.1 - - [06/Dec/2026:07:45:12 +0000] \"GET /items/7?x=1 HTTP/1.1\" 200 42 \"-\" \"curl/8\" 0.001234 "
        "http/1.1 \"/items/{id:int}\" shop abc-1 - -\n");
  auto call = r;
  call.protocol = "grpc";
  call.method = "POST";
  call.target = "/edri.v1.Edri/Call";
  call.route = {};
  CHECK(line(AccessFormat::Combined, call, outcome(call, 200, 5)) ==
        "10.0.0.1 - - [06/Dec/2026:07:45:12 +0000] \"POST /edri.v1.Edri/Call HTTP/2.0\" 200 42 \"-\" \"curl/8\" "
        "0.001234 grpc \"-\" shop abc-1 - 5\n");
}

TEST_CASE("access line: what a client sent cannot break a combined line", "[access_log]") {
  auto r = record();
  r.user_agent = "a\"b\\c\nd\x01\xc3\xa9";
  r.target = "/p q";
  const auto text = line(AccessFormat::Combined, r, outcome(r));
  CHECK(text.find(R"("a\x22b\x5cc\x0ad\x01\xc3\xa9")") != std::string::npos);
  CHECK(text.find('\n') == text.size() - 1);  // one line
  for (unsigned char ch : text) CHECK((ch == '\n' || (ch >= 32 && ch <= 126)));
}

TEST_CASE("access line: JSON is one valid object whatever bytes a client sent", "[access_log]") {
  auto r = record();
  r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  r.referer = "http://x/";
  r.user_agent = "ok \xc3\xa9 bad \xff\xfe end \"q\"\n";
  const auto text = line(AccessFormat::Json, r, outcome(r, 503));
  REQUIRE(text.back() == '\n');
  CHECK(text.find('\n') == text.size() - 1);
  const json j = json::parse(text);  // throws on invalid UTF-8
  CHECK(j["time"] == "2026-12-06T07:45:12.345Z");
  CHECK(j["client"] == "10.0.0.1");
  CHECK(j["protocol"] == "http/1.1");
  CHECK(j["method"] == "GET");
  CHECK(j["target"] == "/items/7?x=1");
  CHECK(j["route"] == "/items/{id:int}");
  CHECK(j["status"] == 503);
  CHECK(!j.contains("grpc_status"));
  CHECK(j["bytes_in"] == 3);
  CHECK(j["bytes_out"] == 42);
  CHECK(j["duration_ms"] == 1.234);
  CHECK(j["domain"] == "shop");
  CHECK(j["request_id"] == "abc-1");
  CHECK(j["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(j["referer"] == "http://x/");
  CHECK(j["user_agent"] == "ok \xc3\xa9 bad \xef\xbf\xbd\xef\xbf\xbd end \"q\"\n");
  auto bare = record();
  bare.route = {};
  bare.domain = {};
  bare.request_id.clear();
  bare.user_agent.clear();
  const json k = json::parse(line(AccessFormat::Json, bare, outcome(bare, 200, 0)));
  CHECK(!k.contains("route"));
  CHECK(!k.contains("domain"));
  CHECK(!k.contains("user_agent"));
  CHECK(k["grpc_status"] == 0);
}

TEST_CASE("access line: a date is formatted once a second and each line has its own", "[access_log]") {
  AccessFormatter f(AccessFormat::Json);
  auto r = record();
  std::string out;
  f.append(out, r, outcome(r));
  r.received += std::chrono::milliseconds(1000);
  f.append(out, r, outcome(r));
  CHECK(out.find("07:45:12.345Z") != std::string::npos);
  CHECK(out.find("07:45:13.345Z") != std::string::npos);
}

TEST_CASE("trace_id_of: W3C traceparent of version 00 and later and invalid ones refused", "[access_log]") {
  CHECK(trace_id_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(trace_id_of("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more") ==
        "4bf92f3577b34da6a3ce929d0e0e4736");  // a later version may add fields
  CHECK(trace_id_of("").empty());
  CHECK(trace_id_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x").empty());  // 00 is 55 long
  CHECK(trace_id_of("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").empty());
  CHECK(trace_id_of("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").empty());  // lowercase only
  CHECK(trace_id_of("00-00000000000000000000000000000000-00f067aa0ba902b7-01").empty());
  CHECK(trace_id_of("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01").empty());
  CHECK(trace_id_of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g").empty());
  CHECK(trace_id_of("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").empty());
}
