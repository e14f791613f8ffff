#include <catch2/catch.hpp>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "envelope/envelope.hpp"

using namespace edri::envelope;

namespace {

struct KV {
  std::string k, v;
};
struct K {
  std::string_view operator()(const KV& e) const { return e.k; }
};
struct V {
  std::string_view operator()(const KV& e) const { return e.v; }
};

std::vector<std::byte> sample() {
  auto h = make_header(Kind::Request, event_type_id("notes.create"), 77);
  h.origin_listener = 2;
  h.origin_connection = 9;
  h.origin_generation = 4;
  h.origin_stream = 5;
  h.flags = kFlagTiming;
  std::vector<KV> params{{"id", "42"}, {"name", "x y"}};
  EnvelopeWriter w(h);
  w.key_values(SectionType::PathParams, params, K{}, V{});
  w.text(SectionType::Query, "limit=5");
  w.text(SectionType::Body, R"({"title":"t"})");
  std::vector<std::byte> out(w.size());
  w.write(out.data());
  return out;
}

}  // namespace

TEST_CASE("an envelope round-trips header and sections", "[envelope]") {
  const auto bytes = sample();
  EnvelopeView v;
  REQUIRE(decode(bytes, v) == DecodeError::None);
  CHECK(v.header.magic == kMagic);
  CHECK(v.header.version == kVersion);
  CHECK(v.header.kind == static_cast<std::uint8_t>(Kind::Request));
  CHECK(v.header.event_type == event_type_id("notes.create"));
  CHECK(v.header.request_id == 77);
  CHECK(v.header.origin_listener == 2);
  CHECK(v.header.origin_connection == 9);
  CHECK(v.header.origin_generation == 4);
  CHECK(v.header.origin_stream == 5);
  CHECK(v.header.total_length == bytes.size());
  CHECK(v.section_count == 3);
  CHECK(v.text(SectionType::Query) == "limit=5");
  CHECK(v.text(SectionType::Body) == R"({"title":"t"})");
  CHECK_FALSE(v.has(SectionType::Headers));
  KeyValueReader kv(v.section(SectionType::PathParams));
  std::string_view k, val;
  REQUIRE(kv.next(k, val));
  CHECK((k == "id" && val == "42"));
  REQUIRE(kv.next(k, val));
  CHECK((k == "name" && val == "x y"));
  CHECK_FALSE(kv.next(k, val));
  CHECK(kv.ok());

  EnvelopeHeader h;
  CHECK(peek_header(bytes, h) == DecodeError::None);
  CHECK(h.request_id == 77);
}

TEST_CASE("event type ids are stable fnv1a-64", "[envelope]") {
  STATIC_REQUIRE(event_type_id("") == 0xcbf29ce484222325ULL);
  STATIC_REQUIRE(event_type_id("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(event_type_id("bench.noop") != event_type_id("bench.echo"));
}

TEST_CASE("every truncation of an envelope is an error", "[envelope]") {
  const auto bytes = sample();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EnvelopeView v;
    const auto e = decode(std::span<const std::byte>(bytes.data(), n), v);
    INFO("length " << n);
    CHECK(e != DecodeError::None);
  }
}

TEST_CASE("specific corruptions give specific errors", "[envelope]") {
  auto bytes = sample();
  EnvelopeView v;
  auto with = [&](std::size_t off, std::byte b) {
    auto copy = bytes;
    copy[off] = b;
    return decode(copy, v);
  };
  CHECK(with(0, std::byte{0}) == DecodeError::BadMagic);
  CHECK(with(4, std::byte{9}) == DecodeError::BadVersion);
  CHECK(with(5, std::byte{0}) == DecodeError::BadKind);
  CHECK(with(5, std::byte{99}) == DecodeError::BadKind);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK(decode(longer, v) == DecodeError::LengthMismatch);
  // Section count larger than the sections present.
  auto more = bytes;
  more[offsetof(EnvelopeHeader, section_count)] = std::byte{4};
  CHECK(decode(more, v) == DecodeError::SectionOverflow);
  more[offsetof(EnvelopeHeader, section_count)] = std::byte{200};
  CHECK(decode(more, v) == DecodeError::TooManySections);
  auto fewer = bytes;
  fewer[offsetof(EnvelopeHeader, section_count)] = std::byte{2};
  CHECK(decode(fewer, v) == DecodeError::TrailingBytes);
  // First section's length pointing past the end.
  auto overflow = bytes;
  overflow[sizeof(EnvelopeHeader) + 4] = std::byte{0xff};
  overflow[sizeof(EnvelopeHeader) + 5] = std::byte{0xff};
  CHECK(decode(overflow, v) == DecodeError::SectionOverflow);
}

TEST_CASE("random corruption never reads outside the input", "[envelope]") {
  const auto bytes = sample();
  std::mt19937 rng(12345);
  for (int i = 0; i < 20000; ++i) {
    auto copy = bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) copy[rng() % copy.size()] = std::byte(static_cast<unsigned char>(rng()));
    if (rng() % 4 == 0) copy.resize(rng() % (copy.size() + 1));
    EnvelopeView v;
    if (decode(copy, v) != DecodeError::None) continue;
    // Whatever decoded must lie inside the buffer, and key/value sections
    // must stop at their end.
    for (std::size_t s = 0; s < v.section_count; ++s) {
      const auto d = v.sections[s].data;
      REQUIRE(d.data() >= copy.data());
      REQUIRE(d.data() + d.size() <= copy.data() + copy.size());
      KeyValueReader kv(d);
      std::string_view k, val;
      while (kv.next(k, val)) {
        REQUIRE(reinterpret_cast<const std::byte*>(val.data() + val.size()) <= d.data() + d.size());
      }
    }
  }
}

TEST_CASE("a malformed key/value section stops with an error", "[envelope]") {
  const std::byte bad[] = {std::byte{5}, std::byte{0}, std::byte{'a'}};  // key length 5, one byte present
  KeyValueReader kv(bad);
  std::string_view k, v;
  CHECK_FALSE(kv.next(k, v));
  CHECK_FALSE(kv.ok());
}
