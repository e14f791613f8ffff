// The messages instances send each other over NATS (cluster/wire.hpp):
// entries go in and come out whole, bodies cross inline, oversize is
// refused with the setting named, and malformed input is refused.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cluster/inbound.hpp"
#include "cluster/portable.hpp"
#include "cluster/wire.hpp"
#include "envelope/envelope.hpp"

using namespace edri;
namespace env = edri::envelope;

namespace {

std::vector<std::byte> record(env::Kind kind, std::uint64_t id, env::SectionType type, std::string_view payload) {
  env::EnvelopeWriter w(env::make_header(kind, env::event_type_id("test.event"), id));
  w.text(env::SectionType::ContentType, "application/json");
  w.text(type, payload);
  std::vector<std::byte> out(w.size());
  w.write(out.data());
  return out;
}

std::vector<std::pair<cluster::Entry, std::string>> entries(std::span<const std::byte> m, cluster::FrameKind kind) {
  std::vector<std::pair<cluster::Entry, std::string>> out;
  const bool ok = cluster::for_each_entry(m, kind, [&](const cluster::WireEntry& e) {
    out.emplace_back(e.entry, std::string(e.view.text(env::SectionType::Body)));
  });
  if (!ok) out.clear();
  return out;
}

}  // namespace

TEST_CASE("a message carries several requests, each whole, with its number and deadline", "[cluster]") {
  cluster::WireMessage m(cluster::FrameKind::Request);
  std::string problem;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    const auto r = record(env::Kind::Request, 100 + id, env::SectionType::Body, "{\"n\":" + std::to_string(id) + "}");
    REQUIRE(m.add(id, static_cast<std::uint32_t>(1000 * id), env::make_header(env::Kind::Request, 5, 100 + id), r,
                  nullptr, 1 << 20, problem) == 0);
  }
  const auto got = entries(m.bytes(), cluster::FrameKind::Request);
  REQUIRE(got.size() == 3);
  for (std::uint64_t i = 0; i < 3; ++i) {
    CHECK(got[i].first.id == i + 1);
    CHECK(got[i].first.deadline_ms == 1000 * (i + 1));
    CHECK(got[i].second == "{\"n\":" + std::to_string(i + 1) + "}");
  }
  // The last one out, and into the next message.
  const auto last = m.take_last();
  CHECK(entries(m.bytes(), cluster::FrameKind::Request).size() == 2);
  m.clear();
  CHECK(m.empty());
  m.put_back(last);
  const auto moved = entries(m.bytes(), cluster::FrameKind::Request);
  REQUIRE(moved.size() == 1);
  CHECK(moved[0].first.id == 3);
  // A message of another kind is not taken for this one.
  CHECK_FALSE(cluster::for_each_entry(m.bytes(), cluster::FrameKind::Answer, [](const cluster::WireEntry&) {}));
}

TEST_CASE("a body in a file crosses inline, and past the limit it is refused naming the setting", "[cluster]") {
  const std::string path = "/tmp/edri-cluster-wire-test.txt";
  std::ofstream(path) << "from a file";
  cluster::WireMessage answers(cluster::FrameKind::Answer);
  std::string problem;
  const auto h = env::make_header(env::Kind::Response, 5, 9);
  REQUIRE(answers.add(9, 0, h, record(env::Kind::Response, 9, env::SectionType::File, path), nullptr, 1 << 20,
                      problem) == 0);
  const auto got = entries(answers.bytes(), cluster::FrameKind::Answer);
  REQUIRE(got.size() == 1);
  CHECK(got[0].second == "from a file");
  CHECK(answers.add(10, 0, h, record(env::Kind::Response, 10, env::SectionType::Body, std::string(5000, 'x')), nullptr,
                    4096, problem) == 502);
  CHECK(problem.find("EDRI_NATS_MAX_MESSAGE") != std::string::npos);
  CHECK(answers.add(11, 0, h, record(env::Kind::Response, 11, env::SectionType::File, path), nullptr, 5, problem) ==
        502);
  cluster::WireMessage requests(cluster::FrameKind::Request);
  CHECK(requests.add(1, 100, h, record(env::Kind::Request, 1, env::SectionType::Body, std::string(5000, 'x')), nullptr,
                     4096, problem) == 413);
  CHECK(entries(answers.bytes(), cluster::FrameKind::Answer).size() == 1);
  std::remove(path.c_str());
}

TEST_CASE("malformed messages from NATS are refused: short, long, foreign, naming a local thing", "[cluster]") {
  cluster::WireMessage m(cluster::FrameKind::Request);
  std::string problem;
  REQUIRE(m.add(1, 10, env::make_header(env::Kind::Request, 5, 1),
                record(env::Kind::Request, 1, env::SectionType::Body, "{}"), nullptr, 1 << 20, problem) == 0);
  const auto bytes = m.bytes();
  auto none = [](const cluster::WireEntry&) {};
  CHECK(cluster::for_each_entry(bytes, cluster::FrameKind::Request, none));
  for (std::size_t cut = 0; cut < bytes.size(); ++cut)
    CHECK_FALSE(cluster::for_each_entry(bytes.first(cut), cluster::FrameKind::Request, none));
  std::vector<std::byte> longer(bytes.begin(), bytes.end());
  longer.push_back(std::byte{0});
  CHECK_FALSE(cluster::for_each_entry(longer, cluster::FrameKind::Request, none));
  std::vector<std::byte> foreign(bytes.begin(), bytes.end());
  foreign[0] = std::byte{'X'};
  CHECK_FALSE(cluster::for_each_entry(foreign, cluster::FrameKind::Request, none));
  // A File section names a path of the other host: never taken.
  cluster::WireMessage files(cluster::FrameKind::Request);
  env::EnvelopeWriter w(env::make_header(env::Kind::Request, 5, 2));
  w.text(env::SectionType::Body, "x");
  const std::vector<std::byte> ok_record = [&] {
    std::vector<std::byte> out(w.size());
    w.write(out.data());
    return out;
  }();
  REQUIRE(files.add(2, 10, env::make_header(env::Kind::Request, 5, 2), ok_record, nullptr, 1 << 20, problem) == 0);
  std::vector<std::byte> forged(files.bytes().begin(), files.bytes().end());
  // The Body section's type, after the frame, the entry and the header.
  const std::size_t type_at = sizeof(cluster::Frame) + sizeof(cluster::Entry) + sizeof(env::EnvelopeHeader);
  const auto file_type = static_cast<std::uint16_t>(env::SectionType::File);
  std::memcpy(forged.data() + type_at, &file_type, sizeof file_type);
  CHECK_FALSE(cluster::for_each_entry(forged, cluster::FrameKind::Request, none));
}

TEST_CASE("a stream's name and its key in the JetStream bucket map both ways", "[cluster]") {
  using edri::cluster::stream_key;
  using edri::cluster::stream_name;
  CHECK(stream_key("room:1.a_b-C") == "room=3A1=2Ea_b-C");
  for (const std::string name : {"a", "room:1", "a..b", ".x.", "::", "A-z_0.9:"}) {
    const auto key = stream_key(name);
    CHECK(key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-=") ==
          std::string::npos);
    CHECK(stream_name(key) == name);
  }
  CHECK(edri::cluster::stream_bucket("shop") == "shop_streams");
}

TEST_CASE("a hello is measured before it is parsed, and only its known fields are kept", "[cluster][hostile]") {
  const auto h = cluster::read_hello(R"({"id":"9b1f","host":"a","pid":7,"domains":["notes",3],"extra":{"x":[1]}})");
  REQUIRE(h);
  CHECK(h->id == "9b1f");
  CHECK(h->domains == std::vector<std::string>{"notes"});
  CHECK_FALSE(h->bye);
  CHECK(h->listed() == nlohmann::json{{"id", "9b1f"}, {"host", "a"}, {"pid", 7}, {"domains", {"notes"}}});
  CHECK(cluster::read_hello(R"({"id":"x","bye":true})")->bye);
  // A replaced generation's: listed as draining.
  const auto draining = cluster::read_hello(R"({"id":"x","host":"a","pid":8,"domains":[],"draining":true})");
  REQUIRE(draining);
  CHECK(draining->listed()["draining"] == true);
  CHECK_FALSE(cluster::read_hello(R"({"id":"x","draining":"yes"})")->draining);
  // Deeper than a hello is, however deep: refused before any parse.
  CHECK_FALSE(cluster::read_hello(R"({"id":"x","domains":[],"e":[[[]]]})"));
  CHECK_FALSE(cluster::read_hello(std::string(100000, '[') + std::string(100000, ']')));
  CHECK_FALSE(cluster::read_hello(R"({"id":"x","host":")" + std::string(70000, 'h') + "\"}"));
  CHECK_FALSE(cluster::read_hello(R"({"id":""})"));
  CHECK_FALSE(cluster::read_hello(R"({"id":")" + std::string(65, 'i') + "\"}"));
  CHECK_FALSE(cluster::read_hello(R"({"id":7})"));
  CHECK_FALSE(cluster::read_hello("not json"));
}

TEST_CASE("a stream bucket value too deep, too large or of the wrong shape is refused, saying why",
          "[cluster][hostile]") {
  constexpr std::size_t kMax = 1024;
  std::string why;
  // Built as text: a document this deep is not for a test's stack to dump.
  const auto value = [](const std::string& state) {
    return R"({"revision":2,"from":1,"ts":5,"patches":[{}],"state":)" + state + "}";
  };
  const auto r = cluster::read_stream_value(value(R"({"a":1})"), kMax, why);
  REQUIRE(r);
  CHECK(r->revision == 2);
  CHECK(r->from == 1);
  CHECK(r->state == nlohmann::json{{"a", 1}});
  // A state as deep as a handler's may be is taken; one much deeper is not.
  const auto state_of_depth = [](std::size_t depth) {
    return "{\"d\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  // (Taken means dumped, once per level: sanitizer builds use several
  // times the stack per level, so there a tenth of the depth is tried, as
  // in json_depth_test.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr std::size_t taken_depth = cluster::kStreamJsonMaxDepth / 10;
#else
  constexpr std::size_t taken_depth = cluster::kStreamJsonMaxDepth;
#endif
  CHECK(cluster::read_stream_value(value(state_of_depth(taken_depth)), 100000, why));
  CHECK_FALSE(cluster::read_stream_value(value(state_of_depth(cluster::kStreamJsonMaxDepth + 2)), 100000, why));
  CHECK(why.find("nesting deeper") != std::string::npos);
  // A state past the limit, even where the value's text is within three times it.
  CHECK_FALSE(cluster::read_stream_value(value(R"({"big":")" + std::string(kMax, 'b') + "\"}"), kMax, why));
  CHECK(why == "a state larger than EDRI_STREAM_MAX_BYTES");
  CHECK_FALSE(cluster::read_stream_value(value(R"({"big":")" + std::string(4 * kMax + 4096, 'b') + "\"}"), kMax, why));
  CHECK(why.find("larger than EDRI_STREAM_MAX_BYTES allows") != std::string::npos);
  // Revision numbers that would wrap around, and shapes that are no revision.
  CHECK_FALSE(cluster::read_stream_value(R"({"revision":18446744073709551615,"from":18446744073709551614,"ts":0,)"
                                         R"("patches":[{}],"state":{}})",
                                         kMax, why));
  CHECK_FALSE(cluster::read_stream_value(R"({"revision":2,"from":1,"ts":0,"patches":[1],"state":{}})", kMax, why));
  CHECK_FALSE(cluster::read_stream_value("[]", kMax, why));
  CHECK(why == "no revision of edri's");
}

TEST_CASE("JSON that crosses in a request or an answer is measured against the ceiling", "[cluster][hostile]") {
  const auto deep = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  CHECK_FALSE(cluster::json_too_deep("application/json", deep(edri::kJsonDepthCeiling)));
  CHECK(cluster::json_too_deep("application/problem+json", deep(edri::kJsonDepthCeiling + 1)));
  CHECK_FALSE(cluster::json_too_deep("application/octet-stream", deep(100000)));
}

TEST_CASE("a log limit lets a line a second through and counts the rest", "[cluster][hostile]") {
  cluster::LogLimit limit(std::chrono::milliseconds(50));
  std::uint64_t unlogged = 99;
  CHECK(limit.allow(unlogged));
  CHECK(unlogged == 0);
  for (int i = 0; i < 1000; ++i) CHECK_FALSE(limit.allow(unlogged));
  CHECK(limit.overdue() == 0);  // not yet
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(limit.allow(unlogged));
  CHECK(unlogged == 1000);
  CHECK_FALSE(limit.allow(unlogged));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(limit.overdue() == 1);
  CHECK(limit.overdue() == 0);
  CHECK(cluster::LogLimit::more(3).find("3 more") != std::string::npos);
  CHECK(cluster::LogLimit::more(0).empty());
}
