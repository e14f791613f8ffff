// Response::json of a braced list of members (edri/json_members.hpp)
// against nlohmann, whose DOM that list used to become: for any bytes as
// keys and string values, both must give the same text, or both throw the
// same error (bytes that are not UTF-8). Input: up to three pieces split
// at '\n': a key, another key, and a string value; an integer is made
// from the input's length and first bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <edri/json_members.hpp>

namespace {

std::string_view next_piece(std::string_view& rest) {
  const auto end = rest.find('\n');
  const auto piece = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
  return piece;
}

std::int64_t number_from(std::string_view in) {
  std::int64_t n = 0;
  std::memcpy(&n, in.data(), std::min(in.size(), sizeof n));
  return in.size() % 2 ? n : n / -3;  // not -n: that overflows at the minimum
}

// The text, or the error's message behind a marker no JSON text starts with.
template <class Make>
std::string outcome(Make make) {
  try {
    return make();
  } catch (const nlohmann::json::exception& e) {
    return std::string("!") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const auto key = next_piece(rest);
  const auto other = next_piece(rest);
  const auto value = rest;
  const auto n = number_from({reinterpret_cast<const char*>(data), size});
  const auto ours = outcome([&] {
    return edri::json_object_text({{key, value}, {other, n}, {key, true}, {"list", {value, n}}, {other, nullptr}});
  });
  const auto dom = outcome([&] {
    return nlohmann::json({{key, value}, {other, n}, {key, true}, {"list", {value, n}}, {other, nullptr}}).dump();
  });
  if (ours != dom) __builtin_trap();
  return 0;
}
