// The plugin integration tests run: typed parameters, bodies, errors and a
// handler that takes its time.
#include <unistd.h>

#include <edri/plugin.hpp>

#include <chrono>
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
  r.get("/throw", "test.throw", [](const edri::Request&, edri::Context&) -> edri::Response {
    throw std::runtime_error("secret internal detail");
  });
  r.get("/status/{code:int}", "test.status", [](const edri::Request& req, edri::Context&) {
    return edri::Response::text("status", static_cast<int>(req.int_param("code"))).header("X-Test", "yes");
  });
  r.get("/pid", "test.pid", [](const edri::Request&, edri::Context&) {
    return edri::Response::json({{"pid", ::getpid()}});
  });
  r.get("/sleep/{ms:int}", "test.sleep", [](const edri::Request& req, edri::Context&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(req.int_param("ms")));
    return edri::Response::raw_json(R"({"slept":true})");
  });
  // A second domain: its own manager process.
  r.domain("other");
  r.get("/other/pid", "other.pid", [](const edri::Request&, edri::Context& ctx) {
    return edri::Response::json({{"pid", ::getpid()}, {"domain", ctx.domain()}});
  });
}

}  // namespace

EDRI_PLUGIN("test", reg)
