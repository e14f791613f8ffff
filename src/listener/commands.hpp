// Commands: what a client may ask for by name, over a WebSocket message or
// a gRPC Event alike (docs/websocket.md, docs/grpc.md): each name leads to
// an event, a push subscription or an unsubscription. Sending one checks
// its fields at the edge exactly as a request's (declared fields, then the
// path parameters of the event's first route) and addresses the event back
// to the asking connection's slot; the front that asked renders what comes
// back, or a refusal, in its own protocol.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/request_parser.hpp"
#include "http/route_table.hpp"
#include "listener/connection.hpp"
#include "listener/event_sender.hpp"
#include "listener/gate.hpp"
#include "listener/request_validator.hpp"
#include "plugin/call_rows.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"

namespace edri::listener {

class Commands {
 public:
  struct Command {
    enum class Kind : std::uint8_t { Event, Subscribe, Unsubscribe } kind;
    std::uint64_t type;  // the event's type, or the notification's
    std::shared_ptr<const RequestValidator> validator;
    std::vector<std::pair<std::string, http::ParamType>> path_params;  // of the event's first route
    std::string quoted_name;                                           // as JSON, for every answer
    bool replay = false;                                               // Registry::replay
    std::string_view event;        // what middleware sees: the event's name (a push's: its notification's)
    Method method = Method::Post;  // what middleware sees: the method of the event's first route
    bool all_headers = false;      // Registry::all_headers
    std::uint32_t call_row = 0;    // its latency row (plugin/call_rows.hpp)
  };
  // Refused at the edge (or by middleware): the status and its body.
  struct Refusal {
    int status;
    std::string problem;
    std::string content_type = "application/problem+json";
  };
  // Where a command comes from, as middleware sees it.
  struct Origin {
    std::string_view protocol;      // "websocket", "grpc"
    std::string_view path;          // the handshake's, the gRPC method's
    const http::HttpRequest& head;  // headers: the handshake's, the call's metadata
    std::string_view trace = {};    // the call's Trace section (AccessRecord::trace_section); empty: none
  };

  // `validators`: one per event of `plugins` (null: no fields declared).
  Commands(const Config& config, const plugin::PluginSet& plugins,
           const std::vector<std::shared_ptr<const RequestValidator>>& validators, EventSender& sender, Gate& gate);

  const Command* find(const std::string& name) const;
  const Gate& gate() const { return gate_; }
  // The latency rows of commands and gRPC methods.
  const plugin::CallRows& call_rows() const { return call_rows_; }
  // The event a typed gRPC method sends, as a command, or null when no
  // method sends it.
  const Command* for_event(const std::string& event) const;
  // A notification's name as quoted JSON, or null when no push names it.
  const std::string* push_name(std::uint64_t type) const;

  // Sends `cmd` with `fields` (a JSON object; consumed) for slot `seq` of
  // `c`, once the Gate admitted it; header and cookie fields come from
  // `from.head`; `budget_ns`, when not 0, is how long the client waits
  // (Request::deadline). nullopt: sent, and its answer comes back to the
  // slot as any event's does.
  std::optional<Refusal> send(Connection& c, std::uint32_t seq, const Command& cmd, nlohmann::json& fields,
                              const Origin& from, std::uint64_t budget_ns = 0);
  // The Gate on a call that becomes no event of a plugin (a live-stream
  // subscription: "stream.subscribe"); its refusal, or nullopt.
  std::optional<Refusal> admit(Connection& c, const Origin& from, std::string_view event, const nlohmann::json& fields);
  // Connection `c` no longer takes pushes of notification `type`.
  void unsubscribe(Connection& c, std::uint64_t type);
  // Connection `c` closed: its subscriptions end.
  void closed(Connection& c);
  // A refusal of fields: 422 naming `field` with `problem`.
  static Refusal invalid(std::string field, std::string problem);

 private:
  std::optional<Refusal> subscription(Connection& c, std::uint32_t seq, const Command& cmd,
                                      const nlohmann::json& fields);
  // The event's path parameters from the fields (their errors first, as a
  // request's would be).
  void check_path_params(const Command& cmd, const nlohmann::json& fields);
  Refusal refusal_of_validated();
  // The Gate on `cmd`, admission_ and call_ set for its envelope.
  std::optional<Refusal> admit(Connection& c, const Origin& from, const Command& cmd, const nlohmann::json& fields);

  const Config& config_;
  EventSender& sender_;
  Gate& gate_;
  std::unordered_map<std::string, Command> commands_;
  std::unordered_map<std::string, Command> by_event_;          // events of typed gRPC methods
  std::unordered_map<std::uint64_t, std::string> push_names_;  // notification type -> quoted JSON name
  plugin::CallRows call_rows_;
  // Scratch, reused for every command:
  ValidatedFields validated_;
  std::vector<std::pair<std::string, std::string>> decoded_params_;
  Admission admission_;
  Gate::Call call_{};
  std::string body_text_;  // the fields as JSON: the event's body, what middleware sees
  std::string claims_text_;
};

}  // namespace edri::listener
