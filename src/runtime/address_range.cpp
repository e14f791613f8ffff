#include "runtime/address_range.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>
#include <string>

namespace edri {

std::optional<in6_addr> parse_ip(std::string_view text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);  // inet_pton wants a terminated string
  in6_addr out{};
  in_addr v4{};
  if (::inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    out.s6_addr[10] = 0xff;
    out.s6_addr[11] = 0xff;
    std::memcpy(out.s6_addr + 12, &v4, 4);
    return out;
  }
  if (::inet_pton(AF_INET6, s.c_str(), &out) == 1) return out;
  return std::nullopt;
}

std::optional<AddressRange> AddressRange::parse(std::string_view text) {
  const auto slash = text.find('/');
  const auto base = parse_ip(text.substr(0, slash));
  if (!base) return std::nullopt;
  // A mapped IPv4 address counts its prefix within the last 32 bits.
  const bool v4 = text.substr(0, slash).find(':') == std::string_view::npos;
  unsigned bits = v4 ? 32 : 128;
  if (slash != std::string_view::npos) {
    const auto n = text.substr(slash + 1);
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), bits);
    if (ec != std::errc() || end != n.data() + n.size() || n.empty() || bits > (v4 ? 32u : 128u)) return std::nullopt;
  }
  AddressRange r;
  r.base_ = *base;
  r.prefix_bits_ = v4 ? 96 + bits : bits;
  return r;
}

bool AddressRange::contains(const in6_addr& address) const {
  unsigned left = prefix_bits_;
  for (int i = 0; i < 16 && left > 0; ++i) {
    const unsigned bits = left >= 8 ? 8 : left;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - bits));
    if ((address.s6_addr[i] & mask) != (base_.s6_addr[i] & mask)) return false;
    left -= bits;
  }
  return true;
}

std::vector<AddressRange> parse_ranges(const std::vector<std::string>& texts) {
  std::vector<AddressRange> out;
  for (const auto& text : texts)
    if (auto r = AddressRange::parse(text)) out.push_back(*r);
  return out;
}

bool any_contains(const std::vector<AddressRange>& ranges, const in6_addr& address) {
  for (const auto& r : ranges)
    if (r.contains(address)) return true;
  return false;
}

}  // namespace edri
