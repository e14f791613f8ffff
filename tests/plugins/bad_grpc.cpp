// A plugin whose typed gRPC service cannot be served, in the way
// EDRI_TEST_GRPC_FAULT names: "streams" (a method that streams),
// "unmapped" (a method that sends no event), "no_method" (an event sent by
// a method the service lacks), "garbage" (a descriptor set that does not
// parse), "no_service" (a service its descriptor set lacks).
#include <cstdlib>
#include <string>

#include <edri/plugin.hpp>

#include "bad_grpc_descriptor.hpp"

namespace {

edri::Response echo(const edri::Request&, edri::Context&) { return edri::Response::json({{"text", "x"}}); }

void reg(edri::Registry& r) {
  r.post("/echo", "bad.echo", echo);
  const std::string fault = r.setting({.key = "fault", .variable = "EDRI_TEST_GRPC_FAULT"});
  std::string set(bad_grpc_descriptor, sizeof bad_grpc_descriptor);
  std::vector<edri::GrpcMethodDecl> methods{{"Echo", "bad.echo"}, {"Watch", "bad.echo"}};
  std::string service = "bad.v1.Bad";
  if (fault == "unmapped") methods.pop_back();
  if (fault == "no_method") methods.push_back({"Missing", "bad.echo"});
  if (fault == "garbage") set = "not a descriptor set";
  if (fault == "no_service") service = "bad.v1.Elsewhere";
  r.grpc_service(service, set, methods);
}

}  // namespace

EDRI_PLUGIN("bad_grpc", reg)
