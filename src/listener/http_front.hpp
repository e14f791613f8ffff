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
#include "listener/api_docs_page.hpp"
#include "listener/builtin_endpoints.hpp"
#include "listener/cors.hpp"
#include "listener/event_sender.hpp"
#include "listener/exchange.hpp"
#include "listener/gate.hpp"
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
            const Cors* cors, Gate& gate, transport::BlobArena* blobs, std::uint16_t listener_index);

  // What the route table refuses of the plugins' declarations (an unknown
  // parameter type, a route declared twice, one that a built-in endpoint
  // would hide): checked by the supervisor, so that it stops start-up with
  // a message instead of a listener that fails and restarts forever.
  // Throws plugin::PluginError.
  static void check_routes(const Config& config, const plugin::PluginSet& plugins);

  void dispatch(Connection& c, http::HttpRequest& req);
  std::size_t route_count() const { return routes_.size(); }

 private:
  // The access log's record of `req` (EDRI_ACCESS_LOG), into `ex`.
  void begin_access(AccessLog& log, Exchange& ex, const http::HttpRequest& req, bool http10);
  struct Target {
    std::uint64_t event_type;
    std::string_view event;                             // its name, as middleware sees it
    std::shared_ptr<const RequestValidator> validator;  // null: no fields declared
    bool replay = false;                                // Registry::replay
    bool stream_events = false;                         // Registry::stream_events: the listener serves it
    bool all_headers = false;                           // Registry::all_headers
  };

  // A built-in endpoint's answer; on the admin socket, a 404 for any
  // other path (no route, no middleware is served there).
  bool answer_builtin(Exchange& ex, const http::HttpRequest& req, Method method, std::string_view path);
  // /docs and its files (EDRI_API_DOCS).
  void answer_docs(Exchange& ex, const http::HttpRequest& req, std::string_view path);
  // Whether the static files (assets, EDRI_ASSETS_PATH) have a /docs.
  bool serves_own_docs() const;
  // GET on a Registry::stream_events path: the stream as Server-Sent Events.
  void answer_stream_events(Exchange& ex, const http::HttpRequest& req, const http::RouteTable::Match& m, bool head);
  // The built-in middleware (request id, CORS); false when it answered.
  bool run_builtin_middleware(Exchange& ex, const http::HttpRequest& req, Method method);
  // The plugins' middleware (the Gate) on call_; false when it refused
  // (answered).
  bool admit(Exchange& ex);
  void add_request_id(const http::HttpRequest& req);
  // The route of `path`; HEAD finds GET's.
  http::RouteTable::Match find_route(Method method, std::string_view path) const;
  void route(Exchange& ex, http::HttpRequest& req, Method method, std::string_view path, std::string_view query,
             http::RouteTable::Match& m);
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
  std::string api_document_;                // /openapi.json's body; empty: not served
  std::unique_ptr<ApiDocsPage> docs_page_;  // /docs; null: not served
  const Cors* cors_;
  Gate& gate_;
  transport::BlobArena* blobs_;
  std::uint16_t index_;
  http::RouteTable routes_;
  std::vector<Target> targets_;
  StaticFiles static_files_;
  std::uint32_t instance_tag_;  // distinguishes request ids across restarts
  std::uint64_t request_ids_ = 0;
  // Scratch, reused for every request:
  std::string request_id_;
  ValidatedFields validated_;
  std::vector<std::pair<std::string, std::string>> decoded_params_;
  Admission request_headers_;  // what middleware added: header lines, the principal
  Gate::Call call_;            // the request as the Gate sees it
  std::string claims_text_;
};

}  // namespace edri::listener
