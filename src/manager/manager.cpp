#include "manager/manager.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "envelope/body.hpp"
#include "envelope/control.hpp"
#include "envelope/problem.hpp"
#include "envelope/send.hpp"
#include "http/multipart.hpp"
#include "manager/answer_compression.hpp"
#include "manager/answer_head.hpp"
#include "manager/mapped_upload.hpp"
#include "manager/traced_database.hpp"
#include "runtime/log.hpp"

namespace edri::manager {

namespace env = edri::envelope;
using transport::Topology;

namespace {

bool read_params(std::span<const std::byte> section, std::vector<Param>& out) {
  out.clear();
  env::KeyValueReader kv(section);
  std::string_view k, v;
  while (kv.next(k, v)) out.push_back(Param{k, v});
  return kv.ok();
}

// The deferred answer of one request; sends at most once.
class DeferredAnswer final : public Responder::Sink {
 public:
  DeferredAnswer(Manager& m, const env::EnvelopeHeader& request) : manager_(m), request_(request) {}
  void send(Response response) override {
    if (sent_) return;
    sent_ = true;
    manager_.respond(request_, std::move(response));
  }

 private:
  Manager& manager_;
  env::EnvelopeHeader request_;
  bool sent_ = false;
};
}  // namespace

Manager::Manager(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::string domain,
                 std::string title, std::vector<int> worker_cpus, std::optional<int> home_cpu)
    : loop_(loop),
      config_(config),
      plugins_(plugins),
      domain_(std::move(domain)),
      to_router_(loop.outbox_to(Topology::kRouter)),
      templates_(config.template_path),
      worker_cpus_(std::move(worker_cpus)),
      title_(std::move(title)),
      stream_timer_(loop.events(),
                    [this] {
                      stream_timer_armed_ = false;
                      sweep_streams();
                    }),
      stream_control_timer_(loop.events(), [this] { expire_stream_controls(); }),
      later_timer_(loop.events(), [this] { run_laters(); }),
      traces_(loop.events(), config, title_,
              {&loop.segment().doorbell(loop.slot()).spans_dropped,
               &loop.segment().doorbell(loop.slot()).trace_batches_failed},
              worker_cpus_),
      coroutines_(loop.events(), config.max_waiting, config.production,
                  [this](const env::EnvelopeHeader& request, Response r) { respond(request, std::move(r)); }) {
  for (const auto& e : plugins.events()) {
    if (e.domain != domain_ || e.handler < 0) continue;
    handlers_.emplace(e.type_id, Entry{&plugins.handlers()[static_cast<std::size_t>(e.handler)], e.name});
  }
  for (const auto& s : plugins.subscribers())
    if (s.domain == domain_) {
      const auto& e = plugins.events()[s.event];
      auto& entry = subscribers_[e.type_id];
      entry.event = e.name;
      entry.list.push_back(&s.subscriber);
    }
  // Request ids of this manager's own requests: top bit set, then its slot.
  next_request_ = (std::uint64_t{1} << 63) | (static_cast<std::uint64_t>(loop.slot()) << 48);
  loop.on_records_from(Topology::kRouter, [this](std::span<const std::byte> rec) { on_record(rec); });
  const auto& topo = loop.topology();
  // Clients' requests straight from their listeners (0027).
  if (topo.direct_requests())
    for (std::uint32_t i = 0; i < topo.listeners(); ++i)
      loop.on_records_from(topo.listener_slot(i), [this](std::span<const std::byte> rec) { on_record(rec); });
  if (topo.direct_answers())
    for (std::uint32_t i = 0; i < topo.listeners(); ++i) to_listener_.push_back(&loop.outbox_to(topo.listener_slot(i)));
  // Other managers' requests and answers straight from them (0028).
  if (topo.direct_between_managers()) {
    for (std::uint32_t j = 0; j < topo.managers(); ++j) {
      const auto slot = topo.manager_slot(j);
      to_manager_.push_back(slot == loop.slot() ? nullptr : &loop.outbox_to(slot));
      if (slot != loop.slot()) loop.on_records_from(slot, [this](std::span<const std::byte> rec) { on_record(rec); });
    }
    direct_ = plugin::DirectRoutes(
        plugins, plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas));
  }
  if (topo.has_switch()) {
    switch_slot_ = static_cast<std::uint16_t>(topo.switch_slot());
    to_switch_ = &loop.outbox_to(switch_slot_);
  }
  loop.after_drain([this] {
    // Before the notices: what the HTTP client finishes may answer.
    const bool ran = http_ && http_->run_due();
    report_answered();
    auto& stats = loop_.segment().doorbell(loop_.slot()).loop;
    stats.waiting.store(static_cast<std::uint32_t>(coroutines_.waiting() + streams_.size()), std::memory_order_relaxed);
    stats.calls.store(static_cast<std::uint32_t>(outstanding_.size()), std::memory_order_relaxed);
    return ran;
  });
  if (traces_.on()) loop_.on_reopen_signal([this] { traces_.reopen(); });
  if (home_cpu)
    placement_ =
        std::make_unique<LoopPlacement>(loop.events(), *home_cpu, worker_cpus_, loop.segment().header().cpu_holders,
                                        static_cast<std::uint16_t>(loop.slot()));
}

transport::Outbox& Manager::answer_channel(const env::EnvelopeHeader& request) {
  if (to_switch_ && request.reply_to == switch_slot_) return *to_switch_;
  if (request.reply_to != 0) {
    const auto& topo = loop_.topology();
    if (to_manager_.empty() || !topo.is_manager(request.reply_to)) return to_router_;
    auto* out = to_manager_[topo.index_of(request.reply_to)];
    return out ? *out : to_router_;
  }
  if (request.origin_listener >= to_listener_.size()) return to_router_;
  return *to_listener_[request.origin_listener];
}

void Manager::report_answered() {
  // One notice per asker: the router keeps its books by (id, reply_to).
  while (!answered_.empty()) {
    const auto asker = answered_.front().first;
    report_ids_.clear();
    std::erase_if(answered_, [&](const auto& a) {
      if (a.first != asker) return false;
      report_ids_.push_back(a.second);
      return true;
    });
    env::send_answered(to_router_, report_ids_, 0, asker);
  }
}

void Manager::start() {
  if (!plugins_.tasks(domain_).empty()) {
    const auto decl = plugins_.worker_processes(domain_);
    WorkerProcesses::Options o;
    o.domain = domain_;
    o.title = title_;
    const auto size = pool_size(config_.worker_processes, decl ? decl->processes : 0, decl ? decl->queue : 0);
    o.processes = size.workers;
    o.queue = size.queue;
    o.ring_bytes = config_.ring_bytes;
    o.cpus = worker_cpus_;
    for (const auto* t : plugins_.tasks(domain_)) o.tasks.insert(t->name);
    processes_ = std::make_unique<WorkerProcesses>(loop_.events(), std::move(o));
  }
  open_databases();
  // Before the subscription: nothing reaches the domain, and /ready waits,
  // until its hooks returned.
  for (const auto* l : plugins_.lifecycle(domain_)) {
    if (!l->on_start) continue;
    try {
      l->on_start(*this);
    } catch (const std::exception& e) {
      throw StartFailed("domain " + domain_ + ": its start hook failed: " + e.what());
    }
  }
  subscribe(false);
}

void Manager::open_databases() {
  for (const auto& d : plugins_.databases(domain_, config_.databases)) {
    database::DatabaseOptions o;
    o.name = d.name;
    o.url = d.url;
    o.pool_size = config_.database_pool;
    o.max_queued = config_.database_queue;
    o.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(config_.database_timeout_s * 1000));
    o.connect_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(config_.database_connect_timeout_s * 1000));
    try {
      auto db = database::open_database(loop_.events(), std::move(o));
      if (traces_.on())
        db = std::make_unique<TracedDatabase>(std::move(db), traces_,
                                              [this](const Request* about) { return trace_call(about); });
      databases_.emplace(d.name, std::move(db));
    } catch (const std::exception& e) {
      throw StartFailed("domain " + domain_ + ": " + e.what());
    }
  }
}

Database& Manager::database(std::string_view name) {
  const auto it = databases_.find(name);
  if (it == databases_.end())
    throw std::invalid_argument("domain " + domain_ + " declares no database named " + std::string(name));
  return *it->second;
}

void Manager::stop() {
  for (const auto* l : plugins_.lifecycle(domain_)) {
    if (!l->on_stop) continue;
    try {
      l->on_stop(*this);
    } catch (const std::exception& e) {
      spdlog::error("domain {}: its stop hook threw: {}", domain_, e.what());
    }
  }
}

void Manager::log(LogLevel level, std::string_view message, const Request* about) {
  static constexpr spdlog::level::level_enum kLevels[] = {spdlog::level::debug, spdlog::level::info,
                                                          spdlog::level::warn, spdlog::level::err};
  const auto at = kLevels[static_cast<std::size_t>(level) & 3];
  if (!spdlog::should_log(at)) return;
  std::string_view id, trace;
  if (about) id = about->header("x-request-id").value_or(about->id);
  if (about && about->traceparent.size() >= 35) trace = about->traceparent.substr(3, 32);
  log_about_request(at, id, message, trace);
}

void Manager::subscribe(bool again) {
  // First the domain (replicas of one domain share it), then the events.
  std::vector<std::uint64_t> ids{env::event_type_id(domain_)};
  for (const auto& [id, _] : handlers_) ids.push_back(id);
  for (const auto& [id, _] : subscribers_) ids.push_back(id);
  auto h = env::make_header(env::Kind::Control, env::kControlSubscribe, 0);
  env::EnvelopeWriter w(h);
  w.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(ids)));
  if (!env::send(to_router_, w, transport::Admission::Answer))
    spdlog::error("cannot subscribe: the subscription does not fit a record");
  // The router asks every manager at its start, a first start included:
  // the second subscription is no news.
  spdlog::log(again ? spdlog::level::trace : spdlog::level::debug, "domain {}: subscribed {} events{}", domain_,
              ids.size() - 1, again ? " again, as the router asked" : "");
}

void Manager::on_record(std::span<const std::byte> record) {
  env::EnvelopeView v;
  if (auto e = env::decode(record, v); e != env::DecodeError::None) {
    spdlog::error("dropping a malformed envelope: {}", env::to_string(e));
    // Answer if the header at least is sound, so the client does not wait.
    env::EnvelopeHeader h;
    if (env::peek_header(record, h) == env::DecodeError::None &&
        h.kind == static_cast<std::uint8_t>(env::Kind::Request))
      (void)env::send_problem(to_router_, h, 400, "malformed request envelope");
    return;
  }
  switch (static_cast<env::Kind>(v.header.kind)) {
    case env::Kind::Request: return on_request(v);
    case env::Kind::Notification: return on_notification(v);
    case env::Kind::Response: return on_response(v);
    case env::Kind::Control:
      if (v.header.event_type == env::kControlResubscribe) subscribe(true);
      if (v.header.event_type == env::kControlClientGone) coroutines_.client_gone(v.header);
      if (v.header.event_type == env::kControlStreamCredit || v.header.event_type == env::kControlStreamCancel)
        on_stream_control(v);
      return;
  }
}

bool Manager::fill_request(const env::EnvelopeView& v, std::string_view event) {
  request_.event = event;
  // The listener's request counter and its dispatch time: unique across
  // listener restarts, and the same in a replay (the same envelope). Hex
  // written by hand: this runs for every request, read or not.
  auto hex = [](char* out, std::uint64_t v) {
    for (int i = 15; i >= 0; --i, v >>= 4) out[i] = "0123456789abcdef"[v & 15];
  };
  hex(request_id_, v.header.request_id);
  request_id_[16] = '-';
  hex(request_id_ + 17, v.header.t0_ns);
  request_.id = std::string_view(request_id_, sizeof request_id_);
  request_.query = v.text(env::SectionType::Query);
  request_.body = v.text(env::SectionType::Body);
  request_.content_type = v.text(env::SectionType::BodyType);
  request_.client_address = v.text(env::SectionType::Client);
  request_.protocol = v.text(env::SectionType::Protocol);
  request_.principal = v.text(env::SectionType::Principal);
  request_.claims_json = v.text(env::SectionType::Claims);
  request_.body_file = {};
  request_.traceparent = {};
  request_.tracestate = {};
  request_.form.clear();
  return read_params(v.section(env::SectionType::PathParams), request_.path_params) &&
         read_params(v.section(env::SectionType::QueryParams), request_.query_params) &&
         read_params(v.section(env::SectionType::Headers), request_.headers) &&
         read_params(v.section(env::SectionType::Cookies), request_.cookies);
}

void Manager::on_request(env::EnvelopeView& v) {
  auto& h = v.header;
  env::stamp(h, env::kStampManagerIn);
  // A body in the blob area: this manager's while the handler runs (the
  // Request's views end with the call), freed after.
  transport::BlobLease body;
  if (v.has(env::SectionType::Blob)) {
    body = transport::claim_blob(loop_.blobs(), v.section(env::SectionType::Blob));
    if (!body) {
      (void)env::send_problem(to_router_, h, 502, "the request body was lost on the way (a process restarted)");
      return;
    }
  }
  // A body in a file is mapped while the handler runs; the listener
  // removes the file when the response is sent.
  MappedUpload upload;
  if (v.has(env::SectionType::Upload) && !upload.map(v.section(env::SectionType::Upload))) {
    (void)env::send_problem(to_router_, h, 502, "the request body's file is gone (the request ended meanwhile)");
    return;
  }
  auto it = handlers_.find(h.event_type);
  if (it == handlers_.end()) {
    (void)env::send_problem(to_router_, h, 404, "this manager has no handler for the event");
    return;
  }
  if (!fill_request(v, it->second.event)) {
    (void)env::send_problem(to_router_, h, 400, "malformed request envelope");
    return;
  }
  if (!within_deadline(v)) {
    (void)env::send_problem(to_router_, h, 504, "the client's deadline passed before the handler could start");
    return;
  }
  // A client's JSON is limited; another manager's was made by a handler
  // (from client JSON within the limit, perhaps wrapped a level or two).
  request_.max_json_depth = h.reply_to != 0 ? kJsonDepthCeiling : config_.max_json_depth;
  if (body) request_.body = body.view();
  if (v.has(env::SectionType::Upload)) {
    request_.body = upload.bytes();
    request_.body_file = upload.path();
  }
  if (!split_form(h)) return;
  if (traces_.on()) {
    const std::string_view section = v.text(env::SectionType::Trace);
    request_.traceparent = traces_.begin(h, section, it->second.event, domain_);
    if (!request_.traceparent.empty()) request_.tracestate = Traces::state_of(section);
  }
  current_ = &h;
  Reply reply = call_handler(it->second);
  current_ = nullptr;
  if (auto* resp = std::get_if<Response>(&reply)) respond(h, std::move(*resp));
}

// The client's deadline into Request::deadline (steady_clock is
// CLOCK_MONOTONIC, the clock of t0_ns); false once it passed.
bool Manager::within_deadline(const env::EnvelopeView& v) {
  using Clock = std::chrono::steady_clock;
  const auto section = v.section(env::SectionType::Deadline);
  std::uint64_t budget = 0;
  if (section.size() != sizeof budget || v.header.t0_ns == 0) {
    request_.deadline = Clock::time_point::max();
    return true;
  }
  std::memcpy(&budget, section.data(), sizeof budget);
  const std::uint64_t at = v.header.t0_ns + budget;
  request_.deadline = Clock::time_point(std::chrono::nanoseconds(at));
  return env::monotonic_ns() < at;
}

// A multipart/form-data body into Request::form; false (answered 400)
// when it is malformed.
bool Manager::split_form(const env::EnvelopeHeader& h) {
  if (!http::is_multipart_form(request_.content_type)) return true;
  const auto error = http::parse_multipart(request_.content_type, request_.body, parts_);
  if (!error.empty()) {
    (void)env::send_problem(to_router_, h, 400, "malformed multipart/form-data body: " + error);
    return false;
  }
  for (const auto& p : parts_) request_.form.push_back(FormPart{p.name, p.filename, p.content_type, p.data});
  return true;
}

// Runs the handler on request_; what it throws becomes a problem answer.
Reply Manager::call_handler(const Entry& entry) {
  try {
    return (*entry.handler)(request_, *this);
  } catch (...) {
    return answer_for_failure(std::current_exception(), entry.event, config_.production);
  }
}

void Manager::respond(const env::EnvelopeHeader& request, Response resp) {
  if (traces_.on()) traces_.end(request, resp.status);
  if (resp.is_stream()) {
    // A WebSocket command or another manager takes one body.
    if ((request.flags & env::kFlagWholeAnswer) || request.reply_to != 0) {
      resp = collect(resp);
    } else {
      open_stream(request, resp);
      return;
    }
  }
  compress_answer(config_, request, resp);
  env::EnvelopeWriter w(answer_header(request, resp.status));
  add_head(w, resp);
  if (const auto* file = std::get_if<FileBody>(&resp.body)) w.text(env::SectionType::File, file->path);
  // Freed here unless it is sent.
  transport::BlobLease blob;
  const std::string_view bytes = resp.body_bytes();
  if (!env::attach_body(w, blob, loop_.blobs(), config_.blob_threshold, bytes)) {
    if (bytes.size() + 4096 > to_router_.max_record()) return refuse_large_answer(request, bytes.size());
    w.text(env::SectionType::Body, bytes);
  }
  auto& out = answer_channel(request);
  if (w.size() > out.max_record()) {
    (void)env::send_problem(to_router_, request, 500, "the response is too large for a channel record");
    return;
  }
  // An answer: never refused for room (transport/outbox.hpp); its size
  // was checked above.
  if (!env::send(out, w, transport::Admission::Answer)) return;
  (void)blob.take();  // its reader frees it now
  // The router learns after the listener has it: should this process die
  // in between, the router answers 503 for a request the listener no
  // longer waits for, and the listener drops that.
  if (&out != &to_router_) answered_.emplace_back(request.reply_to, request.request_id);
}

// A body for the blob area, which has no room for it, nor a record.
void Manager::refuse_large_answer(const env::EnvelopeHeader& request, std::size_t size) {
  if (loop_.blobs()->capacity() < size)
    (void)env::send_problem(to_router_, request, 500, "the response is larger than the blob area (EDRI_BLOB_BYTES)");
  else
    (void)env::send_problem(to_router_, request, 503, "the blob area is full; retry later");
}

void Manager::on_notification(env::EnvelopeView& v) {
  auto it = subscribers_.find(v.header.event_type);
  if (it == subscribers_.end() || !fill_request(v, it->second.event)) return;
  // A payload is a handler's JSON, serialized by its manager: not a
  // client's, though it may wrap one (within EDRI_MAX_JSON_DEPTH) a few
  // levels deeper.
  request_.max_json_depth = kJsonDepthCeiling;
  const auto consumed = consume_trace(v);
  bool threw = false;
  notifying_ = true;
  for (const auto* s : it->second.list) {
    try {
      (*s)(request_, *this);
    } catch (const std::exception& ex) {
      threw = true;
      spdlog::error("subscriber of {} threw: {}", request_.event, ex.what());
    }
  }
  notifying_ = false;
  if (consumed)
    traces_.finish(*consumed, "process " + std::string(request_.event), threw,
                   {{"edri.event", std::string(request_.event)}, {"edri.domain", domain_}}, SpanKind::Consumer);
}

// A traced notification's CONSUMER span, a child of its publisher's: the
// subscribers' Request::traceparent, which their own calls continue.
std::optional<Traces::Call> Manager::consume_trace(env::EnvelopeView& v) {
  if (!traces_.on()) return std::nullopt;
  const std::string_view section = v.text(env::SectionType::Trace);
  auto call = traces_.call(section.substr(0, TraceContext::kTextSize), Traces::state_of(section));
  if (!call) return std::nullopt;
  consumer_traceparent_ = call->context.text();
  request_.traceparent = consumer_traceparent_;
  request_.tracestate = Traces::state_of(section);
  return call;
}

void Manager::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  // What the timer's callback calls out to continues the trace of the
  // handler that set it, as a ctx.request callback's does.
  if (traces_.on() && (handler_of(nullptr) || continuing_))
    fn = [this, caller = asker_trace(nullptr), fn = std::move(fn)] {
      const ContinuingTrace continuing(continuing_, caller);
      fn();
    };
  const auto due = std::chrono::steady_clock::now() + delay;
  const auto it = laters_.emplace(due, std::move(fn));
  if (it == laters_.begin()) later_timer_.expires_after(std::max(delay, std::chrono::milliseconds(0)));
}

void Manager::run_laters() {
  // What is due now, taken first: one that calls after() again runs on a
  // later expiry, not in this loop.
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::function<void()>> due;
  while (!laters_.empty() && laters_.begin()->first <= now) {
    due.push_back(std::move(laters_.begin()->second));
    laters_.erase(laters_.begin());
  }
  for (auto& f : due) {
    try {
      f();
    } catch (const std::exception& ex) {
      spdlog::error("a timer of {} threw: {}", domain_, ex.what());
    }
  }
  if (!laters_.empty())
    later_timer_.expires_after(std::max(laters_.begin()->first - std::chrono::steady_clock::now(),
                                        std::chrono::steady_clock::duration(std::chrono::microseconds(50))));
}

Manager::~Manager() = default;

std::chrono::steady_clock::duration Manager::pipeline_timeout() const {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.api_response_timeout_s));
}

Reply Manager::start(const AsyncHandler& handler, const Request& req) {
  if (!current_) throw std::logic_error("a coroutine handler started outside a request");
  // The client's deadline, or when the broker answers 504 for it.
  return coroutines_.start(handler, req, *this, current_, req.deadline, pipeline_timeout());
}

void Manager::start(const AsyncSubscriber& subscriber, const Request& n) {
  const Reply refused = coroutines_.start(subscriber, n, *this, pipeline_timeout());
  if (const auto* r = std::get_if<Response>(&refused); r && r->status.code >= 500)
    spdlog::warn("a subscriber of {} did not run: {}", n.event, std::get<std::string>(r->body));
}

Responder Manager::defer() {
  if (!current_) throw std::logic_error("defer() outside a request handler");
  return Responder(std::make_shared<DeferredAnswer>(*this, *current_));
}

}  // namespace edri::manager
