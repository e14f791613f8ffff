// Http1Codec: a Connection speaking HTTP/1.1 (decision 0035). The reading
// side is http::Http1Reader (no I/O: the parser, input held while the
// pipeline is full, the header and body clocks); the answering side is
// Http1Answers (pipelined requests answered in order, streamed answers
// chunked). Between them: each request read goes to the owner, a full
// pipeline pauses reading, a last answer stops it, 100 Continue is sent
// when nothing else is owed, an upgrade hands the connection to the
// WebSocket codec, and Server-Sent Events may take the whole connection
// (then what the client sends is dropped, and its end closes it).
#pragma once

#include "http/http1_reader.hpp"
#include "listener/codec.hpp"
#include "listener/connection_owner.hpp"
#include "listener/http1_answers.hpp"

namespace edri::listener {

class Http1Codec final : public Codec, private Http1Answers::Events {
 public:
  // Draining on reload, how long an idle connection stays for a next
  // request (docs/operations.md, "Reload").
  static constexpr std::chrono::seconds kDrainQuiet{1};
  Http1Codec(CodecHost& host, ConnectionContext& ctx);

  AnswerSink& answers() override { return answers_; }
  bool receive(std::string_view bytes, Clock::time_point now) override;
  bool must_pause(std::size_t backlog) const override;
  bool resume(Clock::time_point now) override;
  void go_away() override;
  void go_away_gently() override;
  void check_time(Clock::time_point now) override;
  bool waiting() const override { return !answers_.empty(); }
  void for_each_overdue(Clock::time_point cutoff, const std::function<void(std::uint32_t)>& f) override {
    answers_.for_each_overdue(cutoff, f);
  }
  bool answers_owed() const override { return !answers_.empty(); }
  bool ends_with_client() const override { return events_; }
  bool input_left() const override { return reader_.input_left(); }
  bool stream_stalled_since(Clock::time_point cutoff) const override { return answers_.stream_stalled_since(cutoff); }
  void cancel() override { answers_.drop(); }
  AnswerSink::EventsCarrier start_events(std::uint32_t seq, std::string_view lines) override;
  void live_send(std::int32_t call, const SharedMessage& ws, const SharedFrame& sse) override;

 private:
  // Http1Answers::Events
  void output_ready() override { host_.output_ready(); }
  void last_answer_queued() override;
  void stream_cancel(const StreamRef& ref) override { ctx_.producers.stream_cancel(ref); }

  // Each request the reader delivers.
  void request(http::HttpRequest& req);
  // A body past EDRI_UPLOAD_THRESHOLD goes to a file as it arrives.
  bool spill(http::HttpRequest& req, std::string_view bytes);
  void send_continue();
  // What a feed came to: whether to read on.
  bool follow(const http::Http1Reader::Outcome& outcome, Clock::time_point now);
  // Reads no request after the one being answered (RFC 9112 9.6).
  void stop();

  CodecHost& host_;
  ConnectionContext& ctx_;
  http::Http1Reader reader_;
  Http1Answers answers_;
  bool events_ = false;  // Server-Sent Events hold the connection
};

}  // namespace edri::listener
