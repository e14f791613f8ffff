// Codec: the side of a Connection that speaks its protocol (decision 0035).
//
// A Connection is the transport (ClientSocket, OutputQueue, back-pressure,
// the write-stall clock, the lingering close), one codec and its life
// cycle. The codec is chosen once (HTTP/1.1, or HTTP/2 from its preface)
// and swapped once at most (an HTTP/1.1 upgrade to WebSocket). The
// connection never asks which one runs: what it reads goes to receive(),
// output a codec makes lazily is produce()d before each write, the
// server's stop is go_away(), the time limits are check_time(), and a
// request's answer goes to answers(). What only the transport can do, a
// codec asks of its CodecHost.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "listener/answer_sink.hpp"
#include "listener/output_queue.hpp"
#include "listener/shared_frame.hpp"
#include "listener/websocket_deflate.hpp"

namespace edri::listener {

class Codec;
class Connection;
class Http2Link;
class WebSocketCodec;

// What a codec may ask of the connection that holds it.
class CodecHost {
 public:
  using Clock = std::chrono::steady_clock;

  // The connection, as the owner's callbacks name it.
  virtual Connection& connection() = 0;
  virtual OutputQueue& output() = 0;
  // Output was queued: it is written this loop turn.
  virtual void output_ready() = 0;
  // Nothing is queued or being written.
  virtual bool output_idle() const = 0;
  // Appends a frame shared with other connections, or closes this one
  // (1008) when its unsent output would pass 8 x EDRI_OUTPUT_BUFFER
  // (a subscriber that does not read); false then.
  virtual bool append_shared(const SharedFrame& frame) = 0;
  // Writes `bytes` at once when nothing else is owed or waiting to go
  // (HTTP/1.1's interim 100); dropped otherwise.
  virtual void write_interim(std::string_view bytes) = 0;
  // The connection ends once its output is out.
  virtual void end_after_output() = 0;
  // Reads no more from the client, for now (resume()) or for good.
  virtual void pause_reading() = 0;
  virtual void stop_reading() = 0;
  virtual bool reading_paused() const = 0;
  virtual bool reading_stopped() const = 0;
  // When the client last sent a byte.
  virtual Clock::time_point last_input() const = 0;
  // The client was too slow (a 408): its close does not linger.
  virtual void timed_out() = 0;
  // The answers still due will not be wanted (the owner hears it once).
  virtual void abandon_answers() = 0;
  // An upgrade was taken (Connection::upgrade): the next codec speaks
  // from `rest` on (the bytes read past the upgrade request), once this
  // codec's receive() has returned.
  virtual bool upgrading() const = 0;
  virtual void hand_over(std::string_view rest) = 0;
  virtual void close() = 0;
  virtual bool closed() const = 0;

 protected:
  ~CodecHost() = default;
};

class Codec {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Codec() = default;

  // Where the answers of the requests this codec reads go.
  virtual AnswerSink& answers() = 0;
  // Bytes the client sent, read at `now`: false when the connection
  // should read no more for now (paused, ended or closed).
  virtual bool receive(std::string_view bytes, Clock::time_point now) = 0;
  // Read nothing more now: too much in flight, or `backlog` unsent bytes
  // past the bound.
  virtual bool must_pause(std::size_t backlog) const = 0;
  // Reading resumes after a pause: input held meanwhile is taken first.
  // False: read no more now.
  virtual bool resume(Clock::time_point) { return true; }
  // Before each write: output made as room allows (HTTP/2's frames), and
  // whether more waits for room.
  virtual void produce() {}
  virtual bool wants_write() const { return false; }
  // After each write: the client took output, so flow may open again.
  virtual void output_taken() {}
  // The server is stopping: what is in flight is answered, then the
  // connection ends.
  virtual void go_away() = 0;
  // A reload's stop: the same, unless the protocol can wait for the
  // client's next request to say so (HTTP/1.1's Connection: close).
  virtual void go_away_gently() { go_away(); }
  // EDRI_HEADER_TIMEOUT, EDRI_BODY_TIMEOUT, EDRI_KEEPALIVE_TIMEOUT and the
  // protocol's own limits, checked by the listener's sweep.
  virtual void check_time(Clock::time_point now) = 0;
  // Requests dispatched and not answered.
  virtual bool waiting() const = 0;
  // f(seq) for each one opened before `cutoff`.
  virtual void for_each_overdue(Clock::time_point cutoff, const std::function<void(std::uint32_t)>& f) = 0;
  // Answers not yet queued that a closing connection must still write
  // (HTTP/1.1's ordered slots): it ends after them.
  virtual bool answers_owed() const { return false; }
  // The client closed its side: true when the connection ends at once
  // (nothing it is owed could still reach it, or it only watched).
  virtual bool ends_with_client() const = 0;
  // The client sent what was not read: the close lingers.
  virtual bool input_left() const { return false; }
  // A streamed answer waits on its producer since before `cutoff`.
  virtual bool stream_stalled_since(Clock::time_point) const { return false; }
  // The connection closed: producers stop, nothing is called back.
  virtual void cancel() = 0;
  // Ends with a close that carries `code` (a WebSocket's close frame):
  // false when the protocol has none (the connection just closes).
  virtual bool close_with(std::uint16_t, std::string_view) { return false; }

  // Server-Sent Events on slot `seq`: on this codec's slot stream, on the
  // whole connection (HTTP/1.1), or refused.
  virtual AnswerSink::EventsCarrier start_events(std::uint32_t seq, std::string_view lines) {
    return answers().open_events(seq, lines);
  }
  // Live subscribers (Connection::live_send): `call` 0 is the connection
  // itself, else an HTTP/2 stream.
  virtual void live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) = 0;
  virtual bool live_behind(std::int32_t) { return false; }
  virtual void live_want_drain(std::int32_t) {}
  virtual void push(std::uint64_t, const SharedMessage&) {}

  // The protocol's own side, for the front made for it (GrpcFront,
  // WebSocketFront); null on the others.
  virtual Http2Link* http2() { return nullptr; }
  virtual WebSocketCodec* websocket() { return nullptr; }
};

}  // namespace edri::listener
