#include "listener/websocket_commands.hpp"

#include <edri/problem.hpp>

#include "listener/json_value.hpp"

namespace edri::listener {

std::uint32_t WebSocketCommands::open_command(std::string command, std::uint32_t call_row,
                                              std::unique_ptr<AccessRecord> access) {
  Slot& s = slots_.emplace_back();
  s.info.access = std::move(access);
  s.info.keep_alive = true;
  s.info.route = SlotInfo::kUncounted;
  s.info.call_row = call_row;
  s.info.opened = std::chrono::steady_clock::now();
  s.command = std::move(command);
  events_.commands_changed();
  return next_seq_++;
}

std::uint32_t WebSocketCommands::open(SlotInfo info) { return open_command("null", info.call_row); }

WebSocketCommands::Slot* WebSocketCommands::find(std::uint32_t seq) {
  const std::uint32_t idx = seq - base_seq_;
  return idx < slots_.size() && !slots_[idx].ready ? &slots_[idx] : nullptr;
}

SlotInfo* WebSocketCommands::slot(std::uint32_t seq) {
  Slot* s = find(seq);
  return s ? &s->info : nullptr;
}

void WebSocketCommands::respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view, AnswerBody body) {
  if (const auto* bytes = std::get_if<std::string_view>(&body)) return answer(seq, h.status, h.content_type, *bytes);
  if (const auto* blob = std::get_if<transport::BlobLease>(&body))
    return answer(seq, h.status, h.content_type, blob->view());
  if (std::holds_alternative<std::monostate>(body)) return answer(seq, h.status, h.content_type, {});
  answer(seq, 500, "application/problem+json", problem_json(500, "a file answer cannot be sent over WebSocket"));
}

bool WebSocketCommands::open_stream(std::uint32_t seq, http::ResponseHead, std::string_view, StreamRef) {
  answer(seq, 500, "application/problem+json", problem_json(500, "a streamed answer cannot be sent over WebSocket"));
  return false;
}

AnswerSink::EventsCarrier WebSocketCommands::open_events(std::uint32_t, std::string_view) {
  return EventsCarrier::Refused;
}

void WebSocketCommands::answer(std::uint32_t seq, int status, std::string_view content_type, std::string_view body) {
  Slot* s = find(seq);
  if (!s) return;
  std::string& msg = s->message;
  msg.reserve(40 + s->command.size() + body.size());
  msg.append(R"({"command":)").append(s->command);
  if (status < 400) {
    msg.append(R"(,"response":)");
    append_json_value(msg, content_type, body);
  } else {
    msg.append(R"(,"error":)");
    if (is_json_type(content_type) && !body.empty())
      msg.append(body);
    else
      msg.append(problem_json(status, body));
  }
  msg.append("}");
  s->ready = true;
  send_ready();
}

void WebSocketCommands::send_ready() {
  while (!slots_.empty() && slots_.front().ready) {
    events_.command_answered(slots_.front().message);
    slots_.pop_front();
    ++base_seq_;
  }
  events_.commands_changed();
}

}  // namespace edri::listener
