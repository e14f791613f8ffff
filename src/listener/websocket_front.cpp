#include "listener/websocket_front.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include <spdlog/spdlog.h>

#include "envelope/control.hpp"
#include "listener/websocket_codec.hpp"
#include "listener/websocket_frame.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

// Calls f(PushTarget) for each target in a Targets section or a
// kControlPushClose payload.
template <class F>
void for_each_target(std::span<const std::byte> targets, F&& f) {
  for (std::size_t off = 0; off + sizeof(env::PushTarget) <= targets.size(); off += sizeof(env::PushTarget)) {
    env::PushTarget t;
    std::memcpy(&t, targets.data() + off, sizeof t);
    f(t);
  }
}

}  // namespace

WebSocketFront::WebSocketFront(const Config& config, Commands& commands, Answers& answers, const Cors* cors,
                               StreamHub& streams)
    : config_(config), commands_(commands), answers_(answers), cors_(cors), streams_(streams) {}

void WebSocketFront::poll() {
  if (!poll_needed_) return;
  poll_needed_ = false;
  try {
    io_.poll();
  } catch (const std::exception& e) {
    spdlog::error("websocket handler failed: {}", e.what());
  }
}

void WebSocketFront::upgrade(Connection& c, const http::HttpRequest& req, std::string_view headers, bool http10,
                             std::unique_ptr<AccessRecord> access) {
  // Browsers do not apply CORS to WebSocket: with EDRI_CORS_ORIGINS set, a
  // page from another origin must not open one (cross-site WebSocket
  // hijacking).
  if (cors_) {
    const std::string_view origin = req.header("origin");
    if (!origin.empty() && !cors_->allows(origin))
      return answers_.answer_locally(c, false, http10, false, 403, "origin not allowed", {}, std::move(access));
  }
  if (!c.upgrade(req, headers))
    return answers_.answer_locally(c, false, http10, false, 400,
                                   "a WebSocket upgrade must not follow unanswered requests", {}, std::move(access));
  if (access) answers_.access_log()->end(std::move(access), 101, 0);
}

void WebSocketFront::message(Connection& c, std::string_view text) {
  const auto& rows = commands_.call_rows();
  // Measured before it is parsed: the message is re-serialized below, and
  // serializing recurses once per level (edri/json_depth.hpp). Its command
  // is unknown until it is parsed, so the answer names none.
  if (!RequestValidator::depth_ok(text, config_.max_json_depth, "message", validated_))
    return answer_invalid(c, open_command(c, "null", "-", {}, text.size(), rows.no_command()));
  nlohmann::json msg = nlohmann::json::parse(text, nullptr, false);
  const bool object = !msg.is_discarded() && msg.is_object();
  auto name = object ? msg.find("command") : msg.end();
  if (!object || name == msg.end() || !name->is_string())
    return answers_.problem(c.answers(), open_command(c, "null", "-", {}, text.size(), rows.no_command()), 400,
                            R"(a message must be a JSON object with a string "command")");
  const std::string& called = name->get_ref<const std::string&>();
  const std::string_view target = c.websocket()->upgrade_request().target;
  const Commands::Origin origin{"websocket", target.substr(0, target.find('?')), c.websocket()->upgrade_request()};
  if (called == "stream.subscribe" || called == "stream.unsubscribe") {
    const auto row = rows.command(called);
    if (called == "stream.subscribe")
      if (auto refused = commands_.admit(c, origin, called, msg))
        return answer_refusal(c, open_command(c, name->dump(), called, {}, text.size(), row), *refused);
    // Answered by the stream's frames; only a refusal is a message.
    if (auto error = streams_.ws_command(c, called, msg))
      answers_.problem(c.answers(), open_command(c, name->dump(), called, {}, text.size(), row), error->first,
                       error->second);
    return;
  }
  const Commands::Command* cmd = commands_.find(called);
  if (!cmd)
    return answers_.problem(c.answers(), open_command(c, name->dump(), called, {}, text.size(), rows.no_command()), 404,
                            "unknown command " + called);
  const auto seq = open_command(c, cmd->quoted_name, called, cmd->event, text.size(), cmd->call_row);
  // From here on the message is the command's fields.
  msg.erase(name);
  const SlotInfo* info = c.answers().slot(seq);
  const std::string_view trace =
      info && info->access && info->access->traced ? std::string_view(info->access->trace_section) : std::string_view();
  const Commands::Origin sent{origin.protocol, origin.path, origin.head, trace};
  if (auto refused = commands_.send(c, seq, *cmd, msg, sent)) answer_refusal(c, seq, *refused);
}

std::uint32_t WebSocketFront::open_command(Connection& c, std::string quoted, std::string_view name,
                                           std::string_view event, std::size_t bytes_in, std::uint32_t row) {
  AccessLog* log = answers_.access_log();
  if (!log) return c.websocket()->open_command(std::move(quoted), row);
  const auto& handshake = c.websocket()->upgrade_request();
  const std::string_view target = handshake.target;
  auto r = log->begin("websocket", name, target.substr(0, target.find('?')),
                      commands_.gate().client_address(c.peer(), handshake), &handshake);
  r->domain = log->domain_of(event);
  r->bytes_in = bytes_in;
  return c.websocket()->open_command(std::move(quoted), row, std::move(r));
}

void WebSocketFront::answer_refusal(Connection& c, std::uint32_t seq, const Commands::Refusal& r) {
  answers_.reply(c.answers(), seq, r.status, r.content_type, r.problem);
}

void WebSocketFront::answer_invalid(Connection& c, std::uint32_t seq) {
  validated_.status = 422;
  answers_.reply(c.answers(), seq, 422, "application/problem+json", RequestValidator::problem_body(validated_));
}

void WebSocketFront::on_push(const env::EnvelopeView& v) {
  const std::string* name = commands_.push_name(v.header.event_type);
  if (!name) return;
  // One frame for every subscriber here.
  std::string_view payload = v.text(env::SectionType::Body);
  if (payload.empty()) payload = "null";
  static constexpr std::string_view kHead = R"({"command":)", kEvent = R"(,"event":)";
  const std::size_t size = kHead.size() + name->size() + kEvent.size() + payload.size() + 1;
  std::string text;
  text.reserve(size);
  text.append(kHead).append(*name).append(kEvent).append(payload).append("}");
  const auto shared = make_message(std::move(text));
  for_each_target(v.section(env::SectionType::Targets), [&](const env::PushTarget& t) {
    Connection* c = table_->find(t.connection, t.generation);
    if (c) c->push(v.header.event_type, shared);
  });
}

void WebSocketFront::on_control(const env::EnvelopeView& v) {
  if (v.header.event_type != env::kControlPushClose) return;
  for_each_target(v.section(env::SectionType::Control), [&](const env::PushTarget& t) {
    if (Connection* c = table_->find(t.connection, t.generation))
      c->close_lagging(1013, "a push could not be delivered: the server is overloaded; reconnect");
  });
}

void WebSocketFront::closed(Connection& c) { commands_.closed(c); }

}  // namespace edri::listener
