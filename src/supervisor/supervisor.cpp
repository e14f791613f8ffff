#include "supervisor/supervisor.hpp"

#include "plugin/call_rows.hpp"
#include "plugin/plugin_metrics.hpp"
#include "runtime/placement.hpp"

#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

namespace edri::supervisor {

using transport::Role;
using transport::Topology;

namespace {

// How long a changed plugin file must stay unchanged before it is loaded
// (EDRI_RELOAD_ON_CHANGE): a linker's writes are one reload.
constexpr std::chrono::milliseconds kQuietAfterChange{300};

std::string instance_name() {
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof buf, "edri.%d.%08x", static_cast<int>(::getpid()), rd());
  return buf;
}

std::string join(const std::vector<UniqueFd>& fds) {
  std::string s;
  for (const auto& fd : fds) {
    if (!s.empty()) s += ',';
    s += std::to_string(fd.get());
  }
  return s;
}

// The segment, or a start-up error that says what to change when /dev/shm
// has no room for it.
transport::Segment create_segment(const Topology& topology, const Config& config, const plugin::PluginSet& plugins) {
  const auto routes = static_cast<std::uint32_t>(plugins.routes().size());
  try {
    return transport::Segment::create(instance_name(), topology, config.ring_bytes, routes,
                                      plugin::plugin_metrics_layout(plugins).bytes, plugin::CallRows(plugins).size());
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::no_space_on_device) throw;
    throw std::runtime_error(
        std::string(e.what()) + "; give /dev/shm more room (a container's --shm-size) or lower EDRI_RING_BYTES (" +
        std::to_string(topology.channels().size()) + " rings of " + std::to_string(config.ring_bytes) + " bytes)");
  }
}

}  // namespace

void Supervisor::RemoveSegment::operator()(transport::Segment* segment) const {
  transport::Segment::remove(segment->name());
  delete segment;
}

Supervisor::Generation::~Generation() {
  std::error_code ec;
  if (!plan.code_dir.empty()) std::filesystem::remove_all(plan.code_dir, ec);
}

Supervisor::Supervisor(GenerationPlan first, PlanGeneration plan)
    : io_(), plan_(std::move(plan)), signals_(io_, SIGCHLD, SIGTERM, SIGINT), blob_sweep_(io_), service_(io_) {
  signals_.add(SIGUSR1);  // passed on to the listeners (reopen_logs)
  signals_.add(SIGHUP);   // reload: a new generation
  raise_descriptor_limit(first.config);
  for (const auto& dir : plugin::remove_stale_plugin_copies())
    spdlog::warn("removed the plugin copies in {} left by a dead instance", dir);
  for (const auto& name : transport::Segment::remove_stale())
    spdlog::warn("removed shared memory {} left by a dead instance", name);
  auto g = make_generation(std::move(first), next_number_++);
  const Config& config = g->config();
  bind_listen_socket(config);
  if (!config.unix_socket.empty()) {
    unix_fd_ = bind_unix_socket(config.unix_socket, "EDRI_UNIX_SOCKET");
    unix_path_ = config.unix_socket;
  }
  if (!config.admin_socket.empty()) {
    admin_fd_ = bind_unix_socket(config.admin_socket, "EDRI_ADMIN_SOCKET");
    admin_path_ = config.admin_socket;
  }
  generations_.push_back(std::move(g));
  if (config.reload_on_change)
    watch_ = std::make_unique<PluginWatch>(io_, config.plugins, kQuietAfterChange,
                                           [this](const std::string& file) { on_plugin_changed(file); });
}

std::unique_ptr<Supervisor::Generation> Supervisor::make_generation(GenerationPlan plan, unsigned number) {
  const Config& config = plan.config;
  const auto& plugins = *plan.plugins;
  transport::Topology topology(
      config.listener_workers,
      static_cast<std::uint32_t>(
          plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas).size()),
      config.clustered());
  auto g = std::make_unique<Generation>(std::move(plan), std::move(topology), number);
  g->segment.reset(new transport::Segment(create_segment(g->topology, g->config(), *g->plan.plugins)));
  for (std::uint32_t s = 0; s < g->topology.process_slots(); ++s) {
    // Inherited by every child (no CLOEXEC): slot s's doorbell.
    UniqueFd fd(::eventfd(0, EFD_NONBLOCK));
    if (!fd) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    g->doorbells.push_back(std::move(fd));
  }
  if (g->config().blob_bytes > 0)
    g->blobs = std::make_unique<transport::BlobArena>(transport::BlobArena::create(g->config().blob_bytes));
  prepare_upload_path(g->config());
  g->ready_timer = std::make_unique<asio::steady_timer>(io_);
  g->kill_timer = std::make_unique<asio::steady_timer>(io_);
  add_children(*g);
  return g;
}

void Supervisor::add_children(Generation& g) {
  const Config& config = g.config();
  const auto& plugins = *g.plan.plugins;
  const auto& topology = g.topology;
  auto add = [this, &g](std::uint32_t slot, std::string title) {
    Child c;
    c.generation = &g;
    c.slot = slot;
    c.title = std::move(title);
    c.restart_timer = std::make_unique<asio::steady_timer>(io_);
    g.children.push_back(std::move(c));
  };
  const auto domains = plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas);
  const auto titles = plugin::manager_titles(domains);
  for (const auto& t : titles) g.manager_titles += (g.manager_titles.empty() ? "" : ",") + t;
  const auto hosted = plugin::listener_hosted_managers(domains, config.listener_domains);
  std::vector<std::uint32_t> guests;
  std::string guest_titles;  // what ps shows after "listener"
  for (std::uint32_t j = 0; j < topology.managers(); ++j) {
    if (std::find(hosted.begin(), hosted.end(), j) == hosted.end()) {
      add(topology.manager_slot(j), "edri-server: manager " + titles[j]);
      continue;
    }
    guests.push_back(topology.manager_slot(j));
    guest_titles += " + " + titles[j];
  }
  if (topology.has_switch()) add(topology.switch_slot(), "edri-server: switch");
  add(Topology::kRouter, "edri-server: router");
  add(Topology::kBroker, "edri-server: broker");
  for (std::uint32_t i = 0; i < topology.listeners(); ++i)
    add(topology.listener_slot(i), topology.listeners() == 1 ? "edri-server: listener" + guest_titles
                                                             : "edri-server: listener " + std::to_string(i));
  // One listener when there are guests (checked at start-up).
  if (!guests.empty()) g.children.back().guests = std::move(guests);
}

std::vector<std::uint32_t> Supervisor::slots_of(const Child& c) {
  std::vector<std::uint32_t> out{c.slot};
  out.insert(out.end(), c.guests.begin(), c.guests.end());
  return out;
}

Supervisor::~Supervisor() { remove_unix_sockets(); }

void Supervisor::spawn(Child& c) {
  Generation& g = *c.generation;
  const pid_t parent = ::getpid();
  // Readiness is the child's to announce (ProcessLoop::run).
  for (const auto slot : slots_of(c)) g.segment->doorbell(slot).pid.store(0, std::memory_order_relaxed);
  const pid_t pid = ::fork();
  if (pid < 0) {
    spdlog::error("fork for {} failed: {}", c.title, std::strerror(errno));
    return;
  }
  if (pid == 0) {
    // Child: die with the supervisor, whatever kills it.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    // The generation's environment, whatever the supervisor's is now (a
    // reload planned since may have changed it).
    ::clearenv();
    for (const auto& entry : g.plan.environment) ::putenv(const_cast<char*>(entry.c_str()));
    // Another generation's doorbells and blob area are not this child's:
    // held, they would keep that generation's memory after it ends.
    for (const auto& other : generations_) {
      if (other.get() == &g) continue;
      for (const auto& fd : other->doorbells) ::close(fd.get());
      if (other->blobs) ::close(other->blobs->fd());
    }
    ::setenv("EDRI_INTERNAL_INSTANCE", g.segment->name().c_str(), 1);
    ::setenv("EDRI_INTERNAL_DOORBELLS", join(g.doorbells).c_str(), 1);
    ::setenv("EDRI_INTERNAL_LISTEN_FD", std::to_string(listen_fd_.get()).c_str(), 1);
    ::setenv("EDRI_INTERNAL_UNIX_FD", std::to_string(unix_fd_.get()).c_str(), 1);
    ::setenv("EDRI_INTERNAL_ADMIN_FD", std::to_string(admin_fd_.get()).c_str(), 1);
    ::setenv("EDRI_INTERNAL_BLOB_FD", std::to_string(g.blobs ? g.blobs->fd() : -1).c_str(), 1);
    ::setenv("EDRI_INTERNAL_MANAGERS", g.manager_titles.c_str(), 1);
    ::setenv("EDRI_INTERNAL_TOPOLOGY",
             (std::to_string(g.topology.listeners()) + ":" + std::to_string(g.topology.managers()) + ":" +
              (g.topology.has_switch() ? "1" : "0"))
                 .c_str(),
             1);
    // Every signal unblocked but SIGUSR1 and SIGUSR2: a child's loop takes
    // them from a signalfd once it runs (the access log's reopen, a
    // listener's drain on reload); until then, and in children without a
    // loop, they wait instead of ending the process.
    sigset_t kept;
    sigemptyset(&kept);
    sigaddset(&kept, SIGUSR1);
    sigaddset(&kept, SIGUSR2);
    ::sigprocmask(SIG_SETMASK, &kept, nullptr);
    // SIGHUP ignored, across exec: a hangup sent to the whole group (a
    // closing terminal, `systemctl kill -s HUP`) is the supervisor's alone.
    ::signal(SIGHUP, SIG_IGN);
    const std::string child_arg = "--child=" + std::to_string(c.slot);
    char* argv[] = {const_cast<char*>(c.title.c_str()), const_cast<char*>(child_arg.c_str()), nullptr};
    ::execv("/proc/self/exe", argv);
    std::fprintf(stderr, "edri-server: exec failed: %s\n", std::strerror(errno));
    ::_exit(127);
  }
  c.pid = pid;
  c.started = std::chrono::steady_clock::now();
  spdlog::debug("started {} (pid {}, generation {})", c.title, pid, g.number);
  if (c.failures > 0) {
    // /health stops calling it a crash loop once this start lasts.
    c.restart_timer->expires_after(kStableAfter);
    c.restart_timer->async_wait([this, &c, pid](const boost::system::error_code& ec) {
      if (ec || c.pid != pid) return;
      for (const auto slot : slots_of(c))
        c.generation->segment->doorbell(slot).failures.store(0, std::memory_order_relaxed);
    });
  }
}

int Supervisor::run() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (!ec) on_signal(sig);
  });
  start(serving());
  sweep_blobs();
  io_.run();
  // Stopped: a stop signal from here on has nothing left to stop. Blocked,
  // it is dropped at exit; unblocked, it would meet the default action once
  // the signal set is gone and turn a clean exit into death by SIGTERM.
  sigset_t late;
  sigemptyset(&late);
  for (int s : {SIGTERM, SIGINT, SIGUSR1, SIGHUP}) sigaddset(&late, s);
  ::sigprocmask(SIG_BLOCK, &late, nullptr);
  generations_.clear();  // their segments and plugin copies
  remove_unix_sockets();
  spdlog::info("stopped");
  return exit_status_;
}

void Supervisor::start(Generation& g) {
  for (auto& c : g.children) spawn(c);
  announce_when_ready(g, std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

void Supervisor::announce_when_ready(Generation& g, std::chrono::steady_clock::time_point give_up) {
  // A child marks its doorbell slot with its pid when it enters its loop.
  bool ready = true;
  for (const auto& c : g.children)
    for (const auto slot : slots_of(c))
      if (c.pid <= 0 ||
          g.segment->doorbell(slot).pid.load(std::memory_order_acquire) != static_cast<std::uint32_t>(c.pid))
        ready = false;
  if (!ready && std::chrono::steady_clock::now() < give_up && !stopping_ && !g.draining) {
    g.ready_timer->expires_after(std::chrono::milliseconds(2));
    g.ready_timer->async_wait([this, &g, give_up](const boost::system::error_code& ec) {
      if (!ec) announce_when_ready(g, give_up);
    });
    return;
  }
  if (stopping_ || g.draining) return;
  if (!ready && g.number > 1) {
    // A reload whose processes do not come up serves nothing: the old
    // generation stays.
    spdlog::error("reload: generation {} did not start in 30 s; generation {} keeps serving", g.number,
                  generations_.front()->number);
    service_.ready("reload failed: serving as before");
    return drain(g, SIGTERM);
  }
  if (!ready) spdlog::warn("not every process reported ready in 30 s; serving anyway");
  serve(g);
}

void Supervisor::serve(Generation& g) {
  g.ready = true;
  const Config& config = g.config();
  if (g.number == 1) {
    std::printf("edri: listening on http://%s:%u\n",
                config.host.find(':') != std::string::npos ? ("[" + config.host + "]").c_str() : config.host.c_str(),
                bound_port_);
    std::fflush(stdout);
  } else {
    spdlog::info("reload: generation {} serves; the older ones finish what they hold", g.number);
  }
  service_.ready("serving on port " + std::to_string(bound_port_) + ", " + std::to_string(g.children.size()) +
                 " processes, generation " + std::to_string(g.number));
  spdlog::info("{} processes ready, shared memory {}", g.children.size(), g.segment->name());
  spdlog::info("placement: {}", choose_placement(config, static_cast<std::uint32_t>(allowed_cpus().size()),
                                                 child_processes(g.topology, config))
                                    .describe(config));
  for (auto& older : generations_)
    if (older.get() != &g && !older->draining) drain(*older, SIGUSR2);
}

void Supervisor::on_signal(int sig) {
  signals_.async_wait([this](const boost::system::error_code& ec, int s) {
    if (!ec) on_signal(s);
  });
  if (sig == SIGCHLD) {
    reap();
    return;
  }
  if (sig == SIGUSR1) return reopen_logs();
  if (sig == SIGHUP) return reload();
  if (stopping_) {
    spdlog::warn("second stop signal: killing every child");
    for (auto& g : generations_)
      for (auto& c : g->children)
        if (c.pid > 0) ::kill(c.pid, SIGKILL);
    return;
  }
  spdlog::info("signal {}: stopping", sig);
  stop_children();
}

void Supervisor::reload() {
  if (stopping_) return;
  if (!serving().ready) {
    spdlog::warn("signal {}: a generation is still starting; reload ignored", SIGHUP);
    return;
  }
  spdlog::info("signal {}: reloading: the config file and the plugins again", SIGHUP);
  start_generation();
}

void Supervisor::on_plugin_changed(const std::string& file) {
  if (stopping_) return;
  if (!serving().ready) return watch_->again();  // a generation is starting: after it serves
  spdlog::info("{} changed: reloading (EDRI_RELOAD_ON_CHANGE=on)", file);
  start_generation();
}

void Supervisor::start_generation() {
  service_.reloading();
  try {
    GenerationPlan plan = plan_();
    if (const auto why = unreloadable(plan.config); !why.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(plan.code_dir, ec);
      throw ConfigError(why);
    }
    generations_.push_back(make_generation(std::move(plan), next_number_++));
  } catch (const std::exception& e) {
    spdlog::error("reload failed, generation {} keeps serving: {}", serving().number, e.what());
    service_.ready("reload failed: serving as before");
    return;
  }
  start(serving());
}

std::string Supervisor::unreloadable(const Config& next) const {
  const Config& now = generations_.front()->config();
  if (next.host != now.host || next.port != now.port)
    return "EDRI_HOST and EDRI_PORT cannot change on reload (the socket is bound once): restart to listen elsewhere";
  if (next.unix_socket != now.unix_socket || next.admin_socket != now.admin_socket)
    return "EDRI_UNIX_SOCKET and EDRI_ADMIN_SOCKET cannot change on reload: restart";
  return {};
}

void Supervisor::drain(Generation& g, int listener_signal) {
  if (g.draining) return;
  g.draining = true;
  for (auto& c : g.children) {
    c.restart_timer->cancel();
    // Replaced, a switch hands its domains over to the new generation's
    // as soon as that one says hello; stopping, it waits for SIGTERM.
    if (c.pid > 0 && (is_listener(c) || (listener_signal == SIGUSR2 && is_switch(c)))) ::kill(c.pid, listener_signal);
  }
  // Listeners take up to EDRI_SHUTDOWN_TIMEOUT; then what is left is killed.
  const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::duration<double>(g.config().shutdown_timeout_s)) +
                     std::chrono::seconds(5);
  g.kill_timer->expires_after(grace);
  g.kill_timer->async_wait([&g, grace](const boost::system::error_code& ec) {
    if (ec) return;
    for (auto& c : g.children)
      if (c.pid > 0) {
        spdlog::warn("{} (pid {}) did not stop in {} ms: killing it", c.title, c.pid, grace.count());
        ::kill(c.pid, SIGKILL);
      }
  });
  all_children_gone_check();
}

void Supervisor::reopen_logs() {
  if (stopping_) return;
  // The listeners write the access log; with EDRI_TRACE_PATH the
  // managers write spans too. Each role's loop ignores a signal it has no
  // file for.
  spdlog::info("signal {}: the access log and trace files are reopened", SIGUSR1);
  for (const auto& g : generations_) {
    const bool traced = !g->config().trace_path.empty();
    for (const auto& c : g->children)
      if (c.pid > 0 && (traced || is_listener(c))) ::kill(c.pid, SIGUSR1);
  }
}

void Supervisor::stop_children() {
  stopping_ = true;
  service_.stopping();
  blob_sweep_.cancel();
  // No new connection from now on, in any process: a socket that stops
  // listening refuses connections (and resets those not yet accepted).
  ::shutdown(listen_fd_.get(), SHUT_RD);
  remove_unix_sockets();
  // Listeners first: they finish what is in flight (up to
  // EDRI_SHUTDOWN_TIMEOUT), which needs the rest of the pipeline.
  for (auto& g : generations_) {
    g->draining = false;  // a replaced one stops as fast as the rest
    drain(*g, SIGTERM);
  }
  all_children_gone_check();
}

bool Supervisor::is_listener(const Child& c) const {
  const auto& t = c.generation->topology;
  return c.slot >= t.listener_slot(0) && c.slot < t.listener_slot(0) + t.listeners();
}

bool Supervisor::is_switch(const Child& c) const {
  const auto& t = c.generation->topology;
  return t.has_switch() && c.slot == t.switch_slot();
}

void Supervisor::stop_behind_front(Generation& g) {
  // Requests come in through the listeners and, joined over NATS, the
  // switch: once the listeners are gone the switch finishes what other
  // instances asked (it needs the managers for that), then the rest stop.
  bool switch_left = false;
  for (auto& c : g.children)
    if (c.pid > 0 && is_switch(c)) {
      switch_left = true;
      if (!g.switch_stopped) ::kill(c.pid, SIGTERM);
    }
  g.switch_stopped = true;
  if (switch_left || g.others_stopped) return;
  g.others_stopped = true;
  for (auto& c : g.children)
    if (c.pid > 0) ::kill(c.pid, SIGTERM);
}

void Supervisor::all_children_gone_check() {
  for (auto it = generations_.begin(); it != generations_.end();) {
    Generation& g = **it;
    bool listeners_left = false;
    bool any_left = false;
    for (const auto& c : g.children) {
      if (c.pid <= 0) continue;
      any_left = true;
      listeners_left = listeners_left || is_listener(c);
    }
    if (g.draining && !listeners_left && any_left) stop_behind_front(g);
    if (!g.draining || any_left) {
      ++it;
      continue;
    }
    g.kill_timer->cancel();
    if (!stopping_) spdlog::info("generation {} finished and stopped", g.number);
    it = generations_.erase(it);
  }
  if (stopping_ && generations_.empty()) io_.stop();
}

void Supervisor::sweep_blobs() {
  // A blob its producer made and nobody claimed for longer than any answer
  // may take was dropped on the way (a hop gave up on its message).
  for (auto& g : generations_) {
    if (!g->blobs) continue;
    const auto stale = static_cast<std::uint32_t>(g->config().api_response_timeout_s) + 5;
    if (const auto blocks = g->blobs->reclaim_unclaimed(stale))
      spdlog::warn("freed {} KiB of blobs nobody took for {} s", blocks * transport::kBlobBlockBytes / 1024, stale);
  }
  blob_sweep_.expires_after(std::chrono::seconds(1));
  blob_sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) sweep_blobs();
  });
}

}  // namespace edri::supervisor
