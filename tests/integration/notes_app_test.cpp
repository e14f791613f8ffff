// The example app of ../shared/specs/notes-app.md, checked from outside:
// REST, errors, WebSocket commands, pushes with filters, the audit domain,
// durability across crashes and restarts, the page, and the same app on
// Postgres.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/postgres_server.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

struct NotesServer {
  TempDir dir;
  std::string db = (dir.path / "notes.db").string();
  ServerProcess server{{plugin_path("notes"), plugin_path("audit")}, {{"EDRI_NOTES_DB", db}}};
  std::uint16_t port() const { return server.port(); }
};

HttpResponse call(std::uint16_t port, const std::string& method, const std::string& path, const json& body = nullptr) {
  HttpClient c(port);
  return c.request(method, path, body.is_null() ? std::string() : body.dump());
}

json create(std::uint16_t port, const std::string& title, const std::string& body = "") {
  const auto r = call(port, "POST", "/notes", {{"title", title}, {"body", body}});
  REQUIRE(r.status == 201);
  return json::parse(r.body);
}

// 2026-11-30T12:34:56.789Z (seconds, a fraction, UTC).
bool rfc3339_utc(const json& v) { return v.is_string() && has_shape(v.get<std::string>(), "dddd-dd-ddTdd:dd:dd.dddZ"); }

// Every error is problem+json with status, title and detail.
json problem(const HttpResponse& r, int status) {
  CHECK(r.status == status);
  CHECK(r.header("content-type") == "application/problem+json");
  const auto p = json::parse(r.body);
  CHECK(p["status"] == status);
  CHECK(p["title"].is_string());
  CHECK(p["detail"].is_string());
  return p;
}

}  // namespace

TEST_CASE("notes over REST", "[notes]") {
  NotesServer s;
  const auto port = s.port();
  auto r = call(port, "POST", "/notes", {{"title", "first"}, {"body", "hello"}});
  REQUIRE(r.status == 201);
  const auto first = json::parse(r.body);
  CHECK(first["id"].is_number_integer());
  CHECK(first["title"] == "first");
  CHECK(first["body"] == "hello");
  CHECK(rfc3339_utc(first["created_at"]));
  CHECK(rfc3339_utc(first["updated_at"]));
  CHECK(r.header("location") == "/notes/" + std::to_string(first["id"].get<long>()));
  const auto id = std::to_string(first["id"].get<long>());

  r = call(port, "GET", "/notes/" + id);
  CHECK(r.status == 200);
  CHECK(json::parse(r.body) == first);

  for (int i = 0; i < 24; ++i) {
    std::string title = "n";  // (operator+ here trips a GCC 12 -Wrestrict false positive)
    title += std::to_string(i);
    create(port, title);
  }
  r = call(port, "GET", "/notes");
  auto page = json::parse(r.body);
  CHECK(page["total"] == 25);
  CHECK(page["items"].size() == 20);          // the default limit
  CHECK(page["items"][0]["title"] == "n23");  // newest first
  page = json::parse(call(port, "GET", "/notes?limit=3&offset=22").body);
  REQUIRE(page["items"].size() == 3);
  CHECK(page["items"][0]["title"] == "n1");
  CHECK(page["items"][2]["title"] == "first");
  CHECK(json::parse(call(port, "GET", "/notes?limit=100&offset=25").body)["items"].empty());

  r = call(port, "PUT", "/notes/" + id, {{"title", "changed"}, {"body", "new body"}});
  CHECK(r.status == 200);
  const auto changed = json::parse(r.body);
  CHECK(changed["title"] == "changed");
  CHECK(changed["created_at"] == first["created_at"]);
  CHECK(changed["updated_at"] >= first["updated_at"]);
  CHECK(json::parse(call(port, "GET", "/notes/" + id).body) == changed);

  CHECK(call(port, "DELETE", "/notes/" + id).status == 204);
  problem(call(port, "GET", "/notes/" + id), 404);
  problem(call(port, "DELETE", "/notes/" + id), 404);
  problem(call(port, "PUT", "/notes/" + id, {{"title", "x"}, {"body", ""}}), 404);

  // The audit manager counted the notifications.
  CHECK(json::parse(call(port, "GET", "/audit").body) == json{{"created", 25}, {"updated", 1}, {"deleted", 1}});
}

TEST_CASE("notes errors are problem details", "[notes]") {
  NotesServer s;
  const auto port = s.port();
  auto p = problem(call(port, "POST", "/notes", {{"title", ""}, {"body", 7}}), 422);
  REQUIRE(p["errors"].size() == 2);
  CHECK(p["errors"][0] == json{{"field", "title"}, {"message", "must be between 1 and 200 characters long"}});
  CHECK(p["errors"][1]["field"] == "body");
  p = problem(call(port, "POST", "/notes", {{"title", std::string(201, 't')}, {"body", std::string(65537, 'b')}}), 422);
  CHECK(p["errors"].size() == 2);
  CHECK(call(port, "POST", "/notes", {{"title", std::string(200, 't')}, {"body", std::string(65536, 'b')}}).status ==
        201);
  p = problem(call(port, "POST", "/notes", json::object()), 422);
  CHECK(p["errors"].size() == 2);
  // A misspelt field is named, on create and update alike.
  p = problem(call(port, "POST", "/notes", {{"titel", "x"}, {"title", "x"}, {"body", ""}}), 422);
  CHECK(p["errors"] == json::array({{{"field", "titel"}, {"message", "is not a declared field"}}}));
  p = problem(call(port, "PUT", "/notes/1", {{"title", "x"}, {"body", ""}, {"id", 2}}), 422);
  CHECK(p["errors"] == json::array({{{"field", "id"}, {"message", "is not a declared field"}}}));
  {
    HttpClient c(port);
    problem(c.request("POST", "/notes", "{not json"), 400);
  }
  p = problem(call(port, "GET", "/notes?limit=0&offset=-1"), 422);
  CHECK(p["errors"].size() == 2);
  problem(call(port, "GET", "/notes?limit=101"), 422);
  problem(call(port, "GET", "/notes/abc"), 404);
  const auto r = call(port, "PATCH", "/notes/1");
  problem(r, 405);
  CHECK(r.header("allow").find("PUT") != std::string::npos);
  CHECK(r.header("allow").find("DELETE") != std::string::npos);
  problem(call(port, "POST", "/notes/1"), 405);
  // Nothing bad was stored.
  CHECK(json::parse(call(port, "GET", "/notes").body)["total"] == 1);
}

TEST_CASE("notes over WebSocket mirror REST", "[notes][websocket]") {
  NotesServer s;
  WsClient ws(s.port());
  auto m = ws.command({{"command", "notes.create"}, {"title", "over ws"}, {"body", "b"}});
  REQUIRE(m["command"] == "notes.create");
  const auto note = m["response"];
  CHECK(note["title"] == "over ws");
  const auto id = note["id"];
  CHECK(ws.command({{"command", "notes.get"}, {"id", id}}) == json{{"command", "notes.get"}, {"response", note}});
  m = ws.command({{"command", "notes.list"}, {"limit", 1}});
  CHECK(m["response"]["total"] == 1);
  CHECK(m["response"]["items"][0] == note);
  m = ws.command({{"command", "notes.update"}, {"id", id}, {"title", "renamed"}, {"body", ""}});
  CHECK(m["response"]["title"] == "renamed");
  CHECK(ws.command({{"command", "notes.delete"}, {"id", id}}) ==
        json{{"command", "notes.delete"}, {"response", json::object()}});
  m = ws.command({{"command", "notes.get"}, {"id", id}});
  CHECK(m["error"]["status"] == 404);
  CHECK(m["error"]["title"] == "Not Found");
  m = ws.command({{"command", "notes.get"}, {"id", "seven"}});
  CHECK(m["error"]["status"] == 422);
  CHECK(m["error"]["errors"][0]["field"] == "id");
  m = ws.command({{"command", "notes.create"}, {"title", ""}});
  CHECK(m["error"]["status"] == 422);
  CHECK(m["error"]["errors"].size() == 2);
  m = ws.command({{"command", "notes.list"}, {"limit", 500}});
  CHECK(m["error"]["errors"][0]["field"] == "limit");
  // Still open after every error.
  CHECK(ws.command({{"command", "notes.list"}})["response"]["total"] == 0);
}

TEST_CASE("notes.subscribe pushes every change, whoever made it: filters narrow it", "[notes][websocket]") {
  NotesServer s;
  const auto port = s.port();
  WsClient all(port), deletes(port), none(port);
  CHECK(all.command({{"command", "notes.subscribe"}}) ==
        json{{"command", "notes.subscribe"}, {"response", json::object()}});
  CHECK(deletes.command({{"command", "notes.subscribe"}, {"filter", {{"op", "deleted"}}}}).contains("response"));
  auto bad = none.command({{"command", "notes.subscribe"}, {"filter", "deleted"}});
  CHECK(bad["error"]["status"] == 422);

  const auto note = create(port, "pushed", "by REST");
  auto m = all.read_json();
  CHECK(m == json{{"command", "notes.changed"}, {"event", {{"op", "created"}, {"note", note}}}});
  // A change made over WebSocket reaches the others too.
  const auto id = note["id"];
  auto mine = none.command({{"command", "notes.update"}, {"id", id}, {"title", "edited"}, {"body", ""}});
  m = all.read_json();
  CHECK(m["event"]["op"] == "updated");
  CHECK(m["event"]["note"] == mine["response"]);
  CHECK(call(port, "DELETE", "/notes/" + std::to_string(id.get<long>())).status == 204);
  m = all.read_json();
  CHECK(m["event"]["op"] == "deleted");
  // The filtered subscriber saw only the delete; the unsubscribed one nothing.
  m = deletes.read_json();
  CHECK(m["event"]["op"] == "deleted");
  CHECK(m["event"]["note"]["id"] == id);
  CHECK(deletes.quiet_for(200));
  CHECK(none.quiet_for(200));

  CHECK(all.command({{"command", "notes.unsubscribe"}}).contains("response"));
  WsClient later(port);
  CHECK(later.command({{"command", "notes.subscribe"}}).contains("response"));
  // A subscriber that goes away is forgotten; the others go on receiving.
  {
    WsClient gone(port);
    CHECK(gone.command({{"command", "notes.subscribe"}}).contains("response"));
  }
  create(port, "after unsubscribe");
  CHECK(later.read_json()["event"]["note"]["title"] == "after unsubscribe");
  CHECK(all.quiet_for(300));
  CHECK(json::parse(call(port, "GET", "/audit").body)["created"] == 2);
}

TEST_CASE("a committed note survives a crash of any edri process and a restart", "[notes]") {
  TempDir dir;
  const std::string db = (dir.path / "notes.db").string();
  json note;
  {
    ServerProcess server({plugin_path("notes"), plugin_path("audit")}, {{"EDRI_NOTES_DB", db}});
    note = create(server.port(), "durable", "kept");
    // The manager that wrote it dies at once, without a clean shutdown.
    const pid_t manager = server.child("manager notes");
    REQUIRE(::kill(manager, SIGKILL) == 0);
    CHECK(eventually(
        [&] { return call(server.port(), "GET", "/notes/" + std::to_string(note["id"].get<long>())).status == 200; }));
    CHECK(json::parse(call(server.port(), "GET", "/notes/" + std::to_string(note["id"].get<long>())).body) == note);
    ::kill(server.pid(), SIGKILL);  // the whole server, uncleanly
    server.stop();
  }
  ServerProcess again({plugin_path("notes"), plugin_path("audit")}, {{"EDRI_NOTES_DB", db}});
  const auto r = call(again.port(), "GET", "/notes/" + std::to_string(note["id"].get<long>()));
  CHECK(r.status == 200);
  CHECK(json::parse(r.body) == note);
}

TEST_CASE("the notes page is served at /", "[notes]") {
  NotesServer s;
  auto r = call(s.port(), "GET", "/");
  CHECK(r.status == 200);
  CHECK(r.header("content-type").rfind("text/html", 0) == 0);
  CHECK(r.body.find("<form id=\"new-note\"") != std::string::npos);
  r = call(s.port(), "GET", "/app.js");
  CHECK(r.status == 200);
  CHECK(r.body.find("notes.subscribe") != std::string::npos);
}

TEST_CASE("nothing acknowledged is lost, nothing refused is kept, while each process kind is killed under writes",
          "[notes][crash]") {
  NotesServer s;
  const auto port = s.port();
  struct Outcome {
    std::string title;
    int status = 0;  // 0: no answer (the connection died with a listener)
    long id = 0;
    std::string body;
  };
  std::atomic<bool> stop{false};
  std::vector<std::vector<Outcome>> outcomes(4);
  std::vector<std::thread> writers;
  for (std::size_t w = 0; w < outcomes.size(); ++w)
    writers.emplace_back([&, w] {
      std::unique_ptr<HttpClient> c;
      for (int n = 0; !stop; ++n) {
        Outcome o;
        o.title.append("w").append(std::to_string(w)).append("-").append(std::to_string(n));
        try {
          if (!c) c = std::make_unique<HttpClient>(port, 3000);
          const auto r = c->request("POST", "/notes", json{{"title", o.title}, {"body", "x"}}.dump());
          o.status = r.status;
          o.body = r.body;
          if (r.status == 201) o.id = json::parse(r.body)["id"].get<long>();
        } catch (const std::exception&) {
          c.reset();  // its listener died: a new connection
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        outcomes[w].push_back(o);
      }
    });
  for (const std::string role : {"manager notes", "router", "broker", "manager audit", "listener"}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const pid_t victim = s.server.child(role);
    INFO(role);
    REQUIRE(victim > 0);
    REQUIRE(::kill(victim, SIGKILL) == 0);
    CHECK(eventually([&] { return s.server.child(role) > 0 && s.server.child(role) != victim; }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  stop = true;
  for (auto& t : writers) t.join();

  // Every note in the database, by title.
  std::map<std::string, long> stored;
  const auto total = json::parse(call(port, "GET", "/notes?limit=1").body)["total"].get<long>();
  for (long offset = 0; offset < total; offset += 100) {
    const auto page = json::parse(call(port, "GET", "/notes?limit=100&offset=" + std::to_string(offset)).body);
    for (const auto& n : page["items"]) stored[n["title"].get<std::string>()] = n["id"].get<long>();
  }
  std::size_t acknowledged = 0, refused = 0, unanswered = 0;
  for (const auto& list : outcomes)
    for (const auto& o : list) {
      INFO(o.title << " answered " << o.status << " " << o.body);
      if (o.status == 201) {
        ++acknowledged;
        CHECK(stored.count(o.title) == 1);
        CHECK(stored[o.title] == o.id);
      } else if (o.status != 0) {
        ++refused;
        CHECK(stored.count(o.title) == 0);
      } else {
        ++unanswered;
      }
    }
  INFO(acknowledged << " acknowledged, " << refused << " refused, " << unanswered << " unanswered");
  CHECK(acknowledged > 100);
  WARN(acknowledged << " acknowledged, " << refused << " refused, " << unanswered << " unanswered");
}

TEST_CASE("notes on Postgres: EDRI_NOTES_DB may hold a postgresql:// URL", "[notes][postgres]") {
  PostgresServer pg;
  ServerProcess server({plugin_path("notes"), plugin_path("audit")}, {{"EDRI_NOTES_DB", pg.url()}});
  const auto port = server.port();
  const json first = create(port, "on postgres", "kept there");
  CHECK(rfc3339_utc(first["created_at"]));
  const auto id = std::to_string(first["id"].get<long>());
  CHECK(json::parse(call(port, "GET", "/notes/" + id).body) == first);
  create(port, "second");
  const auto page = json::parse(call(port, "GET", "/notes?limit=1").body);
  CHECK(page["total"] == 2);
  REQUIRE(page["items"].size() == 1);
  CHECK(page["items"][0]["title"] == "second");
  const auto r = call(port, "PUT", "/notes/" + id, {{"title", "changed"}, {"body", ""}});
  CHECK(r.status == 200);
  CHECK(json::parse(r.body)["created_at"] == first["created_at"]);
  CHECK(call(port, "DELETE", "/notes/" + id).status == 204);
  problem(call(port, "GET", "/notes/" + id), 404);
  // The notes are Postgres's rows.
  const auto rows = pg.rows("SELECT title FROM notes");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0][0] == "second");
  CHECK(json::parse(call(port, "GET", "/audit").body) == json{{"created", 2}, {"updated", 1}, {"deleted", 1}});
}
