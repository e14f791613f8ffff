// A WebSocket message as the listener handles it: measured for nesting
// depth (EDRI_MAX_JSON_DEPTH), parsed as JSON, its "command" looked up, its
// fields checked against a command's declared fields (query fields may come
// as JSON scalars), the 422 problem written when they fail, and the message
// re-serialized as the body it becomes.
//
// Input: byte 0 picks the depth limit (1..200), bytes 1-2 a depth D (up to
// about 200,000); the rest is the message itself when D is 0, else the
// innermost value of {"command":"echo","value":[[...D...]]}. Whatever
// passes the depth check is parsed and walked (iteratively) to prove the
// check right: a parsed document deeper than the limit traps.
#include <cstddef>
#include <cstdint>
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

std::string message_of(const std::uint8_t* data, std::size_t size, std::size_t depth) {
  const std::string_view rest(reinterpret_cast<const char*>(data), size);
  if (depth == 0) return std::string(rest);
  std::string m = R"({"command":"echo","value":)";
  m.append(depth, '[').append(rest).append(depth, ']').append("}");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const listener::RequestValidator validator({
      Field("title").string().length(1, 200),
      Field("body").string().length(0, 65536).optional(),
      Field("limit").integer().range(1, 100).in_query().default_to(20),
      Field("flag").boolean().optional(),
      Field("tags").array().optional(),
      Field("x-trace").string().in_header().optional(),
  });
  static const http::HttpRequest upgrade = [] {
    http::HttpRequest r;
    r.headers = {{"x-trace", "t"}, {"cookie", "a=b"}};
    return r;
  }();
  if (size < 3) return 0;
  const std::size_t limit = 1 + data[0] % 200;
  const std::size_t wrap = static_cast<std::size_t>(data[1] << 8 | data[2]) * 3;
  const std::string text = message_of(data + 3, size - 3, wrap);

  listener::ValidatedFields out;
  if (!listener::RequestValidator::depth_ok(text, limit, "message", out)) {
    if (json_depth(text) <= limit) __builtin_trap();  // refused, yet within the limit
    (void)listener::RequestValidator::problem_body(out);
    return 0;
  }
  auto msg = nlohmann::json::parse(text, nullptr, false);
  if (msg.is_discarded()) return 0;
  if (dom_depth(msg) > limit) __builtin_trap();  // the check let a deeper document through
  if (!msg.is_object()) return 0;
  const auto command = msg.find("command");
  if (command == msg.end() || !command->is_string()) return 0;
  msg.erase(command);
  validator.check_message(msg, upgrade, out);
  if (out.status != 0) (void)listener::RequestValidator::problem_body(out);
  // What the listener sends on: the body, and a subscription's filter.
  (void)msg.dump();
  if (const auto filter = msg.find("filter"); filter != msg.end()) (void)filter->dump();
  return 0;
}
