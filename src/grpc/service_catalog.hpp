// ServiceCatalog: every gRPC service a listener serves by its protobuf
// descriptors (docs/grpc.md): the built-in ones (edri.v1.Edri, health,
// reflection) and the typed services plugins declared, whose unary
// methods send events. It transcodes a typed method's messages to and
// from the JSON its event's handler reads and answers, with libprotobuf's
// JSON mapping, and answers server reflection. Built once at start-up;
// what a plugin declared wrongly throws CatalogError there. No I/O.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <nlohmann/json.hpp>

#include <edri/grpc_service.hpp>

namespace edri::grpc {

class CatalogError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ServiceCatalog {
 public:
  // A unary method of a typed service and the event it sends (found by
  // the call's :path, "/notes.v1.Notes/CreateNote").
  struct Method {
    std::string event;  // "notes.create"
    const google::protobuf::Descriptor* input;
    const google::protobuf::Descriptor* output;
  };

  explicit ServiceCatalog(const std::vector<GrpcServiceDecl>& typed);
  ~ServiceCatalog();

  // The typed method at a call's :path, or null.
  const Method* find(std::string_view path) const;
  // Whether a service of that full name is served (health checks).
  bool serves(std::string_view service) const;
  const std::vector<std::string>& services() const { return services_; }

  // A request message of `m` as the JSON object its handler reads: proto
  // field names; every plain scalar present, at its default when unset
  // (proto3 cannot tell the two apart); a field with presence (optional,
  // a message) only when set, so the event's declared default applies;
  // 64-bit integers as numbers. False, and `error` says why, when the
  // bytes are not one, or when it nests deeper than `max_depth`.
  bool request_json(const Method& m, std::string_view message, std::size_t max_depth, nlohmann::json& out,
                    std::string& error) const;
  // A handler's JSON answer as `m`'s response message (fields it does not
  // know are ignored). False, and `error` says why, when it does not fit.
  bool answer_message(const Method& m, std::string_view json, std::string& out, std::string& error) const;

  // One ServerReflectionResponse for one ServerReflectionRequest (v1 and
  // v1alpha alike). False when the bytes are not a request.
  bool reflect(std::string_view request, std::string& response) const;

 private:
  void add_file(const google::protobuf::FileDescriptorProto& proto, const std::string& service);
  void add_builtin(const google::protobuf::FileDescriptor* file);
  void add_typed(const GrpcServiceDecl& decl);
  // The file and what it imports, imports first, each once.
  void with_imports(const google::protobuf::FileDescriptor* file, std::vector<const std::string*>& out) const;

  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_;
  std::unordered_map<std::string, std::string> files_;  // file name -> its FileDescriptorProto, serialized
  // Found by the call's :path without a copy of it.
  struct PathHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Method, PathHash, std::equal_to<>> methods_;  // by path
  std::vector<std::string> services_;
};

}  // namespace edri::grpc
