// WebSocketCommands: a WebSocket connection's answer side. Each command gets
// a slot in arrival order and answers leave in that order, as messages
// {"command":..,"response":..} or {"command":..,"error":{problem}}; pushes
// go out between them as they come (WebSocketCodec::send), not through here.
// A command's answer is built as any request's (Answers), then framed here.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "listener/answer_sink.hpp"

namespace edri::listener {

class WebSocketCommands final : public AnswerSink {
 public:
  class Events {
   public:
    virtual ~Events() = default;
    // The next answer in order, as the message's text.
    virtual void command_answered(std::string_view message) = 0;
    // The commands in flight changed (the session's flow may change).
    virtual void commands_changed() = 0;
  };

  explicit WebSocketCommands(Events& events) : events_(events) {}

  // A command's slot: `command` is its name as JSON (quoted), or null;
  // `access`: its access log record, where the log is on.
  std::uint32_t open_command(std::string command, std::uint32_t call_row,
                             std::unique_ptr<AccessRecord> access = nullptr);
  std::size_t pending() const { return slots_.size(); }
  void clear() { slots_.clear(); }
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].ready && slots_[i].info.opened < cutoff) f(base_seq_ + static_cast<std::uint32_t>(i));
  }

  // AnswerSink: a command's answer has no head or header lines; a body in
  // a file, a stream or an event stream cannot be a message, and is
  // answered with a problem instead.
  std::string_view protocol() const override { return "websocket"; }
  std::uint32_t open(SlotInfo info) override;
  SlotInfo* slot(std::uint32_t seq) override;
  void hold_upload(std::uint32_t, std::shared_ptr<http::SpilledBody>) override {}
  void respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view lines, AnswerBody body) override;
  bool open_stream(std::uint32_t seq, http::ResponseHead h, std::string_view lines, StreamRef ref) override;
  bool stream_piece(std::uint32_t, std::string_view, transport::BlobLease, bool, bool) override { return false; }
  EventsCarrier open_events(std::uint32_t seq, std::string_view lines) override;

 private:
  struct Slot {
    SlotInfo info;
    std::string command;
    bool ready = false;
    std::string message;
  };
  Slot* find(std::uint32_t seq);
  void answer(std::uint32_t seq, int status, std::string_view content_type, std::string_view body);
  void send_ready();

  Events& events_;
  std::deque<Slot> slots_;
  std::uint32_t base_seq_ = 0;
  std::uint32_t next_seq_ = 0;
};

}  // namespace edri::listener
