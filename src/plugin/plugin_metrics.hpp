// The plugins' own metrics (include/edri/metric.hpp) on the server's side:
// their declarations checked, their places in the segment laid out alike
// in every process, their handles bound there, and their Prometheus text.
#pragma once

#include <cstddef>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <edri/metric.hpp>

#include "transport/segment.hpp"

namespace edri::plugin {

class PluginSet;

// Throws PluginError, naming the metric from `where`, for a declaration
// include/edri/metric.hpp refuses. A histogram without buckets gets the
// default ones here.
void check_metric(MetricRegistration& m, const std::string& where);

// Where each of `plugins`' metrics begins in the segment's plugin metrics
// area, in PluginSet::metrics() order, and the area's size.
struct PluginMetricsLayout {
  std::vector<std::size_t> offsets;
  std::size_t bytes = 0;
};
PluginMetricsLayout plugin_metrics_layout(const PluginSet& plugins);

// Binds each metric's handles to its place in `segment` while it lives:
// made once by each process that runs plugin code, after both are open.
class BoundMetrics {
 public:
  BoundMetrics(const transport::Segment& segment, const PluginSet& plugins);
  ~BoundMetrics();
  BoundMetrics(const BoundMetrics&) = delete;
  BoundMetrics& operator=(const BoundMetrics&) = delete;

 private:
  class SharedMetric;
  const PluginSet& plugins_;
  std::vector<std::unique_ptr<SharedMetric>> writers_;
};

// Text escaped as the Prometheus text format wants it: backslash and
// newline, and `"` too in a label value (`quotes`); not in a HELP line.
std::string prometheus_escaped(std::string_view text, bool quotes);

// Every metric's series in the Prometheus text format, then
// edri_plugin_metric_writes_dropped_total.
void write_plugin_metrics(std::ostringstream& o, const transport::Segment& segment, const PluginSet& plugins);

}  // namespace edri::plugin
