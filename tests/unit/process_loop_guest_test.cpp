// ProcessLoop guests (EDRI_LISTENER_DOMAINS): a loop run on its host's
// thread takes its turn after the host's, so records between the two make
// no wake-up; the thread sleeps only when both found nothing, and a record
// for the guest from a third process wakes it. A loop says it is behind
// after a turn that read a channel's full batch, until it caught up.
#include <sys/eventfd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/process_loop.hpp"
#include "segment_fixture.hpp"
#include "transport/unique_fd.hpp"

using edri::Config;
using edri::ProcessLoop;
using edri::UniqueFd;

namespace {
struct Doorbells {
  explicit Doorbells(std::uint32_t slots) {
    for (std::uint32_t s = 0; s < slots; ++s) {
      owned.emplace_back(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
      fds.push_back(owned.back().get());
    }
  }
  std::vector<UniqueFd> owned;
  std::vector<int> fds;
};

// A listener's loop hosting one manager's, over a segment of their own.
struct HostAndGuest {
  SegmentFixture f{1 << 16};
  Doorbells bells{f.topology.process_slots()};
  const Config config{};
  const std::uint32_t listener = f.topology.listener_slot(0);
  const std::uint32_t manager = f.topology.manager_slot(0);
  ProcessLoop host{f.segment, f.topology, listener, bells.fds, config, 0};
  ProcessLoop guest{host, manager, config};
};

std::uint32_t value_of(std::span<const std::byte> rec) {
  std::uint32_t v = 0;
  std::memcpy(&v, rec.data(), sizeof v);
  return v;
}

bool put(edri::transport::Outbox& out, std::uint32_t v) {
  return out.push(std::as_bytes(std::span(&v, 1)), edri::transport::Admission::Answer);
}
}  // namespace

TEST_CASE("a guest loop answers its host within the host's turns: no doorbell rings, no sleeps", "[process_loop]") {
  HostAndGuest t;
  auto& host = t.host;
  auto& guest = t.guest;
  const auto listener = t.listener;
  const auto manager = t.manager;
  const auto& segment = t.f.segment;
  CHECK(host.hosted_slots() == std::vector<std::uint32_t>{listener, manager});
  CHECK(&guest.events() == &host.events());

  auto& to_guest = host.outbox_to(manager);
  auto& to_host = guest.outbox_to(listener);
  constexpr std::uint32_t kRoundTrips = 1000;
  std::uint32_t answered = 0;
  // The guest answers each record with its value plus one; the host sends
  // the next until the last comes back.
  guest.on_records_from(listener, [&](std::span<const std::byte> rec) { REQUIRE(put(to_host, value_of(rec) + 1)); });
  host.on_records_from(manager, [&](std::span<const std::byte> rec) {
    CHECK(value_of(rec) == 2 * answered + 1);
    if (++answered == kRoundTrips) return host.stop();
    REQUIRE(put(to_guest, 2 * answered));
  });
  bool started = false;
  host.after_drain([&] {
    if (started) return false;
    started = true;
    REQUIRE(put(to_guest, 0));
    return true;
  });
  host.run();
  CHECK(answered == kRoundTrips);
  for (const auto slot : {listener, manager}) {
    const auto& bell = segment.doorbell(slot);
    CHECK(bell.rings.load() == 0);
    CHECK(bell.loop.sleeps.load() == 0);
    CHECK(bell.sleeping.load() == 0);
    CHECK(bell.pid.load() == static_cast<std::uint32_t>(::getpid()));  // both serve, in this process
  }
  CHECK(segment.doorbell(manager).loop.records.load() == kRoundTrips);
}

TEST_CASE("a guest's record from another process wakes the host's sleeping thread", "[process_loop]") {
  HostAndGuest t;
  auto& host = t.host;
  const auto manager = t.manager;
  const auto& segment = t.f.segment;
  const auto router = edri::transport::Topology::kRouter;
  std::uint32_t got = 0;
  t.guest.on_records_from(router, [&](std::span<const std::byte> rec) {
    got = value_of(rec);
    host.stop();
  });

  // The router's end, on a thread of its own: it writes once the host
  // sleeps, and rings the guest's doorbell, which the host's thread watches.
  std::atomic<bool> done{false};
  std::thread router_thread([&] {
    edri::transport::Outbox to_manager(segment.producer(t.f.topology.channel(router, manager)),
                                       edri::transport::Doorbell(&segment.doorbell(manager), t.bells.fds[manager]),
                                       1 << 20);
    while (segment.doorbell(manager).sleeping.load() == 0) std::this_thread::yield();
    const bool queued = put(to_manager, 42);
    to_manager.notify();
    done = queued;
  });
  host.run();
  router_thread.join();
  CHECK(done);
  CHECK(got == 42);
  CHECK(segment.doorbell(manager).rings.load() == 1);
  CHECK(segment.doorbell(t.listener).loop.sleeps.load() >= 1);
}

TEST_CASE("a loop is behind after a turn that read a full batch, until it has caught up", "[process_loop]") {
  HostAndGuest t;
  auto& host = t.host;
  auto& to_host = t.guest.outbox_to(t.listener);
  constexpr std::uint32_t kRecords = 2500;  // two batches of 1,024 and part of a third
  for (std::uint32_t i = 0; i < kRecords; ++i) REQUIRE(put(to_host, i));
  std::uint32_t got = 0;
  host.on_records_from(t.manager, [&](std::span<const std::byte>) { ++got; });
  std::vector<bool> behind;
  host.after_drain([&] {
    behind.push_back(host.behind());
    if (got == kRecords) host.stop();
    return false;
  });
  host.run();
  CHECK(got == kRecords);
  CHECK(behind == std::vector<bool>{true, true, false});
}
