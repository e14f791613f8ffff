// MetricArea: a plugin metric's series in shared memory, found by their
// label values and claimed by whichever process writes them first.
#include "transport/metric_area.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plugin/plugin_metrics.hpp"
#include "plugin/plugin_set.hpp"

using namespace edri::transport;

namespace {

// A metric's bytes, zeroed as a fresh segment's are, cache-line aligned.
struct Place {
  Place(std::size_t buckets, std::uint32_t max_series)
      : bytes(metric_bytes(buckets, max_series)),
        memory(static_cast<std::byte*>(::operator new (bytes, std::align_val_t{kCacheLine}))),
        area((std::fill_n(memory, bytes, std::byte{0}), memory), buckets, max_series) {}
  ~Place() { ::operator delete (memory, std::align_val_t{kCacheLine}); }
  std::size_t bytes;
  std::byte* memory;
  MetricArea area;
};

std::string encoded(std::vector<std::string_view> values) {
  std::string out;
  REQUIRE(encode_label_values(values, out));
  return out;
}

}  // namespace

TEST_CASE("label values are encoded with their lengths, within the series' room", "[metrics]") {
  const auto e = encoded({"paid", "", "eur"});
  CHECK(e.size() == 3 + 4 + 3);
  CHECK(decode_label_values(e) == std::vector<std::string_view>{"paid", "", "eur"});
  CHECK(encoded({}).empty());
  std::string out;
  CHECK_FALSE(encode_label_values(std::vector<std::string_view>{std::string(256, 'x')}, out));
  const std::string half(100, 'x');
  CHECK_FALSE(encode_label_values(std::vector<std::string_view>{half, half}, out));  // 202 bytes of 184
}

TEST_CASE("a metric's series are found by their values, and a full metric drops", "[metrics]") {
  Place p(0, 3);
  auto* paid = p.area.series(encoded({"paid"}));
  REQUIRE(paid);
  paid->value.fetch_add(2);
  CHECK(p.area.series(encoded({"paid"})) == paid);
  CHECK(p.area.series(encoded({"paid"}))->value.load() == 2);
  auto* failed = p.area.series(encoded({"failed"}));
  REQUIRE(failed);
  CHECK(failed != paid);
  CHECK(p.area.series(encoded({"lost"})));
  CHECK(p.area.dropped() == 0);
  CHECK(p.area.series(encoded({"fourth"})) == nullptr);
  CHECK(p.area.dropped() == 1);
  CHECK(p.area.ready().size() == 3);
}

TEST_CASE("a histogram's series keeps a count per bucket after its head", "[metrics]") {
  Place p(2, 2);
  auto* s = p.area.series(encoded({"eur"}));
  REQUIRE(s);
  MetricArea::bucket_counts(s)[2].fetch_add(1);  // +Inf
  CHECK(p.area.series(encoded({"usd"})));
  CHECK(MetricArea::bucket_counts(p.area.series(encoded({"eur"})))[2].load() == 1);
  CHECK(metric_series_bytes(2) == 256);
}

TEST_CASE("a series whose writer died while claiming it is passed by", "[metrics]") {
  Place p(0, 2);
  auto* first = p.area.series(encoded({"a"}));
  REQUIRE(first);
  first->state.store(kSeriesClaimed);  // as a writer that died mid-copy leaves it
  auto* other = p.area.series(encoded({"b"}));
  REQUIRE(other);
  CHECK(other != first);
  CHECK(p.area.series(encoded({"a"})) == nullptr);  // stuck: "a" finds no place
  CHECK(p.area.ready().size() == 1);
}

TEST_CASE("threads claiming the same series concurrently each find one", "[metrics][threads]") {
  Place p(0, 64);
  constexpr int kThreads = 4, kSeries = 40, kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&p, t] {
      for (int r = 0; r < kRounds; ++r)
        for (int i = 0; i < kSeries; ++i) {
          const auto name = std::to_string((i + t * 7) % kSeries);
          std::string key;
          const std::string_view v = name;
          encode_label_values(std::span(&v, 1), key);
          if (auto* s = p.area.series(key)) s->value.fetch_add(1, std::memory_order_relaxed);
        }
    });
  for (auto& th : threads) th.join();
  const auto ready = p.area.ready();
  CHECK(ready.size() == kSeries);
  CHECK(p.area.dropped() == 0);
  for (auto* s : ready) CHECK(s->value.load() == kThreads * kRounds);
}

TEST_CASE("a metric declaration is checked as Prometheus would have it", "[metrics]") {
  using edri::MetricKind;
  auto check = [](MetricKind kind, edri::MetricDecl d) {
    edri::MetricRegistration m{kind, std::move(d), nullptr};
    edri::plugin::check_metric(m, "p.so");
    return m;
  };
  auto refused = [&](MetricKind kind, edri::MetricDecl d) {
    try {
      check(kind, std::move(d));
    } catch (const edri::plugin::PluginError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(check(MetricKind::Histogram, {"x_seconds", "X."}).decl.buckets.size() == 14);
  CHECK(check(MetricKind::Gauge, {"x_items", "X.", {"kind", "shop_id"}}).decl.buckets.empty());
  CHECK(refused(MetricKind::Counter, {"x", "X."}) == "p.so: metric x: a counter's name ends in _total");
  CHECK(refused(MetricKind::Gauge, {"x_total", "X."}) == "p.so: metric x_total: only a counter's name ends in _total");
  CHECK(refused(MetricKind::Gauge, {"xItems", "X."}).find("lower case letters") != std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"9x", "X."}).find("not first a digit") != std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"edri_x", "X."}).find("edri_ are the server's") != std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"x", ""}).find("help text") != std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"x", "X.", {"a", "a"}}).find("label a is declared twice") != std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"x", "X.", {"__a"}}).find("not a label name") != std::string::npos);
  CHECK(refused(MetricKind::Histogram, {"x", "X.", {"le"}}).find("le is a histogram's own") != std::string::npos);
  CHECK(refused(MetricKind::Histogram, {"x", "X.", {}, {1, 1}}).find("each larger") != std::string::npos);
  CHECK(refused(MetricKind::Histogram, {"x", "X.", {}, std::vector<double>(33, 1)}).find("more than 32") !=
        std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"x", "X.", {}, {1}}).find("only a histogram has buckets") != std::string::npos);
  CHECK(refused(MetricKind::Gauge, {"x", "X.", {}, {}, 0}).find("max_series is 1 to 4096") != std::string::npos);
}
