#include "broker/stream_book.hpp"

#include <spdlog/spdlog.h>

#include <edri/live_stream.hpp>

#include <algorithm>
#include <chrono>

#include "envelope/control.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"
#include "envelope/stream_patch.hpp"

namespace edri::broker {

namespace env = edri::envelope;

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StreamBook::StreamBook(const Config& config, transport::Outbox& to_router, std::vector<transport::Outbox*> to_listener)
    : log_size_(config.stream_log),
      max_bytes_(config.stream_max_bytes),
      ordered_by_switch_(!config.nats_url.empty()),
      to_router_(to_router),
      to_listener_(std::move(to_listener)),
      done_(to_listener_.size(), true) {}

StreamBook::Stream& StreamBook::stream(std::string_view name) {
  auto it = streams_.find(std::string(name));
  if (it == streams_.end()) {
    it = streams_.try_emplace(std::string(name)).first;
    it->second.followers.assign(to_listener_.size(), false);
  }
  return it->second;
}

void StreamBook::on_manager_control(const env::EnvelopeHeader& h, const env::StreamRecord& r) {
  if (!is_valid_stream_name(r.name))
    return answer(h, 422, {{"detail", "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -"}});
  if (h.event_type == env::kControlStreamPublish) return publish(h, r);
  if (h.event_type == env::kControlStreamRead) return read(h, r.name);
  if (h.event_type == env::kControlStreamApply) return apply(r);
  spdlog::error("dropping unknown stream control {} from a manager", h.event_type);
}

void StreamBook::publish(const env::EnvelopeHeader& h, const env::StreamRecord& r) {
  const auto known = streams_.find(std::string(r.name));
  env::StreamState fresh;
  env::StreamState& state = known == streams_.end() ? fresh : known->second.state;
  auto applied = env::apply_stream_patch(r.name, state, r.json, max_bytes_);
  if (const auto* refused = std::get_if<env::PatchRefused>(&applied))
    return answer(h, refused->status, {{"detail", refused->detail}});
  Stream& s = known == streams_.end() ? stream(r.name) : known->second;
  if (known == streams_.end()) s.state = std::move(fresh);
  auto& [patch, text] = std::get<env::PatchApplied>(applied);
  advance(r.name, s, s.revision + 1, now_us(), std::move(patch), text);
  answer(h, 200, {{"stream", r.name}, {"revision", s.revision}});
}

void StreamBook::advance(std::string_view name, Stream& s, std::uint64_t revision, std::int64_t ts,
                         nlohmann::json patch, const std::string& text) {
  const std::uint64_t from = s.revision;
  s.revision = revision;
  s.ts = ts;
  if (log_size_ > 0) {
    s.log.push_back(Revision{s.revision, s.ts, std::move(patch)});
    while (s.log.size() > log_size_) s.log.pop_front();
  }
  const env::StreamRecord out{from, s.revision, s.ts, name, text};
  for (std::uint16_t l = 0; l < s.followers.size(); ++l)
    if (s.followers[l]) send_record(l, env::kControlStreamPatch, out, nullptr);
}

void StreamBook::apply(const env::StreamRecord& r) {
  Stream& s = stream(r.name);
  if (r.revision <= s.revision) return;  // known already (a replay, or the watch after our own)
  auto value = nlohmann::json::parse(r.json, nullptr, false);
  if (value.is_discarded() || !value.is_object() || !value.contains("state") || !value["state"].is_object()) {
    spdlog::error("dropping a malformed revision of stream {}", r.name);
    return;
  }
  auto& patches = value["patches"];
  if (r.from == s.revision && patches.is_array() && patches.size() == r.revision - r.from) {
    // Contiguous: each patch is a revision of its own for the followers.
    for (auto& patch : patches) {
      s.state.value.merge_patch(patch);
      const std::string text = patch.dump();
      s.state.bound += text.size();  // see apply_stream_patch
      advance(r.name, s, s.revision + 1, r.ts, std::move(patch), text);
    }
    return;
  }
  // A gap (revisions this broker never saw: the bucket keeps only the
  // newest, and the watch fell behind it): followers start again from the
  // state, as after a broker restart.
  spdlog::info("stream {}: revisions {} to {} came as one state (a gap after {}): followers get a snapshot", r.name,
               r.from + 1, r.revision, s.revision);
  s.state.replace(std::move(value["state"]));
  s.revision = r.revision;
  s.ts = r.ts;
  s.log.clear();
  for (std::uint16_t l = 0; l < s.followers.size(); ++l)
    if (s.followers[l]) send_state(l, r.name, s);
}

void StreamBook::read(const env::EnvelopeHeader& h, std::string_view name) {
  auto it = streams_.find(std::string(name));
  if (it == streams_.end())
    return answer(h, 200, {{"stream", name}, {"revision", 0}, {"state", nlohmann::json::object()}});
  answer(h, 200, {{"stream", name}, {"revision", it->second.revision}, {"state", it->second.state.value}});
}

void StreamBook::on_listener_control(std::uint16_t listener, const env::EnvelopeHeader& h, const env::StreamRecord& r) {
  if (h.event_type == env::kControlStreamRecover) return recover(listener, r);
  if (!is_valid_stream_name(r.name)) {
    spdlog::error("listener {}: a stream control with an invalid name", listener);
    return;
  }
  switch (h.event_type) {
    case env::kControlStreamFollow: {
      Stream& s = stream(r.name);
      s.followers[listener] = true;
      return send_state(listener, r.name, s);
    }
    case env::kControlStreamUnfollow: return unfollow(listener, r.name);
    case env::kControlStreamResume: return resume(listener, h, r);
    default: spdlog::error("dropping unknown stream control {} from listener {}", h.event_type, listener);
  }
}

void StreamBook::unfollow(std::uint16_t listener, std::string_view name) {
  auto it = streams_.find(std::string(name));
  if (it == streams_.end()) return;
  auto& followers = it->second.followers;
  followers[listener] = false;
  // A name clients followed but nobody ever published holds nothing worth
  // keeping: forgotten, or subscribing to made-up names would grow this
  // book without bound.
  if (it->second.revision == 0 && std::find(followers.begin(), followers.end(), true) == followers.end())
    streams_.erase(it);
}

void StreamBook::resume(std::uint16_t listener, const env::EnvelopeHeader& h, const env::StreamRecord& r) {
  const Stream& s = stream(r.name);
  const std::uint64_t since = r.from;
  const bool in_log = !s.log.empty() && since + 1 >= s.log.front().revision;
  if (since > s.revision || (since < s.revision && !in_log)) return send_state(listener, r.name, s, &h);
  nlohmann::json patch = nlohmann::json::object();
  for (const auto& rev : s.log)
    if (rev.revision > since && !compose_merge_patch(patch, rev.patch)) return send_state(listener, r.name, s, &h);
  const std::string text = patch.dump();
  send_record(listener, env::kControlStreamPatch, env::StreamRecord{since, s.revision, s.ts, r.name, text}, &h);
}

void StreamBook::send_state(std::uint16_t listener, std::string_view name, const Stream& s,
                            const env::EnvelopeHeader* h) {
  const std::string text = s.state.value.dump();
  send_record(listener, env::kControlStreamState, env::StreamRecord{s.revision, s.revision, s.ts, name, text}, h);
}

void StreamBook::send_record(std::uint16_t listener, std::uint64_t code, const env::StreamRecord& r,
                             const env::EnvelopeHeader* h) {
  auto head = env::make_header(env::Kind::Control, code, 0);
  head.origin_listener = listener;
  head.origin_stream = env::kNoAnswer;
  if (h) {
    head.origin_connection = h->origin_connection;
    head.origin_generation = h->origin_generation;
    head.origin_stream = 0;
  }
  const std::string payload = env::encode_stream_record(r);
  env::EnvelopeWriter w(head);
  w.text(env::SectionType::Control, payload);
  // Never refused for room: what a listener was sent, its subscribers were
  // promised. Only a record larger than a ring is, and states are bounded
  // well below that (EDRI_STREAM_MAX_BYTES).
  if (!env::send(*to_listener_[listener], w, transport::Admission::Answer))
    spdlog::error("listener {}: stream {} does not fit a record", listener, r.name);
}

void StreamBook::answer(const env::EnvelopeHeader& h, int status, const nlohmann::json& body) {
  if (h.origin_stream == env::kNoAnswer) return;
  const bool sent = status < 300 ? env::send_json_answer(to_router_, h, status, body.dump())
                                 : env::send_problem(to_router_, h, status, body.value("detail", ""));
  if (!sent) spdlog::error("a stream's answer did not fit a record");
}

void StreamBook::listener_reset(std::uint16_t listener) {
  for (auto& [name, s] : streams_) s.followers[listener] = false;
  listener_done(listener);
}

void StreamBook::start_recovery() {
  waiting_ = to_listener_.size();
  done_.assign(to_listener_.size(), false);
  auto head = env::make_header(env::Kind::Control, env::kControlStreamRecoverAll, 0);
  env::EnvelopeWriter w(head);
  for (auto* out : to_listener_)
    if (!env::send(*out, w, transport::Admission::Answer)) spdlog::error("cannot ask a listener for its streams");
  if (!ordered_by_switch_) return;
  // The switch knows every stream's newest revision: streams that no
  // listener here follows are learned again too.
  env::EnvelopeWriter replay(env::make_header(env::Kind::Control, env::kControlStreamReplay, 0));
  if (!env::send(to_router_, replay, transport::Admission::Answer))
    spdlog::error("cannot ask the switch for the streams");
}

void StreamBook::recover(std::uint16_t listener, const env::StreamRecord& r) {
  if (r.name.empty()) return listener_done(listener);
  if (!is_valid_stream_name(r.name)) return;
  auto state = nlohmann::json::parse(r.json, nullptr, false);
  if (state.is_discarded() || !state.is_object()) return;
  Stream& s = stream(r.name);
  s.followers[listener] = true;
  reported_.push_back(Reported{listener, std::string(r.name), r.revision});
  if (r.revision <= s.revision) return;
  s.state.replace(std::move(state));
  s.revision = r.revision;
  s.ts = r.ts;
  s.log.clear();
}

void StreamBook::listener_done(std::uint16_t listener) {
  if (waiting_ == 0 || listener >= done_.size() || done_[listener]) return;
  done_[listener] = true;
  if (--waiting_ == 0) finish_recovery();
}

void StreamBook::finish_recovery() {
  waiting_ = 0;
  for (const auto& r : reported_) {
    const Stream& s = stream(r.name);
    if (r.revision != s.revision) send_state(r.listener, r.name, s);
  }
  reported_.clear();
  auto held = std::move(held_);
  held_.clear();
  if (!held.empty()) spdlog::info("streams recovered from the listeners: {} held records go on", held.size());
  for (const auto& h : held) replay(h.listener, h.record);
}

bool StreamBook::hold(std::int32_t listener, std::span<const std::byte> record) {
  if (waiting_ == 0) return false;
  held_.push_back(Held{listener, std::vector<std::byte>(record.begin(), record.end())});
  return true;
}

}  // namespace edri::broker
