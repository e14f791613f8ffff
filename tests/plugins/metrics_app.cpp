// The plugin the plugin-metrics tests run (include/edri/metric.hpp): domain
// "shop", in two replicas that add to the same series, counts orders by
// status (room for 3 series), observes their amounts by currency, keeps a
// gauge of open carts, and its middleware counts in the listener. The
// answer names the replica's pid. EDRI_TEST_METRIC_FAULT picks a bad
// declaration instead, which must stop start-up.
#include <unistd.h>

#include <edri/plugin.hpp>
#include <string>

namespace {

nlohmann::json served() { return {{"pid", ::getpid()}}; }

void declare_fault(edri::Registry& r, const std::string& fault) {
  if (fault == "counter_name") r.counter({"shop_orders", "Orders."});
  if (fault == "server_name") r.gauge({"edri_shop_carts", "Carts."});
  if (fault == "twice") r.gauge({"shop_carts", "Carts."}), r.gauge({"shop_carts", "Carts again."});
  if (fault == "buckets") r.histogram({"shop_amount", "Amounts.", {}, {10, 5}});
  if (fault == "label") r.counter({"shop_orders_total", "Orders.", {"Status"}});
}

void reg(edri::Registry& r) {
  r.domain("shop").replicas(2);
  if (const auto fault = r.setting({.key = "fault", .variable = "EDRI_TEST_METRIC_FAULT"}); !fault.empty())
    return declare_fault(r, fault);
  const auto orders = r.counter({.name = "shop_orders_total",
                                 .help = "Orders placed, by status.\nA second line, escaped.",
                                 .labels = {"status"},
                                 .max_series = 3});
  const auto amounts = r.histogram({"shop_order_amount", "Order amounts, by currency.", {"currency"}, {10, 100}});
  const auto carts = r.gauge({"shop_open_carts", "Carts open now."});
  const auto checks = r.counter({"shop_gate_checks_total", "Calls the shop's middleware let through."});
  // GET /order/{status}/{currency}/{amount}: one order counted and observed.
  r.get("/order/{status}/{currency}/{amount:int}", "shop.order",
        [orders, amounts](const edri::Request& req, edri::Context&) {
          orders.inc({*req.path_param("status")});
          amounts.observe({*req.path_param("currency")}, static_cast<double>(req.int_param("amount")));
          return edri::Response::json(served());
        });
  r.get("/carts/open", "shop.open", [carts](const edri::Request&, edri::Context&) {
    carts.add(1);
    return edri::Response::json(served());
  });
  r.get("/carts/close", "shop.close", [carts](const edri::Request&, edri::Context&) {
    carts.sub(1);
    return edri::Response::json(served());
  });
  r.get("/carts/reset/{n:int}", "shop.reset", [carts](const edri::Request& req, edri::Context&) {
    carts.set(static_cast<double>(req.int_param("n")));
    return edri::Response::json(served());
  });
  // Two label values for a metric of one label: dropped, and counted so.
  r.get("/wrong", "shop.wrong", [orders](const edri::Request&, edri::Context&) {
    orders.inc({"a", "b"});
    return edri::Response::json(served());
  });
  edri::MiddlewareDecl gate{"shop_gate", 0, [checks](const edri::Request&, edri::Admission&) {
                              checks.inc();
                              return std::optional<edri::Response>{};
                            }};
  gate.paths = {"/order/"};
  r.middleware(std::move(gate));
}

}  // namespace

EDRI_PLUGIN("shop", reg)
