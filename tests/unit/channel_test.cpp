#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "transport/segment.hpp"
#include "unit/segment_fixture.hpp"

using namespace edri::transport;

namespace {

std::vector<std::byte> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<unsigned char>(seed * 31 + i * 7));
  return v;
}

std::vector<std::vector<std::byte>> drain_all(ChannelConsumer& c) {
  std::vector<std::vector<std::byte>> out;
  c.drain([&](std::span<const std::byte> rec, std::uint32_t) { out.emplace_back(rec.begin(), rec.end()); });
  return out;
}

}  // namespace

TEST_CASE("records wrap around the end of the ring in order", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  auto c = f.segment.consumer(0);
  std::uint32_t seq = 0, expect = 0;
  // Sizes that do not divide the ring, so records land on every offset and
  // the wrap marker is exercised many times.
  for (int round = 0; round < 2000; ++round) {
    const std::size_t n = 1 + (round * 37) % 300;
    REQUIRE(p.try_push(pattern(n, seq), seq));
    ++seq;
    if (round % 3 == 2) {
      c.drain([&](std::span<const std::byte> rec, std::uint32_t tag) {
        REQUIRE(tag == expect);
        const std::size_t want = 1 + (expect * 37) % 300;
        REQUIRE(rec.size() == want);
        REQUIRE(std::memcmp(rec.data(), pattern(want, expect).data(), want) == 0);
        ++expect;
      });
    }
  }
  c.drain([&](std::span<const std::byte>, std::uint32_t tag) { REQUIRE(tag == expect++); });
  CHECK(expect == seq);
  CHECK(c.empty());
}

TEST_CASE("a full ring refuses records and asks to be woken when room frees", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  auto c = f.segment.consumer(0);
  int pushed = 0;
  while (p.try_push(pattern(100, pushed))) ++pushed;
  // 100 bytes + 8 header, padded to 112: 36 records fill 4032 of 4096 bytes.
  CHECK(pushed == 4096 / 112);
  CHECK(f.segment.control(0).producer_waiting.load() == 1);
  auto r = c.drain([](std::span<const std::byte>, std::uint32_t) {}, 1);
  CHECK(r.records == 1);
  CHECK(r.wake_producer);
  CHECK(f.segment.control(0).producer_waiting.load() == 0);
  CHECK(p.try_push(pattern(100, 999)));
  auto rest = drain_all(c);
  CHECK(rest.size() == static_cast<std::size_t>(pushed));
  CHECK(rest.back() == pattern(100, 999));
}

TEST_CASE("records of every size up to the limit pass intact", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  auto c = f.segment.consumer(0);
  const std::size_t limit = p.max_record();
  CHECK(limit == 4096 / 4 - 8);
  for (std::size_t n = 0; n <= limit; ++n) {
    const auto data = pattern(n, static_cast<std::uint32_t>(n));
    REQUIRE(p.try_push(data));
    auto got = drain_all(c);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0] == data);
  }
  CHECK_FALSE(p.try_push(pattern(limit + 1, 0)));
  CHECK(p.reserve(limit + 1) == nullptr);
}

TEST_CASE("a consumer that stops mid-ring and a fresh one continue from the shared position", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  {
    auto c = f.segment.consumer(0);
    REQUIRE(p.try_push(pattern(10, 1)));
    REQUIRE(p.try_push(pattern(10, 2)));
    c.drain([](std::span<const std::byte>, std::uint32_t) {}, 1);
  }
  // A restarted consumer (a new process) sees only what was not consumed.
  auto c2 = f.segment.consumer(0);
  auto got = drain_all(c2);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == pattern(10, 2));
  // And a restarted producer continues after the last published record.
  auto p2 = f.segment.producer(0);
  REQUIRE(p2.try_push(pattern(10, 3)));
  got = drain_all(c2);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == pattern(10, 3));
}

TEST_CASE("a consumer that died handling a record is restarted past it, not before", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  for (std::uint32_t i = 1; i <= 4; ++i) REQUIRE(p.try_push(pattern(20, i), i));
  {
    auto c = f.segment.consumer(0);
    CHECK_FALSE(c.skipped_poison());
    // Records 1 and 2 are handled; record 3 kills the process (here: an
    // exception leaves drain before the batch is committed).
    std::vector<std::uint32_t> seen;
    CHECK_THROWS(c.drain([&](std::span<const std::byte>, std::uint32_t tag) {
      if (tag == 3) throw std::runtime_error("crash");
      seen.push_back(tag);
    }));
    CHECK(seen == std::vector<std::uint32_t>{1, 2});
  }
  // The next process neither handles 1 and 2 again nor dies on 3 again.
  auto c2 = f.segment.consumer(0);
  CHECK(c2.skipped_poison());
  std::vector<std::uint32_t> tags;
  c2.drain([&](std::span<const std::byte>, std::uint32_t tag) { tags.push_back(tag); });
  CHECK(tags == std::vector<std::uint32_t>{4});
  // A consumer that finished cleanly leaves nothing to skip.
  auto c3 = f.segment.consumer(0);
  CHECK_FALSE(c3.skipped_poison());
}

TEST_CASE("a corrupted record header is reported, never read past", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  auto c = f.segment.consumer(0);
  std::byte* rec = p.reserve(16);
  REQUIRE(rec);
  p.commit();
  // Overwrite the length with garbage, as a broken peer might.
  const std::uint32_t huge = 0x7fffffff;
  std::memcpy(rec - 8, &huge, 4);
  int calls = 0;
  auto r = c.drain([&](std::span<const std::byte>, std::uint32_t) { ++calls; });
  CHECK(r.corrupt);
  CHECK(calls == 0);
  CHECK(c.empty());
}

TEST_CASE("with its consumer dead, a producer sees what it never took and reads back what it did", "[channel]") {
  SegmentFixture f(4096);
  auto p = f.segment.producer(0);
  std::vector<std::uint64_t> at;
  for (std::uint32_t i = 1; i <= 5; ++i) {
    REQUIRE(p.try_push(pattern(20, i), i));
    at.push_back(p.last_record());
  }
  {
    auto c = f.segment.consumer(0);
    // Records 1 and 2 are handled; record 3 kills the consumer.
    std::uint32_t seen = 0;
    CHECK_THROWS(c.drain([&](std::span<const std::byte>, std::uint32_t) {
      if (++seen == 3) throw std::runtime_error("dies on record 3");
    }));
  }
  // Untaken: 4 and 5, where the successor will start.
  std::vector<std::vector<std::byte>> untaken;
  p.for_each_untaken([&](std::span<const std::byte> rec) { untaken.emplace_back(rec.begin(), rec.end()); });
  REQUIRE(untaken.size() == 2);
  CHECK(untaken[0] == pattern(20, 4));
  CHECK(untaken[1] == pattern(20, 5));
  auto successor = f.segment.consumer(0);
  auto got = drain_all(successor);
  REQUIRE(got.size() == 2);
  CHECK(got[0] == pattern(20, 4));
  // Taken records can be read again while the ring has not come round.
  const auto third = p.record_at(at[2]);
  CHECK(std::vector<std::byte>(third.begin(), third.end()) == pattern(20, 3));
  // A lap of new records later, they cannot.
  for (std::uint32_t i = 0; i < 200; ++i) {
    REQUIRE(p.try_push(pattern(20, 100 + i)));
    drain_all(successor);
  }
  CHECK(p.record_at(at[2]).empty());
  CHECK(p.record_at(p.last_record()).size() == 20);
}

TEST_CASE("managers answer listeners on rings of their own while the pairs are few enough", "[channel]") {
  using edri::transport::Topology;
  const Topology small(2, 3);
  CHECK(small.direct_answers());
  CHECK(small.channels().size() == 2 * 2 + 2 + 2 * 3 + 2 * 3 + 2 + 2 * 3 + 3 * 2);
  for (std::uint32_t j = 0; j < 3; ++j)
    for (std::uint32_t i = 0; i < 2; ++i) CHECK_NOTHROW(small.channel(small.manager_slot(j), small.listener_slot(i)));
  // A listener sends clients' requests to the router on a ring of its own
  // (0026), then to every manager (0027), numbered after every channel
  // that existed before.
  const auto before = 2 * 2 + 2 + 2 * 3 + 2 * 3;
  for (std::uint32_t i = 0; i < 2; ++i) CHECK(small.channel(small.listener_slot(i), Topology::kRouter) == before + i);
  CHECK(small.direct_requests());
  for (std::uint32_t j = 0; j < 3; ++j)
    for (std::uint32_t i = 0; i < 2; ++i)
      CHECK(small.channel(small.listener_slot(i), small.manager_slot(j)) == before + 2 + j * 2 + i);
  // Then every ordered pair of managers (0028), after all of those.
  CHECK(small.direct_between_managers());
  std::uint32_t next = before + 2 + 3 * 2;
  for (std::uint32_t a = 0; a < 3; ++a)
    for (std::uint32_t b = 0; b < 3; ++b)
      if (a == b)
        CHECK_THROWS(small.channel(small.manager_slot(a), small.manager_slot(b)));
      else
        CHECK(small.channel(small.manager_slot(a), small.manager_slot(b)) == next++);
  CHECK(next == small.channels().size());
  // One manager has no other to ask; past kMaxAnswerChannels ordered
  // pairs, managers' requests keep the router.
  CHECK_FALSE(Topology(1, 1).direct_between_managers());
  CHECK(Topology(1, 16).direct_between_managers());
  CHECK_FALSE(Topology(1, 17).direct_between_managers());
  CHECK_THROWS(Topology(1, 17).channel(Topology(1, 17).manager_slot(0), Topology(1, 17).manager_slot(1)));
  // Where instances are joined, requests keep the router (the switch may
  // take any event).
  const Topology joined(2, 3, true);
  CHECK(joined.direct_answers());
  CHECK_FALSE(joined.direct_requests());
  CHECK_THROWS(joined.channel(joined.listener_slot(0), joined.manager_slot(0)));
  CHECK_FALSE(joined.direct_between_managers());
  // Past kMaxAnswerChannels pairs, answers go back through the router.
  const Topology large(16, Topology::kMaxAnswerChannels / 16 + 1);
  CHECK_FALSE(large.direct_answers());
  CHECK_THROWS(large.channel(large.manager_slot(0), large.listener_slot(0)));
  CHECK_FALSE(large.direct_requests());
  CHECK_THROWS(large.channel(large.listener_slot(0), large.manager_slot(0)));
  CHECK_NOTHROW(large.channel(large.listener_slot(15), Topology::kRouter));
}
