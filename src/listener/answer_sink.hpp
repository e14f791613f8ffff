// AnswerSink: where a request's answer goes, whichever protocol carries it.
// Each protocol's side of a connection is one (HTTP/1.1's ordered slots,
// HTTP/2's streams, a WebSocket's command answers), so that the fronts and
// Answers build an answer once, protocol-neutral, and the sink frames it:
// HTTP/1.1 serializes it into its turn, HTTP/2 hands it to its stream,
// a WebSocket wraps it as a command message.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <variant>

#include "http/request_parser.hpp"
#include "http/response_writer.hpp"
#include "listener/file_body.hpp"
#include "listener/slot_info.hpp"
#include "listener/stream_ref.hpp"
#include "transport/blob_arena.hpp"

namespace edri::listener {

// An answer's body: none, bytes (copied by the sink), a file range, or a
// body in the blob area (sent from its mapping, freed once sent).
using AnswerBody = std::variant<std::monostate, std::string_view, FileBody, transport::BlobLease>;

// The writer of the listener's HTTP/1.1 heads and of the lines every answer
// has (Server, Date): one for the process, whose loop is one thread.
http::ResponseWriter& answer_writer();

class AnswerSink {
 public:
  virtual ~AnswerSink() = default;

  // The protocol's name as the gate and the logs say it ("http/1.1", "h2",
  // "websocket").
  virtual std::string_view protocol() const = 0;

  // Opens the slot of the request being dispatched; its sequence number.
  virtual std::uint32_t open(SlotInfo info) = 0;
  // Slot `seq` while its answer is owed, else nullptr (a stale answer).
  virtual SlotInfo* slot(std::uint32_t seq) = 0;
  // Keeps slot `seq`'s body file until its answer went, or its request
  // ended otherwise: then it is removed.
  virtual void hold_upload(std::uint32_t seq, std::shared_ptr<http::SpilledBody> upload) = 0;

  // Answers slot `seq` with head `h`, the header lines `lines` ("Name:
  // value\r\n"..., not the ones every answer has: the sink adds those) and
  // `body` of h.content_length bytes (dropped for HEAD and bodyless
  // statuses).
  virtual void respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view lines, AnswerBody body) = 0;
  // A streamed answer (Response::stream; h.framing Length or Chunked): its
  // head now, its pieces as they come (stream_piece). False when no body
  // will be taken (HEAD, a bodyless status, a protocol without streams):
  // the producer must be stopped.
  virtual bool open_stream(std::uint32_t seq, http::ResponseHead h, std::string_view lines, StreamRef ref) = 0;
  // A piece of slot `seq`'s stream: `bytes`, or `blob`. `end`: the last
  // piece; `abort`: the producer failed, the answer is cut short. False
  // when the slot has no open stream (the piece is stale).
  virtual bool stream_piece(std::uint32_t seq, std::string_view bytes, transport::BlobLease blob, bool end,
                            bool abort) = 0;

  // Server-Sent Events on slot `seq` (a 200 of text/event-stream with
  // `lines`): what carries its frames from here on.
  enum class EventsCarrier {
    Stream,      // the slot's own stream; the connection's others go on beside it
    Connection,  // the whole connection, until either side closes it
    Refused,     // not here (answers still owed ahead of it, or no way to carry it)
  };
  virtual EventsCarrier open_events(std::uint32_t seq, std::string_view lines) = 0;
};

}  // namespace edri::listener
