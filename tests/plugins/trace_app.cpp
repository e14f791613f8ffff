// The plugin the tracing tests run (docs/operations.md, Traces): a request
// to domain "front" asks domain "back" (a callback handler that asks
// nothing), calls a service over HTTP, then asks domain "far" (on another
// instance, where the test splits the domains). Each handler logs a line
// about its request, which must carry the request's trace id. GET
// /announce publishes a notification that domain "back" subscribes to.
#include <edri/plugin.hpp>

#include <cctype>
#include <string>

namespace {

edri::Response said(const edri::Request& req, edri::Context& ctx) {
  ctx.log(edri::LogLevel::Info, std::string(ctx.domain()) + " handling", &req);
  return edri::Response::json(
      {{"domain", ctx.domain()}, {"traceparent", req.traceparent}, {"tracestate", req.tracestate}});
}

void reg(edri::Registry& r) {
  r.domain("front");
  // GET /trace/{port}: the three calls, in turn; their statuses answered.
  r.get("/trace/{port:int}", "front.trace", [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
    ctx.log(edri::LogLevel::Info, "front handling", &req);
    const edri::Response back = co_await ctx.ask("back.work", nlohmann::json::object());
    edri::HttpCall call;
    call.url = "http://127.0.0.1:" + std::to_string(req.int_param("port")) + "/outbound";
    const edri::HttpReply reply = co_await ctx.fetch(std::move(call));
    const edri::Response far = co_await ctx.ask("far.work", nlohmann::json::object());
    co_return edri::Response::json({{"back", back.status},
                                    {"outbound", reply.status},
                                    {"far", far.status},
                                    {"far_body", far.body_bytes()},
                                    {"traceparent", req.traceparent}});
  });
  // A callback handler: its call to another domain goes on its trace too.
  r.get("/chain", "front.chain", [](const edri::Request& req, edri::Context& ctx) -> edri::Reply {
    ctx.log(edri::LogLevel::Info, "front handling", &req);
    auto answer = ctx.defer();
    ctx.request("back.work", nlohmann::json::object(), [answer](const edri::Response& r) { answer.send(r); });
    return edri::Deferred{};
  });

  // GET /chain-on: a callback handler that asks again from its first
  // call's callback, after it returned; that call continues its trace.
  r.get("/chain-on", "front.chain_on", [](const edri::Request&, edri::Context& ctx) -> edri::Reply {
    auto answer = ctx.defer();
    ctx.request("back.work", nlohmann::json::object(), [answer, &ctx](const edri::Response&) {
      ctx.request("far.work", nlohmann::json::object(), [answer](const edri::Response& r) { answer.send(r); });
    });
    return edri::Deferred{};
  });

  // GET /later: a callback handler that calls out from a timer's callback.
  r.get("/later", "front.later", [](const edri::Request&, edri::Context& ctx) -> edri::Reply {
    auto answer = ctx.defer();
    ctx.after(std::chrono::milliseconds(10), [answer, &ctx] {
      ctx.request("far.work", nlohmann::json::object(), [answer](const edri::Response& r) { answer.send(r); });
    });
    return edri::Deferred{};
  });

  // GET /announce: a notification, heard in domain "back".
  r.notification("news.told");
  r.get("/announce", "front.announce", [](const edri::Request&, edri::Context& ctx) -> edri::Reply {
    if (!ctx.publish("news.told", {{"what", "news"}})) return edri::Response::problem(503, "Unavailable", "full");
    return edri::Response::json({{"told", true}});
  });

  r.domain("back");
  r.subscribe("news.told", [](const edri::Request& req, edri::Context& ctx) {
    ctx.log(edri::LogLevel::Info, "back heard", &req);
    // A call a subscriber makes goes on the notification's trace.
    ctx.request("far.work", nlohmann::json::object(), [](const edri::Response&) {});
  });
  // A coroutine subscriber: its call after it first waits, resumed by a
  // timer outside the notification's dispatch, is on the trace too.
  r.subscribe("news.told", [](const edri::Request&, edri::Context& ctx) -> edri::Async<void> {
    co_await ctx.sleep(std::chrono::milliseconds(20));
    (void)co_await ctx.ask("far.later", nlohmann::json::object());
  });
  r.event("back.work");
  r.handle("back.work", said);
  r.command("back.work");  // a WebSocket command too

  r.domain("far");
  r.event("far.work");
  r.handle("far.work", said);
  r.event("far.later");
  r.handle("far.later", said);

  // GET /store: statements awaited before and after the handler first
  // waits (resumed by the database's answer, outside its dispatch): a
  // query, a batch, and a transaction's query.
  r.domain("store").database("traces", "sqlite::memory:");
  r.get("/store", "store.work", [](const edri::Request&, edri::Context& ctx) -> edri::Async<> {
    edri::Database& db = ctx.database("traces");
    const edri::Rows one = co_await db.query("select 1 AS one");
    std::vector<edri::Statement> two;
    two.push_back({"SELECT 2", {}});
    two.push_back({"SELECT 3", {}});
    const std::vector<edri::Rows> both = co_await db.query_all(std::move(two));
    edri::Transaction tx = co_await db.transaction();
    const edri::Rows inside = co_await tx.query("SELECT 4");
    co_await tx.commit();
    co_return edri::Response::json({{"rows", one.size() + both.size() + inside.size()}});
  });
  // GET /work: work on a worker thread, then a task in a worker process.
  r.worker_threads(1).worker_processes(1).task("upper", [](std::string_view in) {
    std::string out(in);
    for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return out;
  });
  r.get("/work", "store.busy", [](const edri::Request&, edri::Context& ctx) -> edri::Async<> {
    const int sum = co_await ctx.thread([] { return 2 + 2; });
    const edri::TaskResult upper = co_await ctx.task("upper", "abc");
    co_return edri::Response::json({{"sum", sum}, {"upper", upper.output}});
  });
}

}  // namespace

EDRI_PLUGIN("trace", reg)
