#include "manager/worker_threads.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <stdexcept>

#include <spdlog/spdlog.h>

#include "runtime/placement.hpp"

namespace edri::manager {

WorkerThreads::WorkerThreads(EventLoop& loop, std::size_t threads, std::size_t queue_limit, std::vector<int> cpus)
    : loop_(loop),
      size_(threads == 0 ? 1 : threads),
      queue_limit_(queue_limit),
      cpus_(std::move(cpus)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!wake_fd_) throw std::runtime_error("eventfd for worker threads failed");
  loop_.watch(wake_fd_.get(), EPOLLIN, [this](std::uint32_t) { deliver(); });
}

WorkerThreads::~WorkerThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : threads_) t.join();
  loop_.unwatch(wake_fd_.get());
}

bool WorkerThreads::submit(Work work, Done done) {
  if (threads_.empty()) start();
  {
    std::lock_guard lock(mutex_);
    // Jobs being run count too: a full pool with a full queue refuses.
    if (jobs_.size() + running_ >= size_ + queue_limit_) return false;
    jobs_.push_back(Job{std::move(work), std::move(done)});
  }
  work_ready_.notify_one();
  return true;
}

void WorkerThreads::start() {
  threads_.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i) {
    threads_.emplace_back([this] { run(); });
    if (!let_thread_float(threads_.back(), cpus_))
      spdlog::warn("worker thread affinity not set; it stays where the manager runs");
  }
  spdlog::info("started {} worker threads", size_);
}

void WorkerThreads::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    Response r;
    try {
      r = job.work();
    } catch (const std::exception& e) {
      r = Response::problem(500, "Internal Server Error", std::string("worker job threw: ") + e.what());
    } catch (...) {
      r = Response::problem(500, "Internal Server Error", "worker job threw");
    }
    bool wake;
    {
      std::lock_guard lock(mutex_);
      --running_;
      wake = finished_.empty();  // the loop drains them all at once
      finished_.push_back(Finished{std::move(job.done), std::move(r)});
    }
    if (wake) {
      const std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof one);
    }
  }
}

void WorkerThreads::deliver() {
  std::uint64_t count;
  [[maybe_unused]] auto n = ::read(wake_fd_.get(), &count, sizeof count);
  std::deque<Finished> ready;
  {
    std::lock_guard lock(mutex_);
    ready.swap(finished_);
  }
  for (auto& f : ready) {
    try {
      f.done(std::move(f.response));
    } catch (const std::exception& e) {
      spdlog::error("a worker result callback threw: {}", e.what());
    }
  }
}

}  // namespace edri::manager
