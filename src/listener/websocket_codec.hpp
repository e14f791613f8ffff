// WebSocketCodec: a Connection after a WebSocket upgrade (decision 0035).
// Beast's session (WebSocketSession) reads the protocol; commands are
// answered in the order they came (WebSocketCommands); pushes and stream
// frames go between them, framed once and shared by every subscriber
// (websocket_frame.hpp). While too many commands are in flight, or too
// much output is unsent, the session takes no more messages; what the
// client sends meanwhile stays in its pipe, up to a bound past which the
// connection reads nothing more.
#pragma once

#include <memory>
#include <string>

#include "http/request_parser.hpp"
#include "listener/codec.hpp"
#include "listener/connection_owner.hpp"
#include "listener/websocket_commands.hpp"
#include "listener/websocket_session.hpp"

namespace edri::listener {

class WebSocketCodec final : public Codec, public WebSocketSession::Owner, private WebSocketCommands::Events {
 public:
  // Answers the upgrade request `req` (Beast: 101 with `headers`, or an
  // error and a close).
  WebSocketCodec(CodecHost& host, ConnectionContext& ctx, const http::HttpRequest& req, std::string_view headers);
  ~WebSocketCodec() override;

  // The upgrade request, for header and cookie fields of commands.
  const http::HttpRequest& upgrade_request() const { return upgrade_request_; }
  // A command's answer slot: answers leave in the order commands came.
  std::uint32_t open_command(std::string command, std::uint32_t call_row,
                             std::unique_ptr<AccessRecord> access = nullptr) {
    return commands_.open_command(std::move(command), call_row, std::move(access));
  }
  // A message outside the command order (a push), already framed and
  // shared by every subscriber it goes to.
  void send(const SharedMessage& message);
  void close(std::uint16_t code, std::string reason);

  AnswerSink& answers() override { return commands_; }
  bool receive(std::string_view bytes, Clock::time_point now) override;
  bool must_pause(std::size_t backlog) const override;
  void output_taken() override { update_flow(); }
  void go_away() override { close(1001, "the server is stopping"); }
  // A reload: kept open for EDRI_RELOAD_GRACE; the listener then calls
  // go_away().
  void go_away_gently() override {}
  void check_time(Clock::time_point now) override;
  bool waiting() const override { return commands_.pending() > 0; }
  void for_each_overdue(Clock::time_point cutoff, const std::function<void(std::uint32_t)>& f) override {
    commands_.for_each_overdue(cutoff, f);
  }
  bool ends_with_client() const override { return false; }
  void cancel() override;
  bool close_with(std::uint16_t code, std::string_view reason) override;
  void live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) override;
  void push(std::uint64_t, const SharedMessage& message) override { send(message); }
  WebSocketCodec* websocket() override { return this; }

 private:
  // WebSocketSession::Owner
  void ws_output(std::string_view bytes) override;
  void ws_message(std::string_view text) override;
  void ws_starved() override;
  void ws_ended() override;
  // WebSocketCommands::Events
  void command_answered(std::string_view message) override;
  void commands_changed() override { update_flow(); }

  // Appends a text message, framed as it goes.
  void append_message(std::string_view text);
  // The session takes no more messages while the commands in flight or the
  // unsent output are over their bounds, and takes them again below.
  void update_flow();

  CodecHost& host_;
  ConnectionContext& ctx_;
  http::HttpRequest upgrade_request_;
  WebSocketCommands commands_{*this};
  std::shared_ptr<WebSocketSession> session_;
  // permessage-deflate as the 101 agreed it: the server's window bits, or
  // 0 (plain frames).
  int deflate_bits_ = 0;
  bool handshake_written_ = false;
  std::string handshake_;             // Beast's answer to the handshake, until its head is whole
  Clock::time_point close_out_at_{};  // a close of ours was written
};

}  // namespace edri::listener
