// The switch's side of live streams across instances (docs/decisions/0020).
#include <spdlog/spdlog.h>

#include "cluster/switch.hpp"
#include "envelope/control.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"
#include "envelope/stream_record.hpp"

namespace edri::cluster {

namespace env = edri::envelope;

Switch::~Switch() { loop_.events().unwatch(streams_.ready_fd()); }

void Switch::on_stream_control(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  if (h.event_type == env::kControlStreamReplay) {
    // A broker (re)started: it learns every stream again.
    for (const auto& r : streams_.all()) send_revision(r);
    return;
  }
  env::EnvelopeView v;
  std::optional<env::StreamRecord> r;
  if (env::decode(record, v) == env::DecodeError::None)
    r = env::decode_stream_record(v.section(env::SectionType::Control));
  if (!r || (h.event_type != env::kControlStreamPublish && h.event_type != env::kControlStreamRead)) {
    spdlog::error("dropping a stream control {} the switch does not take", h.event_type);
    return;
  }
  StreamLedger::Job job{h, std::string(r->name), std::nullopt};
  if (h.event_type == env::kControlStreamPublish) job.patch = std::string(r->json);
  streams_.submit(std::move(job));
}

void Switch::streams_ready() {
  streams_.take(revisions_taken_, answers_taken_);
  for (const auto& r : revisions_taken_) send_revision(r);
  for (const auto& a : answers_taken_) {
    if (a.h.origin_stream == env::kNoAnswer) continue;
    const bool sent = a.status < 300 ? env::send_json_answer(to_router_, a.h, a.status, a.body.dump())
                                     : env::send_problem(to_router_, a.h, a.status, a.body.value("detail", ""));
    if (!sent) spdlog::error("a stream's answer did not fit a record");
  }
  revisions_taken_.clear();
  answers_taken_.clear();
}

void Switch::send_revision(const StreamLedger::Revision& r) {
  auto head = env::make_header(env::Kind::Control, env::kControlStreamApply, 0);
  head.origin_stream = env::kNoAnswer;
  const std::string payload = env::encode_stream_record(env::StreamRecord{r.from, r.revision, r.ts, r.name, r.value});
  env::EnvelopeWriter w(head);
  w.text(env::SectionType::Control, payload);
  if (!env::send(to_router_, w, transport::Admission::Answer))
    spdlog::error("stream {}: revision {} does not fit a record", r.name, r.revision);
}

}  // namespace edri::cluster
