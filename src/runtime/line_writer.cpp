#include "runtime/line_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "runtime/placement.hpp"
#include "transport/shm_layout.hpp"

namespace edri {

namespace {

// The writer wakes when this much is queued, or kBatchWait after the
// first line of a batch: a write per batch, not per line.
constexpr std::size_t kWakeBytes = 256 * 1024;
constexpr auto kBatchWait = std::chrono::milliseconds(100);

}  // namespace

UniqueFd LineWriter::open_for_append(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
}

LineWriter::LineWriter(std::string name, std::string path, std::size_t limit, Counters counters,
                       const std::vector<int>& cpus)
    : name_(std::move(name)), path_(std::move(path)), limit_(limit), counters_(counters) {
  if (!path_.empty()) {
    file_ = open_for_append(path_);
    if (!file_) throw std::runtime_error("cannot open the " + name_ + " " + path_ + ": " + std::strerror(errno));
  }
  writer_ = std::thread([this] { run(); });
  // Off the caller's path: on a machine of few CPUs it should not take
  // turns with a loop pinned to its CPU.
  if (!let_thread_float(writer_, cpus)) spdlog::warn("the {}'s writer runs where its process runs", name_);
}

LineWriter::~LineWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  writer_.join();
}

void LineWriter::write_line(std::string_view line) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (queued_.size() + line.size() > limit_) {
      counters_.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // The writer sleeps until a batch starts, and is woken early only
    // when the batch is large.
    wake = queued_.empty() || (queued_.size() < kWakeBytes && queued_.size() + line.size() >= kWakeBytes);
    queued_ += line;
  }
  transport::bump_owned(counters_.lines);
  if (wake) wake_.notify_one();
  if (has_notices_.load(std::memory_order_relaxed)) log_notices();
}

void LineWriter::reopen() {
  log_notices();
  {
    std::lock_guard lock(mutex_);
    reopen_ = true;
  }
  wake_.notify_one();
}

void LineWriter::notice(spdlog::level::level_enum level, std::string text) {
  std::lock_guard lock(mutex_);
  notices_.emplace_back(level, std::move(text));
  has_notices_.store(true, std::memory_order_relaxed);
}

void LineWriter::log_notices() {
  std::vector<std::pair<spdlog::level::level_enum, std::string>> notices;
  {
    std::lock_guard lock(mutex_);
    notices.swap(notices_);
    has_notices_.store(false, std::memory_order_relaxed);
  }
  for (const auto& [level, text] : notices) spdlog::log(level, "{}", text);
}

void LineWriter::run() {
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

void LineWriter::open_file() {
  if (path_.empty()) return;
  UniqueFd fresh = open_for_append(path_);
  if (!fresh)
    return notice(spdlog::level::err, "cannot reopen the " + name_ + " " + path_ + ": " + std::strerror(errno) +
                                          "; writing on to the old file");
  file_ = std::move(fresh);
  notice(spdlog::level::info, name_ + " " + path_ + " reopened");
}

void LineWriter::write_out(const std::string& text) {
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
    notice(spdlog::level::err, "the " + name_ + " lost " + std::to_string(lost) + " lines: " + std::strerror(errno));
    return;
  }
}

}  // namespace edri
