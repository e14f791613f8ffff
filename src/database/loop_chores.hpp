// What both database drivers keep on the manager's loop: the deadlines of
// their work, with one timer armed for the earliest, and work to run on
// the loop's next turn (answers never come inside the call that asked).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <edri/database.hpp>

#include "runtime/event_loop.hpp"

namespace edri::database {

// One Rows per statement (at least one), all failed alike.
std::vector<Rows> failed_all(std::size_t n, Rows::Failure failure, const std::string& message);

class Deadlines {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  // `expired` runs on the loop for each id whose deadline passed, once.
  Deadlines(EventLoop& loop, std::function<void(std::uint64_t id)> expired);
  // Deadline::max() is never.
  void watch(std::uint64_t id, Deadline when);
  void forget(std::uint64_t id, Deadline when) { due_.erase({when, id}); }

 private:
  void on_timer();
  void arm(Deadline when);

  std::set<std::pair<Deadline, std::uint64_t>> due_;
  Deadline armed_for_ = Deadline::max();
  std::function<void(std::uint64_t)> expired_;
  EventLoop::Timer timer_;
};

class NextTurn {
 public:
  // `first`, if given, runs at each turn before what was posted.
  explicit NextTurn(EventLoop& loop, std::function<void()> first = {});
  void post(std::function<void()> fn);

 private:
  std::vector<std::function<void()>> queued_;
  std::function<void()> first_;
  EventLoop::Timer timer_;
};

}  // namespace edri::database
