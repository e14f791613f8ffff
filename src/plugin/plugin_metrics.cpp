#include "plugin/plugin_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "plugin/plugin_set.hpp"
#include "transport/metric_area.hpp"

namespace edri::plugin {

namespace {

constexpr std::uint32_t kMaxSeries = 4096;
// The Prometheus Python client's, 5 ms to 10 s.
const std::vector<double> kDefaultBuckets = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10};

// Prometheus names, in snake case (promtool's lint refuses camel case).
bool is_metric_name(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ':'; });
}
bool is_label_name(const std::string& s) {
  return is_metric_name(s) && s.find(':') == std::string::npos && s.rfind("__", 0) != 0;
}
bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void check_name(const MetricRegistration& m, const std::string& what) {
  const auto& name = m.decl.name;
  if (!is_metric_name(name))
    throw PluginError(what + ": a metric's name is lower case letters, digits, '_' and ':', not first a digit");
  if (name.rfind("edri_", 0) == 0) throw PluginError(what + ": names beginning edri_ are the server's");
  if (m.kind == MetricKind::Counter && !ends_with(name, "_total"))
    throw PluginError(what + ": a counter's name ends in _total");
  if (m.kind != MetricKind::Counter && ends_with(name, "_total"))
    throw PluginError(what + ": only a counter's name ends in _total");
  if (m.decl.help.empty()) throw PluginError(what + ": a metric needs its help text");
}

void check_labels(const MetricRegistration& m, const std::string& what) {
  const auto& labels = m.decl.labels;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (!is_label_name(labels[i]))
      throw PluginError(what + ": label '" + labels[i] +
                        "' is not a label name (lower case letters, digits and '_', not first a digit or __)");
    if (std::find(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(i), labels[i]) !=
        labels.begin() + static_cast<std::ptrdiff_t>(i))
      throw PluginError(what + ": label " + labels[i] + " is declared twice");
    if (m.kind == MetricKind::Histogram && labels[i] == "le")
      throw PluginError(what + ": label le is a histogram's own");
  }
}

void check_buckets(MetricRegistration& m, const std::string& what) {
  auto& b = m.decl.buckets;
  if (m.kind != MetricKind::Histogram) {
    if (!b.empty()) throw PluginError(what + ": only a histogram has buckets");
    return;
  }
  if (b.empty()) b = kDefaultBuckets;
  if (b.size() > transport::kMetricMaxBuckets)
    throw PluginError(what + ": more than " + std::to_string(transport::kMetricMaxBuckets) + " buckets");
  for (std::size_t i = 0; i < b.size(); ++i)
    if (!std::isfinite(b[i]) || (i > 0 && b[i] <= b[i - 1]))
      throw PluginError(what + ": buckets are finite and each larger than the one before");
}

// Prometheus's text for a sample value.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string prometheus_escaped(std::string_view v, bool quote) {
  std::string out;
  for (const char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

namespace {

const char* type_name(MetricKind k) {
  switch (k) {
    case MetricKind::Counter: return "counter";
    case MetricKind::Gauge: return "gauge";
    case MetricKind::Histogram: return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"` (no closing brace: a histogram adds le), or empty.
std::string label_pairs(const MetricDecl& d, const transport::MetricSeriesHead& s) {
  const auto values = transport::decode_label_values(std::string_view(s.labels, s.label_bytes));
  std::string out;
  for (std::size_t i = 0; i < d.labels.size() && i < values.size(); ++i)
    out += (out.empty() ? "{" : ",") + d.labels[i] + "=\"" + prometheus_escaped(values[i], true) + '"';
  return out;
}

void write_series(std::ostringstream& o, const MetricRegistration& m, transport::MetricSeriesHead& s) {
  const auto labels = label_pairs(m.decl, s);
  const auto value = s.value.load(std::memory_order_relaxed);
  if (m.kind != MetricKind::Histogram) {
    o << m.decl.name << labels << (labels.empty() ? "" : "}") << ' ' << number(value) << '\n';
    return;
  }
  const auto* counts = transport::MetricArea::bucket_counts(&s);
  const auto& bounds = m.decl.buckets;
  std::uint64_t cumulative = 0;
  const auto open = labels.empty() ? std::string("{") : labels + ",";
  for (std::size_t b = 0; b <= bounds.size(); ++b) {
    cumulative += counts[b].load(std::memory_order_relaxed);
    o << m.decl.name << "_bucket" << open << "le=\"" << (b < bounds.size() ? number(bounds[b]) : "+Inf") << "\"} "
      << cumulative << '\n';
  }
  const auto close = labels.empty() ? "" : "}";
  o << m.decl.name << "_sum" << labels << close << ' ' << number(value) << '\n';
  o << m.decl.name << "_count" << labels << close << ' ' << cumulative << '\n';
}

transport::MetricArea area_of(const transport::Segment& segment, const MetricRegistration& m, std::size_t offset) {
  return transport::MetricArea(segment.plugin_metrics() + offset, m.decl.buckets.size(), m.decl.max_series);
}

}  // namespace

void check_metric(MetricRegistration& m, const std::string& where) {
  const auto what = where + ": metric " + m.decl.name;
  check_name(m, what);
  check_labels(m, what);
  check_buckets(m, what);
  if (m.decl.max_series == 0 || m.decl.max_series > kMaxSeries)
    throw PluginError(what + ": max_series is 1 to " + std::to_string(kMaxSeries));
}

PluginMetricsLayout plugin_metrics_layout(const PluginSet& plugins) {
  PluginMetricsLayout layout;
  for (const auto& m : plugins.metrics()) {
    layout.offsets.push_back(layout.bytes);
    layout.bytes += transport::metric_bytes(m.decl.buckets.size(), m.decl.max_series);
  }
  return layout;
}

class BoundMetrics::SharedMetric final : public MetricWriter {
 public:
  SharedMetric(transport::MetricArea area, const MetricDecl& decl)
      : area_(area), label_count_(decl.labels.size()), bounds_(decl.buckets) {
    // A metric without labels has its one series from the start, so that
    // /metrics shows it at 0 before its first write.
    if (label_count_ == 0) area_.series({});
  }

  void add(std::span<const std::string_view> labels, double by) override {
    if (auto* s = find(labels)) s->value.fetch_add(by, std::memory_order_relaxed);
  }
  void set(std::span<const std::string_view> labels, double value) override {
    if (auto* s = find(labels)) s->value.store(value, std::memory_order_relaxed);
  }
  void observe(std::span<const std::string_view> labels, double value) override {
    auto* s = find(labels);
    if (!s) return;
    // Prometheus's `le`: the first bound at or above the value.
    const auto b = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
    transport::MetricArea::bucket_counts(s)[b].fetch_add(1, std::memory_order_relaxed);
    s->value.fetch_add(value, std::memory_order_relaxed);
  }

 private:
  transport::MetricSeriesHead* find(std::span<const std::string_view> labels) {
    thread_local std::string key;
    if (labels.size() != label_count_ || !transport::encode_label_values(labels, key)) {
      area_.drop();
      return nullptr;
    }
    return area_.series(key);
  }

  transport::MetricArea area_;
  std::size_t label_count_;
  std::vector<double> bounds_;
};

BoundMetrics::BoundMetrics(const transport::Segment& segment, const PluginSet& plugins) : plugins_(plugins) {
  const auto layout = plugin_metrics_layout(plugins);
  if (layout.bytes > segment.plugin_metrics_bytes())
    throw std::runtime_error("the segment has no room for the plugins' metrics");
  const auto& metrics = plugins.metrics();
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    writers_.push_back(
        std::make_unique<SharedMetric>(area_of(segment, metrics[i], layout.offsets[i]), metrics[i].decl));
    metrics[i].cell->writer.store(writers_.back().get(), std::memory_order_release);
  }
}

BoundMetrics::~BoundMetrics() {
  for (const auto& m : plugins_.metrics()) m.cell->writer.store(nullptr, std::memory_order_release);
}

void write_plugin_metrics(std::ostringstream& o, const transport::Segment& segment, const PluginSet& plugins) {
  const auto& metrics = plugins.metrics();
  if (metrics.empty()) return;
  const auto layout = plugin_metrics_layout(plugins);
  if (layout.bytes > segment.plugin_metrics_bytes()) return;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const auto& m = metrics[i];
    o << "# HELP " << m.decl.name << ' ' << prometheus_escaped(m.decl.help, false) << "\n# TYPE " << m.decl.name << ' '
      << type_name(m.kind) << '\n';
    auto series = area_of(segment, m, layout.offsets[i]).ready();
    std::sort(series.begin(), series.end(), [](const auto* a, const auto* b) {
      return transport::decode_label_values({a->labels, a->label_bytes}) <
             transport::decode_label_values({b->labels, b->label_bytes});
    });
    for (auto* s : series) write_series(o, m, *s);
  }
  o << "# HELP edri_plugin_metric_writes_dropped_total Writes to a plugin's metric dropped: no room for another "
       "series, or label values too long or not as many as its labels.\n"
       "# TYPE edri_plugin_metric_writes_dropped_total counter\n";
  for (std::size_t i = 0; i < metrics.size(); ++i)
    o << "edri_plugin_metric_writes_dropped_total{metric=\"" << metrics[i].decl.name << "\"} "
      << area_of(segment, metrics[i], layout.offsets[i]).dropped() << '\n';
}

}  // namespace edri::plugin
