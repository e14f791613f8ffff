// AddressRange: EDRI_TRUSTED_PROXIES' addresses and CIDR blocks.
#include <catch2/catch.hpp>

#include "runtime/address_range.hpp"

using edri::AddressRange;
using edri::parse_ip;

TEST_CASE("addresses and CIDR blocks of both families", "[address_range]") {
  const auto net10 = AddressRange::parse("10.0.0.0/8");
  REQUIRE(net10);
  CHECK(net10->contains(*parse_ip("10.200.3.4")));
  CHECK_FALSE(net10->contains(*parse_ip("11.0.0.1")));
  CHECK_FALSE(net10->contains(*parse_ip("::a00:1")));  // IPv4-compatible IPv6 is not IPv4
  const auto one = AddressRange::parse("127.0.0.1");
  REQUIRE(one);
  CHECK(one->contains(*parse_ip("127.0.0.1")));
  CHECK_FALSE(one->contains(*parse_ip("127.0.0.2")));
  const auto odd = AddressRange::parse("192.168.1.128/25");
  REQUIRE(odd);
  CHECK(odd->contains(*parse_ip("192.168.1.200")));
  CHECK_FALSE(odd->contains(*parse_ip("192.168.1.100")));
  const auto v6 = AddressRange::parse("2001:db8::/32");
  REQUIRE(v6);
  CHECK(v6->contains(*parse_ip("2001:db8:ffff::1")));
  CHECK_FALSE(v6->contains(*parse_ip("2001:db9::1")));
  CHECK(AddressRange::parse("::1")->contains(*parse_ip("::1")));
  CHECK(AddressRange::parse("0.0.0.0/0")->contains(*parse_ip("8.8.8.8")));
}

TEST_CASE("what is not an address or block is refused", "[address_range]") {
  for (const char* bad :
       {"", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/8x", "::1/129", "example.com", "10.0.0", "1.2.3.4/-1", "[::1]"})
    CHECK_FALSE(AddressRange::parse(bad));
  CHECK_FALSE(parse_ip("1.2.3.4:80"));
}
