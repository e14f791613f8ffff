#include "listener/stream_hub.hpp"

#include <spdlog/spdlog.h>

#include <edri/live_stream.hpp>

#include <algorithm>
#include <charconv>

#include "envelope/control.hpp"
#include "listener/websocket_frame.hpp"

namespace edri::listener {

namespace env = edri::envelope;

namespace {

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

}  // namespace

std::optional<std::pair<int, std::string>> StreamHub::ws_command(Connection& c, std::string_view command,
                                                                 const nlohmann::json& msg, std::int32_t call) {
  Busy busy(*this);
  const auto name = msg.find("stream");
  if (name == msg.end() || !name->is_string() || !is_valid_stream_name(name->get_ref<const std::string&>()))
    return std::pair{422, std::string("\"stream\" must be a name of 1 to 128 of A-Z a-z 0-9 . _ : -")};
  const std::string& stream = name->get_ref<const std::string&>();
  if (command == "stream.unsubscribe") {
    unsubscribe(c, stream, call);
    return std::nullopt;
  }
  std::optional<std::uint64_t> since;
  if (const auto s = msg.find("since"); s != msg.end()) {
    if (!s->is_number_unsigned()) return std::pair{422, std::string("\"since\" must be a revision (an integer >= 0)")};
    since = s->get<std::uint64_t>();
  }
  const auto held = by_connection_.find(&c);
  const bool again = held != by_connection_.end() &&
                     std::find(held->second.begin(), held->second.end(), Held{stream, call}) != held->second.end();
  if (!again && held != by_connection_.end() && held->second.size() >= config_.websocket_max_subscriptions)
    return std::pair{429, std::string("too many subscriptions on this connection (EDRI_WEBSOCKET_MAX_SUBSCRIPTIONS)")};
  subscribe(c, stream, since, false, call);
  return std::nullopt;
}

void StreamHub::subscribe_events(Connection& c, std::string_view name, std::optional<std::uint64_t> since,
                                 std::int32_t call) {
  Busy busy(*this);
  if (metrics_) transport::bump_owned(metrics_->sse_streams);
  subscribe(c, name, since, true, call);
}

void StreamHub::subscribe(Connection& c, std::string_view name, std::optional<std::uint64_t> since, bool sse,
                          std::int32_t call) {
  const std::string key(name);
  auto [it, fresh] = streams_.try_emplace(key);
  Stream& s = it->second;
  if (fresh) send_to_broker(env::kControlStreamFollow, env::StreamRecord{0, 0, 0, key, {}});
  Subscriber* sub = find(s, c, call);
  if (!sub) {
    s.subscribers.push_back(Subscriber(&c, sse, call));
    sub = &s.subscribers.back();
    auto& held = by_connection_[&c];
    // Its first stream: frames the client does not take pile up here, where
    // they coalesce, rather than in megabytes of socket buffer. (Not for
    // an HTTP/2 connection's calls: its other streams share the socket.)
    if (held.empty() && call == 0 && config_.stream_send_buffer > 0)
      c.limit_send_buffer(static_cast<int>(config_.stream_send_buffer));
    held.emplace_back(key, call);
  } else {
    *sub = Subscriber(&c, sse, call);  // subscribing again starts afresh
  }
  sub->since = since;
  if (s.following) serve(key, s, *sub);
}

void StreamHub::unsubscribe(Connection& c, std::string_view name, std::int32_t call) {
  auto it = streams_.find(std::string(name));
  if (it == streams_.end()) return;
  auto& subs = it->second.subscribers;
  const auto at =
      std::find_if(subs.begin(), subs.end(), [&](const Subscriber& s) { return s.conn == &c && s.call == call; });
  if (at == subs.end()) return;
  *at = std::move(subs.back());
  subs.pop_back();
  if (auto held = by_connection_.find(&c); held != by_connection_.end()) {
    std::erase(held->second, Held{it->first, call});
    if (held->second.empty()) by_connection_.erase(held);
  }
  if (!subs.empty()) return;
  send_to_broker(env::kControlStreamUnfollow, env::StreamRecord{0, 0, 0, it->first, {}});
  if (it->second.dirty) std::erase(dirty_, it->first);
  streams_.erase(it);
}

StreamHub::Busy::~Busy() {
  if (outer_) return;
  hub_.busy_ = false;
  auto closing = std::move(hub_.closing_);
  hub_.closing_.clear();
  for (auto* c : closing) hub_.closed(*c);
}

void StreamHub::closed(Connection& c) {
  if (busy_) {
    closing_.push_back(&c);
    return;
  }
  auto held = by_connection_.find(&c);
  if (held == by_connection_.end()) return;
  const auto names = held->second;
  for (const auto& [name, call] : names) unsubscribe(c, name, call);
}

void StreamHub::call_closed(Connection& c, std::int32_t call) {
  Busy busy(*this);
  auto held = by_connection_.find(&c);
  if (held == by_connection_.end()) return;
  const auto names = held->second;
  for (const auto& [name, on] : names)
    if (on == call) unsubscribe(c, name, call);
}

bool StreamHub::call_subscribed(const Connection& c, std::int32_t call) const {
  const auto held = by_connection_.find(const_cast<Connection*>(&c));
  if (held == by_connection_.end()) return false;
  return std::any_of(held->second.begin(), held->second.end(), [&](const Held& h) { return h.second == call; });
}

StreamHub::Subscriber* StreamHub::find(Stream& s, const Connection& c, std::int32_t call) {
  for (auto& sub : s.subscribers)
    if (sub.conn == &c && sub.call == call) return &sub;
  return nullptr;
}

void StreamHub::send(const Frame& f, Subscriber& sub) {
  if (metrics_) transport::bump_owned(metrics_->stream_frames);
  sub.conn->live_send(sub.call, f.ws, f.sse);
}

void StreamHub::serve(const std::string& name, Stream& s, Subscriber& sub) {
  const auto since = sub.since;
  if (since && *since < s.revision) {
    // Further back than this listener knows: the broker keeps the log.
    send_to_broker(env::kControlStreamResume, env::StreamRecord{*since, 0, 0, name, {}}, sub.conn);
    return;
  }
  sub.awaiting = false;
  sub.revision = s.revision;
  if (since && *since == s.revision)
    send(patch_frame(name, s.revision, s.revision, "{}", s.ts, sub.sse), sub);
  else
    send(snapshot_frame(name, s, sub.sse), sub);
}

void StreamHub::on_control(const env::EnvelopeView& v) {
  Busy busy(*this);
  const auto& h = v.header;
  if (h.event_type == env::kControlStreamRecoverAll) return recover_all();
  const auto r = env::decode_stream_record(v.section(env::SectionType::Control));
  if (!r) {
    spdlog::error("dropping a malformed stream control from the broker");
    return;
  }
  const bool targeted = h.origin_stream != env::kNoAnswer;
  if (h.event_type == env::kControlStreamState) return targeted ? on_answer(h, *r, true) : on_state(v, *r);
  if (h.event_type == env::kControlStreamPatch) return targeted ? on_answer(h, *r, false) : on_patch(v, *r);
  spdlog::error("dropping unknown stream control {} from the broker", h.event_type);
}

void StreamHub::on_state(const env::EnvelopeView&, const env::StreamRecord& r) {
  auto it = streams_.find(std::string(r.name));
  if (it == streams_.end()) return;  // nobody here follows it any more
  Stream& s = it->second;
  if (s.following && s.revision == r.revision) return;  // what this listener holds already
  auto state = nlohmann::json::parse(r.json, nullptr, false);
  if (state.is_discarded() || !state.is_object()) {
    spdlog::error("stream {}: the broker sent a state that is not an object", r.name);
    return;
  }
  s.state = std::move(state);
  s.revision = s.emitted = r.revision;
  s.ts = r.ts;
  s.following = true;
  if (s.dirty) std::erase(dirty_, it->first);
  s.dirty = false;
  for (auto& sub : s.subscribers) {
    if (sub.awaiting) {
      serve(it->first, s, sub);
    } else if (sub.revision != s.revision) {
      // A jump this subscriber's frames cannot make contiguous.
      sub.owes_snapshot = true;
      sub.has_pending = false;
      want_drain(sub);
    }
  }
}

void StreamHub::on_patch(const env::EnvelopeView&, const env::StreamRecord& r) {
  auto it = streams_.find(std::string(r.name));
  if (it == streams_.end() || !it->second.following) return;  // a state is on its way
  Stream& s = it->second;
  if (r.from != s.revision) {
    // A gap (a revision lost on the way): ask for the state afresh.
    spdlog::warn("stream {}: revision {} came after {}; asking the broker for its state", r.name, r.revision,
                 s.revision);
    s.following = false;
    send_to_broker(env::kControlStreamFollow, env::StreamRecord{0, 0, 0, it->first, {}});
    return;
  }
  auto patch = nlohmann::json::parse(r.json, nullptr, false);
  if (patch.is_discarded() || !patch.is_object()) return;
  s.state.merge_patch(patch);
  s.revision = r.revision;
  s.ts = r.ts;
  if (!s.dirty) {
    s.dirty = true;
    s.batch_exact = true;
    s.batch = std::move(patch);
    s.batch_text.assign(r.json);
    dirty_.push_back(it->first);
  } else if (s.batch_exact) {
    s.batch_exact = compose_merge_patch(s.batch, patch);
    s.batch_text.clear();
  }
}

void StreamHub::on_answer(const env::EnvelopeHeader& h, const env::StreamRecord& r, bool state) {
  auto it = streams_.find(std::string(r.name));
  if (it == streams_.end()) return;
  for (auto& sub : it->second.subscribers) {
    if (!sub.awaiting || sub.conn->id() != h.origin_connection || sub.conn->generation() != h.origin_generation)
      continue;
    sub.awaiting = false;
    sub.revision = r.revision;
    if (state) {
      std::string text = R"({"stream":")";
      text.append(r.name).append(R"(","revision":)");
      append_number(text, r.revision);
      text.append(R"(,"state":)").append(r.json).append(R"(,"ts":)");
      append_number(text, static_cast<std::uint64_t>(r.ts));
      text += '}';
      send(frame(std::move(text), "snapshot", r.revision, sub.sse), sub);
    } else {
      send(patch_frame(r.name, r.from, r.revision, r.json, r.ts, sub.sse), sub);
    }
    return;
  }
}

void StreamHub::recover_all() {
  // A broker (re)started: it learns back what this listener follows, and
  // the requests the dead one took and never answered are asked again.
  for (auto& [name, s] : streams_) {
    if (!s.following) {
      send_to_broker(env::kControlStreamFollow, env::StreamRecord{0, 0, 0, name, {}});
      continue;
    }
    const std::string state = s.state.dump();
    send_to_broker(env::kControlStreamRecover, env::StreamRecord{s.revision, s.revision, s.ts, name, state});
    for (auto& sub : s.subscribers)
      if (sub.awaiting) serve(name, s, sub);
  }
  send_to_broker(env::kControlStreamRecover, env::StreamRecord{});
}

void StreamHub::end_turn(bool behind) {
  if (behind && ++held_turns_ < kHoldTurns) return;
  held_turns_ = 0;
  emit();
}

void StreamHub::emit() {
  Busy busy(*this);
  if (dirty_.empty()) return;
  ++pass_;
  auto names = std::move(dirty_);
  dirty_.clear();
  for (const auto& name : names)
    if (auto it = streams_.find(name); it != streams_.end() && it->second.dirty) emit(name, it->second);
}

void StreamHub::emit(const std::string& name, Stream& s) {
  const std::uint64_t from = s.emitted, to = s.revision;
  s.dirty = false;
  s.emitted = to;
  Frame shared[2];  // WebSocket, SSE: made when a subscriber needs it
  std::string patch_text;
  if (s.batch_exact) patch_text = s.batch_text.empty() ? s.batch.dump() : std::move(s.batch_text);
  s.batch_text.clear();
  for (auto& sub : s.subscribers) {
    if (sub.awaiting || sub.revision == to) continue;
    const bool current = !sub.owes_snapshot && !sub.has_pending && sub.revision == from;
    if (!current || behind(sub)) {
      owe(sub, s.batch, s.batch_exact, from, to);
      continue;
    }
    auto& f = shared[sub.sse ? 1 : 0];
    if (!f.ws && !f.sse)
      f = s.batch_exact ? patch_frame(name, from, to, patch_text, s.ts, sub.sse) : snapshot_frame(name, s, sub.sse);
    send(f, sub);
    sub.revision = to;
  }
  s.batch = nullptr;
}

void StreamHub::owe(Subscriber& sub, const nlohmann::json& patch, bool exact, std::uint64_t from, std::uint64_t to) {
  want_drain(sub);
  if (sub.owes_snapshot) return;
  const bool joins = sub.has_pending ? sub.pending_to == from : sub.revision == from;
  if (!exact || !joins) {
    sub.owes_snapshot = true;
    sub.has_pending = false;
    sub.pending = nullptr;
    return;
  }
  if (!sub.has_pending) {
    sub.pending = patch;
    sub.has_pending = true;
  } else if (!compose_merge_patch(sub.pending, patch)) {
    sub.owes_snapshot = true;
    sub.has_pending = false;
    sub.pending = nullptr;
    return;
  }
  sub.pending_to = to;
}

void StreamHub::drained(Connection& c) { call_drained(c, 0); }

void StreamHub::call_drained(Connection& c, std::int32_t call) {
  Busy busy(*this);
  auto held = by_connection_.find(&c);
  if (held == by_connection_.end()) return;
  for (const auto& [name, on] : held->second) {
    auto it = streams_.find(name);
    if (on != call || it == streams_.end()) continue;
    if (Subscriber* sub = find(it->second, c, call)) drain(name, it->second, *sub);
  }
}

void StreamHub::drain(const std::string& name, Stream& s, Subscriber& sub) {
  if (sub.awaiting || !s.following || s.dirty) return;  // emit() comes first
  if (sub.owes_snapshot) {
    send(snapshot_frame(name, s, sub.sse), sub);
    sub.revision = s.revision;
  } else if (sub.has_pending) {
    send(patch_frame(name, sub.revision, sub.pending_to, sub.pending.dump(), s.ts, sub.sse), sub);
    sub.revision = sub.pending_to;
  }
  sub.owes_snapshot = sub.has_pending = false;
  sub.pending = nullptr;
}

bool StreamHub::behind(Subscriber& sub) { return sub.conn->live_behind(sub.call, pass_); }

void StreamHub::want_drain(Subscriber& sub) { sub.conn->live_want_drain(sub.call); }

StreamHub::Frame StreamHub::snapshot_frame(const std::string& name, Stream& s, bool sse) {
  if (s.snapshot_revision != s.revision) {
    s.snapshot_revision = s.revision;
    s.snapshot = {};
  }
  if (sse ? static_cast<bool>(s.snapshot.sse) : static_cast<bool>(s.snapshot.ws))
    return Frame{sse ? nullptr : s.snapshot.ws, sse ? s.snapshot.sse : nullptr};
  std::string text = R"({"stream":")";
  text.append(name).append(R"(","revision":)");
  append_number(text, s.revision);
  text.append(R"(,"state":)").append(s.state.dump()).append(R"(,"ts":)");
  append_number(text, static_cast<std::uint64_t>(s.ts));
  text += '}';
  Frame f = frame(std::move(text), "snapshot", s.revision, sse);
  if (sse)
    s.snapshot.sse = f.sse;
  else
    s.snapshot.ws = f.ws;
  return f;
}

StreamHub::Frame StreamHub::patch_frame(std::string_view name, std::uint64_t from, std::uint64_t to,
                                        std::string_view patch, std::int64_t ts, bool sse) {
  std::string text = R"({"stream":")";
  text.append(name).append(R"(","from":)");
  append_number(text, from);
  text.append(R"(,"revision":)");
  append_number(text, to);
  text.append(R"(,"patch":)").append(patch).append(R"(,"ts":)");
  append_number(text, static_cast<std::uint64_t>(ts));
  text += '}';
  return frame(std::move(text), "patch", to, sse);
}

StreamHub::Frame StreamHub::frame(std::string json, std::string_view event, std::uint64_t id, bool sse) {
  if (!sse) return Frame{make_message(std::move(json)), nullptr};
  // One JSON text has no newline (nlohmann's compact dump), so it is one
  // data: line.
  std::string out = "id: ";
  append_number(out, id);
  out.append("\nevent: ").append(event).append("\ndata: ").append(json).append("\n\n");
  return Frame{nullptr, std::make_shared<const std::string>(std::move(out))};
}

void StreamHub::send_to_broker(std::uint64_t code, const env::StreamRecord& r, const Connection* c) {
  auto h = env::make_header(env::Kind::Control, code, 0);
  h.origin_listener = sender_.index();
  h.origin_stream = env::kNoAnswer;
  if (c) {
    h.origin_connection = c->id();
    h.origin_generation = c->generation();
    h.origin_stream = 0;
  }
  const std::string payload = env::encode_stream_record(r);
  env::EnvelopeWriter w(h);
  w.text(env::SectionType::Control, payload);
  // Must arrive: a follow unanswered would leave its subscribers waiting.
  if (!sender_.send(w, transport::Admission::Answer))
    spdlog::error("stream {}: a control did not fit a record", r.name);
}

}  // namespace edri::listener
