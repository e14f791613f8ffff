// Http1Answers: HTTP/1.1's answer side of a connection. Requests may be
// pipelined; each gets a slot in arrival order and answers leave in that
// order, whatever order they come back in: an answer that comes early waits
// in its slot, serialized, until every one before it is queued. A streamed
// answer (Response::stream) holds its turn from its head to its last piece,
// framed with chunks (or, for HTTP/1.0, by the connection's close).
//
// It writes only into its connection's OutputQueue and knows no socket, so
// it is driven alone in the unit tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/response_writer.hpp"
#include "listener/answer_sink.hpp"
#include "listener/output_queue.hpp"

namespace edri::listener {

class Http1Answers final : public AnswerSink {
 public:
  // What the connection around it hears.
  class Events {
   public:
    virtual ~Events() = default;
    // The queue has more to write.
    virtual void output_ready() = 0;
    // An answer that closes the connection was queued: nothing after it is
    // answered or read.
    virtual void last_answer_queued() = 0;
    // A streamed answer's producer must stop (its slot was dropped).
    virtual void stream_cancel(const StreamRef& ref) = 0;
  };

  Http1Answers(OutputQueue& out, Events& events) : out_(out), events_(events) {}

  // AnswerSink
  std::string_view protocol() const override { return "http/1.1"; }
  std::uint32_t open(SlotInfo info) override;
  SlotInfo* slot(std::uint32_t seq) override;
  void hold_upload(std::uint32_t seq, std::shared_ptr<http::SpilledBody> upload) override;
  void respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view lines, AnswerBody body) override;
  bool open_stream(std::uint32_t seq, http::ResponseHead h, std::string_view lines, StreamRef ref) override;
  bool stream_piece(std::uint32_t seq, std::string_view bytes, transport::BlobLease blob, bool end,
                    bool abort) override;
  EventsCarrier open_events(std::uint32_t seq, std::string_view lines) override;

  std::size_t pending() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  // The last answer owed says Connection: close (the server stops); false
  // when none is owed.
  bool close_after_last();
  // Drops every slot (the connection closes): open streams are cancelled
  // at their producers.
  void drop();
  // True when the oldest slot is a stream waiting on its producer since
  // before `cutoff`.
  bool stream_stalled_since(std::chrono::steady_clock::time_point cutoff) const;
  // Calls f(seq) for each slot still waiting opened before `cutoff`.
  template <class F>
  void for_each_overdue(std::chrono::steady_clock::time_point cutoff, F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].ready && slots_[i].info.opened < cutoff) f(base_seq_ + static_cast<std::uint32_t>(i));
  }

 private:
  struct Slot {
    SlotInfo info;
    bool ready = false;
    std::string bytes;                       // an early answer, serialized
    std::optional<OutputQueue::Piece> body;  // sent after `bytes`: a file or a blob
    // A streamed answer: open from its head to its last piece; pieces wait
    // here until the slot is the oldest.
    bool streaming = false;
    bool stream_done = false;
    StreamRef stream{};
    std::vector<OutputQueue::Piece> pieces;  // a vector: no allocation for the slots that never stream
    std::chrono::steady_clock::time_point last_piece{};
    std::shared_ptr<http::SpilledBody> upload;
  };
  // The pending slot of `seq` (not yet answered), or null.
  Slot* find(std::uint32_t seq);
  // Fills slot `seq`: its head and body bytes straight into the queue when
  // it is the oldest, else into the slot to wait.
  void complete(std::uint32_t seq, Slot& s, const http::ResponseHead& h, std::string_view lines, std::string_view body);
  // Moves the answers now at the front into the queue, in order.
  void promote_ready();
  void add_piece(Slot& s, std::string_view bytes, transport::BlobLease blob);

  OutputQueue& out_;
  Events& events_;
  std::deque<Slot> slots_;
  std::uint32_t base_seq_ = 0;  // sequence number of slots_.front()
  std::uint32_t next_seq_ = 0;
};

}  // namespace edri::listener
