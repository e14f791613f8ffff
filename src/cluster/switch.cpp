#include "cluster/switch.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <random>

#include "cluster/inbound.hpp"
#include "cluster/portable.hpp"
#include "envelope/control.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"
#include "runtime/setting_parsers.hpp"

namespace edri::cluster {

namespace env = edri::envelope;
using namespace std::chrono_literals;

namespace {

constexpr auto kTick = 250ms;
constexpr unsigned kTicksPerHello = 4;
constexpr auto kStoppingTick = 20ms;
// How long after connecting a switch has heard every instance: the others
// answer its first hello at once, and say theirs every second anyway.
constexpr auto kSettle = 1500ms;

std::string random_id() {
  std::random_device rd;
  const std::uint64_t v = (std::uint64_t{rd()} << 32) ^ rd();
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

NatsSettings nats_settings(const Config& c, const std::string& instance) {
  NatsSettings s;
  s.urls = comma_list(c.nats_url);
  s.user = c.nats_user;
  s.password = c.nats_password;
  s.token = c.nats_token;
  s.tls = c.nats_tls;
  s.ca = c.nats_ca;
  s.certificate = c.nats_certificate;
  s.key = c.nats_key;
  s.name = "edri " + c.cluster + " " + instance;
  return s;
}

Switch::Switch(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins)
    : loop_(loop),
      config_(config),
      to_router_(loop.outbox_to(transport::Topology::kRouter)),
      state_(loop.segment().header().cluster),
      instance_(random_id()),
      max_message_(config.nats_max_message),
      nats_(loop.events(), nats_settings(config, instance_)),
      deadline_timer_(loop.events(), [this] { expire(); }),
      tick_timer_(loop.events(), [this] { tick(); }),
      directory_(instance_),
      streams_(nats_settings(config, instance_), config.cluster, config.stream_max_bytes) {
  learn_plugins(plugins);
  loop.events().watch(streams_.ready_fd(), EPOLLIN, [this](std::uint32_t) { streams_ready(); });
  loop.on_records_from(transport::Topology::kRouter, [this](std::span<const std::byte> rec) { on_router(rec); });
  // Managers answer what other instances asked straight here.
  for (std::uint32_t j = 0; j < loop.topology().managers(); ++j)
    loop.on_records_from(loop.topology().manager_slot(j), [this](std::span<const std::byte> rec) { on_manager(rec); });
  const auto& topo = loop.topology();
  if (topo.direct_answers())
    for (std::uint32_t i = 0; i < topo.listeners(); ++i) to_listener_.push_back(&loop.outbox_to(topo.listener_slot(i)));
  loop.after_drain([this] { return end_of_turn(); });
  loop.on_replaced_signal([this] {
    replaced_ = true;
    greet_ = true;  // the others list it as draining at once, not a second from now
    directory_dirty_ = true;
    hand_over();
  });
  loop.on_stop_signal([this] {
    stopping_ = true;
    hand_over();
    // The others stop sending here now, not 3 s from now.
    say_hello(true);
    (void)nats_.flush();
    stop_when_done();
  });
  subscribe_nats();
  subscribe_router();
  nats_changed(nats_.connected());
  directory_changed();
  tick_timer_.expires_after(kTick);
  spdlog::info("instance {} of {}: runs {}; NATS {}", instance_, config.cluster,
               local_domains_.empty() ? std::string("no domain") : nlohmann::json(local_domains_).dump(),
               up_ ? "connected" : "not reachable yet (retrying)");
}

void Switch::learn_plugins(const plugin::PluginSet& plugins) {
  for (const auto& d : plugins.manager_domains(1, config_.domains))
    if (std::find(local_domains_.begin(), local_domains_.end(), d) == local_domains_.end()) local_domains_.push_back(d);
  const auto local = [&](const std::string& d) { return config_.runs_domain(d); };
  for (const auto& e : plugins.events()) {
    if (e.notification || e.handler < 0 || local(e.domain)) continue;
    auto it = std::find_if(remote_domains_.begin(), remote_domains_.end(),
                           [&](const auto& d) { return d->name == e.domain; });
    if (it == remote_domains_.end()) {
      auto d = std::make_unique<RemoteDomain>();
      d->name = e.domain;
      d->request_subject = request_subject(config_.cluster, e.domain);
      d->reply_prefix = reply_prefix(config_.cluster, instance_, e.domain);
      remote_domains_.push_back(std::move(d));
      it = std::prev(remote_domains_.end());
    }
    domain_of_request_[e.type_id] = it->get();
  }
  for (const auto& s : plugins.subscribers()) {
    if (local(s.domain)) continue;
    auto& route = notifications_[plugins.events()[s.event].type_id];
    if (std::find(route.remote_domains.begin(), route.remote_domains.end(), s.domain) == route.remote_domains.end())
      route.remote_domains.push_back(s.domain);
  }
  for (const auto& p : plugins.pushes()) notifications_[plugins.events()[p.notification].type_id].push = true;
}

bool Switch::end_of_turn() {
  // Once a turn, however many hellos came in it.
  if (greet_ && !stopping_) say_hello();
  if (directory_dirty_) directory_changed();
  for (auto& d : remote_domains_) send_requests(*d);
  send_answers();
  if (!answered_.empty()) {
    env::send_answered(to_router_, answered_, 0);
    answered_.clear();
  }
  const bool more = nats_.flush();
  if (stopping_) stop_when_done();
  return more;
}

void Switch::hand_over() {
  const auto& c = config_.cluster;
  for (const auto& d : local_domains_) {
    if (handed_over_.contains(d) || !(stopping_ || directory_.runs(d))) continue;
    handed_over_.insert(d);
    nats_.drain(request_subject(c, d));
    nats_.drain(note_subject(c, d));
    spdlog::info("domain {} handed over: NATS sends its requests {}", d,
                 directory_.runs(d) ? "to the other instances running it" : "nowhere here any more");
  }
}

void Switch::stop_when_done() {
  // Without NATS no answer could go back: nothing is waited for.
  if ((served_.empty() || !nats_.connected()) && nats_.drained()) loop_.stop();
}

transport::Outbox& Switch::answer_channel(const env::EnvelopeHeader& request) {
  if (request.reply_to != 0 || request.origin_listener >= to_listener_.size()) return to_router_;
  return *to_listener_[request.origin_listener];
}

void Switch::subscribe_router() {
  // First the switch's own group (it is no domain), then its events.
  std::vector<std::uint64_t> ids{env::event_type_id("edri.switch")};
  for (const auto& [id, _] : domain_of_request_) ids.push_back(id);
  for (const auto& [id, _] : notifications_) ids.push_back(id);
  auto h = env::make_header(env::Kind::Control, env::kControlSubscribe, 0);
  env::EnvelopeWriter w(h);
  w.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(ids)));
  if (!env::send(to_router_, w, transport::Admission::Answer)) spdlog::error("cannot subscribe to the router");
}

void Switch::subscribe_nats() {
  try {
    subscribe_all();
  } catch (const std::runtime_error& e) {
    // A connection the client closed for good (a server certificate that
    // fails verification) takes no subscription and never reconnects:
    // this instance serves its own domains and /health says NATS is down.
    spdlog::error("NATS refused the subscriptions ({}): requests for other instances are answered 503", e.what());
  }
}

void Switch::subscribe_all() {
  const auto& c = config_.cluster;
  for (const auto& d : local_domains_) {
    nats_.subscribe(request_subject(c, d), request_queue(d), [this](const NatsMessage& m) { serve(m); });
    const auto id = env::event_type_id(d);
    nats_.subscribe(note_subject(c, d), note_queue(d), [this, id](const NatsMessage& m) { on_notification(m, id); });
  }
  nats_.subscribe(push_subject(c), "", [this](const NatsMessage& m) { on_notification(m, 0); });
  for (auto& d : remote_domains_)
    nats_.subscribe(d->reply_prefix + "*", "", [this, &d = *d](const NatsMessage& m) { on_reply(m, d); });
  nats_.subscribe(hello_subject(c), "", [this](const NatsMessage& m) { on_hello(m); });
}

void Switch::on_router(std::span<const std::byte> record) {
  env::EnvelopeHeader h;
  if (env::peek_header(record, h) != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope from the router");
    return;
  }
  switch (static_cast<env::Kind>(h.kind)) {
    case env::Kind::Request: return ask(h, record);
    case env::Kind::Response: return answer(h, record);
    case env::Kind::Notification: return publish_notification(h, record);
    case env::Kind::Control:
      if (h.event_type == env::kControlResubscribe) return subscribe_router();
      if (env::is_stream_control(h.event_type)) return on_stream_control(h, record);
      [[fallthrough]];
    default: spdlog::error("dropping an envelope of kind {} from the router", h.kind);
  }
}

std::chrono::milliseconds Switch::time_left(const env::EnvelopeHeader& h) const {
  const auto whole = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(config_.api_response_timeout_s));
  // A client's request carries when the listener took it; a manager's
  // request starts its clock here.
  if (h.t0_ns == 0) return whole;
  const auto now = env::monotonic_ns();
  const auto spent = std::chrono::milliseconds(now > h.t0_ns ? (now - h.t0_ns) / 1000000 : 0);
  return whole - spent;
}

void Switch::refuse(const env::EnvelopeHeader& h, int status, const std::string& detail) {
  state_.requests_refused.fetch_add(1, std::memory_order_relaxed);
  if (!env::send_problem(to_router_, h, status, detail)) spdlog::error("router channel: a {} was lost", status);
}

std::size_t Switch::message_limit() const { return std::min(max_message_, nats_.max_payload()); }

void Switch::ask(const env::EnvelopeHeader& h, std::span<const std::byte> record) {
  const auto it = domain_of_request_.find(h.event_type);
  if (it == domain_of_request_.end()) return refuse(h, 503, "no instance runs this event's domain");
  RemoteDomain& domain = *it->second;
  // Both as of the last tick or hello: what changed since, NATS refuses.
  if (!up_)
    return refuse(h, 503, "domain '" + domain.name + "' runs on other instances, and NATS is unreachable now; retry");
  // Just connected, it has not heard the others yet: NATS says whether
  // anyone takes the request (no responders: 503) rather than an empty
  // directory (a new generation's listeners serve at once).
  if (!domain.runs_elsewhere && Clock::now() >= settled_at_)
    return refuse(h, 503, "no instance runs domain '" + domain.name + "' now; retry");
  const auto left = time_left(h);
  if (left <= 0ms) return refuse(h, 504, "the request's deadline passed before it could cross to another instance");
  auto header = h;
  // Across hosts an answer travels whole; its stamps mean nothing there.
  header.flags = static_cast<std::uint16_t>((header.flags | env::kFlagWholeAnswer) & ~env::kFlagTiming);
  const auto id = ++next_asked_;
  std::string problem;
  const auto limit = message_limit();
  if (const int status = domain.outgoing.add(id, static_cast<std::uint32_t>(left.count()), header, record,
                                             loop_.blobs(), limit, problem))
    return refuse(h, status, problem);
  if (domain.outgoing.size() > limit) {
    // This one goes in the next message.
    auto last = domain.outgoing.take_last();
    send_requests(domain);
    domain.outgoing.put_back(last);
  }
  domain.outgoing_ids.push_back(id);
  asked_.emplace(id, Asked{h, &domain, add_deadline(Clock::now() + left, id, false)});
  state_.requests_sent.fetch_add(1, std::memory_order_relaxed);
}

void Switch::send_requests(RemoteDomain& domain) {
  if (domain.outgoing.empty()) return;
  const auto message = ++next_message_;
  const bool sent =
      nats_.publish(domain.request_subject, domain.reply_prefix + std::to_string(message), domain.outgoing.bytes());
  domain.outgoing.clear();
  auto ids = std::move(domain.outgoing_ids);
  domain.outgoing_ids.clear();
  if (!sent) {
    for (const auto id : ids)
      if (const auto request = take_asked(id))
        refuse(*request, 503, "domain '" + domain.name + "' runs on other instances, and NATS refused the request");
    return;
  }
  std::size_t waiting = 0;
  for (const auto id : ids)
    if (const auto it = asked_.find(id); it != asked_.end()) {
      it->second.message = message;
      ++waiting;
    }
  if (waiting) domain.sent.emplace(message, RemoteDomain::Sent{std::move(ids), waiting});
}

std::optional<env::EnvelopeHeader> Switch::take_asked(std::uint64_t id) {
  const auto it = asked_.find(id);
  if (it == asked_.end()) return std::nullopt;
  const auto request = it->second.request;
  auto& sent = it->second.domain->sent;
  if (const auto m = sent.find(it->second.message); m != sent.end() && --m->second.waiting == 0) sent.erase(m);
  deadlines_.erase(it->second.deadline);
  asked_.erase(it);
  return request;
}

void Switch::on_reply(const NatsMessage& m, RemoteDomain& domain) {
  if (m.no_responders) {
    // Nobody subscribes to the domain's requests: the instance that ran
    // it is gone. The client does not say which message this was; NATS
    // answers in the order the messages went, so it is the oldest still
    // waiting (any older one went to the instance that is gone).
    if (domain.sent.empty()) return;
    const auto ids = domain.sent.begin()->second.ids;
    for (const auto id : ids)
      if (const auto request = take_asked(id))
        refuse(*request, 503, "no instance runs domain '" + domain.name + "' now; retry");
    return;
  }
  const bool ok = for_each_entry(m.data, FrameKind::Answer, [&](const WireEntry& e) {
    const auto request = take_asked(e.entry.id);
    if (!request) return;  // answered already (504, or NATS was lost meanwhile)
    // The asker's request, answered: its ids and origin as they were here.
    auto header = env::response_header_for(*request, e.view.header.status);
    header.flags = static_cast<std::uint16_t>(request->flags & env::kFlagTiming);
    if (request->reply_to != 0 &&
        json_too_deep(e.view.text(env::SectionType::ContentType), e.view.text(env::SectionType::Body))) {
      // A handler asked, and parses what comes (inbound.hpp).
      (void)env::send_problem(to_router_, *request, 502, "the answer from another instance nests too deep");
      return;
    }
    auto& out = answer_channel(*request);
    if (!send_local(out, header, e.view, loop_.blobs(), config_.blob_threshold, transport::Admission::Answer)) {
      (void)env::send_problem(to_router_, *request, 502, "the answer from another instance does not fit here");
      return;
    }
    // The router learns after the listener has it (as from a manager).
    if (&out != &to_router_) answered_.push_back(request->request_id);
  });
  if (std::uint64_t unlogged = 0; !ok && answer_log_.allow(unlogged))
    spdlog::warn("a malformed answer from the instance serving domain '{}' was dropped{}", domain.name,
                 LogLimit::more(unlogged));
}

Switch::Deadlines::iterator Switch::add_deadline(Clock::time_point at, std::uint64_t id, bool served) {
  const auto it = deadlines_.insert({at, id, served}).first;
  if (!timer_at_ || *timer_at_ > at) {
    timer_at_ = at;
    deadline_timer_.expires_after(std::max(Clock::duration(1ms), at - Clock::now()));
  }
  return it;
}

void Switch::expire() {
  timer_at_.reset();
  const auto now = Clock::now();
  while (!deadlines_.empty() && deadlines_.begin()->at <= now) {
    const auto d = *deadlines_.begin();
    if (d.served) {
      deadlines_.erase(deadlines_.begin());
      served_.erase(d.id);  // the asker answers 504 itself
      continue;
    }
    const auto it = asked_.find(d.id);
    const auto domain = it->second.domain->name;
    const auto request = take_asked(d.id);  // and its deadline
    state_.requests_expired.fetch_add(1, std::memory_order_relaxed);
    (void)env::send_problem(to_router_, *request, 504,
                            "the instance serving domain '" + domain + "' did not answer within the deadline");
  }
  if (deadlines_.empty()) return;
  timer_at_ = deadlines_.begin()->at;
  deadline_timer_.expires_after(std::max(Clock::duration(1ms), *timer_at_ - now));
}

void Switch::tick() {
  // Stopping, a drain's end comes from the client's thread, unannounced.
  tick_timer_.expires_after(stopping_ ? kStoppingTick : kTick);
  if (stopping_) return stop_when_done();
  const bool up = nats_.connected();
  if (up != up_) nats_changed(up);
  if (up && ++ticks_ % kTicksPerHello == 1) say_hello();
  directory_.expire(Clock::now());  // an instance gone from /health
  directory_changed();
  log_unlogged();
}

void Switch::log_unlogged() {
  // What a flood left uncounted in the log once it stopped.
  const std::pair<LogLimit*, const char*> logs[] = {{&hello_log_, "hellos refused"},
                                                    {&request_log_, "malformed requests dropped"},
                                                    {&answer_log_, "malformed answers dropped"},
                                                    {&notification_log_, "malformed notifications dropped"}};
  for (const auto& [log, what] : logs)
    if (const auto n = log->overdue()) spdlog::warn("{} more {} since the last such line", n, what);
}

void Switch::nats_changed(bool up) {
  const bool was_up = up_;
  up_ = up;
  state_.nats_up.store(up ? 1 : 0, std::memory_order_relaxed);
  if (up) {
    if (ever_up_) state_.reconnects.fetch_add(1, std::memory_order_relaxed);
    if (ever_up_ || was_up) spdlog::info("NATS is back: requests for other instances are served again");
    ever_up_ = true;
    ticks_ = 0;
    settled_at_ = Clock::now() + kSettle;
    say_hello();
    return;
  }
  if (!was_up) return;
  // Their answers, if any come, come on a connection that is gone.
  spdlog::warn("NATS is lost: {} requests waiting for other instances answered 503; retrying", asked_.size());
  for (const auto& [id, asked] : asked_)
    refuse(asked.request, 503,
           "NATS was lost while domain '" + asked.domain->name +
               "' served this on another instance; it may have "
               "been served: retry only if that is safe");
  for (const auto& [id, asked] : asked_) deadlines_.erase(asked.deadline);
  asked_.clear();
  for (auto& d : remote_domains_) {
    d->sent.clear();
    d->outgoing.clear();
    d->outgoing_ids.clear();
  }
  answers_out_.clear();
  directory_.clear();
  directory_changed();
}

}  // namespace edri::cluster
