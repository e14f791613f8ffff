// The one rule for a header a plugin adds (edri/response.hpp,
// is_valid_header), byte by byte, at compile time and at run time.
#include <catch2/catch.hpp>

#include <string>

#include <edri/response.hpp>

static_assert(edri::is_valid_header("X-Request-Id", "9ce876de-0000-000000000001"));
static_assert(!edri::is_valid_header("X-Split", "a\r\nSet-Cookie: b"));
static_assert(!edri::is_valid_header("", "empty name"));

TEST_CASE("a header with CR, LF or NUL anywhere, or a ':' in its name, is refused", "[response]") {
  const std::string name = "X-Name", value = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  int wrong = 0;
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const bool breaks = ch == '\r' || ch == '\n' || ch == '\0';
    for (std::size_t at = 0; at <= value.size(); ++at) {
      std::string v = value;
      v.insert(at, 1, ch);
      if (edri::is_valid_header(name, v) == breaks) ++wrong;
    }
    for (std::size_t at = 0; at <= name.size(); ++at) {
      std::string n = name;
      n.insert(at, 1, ch);
      if (edri::is_valid_header(n, value) == (breaks || ch == ':')) ++wrong;
    }
  }
  CHECK(wrong == 0);
  edri::ResponseHeaders lines;
  CHECK_FALSE(lines.add("X-Bad", "a\nb"));
  CHECK(lines.add("X-Good", "a b"));
  CHECK(lines.lines() == "X-Good: a b\r\n");
}
