#include "listener/access_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "runtime/placement.hpp"
#include "transport/shm_layout.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace edri::listener {

namespace {

// The writer wakes when this much is queued, or kBatchWait after the
// first line of a batch: a write per batch, not per line.
constexpr std::size_t kWakeBytes = 256 * 1024;
constexpr auto kBatchWait = std::chrono::milliseconds(100);

AccessFormat format_of(const std::string& setting) {
  if (setting == "combined") return AccessFormat::Combined;
  if (setting == "json") return AccessFormat::Json;
  return AccessFormat::Off;
}

UniqueFd open_for_append(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
}

}  // namespace

std::unique_ptr<AccessLog> AccessLog::open(const Config& config, const plugin::PluginSet& plugins, Counters counters,
                                           const std::vector<int>& writer_cpus) {
  if (format_of(config.access_log) == AccessFormat::Off) return nullptr;
  return std::make_unique<AccessLog>(config, plugins, counters, writer_cpus);
}

void AccessLog::check(const Config& config) {
  if (format_of(config.access_log) == AccessFormat::Off || config.access_log_path.empty()) return;
  if (!open_for_append(config.access_log_path))
    throw ConfigError("EDRI_ACCESS_LOG_PATH: cannot open " + config.access_log_path +
                      " for appending: " + std::strerror(errno));
}

AccessLog::AccessLog(const Config& config, const plugin::PluginSet& plugins, Counters counters,
                     const std::vector<int>& writer_cpus)
    : formatter_(format_of(config.access_log)),
      path_(config.access_log_path),
      limit_(config.access_log_buffer),
      counters_(counters) {
  for (const auto& r : plugins.routes()) {
    route_paths_.push_back(r.path);
    route_domains_.push_back(plugins.events()[r.event].domain);
  }
  // In the listener's order of route targets: the plugins' routes, then
  // their Server-Sent Events routes (served by the listener: no domain).
  for (const auto& path : plugins.stream_event_routes()) {
    route_paths_.push_back(path);
    route_domains_.emplace_back();
  }
  for (const auto& ev : plugins.events()) event_domains_.emplace(ev.name, ev.domain);
  if (!path_.empty()) {
    file_ = open_for_append(path_);
    if (!file_) throw std::runtime_error("cannot open the access log " + path_ + ": " + std::strerror(errno));
  }
  writer_ = std::thread([this] { run(); });
  // Off the request path: on a machine of few CPUs it should not take
  // turns with the listener's loop on the listener's CPU.
  if (!let_thread_float(writer_, writer_cpus)) spdlog::warn("the access log's writer runs where the listener runs");
}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  writer_.join();
}

std::unique_ptr<AccessRecord> AccessLog::begin(std::string_view protocol, std::string_view method,
                                               std::string_view target, std::string_view client,
                                               const http::HttpRequest* head) {
  std::unique_ptr<AccessRecord> r;
  if (spare_.empty()) {
    r = std::make_unique<AccessRecord>();
  } else {
    r = std::move(spare_.back());
    spare_.pop_back();
  }
  r->started = std::chrono::steady_clock::now();
  r->received = wall_time(r->started);
  r->protocol = protocol;
  r->method = method;
  r->target = target;
  r->route = {};
  r->domain = {};
  r->client = client;
  r->request_id.clear();
  r->bytes_in = 0;
  r->user_agent = head ? head->header("user-agent") : std::string_view();
  r->referer = head ? head->header("referer") : std::string_view();
  r->trace_id = head ? trace_id_of(head->header("traceparent")) : std::string_view();
  return r;
}

std::chrono::system_clock::time_point AccessLog::wall_time(std::chrono::steady_clock::time_point t) {
  if (t - synced_ >= std::chrono::seconds(1)) {
    synced_ = std::chrono::steady_clock::now();
    wall_offset_ = std::chrono::system_clock::now().time_since_epoch() -
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(synced_.time_since_epoch());
  }
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(t.time_since_epoch()) + wall_offset_);
}

void AccessLog::set_route(AccessRecord& r, std::uint32_t row) const {
  if (row >= route_paths_.size()) return;
  r.route = route_paths_[row];
  r.domain = route_domains_[row];
}

std::string_view AccessLog::domain_of(std::string_view event) const {
  const auto it = event_domains_.find(std::string(event));
  return it == event_domains_.end() ? std::string_view() : std::string_view(it->second);
}

void AccessLog::end(std::unique_ptr<AccessRecord> r, int status, std::uint64_t bytes_out, int grpc_status) {
  end(std::move(r), AccessOutcome{status, grpc_status, bytes_out, std::chrono::steady_clock::now()});
}

void AccessLog::end(std::unique_ptr<AccessRecord> r, const AccessOutcome& o) {
  line_.clear();
  formatter_.append(line_, *r, o);
  constexpr std::size_t kSpareRecords = 1024;
  if (spare_.size() < kSpareRecords) spare_.push_back(std::move(r));
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (queued_.size() + line_.size() > limit_) {
      counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // The writer sleeps until a batch starts, and is woken early only
    // when the batch is large.
    wake = queued_.empty() || (queued_.size() < kWakeBytes && queued_.size() + line_.size() >= kWakeBytes);
    queued_ += line_;
  }
  transport::bump_owned(counters_.lines);
  if (wake) wake_.notify_one();
  if (has_notices_.load(std::memory_order_relaxed)) log_notices();
}

void AccessLog::notice(spdlog::level::level_enum level, std::string text) {
  std::lock_guard lock(mutex_);
  notices_.emplace_back(level, std::move(text));
  has_notices_.store(true, std::memory_order_relaxed);
}

void AccessLog::log_notices() {
  std::vector<std::pair<spdlog::level::level_enum, std::string>> notices;
  {
    std::lock_guard lock(mutex_);
    notices.swap(notices_);
    has_notices_.store(false, std::memory_order_relaxed);
  }
  for (const auto& [level, text] : notices) spdlog::log(level, "{}", text);
}

void AccessLog::reopen() {
  log_notices();
  {
    std::lock_guard lock(mutex_);
    reopen_ = true;
  }
  wake_.notify_one();
}

void AccessLog::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || reopen_ || !queued_.empty(); });
    if (!stop_ && !reopen_)
      wake_.wait_for(lock, kBatchWait, [&] { return stop_ || reopen_ || queued_.size() >= kWakeBytes; });
    writing_.swap(queued_);
    const bool reopen = std::exchange(reopen_, false);
    const bool stop = stop_;
    lock.unlock();
    if (reopen) open_file();
    write_out(writing_);
    writing_.clear();
    if (writing_.capacity() > 4 * kWakeBytes) writing_.shrink_to_fit();  // after a burst
    lock.lock();
    if (stop && queued_.empty()) return;
  }
}

void AccessLog::open_file() {
  if (path_.empty()) return;
  UniqueFd fresh = open_for_append(path_);
  if (!fresh)
    return notice(spdlog::level::err, "cannot reopen the access log " + path_ + ": " + std::strerror(errno) +
                                          "; writing on to the old file");
  file_ = std::move(fresh);
  notice(spdlog::level::info, "access log " + path_ + " reopened");
}

void AccessLog::write_out(const std::string& text) {
  const int fd = file_ ? file_.get() : STDERR_FILENO;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // What is left is lost: counted line by line.
    const auto rest = std::string_view(text).substr(done);
    const auto lost = static_cast<std::uint64_t>(std::count(rest.begin(), rest.end(), '\n'));
    counters_.dropped.fetch_add(lost, std::memory_order_relaxed);
    notice(spdlog::level::err, "the access log lost " + std::to_string(lost) + " lines: " + std::strerror(errno));
    return;
  }
}

}  // namespace edri::listener
