#include "transport/metric_area.hpp"

#include <cstring>
#include <functional>
#include <thread>

namespace edri::transport {

bool encode_label_values(std::span<const std::string_view> values, std::string& out) {
  out.clear();
  for (const auto v : values) {
    if (v.size() > 255 || out.size() + 1 + v.size() > kMetricLabelBytes) return false;
    out.push_back(static_cast<char>(static_cast<unsigned char>(v.size())));
    out.append(v);
  }
  return true;
}

std::vector<std::string_view> decode_label_values(std::string_view encoded) {
  std::vector<std::string_view> values;
  std::size_t at = 0;
  while (at < encoded.size()) {
    const auto n = static_cast<unsigned char>(encoded[at]);
    values.push_back(encoded.substr(at + 1, n));
    at += 1 + n;
  }
  return values;
}

bool MetricArea::settled(MetricSeriesHead& s) {
  // A claim is a copy of at most kMetricLabelBytes: a few hundred
  // nanoseconds, unless its writer was preempted (yield) or died (give up).
  for (int i = 0; i < 10000; ++i) {
    if (s.state.load(std::memory_order_acquire) != kSeriesClaimed) return true;
    if (i > 100) std::this_thread::yield();
  }
  return false;
}

MetricSeriesHead* MetricArea::series(std::string_view encoded) const {
  // Open addressing from the values' hash: a series once made never
  // moves or goes, so the first free place on the probe ends the search.
  const auto start = std::hash<std::string_view>{}(encoded);
  for (std::size_t i = 0; i < max_series_; ++i) {
    auto& s = *at((start + i) % max_series_);
    auto state = s.state.load(std::memory_order_acquire);
    if (state == kSeriesFree && s.state.compare_exchange_strong(state, kSeriesClaimed, std::memory_order_acquire)) {
      if (!encoded.empty()) std::memcpy(s.labels, encoded.data(), encoded.size());  // a view of no labels may be null
      s.label_bytes = static_cast<std::uint32_t>(encoded.size());
      s.state.store(kSeriesReady, std::memory_order_release);
      return &s;
    }
    if (state == kSeriesClaimed && !settled(s)) continue;
    if (std::string_view(s.labels, s.label_bytes) == encoded) return &s;
  }
  drop();
  return nullptr;
}

std::vector<MetricSeriesHead*> MetricArea::ready() const {
  std::vector<MetricSeriesHead*> out;
  for (std::size_t i = 0; i < max_series_; ++i)
    if (at(i)->state.load(std::memory_order_acquire) == kSeriesReady) out.push_back(at(i));
  return out;
}

}  // namespace edri::transport
