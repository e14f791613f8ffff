// A plugin's own metrics (include/edri/metric.hpp): declared at
// registration, written by handlers in two replicas and by middleware in
// the listener, shown in /metrics, and the text accepted by promtool.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "support/http_client.hpp"
#include "support/promtool.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

TEST_CASE("a plugin's counters, gauges and histograms show in /metrics", "[metrics]") {
  ServerProcess server({test_plugin_path("metrics_app")});
  HttpClient c(server.port());
  auto get = [&](const std::string& path) {
    const auto r = c.get(path);
    REQUIRE(r.status == 200);
    return json::parse(r.body)["pid"].get<int>();
  };
  const auto before = c.get("/metrics").body;
  // Declared without labels: there at 0 before any write.
  CHECK(metric_value(before, "shop_open_carts ") == 0);
  CHECK(metric_value(before, "shop_gate_checks_total ") == 0);
  CHECK(metric_value(before, "shop_orders_total{") == -1);

  std::set<int> replicas;
  for (int i = 0; i < 20; ++i) replicas.insert(get("/order/paid/eur/5"));
  get("/order/refunded/usd/50");
  get("/order/failed/eur/500");
  get("/order/lost/eur/1");  // a fourth status: shop_orders_total has room for 3
  for (int i = 0; i < 3; ++i) replicas.insert(get("/carts/open"));
  get("/carts/close");
  get("/wrong");
  // Both replicas wrote: the series are the domain's, not a process's.
  REQUIRE(replicas.size() == 2);

  const auto m = c.get("/metrics").body;
  INFO(m);
  CHECK(metric_value(m, "shop_orders_total{status=\"paid\"} ") == 20);
  CHECK(metric_value(m, "shop_orders_total{status=\"refunded\"} ") == 1);
  CHECK(metric_value(m, "shop_orders_total{status=\"failed\"} ") == 1);
  CHECK(metric_value(m, "shop_orders_total{status=\"lost\"} ") == -1);
  CHECK(metric_value(m, "edri_plugin_metric_writes_dropped_total{metric=\"shop_orders_total\"} ") == 2);
  CHECK(metric_value(m, "edri_plugin_metric_writes_dropped_total{metric=\"shop_order_amount\"} ") == 0);
  CHECK(m.find("# HELP shop_orders_total Orders placed, by status.\\nA second line, escaped.\n") != std::string::npos);
  CHECK(m.find("# TYPE shop_order_amount histogram\n") != std::string::npos);
  // eur: 20 of 5, one of 500 and one of 1 (the lost order's amount still counts).
  CHECK(metric_value(m, "shop_order_amount_bucket{currency=\"eur\",le=\"10\"} ") == 21);
  CHECK(metric_value(m, "shop_order_amount_bucket{currency=\"eur\",le=\"100\"} ") == 21);
  CHECK(metric_value(m, "shop_order_amount_bucket{currency=\"eur\",le=\"+Inf\"} ") == 22);
  CHECK(metric_value(m, "shop_order_amount_sum{currency=\"eur\"} ") == 601);
  CHECK(metric_value(m, "shop_order_amount_count{currency=\"eur\"} ") == 22);
  CHECK(metric_value(m, "shop_order_amount_bucket{currency=\"usd\",le=\"10\"} ") == 0);
  CHECK(metric_value(m, "shop_order_amount_bucket{currency=\"usd\",le=\"100\"} ") == 1);
  CHECK(metric_value(m, "shop_open_carts ") == 2);
  // The middleware ran in the listener for the 23 orders, not for the carts.
  CHECK(metric_value(m, "shop_gate_checks_total ") == 23);
  const auto lint = promtool_check_metrics(m);
  INFO(lint.output);
  CHECK(lint.status == 0);

  get("/carts/reset/7");
  CHECK(metric_value(c.get("/metrics").body, "shop_open_carts ") == 7);
}

TEST_CASE("a bad metric declaration stops start-up naming it", "[metrics]") {
  const auto path = test_plugin_path("metrics_app");
  for (const auto& [fault, message] : std::vector<std::pair<std::string, std::string>>{
           {"counter_name", "metric shop_orders: a counter's name ends in _total"},
           {"server_name", "metric edri_shop_carts: names beginning edri_ are the server's"},
           {"twice", "metric shop_carts is declared twice"},
           {"buckets", "metric shop_amount: buckets are finite and each larger than the one before"},
           {"label", "label 'Status' is not a label name"}}) {
    const auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", path}, {"EDRI_TEST_METRIC_FAULT", fault}});
    INFO(fault << ": " << r.err);
    CHECK(r.status == 3);
    CHECK(r.err.find(message) != std::string::npos);
  }
}
