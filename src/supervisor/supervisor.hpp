// Supervisor: the process the user starts.
//
// It binds the listening socket, then runs generations of processes. A
// generation is a shared-memory segment, one eventfd doorbell per process
// slot and one child per slot (`edri-server: router`, `edri-server: manager
// notes`, ...), forked and exec'd with the generation's environment and
// its copies of the plugins. A child that dies is restarted with backoff
// from the same copies; the socket, segment and doorbells outlive it, so
// its replacement takes over its channels.
//
// SIGHUP plans a new generation (the config file read again, the plugins
// copied again, every start-up check) and starts it beside the serving
// one on the same sockets; once it serves, the old one drains: its
// listeners take no new connections, answer what they hold and close each
// connection between requests, then its other processes stop and its
// segment goes. A plan or a start that fails leaves the old generation
// serving. With EDRI_RELOAD_ON_CHANGE=on a plugin file written anew
// reloads as SIGHUP does (PluginWatch). SIGTERM or SIGINT stops every generation and exits 0.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "plugin/plugin_set.hpp"
#include "runtime/asio.hpp"
#include "runtime/config.hpp"
#include "supervisor/generation_plan.hpp"
#include "supervisor/plugin_watch.hpp"
#include "supervisor/service_notify.hpp"
#include "transport/blob_arena.hpp"
#include "transport/segment.hpp"
#include "transport/topology.hpp"
#include "transport/unique_fd.hpp"

namespace edri::supervisor {

class Supervisor {
 public:
  // `first`: the generation to start with; `plan`: how to plan the next.
  Supervisor(GenerationPlan first, PlanGeneration plan);
  ~Supervisor();

  // Runs until stopped by a signal. Returns the process exit status.
  int run();

 private:
  struct Generation;
  struct Child {
    Generation* generation = nullptr;
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
  // Takes the segment's name out of /dev/shm with the object, also when
  // start-up fails after creating it (port in use, EDRI_HOST unresolvable):
  // each failed start left ~60 MiB there (issue 35).
  struct RemoveSegment {
    void operator()(transport::Segment* segment) const;
  };
  struct Generation {
    Generation(GenerationPlan p, transport::Topology t, unsigned n)
        : number(n), plan(std::move(p)), topology(std::move(t)) {}
    ~Generation();  // removes its plugin copies (its segment goes with `segment`)
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;
    unsigned number;
    GenerationPlan plan;
    transport::Topology topology;
    std::unique_ptr<transport::Segment, RemoveSegment> segment;
    std::vector<UniqueFd> doorbells;  // inherited by its children (no CLOEXEC)
    // Large bodies (transport/blob_layout.hpp); blobs of a dead child and
    // blobs lost in transit are freed here.
    std::unique_ptr<transport::BlobArena> blobs;
    std::vector<Child> children;
    // Its managers' titles ("notes", "notes 2"), comma-separated: how the
    // router names them in its log (EDRI_INTERNAL_MANAGERS).
    std::string manager_titles;
    std::unique_ptr<asio::steady_timer> ready_timer;
    std::unique_ptr<asio::steady_timer> kill_timer;
    bool ready = false;
    bool draining = false;        // replaced, or the server stops
    bool switch_stopped = false;  // its switch was sent SIGTERM
    bool others_stopped = false;  // its non-listeners were sent SIGTERM
    const Config& config() const { return plan.config; }
  };

  std::unique_ptr<Generation> make_generation(GenerationPlan plan, unsigned number);
  void add_children(Generation& g);
  void start(Generation& g);
  Generation& serving() { return *generations_.back(); }

  void raise_descriptor_limit(const Config& config);
  void bind_listen_socket(const Config& config);
  // A listening Unix socket at `path` (a stale socket file replaced), for
  // the setting named `setting`.
  static UniqueFd bind_unix_socket(const std::string& path, const char* setting);
  void remove_unix_sockets();
  void spawn(Child& c);
  // Its own slot and its guests'.
  static std::vector<std::uint32_t> slots_of(const Child& c);
  void on_signal(int sig);
  void reap();
  void restart_later(Child& c, int status, pid_t pid);
  // Counts a death in the segment and wakes every child to look at it.
  void announce_death(Generation& g);
  // A start that lives this long ends a run of quick deaths.
  static constexpr std::chrono::seconds kStableAfter{10};
  // Creates EDRI_UPLOAD_FILES_PATH if needed, checks it is writable and
  // removes what listeners that died left in it.
  static void prepare_upload_path(const Config& config);
  // SIGHUP: plans and starts a new generation; the serving one drains once
  // it serves.
  void reload();
  // A plugin file changed (EDRI_RELOAD_ON_CHANGE=on): reload, once the
  // generation starting now, if any, serves.
  void on_plugin_changed(const std::string& file);
  void start_generation();
  // Why the new generation cannot share this instance's sockets, or "".
  std::string unreloadable(const Config& next) const;
  // Its listeners finish what they hold (SIGUSR2 when replaced, between
  // requests; SIGTERM when the server stops), then the rest stop.
  void drain(Generation& g, int listener_signal);
  // SIGTERM: the port stops accepting, every generation drains.
  void stop_children();
  // SIGUSR1: each listener reopens its access log (log rotation).
  void reopen_logs();
  bool is_listener(const Child& c) const;
  bool is_switch(const Child& c) const;
  // A draining generation whose listeners are gone: SIGTERM to its switch,
  // and once that is gone to the rest.
  void stop_behind_front(Generation& g);
  // Moves draining generations on (the rest stop once the listeners are
  // gone; one with no process left is removed) and stops the loop once
  // the server stops and nothing is left.
  void all_children_gone_check();
  // Says "listening" (or that a reload serves) once every child of `g`
  // runs its loop.
  void announce_when_ready(Generation& g, std::chrono::steady_clock::time_point give_up);
  void serve(Generation& g);
  void sweep_blobs();

  // First member: Asio objects below (timers, signals) must die before it.
  asio::io_context io_;
  PlanGeneration plan_;
  std::vector<std::unique_ptr<Generation>> generations_;  // the last one serves
  unsigned next_number_ = 1;
  UniqueFd listen_fd_;
  UniqueFd unix_fd_;   // EDRI_UNIX_SOCKET, when set
  UniqueFd admin_fd_;  // EDRI_ADMIN_SOCKET, when set
  std::string unix_path_, admin_path_;
  std::uint16_t bound_port_ = 0;
  asio::signal_set signals_;
  asio::steady_timer blob_sweep_;
  ServiceNotifier service_;
  std::unique_ptr<PluginWatch> watch_;  // EDRI_RELOAD_ON_CHANGE=on
  bool stopping_ = false;
  int exit_status_ = 0;  // run()'s: non-zero once a child could not start
};

}  // namespace edri::supervisor
