// The benchmark app (contract: ../shared/specs/bench-app.md). The routes
// of later scenarios join it as their capabilities land.
#include <edri/plugin.hpp>

namespace {

void register_bench(edri::Registry& r) {
  r.domain("bench");
  r.get("/noop", "bench.noop",
        [](const edri::Request&, edri::Context&) { return edri::Response::raw_json(R"({"ok":true})"); });
}

}  // namespace

EDRI_PLUGIN("bench", register_bench)
