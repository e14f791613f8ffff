#include "listener/http1_answers.hpp"

#include <cstdio>

namespace edri::listener {

namespace {
// The chunk-size line of a piece of `size` bytes (RFC 9112 7.1).
std::string chunk_head(std::uint64_t size) {
  char buf[24];
  const int n = std::snprintf(buf, sizeof buf, "%llx\r\n", static_cast<unsigned long long>(size));
  return std::string(buf, static_cast<std::size_t>(n));
}
}  // namespace

http::ResponseWriter& answer_writer() {
  static http::ResponseWriter writer;
  return writer;
}

std::uint32_t Http1Answers::open(SlotInfo info) {
  const bool last = !info.keep_alive;
  slots_.emplace_back().info = std::move(info);
  if (last) events_.last_answer_queued();  // nothing read after it
  return next_seq_++;
}

Http1Answers::Slot* Http1Answers::find(std::uint32_t seq) {
  const std::uint32_t idx = seq - base_seq_;
  return idx < slots_.size() && !slots_[idx].ready ? &slots_[idx] : nullptr;
}

SlotInfo* Http1Answers::slot(std::uint32_t seq) {
  Slot* s = find(seq);
  return s ? &s->info : nullptr;
}

void Http1Answers::hold_upload(std::uint32_t seq, std::shared_ptr<http::SpilledBody> upload) {
  const std::uint32_t idx = seq - base_seq_;
  if (idx < slots_.size()) slots_[idx].upload = std::move(upload);
}

void Http1Answers::respond(std::uint32_t seq, const http::ResponseHead& h, std::string_view lines, AnswerBody body) {
  Slot* s = find(seq);
  if (!s) return;
  if (const auto* bytes = std::get_if<std::string_view>(&body)) return complete(seq, *s, h, lines, *bytes);
  // A file or a blob goes after the head, from where it is; HEAD drops it
  // unsent (the file closed, the blob freed).
  if (auto* file = std::get_if<FileBody>(&body); file && !h.head) s->body = OutputQueue::Piece{std::move(*file)};
  if (auto* blob = std::get_if<transport::BlobLease>(&body); blob && !h.head)
    s->body = OutputQueue::Piece{std::move(*blob)};
  complete(seq, *s, h, lines, {});
}

void Http1Answers::complete(std::uint32_t seq, Slot& s, const http::ResponseHead& h, std::string_view lines,
                            std::string_view body) {
  s.ready = true;
  // The oldest slot: everything before it is queued, so it goes straight
  // into the queue's tail (the common case, no copy).
  answer_writer().write(seq == base_seq_ ? out_.tail() : s.bytes, h, lines, body);
  promote_ready();
}

void Http1Answers::promote_ready() {
  bool any = false;
  while (!slots_.empty() && slots_.front().ready) {
    Slot& s = slots_.front();
    any = true;
    if (!s.bytes.empty()) out_.append(s.bytes);
    s.bytes.clear();
    if (s.body) out_.append(std::move(*s.body));
    s.body.reset();
    for (auto& p : s.pieces) out_.append(std::move(p));
    s.pieces.clear();
    // An open stream holds its place until its last piece.
    if (s.streaming && !s.stream_done) break;
    const bool last = !s.info.keep_alive;
    slots_.pop_front();
    ++base_seq_;
    if (last) {
      // Nothing after an answer that closes the connection is answered.
      drop();
      events_.last_answer_queued();
      break;
    }
  }
  if (any) events_.output_ready();
}

bool Http1Answers::open_stream(std::uint32_t seq, http::ResponseHead h, std::string_view lines, StreamRef ref) {
  Slot* s = find(seq);
  if (!s) return false;
  if (s->info.head || http::bodyless_status(h.status)) {
    complete(seq, *s, h, lines, {});  // the head alone
    return false;
  }
  // An HTTP/1.0 client knows no chunks: the body ends with the connection.
  if (h.framing == http::ResponseHead::Framing::Chunked && s->info.http10) {
    h.framing = http::ResponseHead::Framing::Close;
    h.keep_alive = false;
    s->info.keep_alive = false;
  }
  s->streaming = true;
  s->stream = ref;
  s->stream.chunked = h.framing == http::ResponseHead::Framing::Chunked;
  s->last_piece = std::chrono::steady_clock::now();
  complete(seq, *s, h, lines, {});
  return true;
}

void Http1Answers::add_piece(Slot& s, std::string_view bytes, transport::BlobLease blob) {
  const std::uint64_t size = blob ? blob.view().size() : bytes.size();
  if (size == 0) return;
  const auto credit = static_cast<std::uint32_t>(std::min<std::uint64_t>(size, UINT32_MAX));
  std::string head = s.stream.chunked ? chunk_head(size) : std::string();
  if (blob) {
    if (!head.empty()) s.pieces.push_back(OutputQueue::Piece{std::move(head)});
    s.pieces.push_back(OutputQueue::Piece{std::move(blob), 0, credit, s.stream});
    if (s.stream.chunked) s.pieces.push_back(OutputQueue::Piece{std::string("\r\n")});
    return;
  }
  head.append(bytes);
  if (s.stream.chunked) head.append("\r\n");
  s.pieces.push_back(OutputQueue::Piece{std::move(head), 0, credit, s.stream});
}

bool Http1Answers::stream_piece(std::uint32_t seq, std::string_view bytes, transport::BlobLease blob, bool end,
                                bool abort) {
  const std::uint32_t idx = seq - base_seq_;
  if (idx >= slots_.size() || !slots_[idx].streaming || slots_[idx].stream_done) return false;
  Slot& s = slots_[idx];
  s.last_piece = std::chrono::steady_clock::now();
  add_piece(s, bytes, std::move(blob));
  if (abort) {
    // Cut short: no last chunk, and the connection closes after what was
    // sent, so the client sees an incomplete answer.
    s.stream_done = true;
    s.info.keep_alive = false;
  } else if (end) {
    s.stream_done = true;
    if (s.stream.chunked) s.pieces.push_back(OutputQueue::Piece{std::string("0\r\n\r\n")});
  }
  if (idx == 0) promote_ready();
  return true;
}

AnswerSink::EventsCarrier Http1Answers::open_events(std::uint32_t seq, std::string_view lines) {
  Slot* s = find(seq);
  // Events go out as they come, not in a slot's turn: nothing may still be
  // owed ahead of them.
  if (!s || seq != base_seq_) return EventsCarrier::Refused;
  // The body runs until either side closes: no length, not chunked. The
  // slot is answered but keeps the connection.
  std::string& out = out_.tail();
  out += s->info.http10 ? "HTTP/1.0 200 OK\r\n" : "HTTP/1.1 200 OK\r\n";
  out += "Content-Type: text/event-stream\r\n";
  out += lines;
  out += "Connection: close\r\n\r\n";
  s->ready = true;
  s->info.keep_alive = true;
  promote_ready();
  return EventsCarrier::Connection;
}

bool Http1Answers::close_after_last() {
  if (slots_.empty()) return false;
  slots_.back().info.keep_alive = false;
  return true;
}

void Http1Answers::drop() {
  for (const auto& s : slots_)
    if (s.streaming && !s.stream_done) events_.stream_cancel(s.stream);
  slots_.clear();
}

bool Http1Answers::stream_stalled_since(std::chrono::steady_clock::time_point cutoff) const {
  if (slots_.empty()) return false;
  const Slot& s = slots_.front();
  return s.streaming && !s.stream_done && s.last_piece < cutoff;
}

}  // namespace edri::listener
