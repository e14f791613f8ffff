// MetricArea: one plugin metric's place in the segment (shm_layout.hpp,
// "The plugins' own metrics"): its series found by their label values, a
// new one claimed on first use, by any process, without a lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "transport/shm_layout.hpp"

namespace edri::transport {

// Label values as a series keeps them: each a length byte, then its
// bytes. False (and `out` unspecified) when a value is longer than 255
// bytes or all of them do not fit in kMetricLabelBytes.
bool encode_label_values(std::span<const std::string_view> values, std::string& out);
std::vector<std::string_view> decode_label_values(std::string_view encoded);

class MetricArea {
 public:
  // `base`: the metric's MetricHead; `buckets`: a histogram's bounds (0
  // for a counter or gauge).
  MetricArea(std::byte* base, std::size_t buckets, std::uint32_t max_series)
      : base_(base), buckets_(buckets), max_series_(max_series) {}

  // The series of these encoded label values, claimed if new; nullptr
  // (the write counted as dropped) when every series is taken.
  MetricSeriesHead* series(std::string_view encoded) const;
  void drop() const { head().dropped.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t dropped() const { return head().dropped.load(std::memory_order_relaxed); }

  // A histogram series' bucket counts: buckets + 1 of them (+Inf last).
  static std::atomic<std::uint64_t>* bucket_counts(MetricSeriesHead* s) {
    return reinterpret_cast<std::atomic<std::uint64_t>*>(s + 1);
  }
  // The ready series, in the order of their places.
  std::vector<MetricSeriesHead*> ready() const;

 private:
  MetricHead& head() const { return *reinterpret_cast<MetricHead*>(base_); }
  MetricSeriesHead* at(std::size_t i) const {
    return reinterpret_cast<MetricSeriesHead*>(base_ + sizeof(MetricHead) + i * metric_series_bytes(buckets_));
  }
  // Waits out a claim in progress; false when it never ended (its writer died).
  static bool settled(MetricSeriesHead& s);

  std::byte* base_;
  std::size_t buckets_;
  std::uint32_t max_series_;
};

static_assert(sizeof(MetricSeriesHead) % alignof(std::atomic<std::uint64_t>) == 0);

}  // namespace edri::transport
