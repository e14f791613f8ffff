// The benchmark app (contract: ../shared/specs/bench-app.md). The routes
// of later scenarios join it as their capabilities land.
#include <edri/plugin.hpp>

#include <cstdlib>
#include <string>

namespace {

// BENCH_MIDDLEWARES=N (0..64): N pass-through middlewares, request and
// response side, on every route.
int middleware_count() {
  const char* v = std::getenv("BENCH_MIDDLEWARES");
  if (!v || !*v) return 0;
  const int n = std::atoi(v);
  return n < 0 ? 0 : n > 64 ? 64 : n;
}

void register_bench(edri::Registry& r) {
  r.domain("bench");
  r.get("/noop", "bench.noop",
        [](const edri::Request&, edri::Context&) { return edri::Response::raw_json(R"({"ok":true})"); });
  // The body was checked to be JSON in the listener; it goes back as it came.
  r.post("/echo", "bench.echo",
         [](const edri::Request& req, edri::Context&) { return edri::Response::raw_json(std::string(req.body)); },
         {edri::JsonBody()});
  // WebSocket at /ws: {"command":"noop"} and {"command":"echo","value":X}
  // reach the same events; a command's fields are its body.
  r.command("noop", "bench.noop");
  r.command("echo", "bench.echo");
  const int n = middleware_count();
  for (int i = 0; i < n; ++i) {
    r.middleware(
        {"pass" + std::to_string(i), i,
         [](const edri::Request&, edri::ResponseHeaders&) -> std::optional<edri::Response> { return std::nullopt; },
         [](int, edri::ResponseHeaders&) {}});
  }
}

}  // namespace

EDRI_PLUGIN("bench", register_bench)
