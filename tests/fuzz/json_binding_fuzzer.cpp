// JSON body binding: a request body (and a query string, taken from the
// first line) checked against declared body and query fields (nested
// members, items, enums and patterns among them), as the listener does
// before a request leaves it, with its nesting limit (EDRI_MAX_JSON_DEPTH);
// the problem body for a failure; then the body as a handler without
// declared fields meets it: Request::json() under the same limit, and the
// value echoed (Response::json serializes it).
//
// Input: byte 0 picks the depth limit (1..200), bytes 1-2 a depth D (up to
// about 200,000); then "query\nbody". When D is not 0 the body becomes the
// innermost value of {"name":"n","count":1,"meta":[[...D...]]}. Whatever
// passes the depth check is walked (iteratively) to prove the check right:
// a parsed document deeper than the limit traps.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <edri/json_depth.hpp>

#include "dom_depth.hpp"
#include "http/request_parser.hpp"
#include "listener/request_validator.hpp"

using namespace edri;
using edri::fuzz::dom_depth;

namespace {

std::string body_of(std::string_view rest, std::size_t depth) {
  if (depth == 0) return std::string(rest);
  std::string b = R"({"name":"n","count":1,"meta":)";
  b.append(depth, '[').append(rest).append(depth, ']').append("}");
  return b;
}

// The listener's check, with one validator per limit (they are cheap, but
// not free to build for every input).
const listener::RequestValidator& validator(std::size_t limit) {
  static std::vector<std::unique_ptr<listener::RequestValidator>> by_limit(201);
  auto& v = by_limit[limit];
  if (!v)
    v = std::make_unique<listener::RequestValidator>(
        std::vector<FieldDecl>{
            Field("name").string().length(1, 64),
            Field("count").integer().range(0, 1000000),
            Field("ratio").number().range(-1, 1).optional(),
            Field("id").uuid().optional(),
            Field("meta").object().optional(),
            // JSON Schema's rules by path: items, members, enum, pattern
            // (RE2), null as a value, and the 64-error cap.
            Field("tags").array(Field("").string().one_of({"a", "b"}).pattern("^[a-z]$")).optional(),
            Field("owner")
                .object({Field("name").string().pattern("^[A-Za-z ]+$"),
                         Field("ids").array(Field("").integer().range(0, 9)).length(0, 100).optional()})
                .optional(),
            Field("state").string().nullable().optional(),
            Field("page").integer().range(1, 100).in_query().default_to(1),
            Field("q").string().in_query().optional(),
        },
        limit);
  return *v;
}

// What a handler meets: Request::json() throws RequestError for what it
// refuses; what it returns is echoed.
void handler_side(const std::string& body, std::size_t limit) {
  Request req;
  req.body = body;
  req.max_json_depth = limit;
  try {
    const auto j = req.json();
    if (dom_depth(j) > limit) __builtin_trap();  // json() let a deeper document through
    (void)Response::json(j);
  } catch (const RequestError& e) {
    if (e.status() != 400 && e.status() != 422) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::size_t limit = 1 + data[0] % 200;
  const std::size_t wrap = static_cast<std::size_t>(data[1] << 8 | data[2]) * 3;
  const std::string_view input(reinterpret_cast<const char*>(data + 3), size - 3);
  const auto cut = input.find('\n');
  const auto query = cut == std::string_view::npos ? std::string_view() : input.substr(0, cut);
  http::HttpRequest req;
  req.method = HTTP_POST;
  req.headers = {{"content-type", "application/json"}};
  req.body = body_of(cut == std::string_view::npos ? input : input.substr(cut + 1), wrap);
  listener::ValidatedFields out;
  validator(limit).check(query, req, out);
  if (out.status != 0) (void)listener::RequestValidator::problem_body(out);
  // Refused for depth exactly when the text nests deeper than the limit.
  const bool too_deep = json_nests_deeper_than(req.body, limit);
  const bool refused_for_depth = out.status == 422 && out.errors.size() == 1 && out.errors[0].field == "body" &&
                                 out.errors[0].message.rfind("nests deeper", 0) == 0;
  if (too_deep != refused_for_depth) __builtin_trap();
  handler_side(req.body, limit);
  return 0;
}
