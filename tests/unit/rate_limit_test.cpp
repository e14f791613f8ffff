// edri::RateLimiter: token buckets by key, on a clock the test moves.
#include <catch2/catch.hpp>
#include <string>

#include <edri/rate_limit.hpp>

using Clock = edri::RateLimiter::Clock;
using namespace std::chrono_literals;

TEST_CASE("a bucket allows its burst, then one call per 1/rate seconds, and says how long to wait", "[rate_limit]") {
  edri::RateLimiter limiter({.per_second = 2, .burst = 3});
  const auto t0 = Clock::now();
  for (int i = 0; i < 3; ++i) CHECK_FALSE(limiter.take("a", t0));
  const auto wait = limiter.take("a", t0);
  REQUIRE(wait);
  CHECK(wait->count() == Approx(0.5));
  CHECK_FALSE(limiter.take("b", t0));  // another key: its own bucket
  CHECK(limiter.take("a", t0 + 400ms));
  CHECK_FALSE(limiter.take("a", t0 + 1100ms));  // 1.1 s later: 2.2 tokens back, minus what the late call took
  // A long pause fills the bucket to its burst, no further.
  const auto later = t0 + 60s;
  for (int i = 0; i < 3; ++i) CHECK_FALSE(limiter.take("a", later));
  CHECK(limiter.take("a", later));
}

TEST_CASE("the table of buckets stays within max_keys, idle buckets going first", "[rate_limit]") {
  edri::RateLimiter limiter({.per_second = 1, .burst = 2, .max_keys = 100});
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    std::string key = "k";  // appended: GCC 12 warns falsely on "k" + std::to_string(i)
    key.append(std::to_string(i));
    limiter.take(key, t0);
  }
  CHECK(limiter.keys() <= 100);
  // A key that spent its burst is remembered while others, idle long
  // enough to be full again, make room.
  edri::RateLimiter kept({.per_second = 1, .burst = 2, .max_keys = 3});
  kept.take("busy", t0);
  kept.take("busy", t0);
  kept.take("idle1", t0 - 10s);
  kept.take("idle2", t0 - 10s);
  CHECK_FALSE(kept.take("new", t0));
  CHECK(kept.take("busy", t0));  // still empty: not forgotten
}
