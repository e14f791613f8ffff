// Supervisor: the process the user starts.
//
// It binds the listening socket, creates the shared-memory segment and one
// eventfd doorbell per process slot, then forks and execs one child per
// slot (`edri-server: router`, `edri-server: manager notes`, ...). A child
// that dies is restarted with backoff; the socket, segment and doorbells
// outlive it, so its replacement takes over its channels. SIGTERM or SIGINT
// stops every child, removes the segment and exits 0.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "plugin/plugin_set.hpp"
#include "runtime/asio.hpp"
#include "runtime/config.hpp"
#include "supervisor/service_notify.hpp"
#include "transport/blob_arena.hpp"
#include "transport/segment.hpp"
#include "transport/topology.hpp"
#include "transport/unique_fd.hpp"

namespace edri::supervisor {

class Supervisor {
 public:
  Supervisor(const Config& config, const plugin::PluginSet& plugins);
  ~Supervisor();

  // Runs until stopped by a signal. Returns the process exit status.
  int run();

 private:
  struct Child {
    std::uint32_t slot;
    // Slots its process runs besides its own: the managers inside the
    // listener (EDRI_LISTENER_DOMAINS). They start, serve and die with it.
    std::vector<std::uint32_t> guests;
    std::string title;  // argv[0], what ps shows
    pid_t pid = -1;
    unsigned failures = 0;  // consecutive quick deaths, for backoff
    std::chrono::steady_clock::time_point started;
    std::unique_ptr<asio::steady_timer> restart_timer;
  };

  void raise_descriptor_limit();
  void bind_listen_socket();
  // A listening Unix socket at `path` (a stale socket file replaced), for
  // the setting named `setting`.
  static UniqueFd bind_unix_socket(const std::string& path, const char* setting);
  void remove_unix_sockets();
  void spawn(Child& c);
  // Its own slot and its guests'.
  static std::vector<std::uint32_t> slots_of(const Child& c);
  void on_signal(int sig);
  void reap();
  // Counts a death in the segment and wakes every child to look at it.
  void announce_death();
  // A start that lives this long ends a run of quick deaths.
  static constexpr std::chrono::seconds kStableAfter{10};
  // Creates EDRI_UPLOAD_FILES_PATH if needed, checks it is writable and
  // removes what listeners that died left in it.
  void prepare_upload_path();
  // SIGTERM: the port stops accepting, listeners finish what is in flight,
  // then the others stop.
  void stop_children();
  // SIGUSR1: each listener reopens its access log (log rotation).
  void reopen_logs();
  bool is_listener(const Child& c) const;
  void all_children_gone_check();
  // Prints the "listening" line once every child runs its loop.
  void announce_when_ready(std::chrono::steady_clock::time_point give_up);
  void sweep_blobs();

  // First member: Asio objects below (timers, signals) must die before it.
  asio::io_context io_;
  const Config& config_;
  transport::Topology topology_;
  // Takes the segment's name out of /dev/shm with the object, also when
  // start-up fails after creating it (port in use, EDRI_HOST unresolvable):
  // each failed start left ~60 MiB there (issue 35).
  struct RemoveSegment {
    void operator()(transport::Segment* segment) const;
  };
  std::unique_ptr<transport::Segment, RemoveSegment> segment_;
  std::vector<UniqueFd> doorbells_;  // inherited by every child (no CLOEXEC)
  UniqueFd listen_fd_;
  UniqueFd unix_fd_;   // EDRI_UNIX_SOCKET, when set
  UniqueFd admin_fd_;  // EDRI_ADMIN_SOCKET, when set
  std::uint16_t bound_port_ = 0;
  std::vector<Child> children_;
  asio::signal_set signals_;
  asio::steady_timer kill_timer_;
  asio::steady_timer ready_timer_;
  // Large bodies (transport/blob_layout.hpp); blobs of a dead child and
  // blobs lost in transit are freed here.
  std::unique_ptr<transport::BlobArena> blobs_;
  asio::steady_timer blob_sweep_;
  ServiceNotifier service_;
  bool stopping_ = false;
  int exit_status_ = 0;          // run()'s: non-zero once a child could not start
  bool others_stopped_ = false;  // the non-listeners were sent SIGTERM
};

}  // namespace edri::supervisor
