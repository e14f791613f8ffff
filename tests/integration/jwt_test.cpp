// Bearer tokens (edri/jwt.hpp, docs/security.md): tests/plugins/jwt_gate.cpp
// guards the notes app with a JwtVerifier, its key named by the
// environment. The tokens are signed here, with keys made here (OpenSSL and
// libjwt), and sent as a client would.
#include <jwt.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "support/grpc_scenario.hpp"
#include "support/http_client.hpp"
#include "support/jwt_tokens.hpp"
#include "support/server_process.hpp"
#include "support/test_helpers.hpp"
#include "support/ws_client.hpp"

using namespace edri::test;
using nlohmann::json;

namespace {

// A JWK of an EC key's public half, marked for signatures.
json ec_jwk(EVP_PKEY* k, const std::string& kid) {
  json j = jwk(k, kid);
  j["use"] = "sig";
  return j;
}

json claims(const std::string& sub, long exp_in = 300) {
  return {{"sub", sub}, {"exp", now_s() + exp_in}, {"aud", "api"}, {"iss", "https://issuer.test"}, {"role", "reader"}};
}

struct JwtNotes {
  explicit JwtNotes(std::map<std::string, std::string> env)
      : server({plugin_path("notes"), test_plugin_path("jwt_gate")}, with(std::move(env), db)) {}
  static std::map<std::string, std::string> with(std::map<std::string, std::string> env, const std::string& db) {
    env.emplace("EDRI_NOTES_DB", db);
    return env;
  }
  TempDir dir;
  std::string db = (dir.path / "notes.db").string();
  ServerProcess server;
};

std::string bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }

}  // namespace

TEST_CASE("jwt: an RS256 token gets the notes over HTTP and WebSocket, a bad, expired or missing one 401", "[jwt]") {
  TempDir keys;
  const Key rsa(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{2048}));
  REQUIRE(rsa);
  keys.write("issuer.pem", pem(rsa.get(), false));
  JwtNotes app({{"EDRI_TEST_JWT_ALG", "RS256"}, {"EDRI_TEST_JWT_KEY_FILE", (keys.path / "issuer.pem").string()}});
  const auto port = app.server.port();
  const std::string good = sign(JWT_ALG_RS256, pem(rsa.get(), true), claims("alice"));

  // HTTP/1.1: the token opens the route, and the handler learns who asks.
  HttpClient c(port);
  auto r = c.request("GET", "/notes", {}, bearer(good));
  CHECK(r.status == 200);
  CHECK(json::parse(r.body)["items"].is_array());
  const json me = json::parse(c.request("GET", "/jwt/whoami", {}, bearer(good)).body);
  CHECK(me["principal"] == "alice");
  CHECK(me["claims"]["role"] == "reader");
  CHECK(me["claims"]["aud"] == "api");

  // Without a token: the challenge alone (RFC 6750 3.1).
  r = c.get("/notes");
  CHECK(r.status == 401);
  CHECK(r.header("www-authenticate") == "Bearer");
  // A token signed with another key, an expired one, the HS256 confusion
  // (signed with the public key the server holds), an unsigned one, junk.
  const Key other(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{2048}));
  json unsigned_claims = claims("alice");
  const std::string none = b64url(R"({"alg":"none"})") + "." + b64url(unsigned_claims.dump()) + ".";
  for (const auto& [token, why] : std::vector<std::pair<std::string, std::string>>{
           {sign(JWT_ALG_RS256, pem(other.get(), true), claims("alice")), "invalid signature"},
           {sign(JWT_ALG_RS256, pem(rsa.get(), true), claims("alice", -3600)), "the token expired"},
           {sign(JWT_ALG_HS256, pem(rsa.get(), false), claims("alice")),
            "algorithm HS256 refused: only RS256 is accepted"},
           {none, "unsigned tokens (alg none) are refused"},
           {"junk", "malformed token: not three parts"}}) {
    INFO(why);
    r = c.request("GET", "/notes", {}, bearer(token));
    CHECK(r.status == 401);
    CHECK(r.header("www-authenticate") == R"(Bearer error="invalid_token", error_description=")" + why + "\"");
    CHECK(json::parse(r.body)["detail"] == why);
  }
  // Wrong audience, wrong issuer.
  json wrong = claims("alice");
  wrong["aud"] = "other";
  CHECK(c.request("GET", "/notes", {}, bearer(sign(JWT_ALG_RS256, pem(rsa.get(), true), wrong))).status == 401);
  wrong = claims("alice");
  wrong["iss"] = "https://evil.test";
  CHECK(c.request("GET", "/notes", {}, bearer(sign(JWT_ALG_RS256, pem(rsa.get(), true), wrong))).status == 401);

  // HTTP/2: the same middleware, the same answers.
  const std::string h2 =
      "curl -s -o /dev/null --max-time 10 --http2-prior-knowledge -w '%{http_version} %{http_code}' "
      "http://127.0.0.1:" +
      std::to_string(port) + "/notes";
  CHECK(output_of(h2 + " -H 'Authorization: Bearer " + good + "'") == "2 200");
  CHECK(output_of(h2 + " -H 'Authorization: Bearer junk'") == "2 401");
  CHECK(output_of(h2) == "2 401");

  // WebSocket: the handshake's token goes with every command.
  WsClient ws(port, "/ws", {{"Authorization", "Bearer " + good}});
  json m = ws.command({{"command", "notes.list"}});
  INFO(m.dump());
  CHECK(m["response"]["items"].is_array());
  CHECK(ws.command({{"command", "jwt.whoami"}})["response"]["principal"] == "alice");
  WsClient bad(port, "/ws",
               {{"Authorization", "Bearer " + sign(JWT_ALG_RS256, pem(other.get(), true), claims("alice"))}});
  m = bad.command({{"command", "notes.list"}});
  CHECK(m["command"] == "notes.list");
  CHECK(m["error"]["status"] == 401);
  CHECK(m["error"]["detail"] == "invalid signature");
  WsClient anonymous(port);
  CHECK(anonymous.command({{"command", "notes.list"}})["error"]["status"] == 401);
}

TEST_CASE("jwt: ES256 keys from a JWKS file, chosen by the token's kid", "[jwt]") {
  TempDir keys;
  const Key first(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  const Key second(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  REQUIRE(first);
  REQUIRE(second);
  keys.write("jwks.json", json{{"keys", {ec_jwk(first.get(), "2026-01"), ec_jwk(second.get(), "2026-02")}}}.dump());
  JwtNotes app({{"EDRI_TEST_JWT_ALG", "ES256"}, {"EDRI_TEST_JWT_JWKS_FILE", (keys.path / "jwks.json").string()}});
  const auto port = app.server.port();
  HttpClient c(port);
  for (const auto& [key, kid] : {std::pair{first.get(), "2026-01"}, std::pair{second.get(), "2026-02"}}) {
    INFO(kid);
    const std::string token = sign(JWT_ALG_ES256, pem(key, true), claims(kid), {{"kid", kid}});
    const auto r = c.request("GET", "/jwt/whoami", {}, bearer(token));
    CHECK(r.status == 200);
    CHECK(json::parse(r.body)["principal"] == kid);
    WsClient ws(port, "/ws", {{"Authorization", "Bearer " + token}});
    CHECK(ws.command({{"command", "notes.list"}})["response"]["items"].is_array());
  }
  // The first key's signature under the second's kid, an unknown kid.
  auto r = c.request("GET", "/notes", {},
                     bearer(sign(JWT_ALG_ES256, pem(first.get(), true), claims("a"), {{"kid", "2026-02"}})));
  CHECK(r.status == 401);
  CHECK(json::parse(r.body)["detail"] == "invalid signature");
  r = c.request("GET", "/notes", {},
                bearer(sign(JWT_ALG_ES256, pem(first.get(), true), claims("a"), {{"kid", "old"}})));
  CHECK(r.status == 401);
  CHECK(json::parse(r.body)["detail"] == "unknown key id (kid)");
}

TEST_CASE("jwt: a key file that cannot be used stops start-up, naming the file", "[jwt][startup]") {
  TempDir keys;
  keys.write("junk.pem", "not a key");
  const std::string junk = (keys.path / "junk.pem").string();
  const std::string plugins = plugin_path("notes") + ":" + test_plugin_path("jwt_gate");
  auto r = run_server_to_exit({}, {{"EDRI_PLUGINS", plugins}, {"EDRI_TEST_JWT_KEY_FILE", junk}});
  INFO(r.err);
  CHECK(r.status == 3);
  CHECK(r.err.find("registration failed: JWT key file " + junk + ": not a PEM public key or certificate") !=
        std::string::npos);
  const std::string missing = (keys.path / "missing.json").string();
  r = run_server_to_exit(
      {}, {{"EDRI_PLUGINS", plugins}, {"EDRI_TEST_JWT_ALG", "ES256"}, {"EDRI_TEST_JWT_JWKS_FILE", missing}});
  INFO(r.err);
  CHECK(r.status == 3);
  CHECK(r.err.find("JWKS file " + missing + ": cannot read it") != std::string::npos);
}
