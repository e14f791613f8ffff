// Gate: the plugins' middleware, run once for every call a client makes
// before it becomes an event, whatever the protocol (docs/security.md):
// an HTTP/1.1 or HTTP/2 request (the WebSocket handshake and a
// Server-Sent Events subscription included), each WebSocket command, each
// gRPC call and each live-stream subscription. Each front describes its
// call (a Call) and answers a refusal in its own terms; the Gate itself
// never asks which protocol runs. It also says who the client is: its
// address (the socket's peer, or what a trusted proxy named), and the
// principal middleware named, written into the event's envelope.
#pragma once

#include <netinet/in.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <edri/plugin.hpp>

#include "envelope/envelope.hpp"
#include "http/request_parser.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/address_range.hpp"
#include "runtime/config.hpp"

namespace edri::listener {

class Gate {
 public:
  // One call, as its front sees it.
  struct Call {
    std::string_view protocol;  // "http/1.1", "h2", "websocket", "grpc"
    Method method = Method::Get;
    std::string_view path;
    std::string_view query;
    std::string_view event;                   // the event it becomes; empty: none (a 404, a file, a handshake)
    const http::HttpRequest* head = nullptr;  // its headers: the request's, the handshake's, the call's metadata
    std::string_view client;                  // client_address() of it
    std::string_view body;
  };

  Gate(const Config& config, const plugin::PluginSet& plugins);

  // Whether any middleware looks at requests: none, and admit() is never
  // needed (the fast path).
  bool empty() const { return middlewares_.empty(); }

  // Runs, lowest order first, every middleware that applies to `call`;
  // the first refusal, or nullopt. What they add (header lines, the
  // principal) is in `admission`, which the caller cleared.
  std::optional<Response> admit(const Call& call, Admission& admission);

  // The client's address: the socket's `peer` ("unix" for a Unix socket),
  // or, where the peer is a trusted proxy, the address its
  // X-Forwarded-For (or Forwarded) names. A view into `peer` or `head`.
  std::string_view client_address(std::string_view peer, const http::HttpRequest& head) const;

  // The Client, Protocol, Principal and Claims sections of a call's event;
  // `claims_text` keeps the claims' JSON until the writer wrote.
  static void write_identity(envelope::EnvelopeWriter& w, const Call& call, const Admission& admission,
                             std::string& claims_text);

 private:
  bool applies(const MiddlewareDecl& m, const Call& call) const;
  void fill_view(const Call& call);
  // The client a header of trusted proxies names, from the right: the
  // first address that is not itself a trusted proxy.
  std::optional<std::string_view> forwarded_for(const http::HttpRequest& head) const;

  bool production_;
  std::vector<MiddlewareDecl> middlewares_;  // those with on_request
  std::vector<AddressRange> trusted_;
  Request view_;  // what middleware sees; reused
};

}  // namespace edri::listener
