// The smallest plugin: one domain, one route with a typed parameter.
#include <edri/plugin.hpp>

namespace {

void register_hello(edri::Registry& r) {
  r.domain("hello");
  r.get("/hello/{name}", "hello.greet", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"hello", std::string(*req.path_param("name"))}}, edri::Status::Ok)
        .header("Cache-Control", "no-store");
  });
}

}  // namespace

EDRI_PLUGIN("hello", register_hello)
