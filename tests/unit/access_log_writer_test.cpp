// AccessLog's writer thread, without a server: every line the loop queues
// is written once and in order, a reopen moves on to the new file, and a
// writer that cannot write makes the loop drop and count, never wait.
// Under ThreadSanitizer in CI ([threads]).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "listener/access_log.hpp"
#include "support/test_helpers.hpp"

using edri::Config;
using edri::listener::AccessLog;
using edri::plugin::PluginSet;
using edri::test::TempDir;

namespace {

std::vector<std::string> targets_in(const std::filesystem::path& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line)["target"]);
  return out;
}

Config json_log(const std::string& path, std::size_t buffer) {
  Config c;
  c.access_log = "json";
  c.access_log_path = path;
  c.access_log_buffer = buffer;
  return c;
}

void log_calls(AccessLog& log, int from, int to) {
  for (int i = from; i < to; ++i)
    log.end(log.begin("http/1.1", "GET", "/x/" + std::to_string(i), "127.0.0.1", nullptr), 200, 0);
}

}  // namespace

TEST_CASE("access log writer: each line once and in order across a reopen", "[threads][access_log]") {
  TempDir dir;
  const auto file = dir.path / "a.log", rotated = dir.path / "a.log.1";
  const auto plugins = PluginSet::load({});
  std::atomic<std::uint64_t> lines{0}, dropped{0};
  {
    AccessLog log(json_log(file.string(), 1 << 20), plugins, {lines, dropped});
    log_calls(log, 0, 2000);
    std::filesystem::rename(file, rotated);
    log.reopen();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(std::filesystem::exists(file));
    log_calls(log, 2000, 3000);
  }  // what is queued is written before the writer stops
  auto all = targets_in(rotated);
  const auto after = targets_in(file);
  all.insert(all.end(), after.begin(), after.end());
  REQUIRE(all.size() == 3000);
  for (int i = 0; i < 3000; ++i) CHECK(all[static_cast<std::size_t>(i)] == "/x/" + std::to_string(i));
  CHECK(lines.load() == 3000);
  CHECK(dropped.load() == 0);
}

TEST_CASE("access log writer: a writer that cannot write makes the loop drop lines and count them",
          "[threads][access_log]") {
  TempDir dir;
  const auto fifo = dir.path / "slow";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // reads nothing yet
  REQUIRE(reader >= 0);
  const auto plugins = PluginSet::load({});
  std::atomic<std::uint64_t> lines{0}, dropped{0};
  std::atomic<bool> drain{false};
  std::thread draining([&] {
    while (!drain.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    char buf[65536];
    while (::read(reader, buf, sizeof buf) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    AccessLog log(json_log(fifo.string(), 4096), plugins, {lines, dropped});
    // ~100 bytes a line: past the pipe's 64 KiB and the 4 KiB buffer. Had
    // the loop waited on the writer, this would never return: nothing
    // reads the pipe until `drain`.
    log_calls(log, 0, 5000);
    CHECK(dropped.load() > 0);
    CHECK(lines.load() + dropped.load() == 5000);
    drain = true;  // the writer finishes what it holds as the log stops
  }
  draining.join();
  ::close(reader);
}
