// WorkerThreads: a manager's pool of threads for CPU work.
//
// A handler hands a job to the pool (Context::in_thread) and returns
// Deferred; a worker thread runs the job and queues its result,
// and the manager's loop, woken through an eventfd in its epoll set, sends
// the answer. Handlers, envelopes and channels are touched by the loop
// thread only; a job sees nothing but what it captured.
//
// The queue is bounded: a job beyond it is refused (the client gets 503),
// never buffered without limit. Threads start with the first job, so a
// manager that never offloads stays single-threaded. They may run on every
// CPU the process was allowed at start, not only on the one its loop is
// pinned to (EDRI_CPUS=auto): CPU work is what they are for.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <edri/plugin.hpp>

#include "runtime/event_loop.hpp"
#include "transport/unique_fd.hpp"

namespace edri::manager {

class WorkerThreads {
 public:
  using Work = std::function<Response()>;
  using Done = std::function<void(Response)>;

  // `cpus`: the CPUs the threads may run on (empty: leave as inherited).
  WorkerThreads(EventLoop& loop, std::size_t threads, std::size_t queue_limit, std::vector<int> cpus);
  ~WorkerThreads();
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  // Queues `work`; `done` runs later on the loop thread with its response
  // (a 500 problem if it threw). False, and nothing queued, when the queue
  // is full.
  [[nodiscard]] bool submit(Work work, Done done);

 private:
  struct Job {
    Work work;
    Done done;
  };
  struct Finished {
    Done done;
    Response response;
  };

  void start();
  void run();
  void deliver();  // on the loop thread

  EventLoop& loop_;
  std::size_t size_;
  std::size_t queue_limit_;
  std::vector<int> cpus_;
  UniqueFd wake_fd_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<Job> jobs_;
  std::deque<Finished> finished_;
  std::size_t running_ = 0;  // jobs taken by a thread, not finished
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace edri::manager
