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

#include <edri/async.hpp>
#include <edri/database.hpp>
#include <edri/http_call.hpp>
#include <edri/log.hpp>
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

class Context;
// A coroutine handler (include/edri/async.hpp).
using AsyncHandler = std::function<Async<Response>(const Request&, Context&)>;
// A coroutine subscriber: it may wait, and answers nothing.
using AsyncSubscriber = std::function<Async<void>(const Request&, Context&)>;

// Services of the manager a handler runs in.
class Context {
 public:
  virtual ~Context() = default;
  // The domain (manager) this handler runs in.
  virtual std::string_view domain() const = 0;
  // A line in the server's log (edri/log.hpp), at `level` (shown from
  // EDRI_LOG_LEVEL up): `about`, the request it concerns, gives it that
  // request's id (its X-Request-Id where it has one, else Request::id).
  virtual void log(LogLevel level, std::string_view message, const Request* about = nullptr) = 0;
  // Publishes a notification: every manager that subscribed to `event`
  // (Registry::subscribe) runs its subscriber with `payload` as the body.
  // Fire and forget; false if it could not be queued.
  virtual bool publish(std::string_view event, const nlohmann::json& payload) = 0;
  // Sends a request event to the manager that handles it; `on_response`
  // runs later in this manager's loop with that handler's response (or a
  // 503 problem if it could not be sent). False if `event` is unknown.
  // On behalf of the request whose handler runs now (its trace goes on).
  bool request(std::string_view event, const nlohmann::json& body, std::function<void(const Response&)> on_response) {
    return request_for(nullptr, event, body, std::move(on_response));
  }
  // request() on behalf of `about` (its trace goes on with it; null: the
  // request whose handler runs now), for a handler that answers later.
  virtual bool request_for(const Request* about, std::string_view event, const nlohmann::json& body,
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

  // What a coroutine handler awaits (include/edri/async.hpp). Each starts
  // when awaited and resumes the handler in this manager's loop.
  //
  // The answer of `event`'s handler (as request() gives it).
  Pending<Response> ask(std::string_view event, nlohmann::json body) {
    return Pending<Response>([this, event = std::string(event), body = std::move(body)](auto done) {
      if (!request_for(done.request(), event, body, done))
        done(Response::problem(500, "Internal Server Error", "no domain handles the event " + event));
    });
  }
  // Resumes after `delay`.
  Pending<void> sleep(std::chrono::milliseconds delay) {
    return Pending<void>([this, delay](auto done) { after(delay, done); });
  }
  // publish_patch()'s answer: 200 {"stream","revision"}, or a problem.
  Pending<Response> patch(std::string_view name, nlohmann::json patch) {
    return Pending<Response>(
        [this, name = std::string(name), patch = std::move(patch)](auto done) { publish_patch(name, patch, done); });
  }
  // read_stream()'s answer: 200 {"stream","revision","state"}.
  Pending<Response> read(std::string_view name) {
    return Pending<Response>([this, name = std::string(name)](auto done) { read_stream(name, done); });
  }
  // What `work()` returns, run on one of this domain's worker threads
  // (Registry::worker_threads); what it throws is thrown here. `work`
  // must not touch the Request or this Context (copy what it needs);
  // once this resumes both may be used again. Throws Unavailable when the
  // pool's queue is full.
  template <class Work>
  Pending<std::invoke_result_t<Work&>> thread(Work work) {
    using T = std::invoke_result_t<Work&>;
    return Pending<T>([this, work = std::move(work)](auto done) mutable {
      auto slot = std::make_shared<
          std::variant<std::monostate, std::conditional_t<std::is_void_v<T>, std::monostate, T>, std::exception_ptr>>();
      auto run = [work = std::move(work), slot]() mutable {
        try {
          if constexpr (std::is_void_v<T>) {
            work();
            slot->template emplace<1>();
          } else {
            slot->template emplace<1>(work());
          }
        } catch (...) {
          slot->template emplace<2>(std::current_exception());
        }
      };
      auto back = [done, slot] {
        if (slot->index() == 2) return done.fail(std::get<2>(*slot));
        if constexpr (std::is_void_v<T>)
          done();
        else
          done(std::move(std::get<1>(*slot)));
      };
      if (!run_on_thread(done.request(), std::move(run), std::move(back)))
        done.fail(std::make_exception_ptr(Unavailable("the worker queue is full; retry later")));
    });
  }
  // The result of the task registered as `name`, run in one of this
  // domain's worker processes with `input` (as in_process()).
  Pending<TaskResult> task(std::string_view name, std::string input) {
    return Pending<TaskResult>([this, name = std::string(name), input = std::move(input)](auto done) mutable {
      run_task(done.request(), name, std::move(input), done);
    });
  }

  // The answer of another service over HTTP (include/edri/http_call.hpp),
  // the request's X-Request-Id and trace (`traceparent`) sent with it and
  // its deadline bounding the call. A failure (refused, timed out, too large, TLS) is a HttpReply
  // whose `error` says what; a cancelled wait stops the call.
  Pending<HttpReply> fetch(HttpCall call) {
    return Pending<HttpReply>([this, call = std::move(call)](auto done) mutable {
      auto deadline = std::chrono::steady_clock::time_point::max();
      if (const Request* req = done.request()) {
        if (!req->id.empty()) call.headers.emplace_back("X-Request-Id", std::string(req->id));
        if (!req->traceparent.empty()) call.headers.emplace_back("traceparent", std::string(req->traceparent));
        if (!req->tracestate.empty()) call.headers.emplace_back("tracestate", std::string(req->tracestate));
        deadline = req->deadline;
      }
      done.on_cancel(http(std::move(call), deadline, done));
    });
  }
  // fetch() for a callback handler: `done` runs later in this manager's
  // loop. What it returns stops the call (`done` is then not called).
  virtual std::function<void()> http(HttpCall call, std::chrono::steady_clock::time_point deadline,
                                     std::function<void(HttpReply)> done) = 0;

  // The database `name` this domain declared (Registry::database): its
  // manager's pool, awaited (Database::query) or with callbacks
  // (Database::run). Throws std::invalid_argument for a name the domain did
  // not declare.
  virtual Database& database(std::string_view name) = 0;

  // The manager's side of coroutines. start(): runs `handler` on a copy
  // of `req` that lives as long as it does; returns what the handler must
  // return (Deferred, or a 503 past EDRI_MAX_WAITING).
  virtual Reply start(const AsyncHandler& handler, const Request& req) = 0;
  // start() for a coroutine subscriber and the notification `n`: it may
  // wait (bounded by EDRI_API_RESPONSE_TIMEOUT and EDRI_MAX_WAITING like a
  // handler); nothing is answered.
  virtual void start(const AsyncSubscriber& subscriber, const Request& n) = 0;
  // Runs `work` on a worker thread, then `done` in this manager's loop;
  // false when the pool's queue is full. `about`: the request it is for
  // (its trace gets the work's span).
  virtual bool run_on_thread(const Request* about, std::function<void()> work, std::function<void()> done) = 0;
  // Runs task `name` in a worker process, then `done` in the loop with
  // its result (a failure to start it, too). Throws
  // std::invalid_argument when the domain has no such task.
  virtual void run_task(const Request* about, std::string_view name, std::string input,
                        std::function<void(const TaskResult&)> done) = 0;
};

// A task run by a worker process: input in, output out, bytes both. It runs
// in a process of its own, so it shares no memory with the handler that
// asked for it; a throw becomes TaskResult::Outcome::Threw.
using Task = std::function<std::string(std::string_view input)>;

// Returns a Response, or Deferred when it answers later. A lambda that
// returns both declares it: `[](const Request&, Context&) -> Reply`.
using Handler = std::function<Reply(const Request&, Context&)>;
// A coroutine handler as a Handler: the manager starts it on a copy of
// the request that lives as long as it does.
inline Handler from_async(AsyncHandler h) {
  return [h = std::move(h)](const Request& req, Context& ctx) -> Reply { return ctx.start(h, req); };
}
// Runs for each published notification of an event a domain subscribed to.
using Subscriber = std::function<void(const Request&, Context&)>;
// A coroutine subscriber as a Subscriber.
inline Subscriber from_async(AsyncSubscriber s) {
  return [s = std::move(s)](const Request& n, Context& ctx) { ctx.start(s, n); };
}

}  // namespace edri
