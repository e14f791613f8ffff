#include "manager/manager.hpp"

#include <spdlog/spdlog.h>

#include <cstring>
#include <optional>

#include "envelope/problem.hpp"
#include "router/router.hpp"

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
    if (sent_ || response.is_deferred()) return;
    sent_ = true;
    manager_.respond(request_, response);
  }

 private:
  Manager& manager_;
  env::EnvelopeHeader request_;
  bool sent_ = false;
};
}  // namespace

Manager::Manager(ProcessLoop& loop, const Config& config, const plugin::PluginSet& plugins, std::string domain,
                 std::string title, std::vector<int> worker_cpus)
    : loop_(loop),
      config_(config),
      plugins_(plugins),
      domain_(std::move(domain)),
      to_router_(loop.outbox_to(Topology::kRouter)),
      templates_(config.template_path),
      worker_cpus_(std::move(worker_cpus)),
      title_(std::move(title)) {
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
}

void Manager::start() {
  if (!plugins_.tasks(domain_).empty()) {
    const auto decl = plugins_.worker_processes(domain_);
    WorkerProcesses::Options o;
    o.domain = domain_;
    o.title = title_;
    o.processes = config_.worker_processes ? config_.worker_processes
                  : decl                   ? decl->processes
                  : worker_cpus_.empty()   ? 1
                                           : worker_cpus_.size();
    o.queue = config_.worker_queue ? config_.worker_queue : decl ? decl->queue : 256;
    o.ring_bytes = config_.ring_bytes;
    o.cpus = worker_cpus_;
    for (const auto* t : plugins_.tasks(domain_)) o.tasks.insert(t->name);
    processes_ = std::make_unique<WorkerProcesses>(loop_.events(), std::move(o));
  }
  subscribe();
}

void Manager::subscribe() {
  // First the domain (replicas of one domain share it), then the events.
  std::vector<std::uint64_t> ids{env::event_type_id(domain_)};
  for (const auto& [id, _] : handlers_) ids.push_back(id);
  for (const auto& [id, _] : subscribers_) ids.push_back(id);
  auto h = env::make_header(env::Kind::Control, env::kControlSubscribe, 0);
  env::EnvelopeWriter w(h);
  w.raw(env::SectionType::Control, std::as_bytes(std::span<const std::uint64_t>(ids)));
  if (!to_router_.emplace(w.size(), [&](std::byte* p) { w.write(p); }))
    spdlog::error("cannot subscribe: the router channel is full");
  spdlog::debug("domain {}: subscribed {} events", domain_, ids.size() - 1);
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
      if (v.header.event_type == env::kControlResubscribe) subscribe();
      return;
  }
}

bool Manager::fill_request(const env::EnvelopeView& v, std::string_view event) {
  request_.event = event;
  request_.query = v.text(env::SectionType::Query);
  request_.body = v.text(env::SectionType::Body);
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
  auto it = handlers_.find(h.event_type);
  if (it == handlers_.end()) {
    (void)env::send_problem(to_router_, h, 404, "this manager has no handler for the event");
    return;
  }
  if (!fill_request(v, it->second.event)) {
    (void)env::send_problem(to_router_, h, 400, "malformed request envelope");
    return;
  }
  if (body) request_.body = body.view();
  Response resp;
  current_ = &h;
  try {
    resp = (*it->second.handler)(request_, *this);
  } catch (const std::exception& e) {
    spdlog::error("handler for {} threw: {}", it->second.event, e.what());
    resp = Response::problem(500, "Internal Server Error",
                             config_.production ? "the handler failed" : std::string("handler threw: ") + e.what());
  } catch (...) {
    spdlog::error("handler for {} threw a non-exception", it->second.event);
    resp = Response::problem(500, "Internal Server Error", "the handler failed");
  }
  current_ = nullptr;
  if (!resp.is_deferred()) respond(h, resp);
}

void Manager::respond(const env::EnvelopeHeader& request, const Response& resp) {
  auto rh = env::response_header_for(request, resp.status);
  env::stamp(rh, env::kStampManagerOut);
  env::EnvelopeWriter w(rh);
  w.text(env::SectionType::ContentType, resp.content_type);
  if (!resp.headers.empty())
    w.key_values(env::SectionType::Headers, resp.headers, env::StringPairKey{}, env::StringPairValue{});
  // A large body is written once into the blob area; the record carries
  // its handle (transport/blob_layout.hpp). Freed here unless it is sent.
  transport::BlobLease blob;
  auto* blobs = loop_.blobs();
  if (blobs && resp.body.size() >= config_.blob_threshold) {
    blob = transport::BlobLease(blobs, blobs->store(resp.body));
    if (blob) {
      w.raw(env::SectionType::Blob, transport::BlobArena::section_of(blob.handle()));
    } else if (resp.body.size() + 4096 > to_router_.max_record()) {
      if (blobs->capacity() < resp.body.size())
        (void)env::send_problem(to_router_, request, 500,
                                "the response is larger than the blob area (EDRI_BLOB_BYTES)");
      else
        (void)env::send_problem(to_router_, request, 503, "the blob area is full; retry later");
      return;
    }
  }
  if (!blob) w.text(env::SectionType::Body, resp.body);
  if (!resp.file_path.empty()) w.text(env::SectionType::File, resp.file_path);
  if (w.size() > to_router_.max_record()) {
    (void)env::send_problem(to_router_, request, 500, "the response is too large for a channel record");
    return;
  }
  if (to_router_.emplace(w.size(), [&](std::byte* p) { w.write(p); }))
    (void)blob.take();  // its reader frees it now
  else
    spdlog::error("router channel full: response {} lost", request.request_id);
}

void Manager::on_notification(env::EnvelopeView& v) {
  auto it = subscribers_.find(v.header.event_type);
  if (it == subscribers_.end() || !fill_request(v, it->second.event)) return;
  for (const auto* s : it->second.list) {
    try {
      (*s)(request_, *this);
    } catch (const std::exception& ex) {
      spdlog::error("subscriber of {} threw: {}", request_.event, ex.what());
    }
  }
}

void Manager::on_response(env::EnvelopeView& v) {
  auto it = outstanding_.find(v.header.request_id);
  if (it == outstanding_.end()) return;
  auto callback = std::move(it->second);
  outstanding_.erase(it);
  Response r{v.header.status,
             std::string(v.text(env::SectionType::ContentType)),
             std::string(v.text(env::SectionType::Body)),
             {},
             std::string(v.text(env::SectionType::File))};
  if (v.has(env::SectionType::Blob)) {
    // The other manager's large body: taken over, copied, freed.
    if (const auto body = transport::claim_blob(loop_.blobs(), v.section(env::SectionType::Blob)))
      r.body.assign(body.view());
    else
      r = Response::problem(502, "Bad Gateway", "the response body was lost on the way");
  }
  env::KeyValueReader kv(v.section(env::SectionType::Headers));
  std::string_view k, val;
  while (kv.next(k, val)) r.headers.emplace_back(k, val);
  try {
    callback(r);
  } catch (const std::exception& ex) {
    spdlog::error("response callback threw: {}", ex.what());
  }
}

bool Manager::publish(std::string_view event, const nlohmann::json& payload) {
  const int e = plugins_.event_index(event);
  if (e < 0) return false;
  auto h = env::make_header(env::Kind::Notification, plugins_.events()[static_cast<std::size_t>(e)].type_id, 0);
  h.reply_to = static_cast<std::uint16_t>(loop_.slot());
  const std::string body = payload.dump();
  env::EnvelopeWriter w(h);
  w.text(env::SectionType::ContentType, "application/json");
  w.text(env::SectionType::Body, body);
  return to_router_.emplace(w.size(), [&](std::byte* p) { w.write(p); });
}

bool Manager::request(std::string_view event, const nlohmann::json& body,
                      std::function<void(const Response&)> on_response) {
  const int e = plugins_.event_index(event);
  if (e < 0) return false;
  const auto id = ++next_request_;
  auto h = env::make_header(env::Kind::Request, plugins_.events()[static_cast<std::size_t>(e)].type_id, id);
  h.reply_to = static_cast<std::uint16_t>(loop_.slot());
  const std::string text = body.dump();
  env::EnvelopeWriter w(h);
  w.text(env::SectionType::Body, text);
  if (!to_router_.emplace(w.size(), [&](std::byte* p) { w.write(p); })) {
    on_response(Response::problem(503, "Service Unavailable", "the router channel is full"));
    return true;
  }
  outstanding_.emplace(id, std::move(on_response));
  return true;
}

Manager::~Manager() = default;

Response Manager::in_thread(std::function<Response()> work) {
  if (!current_) throw std::logic_error("in_thread() outside a request handler");
  if (!workers_) {
    const auto decl = plugins_.worker_pool(domain_);
    const std::size_t threads = config_.worker_threads ? config_.worker_threads
                                : decl                 ? decl->threads
                                : worker_cpus_.empty() ? 1
                                                       : worker_cpus_.size();
    const std::size_t queue = config_.worker_queue ? config_.worker_queue : decl ? decl->queue : 256;
    workers_ = std::make_unique<WorkerThreads>(loop_.events(), threads, queue, worker_cpus_);
  }
  const env::EnvelopeHeader request = *current_;
  auto done = [this, request](Response r) {
    if (r.is_deferred()) r = Response::problem(500, "Internal Server Error", "a worker job returned deferred()");
    respond(request, r);
  };
  if (!workers_->submit(std::move(work), std::move(done)))
    return Response::problem(503, "Service Unavailable", "the worker queue is full; retry later")
        .header("Retry-After", "1");
  return Response::deferred();
}

Response Manager::in_process(std::string_view task, std::string input,
                             std::function<Response(const TaskResult&)> then) {
  if (!current_) throw std::logic_error("in_process() outside a request handler");
  if (!processes_) throw std::invalid_argument("domain " + domain_ + " registered no tasks (Registry::task)");
  if (!processes_->runs(task))
    throw std::invalid_argument("domain " + domain_ + " has no task named " + std::string(task));
  const env::EnvelopeHeader request = *current_;
  auto done = [this, request, then = std::move(then)](TaskResult result) {
    Response r;
    try {
      r = then(result);
    } catch (const std::exception& e) {
      spdlog::error("the continuation of a task threw: {}", e.what());
      r = Response::problem(500, "Internal Server Error",
                            config_.production ? "the handler failed" : std::string("handler threw: ") + e.what());
    }
    if (r.is_deferred()) r = Response::problem(500, "Internal Server Error", "a task continuation returned deferred()");
    respond(request, r);
  };
  const std::size_t size = input.size();
  switch (processes_->submit(task, std::move(input), std::move(done))) {
    case WorkerProcesses::Submitted::Queued: return Response::deferred();
    case WorkerProcesses::Submitted::QueueFull:
      return Response::problem(503, "Service Unavailable", "the worker queue is full; retry later")
          .header("Retry-After", "1");
    case WorkerProcesses::Submitted::TooLarge: break;
  }
  return Response::problem(500, "Internal Server Error",
                           "the task input (" + std::to_string(size) + " bytes) is larger than a worker takes (" +
                               std::to_string(processes_->max_input(task)) + " bytes)");
}

Responder Manager::defer() {
  if (!current_) throw std::logic_error("defer() outside a request handler");
  return Responder(std::make_shared<DeferredAnswer>(*this, *current_));
}

}  // namespace edri::manager
