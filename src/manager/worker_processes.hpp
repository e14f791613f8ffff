// WorkerProcesses: a manager's pool of processes for the tasks its plugin
// registered by name (Registry::task, Context::in_process).
//
// Each worker is `edri-server --worker`, forked and exec'd by the manager,
// loading the same plugins and running the tasks of the manager's domain.
// Inputs and outputs travel through shared-memory rings (contract:
// worker_pool_layout.hpp). The manager's loop watches each worker through
// a pidfd: a worker that dies is replaced at once, and the task it held
// fails with TaskResult::Outcome::WorkerDied. A worker that dies before it
// was ready (its plugin failed to load, say) never ran the task it was
// sent: the task goes back to the queue, and the worker is restarted with a
// growing delay (0.1 s doubling to 6.4 s). After three such failures in a
// row with no worker ready, tasks fail with Outcome::NoWorker instead of
// waiting for a pool that cannot start.
//
// The queue is bounded like WorkerThreads': a task beyond it is refused.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <edri/plugin.hpp>

#include "manager/worker_pool_layout.hpp"
#include "runtime/event_loop.hpp"
#include "transport/channel.hpp"
#include "transport/doorbell.hpp"
#include "transport/unique_fd.hpp"

namespace edri::manager {

class WorkerProcesses {
 public:
  struct Options {
    std::string domain;  // whose tasks the workers run
    std::string title;   // the manager's, for ps and logs
    std::size_t processes = 1;
    std::size_t queue = 256;
    std::size_t ring_bytes = 1u << 20;         // per direction and worker; a record is at most a quarter
    std::vector<int> cpus;                     // where the workers may run (empty: inherited)
    std::set<std::string, std::less<>> tasks;  // the names the workers run
  };
  using Done = std::function<void(TaskResult)>;

  // Creates the shared memory and starts every worker. Throws on failure.
  WorkerProcesses(EventLoop& loop, Options options);
  // Stops the workers (SIGTERM, then SIGKILL after 2 s) and reaps them.
  // Tasks still held are not answered: the manager is going away.
  ~WorkerProcesses();
  WorkerProcesses(const WorkerProcesses&) = delete;
  WorkerProcesses& operator=(const WorkerProcesses&) = delete;

  enum class Submitted { Queued, QueueFull, TooLarge };
  // Queues `task` with `input`; `done` runs later on the loop thread with
  // its result (or at once, inside this call, with Outcome::NoWorker when
  // the pool cannot start a worker). Nothing is queued unless Queued.
  [[nodiscard]] Submitted submit(std::string_view task, std::string input, Done done);

  // Whether the workers run a task of that name.
  bool runs(std::string_view task) const { return options_.tasks.find(task) != options_.tasks.end(); }

  // The largest input a task may be sent.
  std::size_t max_input(std::string_view task) const;

 private:
  struct Job {
    std::uint64_t id = 0;
    std::string task;
    std::string input;
    Done done;
  };
  struct Worker {
    pid_t pid = -1;
    UniqueFd pidfd;
    UniqueFd bell_fd;
    pool::WorkerBlock* block = nullptr;
    transport::ChannelProducer tasks;
    transport::ChannelConsumer results;
    transport::Doorbell bell;
    bool holding = false;
    Job held;  // id, task name and done of the task it runs (input dropped once sent)
    std::unique_ptr<EventLoop::Timer> restart;
  };

  void spawn(std::size_t i);
  void on_exit(std::size_t i);
  void collect(std::size_t i);
  void on_results();
  void dispatch();
  void fail_queue(TaskResult::Outcome outcome, const std::string& why);
  bool any_ready() const;

  EventLoop& loop_;
  Options options_;
  UniqueFd memfd_;
  UniqueFd results_fd_;  // eventfd the workers write after each result
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::vector<Worker> workers_;
  std::deque<Job> queue_;
  std::uint64_t next_id_ = 0;
  std::uint32_t start_failures_ = 0;  // workers in a row that died before they were ready
  bool stopping_ = false;
};

}  // namespace edri::manager
