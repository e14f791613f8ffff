// A WebSocket message as the listener handles it: parsed as JSON, its
// "command" looked up, its fields checked against a command's declared
// fields (query fields may come as JSON scalars), and the 422 problem
// written when they fail.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/request_parser.hpp"
#include "listener/request_validator.hpp"

using namespace edri;

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
  auto msg = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (msg.is_discarded() || !msg.is_object()) return 0;
  const auto command = msg.find("command");
  if (command == msg.end() || !command->is_string()) return 0;
  msg.erase(command);
  listener::ValidatedFields out;
  validator.check_message(msg, upgrade, out);
  if (out.status != 0) (void)listener::RequestValidator::problem_body(out);
  return 0;
}
