// AddressRange: an IP address or a CIDR block ("10.0.0.0/8", "::1",
// "2001:db8::/32"), for the proxies whose word on the client's address is
// trusted (EDRI_TRUSTED_PROXIES). IPv4 is kept as IPv4-mapped IPv6, so one
// comparison serves both families.
#pragma once

#include <netinet/in.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edri {

class AddressRange {
 public:
  // "a.b.c.d", "a.b.c.d/n" (n ≤ 32), an IPv6 address, "v6/n" (n ≤ 128);
  // nullopt for anything else.
  static std::optional<AddressRange> parse(std::string_view text);
  bool contains(const in6_addr& address) const;

 private:
  in6_addr base_{};
  unsigned prefix_bits_ = 128;
};

// `text` as an address (IPv4 as IPv4-mapped IPv6), or nullopt.
std::optional<in6_addr> parse_ip(std::string_view text);

// The ranges of `texts` that parse (EDRI_TRUSTED_PROXIES' parser refused
// the others when the setting was read).
std::vector<AddressRange> parse_ranges(const std::vector<std::string>& texts);

// Whether any of `ranges` holds `address`.
bool any_contains(const std::vector<AddressRange>& ranges, const in6_addr& address);

}  // namespace edri
