// bench's load generator against a real edri-server: that a rate paces the
// load, and that latency under a rate counts the queue a slow answer causes
// (no coordinated omission). The assertions compare the generator's own
// modes with each other or with the requested rate, never with a speed the
// machine must reach.
#include <catch2/catch.hpp>

#include "load_generator.hpp"
#include "support/server_process.hpp"

using namespace edri::test;
using edri::bench::LoadOptions;
using edri::bench::LoadResult;
using edri::bench::run_load;

namespace {

LoadOptions load_for(const ServerProcess& server, const std::string& target, double rate) {
  LoadOptions load;
  load.port = server.port();
  load.request.target = target;
  load.concurrency = 1;
  load.warmup_seconds = 0.3;
  load.duration_seconds = 1.5;
  load.rate = rate;
  return load;
}

}  // namespace

TEST_CASE("a rate paces the load instead of sending as fast as answers come", "[bench][alone]") {
  ServerProcess server({plugin_path("bench_app")});
  LoadOptions load = load_for(server, "/noop", 200);
  load.concurrency = 4;
  const LoadResult paced = run_load(load);
  INFO(paced.first_error);
  CHECK(paced.errors == 0);
  // 200 req/s for 1.5 s: 300 requests. A closed loop does thousands here
  // even under the sanitizers; a broken schedule does far more or far fewer.
  CHECK(paced.completed >= 240);
  CHECK(paced.completed <= 310);
}

TEST_CASE("under a rate the server cannot keep, latency includes the queue", "[bench][alone]") {
  ServerProcess server({plugin_path("bench_app")});
  // Each answer burns 20 ms of CPU in the manager; one connection asked for
  // one request every 10 ms falls further behind with every answer.
  const LoadResult closed = run_load(load_for(server, "/busy/0/20", 0));
  const LoadResult open = run_load(load_for(server, "/busy/0/20", 100));
  INFO(closed.first_error << " / " << open.first_error);
  REQUIRE(closed.errors == 0);
  REQUIRE(open.errors == 0);
  REQUIRE(closed.completed > 0);
  REQUIRE(open.completed > 0);
  CHECK(closed.sent_late == 0);
  CHECK(open.sent_late > 0);
  // Closed loop: each sample is one service time. Open loop: by the window's
  // middle the backlog is hundreds of service times deep, and the samples
  // say so. Timing the requests from their actual send would make the two
  // alike.
  const std::uint64_t closed_p99 = closed.latency.percentile(0.99);
  const std::uint64_t open_p50 = open.latency.percentile(0.50);
  INFO("closed p99 " << closed_p99 << " ns, open p50 " << open_p50 << " ns");
  CHECK(open_p50 > 4 * closed_p99);
}
