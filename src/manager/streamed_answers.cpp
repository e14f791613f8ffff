// The manager's streamed answers (Response::stream, docs/decisions/0011):
// a head, then pieces made as the client's listener grants credit.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "envelope/body.hpp"
#include "envelope/control.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"
#include "manager/answer_compression.hpp"
#include "manager/answer_head.hpp"
#include "manager/manager.hpp"

namespace edri::manager {

namespace env = edri::envelope;

void Manager::open_stream(const env::EnvelopeHeader& request, Response& resp) {
  auto& stream = std::get<StreamBody>(resp.body);
  auto encoder = stream_encoder(config_, request, resp);
  const std::int64_t declared = stream.length ? static_cast<std::int64_t>(*stream.length) : -1;
  env::EnvelopeWriter w(answer_header(request, resp.status));
  add_head(w, resp);
  // An encoded body's length is known at its end only: chunked.
  const env::StreamHead head{static_cast<std::uint16_t>(loop_.slot()), 0,
                             static_cast<std::uint32_t>(config_.stream_window), encoder ? -1 : declared};
  w.raw(env::SectionType::Stream, std::as_bytes(std::span<const env::StreamHead>(&head, 1)));
  if (!env::send(to_router_, w, transport::Admission::Answer)) {
    (void)env::send_problem(to_router_, request, 500, "the streamed answer's head does not fit a record");
    return;
  }
  // The listener may take a window's worth before its first credit.
  streams_.insert_or_assign(request.request_id,
                            OpenStream{request, std::move(stream.next), config_.stream_window, declared, 0,
                                       std::chrono::steady_clock::now(), std::move(encoder)});
  pump(request.request_id);
  if (!stream_timer_armed_ && !streams_.empty()) {
    stream_timer_armed_ = true;
    stream_timer_.expires_after(std::chrono::seconds(1));
  }
}

void Manager::pump(std::uint64_t id) {
  auto it = streams_.find(id);
  while (it != streams_.end() && it->second.credit > 0) {
    OpenStream& s = it->second;
    piece_.clear();
    bool more = false;
    bool failed = false;
    std::string_view out;
    try {
      more = s.next(piece_);
      out = coded_piece(s, more);
    } catch (const std::exception& e) {
      spdlog::error("the producer of a streamed answer threw: {}", e.what());
      failed = true;
    } catch (...) {
      spdlog::error("the producer of a streamed answer threw a non-exception");
      failed = true;
    }
    const std::uint64_t total = s.sent + piece_.size();
    if (!failed && s.length >= 0 &&
        (total > static_cast<std::uint64_t>(s.length) || (!more && total != static_cast<std::uint64_t>(s.length)))) {
      spdlog::error("a streamed answer made {} bytes{}, not the {} it declared", total, more ? " so far" : "",
                    s.length);
      failed = true;
    }
    if (failed) {
      (void)send_piece(s, {}, env::kFlagStreamEnd | env::kFlagStreamAbort);
      streams_.erase(it);
      return;
    }
    if (more && piece_.empty()) {
      // Nothing yet: asked again shortly, not spun on.
      idle_streams_.push_back(id);
      if (!stream_timer_armed_ || idle_streams_.size() == 1) {
        stream_timer_armed_ = true;
        stream_timer_.expires_after(std::chrono::milliseconds(1));
      }
      return;
    }
    if (!send_piece(s, out, more ? 0 : env::kFlagStreamEnd)) {
      spdlog::error("a piece of streamed answer {} could not be queued: the stream ends short", id);
      (void)send_piece(s, {}, env::kFlagStreamEnd | env::kFlagStreamAbort);
      streams_.erase(it);
      return;
    }
    s.sent = total;
    // The listener grants back the bytes the client took: the coded ones.
    s.credit -= std::min<std::uint64_t>(s.credit, out.size());
    if (!more) {
      streams_.erase(it);
      return;
    }
  }
}

std::string_view Manager::coded_piece(OpenStream& s, bool more) {
  // A producer with nothing yet is asked again: nothing to flush.
  if (!s.encoder || (more && piece_.empty())) return piece_;
  coded_.clear();
  s.encoder->write(piece_, coded_);
  if (more)
    s.encoder->flush(coded_);
  else
    s.encoder->finish(coded_);
  return coded_;
}

bool Manager::send_piece(const OpenStream& s, std::string_view bytes, std::uint16_t flags) {
  auto rh = env::response_header_for(s.request, 200);
  rh.flags = static_cast<std::uint16_t>(env::kFlagStreamPiece | flags);
  env::EnvelopeWriter w(rh);
  transport::BlobLease blob;
  if (!env::attach_body(w, blob, loop_.blobs(), config_.blob_threshold, bytes))
    w.text(env::SectionType::Body, bytes);  // inline, if a record holds it
  if (w.size() > to_router_.max_record()) return false;
  // Pieces are answers, bounded by the stream window.
  if (!env::send(to_router_, w, transport::Admission::Answer)) return false;
  (void)blob.take();  // the listener frees it
  return true;
}

void Manager::on_stream_control(const env::EnvelopeView& v) {
  const auto id = v.header.request_id;
  auto it = streams_.find(id);
  if (it == streams_.end()) return;  // ended already
  if (v.header.event_type == env::kControlStreamCancel) {
    streams_.erase(it);
    return;
  }
  const auto payload = v.section(env::SectionType::Control);
  std::uint64_t n = 0;
  if (payload.size() != sizeof n) return;
  std::memcpy(&n, payload.data(), sizeof n);
  it->second.credit += n;
  it->second.last_credit = std::chrono::steady_clock::now();
  // A producer waiting in idle_streams_ is asked by the timer, not here.
  if (std::find(idle_streams_.begin(), idle_streams_.end(), id) == idle_streams_.end()) pump(id);
}

void Manager::sweep_streams() {
  auto idle = std::move(idle_streams_);
  idle_streams_.clear();
  for (const auto id : idle) pump(id);
  // A stream whose listener went away (its cancel was lost with it) grants
  // no more credit: dropped after the write timeout and some.
  const auto cutoff =
      std::chrono::steady_clock::now() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(config_.write_timeout_s + 10.0));
  std::erase_if(streams_, [&](const auto& kv) {
    return kv.second.credit == 0 && kv.second.last_credit < cutoff &&
           std::find(idle_streams_.begin(), idle_streams_.end(), kv.first) == idle_streams_.end();
  });
  if (streams_.empty()) return;
  stream_timer_armed_ = true;
  stream_timer_.expires_after(idle_streams_.empty() ? std::chrono::nanoseconds(std::chrono::seconds(1))
                                                    : std::chrono::nanoseconds(std::chrono::milliseconds(1)));
}

Response Manager::collect(Response& resp) {
  // The most one body can be: the blob area, or a channel record.
  auto* blobs = loop_.blobs();
  const std::size_t limit = blobs ? blobs->capacity() : to_router_.max_record();
  std::string body;
  try {
    for (int idle = 0;;) {
      const std::size_t before = body.size();
      const bool more = std::get<StreamBody>(resp.body).next(body);
      if (body.size() > limit)
        return Response::problem(500, "Internal Server Error",
                                 "the streamed answer is larger than one body may be (" + std::to_string(limit) +
                                     " bytes) for an asker that takes no stream");
      if (!more) break;
      // A producer that waits on something cannot be collected here.
      if (body.size() == before && ++idle > 1000)
        return Response::problem(500, "Internal Server Error", "the streamed answer made no bytes");
    }
  } catch (const std::exception& e) {
    spdlog::error("the producer of a streamed answer threw: {}", e.what());
    return Response::problem(500, "Internal Server Error",
                             config_.production ? "the handler failed" : std::string("producer threw: ") + e.what());
  }
  return Response{resp.status, std::move(resp.content_type), std::move(body), std::move(resp.headers)};
}

}  // namespace edri::manager
