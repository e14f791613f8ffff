// The plugin the coroutine handler tests run (include/edri/async.hpp):
// handlers that await a timer, another domain, a worker thread and a
// worker process, and use the request and the context after; one that
// throws after waiting; one that counts the cancellations it sees. Some
// are WebSocket commands and gRPC Events too.
#include <edri/plugin.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

int cancelled = 0;                 // handlers that saw Cancelled (GET /co/cancelled)
std::string cancelled_why;         // what() of the last Cancelled
bool started = false;              // the start hook of domain "life" ran
int ticks = 0;                     // its periodic timer's runs
std::vector<int> seen;             // the co.tick notifications domain "peer" received, in order
std::vector<int> seen_after_wait;  // the same, by a coroutine subscriber after a wait
// A periodic job: counts, and runs again in 20 ms.
void tick(edri::Context& ctx) {
  ctx.after(std::chrono::milliseconds(20), [&ctx] {
    ++ticks;
    tick(ctx);
  });
}

void reg(edri::Registry& r) {
  r.domain("co");
  r.worker_threads(2);
  r.task("twice", [](std::string_view in) { return std::string(in) + std::string(in); });

  r.get("/co/sleep/{ms:int}", "co.sleep", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const auto ms = req.int_param("ms");
    try {
      co_await ctx.sleep(std::chrono::milliseconds(ms));
    } catch (const edri::Cancelled& e) {
      ++cancelled;
      cancelled_why = e.what();
      throw;
    }
    // The request is still whole after the wait: its views were copied.
    co_return edri::Response::json({{"slept", ms}, {"event", std::string(req.event)}, {"id", std::string(req.id)}});
  });
  r.get("/co/cancelled", "co.cancelled", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"cancelled", cancelled}, {"why", cancelled_why}});
  });
  r.get("/co/hello", "co.hello", [](const edri::Request&, edri::Context&) { return edri::Response::text("hello"); });
  // Defers, then answers through the Responder before it returns.
  r.get("/co/defer-now", "co.defer_now", [](const edri::Request&, edri::Context& ctx) -> edri::Reply {
    ctx.defer().send(edri::Response::text("answered before returning"));
    return edri::Deferred{};
  });

  // Awaits the other domain, twice in a row, then a helper coroutine.
  r.get("/co/ask/{name}", "co.ask", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const std::string name(*req.path_param("name"));
    // GCC 12 cannot keep a braced list alive across a co_await in the same
    // statement ("array used as initializer"): the JSON is made first.
    nlohmann::json to_first = {{"name", name}};
    edri::Response first = co_await ctx.ask("peer.greet", std::move(to_first));
    nlohmann::json to_second = {{"name", name + "!"}};
    edri::Response second = co_await ctx.ask("peer.greet", std::move(to_second));
    co_return edri::Response::json({{"first", nlohmann::json::parse(std::get<std::string>(first.body))},
                                    {"second", nlohmann::json::parse(std::get<std::string>(second.body))}});
  });
  // The same events as WebSocket commands and gRPC Events: a coroutine
  // handler serves them as it serves their routes.
  r.command("co.sleep").command("co.hello").command("co.ask");
  r.get("/co/thread/{n:int}", "co.thread", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const auto n = req.int_param("n");
    const auto sum = co_await ctx.thread([n] {
      std::int64_t s = 0;
      for (std::int64_t i = 1; i <= n; ++i) s += i;
      return s;
    });
    // Back on the loop: the context may be used again.
    ctx.publish("co.summed", {{"sum", sum}});
    co_return edri::Response::json({{"sum", sum}, {"domain", ctx.domain()}});
  });
  r.notification("co.summed");
  r.get("/co/task/{text}", "co.task", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const edri::TaskResult t = co_await ctx.task("twice", std::string(*req.path_param("text")));
    if (!t.ok()) co_return t.problem();
    co_return edri::Response::json({{"output", t.output}});
  });
  r.get("/co/throw", "co.throw", [](const edri::Request&, edri::Context& ctx) -> edri::Async<> {
    co_await ctx.sleep(std::chrono::milliseconds(1));
    throw std::runtime_error("thrown after a wait");
  });
  r.get("/co/now", "co.now",
        [](const edri::Request&, edri::Context&) -> edri::Async<> { co_return edri::Response::text("at once"); });

  // Outbound HTTP: GET http(s)://127.0.0.1:{port}/{file}, answered with
  // what came back (status 0 and the error when nothing did).
  auto fetch = [](const char* scheme) {
    return [scheme](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
      edri::HttpCall call;
      call.url = std::string(scheme) + "://127.0.0.1:" + std::to_string(req.int_param("port")) + "/" +
                 std::string(*req.path_param("file"));
      if (auto ms = req.path_param("ms")) call.timeout = std::chrono::milliseconds(req.int_param("ms"));
      if (auto max = req.path_param("max")) call.max_response_bytes = static_cast<std::size_t>(req.int_param("max"));
      const edri::HttpReply reply = co_await ctx.fetch(std::move(call));
      co_return edri::Response::json({{"status", reply.status},
                                      {"body", reply.body},
                                      {"error", reply.error},
                                      {"server", std::string(reply.header("Server").value_or(""))}});
    };
  };
  r.get("/co/fetch/{port:int}/{file}", "co.fetch", fetch("http"));
  r.get("/co/fetchs/{port:int}/{file}", "co.fetchs", fetch("https"));
  r.get("/co/fetch-within/{ms:int}/{port:int}/{file}", "co.fetch_within", fetch("http"));
  r.get("/co/fetch-max/{max:int}/{port:int}/{file}", "co.fetch_max", fetch("http"));

  // Lifecycle: a start hook that fails when COROUTINES_START_FAIL is set
  // (a database path that is wrong), else starts a periodic timer; a stop
  // hook that writes COROUTINES_STOP_FILE.
  r.domain("life");
  r.replicas(1);  // its ticks are state in the process: one manager, whatever EDRI_MANAGER_REPLICAS says
  r.on_start([](edri::Context& ctx) {
    if (const char* bad = std::getenv("COROUTINES_START_FAIL"))
      throw std::runtime_error(std::string("no database at ") + bad);
    started = true;
    tick(ctx);
  });
  r.on_stop([](edri::Context&) {
    if (const char* file = std::getenv("COROUTINES_STOP_FILE")) std::ofstream(file) << "stopped after " << ticks;
  });
  r.get("/life/state", "life.state", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"started", started}, {"ticks", ticks}});
  });

  r.domain("co");
  // Awaits a domain whose manager dies handling it: resumes with its 503.
  r.get("/co/ask-crash", "co.ask_crash", [](const edri::Request&, edri::Context& ctx) -> edri::Async<> {
    edri::Response answer = co_await ctx.ask("peer.crash", nlohmann::json::object());
    co_return edri::Response::json({{"status", answer.status.code}, {"after", "resumed"}});
  });
  // Publishes `n` notifications, one per wait: the subscriber sees them in
  // order, as it sees a plain handler's.
  r.notification("co.tick");
  r.get("/co/publish/{n:int}", "co.publish", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    const auto n = req.int_param("n");
    for (std::int64_t i = 0; i < n; ++i) {
      nlohmann::json tick = {{"i", i}};
      ctx.publish("co.tick", tick);
      co_await ctx.sleep(std::chrono::milliseconds(i % 3));
    }
    co_return edri::Response::json({{"published", n}});
  });

  r.domain("peer");
  r.event("peer.crash");
  r.handle("peer.crash", [](const edri::Request&, edri::Context&) -> edri::Response { std::abort(); });
  r.subscribe("co.tick", [](const edri::Request& n, edri::Context&) { seen.push_back(n.json().value("i", -1)); });
  // A coroutine subscriber: it waits, then finds its notification whole.
  r.subscribe("co.tick", [](const edri::Request& n, edri::Context& ctx) -> edri::Async<void> {
    co_await ctx.sleep(std::chrono::milliseconds(2));
    seen_after_wait.push_back(n.json().value("i", -1));
  });
  r.get("/peer/seen", "peer.seen", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"seen", seen}, {"seen_after_wait", seen_after_wait}});
  });
  r.event("peer.greet");
  r.handle("peer.greet", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"greeting", "hi " + req.json().value("name", std::string())}});
  });
}

}  // namespace

EDRI_PLUGIN("co", reg)
