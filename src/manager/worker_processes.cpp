#include "manager/worker_processes.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <spdlog/spdlog.h>

extern char** environ;

namespace edri::manager {

namespace {

std::system_error sys_error(const char* what) { return std::system_error(errno, std::generic_category(), what); }

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

WorkerProcesses::WorkerProcesses(EventLoop& loop, Options options) : loop_(loop), options_(std::move(options)) {
  const auto rb = options_.ring_bytes;
  if (rb < transport::kMinRingBytes || (rb & (rb - 1)) != 0)
    throw std::invalid_argument("worker ring size must be a power of two of at least 4096 bytes");
  if (options_.processes == 0) options_.processes = 1;
  const auto n = static_cast<std::uint32_t>(options_.processes);
  bytes_ = pool::pool_bytes(n, rb);
  memfd_.reset(::memfd_create("edri-worker-pool", MFD_CLOEXEC));
  if (!memfd_) throw sys_error("memfd_create for the worker pool");
  if (::ftruncate(memfd_.get(), static_cast<off_t>(bytes_)) != 0)
    throw sys_error("ftruncate of the worker pool memory");
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_.get(), 0);
  if (p == MAP_FAILED) throw sys_error("mmap of the worker pool memory");
  base_ = static_cast<std::byte*>(p);
  auto* header = new (base_) pool::PoolHeader{};
  header->layout_version = pool::kPoolLayoutVersion;
  header->workers = n;
  header->ring_bytes = rb;
  header->total_bytes = bytes_;
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = pool::kPoolMagic;

  results_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!results_fd_) throw sys_error("eventfd for worker results");
  loop_.watch(results_fd_.get(), EPOLLIN, [this](std::uint32_t) { on_results(); });

  workers_.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    workers_[i].block = reinterpret_cast<pool::WorkerBlock*>(base_ + pool::block_offset(i));
    workers_[i].restart = std::make_unique<EventLoop::Timer>(loop_, [this, i] { spawn(i); });
    spawn(i);
  }
  spdlog::info("started {} worker processes", n);
}

WorkerProcesses::~WorkerProcesses() {
  stopping_ = true;
  for (auto& w : workers_)
    if (w.pid > 0) ::kill(w.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& w : workers_) {
    if (w.pid <= 0) continue;
    int status = 0;
    while (::waitpid(w.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        spdlog::warn("worker (pid {}) did not stop in 2 s: killing it", w.pid);
        ::kill(w.pid, SIGKILL);
        ::waitpid(w.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    loop_.unwatch(w.pidfd.get());
  }
  loop_.unwatch(results_fd_.get());
  ::munmap(base_, bytes_);
}

void WorkerProcesses::spawn(std::size_t i) {
  if (stopping_) return;
  auto& w = workers_[i];
  const auto rb = options_.ring_bytes;
  const auto n = static_cast<std::uint32_t>(workers_.size());
  const auto idx = static_cast<std::uint32_t>(i);
  // Clean rings: the previous worker of this slot, if any, is dead and reaped.
  new (w.block) pool::WorkerBlock{};
  w.tasks = transport::ChannelProducer(&w.block->tasks, base_ + pool::tasks_ring_offset(n, idx, rb), rb);
  w.results = transport::ChannelConsumer(&w.block->results, base_ + pool::results_ring_offset(n, idx, rb), rb);
  // A fresh doorbell per worker: the worker blocks reading it, so it is not
  // non-blocking, and a count left by the previous worker must not leak.
  w.bell_fd.reset(::eventfd(0, EFD_CLOEXEC));
  if (!w.bell_fd) {
    spdlog::error("eventfd for worker {} failed: {}", i, std::strerror(errno));
    w.restart->expires_after(std::chrono::seconds(1));
    return;
  }
  w.bell = transport::Doorbell(&w.block->bell, w.bell_fd.get());

  // Everything the child needs is built here: between fork and exec it may
  // only make system calls (the manager may have worker threads).
  const pid_t parent = ::getpid();
  const std::string title = "edri-server: worker " + std::to_string(i) + " of manager " + options_.title;
  const std::string arg = "--worker";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "EDRI_INTERNAL_WORKER", 20) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("EDRI_INTERNAL_WORKER=" + std::to_string(memfd_.get()) + "," + std::to_string(i) + "," +
                        std::to_string(w.bell_fd.get()) + "," + std::to_string(results_fd_.get()) + "," +
                        std::to_string(parent));
  env_strings.push_back("EDRI_INTERNAL_WORKER_DOMAIN=" + options_.domain);
  env_strings.push_back("EDRI_INTERNAL_WORKER_TITLE=worker " + std::to_string(i) + " of " + options_.title);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  char* argv[] = {const_cast<char*>(title.c_str()), const_cast<char*>(arg.c_str()), nullptr};
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : options_.cpus) CPU_SET(c, &cpus);
  const int inherit[] = {memfd_.get(), w.bell_fd.get(), results_fd_.get()};

  const pid_t pid = ::fork();
  if (pid < 0) {
    spdlog::error("fork for worker {} failed: {}", i, std::strerror(errno));
    w.bell_fd.reset();
    w.restart->expires_after(std::chrono::seconds(1));
    return;
  }
  if (pid == 0) {
    // Die with the manager, whatever kills it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    for (int fd : inherit) ::fcntl(fd, F_SETFD, 0);
    if (CPU_COUNT(&cpus) > 0) ::sched_setaffinity(0, sizeof cpus, &cpus);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve("/proc/self/exe", argv, envp.data());
    ::_exit(127);
  }
  w.pid = pid;
  w.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!w.pidfd) {
    // Without a pidfd the loop cannot see this worker die: do without it.
    spdlog::error("pidfd_open for worker {} failed: {}; stopping it", i, std::strerror(errno));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    w.pid = -1;
    w.bell_fd.reset();
    w.restart->expires_after(std::chrono::seconds(1));
    return;
  }
  loop_.watch(w.pidfd.get(), EPOLLIN, [this, i](std::uint32_t) { on_exit(i); });
  spdlog::debug("started worker {} (pid {})", i, pid);
  dispatch();
}

bool WorkerProcesses::any_ready() const {
  for (const auto& w : workers_)
    if (w.pid > 0 && w.block->bell.pid.load(std::memory_order_acquire) == static_cast<std::uint32_t>(w.pid))
      return true;
  return false;
}

void WorkerProcesses::on_exit(std::size_t i) {
  auto& w = workers_[i];
  int status = 0;
  if (::waitpid(w.pid, &status, WNOHANG) <= 0) return;  // not yet: a spurious wake-up
  const bool was_ready = w.block->bell.pid.load(std::memory_order_acquire) == static_cast<std::uint32_t>(w.pid);
  loop_.unwatch(w.pidfd.get());
  w.pidfd.reset();
  collect(i);  // a result it committed before dying still counts
  const std::string how = describe_exit(status);
  if (w.holding && !was_ready) {
    // It died before it could take the task: the task never ran, so it
    // goes back to the front of the queue.
    w.holding = false;
    queue_.push_front(std::move(w.held));
    spdlog::error("worker {} (pid {}) {} before it was ready; replacing it", i, w.pid, how);
  } else if (w.holding) {
    w.holding = false;
    spdlog::error("worker {} (pid {}) {} while running task {}; replacing it", i, w.pid, how, w.held.task);
    auto done = std::move(w.held.done);
    done(TaskResult{TaskResult::Outcome::WorkerDied, how});
  } else if (!stopping_) {
    spdlog::error("worker {} (pid {}) {}; replacing it", i, w.pid, how);
  }
  w.bell_fd.reset();
  w.pid = -1;
  if (stopping_) return;
  start_failures_ = was_ready ? 0 : start_failures_ + 1;
  if (start_failures_ == 0) {
    spawn(i);
  } else {
    const auto delay = std::chrono::milliseconds(100 << std::min<std::uint32_t>(start_failures_ - 1, 6));
    w.restart->expires_after(delay);
    if (start_failures_ >= 3 && !any_ready())
      fail_queue(TaskResult::Outcome::NoWorker,
                 "the worker processes of domain " + options_.domain + " exit before they are ready (" + how + ")");
  }
  dispatch();
}

void WorkerProcesses::fail_queue(TaskResult::Outcome outcome, const std::string& why) {
  auto jobs = std::move(queue_);
  queue_.clear();
  for (auto& j : jobs) j.done(TaskResult{outcome, why});
}

void WorkerProcesses::collect(std::size_t i) {
  auto& w = workers_[i];
  w.results.drain([&](std::span<const std::byte> rec, std::uint32_t tag) {
    if (rec.size() < pool::kResultPrefixBytes) return;
    std::uint64_t id;
    std::memcpy(&id, rec.data(), sizeof id);
    if (!w.holding || id != w.held.id) return;  // cannot happen: one task at a time
    w.holding = false;
    TaskResult r{tag == pool::kResultDone ? TaskResult::Outcome::Done : TaskResult::Outcome::Threw,
                 std::string(reinterpret_cast<const char*>(rec.data()) + pool::kResultPrefixBytes,
                             rec.size() - pool::kResultPrefixBytes)};
    auto done = std::move(w.held.done);
    done(std::move(r));
  });
}

void WorkerProcesses::on_results() {
  std::uint64_t count;
  [[maybe_unused]] auto n = ::read(results_fd_.get(), &count, sizeof count);
  for (std::size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i].pid > 0 && workers_[i].holding) collect(i);
  dispatch();
}

void WorkerProcesses::dispatch() {
  for (std::size_t i = 0; i < workers_.size() && !queue_.empty(); ++i) {
    auto& w = workers_[i];
    if (w.pid <= 0 || w.holding) continue;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    const std::size_t n = pool::kTaskPrefixBytes + job.task.size() + job.input.size();
    std::byte* p = w.tasks.reserve(n);
    if (!p) {  // cannot happen: the ring is empty and submit() checked the size
      job.done(TaskResult{TaskResult::Outcome::NoWorker, "the worker's task ring is full"});
      continue;
    }
    std::memcpy(p, &job.id, sizeof job.id);
    p[sizeof job.id] = static_cast<std::byte>(job.task.size());
    std::memcpy(p + pool::kTaskPrefixBytes, job.task.data(), job.task.size());
    if (!job.input.empty())
      std::memcpy(p + pool::kTaskPrefixBytes + job.task.size(), job.input.data(), job.input.size());
    w.tasks.commit();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    w.bell.ring_if_sleeping();
    w.held = std::move(job);  // input kept: it goes back to the queue if the worker dies before it is ready
    w.holding = true;
  }
}

std::size_t WorkerProcesses::max_input(std::string_view task) const {
  const std::size_t max = transport::max_record_bytes(options_.ring_bytes);
  const std::size_t prefix = pool::kTaskPrefixBytes + task.size();
  return max > prefix ? max - prefix : 0;
}

WorkerProcesses::Submitted WorkerProcesses::submit(std::string_view task, std::string input, Done done) {
  if (task.size() > 255 || input.size() > max_input(task)) return Submitted::TooLarge;
  std::size_t busy = 0;
  for (const auto& w : workers_) busy += w.holding ? 1 : 0;
  if (start_failures_ >= 3 && !any_ready()) {
    done(TaskResult{TaskResult::Outcome::NoWorker,
                    "the worker processes of domain " + options_.domain + " exit before they are ready"});
    return Submitted::Queued;
  }
  if (queue_.size() + busy >= workers_.size() + options_.queue) return Submitted::QueueFull;
  queue_.push_back(Job{++next_id_, std::string(task), std::move(input), std::move(done)});
  dispatch();
  return Submitted::Queued;
}

}  // namespace edri::manager
