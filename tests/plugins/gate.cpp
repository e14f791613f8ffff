// A plugin that guards other plugins (loaded beside notes.so, as a team
// would add an authentication plugin to an app), with a few events of its
// own that show what a handler learns of its caller. EDRI_TEST_GATE picks
// the middleware:
//   "deny"  refuses every call but the WebSocket handshake (401), so that
//           each command on the socket must be refused one by one;
//   "key"   refuses writes (any method but GET) and every live-stream
//           subscription without "X-Api-Key: k1", and names the caller
//           "key-user" with claims {"role":"writer"} when it has the key;
//   "pass"  lets everything through (a middleware that costs nothing);
//   "limit" lets everything through, and limits gate.whoami to bursts of
//           3 per client address, one more each 10 s (edri::rate_limit).
// In every mode "admin" guards the event gate.admin alone (x-admin: yes),
// and "private" the paths under /gate/private/ alone.
#include <cstdlib>
#include <string>

#include <edri/plugin.hpp>
#include <edri/rate_limit.hpp>

namespace {

edri::Response refusal(int status, const char* detail) {
  auto r = edri::Response::problem(status, status == 401 ? "Unauthorized" : "Forbidden", detail);
  if (status == 401) r.header("WWW-Authenticate", "ApiKey");
  return r;
}

std::optional<edri::Response> deny(const edri::Request& req, edri::Admission&) {
  if (req.protocol == "websocket" && req.event.empty()) return std::nullopt;  // the handshake
  return refusal(401, "every call is refused");
}

std::optional<edri::Response> key(const edri::Request& req, edri::Admission& add) {
  const bool has_key = req.header("x-api-key") == "k1";
  if (has_key) add.set_principal("key-user", {{"role", "writer"}});
  const bool guarded = req.method != edri::Method::Get || req.event == "stream.subscribe";
  if (guarded && !has_key) return refusal(401, "writes need X-Api-Key");
  return std::nullopt;
}

edri::MiddlewareDecl chosen(const std::string& m) {
  if (m == "deny") return {"deny", 5, deny, nullptr};
  if (m == "pass" || m == "limit")
    return {"pass", 5,
            [](const edri::Request&, edri::Admission&) -> std::optional<edri::Response> { return std::nullopt; },
            nullptr};
  return {"key", 5, key, nullptr};
}

// What the caller looks like from a handler.
edri::Response whoami(const edri::Request& req, edri::Context&) {
  nlohmann::json headers = nlohmann::json::object();
  for (const auto& h : req.headers) headers[std::string(h.name)] = std::string(h.value);
  return edri::Response::json({{"protocol", std::string(req.protocol)},
                               {"client", std::string(req.client_address)},
                               {"principal", std::string(req.principal)},
                               {"claims", req.claims()},
                               {"headers", headers}});
}

void reg(edri::Registry& r) {
  r.domain("gate");
  r.get("/gate/whoami", "gate.whoami", whoami);
  r.post("/gate/whoami", "gate.whoami_post", whoami);
  r.all_headers("gate.whoami");
  r.command("whoami", "gate.whoami");
  r.command("whoami.post", "gate.whoami_post");
  r.get("/gate/admin", "gate.admin", whoami);
  r.command("admin", "gate.admin");
  r.get("/gate/private/x", "gate.private", whoami);
  r.get("/gate/public", "gate.public", whoami);
  r.stream_events("/gate/sse/{name}");
  const std::string mode = r.setting({.key = "mode",
                                      .variable = "EDRI_TEST_GATE",
                                      .default_value = "key",
                                      .meaning = "the middleware: key, deny, pass or limit"});
  r.middleware(chosen(mode));
  if (mode == "limit")
    r.middleware(
        edri::rate_limit("limit", 8, {.per_second = 0.1, .burst = 3}, edri::RateKey::ClientAddress, {"gate.whoami"}));
  edri::MiddlewareDecl admin{"admin", 6,
                             [](const edri::Request& req, edri::Admission&) -> std::optional<edri::Response> {
                               if (req.header("x-admin") != "yes") return refusal(403, "admins only");
                               return std::nullopt;
                             },
                             nullptr};
  admin.events = {"gate.admin"};
  r.middleware(std::move(admin));
  edri::MiddlewareDecl priv{"private", 7,
                            [](const edri::Request&, edri::Admission&) -> std::optional<edri::Response> {
                              return refusal(403, "private paths are closed");
                            },
                            nullptr};
  priv.paths = {"/gate/private/"};
  r.middleware(std::move(priv));
}

}  // namespace

EDRI_PLUGIN("gate", reg)
