// Listener: the WebSocket side. The upgrade, each message as a command
// (fields checked like a request's, then sent as the command's event), the
// answers in order, and pushes: a notification framed once for all the
// connections of this listener that subscribed to it (docs/websocket.md).
#include <cstring>
#include <string_view>

#include <spdlog/spdlog.h>

#include "envelope/control.hpp"
#include "envelope/envelope.hpp"
#include "envelope/send.hpp"
#include "listener/listener.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

bool is_json_type(std::string_view content_type) {
  const auto semi = content_type.find(';');
  const std::string_view t = content_type.substr(0, semi);
  return t == "application/json" || (t.size() > 5 && t.substr(t.size() - 5) == "+json");
}

}  // namespace

void Listener::ws_upgrade(Connection& c, const http::HttpRequest& req, bool http10) {
  // Browsers do not apply CORS to WebSocket: with EDRI_CORS_ORIGINS set, a
  // page from another origin must not open one (cross-site WebSocket
  // hijacking).
  if (cors_) {
    const std::string_view origin = req.header("origin");
    if (!origin.empty() && !cors_->allows(origin)) {
      answer_locally(c, false, http10, false, 403, "origin not allowed");
      return;
    }
  }
  if (!c.upgrade(req, request_headers_.lines()))
    answer_locally(c, false, http10, false, 400, "a WebSocket upgrade must not follow unanswered requests");
}

void Listener::ws_message(Connection& c, std::string_view text) {
  // Measured before it is parsed: the message is re-serialized below, and
  // serializing recurses once per level (edri/json_depth.hpp). Its command
  // is unknown until it is parsed, so the answer names none.
  if (!RequestValidator::depth_ok(text, config_.max_json_depth, "message", validated_)) {
    const auto seq = c.ws_open_slot("null");
    ws_answer(c, seq, 422, "application/problem+json", RequestValidator::problem_body(validated_));
    return;
  }
  nlohmann::json msg = nlohmann::json::parse(text, nullptr, false);
  const bool object = !msg.is_discarded() && msg.is_object();
  auto name = object ? msg.find("command") : msg.end();
  if (!object || name == msg.end() || !name->is_string()) {
    const auto seq = c.ws_open_slot("null");
    ws_error(c, seq, 400, R"(a message must be a JSON object with a string "command")");
    return;
  }
  auto it = ws_commands_.find(name->get_ref<const std::string&>());
  if (it == ws_commands_.end()) {
    const auto seq = c.ws_open_slot(name->dump());
    ws_error(c, seq, 404, "unknown command " + name->get<std::string>());
    return;
  }
  const auto seq = c.ws_open_slot(it->second.quoted_name);
  // From here on the message is the command's fields.
  msg.erase(name);
  ws_command(c, seq, it->second, msg);
}

void Listener::ws_command(Connection& c, std::uint32_t seq, const WsCommand& cmd, nlohmann::json& msg) {
  using Kind = WsCommand::Kind;
  if (cmd.kind != Kind::Event) {
    auto& subs = c.subscriptions;
    const bool had = std::find(subs.begin(), subs.end(), cmd.type) != subs.end();
    std::string payload(sizeof cmd.type, '\0');
    std::memcpy(payload.data(), &cmd.type, sizeof cmd.type);
    if (cmd.kind == Kind::Subscribe) {
      auto filter = msg.find("filter");
      if (filter != msg.end() && !filter->is_null()) {
        if (!filter->is_object()) {
          validated_.clear();
          validated_.status = 422;
          validated_.errors.push_back({"filter", "must be an object of field: value"});
          return ws_answer(c, seq, 422, "application/problem+json", RequestValidator::problem_body(validated_));
        }
        payload += filter->dump();
      }
      if (!had && subs.size() >= config_.websocket_max_subscriptions)
        return ws_error(c, seq, 429, "too many subscriptions on this connection");
      if (!had) subs.push_back(cmd.type);
    } else if (had) {
      std::erase(subs, cmd.type);
    }
    if (!send_control(c, cmd.kind == Kind::Subscribe ? env::kControlPushSubscribe : env::kControlPushUnsubscribe, seq,
                      std::as_bytes(std::span<const char>(payload.data(), payload.size()))))
      ws_error(c, seq, 503, "the server is overloaded; retry later");
    return;
  }

  // Fields: the declared ones, then path parameters of the event's route
  // (whose errors are listed first, as a request's would be).
  if (cmd.validator)
    cmd.validator->check_message(msg, c.upgrade_request(), validated_);
  else
    validated_.clear();
  decoded_params_.clear();
  std::size_t path_errors = 0;
  for (const auto& [pname, ptype] : cmd.path_params) {
    auto v = msg.find(pname);
    const char* problem = nullptr;
    std::string text;
    if (v == msg.end() || v->is_null()) {
      problem = "is required";
    } else {
      text = v->is_string() ? v->get<std::string>() : v->dump();
      const bool ok = ptype == http::ParamType::Int    ? v->is_number_integer() && http::is_int_segment(text)
                      : ptype == http::ParamType::Uuid ? v->is_string() && http::is_uuid_segment(text)
                                                       : v->is_string() && !text.empty();
      if (!ok)
        problem = ptype == http::ParamType::Int    ? "must be an integer"
                  : ptype == http::ParamType::Uuid ? "must be a UUID"
                                                   : "must be a non-empty string";
    }
    if (problem) {
      validated_.errors.insert(validated_.errors.begin() + static_cast<std::ptrdiff_t>(path_errors++),
                               FieldError{pname, problem});
      continue;
    }
    decoded_params_.emplace_back(pname, std::move(text));
  }
  if (!validated_.errors.empty()) {
    validated_.status = 422;
    return ws_answer(c, seq, 422, "application/problem+json", RequestValidator::problem_body(validated_));
  }

  auto h = origin_header(c, env::Kind::Request, cmd.type, seq);
  if (cmd.replay) h.flags |= env::kFlagReplay;
  h.flags |= env::kFlagWholeAnswer;  // a message is one body: no stream
  env::EnvelopeWriter w(h);
  if (!decoded_params_.empty())
    w.key_values(env::SectionType::PathParams, decoded_params_, env::StringPairKey{}, env::StringPairValue{});
  add_validated(w);
  // The body is the message without its "command": always a JSON object.
  const std::string body = msg.dump();
  w.text(env::SectionType::Body, body);
  if (!env::send(to_broker_, w)) ws_error(c, seq, 503, "the server is overloaded; retry later");
}

bool Listener::send_control(Connection& c, std::uint64_t code, std::uint32_t seq, std::span<const std::byte> payload) {
  auto h = origin_header(c, env::Kind::Control, code, seq);
  env::EnvelopeWriter w(h);
  if (!payload.empty()) w.raw(env::SectionType::Control, payload);
  // A subscription is new work (refused when the broker is far behind); an
  // unsubscription must arrive, or the broker keeps pushing to nobody.
  const auto admission = code == env::kControlPushSubscribe ? transport::Admission::Work : transport::Admission::Answer;
  return env::send(to_broker_, w, admission);
}

void Listener::ws_answer(Connection& c, std::uint32_t seq, int status, std::string_view content_type,
                         std::string_view body) {
  const std::string* command = c.ws_slot(seq);
  if (!command) return;
  std::string msg;
  msg.reserve(40 + command->size() + body.size());
  msg.append(R"({"command":)").append(*command);
  if (status < 400) {
    msg.append(R"(,"response":)");
    if (body.empty())
      msg.append("{}");
    else if (is_json_type(content_type))
      msg.append(body);
    else
      msg.append(nlohmann::json(std::string(body)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    msg.append(R"(,"error":)");
    if (is_json_type(content_type) && !body.empty())
      msg.append(body);
    else
      msg.append(http::problem_json(status, body));
  }
  msg.append("}");
  c.ws_complete(seq, std::move(msg));
}

void Listener::ws_error(Connection& c, std::uint32_t seq, int status, std::string_view detail) {
  ws_answer(c, seq, status, "application/problem+json", http::problem_json(status, detail));
}

void Listener::on_push(const env::EnvelopeView& v) {
  auto name = push_names_.find(v.header.event_type);
  if (name == push_names_.end()) return;
  // One frame for every subscriber here.
  std::string_view payload = v.text(env::SectionType::Body);
  if (payload.empty()) payload = "null";
  static constexpr std::string_view kHead = R"({"command":)", kEvent = R"(,"event":)";
  const std::size_t size = kHead.size() + name->second.size() + kEvent.size() + payload.size() + 1;
  std::string frame;
  frame.reserve(size + 10);
  append_text_frame_header(frame, size);
  frame.append(kHead).append(name->second).append(kEvent).append(payload).append("}");
  const auto shared = std::make_shared<const std::string>(std::move(frame));
  const auto targets = v.section(env::SectionType::Targets);
  for (std::size_t off = 0; off + sizeof(env::PushTarget) <= targets.size(); off += sizeof(env::PushTarget)) {
    env::PushTarget t;
    std::memcpy(&t, targets.data() + off, sizeof t);
    if (Connection* c = find(t.connection, t.generation); c && c->websocket()) c->ws_send(shared);
  }
}

void Listener::close_pushed(const env::EnvelopeView& v) {
  const auto targets = v.section(env::SectionType::Control);
  for (std::size_t off = 0; off + sizeof(env::PushTarget) <= targets.size(); off += sizeof(env::PushTarget)) {
    env::PushTarget t;
    std::memcpy(&t, targets.data() + off, sizeof t);
    if (Connection* c = find(t.connection, t.generation))
      c->close_lagging(1013, "a push could not be delivered: the server is overloaded; reconnect");
  }
}

}  // namespace edri::listener
