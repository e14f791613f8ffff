#include "listener/http2_link.hpp"

#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <variant>

#include <spdlog/spdlog.h>

#include "listener/connection.hpp"
#include "listener/upload_file.hpp"

namespace edri::listener {

namespace {

// A byte range of a file, read as the window allows.
class FileRange final : public http2::BodySource {
 public:
  explicit FileRange(FileBody file) : file_(std::move(file)) {}
  Read read(std::uint8_t* buf, std::size_t max) override {
    if (file_.remaining() == 0) return {0, true};
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, file_.remaining()));
    const ssize_t r = ::pread(file_.fd(), buf, want, static_cast<off_t>(file_.offset()));
    if (r <= 0) return {0, false, true};  // the file shrank or failed: the promised length cannot be sent
    file_.advance(static_cast<std::uint64_t>(r));
    return {static_cast<std::size_t>(r), file_.remaining() == 0};
  }

 private:
  FileBody file_;
};

}  // namespace

// A streamed answer's body: its pieces as they come; each piece's bytes
// are granted back to its producer once the session took them all.
class PiecesBody final : public http2::BodySource {
 public:
  PiecesBody(StreamProducers& producers, StreamRef ref) : producers_(producers), ref_(ref) {}
  void add(std::string_view bytes, transport::BlobLease blob) {
    if (blob)
      pieces_.emplace_back(std::move(blob));
    else if (!bytes.empty())
      pieces_.emplace_back(std::string(bytes));
  }
  void end(bool abort) { (abort ? aborted_ : ended_) = true; }
  Read read(std::uint8_t* buf, std::size_t max) override {
    std::size_t n = 0;
    while (n < max && !pieces_.empty()) {
      const std::string_view v = view(pieces_.front());
      const std::size_t take = std::min(max - n, v.size() - off_);
      std::memcpy(buf + n, v.data() + off_, take);
      n += take;
      off_ += take;
      if (off_ < v.size()) break;
      producers_.stream_credit(ref_, v.size());
      pieces_.pop_front();
      off_ = 0;
    }
    if (pieces_.empty() && aborted_) return {n, false, n == 0};
    return {n, pieces_.empty() && ended_};
  }

 private:
  using Piece = std::variant<std::string, transport::BlobLease>;
  static std::string_view view(const Piece& p) {
    if (const auto* s = std::get_if<std::string>(&p)) return *s;
    return std::get<transport::BlobLease>(p).view();
  }
  StreamProducers& producers_;
  StreamRef ref_;
  std::deque<Piece> pieces_;
  std::size_t off_ = 0;
  bool ended_ = false;
  bool aborted_ = false;
};

Http2Link::Http2Link(Connection& c, ConnectionContext& ctx, const http2::Limits& limits)
    : c_(c), ctx_(ctx), session_(*this, limits), max_running_(limits.max_concurrent_streams) {}

Http2Link::~Http2Link() = default;

std::uint32_t Http2Link::open(SlotInfo info) {
  // A slot's sequence number is its stream's id: unique on the connection
  // and never reused (RFC 9113 5.1.1), as sequence numbers must be.
  const auto seq = static_cast<std::uint32_t>(dispatching_);
  // A stream never closes the connection, whatever its request said.
  info.keep_alive = true;
  info.http10 = false;
  slots_[seq].info = std::move(info);
  return seq;
}

Http2Link::Slot* Http2Link::find(std::uint32_t seq) {
  const auto it = slots_.find(seq);
  return it == slots_.end() || it->second.gone ? nullptr : &it->second;
}

SlotInfo* Http2Link::slot(std::uint32_t seq) {
  const auto it = slots_.find(seq);
  if (it == slots_.end()) return nullptr;
  // A gone stream's slot is asked for only once its answer came (or is
  // overdue), to be dropped: its request no longer counts.
  if (it->second.gone) {
    slots_.erase(it);
    wake_starved();
    return nullptr;
  }
  return it->second.answered ? nullptr : &it->second.info;
}

std::size_t Http2Link::running() const {
  return grpc_.running() + static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(),
                                                                  [](const auto& kv) { return !kv.second.answered; }));
}

void Http2Link::respond_body(std::uint32_t seq, Slot& s, const http::ResponseHead& h, std::string_view lines,
                             std::unique_ptr<http2::BodySource> body) {
  s.answered = true;
  const int status = (h.status >= 200 && h.status <= 999) ? h.status : 500;  // no 1xx as a final answer
  const bool no_content = status == 204 || status == 304;
  if (h.head || no_content) body.reset();
  const bool sized = h.framing == http::ResponseHead::Framing::Length && !no_content;
  session_.respond(static_cast<std::int32_t>(seq), status, no_content ? std::string_view() : h.content_type,
                   sized ? static_cast<std::int64_t>(h.content_length) : -1, lines, std::move(body));
  wake_starved();
  c_.h2_output();
}

void Http2Link::wake_starved() {
  bool any = false;
  grpc_.for_each([&](std::int32_t stream, GrpcCall& call) {
    if (!call.starved) return;
    call.starved = false;
    woken_.push_back(stream);
    any = true;
  });
  if (any) c_.h2_output();
}

std::string_view Http2Link::with_standard_lines(std::string_view lines) {
  static std::string composed;  // the listener's loop is one thread
  composed.assign(answer_writer().standard_lines());
  composed.append(lines);
  return composed;
}

void Http2Link::respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view lines, AnswerBody body) {
  Slot* s = find(seq);
  if (!s || s->answered) return;
  std::unique_ptr<http2::BodySource> source;
  if (auto* bytes = std::get_if<std::string_view>(&body); bytes && !bytes->empty())
    source = http2::bytes_body(std::string(*bytes));
  if (auto* file = std::get_if<FileBody>(&body)) source = std::make_unique<FileRange>(std::move(*file));
  if (auto* blob = std::get_if<transport::BlobLease>(&body)) {
    // Copied from the blob area's mapping as the window allows; freed with
    // the stream.
    source = std::make_unique<http2::HeldBody<transport::BlobLease>>(
        std::move(*blob), [](const transport::BlobLease& b) { return b.view(); });
  }
  respond_body(seq, *s, h, with_standard_lines(lines), std::move(source));
}

bool Http2Link::open_stream(std::uint32_t seq, http::ResponseHead h, std::string_view lines, StreamRef ref) {
  Slot* s = find(seq);
  if (!s || s->answered) return false;
  if (s->info.head || http::bodyless_status(h.status)) {
    respond_body(seq, *s, h, with_standard_lines(lines), nullptr);  // the head alone
    return false;
  }
  auto body = std::make_unique<PiecesBody>(ctx_.producers, ref);
  s->pieces = body.get();
  s->ref = ref;
  respond_body(seq, *s, h, with_standard_lines(lines), std::move(body));
  return true;
}

bool Http2Link::stream_piece(std::uint32_t seq, std::string_view bytes, transport::BlobLease blob, bool end,
                             bool abort) {
  Slot* s = find(seq);
  if (!s || !s->pieces) return false;
  s->pieces->add(bytes, std::move(blob));
  if (end || abort) s->pieces->end(abort);
  session_.resume(static_cast<std::int32_t>(seq));
  c_.h2_output();
  return true;
}

bool Http2Link::held_by_client() const {
  for (const auto& [seq, s] : slots_)
    if (s.answered && session_.send_window_shut(static_cast<std::int32_t>(seq))) return true;
  return false;
}

void Http2Link::cancel_all() {
  for (auto& [seq, s] : slots_)
    if (s.pieces) ctx_.producers.stream_cancel(s.ref);
  slots_.clear();
}

void Http2Link::on_request(std::int32_t stream, http::HttpRequest& req) {
  // Requests whose streams were reset still run: with them, what one
  // connection has running stays within EDRI_MAX_PIPELINE whatever it
  // resets. REFUSED_STREAM: this one never started, the client may retry.
  if (full()) {
    session_.reset(stream, NGHTTP2_REFUSED_STREAM);
    return c_.h2_output();
  }
  dispatching_ = stream;
  ctx_.owner.request(c_, req);
  dispatching_ = 0;
}

void Http2Link::produce(std::string& out, std::size_t max) {
  session_.produce(out, max);
  // Calls whose client took their answers may take messages again; events
  // streams whose client took their frames may be sent what they missed.
  if (woken_.empty()) return;
  const std::vector<std::int32_t> streams = std::move(woken_);
  woken_.clear();
  for (const auto stream : streams) {
    if (grpc_.find(stream))
      ctx_.grpc.grpc_body(c_, stream, {}, false);
    else if (Slot* s = find(static_cast<std::uint32_t>(stream)); s && s->events)
      ctx_.live.events_drained(c_, stream);
  }
}

void Http2Link::shutdown(bool end_events) {
  for (auto& [seq, s] : slots_)
    if (s.events && end_events) {
      s.events->end();
      session_.resume(static_cast<std::int32_t>(seq));
    }
  session_.shutdown();
}

AnswerSink::EventsCarrier Http2Link::open_events(std::uint32_t seq, std::string_view lines) {
  Slot* s = find(seq);
  if (!s || s->answered) return EventsCarrier::Refused;
  auto body = std::make_unique<QueuedBody>(static_cast<std::int32_t>(seq), woken_);
  s->events = body.get();
  s->answered = true;
  session_.respond(static_cast<std::int32_t>(seq), 200, "text/event-stream", -1, with_standard_lines(lines),
                   std::move(body));
  c_.h2_output();
  return EventsCarrier::Stream;
}

void Http2Link::live_frame(std::int32_t stream, std::string_view bytes) {
  if (grpc_.find(stream)) return ctx_.grpc.grpc_stream_frame(c_, stream, bytes);
  Slot* s = find(static_cast<std::uint32_t>(stream));
  if (!s || !s->events) return;
  s->events->add(bytes);
  session_.resume(stream);
  c_.h2_output();
}

bool Http2Link::live_behind(std::int32_t stream) {
  if (grpc_.find(stream)) return ctx_.grpc.grpc_stream_behind(c_, stream);
  Slot* s = find(static_cast<std::uint32_t>(stream));
  return s && s->events && s->events->held() > 0;
}

void Http2Link::live_want_drain(std::int32_t stream) {
  if (grpc_.find(stream)) return ctx_.grpc.grpc_want_drain(c_, stream);
  Slot* s = find(static_cast<std::uint32_t>(stream));
  if (!s || !s->events) return;
  if (s->events->held() > 0) {
    s->events->wake_when_drained = true;
    return;
  }
  woken_.push_back(stream);  // nothing waits: told on the connection's next turn
  c_.h2_output();
}

bool Http2Link::on_head(std::int32_t stream, http::HttpRequest& head) {
  // application/grpc, alone or with a subtype (+proto, +json) or
  // parameters: gRPC's own content types (PROTOCOL-HTTP2.md).
  const std::string_view type = head.header("content-type");
  constexpr std::string_view kGrpc = "application/grpc";
  if (type.substr(0, kGrpc.size()) != kGrpc) return false;
  if (type.size() > kGrpc.size() && type[kGrpc.size()] != '+' && type[kGrpc.size()] != ';') return false;
  ctx_.grpc.grpc_open(c_, stream, head);
  return true;
}

void Http2Link::on_body(std::int32_t stream, std::string_view bytes, bool end) {
  if (GrpcCall* call = grpc_.find(stream)) call->last_input = now_;
  ctx_.grpc.grpc_body(c_, stream, bytes, end);
}

void Http2Link::grpc_respond(std::int32_t stream, std::string_view lines, std::unique_ptr<http2::BodySource> body) {
  session_.respond(stream, 200, "application/grpc", -1, lines, std::move(body));
  c_.h2_output();
}

void Http2Link::grpc_resume(std::int32_t stream) {
  session_.resume(stream);
  c_.h2_output();
}

void Http2Link::grpc_reset(std::int32_t stream) {
  session_.reset(stream, NGHTTP2_ENHANCE_YOUR_CALM);
  c_.h2_output();
}

void Http2Link::grpc_refuse(std::int32_t stream) {
  session_.reset(stream, NGHTTP2_REFUSED_STREAM);
  c_.h2_output();
}

void Http2Link::on_refused(std::int32_t stream, int status, std::string_view reason) {
  dispatching_ = stream;
  ctx_.owner.refuse(c_, status, reason);
  dispatching_ = 0;
}

bool Http2Link::on_spill(std::int32_t stream, http::HttpRequest& req, std::string_view bytes) {
  // As over HTTP/1.1: a large body goes to a file as it arrives.
  const std::string& dir = ctx_.config.upload_path;
  if (!req.spill) req.spill = UploadFile::create(dir);
  if (!req.spill) {
    spdlog::error("cannot create an upload file in {} (stream {}): {}", dir, stream, std::strerror(errno));
    return false;
  }
  if (static_cast<UploadFile&>(*req.spill).append(bytes)) return true;
  spdlog::error("cannot write an upload file in {}: {}", dir, std::strerror(errno));
  return false;
}

void Http2Link::hold_upload(std::uint32_t seq, std::shared_ptr<http::SpilledBody> upload) {
  if (Slot* s = find(seq)) s->upload = std::move(upload);
}

void Http2Link::time_out_bodies(std::chrono::steady_clock::time_point cutoff) {
  for (const std::int32_t stream : session_.bodies_stalled(cutoff))
    on_refused(stream, 408, "the request body stopped arriving for EDRI_BODY_TIMEOUT");
  time_out_calls(cutoff);
}

void Http2Link::time_out_calls(std::chrono::steady_clock::time_point cutoff) {
  // A call with no grpc-timeout whose client stopped inside a message
  // would hold its stream and buffer for ever; one waiting between
  // messages (a Connect call) is not stalled, nor one whose messages wait
  // for the server.
  bool any = false;
  grpc_.for_each([&](std::int32_t stream, GrpcCall& call) {
    if (call.finished || call.stalled || call.client_done || !call.reader.partial() || call.last_input >= cutoff)
      return;
    call.stalled = true;
    session_.reset(stream, NGHTTP2_CANCEL);
    any = true;
  });
  if (any) c_.h2_output();
}

void Http2Link::time_out() {
  time_out_bodies(std::chrono::steady_clock::time_point::max());
  session_.shutdown();
}

void Http2Link::on_closed(std::int32_t stream, bool answered) {
  if (const GrpcCall* call = grpc_.find(stream)) {
    for (const auto& p : call->pending)
      if (!p.ready) ctx_.owner.answer_abandoned(c_, p.seq);
    ctx_.grpc.grpc_closed(c_, stream);
    return grpc_.close(stream);
  }
  const auto it = slots_.find(static_cast<std::uint32_t>(stream));
  if (it == slots_.end() || it->second.gone) return;
  if (!it->second.answered) {
    it->second.gone = true;
    return ctx_.owner.answer_abandoned(c_, it->first);
  }
  // Closed before its last piece went (a reset): the producer stops.
  if (it->second.pieces && !answered) ctx_.producers.stream_cancel(it->second.ref);
  if (it->second.events) ctx_.live.events_closed(c_, stream);
  slots_.erase(it);
}

}  // namespace edri::listener
