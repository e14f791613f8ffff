// The PROXY protocol header (http/proxy_header.hpp): versions 1 and 2, what
// each names, what is refused, and that a header cut anywhere asks for
// more rather than failing.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "http/proxy_header.hpp"

using edri::http::kProxyHeaderMax;
using edri::http::parse_proxy_header;
using edri::http::ProxyHeader;
using Status = ProxyHeader::Status;

namespace {

const std::string kSignature("\r\n\r\n\0\r\nQUIT\n", 12);

std::string be16(std::size_t n) { return {static_cast<char>(n >> 8), static_cast<char>(n & 0xff)}; }

// A v2 header: version and command byte, family byte, and what follows.
std::string v2(unsigned char ver_cmd, unsigned char family, const std::string& rest) {
  return kSignature + static_cast<char>(ver_cmd) + static_cast<char>(family) + be16(rest.size()) + rest;
}

std::string packed(int family, const char* text) {
  unsigned char bytes[16];
  REQUIRE(::inet_pton(family, text, bytes) == 1);
  return std::string(reinterpret_cast<const char*>(bytes), family == AF_INET ? 4 : 16);
}

// Source and destination addresses and ports, as v2's address block has them.
std::string block(int family, const char* source, const char* destination) {
  return packed(family, source) + packed(family, destination) + be16(51234) + be16(443);
}

// Bytes as text for a failure's message: controls and high bytes as \xNN.
std::string printable(const std::string& bytes) {
  std::string out;
  for (const unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  }
  return out;
}

std::string tlv(unsigned char type, const std::string& value) {
  return static_cast<char>(type) + be16(value.size()) + value;
}

const std::string kV1Tcp4 = "PROXY TCP4 192.0.2.10 198.51.100.1 56324 443\r\n";
const std::string kV1Tcp6 = "PROXY TCP6 2001:db8:0:0:0:0:0:7 2001:db8::1 56324 443\r\n";
const std::string kV1Unknown = "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n";

std::vector<std::string> valid_headers() {
  return {kV1Tcp4,
          kV1Tcp6,
          kV1Unknown,
          "PROXY UNKNOWN\r\n",
          v2(0x21, 0x11, block(AF_INET, "203.0.113.7", "10.0.0.1")),
          v2(0x21, 0x21, block(AF_INET6, "2001:db8::42", "2001:db8::1") + tlv(0x01, "h2") + tlv(0x04, "")),
          v2(0x20, 0x00, ""),
          v2(0x21, 0x31, std::string(216, '\0'))};
}

}  // namespace

TEST_CASE("proxy header: v1 TCP4 names the client and takes exactly its own bytes", "[proxy_header]") {
  const auto h = parse_proxy_header(kV1Tcp4 + "GET / HTTP/1.1\r\n\r\n");
  REQUIRE(h.status == Status::Parsed);
  CHECK(h.consumed == kV1Tcp4.size());
  CHECK(h.source == "192.0.2.10");
}

TEST_CASE("proxy header: v1 TCP6 is shown compressed, an IPv4-mapped one dotted", "[proxy_header]") {
  auto h = parse_proxy_header(kV1Tcp6);
  REQUIRE(h.status == Status::Parsed);
  CHECK(h.source == "2001:db8::7");
  h = parse_proxy_header("PROXY TCP6 ::ffff:192.0.2.9 ::1 1 2\r\n");
  REQUIRE(h.status == Status::Parsed);
  CHECK(h.source == "192.0.2.9");
}

TEST_CASE("proxy header: v1 UNKNOWN keeps the peer, with or without addresses", "[proxy_header]") {
  for (const auto& header : {kV1Unknown, std::string("PROXY UNKNOWN\r\n")}) {
    const auto h = parse_proxy_header(header + "\x16\x03\x01");
    REQUIRE(h.status == Status::Parsed);
    CHECK(h.consumed == header.size());
    CHECK_FALSE(h.source);
  }
}

TEST_CASE("proxy header: v1 of 107 bytes is read, and one longer is refused", "[proxy_header]") {
  std::string longest = "PROXY UNKNOWN ";
  longest += std::string(edri::http::kProxyV1Max - longest.size() - 2, 'x') + "\r\n";
  REQUIRE(longest.size() == 107);
  const auto h = parse_proxy_header(longest);
  CHECK(h.status == Status::Parsed);
  CHECK(h.consumed == 107);
  std::string too_long = longest;
  too_long.insert(too_long.begin() + 20, 'x');
  CHECK(parse_proxy_header(too_long).status == Status::Invalid);
  CHECK(parse_proxy_header(too_long.substr(0, 106)).status == Status::NeedMore);
  CHECK(parse_proxy_header(too_long.substr(0, 107)).status == Status::Invalid);
}

TEST_CASE("proxy header: v1 bad ports, addresses, spacing and protocols are refused", "[proxy_header]") {
  for (const char* line : {
           "PROXY TCP4 192.0.2.1 192.0.2.2 65536 443\r\n",  // port out of range
           "PROXY TCP4 192.0.2.1 192.0.2.2 -1 443\r\n",
           "PROXY TCP4 192.0.2.1 192.0.2.2 80 +443\r\n",
           "PROXY TCP4 192.0.2.1 192.0.2.2 80 4a3\r\n",
           "PROXY TCP4 192.0.2.1 192.0.2.2 80 99999999999999999999\r\n",
           "PROXY TCP4 192.0.2.1 192.0.2.2 80\r\n",        // a field missing
           "PROXY TCP4 192.0.2.1 192.0.2.2 80 443 7\r\n",  // one too many
           "PROXY TCP4 192.0.2.1  192.0.2.2 80 443\r\n",   // two spaces
           "PROXY TCP4 192.0.2.1 192.0.2.2 80 443 \r\n",   // a trailing space
           "PROXY TCP4 2001:db8::1 192.0.2.2 80 443\r\n",  // an IPv6 address for TCP4
           "PROXY TCP6 192.0.2.1 2001:db8::1 80 443\r\n",  // an IPv4 one for TCP6
           "PROXY TCP4 192.0.2.256 192.0.2.2 80 443\r\n",  // not an address
           "PROXY TCP4 localhost 192.0.2.2 80 443\r\n",    // a name
           "PROXY UDP4 192.0.2.1 192.0.2.2 80 443\r\n",    // not a protocol of v1
           "PROXY tcp4 192.0.2.1 192.0.2.2 80 443\r\n",    // case matters
           "PROXY TCP4 192.0.2.1 192.0.2.2 80 443\n\r\n",  // a bare LF
           "PROXY \r\n",
           "PROXY\r\n",
       }) {
    INFO(line);
    const auto h = parse_proxy_header(line);
    CHECK(h.status == Status::Invalid);
    CHECK(std::string(h.error).size() > 0);
  }
}

TEST_CASE("proxy header: v2 TCP4 and TCP6 name the client, and TLVs are skipped", "[proxy_header]") {
  const auto tcp4 = v2(0x21, 0x11, block(AF_INET, "203.0.113.7", "10.0.0.1") + tlv(0x05, "unique-id"));
  auto h = parse_proxy_header(tcp4 + "GET / HTTP/1.1\r\n");
  REQUIRE(h.status == Status::Parsed);
  CHECK(h.consumed == tcp4.size());
  CHECK(h.source == "203.0.113.7");
  const auto tcp6 = v2(0x21, 0x21, block(AF_INET6, "2001:db8:0::42", "2001:db8::1") + tlv(0x01, "h2"));
  h = parse_proxy_header(tcp6);
  REQUIRE(h.status == Status::Parsed);
  CHECK(h.consumed == tcp6.size());
  CHECK(h.source == "2001:db8::42");
  h = parse_proxy_header(v2(0x21, 0x21, block(AF_INET6, "::ffff:198.51.100.3", "::1")));
  CHECK(h.source == "198.51.100.3");
}

TEST_CASE("proxy header: v2 LOCAL, UNSPEC, UNIX, UDP and unknown families keep the peer", "[proxy_header]") {
  const auto addresses = block(AF_INET, "203.0.113.7", "10.0.0.1");
  for (const auto& header :
       {v2(0x20, 0x11, addresses),  // LOCAL: its addresses are not the client's
        v2(0x20, 0x00, ""), v2(0x21, 0x00, ""), v2(0x21, 0x00, "ignored"), v2(0x21, 0x31, std::string(216, '/')),
        v2(0x21, 0x12, addresses), v2(0x21, 0x22, block(AF_INET6, "2001:db8::42", "::1")), v2(0x21, 0x41, addresses)}) {
    INFO(printable(header));
    const auto h = parse_proxy_header(header);
    REQUIRE(h.status == Status::Parsed);
    CHECK(h.consumed == header.size());
    CHECK_FALSE(h.source);
  }
}

TEST_CASE("proxy header: v2 with a bad version, command, address block or TLV is refused", "[proxy_header]") {
  const auto addresses = block(AF_INET, "203.0.113.7", "10.0.0.1");
  for (const auto& header : {v2(0x11, 0x11, addresses),                                  // version 1 in v2's form
                             v2(0x31, 0x11, addresses),                                  // version 3
                             v2(0x22, 0x11, addresses),                                  // command 2
                             v2(0x21, 0x11, addresses.substr(0, 11)),                    // an address block too short
                             v2(0x21, 0x21, addresses),                                  // IPv4's block for IPv6
                             v2(0x21, 0x11, addresses + tlv(0x01, "h2").substr(0, 4)),   // a TLV past the end
                             v2(0x21, 0x11, addresses + std::string("\x01\x00", 2))}) {  // half a TLV head
    INFO(printable(header));
    CHECK(parse_proxy_header(header).status == Status::Invalid);
  }
}

TEST_CASE("proxy header: v2 longer than the 4 KiB held is refused from its length alone", "[proxy_header]") {
  const auto fits = v2(0x21, 0x11, block(AF_INET, "203.0.113.7", "10.0.0.1") + tlv(0x04, std::string(4065, '\0')));
  REQUIRE(fits.size() == kProxyHeaderMax);
  CHECK(parse_proxy_header(fits).status == Status::Parsed);
  const auto over = v2(0x21, 0x11, block(AF_INET, "203.0.113.7", "10.0.0.1") + tlv(0x04, std::string(4066, '\0')));
  CHECK(parse_proxy_header(over.substr(0, 16)).status == Status::Invalid);
  CHECK(parse_proxy_header(v2(0x21, 0x11, std::string(65535, '\0')).substr(0, 16)).status == Status::Invalid);
}

TEST_CASE("proxy header: every header cut short at any byte needs more, whole it is read", "[proxy_header]") {
  for (const auto& header : valid_headers()) {
    INFO(printable(header));
    for (std::size_t n = 0; n < header.size(); ++n) {
      INFO("cut at " << n);
      CHECK(parse_proxy_header(header.substr(0, n)).status == Status::NeedMore);
    }
    const auto whole = parse_proxy_header(header);
    CHECK(whole.status == Status::Parsed);
    CHECK(whole.consumed == header.size());
  }
}

TEST_CASE("proxy header: garbage and other protocols are refused at the first byte that differs", "[proxy_header]") {
  CHECK(parse_proxy_header("").status == Status::NeedMore);
  for (const std::string& input :
       {std::string("GET / HTTP/1.1\r\n"), std::string("PRI * HTTP/2.0\r\n"), std::string("\x16\x03\x01\x02\x00", 5),
        std::string("PROXZ"), std::string("P\0", 2), std::string("\r\n\r\n\0\r\nQUIT\r", 12), std::string("\r\r"),
        std::string("proxy ")}) {
    INFO(printable(input));
    CHECK(parse_proxy_header(input).status == Status::Invalid);
  }
  CHECK(parse_proxy_header("PRO").status == Status::NeedMore);
  CHECK(parse_proxy_header(kSignature.substr(0, 7)).status == Status::NeedMore);
}

TEST_CASE("proxy header: addresses are shown as the socket's peers are", "[proxy_header]") {
  const auto v4 = packed(AF_INET, "192.0.2.1");
  CHECK(edri::http::address_text(AF_INET, v4.data()) == "192.0.2.1");
  const auto v6 = packed(AF_INET6, "2001:0db8:0000:0000:0000:0000:0000:0001");
  CHECK(edri::http::address_text(AF_INET6, v6.data()) == "2001:db8::1");
  const auto mapped = packed(AF_INET6, "::ffff:10.1.2.3");
  CHECK(edri::http::address_text(AF_INET6, mapped.data()) == "10.1.2.3");
}
