// A plugin that guards other plugins with bearer tokens (loaded beside
// notes.so, as a team would add authentication to an app): every call
// needs a valid JWT (edri/jwt.hpp) in `Authorization: Bearer`, on every
// protocol. The WebSocket handshake alone passes without one, so that each
// command on the socket is checked (and refused) one by one, with the
// handshake's token.
//   EDRI_TEST_JWT_ALG        the algorithm (default RS256)
//   EDRI_TEST_JWT_KEY_FILE   the key file (PEM, or the HS256 secret), or
//   EDRI_TEST_JWT_JWKS_FILE  a JSON Web Key Set
// The audience is "api", the issuer "https://issuer.test". GET
// /jwt/whoami answers what a handler learns of the caller.
#include <cstdlib>
#include <memory>
#include <string>

#include <edri/jwt.hpp>
#include <edri/plugin.hpp>

namespace {

std::string setting(edri::Registry& r, std::string key, std::string variable, std::string fallback = "") {
  return r.setting({.key = std::move(key), .variable = std::move(variable), .default_value = std::move(fallback)});
}

edri::Response whoami(const edri::Request& req, edri::Context&) {
  return edri::Response::json({{"principal", std::string(req.principal)}, {"claims", req.claims()}});
}

void reg(edri::Registry& r) {
  // Keys are read here, once; a key that cannot be used stops start-up.
  auto verify = std::make_shared<edri::JwtVerifier>(
      edri::JwtVerifier::Options{.algorithm = setting(r, "algorithm", "EDRI_TEST_JWT_ALG", "RS256"),
                                 .key_file = setting(r, "key_file", "EDRI_TEST_JWT_KEY_FILE"),
                                 .jwks_file = setting(r, "jwks_file", "EDRI_TEST_JWT_JWKS_FILE"),
                                 .audience = "api",
                                 .issuer = "https://issuer.test"});
  r.middleware({"jwt", 1, [verify](const edri::Request& req, edri::Admission& a) -> std::optional<edri::Response> {
                  if (req.protocol == "websocket" && req.event.empty()) return std::nullopt;  // the handshake
                  return verify->admit(req, a);
                }});
  r.domain("jwt_gate");
  r.get("/jwt/whoami", "jwt_gate.whoami", whoami);
  r.command("jwt.whoami", "jwt_gate.whoami");
}

}  // namespace

EDRI_PLUGIN("jwt_gate", reg)
