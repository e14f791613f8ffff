// The smallest plugin: one domain, one route with a typed parameter, the
// same event as a typed gRPC method (hello.proto), and a page from the
// folder hello_assets/ beside hello.so.
#include <edri/plugin.hpp>

#include "hello_descriptor.hpp"

namespace {

void register_hello(edri::Registry& r) {
  r.domain("hello");
  r.get("/hello/{name}", "hello.greet", [](const edri::Request& req, edri::Context&) {
    return edri::Response::json({{"hello", std::string(*req.path_param("name"))}}, edri::Status::Ok)
        .header("Cache-Control", "no-store");
  });
  r.grpc_service("hello.v1.Hello", std::string(hello_descriptor, sizeof hello_descriptor), {{"Greet", "hello.greet"}});
  r.assets("/", "hello_assets");
}

}  // namespace

EDRI_PLUGIN("hello", register_hello)
