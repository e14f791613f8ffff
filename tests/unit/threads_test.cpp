// The pieces that more than one thread touches, exercised from threads so
// that ThreadSanitizer (the CI's TSan build) sees every access: a channel
// with its producer and consumer on two threads, and a manager's worker
// thread pool.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "manager/worker_threads.hpp"
#include "runtime/event_loop.hpp"
#include "transport/segment.hpp"
#include "unit/segment_fixture.hpp"

using namespace edri;

TEST_CASE("a channel between two threads: every record arrives intact and in order", "[channel][threads]") {
  SegmentFixture f(1 << 14);
  auto producer = f.segment.producer(0);
  auto consumer = f.segment.consumer(0);
  constexpr std::uint32_t kRecords = 200000;
  std::thread writer([&] {
    std::vector<std::byte> rec;
    for (std::uint32_t i = 0; i < kRecords; ++i) {
      rec.assign(1 + i % 300, std::byte(static_cast<unsigned char>(i)));
      std::memcpy(rec.data(), &i, std::min(sizeof i, rec.size()));
      while (!producer.try_push(rec, i)) std::this_thread::yield();
    }
  });
  std::uint32_t expect = 0;
  bool intact = true;
  while (expect < kRecords) {
    const auto r = consumer.drain([&](std::span<const std::byte> rec, std::uint32_t tag) {
      const std::size_t want = 1 + expect % 300;
      if (tag != expect || rec.size() != want) intact = false;
      for (std::size_t k = sizeof expect; k < rec.size(); ++k)
        if (rec[k] != std::byte(static_cast<unsigned char>(expect))) intact = false;
      ++expect;
    });
    if (r.records == 0) std::this_thread::yield();
  }
  writer.join();
  CHECK(intact);
  CHECK(consumer.empty());
}

TEST_CASE("the worker thread pool runs every job and hands each result back on the loop thread", "[workers][threads]") {
  EventLoop loop;
  manager::WorkerThreads pool(loop, 4, 10000, {});
  const auto loop_thread = std::this_thread::get_id();
  constexpr int kJobs = 2000;
  std::vector<int> status(kJobs, 0);
  std::atomic<int> ran{0};
  int delivered = 0;
  bool on_loop_thread = true;
  for (int i = 0; i < kJobs; ++i) {
    const bool ok = pool.submit(
        [i, &ran]() -> Response {
          ran.fetch_add(1, std::memory_order_relaxed);
          if (i % 10 == 0) throw std::runtime_error("job failed");
          return Response::json({{"i", i}});
        },
        [i, &status, &delivered, &on_loop_thread, loop_thread](Response r) {
          on_loop_thread = on_loop_thread && std::this_thread::get_id() == loop_thread;
          status[static_cast<std::size_t>(i)] = r.status;
          ++delivered;
        });
    REQUIRE(ok);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (delivered < kJobs && std::chrono::steady_clock::now() < deadline) loop.poll(100);
  REQUIRE(delivered == kJobs);
  CHECK(ran.load() == kJobs);
  CHECK(on_loop_thread);
  for (int i = 0; i < kJobs; ++i) CHECK(status[static_cast<std::size_t>(i)] == (i % 10 == 0 ? 500 : 200));
}

TEST_CASE("a full worker queue refuses the next job at once", "[workers][threads]") {
  EventLoop loop;
  manager::WorkerThreads pool(loop, 1, 2, {});
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  int done = 0;
  auto block = [&]() -> Response {
    started.fetch_add(1);
    while (!release.load()) std::this_thread::yield();
    return Response::json({{"ok", true}});
  };
  auto count = [&](Response) { ++done; };
  // One running, two waiting: the fourth is refused.
  REQUIRE(pool.submit(block, count));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (started.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  REQUIRE(started.load() == 1);
  REQUIRE(pool.submit(block, count));
  REQUIRE(pool.submit(block, count));
  CHECK_FALSE(pool.submit(block, count));
  release = true;
  while (done < 3 && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(10)) loop.poll(100);
  CHECK(done == 3);
}
