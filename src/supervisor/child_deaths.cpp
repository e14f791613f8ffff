// A child's death: reaped, counted where the other processes look, and
// restarted with backoff, unless its generation drains or its start hook
// failed.
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>

#include "runtime/upload_files.hpp"
#include "supervisor/supervisor.hpp"

namespace edri::supervisor {

void Supervisor::announce_death(Generation& g) {
  // After the slot's restart count: a process that sees the new death count
  // finds which slot changed.
  g.segment->header().deaths.fetch_add(1, std::memory_order_release);
  const std::uint64_t one = 1;
  for (const auto& c : g.children)
    if (c.pid > 0 && ::write(g.doorbells[c.slot].get(), &one, sizeof one) < 0)
      spdlog::debug("cannot ring {}: {}", c.title, std::strerror(errno));
}

void Supervisor::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    Child* dead = nullptr;
    for (auto& g : generations_)
      for (auto& c : g->children)
        if (c.pid == pid) dead = &c;
    if (!dead) continue;  // a worker process's, or a child of a generation gone
    dead->pid = -1;
    Generation& g = *dead->generation;
    if (g.blobs) {
      // What it held is nobody's now.
      if (const auto blocks = g.blobs->reclaim_dead(pid))
        spdlog::warn("freed {} KiB of blobs held by pid {}", blocks * transport::kBlobBlockBytes / 1024, pid);
    }
    if (const auto files = remove_upload_files_of(g.config().upload_path, pid))
      spdlog::warn("removed {} upload files left by pid {}", files, pid);
    // May stop or drain a generation, and remove one: nothing of it is
    // touched after.
    if (!stopping_ && !g.draining) restart_later(*dead, status, pid);
  }
  all_children_gone_check();
}

void Supervisor::restart_later(Child& c, int status, pid_t pid) {
  Generation& g = *c.generation;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kExitStartFailed) {
    // What a plugin declared cannot start (its message is above):
    // restarting would fail alike, for ever.
    if (!g.ready && g.number > 1) {
      spdlog::error("reload: {} of generation {} could not start; generation {} keeps serving", c.title, g.number,
                    generations_.front()->number);
      service_.ready("reload failed: serving as before");
      return drain(g, SIGTERM);
    }
    spdlog::critical("{} could not start: stopping", c.title);
    std::fprintf(stderr, "edri-server: %s could not start (a start hook failed; see the log above)\n", c.title.c_str());
    exit_status_ = 3;
    stop_children();
    return;
  }
  const auto lived = std::chrono::steady_clock::now() - c.started;
  c.failures = lived > kStableAfter ? 0 : c.failures + 1;
  const auto delay = std::chrono::milliseconds(std::min(5000, 50 << std::min(c.failures, 7u)));
  const std::string loop = c.failures >= transport::kCrashLoopFailures
                               ? fmt::format(" (crash loop: {} deaths in a row, each within {} s of its start)",
                                             c.failures, kStableAfter.count())
                               : std::string();
  if (WIFSIGNALED(status))
    spdlog::error("{} (pid {}) was killed by signal {}; restarting in {} ms{}", c.title, pid, WTERMSIG(status),
                  delay.count(), loop);
  else
    spdlog::error("{} (pid {}) exited with status {}; restarting in {} ms{}", c.title, pid, WEXITSTATUS(status),
                  delay.count(), loop);
  // Its guests died with it: each is a death of its own to the others.
  for (const auto slot : slots_of(c)) {
    auto& d = g.segment->doorbell(slot);
    d.failures.store(c.failures, std::memory_order_relaxed);
    d.restart_delay_ms.store(static_cast<std::uint32_t>(delay.count()), std::memory_order_relaxed);
    d.restarts.fetch_add(1, std::memory_order_relaxed);
  }
  announce_death(g);
  c.restart_timer->expires_after(delay);
  c.restart_timer->async_wait([this, &c](const boost::system::error_code& ec) {
    if (ec || stopping_ || c.generation->draining) return;
    for (const auto slot : slots_of(c))
      c.generation->segment->doorbell(slot).restart_delay_ms.store(0, std::memory_order_relaxed);
    spawn(c);
  });
}

}  // namespace edri::supervisor
