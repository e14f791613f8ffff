#include "listener/commands.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include <edri/problem.hpp>

#include "envelope/control.hpp"
#include "http/field_text.hpp"

namespace edri::listener {

namespace env = edri::envelope;

Commands::Commands(const Config& config, const plugin::PluginSet& plugins,
                   const std::vector<std::shared_ptr<const RequestValidator>>& validators, EventSender& sender,
                   Gate& gate)
    : config_(config), sender_(sender), gate_(gate), call_rows_(plugins) {
  using Kind = Command::Kind;
  auto event_command = [&](std::size_t event, const std::string& name) {
    const auto& ev = plugins.events()[event];
    Command c{Kind::Event, ev.type_id, validators[event], {}, nlohmann::json(name).dump(), ev.replay, ev.name};
    c.all_headers = ev.all_headers;
    for (const auto& r : plugins.routes())
      if (r.event == event) {
        c.path_params = http::RouteTable::parameters(r.path);
        c.method = r.method;
        break;
      }
    return c;
  };
  for (const auto& cmd : plugins.commands()) commands_.emplace(cmd.command, event_command(cmd.event, cmd.command));
  for (const auto& service : plugins.grpc_services())
    for (const auto& m : service.methods)
      by_event_.emplace(m.event, event_command(static_cast<std::size_t>(plugins.event_index(m.event)), m.event));
  for (const auto& p : plugins.pushes()) {
    const auto& ev = plugins.events()[p.notification];
    commands_.emplace(
        p.subscribe,
        Command{
            Kind::Subscribe, ev.type_id, nullptr, {}, nlohmann::json(p.subscribe).dump(), false, ev.name, Method::Get});
    commands_.emplace(p.unsubscribe, Command{Kind::Unsubscribe,
                                             ev.type_id,
                                             nullptr,
                                             {},
                                             nlohmann::json(p.unsubscribe).dump(),
                                             false,
                                             ev.name,
                                             Method::Get});
    push_names_.emplace(ev.type_id, nlohmann::json(ev.name).dump());
  }
  for (auto& [name, c] : commands_) c.call_row = call_rows_.command(name);
}

const Commands::Command* Commands::find(const std::string& name) const {
  const auto it = commands_.find(name);
  return it == commands_.end() ? nullptr : &it->second;
}

const Commands::Command* Commands::for_event(const std::string& event) const {
  const auto it = by_event_.find(event);
  return it == by_event_.end() ? nullptr : &it->second;
}

const std::string* Commands::push_name(std::uint64_t type) const {
  const auto it = push_names_.find(type);
  return it == push_names_.end() ? nullptr : &it->second;
}

Commands::Refusal Commands::invalid(std::string field, std::string problem) {
  ValidatedFields v;
  v.status = 422;
  v.errors.push_back({std::move(field), std::move(problem)});
  return {422, RequestValidator::problem_body(v)};
}

Commands::Refusal Commands::refusal_of_validated() {
  validated_.status = 422;
  return {422, RequestValidator::problem_body(validated_)};
}

std::optional<Commands::Refusal> Commands::send(Connection& c, std::uint32_t seq, const Command& cmd,
                                                nlohmann::json& fields, const Origin& from, std::uint64_t budget_ns) {
  // The event's body is the fields (always a JSON object), serialized
  // once: what middleware sees, and what the handler reads.
  if (cmd.kind == Command::Kind::Event)
    body_text_ = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (cmd.kind != Command::Kind::Unsubscribe)
    if (auto refused = admit(c, from, cmd, fields)) return refused;
  if (cmd.kind != Command::Kind::Event) return subscription(c, seq, cmd, fields);
  // Fields: the declared ones, then path parameters of the event's route.
  if (cmd.validator)
    cmd.validator->check_message(fields, from.head, validated_);
  else
    validated_.clear();
  check_path_params(cmd, fields);
  if (!validated_.errors.empty()) return refusal_of_validated();
  auto h = sender_.origin_header(c, env::Kind::Request, cmd.type, seq);
  if (cmd.replay) h.flags |= env::kFlagReplay;
  h.flags |= env::kFlagWholeAnswer;  // a message is one body: no stream
  env::EnvelopeWriter w(h);
  if (!decoded_params_.empty())
    w.key_values(env::SectionType::PathParams, decoded_params_, env::StringPairKey{}, env::StringPairValue{});
  if (cmd.all_headers)
    for (const auto& [k, v] : from.head.headers) validated_.headers.emplace_back(http::lowered(k), v);
  add_validated(w, validated_);
  Gate::write_identity(w, call_, admission_, claims_text_);
  if (!from.trace.empty()) w.text(env::SectionType::Trace, from.trace);
  if (budget_ns != 0) w.raw(env::SectionType::Deadline, std::as_bytes(std::span<const std::uint64_t>(&budget_ns, 1)));
  w.text(env::SectionType::Body, body_text_);
  // Straight to its manager, as an HTTP request goes, unless the
  // connection's subscriptions must reach the broker first.
  const bool sent = c.ordered_with_pushes ? sender_.send(w) : sender_.send_request(w);
  if (!sent) return Refusal{503, problem_json(503, "the server is overloaded; retry later")};
  return std::nullopt;
}

std::optional<Commands::Refusal> Commands::admit(Connection& c, const Origin& from, const Command& cmd,
                                                 const nlohmann::json& fields) {
  admission_.clear();
  call_ = Gate::Call{
      from.protocol, cmd.method, from.path, {}, cmd.event, &from.head, gate_.client_address(c.peer(), from.head), {}};
  if (gate_.empty()) return std::nullopt;
  if (cmd.kind != Command::Kind::Event)
    body_text_ = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  call_.body = body_text_;
  auto refusal = gate_.admit(call_, admission_);
  if (!refusal) return std::nullopt;
  return Refusal{refusal->status, std::string(refusal->body_bytes()), refusal->content_type};
}

std::optional<Commands::Refusal> Commands::admit(Connection& c, const Origin& from, std::string_view event,
                                                 const nlohmann::json& fields) {
  Command stream{Command::Kind::Subscribe, 0, nullptr, {}, {}, false, event, Method::Get};
  return admit(c, from, stream, fields);
}

void Commands::check_path_params(const Command& cmd, const nlohmann::json& fields) {
  decoded_params_.clear();
  std::size_t path_errors = 0;
  for (const auto& [pname, ptype] : cmd.path_params) {
    auto v = fields.find(pname);
    const char* problem = nullptr;
    std::string text;
    if (v == fields.end() || v->is_null()) {
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

std::optional<Commands::Refusal> Commands::subscription(Connection& c, std::uint32_t seq, const Command& cmd,
                                                        const nlohmann::json& fields) {
  auto& subs = c.subscriptions;
  c.ordered_with_pushes = true;
  const bool had = std::find(subs.begin(), subs.end(), cmd.type) != subs.end();
  std::string payload(sizeof cmd.type, '\0');
  std::memcpy(payload.data(), &cmd.type, sizeof cmd.type);
  const bool subscribe = cmd.kind == Command::Kind::Subscribe;
  if (subscribe) {
    auto filter = fields.find("filter");
    if (filter != fields.end() && !filter->is_null()) {
      if (!filter->is_object()) return invalid("filter", "must be an object of field: value");
      payload += filter->dump();
    }
    if (!had && subs.size() >= config_.websocket_max_subscriptions)
      return Refusal{429, problem_json(429, "too many subscriptions on this connection")};
    if (!had) subs.push_back(cmd.type);
  } else if (had) {
    std::erase(subs, cmd.type);
  }
  const auto code = subscribe ? env::kControlPushSubscribe : env::kControlPushUnsubscribe;
  if (!sender_.send_control(c, code, seq, std::as_bytes(std::span<const char>(payload.data(), payload.size()))))
    return Refusal{503, problem_json(503, "the server is overloaded; retry later")};
  return std::nullopt;
}

void Commands::unsubscribe(Connection& c, std::uint64_t type) {
  c.ordered_with_pushes = true;
  std::erase(c.subscriptions, type);
  sender_.send_control(c, env::kControlPushUnsubscribe, env::kNoAnswer,
                       std::as_bytes(std::span<const std::uint64_t>(&type, 1)));
}

void Commands::closed(Connection& c) {
  if (!c.subscriptions.empty()) sender_.send_control(c, env::kControlPushUnsubscribe, env::kNoAnswer, {});
}

}  // namespace edri::listener
