// The switch serving other instances: their requests for this instance's
// domains go to the router as the switch's own, and the answers go back
// on NATS, one message per asker a turn (docs/decisions/0019).
#include <spdlog/spdlog.h>

#include "cluster/inbound.hpp"
#include "cluster/portable.hpp"
#include "cluster/switch.hpp"
#include "envelope/problem.hpp"

namespace edri::cluster {

namespace env = edri::envelope;

void Switch::on_manager(std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (env::peek_header(record, h) != env::DecodeError::None ||
      h.kind != static_cast<std::uint8_t>(env::Kind::Response)) {
    spdlog::error("dropping an envelope a manager sent the switch that is not an answer");
    return;
  }
  answer(h, record);
}

void Switch::serve(const NatsMessage& m) {
  const auto reply = std::make_shared<const std::string>(m.reply);
  const bool ok = !reply->empty() && for_each_entry(m.data, FrameKind::Request, [&](const WireEntry& e) {
    if (e.view.header.kind == static_cast<std::uint8_t>(env::Kind::Request)) serve_one(reply, e);
  });
  if (std::uint64_t unlogged = 0; !ok && request_log_.allow(unlogged))
    spdlog::warn("dropping a malformed request from NATS on {}{}", m.subject, LogLimit::more(unlogged));
}

void Switch::serve_one(const std::shared_ptr<const std::string>& reply, const WireEntry& e) {
  if (e.entry.deadline_ms == 0) return;  // the asker gives up now
  // The manager measures a body before it parses it, with the limit for
  // JSON that edri's processes made (kJsonDepthCeiling: a request that
  // crossed has a reply_to, as another manager's has), but not the claims
  // (inbound.hpp): they are measured here.
  if (json_too_deep("json", e.view.text(env::SectionType::Claims))) {
    auto& out = answers_out_.try_emplace(*reply, FrameKind::Answer).first->second;
    out.add_problem(e.entry.id, e.view.header, 422, "the request's claims nest too deep");
    return;
  }
  const auto id = ++next_served_;
  auto header = e.view.header;
  header.request_id = id;
  header.reply_to = static_cast<std::uint16_t>(loop_.slot());
  header.t0_ns = env::monotonic_ns();
  if (!send_local(to_router_, header, e.view, loop_.blobs(), config_.blob_threshold, transport::Admission::Work)) {
    auto& out = answers_out_.try_emplace(*reply, FrameKind::Answer).first->second;
    out.add_problem(e.entry.id, e.view.header, 503, "the instance serving it is overloaded; retry");
    return;
  }
  const auto deadline = add_deadline(Clock::now() + std::chrono::milliseconds(e.entry.deadline_ms), id, true);
  served_.emplace(id, Served{reply, e.entry.id, e.view.header, deadline});
  state_.requests_served.fetch_add(1, std::memory_order_relaxed);
}

void Switch::answer(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  const auto it = served_.find(h.request_id);
  if (it == served_.end() || (h.flags & env::kFlagStreamPiece)) return;  // past its deadline: the asker answered
  const Served served = std::move(it->second);
  deadlines_.erase(served.deadline);
  served_.erase(it);
  queue_answer(served, h.status, record);
}

void Switch::queue_answer(const Served& served, int status, std::span<const std::byte> record) {
  auto& out = answers_out_.try_emplace(*served.reply, FrameKind::Answer).first->second;
  std::string problem;
  const auto limit = message_limit();
  const auto header = env::response_header_for(served.request, status);
  if (const int refused = out.add(served.asker_id, 0, header, record, loop_.blobs(), limit, problem))
    out.add_problem(served.asker_id, served.request, refused, problem);
  if (out.size() <= limit) return;
  auto last = out.take_last();
  if (!nats_.publish(*served.reply, "", out.bytes())) spdlog::debug("answers for another instance were lost with NATS");
  out.clear();
  out.put_back(last);
}

void Switch::send_answers() {
  for (auto& [reply, out] : answers_out_)
    if (!out.empty() && !nats_.publish(reply, "", out.bytes()))
      spdlog::debug("answers for another instance were lost with NATS");
  answers_out_.clear();
}

}  // namespace edri::cluster
