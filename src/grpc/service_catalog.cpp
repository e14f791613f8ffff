#include "grpc/service_catalog.hpp"

#include <algorithm>
#include <charconv>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/util/json_util.h>

#include <edri/json_depth.hpp>

#include "edri/v1/edri.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "grpc/reflection/v1/reflection.pb.h"
#include "grpc/reflection/v1alpha/reflection.pb.h"

namespace edri::grpc {

namespace pb = google::protobuf;
namespace reflection = ::grpc::reflection::v1;

namespace {

// What the pool says is wrong with a file, as one line.
class Errors : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& file, const std::string& element, const pb::Message*, ErrorLocation,
                const std::string& message) override {
    if (!text.empty()) text += "; ";
    text += file + ": " + element + ": " + message;
  }
  std::string text;
};

bool is_64_bit(const pb::FieldDescriptor& f) {
  return f.cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64 || f.cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64;
}

// proto3's JSON mapping writes 64-bit integers as strings (for
// JavaScript's doubles); a handler reads the numbers a REST or WebSocket
// client sends, so they go back to numbers.
void integer_from_string(nlohmann::json& v, bool is_signed) {
  if (!v.is_string()) return;
  const std::string& s = v.get_ref<const std::string&>();
  if (is_signed) {
    std::int64_t n = 0;
    if (std::from_chars(s.data(), s.data() + s.size(), n).ec == std::errc{}) v = n;
  } else {
    std::uint64_t n = 0;
    if (std::from_chars(s.data(), s.data() + s.size(), n).ec == std::errc{}) v = n;
  }
}

void numbers_for_64_bit(nlohmann::json& object, const pb::Descriptor& type);

// One field's value (each element of a repeated one, each value of a map).
void number_value(nlohmann::json& v, const pb::FieldDescriptor& f) {
  if (is_64_bit(f)) return integer_from_string(v, f.cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64);
  // Well-known types have JSON forms of their own (Int64Value is a string
  // there too, and stays one).
  if (f.message_type() && f.message_type()->file()->package() != "google.protobuf")
    numbers_for_64_bit(v, *f.message_type());
}

void numbers_for_64_bit(nlohmann::json& object, const pb::Descriptor& type) {
  if (!object.is_object()) return;
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& f = *type.field(i);
    const auto it = object.find(f.name());
    if (it == object.end()) continue;
    if (f.is_map()) {
      for (auto& [key, v] : it->items()) number_value(v, *f.message_type()->map_value());
    } else if (f.is_repeated()) {
      for (auto& v : *it) number_value(v, f);
    } else {
      number_value(*it, f);
    }
  }
}

}  // namespace

ServiceCatalog::ServiceCatalog(const std::vector<GrpcServiceDecl>& typed) {
  add_builtin(v1::Event::descriptor()->file());
  add_builtin(::grpc::health::v1::HealthCheckRequest::descriptor()->file());
  add_builtin(reflection::ServerReflectionRequest::descriptor()->file());
  add_builtin(::grpc::reflection::v1alpha::ServerReflectionRequest::descriptor()->file());
  for (const auto& decl : typed) add_typed(decl);
}

ServiceCatalog::~ServiceCatalog() = default;

void ServiceCatalog::add_builtin(const pb::FileDescriptor* file) {
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  add_file(proto, "edri-server");
  for (int i = 0; i < file->service_count(); ++i) services_.push_back(file->service(i)->full_name());
}

// A file comes once: two services may share one (google/protobuf/empty.proto,
// say), byte for byte, and never two files of one name that differ.
void ServiceCatalog::add_file(const pb::FileDescriptorProto& proto, const std::string& service) {
  std::string bytes = proto.SerializeAsString();  // as reflection hands it out
  if (const auto it = files_.find(proto.name()); it != files_.end()) {
    if (it->second == bytes) return;
    throw CatalogError(service + ": its " + proto.name() + " differs from the one another service brought");
  }
  Errors errors;
  if (!pool_.BuildFileCollectingErrors(proto, &errors))
    throw CatalogError(service + ": its descriptor set does not build: " + errors.text);
  files_.emplace(proto.name(), std::move(bytes));
}

void ServiceCatalog::add_typed(const GrpcServiceDecl& decl) {
  const std::string& name = decl.service;
  pb::FileDescriptorSet set;
  if (!set.ParseFromString(decl.descriptor_set))
    throw CatalogError(name + ": its descriptor set is not a serialized FileDescriptorSet");
  // protoc writes a file's imports before it (--include_imports).
  for (const auto& file : set.file()) add_file(file, name);
  const pb::ServiceDescriptor* service = pool_.FindServiceByName(name);
  if (!service) throw CatalogError(name + ": no such service in its descriptor set");
  if (serves(name)) throw CatalogError(name + ": served twice");
  for (const auto& m : decl.methods)
    if (!service->FindMethodByName(m.method)) throw CatalogError(name + ": has no method " + m.method);
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor& md = *service->method(i);
    const auto decl_method = std::find_if(decl.methods.begin(), decl.methods.end(),
                                          [&](const GrpcMethodDecl& m) { return m.method == md.name(); });
    if (decl_method == decl.methods.end())
      throw CatalogError(name + ": method " + md.name() + " sends no event (name one in grpc_service)");
    if (md.client_streaming() || md.server_streaming())
      throw CatalogError(name + ": method " + md.name() +
                         " streams; typed methods are unary (streams are edri.v1.Edri/Connect's)");
    methods_.emplace("/" + name + "/" + md.name(), Method{decl_method->event, md.input_type(), md.output_type()});
  }
  services_.push_back(name);
}

const ServiceCatalog::Method* ServiceCatalog::find(std::string_view path) const {
  const auto it = methods_.find(path);
  return it == methods_.end() ? nullptr : &it->second;
}

bool ServiceCatalog::serves(std::string_view service) const {
  return std::find(services_.begin(), services_.end(), service) != services_.end();
}

bool ServiceCatalog::request_json(const Method& m, std::string_view message, std::size_t max_depth, nlohmann::json& out,
                                  std::string& error) const {
  std::unique_ptr<pb::Message> msg(factory_.GetPrototype(m.input)->New());
  if (!msg->ParseFromArray(message.data(), static_cast<int>(message.size()))) {
    error = "a message that is not a " + m.input->full_name();
    return false;
  }
  pb::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  // proto3: a plain scalar has a value even when unset ("" or 0), and the
  // handler sees it; a field with presence (optional, a message) is absent
  // unless set, so the event's declared default applies to it.
  options.always_print_primitive_fields = true;
  std::string text;
  if (const auto status = pb::util::MessageToJsonString(*msg, &text, options); !status.ok()) {
    error = m.input->full_name() + " as JSON: " + std::string(status.message());
    return false;
  }
  if (json_depth(text, max_depth) > max_depth) {
    error = "a message nested deeper than EDRI_MAX_JSON_DEPTH (" + std::to_string(max_depth) + ")";
    return false;
  }
  out = nlohmann::json::parse(text);
  numbers_for_64_bit(out, *m.input);
  return true;
}

bool ServiceCatalog::answer_message(const Method& m, std::string_view json, std::string& out,
                                    std::string& error) const {
  std::unique_ptr<pb::Message> msg(factory_.GetPrototype(m.output)->New());
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const std::string_view text = json.empty() ? std::string_view("{}") : json;
  if (const auto status = pb::util::JsonStringToMessage(pb::StringPiece(text.data(), text.size()), msg.get(), options);
      !status.ok()) {
    error = "the handler's answer is not a " + m.output->full_name() + ": " + std::string(status.message());
    return false;
  }
  out = msg->SerializeAsString();
  return true;
}

void ServiceCatalog::with_imports(const pb::FileDescriptor* file, std::vector<const std::string*>& out) const {
  const std::string& bytes = files_.at(file->name());
  if (std::find(out.begin(), out.end(), &bytes) != out.end()) return;
  for (int i = 0; i < file->dependency_count(); ++i) with_imports(file->dependency(i), out);
  out.push_back(&bytes);
}

bool ServiceCatalog::reflect(std::string_view request, std::string& response) const {
  reflection::ServerReflectionRequest req;
  if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) return false;
  reflection::ServerReflectionResponse res;
  res.set_valid_host(req.host());
  *res.mutable_original_request() = req;
  const pb::FileDescriptor* file = nullptr;
  auto not_found = [&](const std::string& what) {
    auto* e = res.mutable_error_response();
    e->set_error_code(5);  // NOT_FOUND
    e->set_error_message(what + " is not known to this server");
  };
  using Req = reflection::ServerReflectionRequest;
  switch (req.message_request_case()) {
    case Req::kListServices:
      for (const auto& s : services_) res.mutable_list_services_response()->add_service()->set_name(s);
      break;
    case Req::kFileByFilename:
      if (!(file = pool_.FindFileByName(req.file_by_filename()))) not_found("file " + req.file_by_filename());
      break;
    case Req::kFileContainingSymbol:
      if (!(file = pool_.FindFileContainingSymbol(req.file_containing_symbol())))
        not_found("symbol " + req.file_containing_symbol());
      break;
    case Req::kFileContainingExtension: {
      const auto& ext = req.file_containing_extension();
      const pb::Descriptor* type = pool_.FindMessageTypeByName(ext.containing_type());
      const pb::FieldDescriptor* f = type ? pool_.FindExtensionByNumber(type, ext.extension_number()) : nullptr;
      if (f)
        file = f->file();
      else
        not_found("extension " + std::to_string(ext.extension_number()) + " of " + ext.containing_type());
      break;
    }
    case Req::kAllExtensionNumbersOfType: {
      const pb::Descriptor* type = pool_.FindMessageTypeByName(req.all_extension_numbers_of_type());
      if (!type) {
        not_found("type " + req.all_extension_numbers_of_type());
        break;
      }
      std::vector<const pb::FieldDescriptor*> extensions;
      pool_.FindAllExtensions(type, &extensions);
      auto* numbers = res.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const auto* f : extensions) numbers->add_extension_number(f->number());
      break;
    }
    case Req::MESSAGE_REQUEST_NOT_SET: {
      auto* e = res.mutable_error_response();
      e->set_error_code(3);  // INVALID_ARGUMENT
      e->set_error_message("a reflection request that asks nothing");
      break;
    }
  }
  if (file) {
    std::vector<const std::string*> files;
    with_imports(file, files);
    for (const auto* bytes : files) res.mutable_file_descriptor_response()->add_file_descriptor_proto(*bytes);
  }
  response = res.SerializeAsString();
  return true;
}

}  // namespace edri::grpc
