#include "database/loop_chores.hpp"

#include <algorithm>

namespace edri::database {

std::vector<Rows> failed_all(std::size_t n, Rows::Failure failure, const std::string& message) {
  return std::vector<Rows>(std::max<std::size_t>(n, 1), Rows::failed(failure, message));
}

Deadlines::Deadlines(EventLoop& loop, std::function<void(std::uint64_t)> expired)
    : expired_(std::move(expired)), timer_(loop, [this] { on_timer(); }) {}

void Deadlines::watch(std::uint64_t id, Deadline when) {
  if (when == Deadline::max()) return;
  due_.insert({when, id});
  // Later deadlines than the one armed wait for it: no system call.
  if (when < armed_for_) arm(when);
}

void Deadlines::arm(Deadline when) {
  armed_for_ = when;
  timer_.expires_after(std::max(when - std::chrono::steady_clock::now(), Deadline::duration(1)));
}

void Deadlines::on_timer() {
  armed_for_ = Deadline::max();
  const auto now = std::chrono::steady_clock::now();
  while (!due_.empty() && due_.begin()->first <= now) {
    const auto id = due_.begin()->second;
    due_.erase(due_.begin());
    expired_(id);
  }
  if (!due_.empty()) arm(due_.begin()->first);
}

NextTurn::NextTurn(EventLoop& loop, std::function<void()> first)
    : first_(std::move(first)), timer_(loop, [this] {
        if (first_) first_();
        auto due = std::exchange(queued_, {});
        for (auto& fn : due) fn();
      }) {}

void NextTurn::post(std::function<void()> fn) {
  queued_.push_back(std::move(fn));
  if (queued_.size() == 1) timer_.expires_after(std::chrono::nanoseconds(0));
}

}  // namespace edri::database
