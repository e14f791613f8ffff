// The plugin integration tests run: typed parameters, bodies, errors and a
// handler that takes its time.
#include <unistd.h>

#include <edri/plugin.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

namespace {

void reg(edri::Registry& r) {
  r.domain("test");
  r.get("/hello/{name}", "test.hello", [](const edri::Request& req, edri::Context& ctx) {
    return edri::Response::json({{"hello", std::string(*req.path_param("name"))}, {"domain", ctx.domain()}});
  });
  r.get("/items/{id:int}", "test.item", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"id", req.int_param("id")}, {"query", std::string(req.query)}});
  });
  r.get("/uuid/{u:uuid}", "test.uuid", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"uuid", std::string(*req.path_param("u"))}});
  });
  r.post("/echo", "test.echo",
         [](const edri::Request& req, edri::Context&) { return edri::Response::raw_json(std::string(req.body)); });
  // The same, with the body declared JSON: checked by the listener.
  r.post("/json-echo", "test.json_echo",
         [](const edri::Request& req, edri::Context&) { return edri::Response::raw_json(std::string(req.body)); },
         {edri::JsonBody()});
  // No declared fields: the listener passes the body as it came, and
  // req.json() in the manager is what parses (and limits) it.
  r.post("/raw-json", "test.raw_json",
         [](const edri::Request& req, edri::Context&) { return edri::Response::json(req.json()); });
  r.get("/throw", "test.throw", [](const edri::Request&, edri::Context&) -> edri::Response {
    throw std::runtime_error("secret internal detail");
  });
  r.get("/status/{code:int}", "test.status", [](const edri::Request& req, edri::Context&) {
    return edri::Response::text("status", static_cast<int>(req.int_param("code"))).header("X-Test", "yes");
  });
  // Commands (WebSocket messages, gRPC Events) that reach the events of
  // routes above.
  r.command("hello", "test.hello").command("sleep", "test.sleep").command("status", "test.status");
  r.command("throw", "test.throw");
  // A line in the server's log at level {level} (edri::LogLevel), about
  // this request.
  r.get("/log/{level:int}", "test.log", [](const edri::Request& req, edri::Context& ctx) {
    ctx.log(static_cast<edri::LogLevel>(req.int_param("level")), "handler says \"hello\"", &req);
    return edri::Response::text("logged");
  });
  r.get("/pid", "test.pid", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"pid", ::getpid()}});
  });
  r.get("/sleep/{ms:int}", "test.sleep", [](const edri::Request& req, edri::Context&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(req.int_param("ms")));
    return edri::Response::raw_json(R"({"slept":true})");
  });
  // Replayed when their manager dies before answering (Registry::replay):
  // one that sleeps and says who answered and under which id, one that
  // kills its manager every time.
  r.get("/replayed/sleep/{ms:int}", "test.replayed_sleep", [](const edri::Request& req, edri::Context&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(req.int_param("ms")));
    return edri::Response::json({{"pid", ::getpid()}, {"id", std::string(req.id)}});
  });
  r.replay("test.replayed_sleep");
  r.get("/replayed/abort", "test.replayed_abort",
        [](const edri::Request&, edri::Context&) -> edri::Response { std::abort(); });
  r.replay("test.replayed_abort");
  r.get("/own-id", "test.own_id", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"id", std::string(req.id)}});
  });
  // Declared fields, checked by the listener; `created` counts the calls
  // that reached the manager, so a test can see that bad ones did not.
  static int created = 0;
  using edri::Field;
  r.post("/things", "test.create",
         [](const edri::Request& req, edri::Context&) {
           ++created;
           return edri::Response::json(req.json(), 201).header("Location", "/things/1");
         },
         {Field("title").string().length(1, 10), Field("count").integer().range(0, 10).optional(),
          Field("tags").array().length(0, 3).optional()});
  r.command("things.create", "test.create");
  // JSON Schema's rules at the edge: enum, pattern, nullable, a nested
  // object, an array of objects, a query enum with a default.
  r.post(
      "/orders", "test.order",
      [](const edri::Request& req, edri::Context&) {
        return edri::Response::json({{"order", req.json()}, {"priority", req.int_query("priority")}}, 201);
      },
      {Field("state").string().one_of({"open", "paid"}), Field("sku").string().pattern("^[A-Z]{3}-[0-9]{4}$"),
       Field("note").string().nullable(),
       Field("buyer").object({Field("name").string().length(1, 40), Field("email").string().pattern("@").optional()}),
       Field("lines")
           .array(Field("").object({Field("qty").integer().range(1, 99), Field("code").string().optional()}))
           .length(1, 50),
       Field("priority").in_query().integer().one_of({1, 2, 3}).default_to(2)});
  r.command("orders.create", "test.order");
  r.refuse_unknown_fields("test.order");
  // What is left of the client's deadline (gRPC grpc-timeout), as the
  // handler sees it.
  r.get("/deadline", "test.deadline", [](const edri::Request& req, edri::Context&) {
    using Clock = std::chrono::steady_clock;
    if (req.deadline == Clock::time_point::max()) return edri::Response::json({{"deadline", false}});
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(req.deadline - Clock::now());
    return edri::Response::json({{"deadline", true}, {"left_ms", left.count()}});
  });
  r.command("deadline", "test.deadline");
  r.get("/things/created", "test.created", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"created", created}});
  });
  r.get("/search", "test.search",
        [](const edri::Request& req, edri::Context&) {
          return edri::Response::json({{"q", std::string(*req.query_param("q"))},
                                       {"limit", req.int_query("limit")},
                                       {"key", std::string(req.header("x-api-key").value_or("-"))},
                                       {"session", std::string(req.cookie("session").value_or("-"))}});
        },
        {Field("q").in_query().string().length(1, 20), Field("limit").in_query().integer().range(1, 100).default_to(20),
         Field("X-Api-Key").in_header().string().optional(), Field("session").in_cookie().optional()});
  r.command("search", "test.search");
  r.get("/bytes/{n:int}", "test.bytes", [](const edri::Request& req, edri::Context&) {
    std::string data(static_cast<std::size_t>(req.int_param("n")), '\0');
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i % 251);
    return edri::Response::bytes(std::move(data));
  });
  // /counted/{n}: n bytes, counting the calls (GET /counted says how many
  // reached the manager).
  static int counted = 0;
  r.get("/counted/{n:int}", "test.counted_bytes", [](const edri::Request& req, edri::Context&) {
    ++counted;
    return edri::Response::bytes(std::string(static_cast<std::size_t>(req.int_param("n")), 'c'));
  });
  r.command("counted", "test.counted_bytes");  // the same over WebSocket and gRPC
  r.get("/counted", "test.counted", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"counted", counted}});
  });
  // POST /upload: what arrived, and where. X-Keep-To: keep the body (or
  // the form part named "file") as that file.
  auto fnv = [](std::string_view d) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : d) h = (h ^ c) * 1099511628211ull;
    return std::to_string(h);
  };
  r.post("/upload", "test.upload",
         [fnv](const edri::Request& req, edri::Context&) {
           nlohmann::json parts = nlohmann::json::array();
           for (const auto& p : req.form)
             parts.push_back({{"name", p.name},
                              {"filename", p.filename},
                              {"type", p.content_type},
                              {"size", p.data.size()},
                              {"sum", fnv(p.data)},
                              {"text", p.data.size() <= 64 ? std::string(p.data) : std::string()}});
           const std::string file(req.body_file);
           bool kept = false;
           if (auto to = req.header("x-keep-to")) {
             if (const auto* part = req.form_part("file"))
               kept = part->save(std::string(*to));
             else
               kept = req.keep_body(std::string(*to));
           }
           return edri::Response::json({{"size", req.body.size()},
                                        {"sum", fnv(req.body)},
                                        {"file", file},
                                        {"file_existed", !file.empty() && (kept || ::access(file.c_str(), F_OK) == 0)},
                                        {"type", req.content_type},
                                        {"parts", parts},
                                        {"kept", kept}});
         },
         {edri::Field("X-Keep-To").in_header().string().optional()});
  // Compressible answers (docs/compression.md). /text/{n}: n bytes of
  // numbered lines of text, with a strong ETag; /text-stream/{n}: the same
  // streamed in 4 KiB pieces; /text-encoded/{n}: the same, encoded by the
  // handler already; /png/{n}: n bytes of an image type.
  auto text = [](long n) {
    std::string out;
    for (long line = 0; static_cast<long>(out.size()) < n; ++line)
      out += "line " + std::to_string(line) + ": the quick brown fox jumps over the lazy dog " +
             std::to_string(line * 7919 % 10007) + "\n";
    out.resize(static_cast<std::size_t>(n));
    return out;
  };
  r.get("/text/{n:int}", "test.text", [text](const edri::Request& req, edri::Context&) {
    return edri::Response::text(text(req.int_param("n"))).header("ETag", "\"t1\"");
  });
  r.get("/text-stream/{n:int}", "test.text_stream", [text](const edri::Request& req, edri::Context&) {
    auto body = std::make_shared<std::string>(text(req.int_param("n")));
    auto at = std::make_shared<std::size_t>(0);
    return edri::Response::stream(
        [body, at](std::string& out) {
          out.append(*body, *at, 4096);
          *at = std::min(body->size(), *at + 4096);
          return *at < body->size();
        },
        "text/plain; charset=utf-8", body->size());
  });
  r.get("/text-encoded/{n:int}", "test.text_encoded", [text](const edri::Request& req, edri::Context&) {
    return edri::Response::text(text(req.int_param("n"))).header("Content-Encoding", "x-test");
  });
  r.get("/png/{n:int}", "test.png", [text](const edri::Request& req, edri::Context&) {
    return edri::Response::bytes(text(req.int_param("n")), "image/png");
  });
  // Streamed answers. /stream/{n}/{piece}: n bytes (byte i is i % 251) in
  // pieces of `piece` bytes, chunked; GET /stream-pieces says how many
  // pieces all producers made so far.
  static long pieces = 0;
  auto pattern = [](std::string& out, long from, long count) {
    for (long i = from; i < from + count; ++i) out.push_back(static_cast<char>(i % 251));
  };
  auto producer = [pattern](long n, long piece, long idle_every = 0, long throw_at = -1) {
    auto made = std::make_shared<long>(0);
    auto calls = std::make_shared<long>(0);
    return [=](std::string& out) {
      if (idle_every && ++*calls % idle_every != 0) return true;  // nothing yet: asked again
      if (throw_at >= 0 && *made >= throw_at) throw std::runtime_error("the producer broke");
      const long k = std::min(piece, n - *made);
      pattern(out, *made, k);
      *made += k;
      ++pieces;
      return *made < n;
    };
  };
  r.get("/stream/{n:int}/{piece:int}", "test.stream", [producer](const edri::Request& req, edri::Context&) {
    return edri::Response::stream(producer(req.int_param("n"), req.int_param("piece"))).header("X-Streamed", "yes");
  });
  r.command("stream", "test.stream");
  r.get("/stream-pieces", "test.stream_pieces", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"pieces", pieces}});
  });
  // With Content-Length; /stream-short declares 10 bytes more than it makes.
  r.get("/stream-length/{n:int}", "test.stream_length", [producer](const edri::Request& req, edri::Context&) {
    const long n = req.int_param("n");
    return edri::Response::stream(producer(n, 65536), "application/x-test", static_cast<std::uint64_t>(n));
  });
  r.get("/stream-short/{n:int}", "test.stream_short", [producer](const edri::Request& req, edri::Context&) {
    const long n = req.int_param("n");
    return edri::Response::stream(producer(n, 65536), "application/x-test", static_cast<std::uint64_t>(n + 10));
  });
  // A producer that has something only on every 4th call.
  r.get("/stream-idle/{n:int}", "test.stream_idle", [producer](const edri::Request& req, edri::Context&) {
    return edri::Response::stream(producer(req.int_param("n"), 1000, 4));
  });
  // Throws once it made `at` bytes.
  r.get("/stream-throw/{at:int}", "test.stream_throw", [producer](const edri::Request& req, edri::Context&) {
    return edri::Response::stream(producer(1 << 30, 10000, 0, req.int_param("at")));
  });
  // Makes one piece, then waits forever.
  r.get("/stream-stall", "test.stream_stall", [](const edri::Request&, edri::Context&) {
    auto first = std::make_shared<bool>(true);
    return edri::Response::stream([first](std::string& out) {
      if (*first) out = "first piece";
      *first = false;
      return true;
    });
  });
  r.get("/stream-status", "test.stream_status", [producer](const edri::Request&, edri::Context&) {
    auto resp = edri::Response::stream(producer(10, 10));
    resp.status = 204;
    return resp;
  });
  // /file/{name}: the file of that name under $TEST_APP_FILES, sent from
  // disk by the listener; /file-status answers one with 203 of its own.
  r.get("/file/{name}", "test.file", [](const edri::Request& req, edri::Context&) {
    const char* dir = std::getenv("TEST_APP_FILES");
    return edri::Response::file(std::string(dir ? dir : "/nonexistent") + "/" + std::string(*req.path_param("name")))
        .header("X-From", "handler");
  });
  r.get("/file-typed/{name}", "test.file_typed", [](const edri::Request& req, edri::Context&) {
    const char* dir = std::getenv("TEST_APP_FILES");
    auto resp = edri::Response::file(
        std::string(dir ? dir : "/nonexistent") + "/" + std::string(*req.path_param("name")), "application/x-test");
    resp.status = 203;
    return resp;
  });
  r.get("/go", "test.redirect",
        [](const edri::Request&, edri::Context&) { return edri::Response::redirect("/hello/there", 303); });
  r.get("/nothing", "test.nothing", [](const edri::Request&, edri::Context&) { return edri::Response::empty(); });
  r.get("/login", "test.login", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"ok", true}})
        .cookie("sid", "abc123")
        .cookie("theme", "dark", {"/", 3600, false, true, "Strict"});
  });
  r.get("/evil-header", "test.evil", [](const edri::Request&, edri::Context&) {
    // Past Response::header (which refuses it), straight into the vector:
    // the listener applies the same rule and drops it.
    auto r = edri::Response::text("x");
    r.headers.emplace_back("X-Evil", "a\r\nSet-Cookie: injected=1");
    return r;
  });
  r.get("/request-id", "test.request_id", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"id", std::string(req.header("x-request-id").value_or(""))}});
  });
  r.get("/private/data", "test.private", [](const edri::Request&, edri::Context&) {
    ++created;  // counted like creations: a refused request must not get here
    return edri::Response::json({{"secret", 42}});
  });
  // Middleware, declared out of order: "first" (order 1) runs before "auth"
  // (order 10).
  r.middleware({"auth", 10,
                [](const edri::Request& req, edri::ResponseHeaders& add) -> std::optional<edri::Response> {
                  add.add("X-Order", "auth");
                  if (req.path.rfind("/private/", 0) == 0 && req.header("authorization") != "Bearer good")
                    return edri::Response::problem(401, "Unauthorized", "a bearer token is needed")
                        .header("WWW-Authenticate", "Bearer");
                  return std::nullopt;
                },
                [](int status, edri::ResponseHeaders& add) { add.add("X-Status-Seen", std::to_string(status)); }});
  r.middleware({"first", 1,
                [](const edri::Request&, edri::ResponseHeaders& add) -> std::optional<edri::Response> {
                  add.add("X-Order", "first");
                  return std::nullopt;
                },
                nullptr});
  r.assets("/app", "test_app_assets");
  r.get("/page/{name}", "test.page", [](const edri::Request& req, edri::Context& ctx) {
    return edri::Response::html(ctx.render("page.mustache", {{"title", "Greeting"},
                                                             {"name", std::string(*req.path_param("name"))},
                                                             {"items", {"one", "two", 3}},
                                                             {"admin", false}}));
  });
  r.get("/template/{file}", "test.template", [](const edri::Request& req, edri::Context& ctx) {
    return edri::Response::html(ctx.render(std::string(*req.path_param("file")), nlohmann::json::object()));
  });
  // Between managers: "test" subscribes to what "other" publishes, and asks
  // "other" for its pid, answering its own client later.
  static int notified = 0;
  static long notified_sum = 0;
  r.subscribe("test.happened", [](const edri::Request& req, edri::Context&) {
    ++notified;
    notified_sum += req.json().at("i").get<long>();
  });
  // Plugin API v9: integer accessors refuse what is not a 64-bit integer
  // (a `{v}` parameter is not checked by the listener), and a response
  // header is refused by the rule ResponseHeaders::add follows.
  r.get("/int-of/{v}", "test.int_of", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"value", req.int_param("v")}});
  });
  r.get("/typed-int/{v:int}", "test.typed_int", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"value", req.int_param("v")}}, edri::Status::Ok);
  });
  r.get("/bad-header", "test.bad_header", [](const edri::Request& req, edri::Context&) {
    return edri::Response::text("never sent")
        .header("X-Bad", std::string(req.query) == "nul" ? std::string("a\0b", 3) : "a\r\nInjected: 1");
  });
  r.get("/notified", "test.notified", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"count", notified}, {"sum", notified_sum}});
  });
  r.get("/ask", "test.ask", [](const edri::Request&, edri::Context& ctx) {
    auto responder = ctx.defer();
    ctx.request("other.pid", nlohmann::json::object(), [responder](const edri::Response& r) {
      responder.send(edri::Response::json({{"status", r.status},
                                           {"other", nlohmann::json::parse(r.body_bytes()).at("pid")},
                                           {"asked_from", ::getpid()}}));
    });
    return edri::Deferred{};
  });
  // Asks the other domain's manager to sleep `ms`, straight there
  // (docs/decisions/0028); says how it was answered.
  r.get("/ask-sleep/{ms:int}", "test.ask_sleep", [](const edri::Request& req, edri::Context& ctx) {
    auto responder = ctx.defer();
    ctx.request("other.sleep", {{"ms", req.int_param("ms")}}, [responder](const edri::Response& r) {
      responder.send(edri::Response::json({{"status", r.status}, {"body", std::string(r.body_bytes())}}));
    });
    return edri::Deferred{};
  });
  r.get("/ask-nobody", "test.ask_nobody", [](const edri::Request&, edri::Context& ctx) {
    if (!ctx.request("no.such.event", {}, [](const edri::Response&) {}))
      return edri::Response::problem(500, "Internal Server Error", "unknown event");
    return edri::Response::text("sent");
  });
  // A second domain: its own manager process.
  // Worker threads: a job that throws, and one that answers with its thread.
  r.get("/thread/throw", "test.thread_throw", [](const edri::Request&, edri::Context& ctx) {
    return ctx.in_thread([]() -> edri::Response { throw std::runtime_error("job failed"); });
  });
  r.get("/thread/tid", "test.thread_tid", [](const edri::Request&, edri::Context& ctx) {
    const long manager_tid = ::gettid();
    return ctx.in_thread([manager_tid] {
      return edri::Response::json({{"worker", static_cast<long>(::gettid())}, {"manager", manager_tid}});
    });
  });

  r.domain("other");
  r.get("/other/pid", "other.pid", [](const edri::Request&, edri::Context& ctx) {
    return edri::Response::json({{"pid", ::getpid()}, {"domain", ctx.domain()}});
  });
  // Sleeps `ms`; with $TEST_APP_FILES set, first says so in a file there
  // (sleeping-<ms>), for a test to know it is under way.
  r.event("other.sleep");
  r.handle("other.sleep", [](const edri::Request& req, edri::Context&) {
    const int ms = req.json().at("ms").get<int>();
    if (const char* dir = std::getenv("TEST_APP_FILES"))
      std::ofstream(std::string(dir) + "/sleeping-" + std::to_string(ms)) << ::getpid();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return edri::Response::json({{"slept", ms}, {"pid", ::getpid()}});
  });
  r.notification("test.happened");
  r.push("test.happened", "watch", "unwatch");
  // n notifications of about `bytes` bytes each.
  auto publish_big = [](const edri::Request& req, edri::Context& ctx) {
    const std::string pad(static_cast<std::size_t>(req.int_param("bytes")), 'p');
    const auto n = req.int_param("n");
    for (int i = 1; i <= n; ++i)
      if (!ctx.publish("test.happened", {{"i", i}, {"pad", pad}}))
        return edri::Response::problem(503, "Unavailable", "full");
    return edri::Response::json({{"published", n}});
  };
  r.get("/other/publish-big/{n:int}/{bytes:int}", "other.publish_big", publish_big);
  // The same after `ms` of sleep in the manager (a test stops a process
  // meanwhile).
  r.get("/other/publish-after/{ms:int}/{n:int}/{bytes:int}", "other.publish_after",
        [publish_big](const edri::Request& req, edri::Context& ctx) {
          std::this_thread::sleep_for(std::chrono::milliseconds(req.int_param("ms")));
          return publish_big(req, ctx);
        });
  r.get("/other/publish/{n:int}", "other.publish", [](const edri::Request& req, edri::Context& ctx) {
    const auto n = req.int_param("n");
    for (int i = 1; i <= n; ++i)
      if (!ctx.publish("test.happened", {{"i", i}})) return edri::Response::problem(503, "Unavailable", "full");
    return edri::Response::json({{"published", n}});
  });
  r.command("publish", "other.publish");
  // A client's JSON (within EDRI_MAX_JSON_DEPTH) wrapped one level deeper:
  // the subscriber must still read it.
  r.post("/other/publish-json", "other.publish_json", [](const edri::Request& req, edri::Context& ctx) {
    if (!ctx.publish("test.happened", {{"i", 1}, {"doc", req.json()}}))
      return edri::Response::problem(503, "Unavailable", "full");
    return edri::Response::json({{"published", 1}});
  });
}

}  // namespace

EDRI_PLUGIN("test", reg)
