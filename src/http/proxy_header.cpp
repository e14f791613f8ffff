#include "http/proxy_header.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <vector>

namespace edri::http {

namespace {

using Status = ProxyHeader::Status;

constexpr std::string_view kV1Prefix = "PROXY ";
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};
constexpr std::size_t kV2Fixed = 16;  // signature, version and command, family, length
// Version 2's family byte for the two it reads a client from: TCP over
// IPv4, TCP over IPv6 (the address block's size follows each).
constexpr std::uint8_t kTcp4 = 0x11, kTcp6 = 0x21;
constexpr std::size_t kTcp4Block = 12, kTcp6Block = 36;

ProxyHeader need_more() { return {}; }
ProxyHeader invalid(const char* why) { return {Status::Invalid, 0, std::nullopt, why}; }
ProxyHeader parsed(std::size_t consumed, std::optional<std::string> source) {
  return {Status::Parsed, consumed, std::move(source), ""};
}

// Whether `input` is `expected` as far as it goes: a header may still be
// arriving, but a byte that differs already rules it out.
bool agrees(std::string_view input, std::string_view expected) {
  const auto n = std::min(input.size(), expected.size());
  return input.substr(0, n) == expected.substr(0, n);
}

std::uint8_t byte(std::string_view s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }
std::size_t be16(std::string_view s, std::size_t i) { return (std::size_t{byte(s, i)} << 8) | byte(s, i + 1); }

// The words of a v1 line, split at single spaces; an empty word (two
// spaces, a space at an end) makes the line invalid, so it is kept.
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto space = line.find(' ');
    out.push_back(line.substr(0, space));
    if (space == std::string_view::npos) return out;
    line.remove_prefix(space + 1);
  }
}

// A v1 address of `family` (inet_pton's text forms), or nullopt.
std::optional<std::string> v1_address(int family, std::string_view text) {
  char terminated[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof terminated) return std::nullopt;
  std::memcpy(terminated, text.data(), text.size());
  terminated[text.size()] = '\0';
  unsigned char bytes[sizeof(in6_addr)];
  if (::inet_pton(family, terminated, bytes) != 1) return std::nullopt;
  return address_text(family, bytes);
}

// A v1 port: decimal, 0..65535.
bool v1_port(std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty() && value <= 65535;
}

// "TCP4 src dst sport dport", "TCP6 ...", or "UNKNOWN" and anything (the
// proxy could not tell: the peer stands).
ProxyHeader v1_line(std::string_view line, std::size_t consumed) {
  if (line == "UNKNOWN" || line.substr(0, 8) == "UNKNOWN ") return parsed(consumed, std::nullopt);
  const auto w = words(line);
  const int family = w[0] == "TCP4" ? AF_INET : w[0] == "TCP6" ? AF_INET6 : AF_UNSPEC;
  if (family == AF_UNSPEC) return invalid("v1: the protocol is not TCP4, TCP6 or UNKNOWN");
  if (w.size() != 5) return invalid("v1: not five fields separated by single spaces");
  auto source = v1_address(family, w[1]);
  if (!source || !v1_address(family, w[2])) return invalid("v1: an address is not one of its protocol");
  if (!v1_port(w[3]) || !v1_port(w[4])) return invalid("v1: a port is not a number in 0..65535");
  return parsed(consumed, std::move(source));
}

ProxyHeader parse_v1(std::string_view input) {
  const auto end = input.substr(0, kProxyV1Max).find("\r\n");
  if (end == std::string_view::npos)
    return input.size() >= kProxyV1Max ? invalid("v1: no CRLF within 107 bytes") : need_more();
  return v1_line(input.substr(kV1Prefix.size(), end - kV1Prefix.size()), end + 2);
}

// TLVs (type, 16-bit length, value) fill what follows the addresses: their
// values are not read, but each must end within the header.
bool tlvs_fit(std::string_view tlvs) {
  while (!tlvs.empty()) {
    if (tlvs.size() < 3 || tlvs.size() < 3 + be16(tlvs, 1)) return false;
    tlvs.remove_prefix(3 + be16(tlvs, 1));
  }
  return true;
}

// The client a v2 PROXY command names: TCP over IPv4 or IPv6 alone; any
// other family (UNSPEC, UNIX, UDP, values not defined yet) keeps the peer,
// as HAProxy does.
ProxyHeader v2_source(std::uint8_t family, std::string_view block, std::size_t consumed) {
  if (family != kTcp4 && family != kTcp6) return parsed(consumed, std::nullopt);
  const std::size_t addresses = family == kTcp4 ? kTcp4Block : kTcp6Block;
  if (block.size() < addresses) return invalid("v2: the address block is shorter than its family's");
  if (!tlvs_fit(block.substr(addresses))) return invalid("v2: a TLV runs past the header");
  return parsed(consumed, address_text(family == kTcp4 ? AF_INET : AF_INET6, block.data()));
}

ProxyHeader parse_v2(std::string_view input) {
  if (input.size() < kV2Fixed) return need_more();
  const unsigned version = byte(input, 12) >> 4, command = byte(input, 12) & 0x0f;
  if (version != 2) return invalid("v2: the version is not 2");
  if (command > 1) return invalid("v2: the command is neither LOCAL nor PROXY");
  const std::size_t total = kV2Fixed + be16(input, 14);
  if (total > kProxyHeaderMax) return invalid("v2: longer than the 4096 bytes held");
  if (input.size() < total) return need_more();
  // LOCAL: the proxy speaking for itself (a health check); its addresses,
  // if any, are not the client's.
  if (command == 0) return parsed(total, std::nullopt);
  return v2_source(byte(input, 13), input.substr(kV2Fixed, total - kV2Fixed), total);
}

}  // namespace

ProxyHeader parse_proxy_header(std::string_view input) {
  if (input.empty()) return need_more();
  if (agrees(input, kV2Signature)) return parse_v2(input);
  if (agrees(input, kV1Prefix)) return parse_v1(input);
  return invalid("not a PROXY protocol header");
}

std::string address_text(int family, const void* bytes) {
  if (family == AF_INET6) {
    in6_addr a;
    std::memcpy(&a, bytes, sizeof a);  // `bytes` may sit anywhere in a header
    if (IN6_IS_ADDR_V4MAPPED(&a)) return address_text(AF_INET, a.s6_addr + 12);
  }
  char text[INET6_ADDRSTRLEN] = "";
  ::inet_ntop(family, bytes, text, sizeof text);
  return text;
}

}  // namespace edri::http
