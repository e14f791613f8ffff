#include "domain_context.hpp"

#include <algorithm>
#include <stdexcept>

#include <edri/live_stream.hpp>

#include "database/open_database.hpp"
#include "manager/manager.hpp"
#include "runtime/config.hpp"

namespace edri::testing {

namespace {

// The header a test's request stands for: only its id is read back.
envelope::EnvelopeHeader header_for(std::uint64_t id) {
  envelope::EnvelopeHeader h{};
  h.request_id = id;
  h.reply_to = 1;  // not a client's connection: nothing to watch for
  return h;
}

// A test has no pool settings: what a manager gets without EDRI_WORKER_*.
constexpr std::size_t kThreads = 2;
constexpr std::size_t kQueue = 256;

class DeferredAnswer final : public Responder::Sink {
 public:
  DeferredAnswer(TestHost& host, std::uint64_t id) : host_(host), id_(id) {}
  void send(Response response) override {
    if (std::exchange(sent_, true)) return;
    host_.answered(id_, std::move(response));
  }

 private:
  TestHost& host_;
  std::uint64_t id_;
  bool sent_ = false;
};

}  // namespace

DomainContext::DomainContext(TestHost& host, const plugin::PluginSet& plugins, std::string domain)
    : host_(host),
      plugins_(plugins),
      domain_(std::move(domain)),
      coroutines_(
          host.loop(), 16384, host.options().production,
          [this](const envelope::EnvelopeHeader& h, Response r) { host_.answered(h.request_id, std::move(r)); }),
      templates_(host.options().template_path) {
  open_databases();
}

DomainContext::~DomainContext() = default;

void DomainContext::open_databases() {
  for (const auto& d : plugins_.databases(domain_, host_.options().databases)) {
    database::DatabaseOptions o;
    o.name = d.name;
    o.url = d.url;
    databases_.emplace_back(d.name, database::open_database(host_.loop(), std::move(o)));
  }
}

void DomainContext::run_hooks(bool start) {
  for (const LifecycleDecl* hook : plugins_.lifecycle(domain_)) {
    const auto& fn = start ? hook->on_start : hook->on_stop;
    if (fn) fn(*this);
  }
}

Reply DomainContext::call(const Handler& handler, const Request& req, std::uint64_t id) {
  const auto outer = std::exchange(current_, id);
  Reply reply;
  try {
    reply = handler(req, *this);
  } catch (...) {
    reply = manager::answer_for_failure(std::current_exception(), req.event, host_.options().production);
  }
  current_ = outer;
  return reply;
}

void DomainContext::deliver(const Subscriber& subscriber, const Request& n) {
  try {
    subscriber(n, *this);
  } catch (const std::exception& e) {
    log(LogLevel::Error, "a subscriber of " + std::string(n.event) + " threw: " + e.what());
  }
}

std::uint64_t DomainContext::current() const {
  if (!current_) throw std::logic_error("called outside a request handler");
  return current_;
}

void DomainContext::log(LogLevel level, std::string_view message, const Request*) {
  host_.log(domain_, level, message);
}

bool DomainContext::publish(std::string_view event, const nlohmann::json& payload) {
  host_.publish(domain_, event, payload);
  return true;
}

bool DomainContext::request_for(const Request*, std::string_view event, const nlohmann::json& body,
                                std::function<void(const Response&)> on_response) {
  return host_.request(domain_, event, body, std::move(on_response));
}

bool DomainContext::publish_patch(std::string_view name, const nlohmann::json& patch,
                                  std::function<void(const Response&)> then) {
  if (auto refused = manager::refused_patch(name, patch, patch.dump().size(), Config{}.stream_max_bytes)) {
    if (then) then(*refused);
    return false;
  }
  const auto revision = host_.patch_stream(domain_, name, patch);
  if (then)
    host_.post([then = std::move(then), name = std::string(name), revision] {
      then(Response::json(nlohmann::json{{"stream", name}, {"revision", revision}}));
    });
  return true;
}

void DomainContext::read_stream(std::string_view name, std::function<void(const Response&)> then) {
  if (!is_valid_stream_name(name)) {
    then(Response::problem(422, "Unprocessable Content", "a stream name is 1 to 128 of A-Z a-z 0-9 . _ : -"));
    return;
  }
  nlohmann::json state{{"stream", name}, {"revision", host_.stream_revision(name)}, {"state", host_.read_stream(name)}};
  host_.post([then = std::move(then), state = std::move(state)] { then(Response::json(state)); });
}

void DomainContext::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  timers_.emplace_back();
  const auto it = std::prev(timers_.end());
  *it = std::make_unique<EventLoop::Timer>(host_.loop(), [this, it, fn = std::move(fn)] {
    try {
      fn();
    } catch (const std::exception& e) {
      log(LogLevel::Error, std::string("a timer's function threw: ") + e.what());
    }
    // Not from inside its own expiry.
    host_.post([this, it] { timers_.erase(it); });
  });
  (*it)->expires_after(std::max(delay, std::chrono::milliseconds(1)));
}

Responder DomainContext::defer() { return Responder(std::make_shared<DeferredAnswer>(host_, current())); }

manager::WorkerThreads& DomainContext::threads() {
  if (!threads_) {
    const auto decl = plugins_.worker_pool(domain_);
    threads_ = std::make_unique<manager::WorkerThreads>(host_.loop(), decl ? decl->threads : kThreads,
                                                        decl ? decl->queue : kQueue, std::vector<int>{});
  }
  return *threads_;
}

Reply DomainContext::in_thread(std::function<Response()> work) {
  const auto id = current();
  ++jobs_out_;
  if (threads().submit(std::move(work), [this, id](Response r) {
        --jobs_out_;
        host_.answered(id, std::move(r));
      }))
    return Deferred{};
  --jobs_out_;
  return Response::problem(503, "Service Unavailable", "the worker queue is full; retry later")
      .header("Retry-After", "1");
}

Reply DomainContext::in_process(std::string_view task, std::string input,
                                std::function<Response(const TaskResult&)> then) {
  const auto id = current();
  run_task(nullptr, task, std::move(input), [this, id, then = std::move(then)](const TaskResult& result) {
    Reply answer;
    try {
      answer = then(result);
    } catch (...) {
      answer = manager::answer_for_failure(std::current_exception(), "a task's answer", host_.options().production);
    }
    if (auto* r = std::get_if<Response>(&answer)) host_.answered(id, std::move(*r));
  });
  return Deferred{};
}

bool DomainContext::run_on_thread(const Request*, std::function<void()> work, std::function<void()> done) {
  ++jobs_out_;
  const bool queued = threads().submit(
      [work = std::move(work)] {
        work();
        return Response();
      },
      [this, done = std::move(done)](Response) {
        --jobs_out_;
        done();
      });
  if (!queued) --jobs_out_;
  return queued;
}

// A task runs on a worker thread of the test's process: no process of its
// own, so a crash in it is the test's (docs/writing-a-plugin.md, "Testing handlers").
void DomainContext::run_task(const Request* about, std::string_view name, std::string input,
                             std::function<void(const TaskResult&)> done) {
  const auto tasks = plugins_.tasks(domain_);
  const auto found = std::find_if(tasks.begin(), tasks.end(), [&](const TaskDecl* t) { return t->name == name; });
  if (found == tasks.end())
    throw std::invalid_argument("domain " + domain_ + " registered no task " + std::string(name));
  auto result = std::make_shared<TaskResult>();
  auto work = [task = (*found)->task, input = std::move(input), result] {
    try {
      result->output = task(input);
    } catch (const std::exception& e) {
      result->outcome = TaskResult::Outcome::Threw;
      result->output = e.what();
    }
  };
  if (!run_on_thread(about, std::move(work), [done, result] { done(*result); }))
    done(TaskResult{TaskResult::Outcome::NoWorker, "the worker queue is full"});
}

std::function<void()> DomainContext::http(HttpCall call, std::chrono::steady_clock::time_point deadline,
                                          std::function<void(HttpReply)> done) {
  if (!http_) {
    const Config defaults{};
    http_ = std::make_unique<manager::HttpClient>(
        host_.loop(), manager::HttpClient::Settings{
                          std::chrono::milliseconds(static_cast<long>(defaults.http_client_timeout_s * 1000)),
                          std::chrono::milliseconds(static_cast<long>(defaults.http_client_connect_timeout_s * 1000)),
                          defaults.http_client_max_response, defaults.http_client_ca_file});
  }
  return http_->start(std::move(call), deadline, std::move(done));
}

Database& DomainContext::database(std::string_view name) {
  for (auto& [n, db] : databases_)
    if (n == name) return *db;
  throw std::invalid_argument("domain " + domain_ + " declared no database " + std::string(name));
}

Reply DomainContext::start(const AsyncHandler& handler, const Request& req) {
  const auto header = header_for(current());
  return coroutines_.start(handler, req, *this, &header, req.deadline, host_.options().answer_timeout);
}

void DomainContext::start(const AsyncSubscriber& subscriber, const Request& n) {
  const Reply refused = coroutines_.start(subscriber, n, *this, host_.options().answer_timeout);
  if (const auto* r = std::get_if<Response>(&refused); r && r->status.code >= 500)
    log(LogLevel::Warning, "a subscriber of " + std::string(n.event) + " did not run");
}

}  // namespace edri::testing
