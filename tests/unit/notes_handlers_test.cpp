// The notes app's handlers (examples/notes), tested as a plugin's author
// tests them: edri::testing::TestClient loads notes.so and audit.so into
// this process and runs each request through the route table, the edge
// validation and the handler, against a SQLite file of the test's own. No
// server, no socket.
#include <edri/testing.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "support/test_helpers.hpp"

namespace {

using edri::test::TempDir;
using edri::testing::body_json;
using edri::testing::header_of;
using edri::testing::TestClient;
using edri::testing::TestOptions;
using nlohmann::json;

const std::string kNotes = std::string(EDRI_PLUGIN_DIR) + "/notes.so";
const std::string kAudit = std::string(EDRI_PLUGIN_DIR) + "/audit.so";

TestOptions with_database(const TempDir& dir) {
  TestOptions o;
  o.databases = {{"notes", "sqlite:" + (dir.path / "notes.db").string()}};
  return o;
}

// The names the 422 problem's errors give.
std::vector<std::string> bad_fields(const edri::Response& r) {
  std::vector<std::string> names;
  const json problem = body_json(r);
  for (const auto& e : problem.at("errors")) names.push_back(e.at("field").get<std::string>());
  return names;
}

}  // namespace

TEST_CASE("an empty title is refused at the edge and no handler runs", "[testing][notes]") {
  TempDir dir;
  TestClient client({kNotes}, with_database(dir));
  const auto r = client.post("/notes", {{"title", ""}, {"body", "x"}});
  CHECK(r.status.code == 422);
  CHECK(r.content_type == "application/problem+json");
  CHECK(bad_fields(r) == std::vector<std::string>{"title"});
  CHECK(client.published().empty());
  CHECK(body_json(client.get("/notes")).at("total") == 0);
}

TEST_CASE("a misspelt field and a missing one are both named", "[testing][notes]") {
  TempDir dir;
  TestClient client({kNotes}, with_database(dir));
  const auto r = client.post("/notes", {{"titel", "a"}, {"body", "b"}});
  CHECK(r.status.code == 422);
  auto fields = bad_fields(r);
  std::sort(fields.begin(), fields.end());
  CHECK(fields == std::vector<std::string>{"titel", "title"});
  // A query field's rule too: limit is 1 to 100.
  CHECK(client.get("/notes?limit=0").status.code == 422);
  CHECK(client.get("/notes?limit=abc").status.code == 422);
}

TEST_CASE("a note is created, read, listed, updated and deleted", "[testing][notes]") {
  TempDir dir;
  TestClient client({kNotes}, with_database(dir));
  const auto created = client.post("/notes", {{"title", "first"}, {"body", "hello"}});
  REQUIRE(created.status.code == 201);
  const json note = body_json(created);
  const auto id = note.at("id").get<long long>();
  CHECK(header_of(created, "location") == "/notes/" + std::to_string(id));
  REQUIRE(client.published().size() == 1);
  CHECK(client.published()[0].domain == "notes");
  CHECK(client.published()[0].event == "notes.changed");
  CHECK(client.published()[0].payload == json{{"op", "created"}, {"note", note}});

  CHECK(body_json(client.get("/notes/" + std::to_string(id))) == note);
  const json page = body_json(client.get("/notes"));  // limit's default applied
  CHECK(page.at("total") == 1);
  CHECK(page.at("items") == json::array({note}));

  const auto updated = client.put("/notes/" + std::to_string(id), {{"title", "second"}, {"body", "again"}});
  CHECK(updated.status.code == 200);
  CHECK(body_json(updated).at("title") == "second");
  CHECK(client.del("/notes/" + std::to_string(id)).status.code == 204);
  const auto gone = client.get("/notes/" + std::to_string(id));
  CHECK(gone.status.code == 404);
  CHECK(body_json(gone).at("detail") == "note " + std::to_string(id) + " does not exist");
  REQUIRE(client.published().size() == 3);
  CHECK(client.published()[2].payload.at("op") == "deleted");
}

TEST_CASE("the route table answers what no handler does", "[testing][notes]") {
  TempDir dir;
  TestClient client({kNotes}, with_database(dir));
  CHECK(client.get("/nowhere").status.code == 404);
  const auto wrong = client.send(edri::Method::Patch, "/notes/1");
  CHECK(wrong.status.code == 405);
  CHECK(header_of(wrong, "allow").value_or("").find("PUT") != std::string::npos);
  CHECK(client.get("/notes/abc").status.code == 404);  // {id:int} matches integers alone
  // Not JSON: what the edge says, not the handler.
  const auto text = client.send(edri::Method::Post, "/notes", "title=a", {{"Content-Type", "text/plain"}});
  CHECK(text.status.code == 415);
}

TEST_CASE("audit counts what the notes domain publishes", "[testing][notes]") {
  TempDir dir;
  TestClient client({kNotes, kAudit}, with_database(dir));
  const auto id = body_json(client.post("/notes", {{"title", "a"}, {"body", "b"}})).at("id").get<long long>();
  client.post("/notes", {{"title", "c"}, {"body", "d"}});
  client.del("/notes/" + std::to_string(id));
  client.settle();
  CHECK(body_json(client.get("/audit")) == json{{"created", 2}, {"updated", 0}, {"deleted", 1}});
  // Each notification patched the stream the page follows.
  REQUIRE(client.patches().size() == 3);
  CHECK(client.patches()[2].stream == "audit");
  CHECK(client.patches()[2].revision == 3);
  CHECK(client.stream("audit") == json{{"created", 2}, {"updated", 0}, {"deleted", 1}});
}
