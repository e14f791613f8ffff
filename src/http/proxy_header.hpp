// The PROXY protocol header (HAProxy's, version 1 text and version 2
// binary) that a trusted proxy sends before anything else on a
// connection, to name the client it relays (docs/security.md). Parsing is
// a pure function of the bytes read so far: no I/O, so the listener can
// peek at the socket, ask, and take exactly the header's bytes off it,
// leaving what follows (a request, a TLS ClientHello) where it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edri::http {

// Version 1's own bound: the longest line the specification allows, CRLF
// included.
inline constexpr std::size_t kProxyV1Max = 107;
// What a header may take at most, version 2 included (16 bytes and its
// length, TLVs and all): its length field allows 64 KiB, but what the
// listener holds while it waits is bounded by this; a longer header is
// refused. Proxies send far less (addresses and a few TLVs).
inline constexpr std::size_t kProxyHeaderMax = 4096;

struct ProxyHeader {
  enum class Status : std::uint8_t {
    NeedMore,  // a proper prefix of a header: read more (never at kProxyHeaderMax bytes)
    Invalid,   // not a header, or a malformed one
    Parsed,    // a whole header of `consumed` bytes
  };
  Status status = Status::NeedMore;
  std::size_t consumed = 0;
  // The client's address, as Request::client_address shows it; none where
  // the header names no client (v1 UNKNOWN, v2 LOCAL, a v2 family other
  // than TCP over IPv4 or IPv6): the socket's peer stands.
  std::optional<std::string> source;
  const char* error = "";  // Invalid: why, for the log
};

// The header at the start of `input`.
ProxyHeader parse_proxy_header(std::string_view input);

// An address as Request::client_address shows it: IPv4 dotted (an
// IPv4-mapped IPv6 address too), IPv6 compressed. `bytes`: 4 of them for
// AF_INET, 16 for AF_INET6, in network order.
std::string address_text(int family, const void* bytes);

}  // namespace edri::http
