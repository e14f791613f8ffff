// LineWriter, the access log's writer thread: every line queued is
// written once and in order, a reopen moves on to the new file, and a
// writer that cannot write makes the queueing thread drop and count,
// never wait. Under ThreadSanitizer in CI ([threads]).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/line_writer.hpp"
#include "support/test_helpers.hpp"

using edri::LineWriter;
using edri::test::file_lines;
using edri::test::TempDir;

namespace {

void write_lines(LineWriter& w, int from, int to) {
  for (int i = from; i < to; ++i) w.write_line("line " + std::to_string(i) + " of a log\n");
}

}  // namespace

TEST_CASE("line writer: each line once and in order across a reopen", "[threads][line_writer]") {
  TempDir dir;
  const auto file = dir.path / "a.log", rotated = dir.path / "a.log.1";
  std::atomic<std::uint64_t> lines{0}, dropped{0};
  {
    LineWriter w("test log", file.string(), 1 << 20, {lines, dropped});
    write_lines(w, 0, 2000);
    std::filesystem::rename(file, rotated);
    w.reopen();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(std::filesystem::exists(file));
    write_lines(w, 2000, 3000);
  }  // what is queued is written before the writer stops
  auto all = file_lines(rotated);
  const auto after = file_lines(file);
  all.insert(all.end(), after.begin(), after.end());
  REQUIRE(all.size() == 3000);
  for (int i = 0; i < 3000; ++i) CHECK(all[static_cast<std::size_t>(i)] == "line " + std::to_string(i) + " of a log");
  CHECK(lines.load() == 3000);
  CHECK(dropped.load() == 0);
}

TEST_CASE("line writer: a writer that cannot write makes the caller drop lines and count them",
          "[threads][line_writer]") {
  TempDir dir;
  const auto fifo = dir.path / "slow";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // reads nothing yet
  REQUIRE(reader >= 0);
  std::atomic<std::uint64_t> lines{0}, dropped{0};
  std::atomic<bool> drain{false};
  std::thread draining([&] {
    while (!drain.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    char buf[65536];
    while (::read(reader, buf, sizeof buf) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    LineWriter w("test log", fifo.string(), 4096, {lines, dropped});
    // ~20 bytes a line, 20,000 lines: past the pipe's 64 KiB and the
    // 4 KiB queue. Had the caller waited on the writer, this would never
    // return: nothing reads the pipe until `drain`.
    write_lines(w, 0, 20000);
    CHECK(dropped.load() > 0);
    CHECK(lines.load() + dropped.load() == 20000);
    drain = true;  // the writer finishes what it holds as it stops
  }
  draining.join();
  ::close(reader);
}

TEST_CASE("line writer: a path that cannot be opened is refused at once", "[threads][line_writer]") {
  std::atomic<std::uint64_t> lines{0}, dropped{0};
  CHECK_THROWS_WITH(LineWriter("test log", "/nonexistent/dir/x.log", 4096, {lines, dropped}),
                    Catch::Contains("/nonexistent/dir/x.log"));
}
