#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace edri::bench {

// Latency histogram with log-linear buckets: exact below 128 ns, then 128
// linear sub-buckets per power of two, so any recorded value is reported
// within 0.8 % of its true value. Fixed size (about 60 KiB) no matter how long
// the run is, so recording never allocates on the hot path.
class LatencyHistogram {
 public:
  void record(std::uint64_t nanoseconds) {
    ++counts_[bucket_of(nanoseconds)];
    ++count_;
    min_ = std::min(min_, nanoseconds);
    max_ = std::max(max_, nanoseconds);
  }

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const { return max_; }

  // Value at or below which `fraction` (0..1] of the samples fall; the exact
  // max is returned for the top sample so p100 never exceeds it.
  std::uint64_t percentile(double fraction) const {
    if (count_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(fraction * static_cast<double>(count_) + 0.999999);
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    if (rank == count_) return max_;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::clamp(midpoint_of(i), min(), max_);
    }
    return max_;
  }

 private:
  static constexpr unsigned kSubBits = 7;
  static constexpr std::uint64_t kSub = std::uint64_t{1} << kSubBits;
  static constexpr std::size_t kBuckets = kSub + (64 - kSubBits) * kSub;

  static std::size_t bucket_of(std::uint64_t v) {
    if (v < kSub) return static_cast<std::size_t>(v);
    const unsigned shift = static_cast<unsigned>(std::bit_width(v)) - 1 - kSubBits;
    const std::uint64_t mantissa = v >> shift;  // in [kSub, 2 * kSub)
    return static_cast<std::size_t>(kSub + shift * kSub + (mantissa - kSub));
  }

  static std::uint64_t midpoint_of(std::size_t index) {
    if (index < kSub) return index;
    const std::uint64_t shift = (index - kSub) / kSub;
    const std::uint64_t mantissa = kSub + (index - kSub) % kSub;
    const std::uint64_t lower = mantissa << shift;
    const std::uint64_t width = std::uint64_t{1} << shift;
    return lower + (width - 1) / 2;
  }

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t max_ = 0;
};

}  // namespace edri::bench
