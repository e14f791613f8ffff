// LineWriter: lines appended to a file (or stderr) by a thread of their
// own, so that the thread that makes them never waits on the disk. Lines
// are queued under a mutex and written a batch at a time (every 100 ms or
// 256 KiB); past `limit` bytes waiting, a line is dropped and counted
// rather than waited for. reopen() makes the writer open the path again
// before its next write (log rotation). What the writer has to say
// (a failed write, a reopen) is logged by the thread that queues lines:
// a process's logger is its loop's alone. The access log's writer
// (listener/access_log.hpp, decision 0044).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "transport/unique_fd.hpp"

namespace edri {

class LineWriter {
 public:
  struct Counters {
    std::atomic<std::uint64_t>& lines;    // queued (written by the queueing thread only)
    std::atomic<std::uint64_t>& dropped;  // dropped (by both threads)
  };

  // `name`: what the log is, for messages ("access log"); `path`: the file
  // (empty: stderr); `cpus`: where the writer thread may run (none: where
  // the creating thread does). Throws std::runtime_error when the file
  // cannot be opened.
  LineWriter(std::string name, std::string path, std::size_t limit, Counters counters,
             const std::vector<int>& cpus = {});
  ~LineWriter();  // writes what is queued, then stops the thread
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  // Queues `line` (a whole line, ending in '\n'), or drops and counts it
  // when the queue would pass `limit` bytes. Never waits on the writer.
  void write_line(std::string_view line);
  // The writer opens the path again before its next write.
  void reopen();

  // `path` opened for appending, created 0644; empty on failure (errno).
  static UniqueFd open_for_append(const std::string& path);

 private:
  void run();  // the writer thread
  void write_out(const std::string& text);
  void open_file();
  void notice(spdlog::level::level_enum level, std::string text);
  void log_notices();

  std::string name_;
  std::string path_;
  std::size_t limit_;
  Counters counters_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::string queued_;  // guarded by mutex_
  std::vector<std::pair<spdlog::level::level_enum, std::string>> notices_;
  std::atomic<bool> has_notices_{false};
  bool reopen_ = false;
  bool stop_ = false;
  std::string writing_;  // the writer's
  UniqueFd file_;        // the writer's; empty: stderr
  std::thread writer_;
};

}  // namespace edri
