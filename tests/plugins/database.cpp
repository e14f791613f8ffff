// The plugin the database tests run (include/edri/database.hpp): domain
// "db" declares the database "main" (its URL from EDRI_DATABASES) and
// reaches it from coroutine handlers and from a callback handler: rows,
// parameters of every kind, batches, transactions committed, rolled back
// by a throw and by a cancelled request, and statements that take long.
#include <edri/plugin.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace {

int cancelled = 0;  // handlers that saw Cancelled (GET /db/cancelled)

edri::Async<> item(const edri::Request& req, edri::Context& ctx) {
  // GCC 12 cannot keep a braced list alive across a co_await in the same
  // statement: the parameters are made first.
  edri::SqlParams id{req.int_param("id")};
  edri::Rows rows =
      co_await ctx.database("main").query("SELECT id, name, score, flag, tags FROM items WHERE id = $1", std::move(id));
  if (rows.empty()) co_return edri::Response::problem(404, "Not Found", "no such item");
  co_return edri::Response::json(rows[0].to_json());
}

// Every parameter kind, and NULL, round trip as their SQL types.
edri::Async<> types(const edri::Request&, edri::Context& ctx) {
  edri::SqlParams params{std::int64_t{9007199254740993}, 0.25, true, "text ✓", nullptr};
  edri::Rows rows = co_await ctx.database("main").query(
      "SELECT $1::int8 AS i, $2::float8 AS f, $3::bool AS b, $4::text AS t, "
      "$5::int4 AS n, '{\"a\":[1,2]}'::jsonb AS j, 1.50::numeric AS d",
      std::move(params));
  co_return edri::Response::json(rows[0].to_json());
}

// What the client sent, through a parameter, from each place a client
// value can come from: path, query, header and body.
edri::Async<> echo(const edri::Request& req, edri::Context& ctx) {
  const std::string from_path(*req.path_param("value"));
  const std::string from_query(req.query_param("q").value_or(""));
  const std::string from_header(req.header("x-value").value_or(""));
  const std::string from_body(req.body);
  std::vector<edri::Statement> all;
  for (const auto& v : {from_path, from_query, from_header, from_body})
    all.push_back(edri::Statement{"SELECT $1::text AS v, (SELECT count(*) FROM items) AS items", {v}});
  std::vector<edri::Rows> rows = co_await ctx.database("main").query_all(std::move(all));
  auto out = nlohmann::json::array();
  for (const auto& r : rows) out.push_back(r[0].to_json());
  co_return edri::Response::json(out);
}

// n independent statements in one round trip.
edri::Async<> many(const edri::Request& req, edri::Context& ctx) {
  std::vector<edri::Statement> all;
  for (std::int64_t i = 1; i <= req.int_query("n"); ++i)
    all.push_back(edri::Statement{"SELECT id, name FROM items WHERE id = $1", {(i - 1) % 3 + 1}});
  std::vector<edri::Rows> rows = co_await ctx.database("main").query_all(std::move(all));
  auto out = nlohmann::json::array();
  for (const auto& r : rows) out.push_back(r[0].to_json());
  co_return edri::Response::json(out);
}

// Inserts a log line in a transaction, then: commits, throws, or waits
// (a client that goes away, or a deadline, cancels the wait).
edri::Async<> log_line(const edri::Request& req, edri::Context& ctx) {
  const std::string how(*req.path_param("how"));
  edri::Transaction tx = co_await ctx.database("main").transaction();
  edri::SqlParams line{how};
  co_await tx.query("INSERT INTO log(line) VALUES ($1)", std::move(line));
  if (how == "throw") throw std::runtime_error("thrown inside a transaction");
  if (how == "wait") {
    try {
      co_await ctx.sleep(std::chrono::milliseconds(5000));
    } catch (const edri::Cancelled&) {
      ++cancelled;
      throw;
    }
  }
  if (how == "fail") co_await tx.query("SELECT 1/0");
  co_await tx.commit();
  co_return edri::Response::json({{"logged", how}});
}

edri::Async<> count_log(const edri::Request&, edri::Context& ctx) {
  edri::Rows rows = co_await ctx.database("main").query("SELECT count(*) AS n FROM log");
  co_return edri::Response::json({{"n", rows[0].int64("n")}, {"cancelled", cancelled}});
}

// A statement that takes `ms`.
edri::Async<> sleep(const edri::Request& req, edri::Context& ctx) {
  const double seconds = static_cast<double>(req.int_param("ms")) / 1000.0;
  try {
    edri::SqlParams duration{seconds};
    co_await ctx.database("main").query("SELECT pg_sleep($1)", std::move(duration));
  } catch (const edri::Cancelled&) {
    ++cancelled;
    throw;
  }
  co_return edri::Response::json({{"slept", req.int_param("ms")}});
}

// The callback interface: a handler that defers and answers from run().
edri::Reply item_by_callback(const edri::Request& req, edri::Context& ctx) {
  edri::Responder responder = ctx.defer();
  std::vector<edri::Statement> one;
  one.push_back(edri::Statement{"SELECT name FROM items WHERE id = $1", {req.int_param("id")}});
  ctx.database("main").run(std::move(one), req.deadline, [responder](std::vector<edri::Rows> rows) {
    if (!rows[0].ok()) return responder.send(rows[0].problem());
    responder.send(edri::Response::json({{"name", std::string(rows[0][0].text("name"))}}));
  });
  return edri::Deferred{};
}

// A statement the database refuses: its SQLSTATE, not its message.
edri::Async<> broken(const edri::Request&, edri::Context& ctx) {
  co_await ctx.database("main").query("SELECT no_such_column FROM items");
  co_return edri::Response::text("unreachable");
}

void reg(edri::Registry& r) {
  r.domain("db");
  r.database("main");
  r.get("/db/items/{id:int}", "db.item", item);
  r.get("/db/types", "db.types", types);
  r.post("/db/echo/{value}", "db.echo", echo, {edri::Field("q").in_query().string().optional()});
  r.get("/db/many", "db.many", many, {edri::Field("n").in_query().integer().range(1, 500).default_to(1)});
  r.post("/db/log/{how}", "db.log", log_line);
  r.get("/db/log", "db.count_log", count_log);
  r.get("/db/sleep/{ms:int}", "db.sleep", sleep);
  r.get("/db/callback/{id:int}", "db.callback", item_by_callback);
  r.get("/db/broken", "db.broken", broken);
  r.all_headers("db.echo");
}

}  // namespace

EDRI_PLUGIN("database", reg)
