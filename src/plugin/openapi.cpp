#include "plugin/openapi.hpp"

#include <string_view>

#include "http/route_table.hpp"

namespace edri::plugin {

namespace {

using nlohmann::json;

const char* json_type(FieldType t) {
  switch (t) {
    case FieldType::Int: return "integer";
    case FieldType::Number: return "number";
    case FieldType::Bool: return "boolean";
    case FieldType::Object: return "object";
    case FieldType::Array: return "array";
    case FieldType::String:
    case FieldType::Uuid: return "string";
    case FieldType::Any: return nullptr;
  }
  return nullptr;
}

// The bounds of a field, by what they measure.
void add_bounds(const FieldDecl& f, json& s) {
  const bool numeric = f.type == FieldType::Int || f.type == FieldType::Number;
  const bool items = f.type == FieldType::Array;
  const char* low = numeric ? "minimum" : items ? "minItems" : "minLength";
  const char* high = numeric ? "maximum" : items ? "maxItems" : "maxLength";
  // A length is a count: JSON Schema wants a non-negative integer there.
  auto bound = [&](double v) -> json { return numeric ? json(v) : json(static_cast<std::uint64_t>(v < 0 ? 0 : v)); };
  if (f.type == FieldType::Any || f.type == FieldType::Bool || f.type == FieldType::Uuid || f.type == FieldType::Object)
    return;
  if (f.min) s[low] = bound(*f.min);
  if (f.max) s[high] = bound(*f.max);
}

// An object's members as `properties` and `required`.
void add_members(const std::vector<FieldDecl>& members, json& s) {
  json required = json::array();
  for (const auto& m : members) {
    json member = schema_of(m);
    // A member that is not required may be null: null is as if absent
    // (FieldDecl), and the listener takes it.
    if (!m.required && member.contains("type") && member["type"].is_string())
      member["type"] = json::array({member["type"], "null"});
    s["properties"][m.name] = std::move(member);
    if (m.required) required.push_back(m.name);
  }
  if (!required.empty()) s["required"] = std::move(required);
}

// "/notes/{id:int}" -> "/notes/{id}": OpenAPI's template has no types.
std::string openapi_path(std::string_view path) {
  std::string out;
  bool in_param = false, in_type = false;
  for (const char c : path) {
    if (c == '{') in_param = true;
    if (c == '}') in_param = in_type = false;
    if (in_param && c == ':') in_type = true;
    if (!in_type) out += c;
  }
  return out;
}

json path_parameter(const std::string& name, http::ParamType type) {
  json schema = {{"type", type == http::ParamType::Int ? "integer" : "string"}};
  if (type == http::ParamType::Uuid) schema["format"] = "uuid";
  return {{"name", name}, {"in", "path"}, {"required", true}, {"schema", std::move(schema)}};
}

const char* where(FieldSource s) {
  switch (s) {
    case FieldSource::Query: return "query";
    case FieldSource::Header: return "header";
    case FieldSource::Cookie: return "cookie";
    case FieldSource::Body: return nullptr;
  }
  return nullptr;
}

// The body fields as one schema: the whole body's (JsonBody()), or an
// object of the named ones.
json body_schema(const std::vector<FieldDecl>& fields) {
  json object = {{"type", "object"}};
  std::vector<FieldDecl> named;
  for (const auto& f : fields) {
    if (f.source != FieldSource::Body) continue;
    if (f.name.empty()) return schema_of(f);
    named.push_back(f);
  }
  add_members(named, object);
  return object;
}

bool has_body(const std::vector<FieldDecl>& fields) {
  for (const auto& f : fields)
    if (f.source == FieldSource::Body) return true;
  return false;
}

json problem_answer(const char* description, bool validation) {
  const json schema = {
      {"$ref", validation ? "#/components/schemas/ValidationProblem" : "#/components/schemas/Problem"}};
  return {{"description", description}, {"content", {{"application/problem+json", {{"schema", schema}}}}}};
}

// The handler's answers as declared (Registry::answers); an event that
// declares none may answer anything.
json answers(const std::vector<AnswerDecl>& declared) {
  json out = json::object();
  for (const auto& a : declared) {
    json answer = {{"description", a.description}};
    if (a.body)
      answer["content"]["application/json"]["schema"] = schema_of(*a.body);
    else if (a.status >= 400)
      answer = problem_answer(a.description.c_str(), false);
    out[std::to_string(a.status)] = std::move(answer);
  }
  if (out.empty()) out["default"] = {{"description", "the handler's answer"}};
  return out;
}

json operation(const LoadedRoute& r, const LoadedEvent& ev) {
  json op = {{"operationId", ev.name}, {"tags", json::array({ev.domain})}, {"summary", ev.name}};
  json parameters = json::array();
  for (const auto& [name, type] : http::RouteTable::parameters(r.path))
    parameters.push_back(path_parameter(name, type));
  for (const auto& f : ev.fields) {
    const char* in = where(f.source);
    if (!in) continue;
    parameters.push_back({{"name", f.name}, {"in", in}, {"required", f.required}, {"schema", schema_of(f)}});
  }
  if (!parameters.empty()) op["parameters"] = std::move(parameters);
  if (has_body(ev.fields))
    op["requestBody"] = {{"required", true}, {"content", {{"application/json", {{"schema", body_schema(ev.fields)}}}}}};
  op["responses"] = answers(ev.answers);
  // The edge's own answers, unless the plugin described them itself.
  json& responses = op["responses"];
  if ((!ev.fields.empty() || ev.closed) && !responses.contains("422"))
    responses["422"] = problem_answer("a declared field is missing or breaks its rules", true);
  if (has_body(ev.fields) && !responses.contains("400"))
    responses["400"] = problem_answer("the body is not JSON", false);
  return op;
}

json components() {
  const json problem = {{"type", "object"},
                        {"description", "RFC 9457 problem details"},
                        {"properties",
                         {{"type", {{"type", "string"}}},
                          {"title", {{"type", "string"}}},
                          {"status", {{"type", "integer"}}},
                          {"detail", {{"type", "string"}}}}}};
  json validation = problem;
  validation["properties"]["errors"] = {
      {"type", "array"},
      {"items",
       {{"type", "object"},
        {"properties", {{"field", {{"type", "string"}}}, {"message", {{"type", "string"}}}}},
        {"required", {"field", "message"}}}}};
  return {{"schemas", {{"Problem", problem}, {"ValidationProblem", validation}}}};
}

}  // namespace

json schema_of(const FieldDecl& f) {
  json s = json::object();
  if (const char* t = json_type(f.type)) s["type"] = f.null_ok ? json::array({t, "null"}) : json(t);
  if (f.type == FieldType::Uuid) s["format"] = "uuid";
  add_bounds(f, s);
  if (!f.allowed.empty()) s["enum"] = f.allowed;
  if (!f.regex.empty()) s["pattern"] = f.regex;
  if (!f.default_value.is_null()) s["default"] = f.default_value;
  if (!f.members.empty()) add_members(f.members, s);
  if (!f.items.empty()) s["items"] = schema_of(f.items.front());
  return s;
}

json openapi_document(const PluginSet& plugins) {
  std::string title;
  for (const auto& name : plugins.names()) title += (title.empty() ? "" : ", ") + name;
  json doc = {{"openapi", "3.1.0"},
              {"info", {{"title", title.empty() ? "edri" : title}, {"version", EDRI_VERSION}}},
              {"paths", json::object()},
              {"components", components()}};
  for (const auto& r : plugins.routes()) {
    std::string method(method_name(r.method));
    for (auto& c : method)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    doc["paths"][openapi_path(r.path)][method] = operation(r, plugins.events()[r.event]);
  }
  return doc;
}

}  // namespace edri::plugin
