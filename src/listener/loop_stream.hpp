// LoopStream: the byte stream under Boost.Beast's WebSocket stream.
//
// Beast's websocket::stream needs an Asio stream below it, but a listener's
// sockets live in its own epoll loop (docs/decisions/0002), and TLS is
// already undone by the Connection. So the lowest layer is this adapter:
// the Connection pushes the (decrypted) bytes it read into `Pipe::in`, and
// everything Beast writes goes to `Pipe::write`, which appends to the
// Connection's output. Completion handlers are posted to an io_context that
// the listener polls once per loop turn; that io_context never waits on a
// descriptor, it is only a queue of handlers (docs/decisions/0005).
#pragma once

#include "runtime/asio.hpp"

#include "listener/message_ends.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace edri::listener {

namespace beast = boost::beast;

// The state LoopStream shares with the Connection that owns it.
struct Pipe {
  struct PendingRead {
    virtual ~PendingRead() = default;
    virtual void finish(Pipe& pipe) = 0;  // copies what it can, posts the handler
  };

  std::string in;  // read from the client, not yet taken by Beast
  std::size_t in_off = 0;
  MessageEnds handed;   // what was taken, message by message
  bool eof = false;     // the client is gone: reads fail
  bool broken = false;  // the connection is gone: writes fail
  std::function<void(std::string_view)> write;
  // A read found nothing to take and waits: the owner may read more.
  std::function<void()> starved;
  std::unique_ptr<PendingRead> pending;

  bool has_input() const { return in_off < in.size(); }
  // New bytes from the client; completes a waiting read.
  void push(const char* data, std::size_t n) {
    in.append(data, n);
    wake();
  }
  // The client or the connection went away: a waiting read fails.
  void end() {
    eof = true;
    broken = true;
    wake();
  }
  void wake() {
    if (pending) {
      auto op = std::move(pending);
      op->finish(*this);
    }
  }
};

class LoopStream {
 public:
  using executor_type = asio::io_context::executor_type;

  LoopStream(asio::io_context& io, Pipe& pipe) : ex_(io.get_executor()), pipe_(&pipe) {}

  executor_type get_executor() const noexcept { return ex_; }
  Pipe& pipe() { return *pipe_; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(beast::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          using H = std::decay_t<decltype(handler)>;
          auto op = std::make_unique<ReadOp<MutableBuffers, H>>(b, std::move(handler), ex_);
          if (pipe_->has_input() || pipe_->eof || asio::buffer_size(b) == 0) {
            op->finish(*pipe_);
          } else {
            pipe_->pending = std::move(op);
            if (pipe_->starved) pipe_->starved();
          }
        },
        token, buffers);
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(beast::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          beast::error_code ec;
          std::size_t n = 0;
          if (pipe_->broken) {
            ec = asio::error::broken_pipe;
          } else {
            // The Connection queues everything; its own limits apply there.
            for (auto it = asio::buffer_sequence_begin(b); it != asio::buffer_sequence_end(b); ++it) {
              const asio::const_buffer cb(*it);
              pipe_->write(std::string_view(static_cast<const char*>(cb.data()), cb.size()));
              n += cb.size();
            }
          }
          asio::post(ex_, beast::bind_front_handler(std::move(handler), ec, n));
        },
        token, buffers);
  }

 private:
  template <class MutableBuffers, class Handler>
  struct ReadOp final : Pipe::PendingRead {
    ReadOp(const MutableBuffers& b, Handler h, executor_type ex) : buffers(b), handler(std::move(h)), ex(ex) {}
    void finish(Pipe& pipe) override {
      beast::error_code ec;
      std::size_t n = 0;
      if (pipe.has_input()) {
        n = asio::buffer_copy(buffers, asio::const_buffer(pipe.in.data() + pipe.in_off, pipe.in.size() - pipe.in_off));
        pipe.handed.feed(std::string_view(pipe.in).substr(pipe.in_off, n));
        pipe.in_off += n;
        if (pipe.in_off == pipe.in.size()) {
          pipe.in.clear();
          pipe.in_off = 0;
        }
      } else if (pipe.eof) {
        ec = asio::error::eof;
      }
      asio::post(ex, beast::bind_front_handler(std::move(handler), ec, n));
    }
    MutableBuffers buffers;
    Handler handler;
    executor_type ex;
  };

  executor_type ex_;
  Pipe* pipe_;
};

// Beast closes the lowest layer when one of its timeouts fires (none are
// set) or an operation fails for good: the connection is then over.
inline void beast_close_socket(LoopStream& s) { s.pipe().broken = s.pipe().eof = true; }

// Beast's closing handshake ends with a teardown of the layer below. Here
// there is nothing to tear down: the session tells the Connection to close
// once its output is written.
template <class Handler>
void async_teardown(beast::role_type, LoopStream& s, Handler&& handler) {
  asio::post(s.get_executor(), beast::bind_front_handler(std::forward<Handler>(handler), beast::error_code{}));
}

}  // namespace edri::listener
