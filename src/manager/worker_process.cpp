#include "manager/worker_process.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "manager/worker_pool_layout.hpp"
#include "plugin/plugin_metrics.hpp"
#include "plugin/plugin_set.hpp"
#include "runtime/config.hpp"
#include "runtime/log.hpp"
#include "transport/channel.hpp"
#include "transport/segment.hpp"
#include "transport/unique_fd.hpp"

namespace edri::manager {

namespace {

struct Inherited {
  int memfd, index, bell_fd, results_fd;
  pid_t parent;
};

Inherited read_inherited() {
  const char* v = std::getenv("EDRI_INTERNAL_WORKER");
  Inherited in{};
  long parent = 0;
  if (!v || std::sscanf(v, "%d,%d,%d,%d,%ld", &in.memfd, &in.index, &in.bell_fd, &in.results_fd, &parent) != 5)
    throw std::runtime_error("EDRI_INTERNAL_WORKER is not set (workers are started by their manager)");
  in.parent = static_cast<pid_t>(parent);
  return in;
}

void signal_results(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
}

}  // namespace

int run_worker_process() {
  const Inherited in = read_inherited();
  // Die with the manager; it may already be gone.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != in.parent) return 1;
  // Ctrl-C in a terminal reaches the whole process group: the manager
  // stops its workers itself.
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  const char* domain_env = std::getenv("EDRI_INTERNAL_WORKER_DOMAIN");
  const char* title_env = std::getenv("EDRI_INTERNAL_WORKER_TITLE");
  const std::string domain = domain_env ? domain_env : "";
  const Config config = Config::from_env();
  init_logging(title_env ? title_env : "worker", config.log_level, config.log_format);
  ::prctl(PR_SET_NAME, "edri-worker");

  const auto plugins = plugin::PluginSet::load(config.plugins, {}, plugin::plugin_code_paths());
  // The plugins' metric handles write to the instance's segment, as in
  // the manager (whose environment this is).
  std::optional<transport::Segment> segment;
  std::optional<plugin::BoundMetrics> metrics;
  if (const char* instance = std::getenv("EDRI_INTERNAL_INSTANCE")) {
    try {
      segment.emplace(transport::Segment::open(instance));
      metrics.emplace(*segment, plugins);
    } catch (const std::exception& e) {
      spdlog::warn("the plugins' metrics are not written from this worker: {}", e.what());
    }
  }
  std::unordered_map<std::string_view, const Task*> tasks;
  for (const auto* t : plugins.tasks(domain)) tasks.emplace(t->name, &t->task);

  const UniqueFd memfd(in.memfd);  // closed once mapped: the mapping keeps the memory
  struct stat st {};
  if (::fstat(memfd.get(), &st) != 0) throw std::runtime_error("worker: the pool memory is not inherited");
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
  if (map == MAP_FAILED) throw std::runtime_error(std::string("worker: mmap failed: ") + std::strerror(errno));
  auto* base = static_cast<std::byte*>(map);
  const auto& header = *reinterpret_cast<const pool::PoolHeader*>(base);
  if (header.magic != pool::kPoolMagic || header.layout_version != pool::kPoolLayoutVersion ||
      header.total_bytes != bytes || in.index < 0 || static_cast<std::uint32_t>(in.index) >= header.workers)
    throw std::runtime_error("worker: the pool memory does not match this build");
  const auto n = header.workers;
  const auto idx = static_cast<std::uint32_t>(in.index);
  const std::size_t rb = header.ring_bytes;
  auto* block = reinterpret_cast<pool::WorkerBlock*>(base + pool::block_offset(idx));
  transport::ChannelConsumer task_ring(&block->tasks, base + pool::tasks_ring_offset(n, idx, rb), rb);
  transport::ChannelProducer result_ring(&block->results, base + pool::results_ring_offset(n, idx, rb), rb);

  auto run_one = [&](std::span<const std::byte> rec) {
    std::uint64_t id = 0;
    std::string output;
    std::uint32_t outcome = pool::kResultThrew;
    if (rec.size() < pool::kTaskPrefixBytes) {
      output = "malformed task record";
    } else {
      std::memcpy(&id, rec.data(), sizeof id);
      const auto name_len = static_cast<std::size_t>(rec[sizeof id]);
      const char* text = reinterpret_cast<const char*>(rec.data());
      if (pool::kTaskPrefixBytes + name_len > rec.size()) {
        output = "malformed task record";
      } else {
        const std::string_view name(text + pool::kTaskPrefixBytes, name_len);
        const std::string_view input(text + pool::kTaskPrefixBytes + name_len,
                                     rec.size() - pool::kTaskPrefixBytes - name_len);
        auto it = tasks.find(name);
        if (it == tasks.end()) {
          output = "no task named " + std::string(name) + " in domain " + domain;
        } else {
          try {
            output = (*it->second)(input);
            outcome = pool::kResultDone;
          } catch (const std::exception& e) {
            output = e.what();
          } catch (...) {
            output = "a non-exception was thrown";
          }
        }
      }
    }
    if (pool::kResultPrefixBytes + output.size() > result_ring.max_record()) {
      output = "the task's output (" + std::to_string(output.size()) + " bytes) is larger than a channel record (" +
               std::to_string(result_ring.max_record()) + " bytes)";
      outcome = pool::kResultThrew;
    }
    std::byte* p = result_ring.reserve(pool::kResultPrefixBytes + output.size(), outcome);
    if (!p) {  // cannot happen: the manager holds one task per worker
      spdlog::error("the result ring is full; the result of task {} is lost", id);
      return;
    }
    std::memcpy(p, &id, sizeof id);
    if (!output.empty()) std::memcpy(p + pool::kResultPrefixBytes, output.data(), output.size());
    result_ring.commit();
    signal_results(in.results_fd);
  };

  // Ready: the manager tells a worker that died before this line from one
  // that died running a task.
  block->bell.pid.store(static_cast<std::uint32_t>(::getpid()), std::memory_order_release);
  spdlog::debug("ready: {} tasks", tasks.size());
  for (;;) {
    const auto r = task_ring.drain([&](std::span<const std::byte> rec, std::uint32_t) { run_one(rec); });
    if (r.records > 0) continue;
    // Sleep on the doorbell (protocol: transport/shm_layout.hpp).
    block->bell.sleeping.store(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!task_ring.empty()) {
      block->bell.sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    std::uint64_t count;
    ssize_t got;
    while ((got = ::read(in.bell_fd, &count, sizeof count)) < 0 && errno == EINTR) {
    }
    if (got < 0) {
      spdlog::error("cannot wait on the doorbell: {}", std::strerror(errno));
      return 1;
    }
    block->bell.sleeping.store(0, std::memory_order_relaxed);
  }
}

}  // namespace edri::manager
