// A typed gRPC service (docs/grpc.md): a protobuf service whose unary
// methods are events the plugin already handles. The listener turns each
// request message into the JSON object the event's handler reads (field
// names as in the .proto) and the handler's JSON answer into the method's
// response message, so one handler serves REST, WebSocket and gRPC. The
// service's descriptor is what protoc writes with --descriptor_set_out
// and --include_imports; edri_grpc_descriptor() in CMake embeds it in the
// plugin (cmake/EdriGrpc.cmake).
#pragma once

#include <string>
#include <vector>

namespace edri {

struct GrpcMethodDecl {
  std::string method;  // as the service names it: "CreateNote"
  std::string event;   // the declared event it sends: "notes.create"
};

struct GrpcServiceDecl {
  std::string service;                  // its full name: "notes.v1.Notes"
  std::string descriptor_set;           // a serialized google.protobuf.FileDescriptorSet that holds it
  std::vector<GrpcMethodDecl> methods;  // every method of the service, each once
};

}  // namespace edri
