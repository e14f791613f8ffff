#include "http/multipart.hpp"

#include <catch2/catch.hpp>
#include <string>

using edri::http::MultipartPart;
using edri::http::parse_multipart;

namespace {
const std::string kType = "multipart/form-data; boundary=BOUND";
}

TEST_CASE("multipart: fields and files, in order, as views into the body", "[multipart]") {
  const std::string body =
      "--BOUND\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\none\r\n"
      "--BOUND\r\ncontent-disposition: form-data; name=b; filename=\"x;y.txt\"\r\nContent-Type: text/plain\r\n\r\n"
      "two\r\nlines\r\n"
      "--BOUND\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n"
      "--BOUND--\r\n";
  std::vector<MultipartPart> parts;
  REQUIRE(parse_multipart(kType, body, parts).empty());
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].name == "a");
  CHECK(parts[0].data == "one");
  CHECK(parts[0].filename.empty());
  CHECK(parts[1].name == "b");
  CHECK(parts[1].filename == "x;y.txt");
  CHECK(parts[1].content_type == "text/plain");
  CHECK(parts[1].data == "two\r\nlines");
  CHECK(parts[2].name == "empty");
  CHECK(parts[2].data.empty());
  CHECK(parts[0].data.data() >= body.data());  // a view, not a copy
}

TEST_CASE("multipart: a preamble, a quoted boundary and a part that holds the boundary's prefix", "[multipart]") {
  const std::string body =
      "preamble to ignore\r\n--b-1\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n--b-\r\n--b-2\r\n--b-1--";
  std::vector<MultipartPart> parts;
  REQUIRE(parse_multipart("Multipart/Form-Data; charset=utf-8; boundary=\"b-1\"", body, parts).empty());
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].data == "--b-\r\n--b-2");
}

TEST_CASE("multipart: malformed bodies are refused with a reason", "[multipart]") {
  std::vector<MultipartPart> parts;
  CHECK(parse_multipart("multipart/form-data", "--x\r\n", parts).find("boundary") != std::string::npos);
  CHECK(parse_multipart(kType, "no delimiter here", parts).find("delimiter") != std::string::npos);
  CHECK(parse_multipart(kType, "--BOUND\r\nContent-Disposition: form-data; name=a\r\n\r\nunterminated", parts)
            .find("closing delimiter") != std::string::npos);
  CHECK(parse_multipart(kType, "--BOUND\r\nX-Other: 1\r\n\r\ndata\r\n--BOUND--", parts).find("name") !=
        std::string::npos);
  CHECK(parse_multipart(kType, "--BOUND\r\nContent-Disposition: attachment; name=a\r\n\r\nd\r\n--BOUND--", parts)
            .find("form-data") != std::string::npos);
  std::string many;
  for (int i = 0; i < 5; ++i) many += "--BOUND\r\nContent-Disposition: form-data; name=p\r\n\r\nv\r\n";
  CHECK(parse_multipart(kType, many + "--BOUND--", parts, 4).find("more than 4 parts") != std::string::npos);
  CHECK(parse_multipart(kType, many + "--BOUND--", parts, 5).empty());
}
