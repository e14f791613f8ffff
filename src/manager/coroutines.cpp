#include "manager/coroutines.hpp"

#include "envelope/control.hpp"

#include <spdlog/spdlog.h>

namespace edri::manager {

Response answer_for_failure(std::exception_ptr error, std::string_view event, bool production) {
  try {
    std::rethrow_exception(error);
  } catch (const RequestError& e) {
    // The client's mistake (Request::json() refused the body, say): its
    // status, and the detail is for the client.
    const int status = e.status() >= 400 && e.status() <= 499 ? e.status() : 400;
    spdlog::debug("handler for {} refused the request: {} {}", event, status, e.what());
    return Response::problem(status, reason_phrase(status), e.what());
  } catch (const Unavailable& e) {
    return Response::problem(503, "Service Unavailable", e.what()).header("Retry-After", "1");
  } catch (const DatabaseError& e) {
    // The database's own message stays here: it may show the schema.
    spdlog::warn("handler for {}: database: {} (SQLSTATE {})", event, e.what(), e.sqlstate());
    return e.problem();
  } catch (const std::exception& e) {
    spdlog::error("handler for {} threw: {}", event, e.what());
    return Response::problem(500, "Internal Server Error",
                             production ? "the handler failed" : std::string("handler threw: ") + e.what());
  } catch (...) {
    spdlog::error("handler for {} threw a non-exception", event);
    return Response::problem(500, "Internal Server Error", "the handler failed");
  }
}

Coroutines::Coroutines(EventLoop& loop, std::size_t max_waiting, bool production, Answer answer)
    : max_waiting_(max_waiting),
      production_(production),
      answer_(std::move(answer)),
      timer_(loop, [this] { expire(); }) {}

Coroutines::~Coroutines() {
  for (auto& [id, w] : waiting_) {
    w.flow->abandon();
    w.frame.destroy();
  }
}

Reply Coroutines::start(const AsyncHandler& handler, const Request& req, Context& ctx,
                        const envelope::EnvelopeHeader* header, Clock::time_point deadline, Clock::duration within) {
  if (waiting_.size() >= max_waiting_)
    return Response::problem(503, "Service Unavailable", "this domain has EDRI_MAX_WAITING requests waiting already")
        .header("Retry-After", "1");
  auto request = take_request(req);
  const Frame frame = handler(request->request(), ctx).release();
  auto flow = take_flow();
  frame.promise().flow = flow;
  flow->waiting = frame;
  flow->request = &request->request();
  if (flow->resume()) {  // returned without waiting
    auto answer = outcome(frame, req.event);
    frame.destroy();
    give_back(std::move(request), std::move(flow));
    return answer ? std::move(*answer) : Reply{Deferred{}};
  }
  const std::uint64_t id = next_++;
  if (within != Clock::duration::max()) deadline = std::min(deadline, Clock::now() + within);
  const auto at = deadlines_.emplace(deadline, id);
  waiting_.emplace(id, Waiting{std::move(request), header ? std::optional(*header) : std::nullopt, flow, frame, at});
  if (header && header->reply_to == 0) by_connection_.emplace(connection_key(*header), id);
  flow->on_finish = [this, id] { finish(id); };
  if (at == deadlines_.begin()) arm();
  return Deferred{};
}

namespace {
// A coroutine subscriber as a coroutine that answers (nothing is sent):
// a function, not a lambda, so that its frame holds what it refers to.
Async<Response> run_subscriber(const AsyncSubscriber* subscriber, const Request& n, Context& ctx) {
  co_await (*subscriber)(n, ctx);
  co_return Response();
}
}  // namespace

Reply Coroutines::start(const AsyncSubscriber& subscriber, const Request& n, Context& ctx, Clock::duration within) {
  const AsyncHandler run = [s = &subscriber](const Request& r, Context& c) { return run_subscriber(s, r, c); };
  return start(run, n, ctx, nullptr, Clock::time_point::max(), within);
}

void Coroutines::finish(std::uint64_t id) {
  const auto it = waiting_.find(id);
  if (it == waiting_.end()) return;
  Waiting w = std::move(it->second);
  waiting_.erase(it);
  if (w.deadline != deadlines_.end()) deadlines_.erase(w.deadline);
  forget_connection(w, id);
  auto answer = outcome(w.frame, w.request->request().event);
  w.frame.destroy();
  if (!answer && w.client_gone)
    answer = Response::problem(499, "Client Closed Request", "the client went away while the handler waited");
  if (answer && w.header) answer_(*w.header, std::move(*answer));
  give_back(std::move(w.request), std::move(w.flow));
}

namespace {
// How many spares are kept, and the largest request copy kept as one (a
// large body's buffer is not held for the next request).
constexpr std::size_t kSpares = 64;
constexpr std::size_t kSpareRequestBytes = 16 * 1024;
}  // namespace

std::unique_ptr<OwnedRequest> Coroutines::take_request(const Request& req) {
  if (spare_requests_.empty()) return std::make_unique<OwnedRequest>(req);
  auto request = std::move(spare_requests_.back());
  spare_requests_.pop_back();
  request->assign(req);
  return request;
}

std::shared_ptr<detail::Flow> Coroutines::take_flow() {
  if (spare_flows_.empty()) return std::make_shared<detail::Flow>();
  auto flow = std::move(spare_flows_.back());
  spare_flows_.pop_back();
  return flow;
}

void Coroutines::give_back(std::unique_ptr<OwnedRequest> request, std::shared_ptr<detail::Flow> flow) {
  if (request->bytes() <= kSpareRequestBytes && spare_requests_.size() < kSpares)
    spare_requests_.push_back(std::move(request));
  // A completion that still holds the flow (one that came late and was
  // dropped holds none) keeps it: it is not used again.
  if (flow.use_count() == 1 && spare_flows_.size() < kSpares) {
    // The operation number goes on counting: a completion of a past use
    // can never match.
    const auto operation = flow->operation;
    *flow = detail::Flow{};
    flow->operation = operation;
    spare_flows_.push_back(std::move(flow));
  }
}

std::optional<Response> Coroutines::outcome(Frame frame, std::string_view event) const {
  try {
    return frame.promise().take();
  } catch (const Cancelled& e) {
    spdlog::debug("handler for {} cancelled: {}", event, e.what());
    return std::nullopt;
  } catch (...) {
    return answer_for_failure(std::current_exception(), event, production_);
  }
}

void Coroutines::forget_connection(const Waiting& w, std::uint64_t id) {
  if (!w.header || w.header->reply_to != 0) return;
  auto [it, end] = by_connection_.equal_range(connection_key(*w.header));
  for (; it != end; ++it)
    if (it->second == id) return (void)by_connection_.erase(it);
}

void Coroutines::client_gone(const envelope::EnvelopeHeader& gone) {
  std::vector<std::uint64_t> ids;
  auto [it, end] = by_connection_.equal_range(connection_key(gone));
  for (; it != end; ++it) ids.push_back(it->second);
  for (const auto id : ids) {
    const auto w = waiting_.find(id);
    if (w == waiting_.end() || w->second.client_gone) continue;
    const auto& h = *w->second.header;
    if (h.origin_generation != gone.origin_generation ||
        (gone.origin_stream != envelope::kEveryStream && gone.origin_stream != h.origin_stream))
      continue;
    w->second.client_gone = true;
    std::shared_ptr<detail::Flow>(w->second.flow)->cancel("the client went away");
  }
}

void Coroutines::expire() {
  const auto now = Clock::now();
  std::vector<std::uint64_t> due;
  for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now; ++it) due.push_back(it->second);
  for (const auto id : due) {
    const auto it = waiting_.find(id);
    if (it == waiting_.end()) continue;
    // Once: a handler that catches Cancelled and never returns is not
    // cancelled again and again.
    deadlines_.erase(it->second.deadline);
    it->second.deadline = deadlines_.end();
    std::shared_ptr<detail::Flow>(it->second.flow)->cancel("the request's deadline passed");
  }
  arm();
}

void Coroutines::arm() {
  if (deadlines_.empty()) return timer_.cancel();
  const auto wait = deadlines_.begin()->first - Clock::now();
  timer_.expires_after(std::max(wait, Clock::duration(std::chrono::microseconds(100))));
}

}  // namespace edri::manager
