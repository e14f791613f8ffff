// JSON body binding: a request body (and a query string, taken from the
// first bytes) checked against declared body and query fields, as the
// listener does before a request leaves it; the problem body for a failure.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/request_parser.hpp"
#include "listener/request_validator.hpp"

using namespace edri;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const listener::RequestValidator validator({
      Field("name").string().length(1, 64),
      Field("count").integer().range(0, 1000000),
      Field("ratio").number().range(-1, 1).optional(),
      Field("id").uuid().optional(),
      Field("meta").object().optional(),
      Field("page").integer().range(1, 100).in_query().default_to(1),
      Field("q").string().in_query().optional(),
  });
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto cut = input.find('\n');
  const auto query = cut == std::string_view::npos ? std::string_view() : input.substr(0, cut);
  http::HttpRequest req;
  req.method = HTTP_POST;
  req.headers = {{"content-type", "application/json"}};
  req.body = std::string(cut == std::string_view::npos ? input : input.substr(cut + 1));
  listener::ValidatedFields out;
  validator.check(query, req, out);
  if (out.status != 0) (void)listener::RequestValidator::problem_body(out);
  return 0;
}
