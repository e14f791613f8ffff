// hello.so's route, tested in this process by edri's test client: the
// route table, the edge validation and the handler, no server.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <edri/testing.hpp>

TEST_CASE("GET /hello/{name} greets by name") {
  edri::testing::TestClient client({HELLO_PLUGIN});
  const edri::Response r = client.get("/hello/ann");
  CHECK(r.status.code == 200);
  CHECK(edri::testing::body_json(r) == nlohmann::json{{"hello", "ann"}});
  CHECK(edri::testing::header_of(r, "cache-control") == "no-store");
  CHECK(client.get("/hello").status.code == 404);
}
