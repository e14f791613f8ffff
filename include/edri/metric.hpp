// A plugin's own metrics in /metrics (docs/operations.md "Metrics"):
// counters, gauges and histograms with labels, declared at registration
// (Registry::counter, gauge, histogram) and written from handlers, tasks
// and middleware:
//
//   auto orders = r.counter({"shop_orders_total", "Orders placed.", {"status"}});
//   r.handle("order.place", [orders](const Request&, Context&) {
//     orders.inc({"paid"});
//     ...
//   });
//
// The values live in the instance's shared memory, so every process of a
// domain (its replicas, the listener's middleware) adds to the same
// series, and /metrics, answered by a listener, shows them with the
// server's own. A series is made on its first write; a metric holds at
// most `max_series` of them, and writes past that (or with the wrong
// number of label values, or values too long) are dropped and counted in
// edri_plugin_metric_writes_dropped_total{metric}. Where no server runs
// (a unit test) a write goes nowhere; a task in a worker process writes
// to the same series as its domain's handlers.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edri {

enum class MetricKind : std::uint8_t { Counter, Gauge, Histogram };

// What a metric's declaration says. A start-up error names a bad one: a
// name that is not a Prometheus name, begins with "edri_" (the server's)
// or is declared twice; a counter's name not ending in "_total"; a label
// name that is not a Prometheus label name or is repeated ("le" on a
// histogram); buckets not finite and increasing; max_series of 0 or past
// 4096.
struct MetricDecl {
  std::string name;
  std::string help;
  std::vector<std::string> labels = {};
  // A histogram's buckets' upper bounds (+Inf is added); empty: the
  // default, 5 ms to 10 s. At most 32.
  std::vector<double> buckets = {};
  std::uint32_t max_series = 64;
};

// Where a declared metric's writes go: edri-server binds one to each
// metric of a process that maps its shared memory.
class MetricWriter {
 public:
  // A counter's increase or a gauge's change.
  virtual void add(std::span<const std::string_view> labels, double by) = 0;
  virtual void set(std::span<const std::string_view> labels, double value) = 0;
  virtual void observe(std::span<const std::string_view> labels, double value) = 0;

 protected:
  ~MetricWriter() = default;
};

// What a metric's handles share with the server: the writer, once bound.
struct MetricCell {
  std::atomic<MetricWriter*> writer{nullptr};
};

// A metric as declared, with the cell its handles write through.
struct MetricRegistration {
  MetricKind kind;
  MetricDecl decl;
  std::shared_ptr<MetricCell> cell;
};

namespace detail {

class MetricHandle {
 public:
  explicit MetricHandle(std::shared_ptr<MetricCell> cell = {}) : cell_(std::move(cell)) {}

 protected:
  MetricWriter* writer() const { return cell_ ? cell_->writer.load(std::memory_order_acquire) : nullptr; }
  using Labels = std::initializer_list<std::string_view>;
  static std::span<const std::string_view> span_of(Labels labels) { return {labels.begin(), labels.size()}; }

 private:
  std::shared_ptr<MetricCell> cell_;
};

}  // namespace detail

// Only goes up: a negative or NaN increase is ignored (as prometheus-cpp does).
class Counter : public detail::MetricHandle {
 public:
  using MetricHandle::MetricHandle;
  void inc(double by = 1) const { inc({}, by); }
  void inc(Labels labels, double by = 1) const {
    if (!(by >= 0)) return;
    if (auto* w = writer()) w->add(span_of(labels), by);
  }
};

// Goes up and down. Every process of a domain writes the same series:
// add() and sub() sum across them, and the last set() wins.
class Gauge : public detail::MetricHandle {
 public:
  using MetricHandle::MetricHandle;
  void set(double value) const { set({}, value); }
  void set(Labels labels, double value) const {
    if (auto* w = writer()) w->set(span_of(labels), value);
  }
  void add(double by) const { add({}, by); }
  void add(Labels labels, double by) const {
    if (auto* w = writer()) w->add(span_of(labels), by);
  }
  void sub(double by) const { add({}, -by); }
  void sub(Labels labels, double by) const { add(labels, -by); }
};

// Counts observations into buckets, with their sum. A NaN is ignored.
class Histogram : public detail::MetricHandle {
 public:
  using MetricHandle::MetricHandle;
  void observe(double value) const { observe({}, value); }
  void observe(Labels labels, double value) const {
    if (std::isnan(value)) return;
    if (auto* w = writer()) w->observe(span_of(labels), value);
  }
};

}  // namespace edri
