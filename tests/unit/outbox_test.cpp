// Outbox: a full ring never blocks the producer; records wait in a bounded
// local queue, in order, and a reached bound is refused (the caller answers
// 503), never memory without end.
#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "transport/outbox.hpp"
#include "unit/segment_fixture.hpp"

using namespace edri::transport;

TEST_CASE("a full ring queues records locally up to the bound, then refuses", "[outbox]") {
  SegmentFixture f(4096);
  const int efd = ::eventfd(0, EFD_NONBLOCK);
  Outbox out(f.segment.producer(0), Doorbell(&f.segment.doorbell(1), efd), 1000);
  auto c = f.segment.consumer(0);
  auto rec = [](std::uint32_t i) {
    std::vector<std::byte> v(100);
    std::memcpy(v.data(), &i, sizeof i);
    return v;
  };
  std::uint32_t accepted = 0;
  while (out.push(rec(accepted))) ++accepted;
  // 36 records fill the ring, then 10 of 100 bytes fit the 1000-byte bound.
  CHECK(accepted == 36 + 10);
  CHECK(out.has_overflow());
  CHECK(out.overflow_bytes() == 1000);

  // The consumer is asleep: notify() rings it once.
  f.segment.doorbell(1).sleeping.store(1);
  CHECK(out.notify());
  std::uint64_t rung = 0;
  CHECK(::read(efd, &rung, sizeof rung) == sizeof rung);
  CHECK(rung == 1);

  // Drained, the queue moves into the ring in order, nothing lost.
  std::uint32_t expect = 0;
  while (expect < accepted) {
    c.drain([&](std::span<const std::byte> r, std::uint32_t) {
      std::uint32_t got;
      std::memcpy(&got, r.data(), sizeof got);
      REQUIRE(got == expect++);
    });
    out.flush_overflow();
  }
  CHECK_FALSE(out.has_overflow());
  CHECK(out.push(rec(999)));
  ::close(efd);
}

TEST_CASE("a record larger than a ring allows is refused at once", "[outbox]") {
  SegmentFixture f(4096);
  Outbox out(f.segment.producer(0), Doorbell(&f.segment.doorbell(1), -1), 1 << 20);
  CHECK_FALSE(out.push(std::vector<std::byte>(out.max_record() + 1)));
  CHECK_FALSE(out.has_overflow());
}

namespace {
// A 4096-byte ring whose consumer sleeps, its doorbell an eventfd.
struct SleepingConsumer {
  SegmentFixture f{4096};
  int efd = ::eventfd(0, EFD_NONBLOCK);
  Outbox out{f.segment.producer(0), Doorbell(&f.segment.doorbell(1), efd), 1000};
  ChannelConsumer consumer = f.segment.consumer(0);
  SleepingConsumer() { f.segment.doorbell(1).sleeping.store(1); }
  ~SleepingConsumer() { ::close(efd); }
  bool quiet(const std::vector<std::byte>& notice) {
    return out.emplace_quiet(notice.size(), [&](std::byte* p) { std::memcpy(p, notice.data(), notice.size()); });
  }
  bool rung() {
    std::uint64_t n = 0;
    return ::read(efd, &n, sizeof n) == sizeof n;
  }
  std::size_t drain() {
    std::size_t records = 0;
    consumer.drain([&](std::span<const std::byte>, std::uint32_t) { ++records; });
    return records;
  }
};
}  // namespace

TEST_CASE("a quiet record waits for its sleeping consumer without waking it and a later record wakes it for both",
          "[outbox]") {
  SleepingConsumer s;
  CHECK(s.quiet(std::vector<std::byte>(16, std::byte{7})));
  CHECK_FALSE(s.out.notify());
  CHECK_FALSE(s.rung());  // nothing rang
  CHECK_FALSE(s.consumer.empty());
  CHECK(s.out.push(std::vector<std::byte>(8)));
  CHECK(s.out.notify());
  CHECK(s.rung());
  CHECK(s.drain() == 2);
}

TEST_CASE("quiet records wake their sleeping consumer once a quarter of the ring is unread", "[outbox]") {
  SleepingConsumer s;
  const std::vector<std::byte> notice(100, std::byte{7});
  // A record of 100 bytes takes 112 of the ring: nine stay under 1024.
  for (int i = 0; i < 9; ++i) REQUIRE(s.quiet(notice));
  CHECK_FALSE(s.out.notify());
  CHECK_FALSE(s.rung());
  REQUIRE(s.quiet(notice));  // the tenth passes a quarter of 4096
  CHECK(s.out.notify());
  CHECK(s.rung());
  // Read, the ring is shallow again: quiet once more.
  CHECK(s.drain() == 10);
  REQUIRE(s.quiet(notice));
  CHECK_FALSE(s.out.notify());
}

TEST_CASE("a record that must enter the ring now is refused when the ring is full or others wait before it",
          "[outbox]") {
  SegmentFixture f(4096);
  Outbox out(f.segment.producer(0), Doorbell(&f.segment.doorbell(1), -1), 1 << 20);
  auto c = f.segment.consumer(0);
  const std::vector<std::byte> rec(100);
  int in_ring = 0;
  while (out.push(rec, Admission::RingOnly)) ++in_ring;
  CHECK(in_ring == 4096 / 112);  // 100 bytes + 8 header, padded to 112
  CHECK_FALSE(out.has_overflow());
  CHECK(out.push(rec));  // new work waits in the overflow
  c.drain([](std::span<const std::byte>, std::uint32_t) {}, 1);
  // Room in the ring now, but a record waits before it: refused, in order.
  CHECK_FALSE(out.push(rec, Admission::RingOnly));
  out.flush_overflow();
  CHECK_FALSE(out.has_overflow());
  c.drain([](std::span<const std::byte>, std::uint32_t) {}, 1);
  CHECK(out.push(rec, Admission::RingOnly));
}
