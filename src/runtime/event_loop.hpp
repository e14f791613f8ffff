// EventLoop: the epoll set a child process blocks in.
//
// Every descriptor is registered once, edge-triggered, and stays registered
// until it is closed: waiting for readiness costs no epoll_ctl and no
// speculative read per operation (Boost 1.74's Asio reactor costs one of
// the two on every async_wait or async_read_some; see
// docs/decisions/0002-child-event-loop.md for the measurement). Timers are
// timerfds and signals a signalfd in the same set, so one epoll_wait is the
// only system call a sleeping process makes.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "transport/unique_fd.hpp"

namespace edri {

class EventLoop {
 public:
  using Callback = std::function<void(std::uint32_t events)>;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Calls `cb` with the epoll event bits whenever `fd` becomes ready for
  // `events` (edge-triggered: read or write until EAGAIN or a short
  // transfer before waiting again). Throws std::system_error on failure.
  void watch(int fd, std::uint32_t events, Callback cb);
  // Level-triggered instead, and its interest changed with rewatch(): for
  // a library that reads what it wants and says what it waits for next
  // (libcurl), not until EAGAIN.
  void watch_level(int fd, std::uint32_t events, Callback cb);
  void rewatch_level(int fd, std::uint32_t events);
  // Stops watching; pending events for `fd` in the current batch are
  // dropped. Call before closing the descriptor.
  void unwatch(int fd);

  // Waits up to `timeout_ms` (-1: forever, 0: just look) and runs the
  // callbacks of ready descriptors. Returns how many ran.
  std::size_t poll(int timeout_ms);

  // A timer on a timerfd, run by this loop.
  class Timer {
   public:
    Timer(EventLoop& loop, std::function<void()> on_expiry);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    void expires_after(std::chrono::nanoseconds delay);
    void cancel();

   private:
    EventLoop& loop_;
    UniqueFd fd_;
    std::function<void()> on_expiry_;
  };

 private:
  void add(int fd, std::uint32_t events, Callback cb);
  struct Entry {
    int fd = -1;
    std::uint32_t generation = 0;
    Callback cb;
  };

  UniqueFd epoll_fd_;
  std::vector<Entry> entries_;       // by slot
  std::vector<std::uint32_t> free_;  // free slots
  std::vector<int> slot_of_fd_;      // fd -> slot + 1 (0: not watched)
  std::vector<epoll_event> events_;
  std::vector<Callback> retired_;  // callbacks unwatched during a batch
};

}  // namespace edri
