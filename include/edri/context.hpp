// What a handler may ask of the manager it runs in (Context), how it
// answers later (Responder), and the shapes of handlers, subscribers and
// worker-process tasks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include <edri/request.hpp>
#include <edri/response.hpp>

namespace edri {

// Answers a request later, from the manager's loop (after a request to
// another manager came back, say). Obtained from Context::defer(); the
// handler then returns Deferred{}. Sending twice sends once.
class Responder {
 public:
  struct Sink {
    virtual ~Sink() = default;
    virtual void send(Response response) = 0;
  };
  explicit Responder(std::shared_ptr<Sink> sink) : sink_(std::move(sink)) {}
  void send(Response response) const {
    if (sink_) sink_->send(std::move(response));
  }

 private:
  std::shared_ptr<Sink> sink_;
};

// What became of a task sent to a worker process (Context::in_process).
struct TaskResult {
  enum class Outcome : std::uint8_t {
    Done,        // the task returned; `output` is what it returned
    Threw,       // the task threw; `output` is the exception's what()
    WorkerDied,  // its worker process died while running it
    NoWorker,    // no worker process could be started
  };
  Outcome outcome = Outcome::Done;
  std::string output;

  bool ok() const { return outcome == Outcome::Done; }
  // The answer for a failed task: 500 when it threw, else 503 with
  // Retry-After (a replaced worker may well succeed).
  Response problem() const {
    switch (outcome) {
      case Outcome::Done: break;
      case Outcome::Threw: return Response::problem(500, "Internal Server Error", "task failed: " + output);
      case Outcome::WorkerDied:
        return Response::problem(503, "Service Unavailable", "the worker process died running the task: " + output)
            .header("Retry-After", "1");
      case Outcome::NoWorker:
        return Response::problem(503, "Service Unavailable", "no worker process: " + output).header("Retry-After", "1");
    }
    return Response::problem(500, "Internal Server Error", "problem() of a task that succeeded");
  }
};

// Services of the manager a handler runs in.
class Context {
 public:
  virtual ~Context() = default;
  // The domain (manager) this handler runs in.
  virtual std::string_view domain() const = 0;
  // Publishes a notification: every manager that subscribed to `event`
  // (Registry::subscribe) runs its subscriber with `payload` as the body.
  // Fire and forget; false if it could not be queued.
  virtual bool publish(std::string_view event, const nlohmann::json& payload) = 0;
  // Sends a request event to the manager that handles it; `on_response`
  // runs later in this manager's loop with that handler's response (or a
  // 503 problem if it could not be sent). False if `event` is unknown.
  virtual bool request(std::string_view event, const nlohmann::json& body,
                       std::function<void(const Response&)> on_response) = 0;
  // Live streams (docs/streams.md). Publishes the JSON Merge Patch `patch`
  // (RFC 7386; an object) to stream `name`: the broker numbers it and every
  // subscriber, on any listener, converges on the new state; what it costs
  // this handler does not grow with the subscribers. `then`, when given,
  // runs later in this manager's loop with 200 {"stream","revision"}, or a
  // problem: 422 for a bad name or a patch that is not an object, 413 past
  // EDRI_STREAM_MAX_BYTES, 503 when it could not be queued, 504 when the
  // broker did not answer within EDRI_API_RESPONSE_TIMEOUT (it died with
  // it). False when it was refused here (then `then` has run already with the problem).
  virtual bool publish_patch(std::string_view name, const nlohmann::json& patch,
                             std::function<void(const Response&)> then = {}) = 0;
  // Reads stream `name`: `then` runs later with 200
  // {"stream","revision","state"} (a stream never published is {} at 0).
  virtual void read_stream(std::string_view name, std::function<void(const Response&)> then) = 0;
  // Runs `fn` in this manager's loop after `delay` (a publisher's pace, a
  // retry). It runs even when no request is current: it must not defer.
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // Takes over answering the current request; return Deferred{}.
  virtual Responder defer() = 0;
  // Renders the Mustache template `name` (a file under EDRI_TEMPLATE_PATH)
  // with `data`; {{x}} is HTML-escaped. Throws std::runtime_error when the
  // template is missing or malformed (the request then gets a 500).
  virtual std::string render(std::string_view name, const nlohmann::json& data) = 0;
  // Runs `work` on one of this domain's worker threads (see
  // Registry::worker_threads) and answers the current request with what it
  // returns (a throw becomes a 500). Returns what the handler must return:
  // Deferred, or a 503 problem when the pool's queue is full.
  // `work` runs on another thread: it must not touch the Request (copy
  // what it needs into the closure) nor call this Context.
  virtual Reply in_thread(std::function<Response()> work) = 0;
  // Runs the task registered as `task` (Registry::task) in one of this
  // domain's worker processes with `input`, and answers the current request
  // with what `then` returns, called later in this manager's loop with the
  // task's result (TaskResult::problem() is the usual answer to a failure).
  // Returns what the handler must return: Deferred, or a 503
  // problem when the pool's queue is full (`then` is then not called), or a
  // 500 when `input` is larger than a channel record. Throws
  // std::invalid_argument when the domain registered no task of that name.
  virtual Reply in_process(std::string_view task, std::string input,
                           std::function<Response(const TaskResult&)> then) = 0;
};

// A task run by a worker process: input in, output out, bytes both. It runs
// in a process of its own, so it shares no memory with the handler that
// asked for it; a throw becomes TaskResult::Outcome::Threw.
using Task = std::function<std::string(std::string_view input)>;

// Returns a Response, or Deferred when it answers later. A lambda that
// returns both declares it: `[](const Request&, Context&) -> Reply`.
using Handler = std::function<Reply(const Request&, Context&)>;
// Runs for each published notification of an event a domain subscribed to.
using Subscriber = std::function<void(const Request&, Context&)>;

}  // namespace edri
