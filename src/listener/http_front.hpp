// HttpFront: a parsed HTTP/1.1 request, from the listener's side. In order:
// the built-in endpoints, middleware (request id, CORS, the plugins'), the
// WebSocket upgrade, the route (or a static file), the edge checks of the
// route's declared fields, and the event that carries the request to its
// handler. Every answer it gives itself goes through the request's
// Exchange; a request that passes becomes an envelope for the broker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <edri/plugin.hpp>

#include "http/request_parser.hpp"
#include "http/route_table.hpp"
#include "listener/answers.hpp"
#include "listener/builtin_endpoints.hpp"
#include "listener/cors.hpp"
#include "listener/event_sender.hpp"
#include "listener/exchange.hpp"
#include "listener/request_validator.hpp"
#include "listener/static_files.hpp"
#include "listener/stream_hub.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "transport/blob_arena.hpp"

namespace edri::listener {

class WebSocketFront;

class HttpFront {
 public:
  // `validators`: one per event of `plugins` (null: no fields declared).
  HttpFront(const Config& config, const plugin::PluginSet& plugins,
            const std::vector<std::shared_ptr<const RequestValidator>>& validators, Answers& answers,
            EventSender& sender, WebSocketFront& websocket, StreamHub& streams, BuiltinEndpoints& builtins,
            const Cors* cors, transport::BlobArena* blobs, std::uint16_t listener_index);

  void dispatch(Connection& c, http::HttpRequest& req);
  std::size_t route_count() const { return routes_.size(); }

 private:
  struct Target {
    std::uint64_t event_type;
    std::shared_ptr<const RequestValidator> validator;  // null: no fields declared
    bool replay = false;                                // Registry::replay
    bool stream_events = false;                         // Registry::stream_events: the listener serves it
  };

  bool answer_builtin(Exchange& ex, Method method, std::string_view path);
  // GET on a Registry::stream_events path: the stream as Server-Sent Events.
  void answer_stream_events(Exchange& ex, const http::HttpRequest& req, const http::RouteTable::Match& m, bool head);
  // Built-in (request id, CORS) then plugin middleware; false when one of
  // them answered the request.
  bool run_request_middleware(Exchange& ex, const http::HttpRequest& req, Method method, std::string_view path,
                              std::string_view query);
  void add_request_id(const http::HttpRequest& req);
  void route(Exchange& ex, http::HttpRequest& req, Method method, std::string_view path, std::string_view query);
  bool answer_static(Exchange& ex, const http::HttpRequest& req, std::string_view path);
  void answer_not_allowed(Exchange& ex, const http::RouteTable::Match& m, Method method);
  // decoded_params_ from the match when any needs decoding; false when one
  // is malformed (answered 400).
  bool decode_params(Exchange& ex, const http::RouteTable::Match& m);
  // The route's declared fields; false when they failed (answered).
  bool check_fields(Exchange& ex, const Target& target, http::HttpRequest& req, std::string_view query);
  void send_event(Exchange& ex, http::HttpRequest& req, const Target& target, const http::RouteTable::Match& m,
                  std::string_view query);
  // Adds the body to `w`: in the record, in the blob area (`blob` holds
  // it), or as its upload file. False when the blob area is full.
  bool add_body(envelope::EnvelopeWriter& w, Exchange& ex, std::uint32_t seq, http::HttpRequest& req,
                transport::BlobLease& blob, std::string& upload_section);

  const Config& config_;
  Answers& answers_;
  EventSender& sender_;
  WebSocketFront& websocket_;
  StreamHub& streams_;
  BuiltinEndpoints& builtins_;
  const Cors* cors_;
  transport::BlobArena* blobs_;
  std::uint16_t index_;
  http::RouteTable routes_;
  std::vector<Target> targets_;
  StaticFiles static_files_;
  std::vector<MiddlewareDecl> middlewares_;  // those with on_request
  std::uint32_t instance_tag_;               // distinguishes request ids across restarts
  std::uint64_t request_ids_ = 0;
  // Scratch, reused for every request:
  std::string request_id_;
  ValidatedFields validated_;
  std::vector<std::pair<std::string, std::string>> decoded_params_;
  ResponseHeaders request_headers_;
  Request view_;  // what middleware sees
};

}  // namespace edri::listener
