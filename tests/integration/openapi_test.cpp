// /openapi.json: the OpenAPI 3.1 document the listener makes from the
// plugins' declarations (EDRI_API_DOCS), checked against the OpenAPI 3.1
// schema by a validator (npm's @seriousme/openapi-schema-validator,
// installed into tests/openapi_check by scripts/setup.sh), and read for
// what the notes, bench and test apps declare.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/http_client.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

struct Validation {
  int status = -1;
  std::string output;
};

// The validator's verdict on `document`, written to a file of `dir`.
Validation validate(const std::string& document, const TempDir& dir) {
  Validation v;
  if (!std::filesystem::exists(EDRI_OPENAPI_CHECK)) {
    v.output = std::string(EDRI_OPENAPI_CHECK) + " not found: run scripts/setup.sh";
    return v;
  }
  const auto file = dir.path / "openapi.json";
  std::ofstream(file) << document;
  FILE* p = ::popen((std::string(EDRI_OPENAPI_CHECK) + " " + file.string() + " 2>&1").c_str(), "r");
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p)) v.output += buf;
  const int rc = p ? ::pclose(p) : -1;
  v.status = rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return v;
}

}  // namespace

TEST_CASE("/openapi.json describes the notes and bench apps and is valid OpenAPI 3.1", "[openapi]") {
  TempDir dir;
  ServerProcess server({plugin_path("notes"), plugin_path("audit"), plugin_path("bench_app")},
                       {{"EDRI_NOTES_DB", (dir.path / "notes.db").string()}});
  HttpClient c(server.port());
  const auto r = c.get("/openapi.json");
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type") == "application/json");
  const auto verdict = validate(r.body, dir);
  INFO(verdict.output);
  CHECK(verdict.status == 0);
  const json doc = json::parse(r.body);
  CHECK(doc["openapi"] == "3.1.0");
  // A typed path parameter, a JSON body of its declared fields, the 422.
  const json& create = doc["paths"]["/notes"]["post"];
  CHECK(create["operationId"] == "notes.create");
  CHECK(create["tags"] == json::array({"notes"}));
  const json& body = create["requestBody"]["content"]["application/json"]["schema"];
  CHECK(body["properties"]["title"] == json{{"type", "string"}, {"minLength", 1}, {"maxLength", 200}});
  CHECK(body["required"] == json::array({"title", "body"}));
  CHECK(create["responses"]["422"]["content"]["application/problem+json"]["schema"]["$ref"] ==
        "#/components/schemas/ValidationProblem");
  const json& get = doc["paths"]["/notes/{id}"]["get"];
  CHECK(get["parameters"][0] ==
        json{{"name", "id"}, {"in", "path"}, {"required", true}, {"schema", {{"type", "integer"}}}});
  const json& list = doc["paths"]["/notes"]["get"];
  CHECK(list["parameters"][0] ==
        json{{"name", "limit"},
             {"in", "query"},
             {"required", false},
             {"schema", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}, {"default", 20}}}});
  // The answers the notes app declares, their bodies from its models.
  const json& made = create["responses"]["201"]["content"]["application/json"]["schema"];
  CHECK(made["required"] == json::array({"id", "title", "body", "created_at", "updated_at"}));
  CHECK(made["properties"]["id"] == json{{"type", "integer"}});
  CHECK_FALSE(create["responses"].contains("default"));
  CHECK(get["responses"]["404"]["content"]["application/problem+json"]["schema"]["$ref"] ==
        "#/components/schemas/Problem");
  const json& page = list["responses"]["200"]["content"]["application/json"]["schema"];
  CHECK(page["properties"]["items"]["items"]["properties"]["title"] == json{{"type", "string"}});
  CHECK(page["properties"]["total"] == json{{"type", "integer"}});
  CHECK(doc["paths"]["/notes/{id}"]["delete"]["responses"]["204"] == json{{"description", "the note is deleted"}});
  // An event that declares no answers may answer anything.
  CHECK(doc["paths"]["/noop"]["get"]["responses"].contains("default"));
  // The listener's own answers are not the plugins' routes.
  CHECK_FALSE(doc["paths"].contains("/health"));
}

TEST_CASE("/openapi.json carries nested rules, and is off in production unless asked for", "[openapi]") {
  TempDir dir;
  {
    ServerProcess server({test_plugin_path("test_app")});
    HttpClient c(server.port());
    const auto r = c.get("/openapi.json");
    REQUIRE(r.status == 200);
    const auto verdict = validate(r.body, dir);
    INFO(verdict.output);
    CHECK(verdict.status == 0);
    const json order = json::parse(r.body)["paths"]["/orders"]["post"];
    const json& s = order["requestBody"]["content"]["application/json"]["schema"];
    CHECK(s["properties"]["state"]["enum"] == json::array({"open", "paid"}));
    CHECK(s["properties"]["sku"]["pattern"] == "^[A-Z]{3}-[0-9]{4}$");
    CHECK(s["properties"]["note"]["type"] == json::array({"string", "null"}));
    CHECK(s["properties"]["buyer"]["properties"]["name"]["maxLength"] == 40);
    CHECK(s["properties"]["lines"]["items"]["properties"]["qty"] ==
          json{{"type", "integer"}, {"minimum", 1}, {"maximum", 99}});
    CHECK(s["properties"]["lines"]["minItems"] == 1);
    CHECK(order["parameters"][0]["schema"]["enum"] == json::array({1, 2, 3}));
  }
  {
    ServerProcess production({test_plugin_path("test_app")}, {{"ENVIRONMENT", "production"}});
    CHECK(HttpClient(production.port()).get("/openapi.json").status == 404);
  }
  {
    ServerProcess asked({test_plugin_path("test_app")}, {{"ENVIRONMENT", "production"}, {"EDRI_API_DOCS", "on"}});
    CHECK(HttpClient(asked.port()).get("/openapi.json").status == 200);
  }
}
