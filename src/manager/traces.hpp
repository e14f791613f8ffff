// Traces: a manager's part of each trace (docs/operations.md, Traces).
// A request whose envelope carries a Trace section gets a handler span, a
// child of the span that sent it (a listener's, another manager's call,
// another instance's); its `traceparent` is the handler's
// Request::traceparent, and the span ends when the request is answered.
// Each call a handler makes on its behalf (to another domain, to another
// service over HTTP) is a client span of its own, a child of the
// handler's, whose context goes with the call. Sampled spans go to the
// process's SpanExporter; an unsampled trace is carried all the same.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "envelope/envelope.hpp"
#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/span_exporter.hpp"

namespace edri::manager {

class Traces {
 public:
  // Off (no exporter, nothing traced) unless the config turns tracing on.
  // `counted`: where /metrics reads the spans dropped and the batches not
  // exported (the process's DoorbellState); `exporter_cpus`: where the
  // exporter's thread may run.
  Traces(EventLoop& loop, const Config& config, std::string title, TraceCounts counted,
         std::vector<int> exporter_cpus = {});
  // Opens EDRI_TRACE_PATH again (SIGUSR1, for log rotation).
  void reopen() {
    if (exporter_) exporter_->reopen();
  }
  bool on() const { return exporter_ != nullptr; }

  // The handler span of request `h` whose Trace section is `section`
  // (empty: not traced): its `traceparent` (a view into this object,
  // valid until the next begin) or empty.
  std::string_view begin(const envelope::EnvelopeHeader& h, std::string_view section, std::string_view event,
                         std::string_view domain);
  // Request `h` was answered with `status`: its span ends.
  void end(const envelope::EnvelopeHeader& h, int status);

  // The `tracestate` a Trace section carries after its traceparent, or empty.
  static std::string_view state_of(std::string_view section) {
    return section.size() > TraceContext::kTextSize + 1 ? section.substr(TraceContext::kTextSize + 1) : "";
  }

  // A call out on behalf of the span whose `traceparent` is `parent`,
  // with the trace's `state`.
  struct Call {
    TraceContext context;  // what the call carries
    SpanId parent;
    std::uint64_t start_ns;
    std::string state;  // tracestate, carried on as it came
    // The call's Trace section: its traceparent, then the state after a newline.
    std::string section() const { return state.empty() ? context.text() : context.text() + "\n" + state; }
  };
  // None when `parent` is not a trace (or tracing is off).
  std::optional<Call> call(std::string_view parent, std::string_view state = {}) const;
  // The call ended: its span (a client's, unless `kind` says) is exported
  // (when sampled).
  void finish(const Call& call, std::string name, bool error, std::vector<SpanAttribute> attributes,
              SpanKind kind = SpanKind::Client);
  // `done`, ending first the span of `call` (none: nothing to end) named
  // `name`; `failed(args...)` tells a failure from what `done` is given.
  // The name is `prefix` + `subject`, made only when the call is traced.
  template <class Done, class Failed>
  auto around(std::optional<Call> call, std::string_view prefix, std::string_view subject, SpanKind kind, Done done,
              Failed failed) {
    std::string name = call ? std::string(prefix).append(subject) : std::string();
    return [this, call, name = std::move(name), kind, done = std::move(done), failed](auto&&... a) mutable {
      if (call) finish(*call, std::move(name), failed(a...), {}, kind);
      done(std::forward<decltype(a)>(a)...);
    };
  }

 private:
  using Key = std::tuple<std::uint16_t, std::uint16_t, std::uint32_t, std::uint64_t>;
  static Key key_of(const envelope::EnvelopeHeader& h) {
    return {h.reply_to, h.origin_listener, h.origin_connection, h.request_id};
  }
  struct Open {
    TraceContext context;
    SpanId parent;
    std::uint64_t start_ns;
    std::string name;
    std::string_view domain;
  };
  void forget_stale();

  std::unique_ptr<SpanExporter> exporter_;
  std::map<Key, Open> open_;  // sampled handler spans not yet answered
  char text_[TraceContext::kTextSize] = {};
  std::uint64_t dropped_ = 0;  // logged so far
  TraceCounts counted_;
  EventLoop::Timer notices_;
};

}  // namespace edri::manager
