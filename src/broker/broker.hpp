// Broker: the API side of the pipeline. It keeps every request that a
// listener sent until its response comes back, answers 504 for one that
// outlives EDRI_API_RESPONSE_TIMEOUT, and returns each response to the
// listener that holds the connection. It reads envelope headers only,
// except for WebSocket pushes: it keeps which connections subscribed to
// which notifications (with their filters), asks the router for those
// notifications, and sends each once to every listener with matching
// connections, naming them (the listener frames it once for all of them).
// A client's answer may also come from its manager straight to the
// listener (docs/decisions/0016): the listener then says so
// (kControlAnswered), and the broker reads what its listeners sent before
// it decides that a request is late or lost. A client's HTTP request goes
// from its listener straight to the router (docs/decisions/0026), or to
// its manager (0027): the listener says so first (kControlSent), and the
// broker keeps it as if it had passed it on, reading those notices at
// least every half timeout (learn_period) so that every deadline is armed
// before it passes.
// Live streams are ordered here too (StreamBook, docs/decisions/0018).
// Answers are never refused for room; a push that cannot be queued closes
// the connections that would miss it (kControlPushClose), never a silent
// gap.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "broker/stream_book.hpp"
#include "envelope/envelope.hpp"
#include "runtime/config.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/process_loop.hpp"
#include "runtime/successor_watch.hpp"

#include <nlohmann/json.hpp>

namespace edri::broker {

class Broker {
 public:
  Broker(ProcessLoop& loop, const Config& config);

 private:
  struct PushSubscription {
    std::uint16_t listener;
    std::uint32_t connection;
    std::uint32_t generation;
    nlohmann::json filter;  // object of path -> value, or null: everything
  };

  struct Pending {
    envelope::EnvelopeHeader request;  // origin, to answer 504 without the handler
    std::chrono::steady_clock::time_point sent;
  };

  void on_request(std::uint16_t listener, std::span<const std::byte> record);
  // kControlSent from a listener: these requests went to the router.
  void learn_sent(std::uint16_t listener, std::span<const std::byte> record);
  // Keeps request `h`, passed on at `sent`, until its answer or deadline.
  void track(const envelope::EnvelopeHeader& h, std::chrono::steady_clock::time_point sent);
  void on_response(std::span<const std::byte> record);
  void on_control(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  // A live-stream control (codes 32..39) from listener `listener`, or from
  // a manager (-1).
  void on_stream_control(std::int32_t listener, const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  void push(const envelope::EnvelopeHeader& h, std::span<const std::byte> record);
  // Sends notification `v` to `listener` for `targets`, in as many records
  // as they need; what cannot be queued is closed instead.
  void push_to(std::uint16_t listener, const envelope::EnvelopeView& v, std::span<const envelope::PushTarget> targets);
  // Every subscriber of notification `type` missed one: close them all.
  void close_subscribers(std::uint64_t type);
  // Tells `listener` to close `targets` and forgets their subscriptions.
  void close_targets(std::uint16_t listener, std::span<const envelope::PushTarget> targets);
  // Tells the router which notifications to send here, if that changed.
  void announce_push_events(bool force);
  void answer_control(const envelope::EnvelopeHeader& h, int status);
  static bool matches(const nlohmann::json& filter, const nlohmann::json& payload);
  // kControlAnswered from a listener: these requests are answered.
  void forget_answered(std::span<const std::byte> record);
  // Reads every record the listeners sent so far (their kControlAnswered
  // come without a wake-up).
  void drain_listeners();
  void arm_deadline_timer();
  // Reads the listeners' notices: requests they sent the router, answers
  // they took, whether or not anything woke this broker.
  void learn();
  void expire();
  // The router died: what was sent before and is still unanswered once its
  // successor has served for kLostAnswerGrace died with it (or with its
  // overflow): 503. Not what went straight to its manager (kFlagDirect).
  void answer_lost();

  ProcessLoop& loop_;
  std::chrono::nanoseconds timeout_;
  std::size_t max_json_depth_;  // EDRI_MAX_JSON_DEPTH, for subscription filters
  transport::Outbox& to_router_;
  std::vector<transport::Outbox*> to_listener_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  // Request ids in arrival order; with one timeout for all, the front has
  // the earliest deadline. Answered ids are skipped lazily.
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> deadlines_;
  std::unordered_map<std::uint64_t, std::vector<PushSubscription>> push_;  // by notification type
  std::vector<std::uint64_t> announced_;                                   // what the router was told
  EventLoop::Timer timer_;
  bool timer_armed_ = false;
  // Half the timeout, between 10 ms and 1 s: a request is known before its
  // deadline, and an idle broker wakes at most once a second for this.
  std::chrono::nanoseconds learn_every_;
  EventLoop::Timer learn_timer_;
  SuccessorWatch lost_watch_;
  std::unordered_set<std::uint64_t> left_for_successor_;    // request ids the dead router never took
  std::vector<std::vector<envelope::PushTarget>> targets_;  // scratch of push(), by listener
  StreamBook streams_;
  EventLoop::Timer recovery_timer_;  // gives up on listeners that never say what they follow
};

}  // namespace edri::broker
