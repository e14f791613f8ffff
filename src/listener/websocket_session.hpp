// WebSocketSession: one client's WebSocket (RFC 6455) on a Connection.
//
// Boost.Beast does the protocol's reading side: the opening handshake,
// framing, unmasking, fragmented messages, ping/pong, the closing
// handshake, UTF-8 checks and the message size limit, each protocol
// violation closed with its code (1002, 1007, 1009). This class drives it:
// one read of a whole message at a time, paused while the connection has
// too much in flight, and a close. The Connection writes the data frames
// itself (websocket_frame.hpp), in order with what Beast writes, so this
// class only says whether a data frame may still go out. It knows nothing
// of commands or events; complete messages go to the Owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "listener/loop_stream.hpp"

#include <boost/beast/websocket/stream.hpp>

#include "http/request_parser.hpp"
#include "listener/recycled_blocks.hpp"

namespace edri::listener {

class WebSocketSession : public std::enable_shared_from_this<WebSocketSession> {
 public:
  // Implemented by the Connection. Called from handlers only, never from
  // inside the session's own public functions.
  struct Owner {
    virtual ~Owner() = default;
    virtual void ws_output(std::string_view bytes) = 0;  // to the client (TLS applies)
    virtual void ws_message(std::string_view text) = 0;  // one complete text message
    // Beast waits for more bytes from the client: the connection may read
    // again if it stopped because too much was read and not yet taken.
    virtual void ws_starved() = 0;
    // The session is over (closing handshake done, a protocol error closed
    // it, the handshake was refused, or the client went away): close the
    // connection once its output is written.
    virtual void ws_ended() = 0;
  };

  // `deflate`: offer permessage-deflate (EDRI_WEBSOCKET_DEFLATE), with
  // server_no_context_takeover always (websocket_deflate.hpp).
  WebSocketSession(asio::io_context& io, Owner& owner, std::size_t max_message, bool deflate = false);

  // Answers the upgrade request (101, or Beast's 400/426 with
  // `Connection: close`, and an end). `headers`: extra response header
  // lines ("Name: value\r\n"...).
  void accept(const http::HttpRequest& req, std::string_view headers);
  // Bytes read from the client after the upgrade request; a session
  // without a read waiting starts one.
  void feed(const char* data, std::size_t n) {
    pipe_.push(data, n);
    if (n > 0 && !reading_) read();
  }
  // Whether a data frame may go out now: open, and no close sent or asked.
  bool can_send() const { return opened_ && !closing_ && !ended_ && owner_ && ws_.is_open(); }
  // Sends a close frame with `code` after what was written so far.
  void close(std::uint16_t code, std::string reason);
  // Stops and restarts taking messages (backpressure on commands in flight
  // and on unsent output).
  void pause() { paused_ = true; }
  void resume();
  // The owner is gone (connection closed): nothing is called back any more.
  void detach();

  bool open() const { return opened_ && !closing_ && owner_; }
  // When this side sent its close frame (the epoch: not yet). The
  // connection gives the client a bounded time to answer it.
  std::chrono::steady_clock::time_point close_sent_at() const { return close_sent_at_; }
  bool paused() const { return paused_; }
  // Bytes read from the client that Beast has not taken yet.
  std::size_t input_backlog() const { return pipe_.in.size() - pipe_.in_off; }

 private:
  void read();
  void on_read(beast::error_code ec);
  // A close frame arrived (Beast's control callback, before Beast echoes
  // it): one with a code RFC 6455 7.4 does not allow is a protocol error.
  void on_close_frame();
  void start_close();
  void end();

  Pipe pipe_;
  // deflateSupported: permessage-deflate can be offered (EDRI_WEBSOCKET_DEFLATE).
  beast::websocket::stream<LoopStream, true> ws_;
  Owner* owner_;
  // The message being read; its block goes back to the thread's free list
  // when the session is idle.
  beast::basic_flat_buffer<RecycledBlocks<char>> buffer_;
  beast::websocket::close_reason close_reason_;
  bool opened_ = false;
  bool reading_ = false;
  bool paused_ = false;
  bool closing_ = false;  // a close was asked for
  bool close_sent_ = false;
  bool ended_ = false;
  std::chrono::steady_clock::time_point close_sent_at_{};
};

}  // namespace edri::listener
