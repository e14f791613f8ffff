// The PROXY protocol header (http/proxy_header.hpp): arbitrary bytes as the
// start of a trusted proxy's connection. Whatever they are, the answer
// stays within the bounds the listener relies on: it never needs more
// than kProxyHeaderMax bytes (what the listener peeks at once); a header
// it reads lies within the input and the bound, and names an address
// that reads back as one; every prefix of that header needs more (a
// header split over reads is read once whole), and the bytes after it
// change nothing; input refused stays refused however it goes on.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/proxy_header.hpp"

namespace {

using namespace edri::http;
using Status = ProxyHeader::Status;

bool is_address(const std::string& text) {
  unsigned char bytes[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, text.c_str(), bytes) == 1 || ::inet_pton(AF_INET6, text.c_str(), bytes) == 1;
}

void check_parsed(std::string_view input, const ProxyHeader& h) {
  if (h.consumed == 0 || h.consumed > input.size() || h.consumed > kProxyHeaderMax) __builtin_trap();
  if (h.source && !is_address(*h.source)) __builtin_trap();
  const auto exact = parse_proxy_header(input.substr(0, h.consumed));
  if (exact.status != Status::Parsed || exact.consumed != h.consumed || exact.source != h.source) __builtin_trap();
  if (parse_proxy_header(input.substr(0, h.consumed - 1)).status != Status::NeedMore) __builtin_trap();
  if (parse_proxy_header(input.substr(0, h.consumed / 2)).status != Status::NeedMore) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto h = parse_proxy_header(input);
  switch (h.status) {
    case Status::NeedMore:
      if (size >= kProxyHeaderMax) __builtin_trap();
      break;
    case Status::Invalid:
      if (*h.error == '\0' || parse_proxy_header(std::string(input) + "\r\n").status != Status::Invalid)
        __builtin_trap();
      break;
    case Status::Parsed: check_parsed(input, h); break;
  }
  return 0;
}
