#include "runtime/event_loop.hpp"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace edri {

namespace {
std::uint64_t pack(std::uint32_t slot, std::uint32_t generation) {
  return (static_cast<std::uint64_t>(generation) << 32) | slot;
}
}  // namespace

EventLoop::EventLoop() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)), events_(256) {
  if (!epoll_fd_) throw std::system_error(errno, std::generic_category(), "epoll_create1");
}

EventLoop::~EventLoop() = default;

void EventLoop::watch(int fd, std::uint32_t events, Callback cb) { add(fd, events | EPOLLET, std::move(cb)); }

void EventLoop::watch_level(int fd, std::uint32_t events, Callback cb) { add(fd, events, std::move(cb)); }

void EventLoop::rewatch_level(int fd, std::uint32_t events) {
  if (fd < 0 || static_cast<std::size_t>(fd) >= slot_of_fd_.size() || !slot_of_fd_[fd]) return;
  const std::uint32_t slot = slot_of_fd_[fd] - 1;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = pack(slot, entries_[slot].generation);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, fd, &ev) != 0)
    throw std::system_error(errno, std::generic_category(), "epoll_ctl MOD");
}

void EventLoop::add(int fd, std::uint32_t events, Callback cb) {
  if (fd < 0) throw std::invalid_argument("EventLoop::watch: bad descriptor");
  if (static_cast<std::size_t>(fd) >= slot_of_fd_.size()) slot_of_fd_.resize(static_cast<std::size_t>(fd) + 64, 0);
  if (slot_of_fd_[fd]) throw std::logic_error("EventLoop::watch: descriptor already watched");
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  Entry& e = entries_[slot];
  e.fd = fd;
  e.cb = std::move(cb);
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = pack(slot, e.generation);
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int err = errno;
    e.fd = -1;
    e.cb = nullptr;
    free_.push_back(slot);
    throw std::system_error(err, std::generic_category(), "epoll_ctl ADD");
  }
  slot_of_fd_[fd] = slot + 1;
}

void EventLoop::unwatch(int fd) {
  if (fd < 0 || static_cast<std::size_t>(fd) >= slot_of_fd_.size() || !slot_of_fd_[fd]) return;
  const std::uint32_t slot = slot_of_fd_[fd] - 1;
  slot_of_fd_[fd] = 0;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  Entry& e = entries_[slot];
  e.fd = -1;
  ++e.generation;  // events of this batch for the old descriptor are dropped
  // The callback may be the one running now: destroy it after the batch.
  retired_.push_back(std::move(e.cb));
  e.cb = nullptr;
  free_.push_back(slot);
}

std::size_t EventLoop::poll(int timeout_ms) {
  int n;
  do {
    n = ::epoll_wait(epoll_fd_.get(), events_.data(), static_cast<int>(events_.size()), timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  std::size_t ran = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t tag = events_[i].data.u64;
    const auto slot = static_cast<std::uint32_t>(tag);
    const auto generation = static_cast<std::uint32_t>(tag >> 32);
    if (slot >= entries_.size() || entries_[slot].generation != generation || !entries_[slot].cb) continue;
    entries_[slot].cb(events_[i].events);
    ++ran;
  }
  retired_.clear();
  return ran;
}

EventLoop::Timer::Timer(EventLoop& loop, std::function<void()> on_expiry)
    : loop_(loop),
      fd_(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)),
      on_expiry_(std::move(on_expiry)) {
  if (!fd_) throw std::system_error(errno, std::generic_category(), "timerfd_create");
  loop_.watch(fd_.get(), EPOLLIN, [this](std::uint32_t) {
    std::uint64_t expirations;
    if (::read(fd_.get(), &expirations, sizeof expirations) == sizeof expirations) on_expiry_();
  });
}

EventLoop::Timer::~Timer() { loop_.unwatch(fd_.get()); }

void EventLoop::Timer::expires_after(std::chrono::nanoseconds delay) {
  if (delay.count() <= 0) delay = std::chrono::nanoseconds(1);  // 0 would disarm
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(delay.count() / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(delay.count() % 1000000000);
  ::timerfd_settime(fd_.get(), 0, &spec, nullptr);
}

void EventLoop::Timer::cancel() {
  itimerspec spec{};
  ::timerfd_settime(fd_.get(), 0, &spec, nullptr);
}

}  // namespace edri
