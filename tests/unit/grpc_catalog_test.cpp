// ServiceCatalog (src/grpc/service_catalog.*): typed services checked at
// start-up, their messages transcoded to and from a handler's JSON, and
// server reflection's answers.
#include <catch2/catch.hpp>
#include <string>

#include <google/protobuf/descriptor.pb.h>
#include <nlohmann/json.hpp>

#include "catalog_test_descriptor.hpp"
#include "grpc/reflection/v1/reflection.pb.h"
#include "grpc/service_catalog.hpp"

using namespace edri::grpc;
using nlohmann::json;
namespace pb = google::protobuf;
namespace reflection = ::grpc::reflection::v1;

namespace {

const std::string kSet(catalog_test_descriptor, sizeof catalog_test_descriptor);

edri::GrpcServiceDecl echo_service(std::string set = kSet) {
  return {"catalog.v1.Catalog", std::move(set), {{"Echo", "catalog.echo"}}};
}

// `m`'s input message from its JSON form, serialized.
std::string message_of(const ServiceCatalog& c, const ServiceCatalog::Method& m, const json& j) {
  // The output type is the input type here (Echo), so answer_message
  // builds request bytes too.
  std::string bytes, error;
  REQUIRE(c.answer_message(m, j.dump(), bytes, error));
  return bytes;
}

reflection::ServerReflectionResponse ask(const ServiceCatalog& c, const reflection::ServerReflectionRequest& req) {
  std::string out;
  REQUIRE(c.reflect(req.SerializeAsString(), out));
  reflection::ServerReflectionResponse res;
  REQUIRE(res.ParseFromString(out));
  return res;
}

}  // namespace

TEST_CASE("gRPC catalog: a typed method's message as the JSON its handler reads, and back", "[grpc]") {
  const ServiceCatalog c({echo_service()});
  const auto* m = c.find("/catalog.v1.Catalog/Echo");
  REQUIRE(m);
  CHECK(m->event == "catalog.echo");
  CHECK_FALSE(c.find("/catalog.v1.Catalog/Other"));
  const json in = {
      {"id", 9007199254740993LL},  // past a double's 53 bits
      {"ids", {1, -2}},           {"counts", {{"a", 5}}}, {"inner", {{"big", 18446744073709551615ULL}, {"name", "n"}}},
      {"inners", {{{"big", 7}}}}, {"color", "RED"},       {"wrapped", "12"}};
  json out;
  std::string error;
  REQUIRE(c.request_json(*m, message_of(c, *m, in), 128, out, error));
  // 64-bit integers are numbers, exactly; plain scalars are present at
  // their default; an unset optional field is absent.
  CHECK(out["id"] == 9007199254740993LL);
  CHECK(out["ids"] == json{1, -2});
  CHECK(out["counts"]["a"] == 5);
  CHECK(out["inner"]["big"] == 18446744073709551615ULL);
  CHECK(out["inner"]["name"] == "n");
  CHECK(out["inners"][0]["big"] == 7);
  CHECK(out["inners"][0]["name"] == "");
  CHECK(out["text"] == "");
  CHECK(out["color"] == "RED");
  CHECK_FALSE(out.contains("limit"));
  // A well-known type keeps its own JSON form.
  CHECK(out["wrapped"] == "12");
  // Set, an optional field is there even at its default.
  REQUIRE(c.request_json(*m, message_of(c, *m, {{"limit", 0}}), 128, out, error));
  CHECK(out["limit"] == 0);
}

TEST_CASE("gRPC catalog: what does not transcode says why", "[grpc]") {
  const ServiceCatalog c({echo_service()});
  const auto& m = *c.find("/catalog.v1.Catalog/Echo");
  json out;
  std::string bytes, error;
  CHECK_FALSE(c.request_json(m, std::string("\xff\xff\xff", 3), 128, out, error));
  CHECK(error == "a message that is not a catalog.v1.Shapes");
  // Nesting past EDRI_MAX_JSON_DEPTH: {"inner":{...}} is depth 2.
  const std::string nested = message_of(c, m, {{"inner", {{"name", "n"}}}});
  CHECK(c.request_json(m, nested, 2, out, error));
  CHECK_FALSE(c.request_json(m, nested, 1, out, error));
  CHECK(error == "a message nested deeper than EDRI_MAX_JSON_DEPTH (1)");
  // A handler's answer: fields the message lacks are ignored; a field of
  // the wrong type is not.
  CHECK(c.answer_message(m, R"({"id": 3, "extra": true})", bytes, error));
  CHECK_FALSE(c.answer_message(m, R"({"id": "three"})", bytes, error));
  CHECK(error.find("the handler's answer is not a catalog.v1.Shapes") == 0);
  CHECK_FALSE(c.answer_message(m, "[1]", bytes, error));
  // No body (a 204) is the empty message.
  CHECK(c.answer_message(m, "", bytes, error));
  CHECK(bytes.empty());
}

TEST_CASE("gRPC catalog: what a plugin declared wrongly stops start-up", "[grpc]") {
  auto refused = [](std::vector<edri::GrpcServiceDecl> decls) {
    try {
      ServiceCatalog c(decls);
    } catch (const CatalogError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused({echo_service("garbage")}) ==
        "catalog.v1.Catalog: its descriptor set is not a serialized FileDescriptorSet");
  // The same service twice, and a file of one name that differs.
  CHECK(refused({echo_service(), echo_service()}) == "catalog.v1.Catalog: served twice");
  pb::FileDescriptorSet set;
  REQUIRE(set.ParseFromString(kSet));
  for (auto& f : *set.mutable_file())
    if (f.name() == "catalog_test.proto") f.mutable_message_type(0)->mutable_field(0)->set_name("renamed");
  CHECK(refused({echo_service(), echo_service(set.SerializeAsString())}) ==
        "catalog.v1.Catalog: its catalog_test.proto differs from the one another service brought");
  // A file whose import is not in the set.
  pb::FileDescriptorSet alone;
  for (const auto& f : set.file())
    if (f.name() == "catalog_test.proto") *alone.add_file() = f;
  CHECK(refused({echo_service(alone.SerializeAsString())}).find("does not build") != std::string::npos);
  CHECK(refused({{"catalog.v1.Catalog", kSet, {}}}) ==
        "catalog.v1.Catalog: method Echo sends no event (name one in grpc_service)");
  CHECK(refused({{"catalog.v1.Catalog", kSet, {{"Echo", "e"}, {"Nope", "e"}}}}) ==
        "catalog.v1.Catalog: has no method Nope");
  CHECK(refused({{"catalog.v1.Elsewhere", kSet, {}}}) == "catalog.v1.Elsewhere: no such service in its descriptor set");
}

TEST_CASE("gRPC catalog: server reflection lists services and hands out their files", "[grpc]") {
  const ServiceCatalog c({echo_service()});
  CHECK(c.serves("catalog.v1.Catalog"));
  CHECK(c.serves("grpc.health.v1.Health"));
  CHECK_FALSE(c.serves("catalog.v1"));
  reflection::ServerReflectionRequest req;
  req.set_host("h");
  req.set_list_services("*");
  auto res = ask(c, req);
  CHECK(res.valid_host() == "h");
  CHECK(res.original_request().list_services() == "*");
  std::vector<std::string> names;
  for (const auto& s : res.list_services_response().service()) names.push_back(s.name());
  CHECK(names == std::vector<std::string>{"edri.v1.Edri", "grpc.health.v1.Health",
                                          "grpc.reflection.v1.ServerReflection",
                                          "grpc.reflection.v1alpha.ServerReflection", "catalog.v1.Catalog"});
  // A symbol's file with its imports, imports first, each once.
  for (const std::string symbol : {"catalog.v1.Catalog", "catalog.v1.Inner", "catalog.v1.Catalog.Echo"}) {
    req.set_file_containing_symbol(symbol);
    res = ask(c, req);
    std::vector<std::string> files;
    for (const auto& raw : res.file_descriptor_response().file_descriptor_proto()) {
      pb::FileDescriptorProto f;
      REQUIRE(f.ParseFromString(raw));
      files.push_back(f.name());
    }
    CHECK(files == std::vector<std::string>{"google/protobuf/wrappers.proto", "catalog_test.proto"});
  }
  req.set_file_containing_symbol("edri.v1.Edri");
  CHECK(ask(c, req).file_descriptor_response().file_descriptor_proto_size() == 1);
  req.set_file_by_filename("nope.proto");
  res = ask(c, req);
  CHECK(res.error_response().error_code() == 5);
  CHECK(res.error_response().error_message() == "file nope.proto is not known to this server");
  req.set_all_extension_numbers_of_type("catalog.v1.Shapes");
  CHECK(ask(c, req).all_extension_numbers_response().base_type_name() == "catalog.v1.Shapes");
  req.mutable_file_containing_extension()->set_containing_type("catalog.v1.Shapes");
  CHECK(ask(c, req).error_response().error_code() == 5);
  req.clear_message_request();
  CHECK(ask(c, req).error_response().error_code() == 3);
  std::string out;
  CHECK_FALSE(c.reflect(std::string("\xff\xff", 2), out));
}
