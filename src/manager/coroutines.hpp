// Coroutines: the handler coroutines of one manager that wait
// (include/edri/async.hpp, docs/decisions/0030).
//
// Each waiting handler holds a copy of its request (OwnedRequest), its
// frame and its flow; at most EDRI_MAX_WAITING wait at once, past which a
// request is answered 503 without running. When a request's deadline
// passes while it waits (the client's, or EDRI_API_RESPONSE_TIMEOUT, when
// the broker has answered 504 already), the operation it waits on is
// dropped and the handler resumes with edri::Cancelled; nothing is sent.
// The same when its client's connection closes (kControlClientGone),
// except that 499 is answered, which the listener drops: the books of
// every process on the way are kept by answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <edri/context.hpp>

#include "envelope/envelope.hpp"
#include "manager/owned_request.hpp"
#include "runtime/event_loop.hpp"

namespace edri::manager {

// The answer for a handler that threw `error` (what call_handler makes of
// an exception): a RequestError's status, 503 for Unavailable, else 500
// (its text hidden when `production`).
Response answer_for_failure(std::exception_ptr error, std::string_view event, bool production);

class Coroutines {
 public:
  using Answer = std::function<void(const envelope::EnvelopeHeader& request, Response)>;
  using Clock = std::chrono::steady_clock;

  Coroutines(EventLoop& loop, std::size_t max_waiting, bool production, Answer answer);
  ~Coroutines();  // every waiting frame goes; late completions find nothing
  Coroutines(const Coroutines&) = delete;
  Coroutines& operator=(const Coroutines&) = delete;

  // Runs `handler` on a copy of `req`, for the request `header`, until it
  // waits or returns. A Response when it returned at once (or could not
  // start), else Deferred: `answer` is called when it returns. No header:
  // a subscriber's, which answers nothing. Its deadline is `deadline` or
  // `within` from when it first waits, whichever is sooner (the clock is
  // read only for a handler that waits).
  Reply start(const AsyncHandler& handler, const Request& req, Context& ctx, const envelope::EnvelopeHeader* header,
              Clock::time_point deadline, Clock::duration within = Clock::duration::max());
  // Runs coroutine subscriber `subscriber` for notification `n`; it may
  // wait up to `within`. A problem when it could not start, else Deferred
  // or the empty Response it ends with.
  Reply start(const AsyncSubscriber& subscriber, const Request& n, Context& ctx, Clock::duration within);
  std::size_t waiting() const { return waiting_.size(); }
  // The answer `gone` names (kControlClientGone: a slot of a connection,
  // or all of them) can no longer be delivered: the handlers waiting for
  // it are cancelled.
  void client_gone(const envelope::EnvelopeHeader& gone);

 private:
  using Frame = Async<Response>::Handle;
  struct Waiting {
    std::unique_ptr<OwnedRequest> request;
    std::optional<envelope::EnvelopeHeader> header;  // none: a subscriber's
    std::shared_ptr<detail::Flow> flow;
    Frame frame;
    std::multimap<Clock::time_point, std::uint64_t>::iterator deadline;
    bool client_gone = false;
  };
  // A client's connection: listener and connection id (its generation is
  // checked on the header).
  static std::uint64_t connection_key(const envelope::EnvelopeHeader& h) {
    return std::uint64_t{h.origin_listener} << 32 | h.origin_connection;
  }
  void forget_connection(const Waiting& w, std::uint64_t id);
  // Its handler returned: answered (unless cancelled) and forgotten.
  void finish(std::uint64_t id);
  // What a finished frame answers; nothing when it was cancelled.
  std::optional<Response> outcome(Frame frame, std::string_view event) const;
  void expire();
  void arm();
  // Spares, so that a handler that awaits nothing allocates only its
  // frame: a request copy and a flow, taken and given back.
  std::unique_ptr<OwnedRequest> take_request(const Request& req);
  std::shared_ptr<detail::Flow> take_flow();
  void give_back(std::unique_ptr<OwnedRequest> request, std::shared_ptr<detail::Flow> flow);

  std::size_t max_waiting_;
  bool production_;
  Answer answer_;
  std::unordered_map<std::uint64_t, Waiting> waiting_;
  std::multimap<Clock::time_point, std::uint64_t> deadlines_;
  std::unordered_multimap<std::uint64_t, std::uint64_t> by_connection_;  // connection_key -> id, of a client's
  std::vector<std::unique_ptr<OwnedRequest>> spare_requests_;
  std::vector<std::shared_ptr<detail::Flow>> spare_flows_;
  EventLoop::Timer timer_;
  std::uint64_t next_ = 0;
};

}  // namespace edri::manager
