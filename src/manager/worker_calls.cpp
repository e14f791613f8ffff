// Manager, its worker pools (docs/writing-a-plugin.md "CPU work"): their
// sizes, and the work a handler hands them, on threads (in_thread, a
// coroutine's thread()) or in worker processes (in_process, task()),
// each traced as a span of its request's trace.
#include <spdlog/spdlog.h>

#include "manager/manager.hpp"

namespace edri::manager {

namespace env = edri::envelope;

// A worker pool's size, threads or processes alike: the setting when set,
// else what the plugin declared (0: nothing), else one worker per CPU the
// pool may use; the queue likewise, else 256.
Manager::PoolSize Manager::pool_size(std::size_t setting, std::size_t declared, std::size_t declared_queue) const {
  const std::size_t per_cpu = worker_cpus_.empty() ? 1 : worker_cpus_.size();
  const std::size_t workers = setting ? setting : declared ? declared : per_cpu;
  const std::size_t queue = config_.worker_queue ? config_.worker_queue : declared_queue ? declared_queue : 256;
  return {workers, queue};
}

WorkerThreads& Manager::workers() {
  if (!workers_) {
    const auto decl = plugins_.worker_pool(domain_);
    const auto size = pool_size(config_.worker_threads, decl ? decl->threads : 0, decl ? decl->queue : 0);
    workers_ = std::make_unique<WorkerThreads>(loop_.events(), size.workers, size.queue, worker_cpus_);
  }
  return *workers_;
}

Reply Manager::in_thread(std::function<Response()> work) {
  if (!current_) throw std::logic_error("in_thread() outside a request handler");
  const env::EnvelopeHeader request = *current_;
  auto done = traces_.around(
      trace_call(nullptr), "thread", {}, SpanKind::Internal,
      [this, request](Response r) { respond(request, std::move(r)); },
      [](const Response& r) { return r.status >= 500; });
  if (!workers().submit(std::move(work), std::move(done)))
    return Response::problem(503, "Service Unavailable", "the worker queue is full; retry later")
        .header("Retry-After", "1");
  return Deferred{};
}

Reply Manager::in_process(std::string_view task, std::string input, std::function<Response(const TaskResult&)> then) {
  if (!current_) throw std::logic_error("in_process() outside a request handler");
  processes_for(task);
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
    respond(request, std::move(r));
  };
  const std::size_t size = input.size();
  switch (processes_->submit(task, std::move(input),
                             traces_.around(trace_call(nullptr), "task ", task, SpanKind::Client, std::move(done),
                                            [](const TaskResult& r) { return !r.ok(); }))) {
    case WorkerProcesses::Submitted::Queued: return Deferred{};
    case WorkerProcesses::Submitted::QueueFull:
      return Response::problem(503, "Service Unavailable", "the worker queue is full; retry later")
          .header("Retry-After", "1");
    case WorkerProcesses::Submitted::TooLarge: break;
  }
  return Response::problem(500, "Internal Server Error",
                           "the task input (" + std::to_string(size) + " bytes) is larger than a worker takes (" +
                               std::to_string(processes_->max_input(task)) + " bytes)");
}

WorkerProcesses& Manager::processes_for(std::string_view task) {
  if (!processes_) throw std::invalid_argument("domain " + domain_ + " registered no tasks (Registry::task)");
  if (!processes_->runs(task))
    throw std::invalid_argument("domain " + domain_ + " has no task named " + std::string(task));
  return *processes_;
}

bool Manager::run_on_thread(const Request* about, std::function<void()> work, std::function<void()> done) {
  return workers().submit(
      [work = std::move(work)] {
        work();
        return Response();
      },
      traces_.around(
          trace_call(about), "thread", {}, SpanKind::Internal, [done = std::move(done)](Response) { done(); },
          [](const Response&) { return false; }));
}

void Manager::run_task(const Request* about, std::string_view name, std::string input,
                       std::function<void(const TaskResult&)> done) {
  const std::size_t size = input.size();
  WorkerProcesses& processes = processes_for(name);
  switch (processes.submit(
      name, std::move(input),
      traces_.around(
          trace_call(about), "task ", name, SpanKind::Client, [done = std::move(done)](TaskResult r) { done(r); },
          [](const TaskResult& r) { return !r.ok(); }))) {
    case WorkerProcesses::Submitted::Queued: return;
    case WorkerProcesses::Submitted::QueueFull: throw Unavailable("the worker queue is full; retry later");
    case WorkerProcesses::Submitted::TooLarge: break;
  }
  throw std::invalid_argument("the task input (" + std::to_string(size) + " bytes) is larger than a worker takes (" +
                              std::to_string(processes.max_input(name)) + " bytes)");
}

}  // namespace edri::manager
