#include "listener/websocket_front.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include <spdlog/spdlog.h>

#include "envelope/control.hpp"
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

WebSocketFront::WebSocketFront(const Config& config, const plugin::PluginSet& plugins,
                               const std::vector<std::shared_ptr<const RequestValidator>>& validators, Answers& answers,
                               EventSender& sender, const Cors* cors, StreamHub& streams)
    : config_(config), answers_(answers), sender_(sender), cors_(cors), streams_(streams) {
  using Kind = Command::Kind;
  for (const auto& cmd : plugins.commands()) {
    const auto& ev = plugins.events()[cmd.event];
    Command c{Kind::Event, ev.type_id, validators[cmd.event], {}, nlohmann::json(cmd.command).dump(), ev.replay};
    for (const auto& r : plugins.routes())
      if (r.event == cmd.event) {
        c.path_params = http::RouteTable::parameters(r.path);
        break;
      }
    commands_.emplace(cmd.command, std::move(c));
  }
  for (const auto& p : plugins.pushes()) {
    const auto& ev = plugins.events()[p.notification];
    commands_.emplace(p.subscribe,
                      Command{Kind::Subscribe, ev.type_id, nullptr, {}, nlohmann::json(p.subscribe).dump()});
    commands_.emplace(p.unsubscribe,
                      Command{Kind::Unsubscribe, ev.type_id, nullptr, {}, nlohmann::json(p.unsubscribe).dump()});
    push_names_.emplace(ev.type_id, nlohmann::json(ev.name).dump());
  }
}

void WebSocketFront::poll() {
  if (!poll_needed_) return;
  poll_needed_ = false;
  try {
    io_.poll();
  } catch (const std::exception& e) {
    spdlog::error("websocket handler failed: {}", e.what());
  }
}

void WebSocketFront::upgrade(Connection& c, const http::HttpRequest& req, std::string_view headers, bool http10) {
  // Browsers do not apply CORS to WebSocket: with EDRI_CORS_ORIGINS set, a
  // page from another origin must not open one (cross-site WebSocket
  // hijacking).
  if (cors_) {
    const std::string_view origin = req.header("origin");
    if (!origin.empty() && !cors_->allows(origin))
      return answers_.answer_locally(c, false, http10, false, 403, "origin not allowed");
  }
  if (!c.upgrade(req, headers))
    answers_.answer_locally(c, false, http10, false, 400, "a WebSocket upgrade must not follow unanswered requests");
}

void WebSocketFront::message(Connection& c, std::string_view text) {
  // Measured before it is parsed: the message is re-serialized below, and
  // serializing recurses once per level (edri/json_depth.hpp). Its command
  // is unknown until it is parsed, so the answer names none.
  if (!RequestValidator::depth_ok(text, config_.max_json_depth, "message", validated_))
    return answer_invalid(c, c.ws_open_slot("null"));
  nlohmann::json msg = nlohmann::json::parse(text, nullptr, false);
  const bool object = !msg.is_discarded() && msg.is_object();
  auto name = object ? msg.find("command") : msg.end();
  if (!object || name == msg.end() || !name->is_string())
    return answers_.ws_error(c, c.ws_open_slot("null"), 400,
                             R"(a message must be a JSON object with a string "command")");
  const std::string& called = name->get_ref<const std::string&>();
  if (called == "stream.subscribe" || called == "stream.unsubscribe") {
    // Answered by the stream's frames; only a refusal is a message.
    if (auto error = streams_.ws_command(c, called, msg))
      answers_.ws_error(c, c.ws_open_slot(name->dump()), error->first, error->second);
    return;
  }
  auto it = commands_.find(called);
  if (it == commands_.end())
    return answers_.ws_error(c, c.ws_open_slot(name->dump()), 404, "unknown command " + name->get<std::string>());
  const auto seq = c.ws_open_slot(it->second.quoted_name);
  // From here on the message is the command's fields.
  msg.erase(name);
  command(c, seq, it->second, msg);
}

void WebSocketFront::command(Connection& c, std::uint32_t seq, const Command& cmd, nlohmann::json& msg) {
  if (cmd.kind != Command::Kind::Event) return subscription(c, seq, cmd, msg);
  // Fields: the declared ones, then path parameters of the event's route.
  if (cmd.validator)
    cmd.validator->check_message(msg, c.upgrade_request(), validated_);
  else
    validated_.clear();
  check_path_params(cmd, msg);
  if (!validated_.errors.empty()) return answer_invalid(c, seq);
  auto h = sender_.origin_header(c, env::Kind::Request, cmd.type, seq);
  if (cmd.replay) h.flags |= env::kFlagReplay;
  h.flags |= env::kFlagWholeAnswer;  // a message is one body: no stream
  env::EnvelopeWriter w(h);
  if (!decoded_params_.empty())
    w.key_values(env::SectionType::PathParams, decoded_params_, env::StringPairKey{}, env::StringPairValue{});
  add_validated(w, validated_);
  // The body is the message without its "command": always a JSON object.
  const std::string body = msg.dump();
  w.text(env::SectionType::Body, body);
  if (!sender_.send(w)) answers_.ws_error(c, seq, 503, "the server is overloaded; retry later");
}

void WebSocketFront::check_path_params(const Command& cmd, const nlohmann::json& msg) {
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
}

void WebSocketFront::subscription(Connection& c, std::uint32_t seq, const Command& cmd, const nlohmann::json& msg) {
  auto& subs = c.subscriptions;
  const bool had = std::find(subs.begin(), subs.end(), cmd.type) != subs.end();
  std::string payload(sizeof cmd.type, '\0');
  std::memcpy(payload.data(), &cmd.type, sizeof cmd.type);
  const bool subscribe = cmd.kind == Command::Kind::Subscribe;
  if (subscribe) {
    auto filter = msg.find("filter");
    if (filter != msg.end() && !filter->is_null()) {
      if (!filter->is_object()) {
        validated_.clear();
        validated_.errors.push_back({"filter", "must be an object of field: value"});
        return answer_invalid(c, seq);
      }
      payload += filter->dump();
    }
    if (!had && subs.size() >= config_.websocket_max_subscriptions)
      return answers_.ws_error(c, seq, 429, "too many subscriptions on this connection");
    if (!had) subs.push_back(cmd.type);
  } else if (had) {
    std::erase(subs, cmd.type);
  }
  const auto code = subscribe ? env::kControlPushSubscribe : env::kControlPushUnsubscribe;
  if (!sender_.send_control(c, code, seq, std::as_bytes(std::span<const char>(payload.data(), payload.size()))))
    answers_.ws_error(c, seq, 503, "the server is overloaded; retry later");
}

void WebSocketFront::answer_invalid(Connection& c, std::uint32_t seq) {
  validated_.status = 422;
  answers_.ws_answer(c, seq, 422, "application/problem+json", RequestValidator::problem_body(validated_));
}

void WebSocketFront::on_push(const env::EnvelopeView& v) {
  auto name = push_names_.find(v.header.event_type);
  if (name == push_names_.end()) return;
  // One frame for every subscriber here.
  std::string_view payload = v.text(env::SectionType::Body);
  if (payload.empty()) payload = "null";
  static constexpr std::string_view kHead = R"({"command":)", kEvent = R"(,"event":)";
  const std::size_t size = kHead.size() + name->second.size() + kEvent.size() + payload.size() + 1;
  std::string text;
  text.reserve(size);
  text.append(kHead).append(name->second).append(kEvent).append(payload).append("}");
  const auto shared = make_message(std::move(text));
  for_each_target(v.section(env::SectionType::Targets), [&](const env::PushTarget& t) {
    if (Connection* c = table_->find(t.connection, t.generation); c && c->websocket()) c->ws_send(shared);
  });
}

void WebSocketFront::on_control(const env::EnvelopeView& v) {
  if (v.header.event_type != env::kControlPushClose) return;
  for_each_target(v.section(env::SectionType::Control), [&](const env::PushTarget& t) {
    if (Connection* c = table_->find(t.connection, t.generation))
      c->close_lagging(1013, "a push could not be delivered: the server is overloaded; reconnect");
  });
}

void WebSocketFront::closed(Connection& c) {
  if (!c.subscriptions.empty()) sender_.send_control(c, env::kControlPushUnsubscribe, env::kNoAnswer, {});
}

}  // namespace edri::listener
