// Coroutine handlers (docs/decisions/0030): a handler that waits without
// blocking its manager's loop.
//
//   r.get("/orders/{id:int}", "shop.order",
//         [](const edri::Request& req, edri::Context& ctx) -> edri::Async<> {
//           edri::Response stock = co_await ctx.ask("stock.count", {{"id", req.int_param("id")}});
//           co_await ctx.sleep(std::chrono::milliseconds(10));
//           co_return edri::Response::json(nlohmann::json::parse(stock.body_bytes()));
//         });
//
// While it waits the manager serves the domain's other requests. What it
// can wait on is a Pending: a request to another domain, a timer, a
// live-stream publish or read, a worker-thread job, a worker-process task
// (Context's ask, sleep, patch, read, thread, task); and another Async,
// which runs as part of the same handler. The Request and Context it was
// given stay valid until it returns: the manager keeps a copy of the
// request for it.
//
// When the request's deadline passes while it waits, or its client goes
// away, the operation it waits on is dropped and the co_await throws
// Cancelled: the answer can no longer be delivered; catch it only to
// clean up.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include <edri/request.hpp>
#include <edri/response.hpp>

namespace edri {

// Thrown at a co_await whose request ended while it waited (what() says
// why). Its answer can no longer be delivered.
class Cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a co_await that could not start its operation because a
// bound is reached (a worker queue is full): the request is answered 503
// with Retry-After unless the handler catches it.
class Unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class T>
class Async;

namespace detail {

// One handler coroutine and the coroutines it awaits: the operation it
// waits on now, so that a completion resumes it once and a cancellation
// can resume it instead.
struct Flow {
  std::coroutine_handle<> waiting;   // the frame suspended on an operation
  std::uint64_t operation = 0;       // the one it waits on; older completions are dropped
  const char* cancelled = nullptr;   // why, once cancelled
  bool finished = false;             // the handler's coroutine returned (or threw)
  std::function<void()> abort;       // stops the operation waited on, if it can be
  const Request* request = nullptr;  // the handler's (its copy, which lives as long)

  // Resumes the frame that waits; true when the handler has finished.
  bool resume() {
    const auto h = std::exchange(waiting, {});
    if (h) h.resume();
    return finished;
  }
  // What the manager calls when a handler finished after a resume.
  std::function<void()> on_finish;
  void resume_and_settle() {
    if (resume() && on_finish) std::exchange(on_finish, {})();
  }
  // Drops the operation waited on and resumes with Cancelled.
  void cancel(const char* why) {
    cancelled = why;
    ++operation;
    if (abort) std::exchange(abort, {})();
    resume_and_settle();
  }
  // The frame goes without resuming (the manager stops): a completion
  // that comes later finds nothing to resume.
  void abandon() {
    cancelled = "the manager stopped";
    ++operation;
    waiting = {};
    abort = {};
  }
};

// What a coroutine's promise carries, whatever it returns.
struct PromiseBase {
  std::shared_ptr<Flow> flow;
  std::coroutine_handle<> continuation;  // the coroutine that awaits this one, if any
  std::exception_ptr error;

  std::suspend_always initial_suspend() noexcept { return {}; }
  struct Final {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.continuation) return p.continuation;
      if (p.flow) p.flow->finished = true;
      return std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  Final final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct Promise : PromiseBase {
  std::variant<std::monostate, T> value;
  Async<T> get_return_object();
  template <class U>
  void return_value(U&& v) {
    value.template emplace<1>(std::forward<U>(v));
  }
  T take() {
    if (error) std::rethrow_exception(error);
    return std::move(std::get<1>(value));
  }
};

template <>
struct Promise<void> : PromiseBase {
  Async<void> get_return_object();
  void return_void() noexcept {}
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

// What a coroutine handler returns (Async<> answers a Response), and what
// a coroutine it calls returns. Lazy: it runs once awaited (or, for the
// handler, once the manager starts it). Owns its frame.
template <class T = Response>
class [[nodiscard]] Async {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  explicit Async(Handle h) : h_(h) {}
  Async(Async&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Async& operator=(Async&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  Async(const Async&) = delete;
  Async& operator=(const Async&) = delete;
  ~Async() {
    if (h_) h_.destroy();
  }

  // co_await: runs it as part of the awaiting coroutine's flow.
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    h_.promise().flow = awaiting.promise().flow;
    h_.promise().continuation = awaiting;
    return h_;
  }
  T await_resume() { return h_.promise().take(); }

  // The manager's: the frame, handed over.
  Handle release() { return std::exchange(h_, {}); }

 private:
  Handle h_;
};

namespace detail {
template <class T>
Async<T> Promise<T>::get_return_object() {
  return Async<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Async<void> Promise<void>::get_return_object() {
  return Async<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace detail

// An operation a coroutine waits on: started when awaited, with a
// completion the manager's loop calls once (a late or second call is
// dropped). Made by Context (ask, sleep, ...); awaited at once.
template <class T>
class [[nodiscard]] Pending {
  using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

 public:
  // Completes the operation: with its value, or with an error the
  // co_await throws.
  class Completion {
   public:
    template <class... U>
    void operator()(U&&... v) const {
      if (settle()) {
        pending_->result_.template emplace<1>(std::forward<U>(v)...);
        finish();
      }
    }
    void fail(std::exception_ptr e) const {
      if (settle()) {
        pending_->result_.template emplace<2>(std::move(e));
        finish();
      }
    }
    // How to stop the operation should the wait be cancelled.
    void on_cancel(std::function<void()> stop) const {
      if (flow_->operation == operation_) flow_->abort = std::move(stop);
    }
    // The request of the handler that waits (null outside a manager).
    const Request* request() const { return flow_->request; }

   private:
    friend class Pending;
    Completion(Pending* p, std::shared_ptr<detail::Flow> f, std::uint64_t op)
        : pending_(p), flow_(std::move(f)), operation_(op) {}
    // Whether this completion is the awaited one; the operation is then
    // over, and the frame (where the Pending lives) still waits for it.
    bool settle() const {
      if (flow_->operation != operation_ || flow_->cancelled) return false;
      ++flow_->operation;
      flow_->abort = {};
      return true;
    }
    // Resumes the coroutine, unless the operation completed while it was
    // being started (await_suspend then does not suspend).
    void finish() const {
      if (pending_->starting_)
        pending_->done_while_starting_ = true;
      else
        flow_->resume_and_settle();
    }
    Pending* pending_;
    std::shared_ptr<detail::Flow> flow_;
    std::uint64_t operation_;
  };
  using Start = std::function<void(Completion)>;

  explicit Pending(Start start) : start_(std::move(start)) {}
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    flow_ = h.promise().flow;
    if (!flow_) throw std::logic_error("an edri::Pending is awaited only inside an edri::Async handler");
    if (flow_->cancelled) return false;  // a handler that caught Cancelled waits no more
    flow_->waiting = h;
    starting_ = true;
    try {
      start_(Completion(this, flow_, ++flow_->operation));
    } catch (...) {
      ++flow_->operation;  // what it may have started is dropped
      flow_->abort = {};
      result_.template emplace<2>(std::current_exception());
      done_while_starting_ = true;
    }
    starting_ = false;
    if (!done_while_starting_) return true;
    flow_->waiting = {};
    return false;
  }
  T await_resume() {
    if (result_.index() == 2) std::rethrow_exception(std::get<2>(result_));
    if (result_.index() == 0) throw Cancelled(flow_->cancelled ? flow_->cancelled : "cancelled");
    if constexpr (!std::is_void_v<T>) return std::move(std::get<1>(result_));
  }

 private:
  Start start_;
  std::shared_ptr<detail::Flow> flow_;
  std::variant<std::monostate, Stored, std::exception_ptr> result_;
  bool starting_ = false;
  bool done_while_starting_ = false;
};

}  // namespace edri
