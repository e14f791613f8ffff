// A plugin whose routes cannot be served. EDRI_TEST_ROUTE_FAULT picks the
// fault: unset, a route to an event it never declared; "param_type", an
// unknown parameter type; "twice", a route declared twice; "builtin", a
// route that the built-in /health would hide; "middleware", a middleware
// attached to an event nobody declares (a typo in a security rule);
// "default", a query field whose default its own type refuses;
// "pattern", a pattern that does not compile, deep in an array's items;
// "one_of", an allowed value of the wrong type; "closed", unknown fields
// refused for an event it does not declare; "answers_event", an answer of
// an event it does not declare; "answers_status", an answer of status 42;
// "answers_body", an answer whose body's pattern does not compile.
#include <cstdlib>
#include <string>

#include <edri/plugin.hpp>

namespace {

edri::Response ok(const edri::Request&, edri::Context&) { return edri::Response::text("ok"); }

void reg(edri::Registry& r) {
  const std::string fault = r.setting({.key = "fault", .variable = "EDRI_TEST_ROUTE_FAULT"});
  if (fault.empty()) r.route(edri::Method::Get, "/x", "nowhere");
  if (fault == "param_type") r.get("/x/{id:integer}", "bad.x", ok);
  if (fault == "twice") r.get("/x", "bad.x", ok).get("/x", "bad.y", ok);
  if (fault == "builtin") r.get("/health", "bad.health", ok);
  using edri::Field;
  if (fault == "default") r.get("/x", "bad.x", ok, {Field("limit").in_query().integer().default_to("abc")});
  if (fault == "pattern")
    r.post("/x", "bad.x", ok, {Field("lines").array(Field("").object({Field("sku").string().pattern("([A-Z")}))});
  if (fault == "one_of") r.post("/x", "bad.x", ok, {Field("state").string().one_of({"open", 3})});
  if (fault == "closed") r.get("/x", "bad.x", ok).refuse_unknown_fields("bad.y");
  if (fault == "answers_event") r.get("/x", "bad.x", ok).answers("bad.y", 200, "ok");
  if (fault == "answers_status") r.get("/x", "bad.x", ok).answers("bad.x", 42, "ok");
  if (fault == "answers_body")
    r.get("/x", "bad.x", ok).answers("bad.x", 200, "ok", Field("").object({Field("id").string().pattern("(")}));
  if (fault == "middleware") {
    r.get("/admin", "bad.admin", ok);
    edri::MiddlewareDecl m{"admins", 1, [](const edri::Request&, edri::Admission&) -> std::optional<edri::Response> {
                             return std::nullopt;
                           }};
    m.events = {"bad.admn"};
    r.middleware(std::move(m));
  }
}

}  // namespace

EDRI_PLUGIN("bad_route", reg)
