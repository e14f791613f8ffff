// The benchmark app (contract: ../shared/specs/bench-app.md). The routes
// of later scenarios join it as their capabilities land.
#include <edri/live_stream.hpp>
#include <edri/plugin.hpp>

#include <time.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// A declared setting ([plugin.bench] KEY in the config file, BENCH_KEY in
// the environment): its text.
std::string setting(edri::Registry& r, const std::string& key, std::string fallback, std::string meaning) {
  std::string variable = "BENCH_" + key;
  for (auto& c : variable) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r.setting({.key = key, .variable = variable, .default_value = fallback, .meaning = meaning});
}

// An integer setting, clamped to [lo, hi].
int setting_int(edri::Registry& r, const std::string& key, int fallback, int lo, int hi, std::string meaning) {
  const int n = std::atoi(setting(r, key, std::to_string(fallback), std::move(meaning)).c_str());
  return n < lo ? lo : n > hi ? hi : n;
}

double thread_cpu_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The CPU burner of /cpu and /busy: a computed loop, never a sleep.
std::uint64_t spin(std::uint64_t iterations) {
  std::uint64_t x = 88172645463325252ull;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    asm volatile("" : "+r"(x));  // keeps the loop from being folded away
  }
  return x;
}

// Loop iterations per millisecond of CPU, measured once per process on
// first use (the best of three short runs, on thread CPU time).
std::uint64_t iterations_per_ms() {
  static const std::uint64_t n = [] {
    constexpr std::uint64_t kProbe = 1u << 22;
    double best = 1e9;
    for (int i = 0; i < 3; ++i) {
      const double t0 = thread_cpu_seconds();
      spin(kProbe);
      best = std::min(best, thread_cpu_seconds() - t0);
    }
    return static_cast<std::uint64_t>(static_cast<double>(kProbe) / (best * 1000.0));
  }();
  return n;
}

void burn_ms(std::int64_t ms) { spin(static_cast<std::uint64_t>(ms) * iterations_per_ms()); }

edri::Response ok() { return edri::Response::raw_json(R"({"ok":true})"); }

// /route/{n}: n request/response round trips to the pong domain, through
// the server's routing (straight between the two managers, the router
// told: docs/decisions/0028), at most `window` in flight (BENCH_ROUTE_WINDOW, default 1:
// each waits for the previous answer).
struct RouteRun : std::enable_shared_from_this<RouteRun> {
  edri::Context& ctx;
  edri::Responder responder;
  std::int64_t n, window, sent = 0, answered = 0, failed = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  RouteRun(edri::Context& c, edri::Responder r, std::int64_t count, std::int64_t w)
      : ctx(c), responder(std::move(r)), n(count), window(w) {}

  void pump() {
    auto self = shared_from_this();
    while (sent < n && sent - answered < window) {
      ++sent;
      ctx.request("bench.pong", nullptr, [self](const edri::Response& r) {
        ++self->answered;
        if (r.status != 200) ++self->failed;
        if (self->answered == self->n)
          self->finish();
        else
          self->pump();
      });
    }
  }
  void finish() {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (failed) {
      responder.send(edri::Response::problem(502, "Bad Gateway", std::to_string(failed) + " round trips failed"));
      return;
    }
    responder.send(edri::Response::json(
        {{"round_trips", n}, {"seconds", s}, {"per_second", s > 0 ? static_cast<double>(n) / s : 0.0}}));
  }
};

// POST /stream-burst: U rounds, one every I ms, of one patch to each named
// stream, published inside the server; answered once every publish was
// numbered by the broker.
struct StreamBurst : std::enable_shared_from_this<StreamBurst> {
  edri::Context& ctx;
  edri::Responder responder;
  std::vector<std::string> streams;
  std::int64_t updates, interval_ms, fields, round = 0, answered = 0, failed = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  StreamBurst(edri::Context& c, edri::Responder r) : ctx(c), responder(std::move(r)) {}
  std::int64_t total() const { return updates * static_cast<std::int64_t>(streams.size()); }
  void next_round() {
    auto self = shared_from_this();
    const auto k = round++;
    std::string field = "f";
    field += std::to_string(k % fields);  // (GCC 12 warns falsely of "f" + std::to_string)
    for (const auto& name : streams) {
      const nlohmann::json patch{{field, k + 1}, {"rev", k + 1}};
      ctx.publish_patch(name, patch, [self](const edri::Response& r) {
        if (r.status != 200) ++self->failed;
        if (++self->answered == self->total()) self->finish();
      });
    }
    if (round < updates) ctx.after(std::chrono::milliseconds(interval_ms), [self] { self->next_round(); });
  }
  void finish() {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (failed) {
      responder.send(edri::Response::problem(502, "Bad Gateway", std::to_string(failed) + " publishes failed"));
      return;
    }
    responder.send(edri::Response::json({{"published", total()}, {"seconds", s}}));
  }
};

// Live streams (../shared/specs/streams.md), in the bench domain: a
// manager of their own would change the process count every scenario has.
void register_streams(edri::Registry& r) {
  r.domain("bench");
  auto forward = [](edri::Context& ctx) {
    return [responder = ctx.defer()](const edri::Response& answer) { responder.send(answer); };
  };
  r.post("/stream/{name}", "bench.stream.publish",
         [forward](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
           ctx.publish_patch(*req.path_param("name"), req.json(), forward(ctx));
           return edri::Deferred{};
         });
  r.get("/stream/{name}", "bench.stream.read", [forward](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
    ctx.read_stream(*req.path_param("name"), forward(ctx));
    return edri::Deferred{};
  });
  r.stream_events("/sse/{name}");
  r.post("/stream-burst", "bench.stream.burst", [](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
    const auto body = req.json();
    auto number = [&](const char* key, std::int64_t lo, std::int64_t hi) -> std::int64_t {
      const auto it = body.find(key);
      if (it == body.end() || !it->is_number_integer() || *it < lo || *it > hi)
        throw edri::RequestError(422,
                                 std::string(key) + ": an integer " + std::to_string(lo) + ".." + std::to_string(hi));
      return it->get<std::int64_t>();
    };
    const auto names = body.find("streams");
    if (names == body.end() || !names->is_array() || names->empty() || names->size() > 100000)
      return edri::Response::problem(422, "Unprocessable Content", "streams: an array of 1..100000 names");
    auto burst = std::make_shared<StreamBurst>(ctx, edri::Responder(nullptr));
    for (const auto& n : *names) {
      if (!n.is_string() || !edri::is_valid_stream_name(n.get_ref<const std::string&>()))
        return edri::Response::problem(422, "Unprocessable Content", "streams: names of A-Z a-z 0-9 . _ : -");
      burst->streams.push_back(n.get<std::string>());
    }
    burst->updates = number("updates", 1, 1000000);
    burst->interval_ms = number("interval_ms", 0, 60000);
    burst->fields = number("fields", 1, 1000);
    burst->responder = ctx.defer();
    burst->next_round();
    return edri::Deferred{};
  });
}

// Handlers that wait without blocking their manager (coroutines,
// docs/decisions/0030): a timer, an outbound HTTP GET, another domain.
void register_waits(edri::Registry& r) {
  r.domain("bench");
  r.get("/wait/{ms:int}", "bench.wait", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const auto ms = req.int_param("ms");
    if (ms < 0 || ms > 60000) co_return edri::Response::problem(422, "Unprocessable Content", "ms: 0..60000");
    co_await ctx.sleep(std::chrono::milliseconds(ms));
    co_return edri::Response::json({{"waited", ms}});
  });
  const std::string fetch_url = setting(r, "fetch_url", "", "the URL /fetch calls");
  r.get("/fetch", "bench.fetch", [fetch_url](const edri::Request&, edri::Context& ctx) -> edri::Async<> {
    if (fetch_url.empty()) co_return edri::Response::problem(503, "Service Unavailable", "BENCH_FETCH_URL is not set");
    edri::HttpCall call;
    call.url = fetch_url;
    const edri::HttpReply reply = co_await ctx.fetch(std::move(call));
    if (reply.timed_out) co_return edri::Response::problem(504, "Gateway Timeout", reply.error);
    if (!reply.error.empty()) co_return edri::Response::problem(502, "Bad Gateway", reply.error);
    co_return edri::Response::json({{"status", reply.status}, {"bytes", reply.body.size()}});
  });
  r.get("/ask-wait/{ms:int}", "bench.ask_wait", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const auto ms = req.int_param("ms");
    if (ms < 0 || ms > 60000) co_return edri::Response::problem(422, "Unprocessable Content", "ms: 0..60000");
    nlohmann::json body = {{"ms", ms}};  // made first: GCC 12 and braced lists in a co_await
    edri::Response answer = co_await ctx.ask("pong.wait", std::move(body));
    if (answer.status.code != 200) co_return answer;
    co_return edri::Response::json({{"waited", ms}});
  });
  r.domain("pong");
  r.event("pong.wait");
  r.handle("pong.wait", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const auto ms = req.json().value("ms", std::int64_t{0});
    co_await ctx.sleep(std::chrono::milliseconds(ms));
    co_return ok();
  });
}

void register_bench(edri::Registry& r) {
  r.domain("bench");
  // BENCH_NOOP_COROUTINE=1: /noop as a coroutine that awaits nothing, for
  // the A/B of what edri::Async costs where nothing waits (decision 0030).
  if (setting_int(r, "noop_coroutine", 0, 0, 1, "1: /noop as a coroutine") == 1)
    r.get("/noop", "bench.noop", [](const edri::Request&, edri::Context&) -> edri::Async<> { co_return ok(); });
  else
    r.get("/noop", "bench.noop", [](const edri::Request&, edri::Context&) { return ok(); });
  // The body was checked to be JSON in the listener; it goes back as it came.
  r.post("/echo", "bench.echo",
         [](const edri::Request& req, edri::Context&) { return edri::Response::raw_json(std::string(req.body)); },
         {edri::JsonBody()});
  // WebSocket at /ws: {"command":"noop"} and {"command":"echo","value":X}
  // reach the same events; a command's fields are its body.
  r.command("noop", "bench.noop");
  r.command("echo", "bench.echo");
  // /payload/{bytes}: exactly that many bytes, 0..64 MiB: 'a'..'z' over and
  // over, appended from one block whose length is a multiple of 26, so the
  // manager keeps 64 KiB of pattern, not the largest answer. Bodies larger
  // than BENCH_STREAM_FROM bytes (default 1 MiB; -1: never) are streamed
  // with Content-Length, one block per piece, as the client takes them.
  const long long stream_from =
      std::atoll(setting(r, "stream_from", "1048576", "bytes from which /payload streams (-1: never)").c_str());
  r.get("/payload/{bytes:int}", "bench.payload", [stream_from](const edri::Request& req, edri::Context&) {
    constexpr std::int64_t kMax = std::int64_t{64} << 20;
    const auto n = req.int_param("bytes");
    if (n < 0 || n > kMax) return edri::Response::problem(422, "Unprocessable Content", "bytes: 0..67108864");
    // A little over 64 KiB, so that each piece travels in the blob area.
    static const std::string block = [] {
      std::string b(26 * 2521, '\0');
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>('a' + i % 26);
      return b;
    }();
    if (stream_from >= 0 && n > stream_from) {
      auto made = std::make_shared<std::size_t>(0);
      const auto total = static_cast<std::size_t>(n);
      return edri::Response::stream(
          [made, total](std::string& out) {
            const std::size_t k = std::min(block.size(), total - *made);
            out.append(block, 0, k);
            *made += k;
            return *made < total;
          },
          "application/octet-stream", static_cast<std::uint64_t>(n));
    }
    std::string body;
    body.reserve(static_cast<std::size_t>(n));
    while (body.size() < static_cast<std::size_t>(n))
      body.append(block, 0, std::min(block.size(), static_cast<std::size_t>(n) - body.size()));
    return edri::Response::bytes(std::move(body));
  });

  // /cpu/{ms}: CPU work where BENCH_WORKER says, in a pool of BENCH_MAXW.
  const std::string worker = setting(r, "worker", "inline", "where /cpu runs: inline, thread or process");
  const int maxw = setting_int(r, "maxw", 1, 1, 256, "workers of /cpu's pool");
  if (worker == "thread") {
    r.worker_threads(static_cast<std::size_t>(maxw), 1024);
    r.get("/cpu/{ms:int}", "bench.cpu", [](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
      const auto ms = req.int_param("ms");
      if (ms < 0 || ms > 60000) return edri::Response::problem(422, "Unprocessable Content", "ms: 0..60000");
      return ctx.in_thread([ms] {
        burn_ms(ms);
        return ok();
      });
    });
  } else if (worker == "inline") {
    r.get("/cpu/{ms:int}", "bench.cpu", [](const edri::Request& req, edri::Context&) {
      const auto ms = req.int_param("ms");
      if (ms < 0 || ms > 60000) return edri::Response::problem(422, "Unprocessable Content", "ms: 0..60000");
      burn_ms(ms);
      return ok();
    });
  } else if (worker == "process") {
    // The task runs in a worker process; its input is the milliseconds.
    r.task("burn", [](std::string_view input) {
      burn_ms(std::stoll(std::string(input)));
      return std::string(R"({"ok":true})");
    });
    r.worker_processes(static_cast<std::size_t>(maxw), 1024);
    r.get("/cpu/{ms:int}", "bench.cpu", [](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
      const auto ms = req.int_param("ms");
      if (ms < 0 || ms > 60000) return edri::Response::problem(422, "Unprocessable Content", "ms: 0..60000");
      return ctx.in_process("burn", std::to_string(ms), [](const edri::TaskResult& t) {
        return t.ok() ? edri::Response::raw_json(t.output) : t.problem();
      });
    });
  } else {
    throw std::invalid_argument("BENCH_WORKER=" + worker + ": inline, thread or process");
  }

  // /busy/{k}/{ms}: CPU inline in manager k, each its own process and event
  // type; manager 0 is the bench manager itself.
  const int managers = setting_int(r, "managers", 1, 1, 64, "managers of /busy/{k}");
  for (int k = 0; k < managers; ++k) {
    r.domain(k == 0 ? "bench" : "busy" + std::to_string(k));
    r.get("/busy/" + std::to_string(k) + "/{ms:int}", "bench.busy." + std::to_string(k),
          [](const edri::Request& req, edri::Context&) {
            const auto ms = req.int_param("ms");
            if (ms < 0 || ms > 60000) return edri::Response::problem(422, "Unprocessable Content", "ms: 0..60000");
            burn_ms(ms);
            return ok();
          });
  }

  // /route/{n}: round trips through the real server, to a manager of its own.
  r.domain("bench");
  const int window = setting_int(r, "route_window", 1, 1, 4096, "/route's round trips in flight");
  r.get("/route/{n:int}", "bench.route", [window](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
    const auto n = req.int_param("n");
    if (n < 0 || n > 100000000) return edri::Response::problem(422, "Unprocessable Content", "n: 0..100000000");
    auto run = std::make_shared<RouteRun>(ctx, ctx.defer(), n, window);
    if (n == 0)
      run->finish();
    else
      run->pump();
    return edri::Deferred{};
  });
  r.domain("pong");
  r.event("bench.pong");
  r.handle("bench.pong", [](const edri::Request&, edri::Context&) { return ok(); });

  register_waits(r);

  register_streams(r);

  r.domain("bench");
  const int n = setting_int(r, "middlewares", 0, 0, 64, "middlewares that pass every request");
  for (int i = 0; i < n; ++i) {
    r.middleware(
        {"pass" + std::to_string(i), i,
         [](const edri::Request&, edri::ResponseHeaders&) -> std::optional<edri::Response> { return std::nullopt; },
         [](int, edri::ResponseHeaders&) {}});
  }
}

}  // namespace

EDRI_PLUGIN("bench", register_bench)
