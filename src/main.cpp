// edri-server: the supervisor when started by a user, one of its children
// (listener, broker, router, manager) when started with --child=<slot>, a
// manager's worker process when started with --worker.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/broker.hpp"
#include "cluster/switch.hpp"
#include "grpc/service_catalog.hpp"
#include "listener/listener.hpp"
#include "manager/manager.hpp"
#include "manager/worker_process.hpp"
#include "plugin/plugin_metrics.hpp"
#include "plugin/plugin_set.hpp"
#include "router/router.hpp"
#include "runtime/command_line.hpp"
#include "runtime/config.hpp"
#include "runtime/log.hpp"
#include "runtime/loop_placement.hpp"
#include "runtime/manpage.hpp"
#include "runtime/new_project.hpp"
#include "runtime/placement.hpp"
#include "runtime/process_loop.hpp"
#include "runtime/settings.hpp"
#include "supervisor/supervisor.hpp"
#include "transport/segment.hpp"
#include "transport/topology.hpp"

namespace {

using namespace edri;

constexpr const char* kVersion = EDRI_VERSION;  // the CMake project's

constexpr const char* kUsage =
    "usage: edri-server [--config FILE] [--KEY VALUE ...]\n"
    "                   [--print-config | --print-config-toml | --print-config-markdown | --print-manpage |\n"
    "                    --help | --version]\n"
    "       edri-server --new NAME DIR\n"
    "\n"
    "Serves the plugins named in EDRI_PLUGINS (paths to .so files, ':' or ','\n"
    "separated) on http://EDRI_HOST:EDRI_PORT. A setting comes from the command\n"
    "line (--port 8081 for EDRI_PORT), else the environment, else the TOML file\n"
    "--config names (port = 8081), else its default. --print-config shows the\n"
    "effective values (the plugins' settings too), --print-config-toml the same\n"
    "as a config file, --print-config-markdown every setting with its default\n"
    "and meaning (the table of docs/configuration.md), --print-manpage the\n"
    "manual page (man edri-server). --new writes a plugin project into DIR: a\n"
    "CMake project against the installed package, one route and its test.\n";

std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string(name) + " is not set (children are started by the supervisor)");
  return v;
}

std::vector<int> parse_fds(const std::string& s) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const auto comma = s.find(',', pos);
    out.push_back(std::stoi(s.substr(pos, comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// Where this process's loop stays (EDRI_CPUS=auto on few cores, one): the
// last CPU allowed, which keeps the pipeline together: a hop between
// processes on one core costs ~1.4 us, between cores ~37 us here
// (docs/decisions/0003). A manager or the broker under auto starts there
// and holds a CPU of its own while busy (LoopPlacement, docs/decisions
// 0006, 0017, 0036 and 0039).
std::optional<int> home_cpu(const Config& config, const PlacementChoice& choice, const std::vector<int>& allowed) {
  const bool together =
      config.placement == Config::Placement::One || (config.placement == Config::Placement::Auto && !choice.spread);
  if (!together || allowed.empty()) return std::nullopt;
  return allowed.back();
}

// CPU placement and scheduling policy; failures are reported, not fatal.
void apply_placement(const Config& config, std::optional<int> home, bool floats_when_busy) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (config.placement == Config::Placement::List) {
    for (int c : config.cpus) CPU_SET(c, &set);
  } else if (home && !floats_when_busy) {
    CPU_SET(*home, &set);
  }
  if (CPU_COUNT(&set) > 0 && ::sched_setaffinity(0, sizeof set, &set) != 0)
    spdlog::warn("EDRI_CPUS: cannot set CPU affinity: {}", std::strerror(errno));
  if (config.sched_batch) {
    // SCHED_BATCH: a woken process does not preempt the one running, so a
    // producer finishes its batch before its consumer runs.
    sched_param p{};
    if (::sched_setscheduler(0, SCHED_BATCH, &p) != 0)
      spdlog::warn("EDRI_SCHED=batch: cannot set the policy: {}", std::strerror(errno));
  }
}

// The managers a listener runs on its own loop (EDRI_LISTENER_DOMAINS):
// each a guest of the listener's ProcessLoop with its own slot and
// channels, as a manager process would have.
class GuestManagers {
 public:
  // `managers`: indices into `domains` and `titles` (the managers' of the
  // instance, as run_child has them).
  GuestManagers(ProcessLoop& host, const Config& config, const plugin::PluginSet& plugins,
                const std::vector<std::uint32_t>& managers, const std::vector<std::string>& domains,
                const std::vector<std::string>& titles, const std::vector<int>& worker_cpus) {
    const auto& topology = host.topology();
    for (const auto j : managers) {
      auto& g = guests_.emplace_back();
      g.loop = std::make_unique<ProcessLoop>(host, topology.manager_slot(j), config);
      // No home CPU: the loop is the listener's, placed as the listener.
      g.manager =
          std::make_unique<manager::Manager>(*g.loop, config, plugins, domains.at(j), titles.at(j), worker_cpus);
    }
  }
  // Runs each domain's start hooks; false (logged) when one failed.
  bool start() {
    for (auto& g : guests_) {
      try {
        g.manager->start();
      } catch (const manager::Manager::StartFailed& e) {
        spdlog::critical("{}", e.what());
        return false;
      }
    }
    return true;
  }
  void stop() {
    for (auto& g : guests_) g.manager->stop();
  }

 private:
  struct Guest {
    std::unique_ptr<ProcessLoop> loop;
    std::unique_ptr<manager::Manager> manager;  // after its loop: gone before it
  };
  std::vector<Guest> guests_;
};

int run_child(std::uint32_t slot) {
  Config config = Config::from_env();
  const auto topo_text = required_env("EDRI_INTERNAL_TOPOLOGY");
  // "listeners:managers:switch"
  const auto colon = topo_text.find(':');
  const auto second = topo_text.find(':', colon + 1);
  const transport::Topology topology(
      static_cast<std::uint32_t>(std::stoul(topo_text.substr(0, colon))),
      static_cast<std::uint32_t>(std::stoul(topo_text.substr(colon + 1, second - colon - 1))),
      second != std::string::npos && topo_text.substr(second + 1) == "1");
  if (slot == 0 || slot >= topology.process_slots()) throw std::runtime_error("--child: no such slot");
  config.listener_workers = topology.listeners();  // as the supervisor settled it
  const auto role = topology.role_of(slot);
  const auto index = topology.index_of(slot);
  std::string name = transport::role_name(role);
  if (role == transport::Role::Listener && topology.listeners() > 1) name += " " + std::to_string(index);

  std::optional<plugin::PluginSet> plugins;
  std::string domain;  // a manager's
  std::string manager_title;
  std::vector<std::string> domains, titles;  // the instance's managers', where plugins are loaded
  std::vector<std::uint32_t> guests;         // a listener's: the managers it runs (EDRI_LISTENER_DOMAINS)
  if (role == transport::Role::Listener || role == transport::Role::Manager || role == transport::Role::Switch) {
    plugins = plugin::PluginSet::load(config.plugins, {}, plugin::plugin_code_paths());
    domains = plugins->manager_domains(config.manager_replicas, config.domains, config.domain_replicas);
    titles = plugin::manager_titles(domains);
    if (role == transport::Role::Manager) {
      domain = domains.at(index);
      manager_title = titles.at(index);
      name += " " + manager_title;
    }
    if (role == transport::Role::Listener) {
      guests = plugin::listener_hosted_managers(domains, config.listener_domains);
      for (const auto j : guests) name += " + " + titles.at(j);
    }
  }
  init_logging(name, config.log_level, config.log_format);
  const std::string comm = "edri-" + std::string(transport::role_name(role));
  ::prctl(PR_SET_NAME, comm.c_str());
  ::signal(SIGPIPE, SIG_IGN);
  // Before this process is pinned: every process decides from the CPUs the
  // supervisor may use, and decides alike.
  const std::vector<int> allowed_cpus = edri::allowed_cpus();
  const PlacementChoice placement =
      choose_placement(config, static_cast<std::uint32_t>(allowed_cpus.size()), child_processes(topology, config));
  const auto home = home_cpu(config, placement, allowed_cpus);
  // Under auto a manager and the broker place their own loops
  // (LoopPlacement): busy, each holds a CPU (decisions 0036, 0039).
  const bool auto_placed = config.placement == Config::Placement::Auto;
  const bool manager_floats = role == transport::Role::Manager && auto_placed;
  const bool broker_floats = role == transport::Role::Broker && auto_placed;
  apply_placement(config, home, manager_floats || broker_floats);

  const auto segment = transport::Segment::open(required_env("EDRI_INTERNAL_INSTANCE"));
  // The plugins' metric handles write to the segment from here on.
  std::optional<plugin::BoundMetrics> metrics;
  if (plugins) metrics.emplace(segment, *plugins);
  const auto doorbells = parse_fds(required_env("EDRI_INTERNAL_DOORBELLS"));
  if (doorbells.size() != topology.process_slots()) throw std::runtime_error("doorbell count mismatch");
  ProcessLoop loop(segment, topology, slot, doorbells, config, placement.spin);
  std::optional<transport::BlobArena> blobs;
  if (const char* blob_fd = std::getenv("EDRI_INTERNAL_BLOB_FD"); blob_fd && std::atoi(blob_fd) >= 0) {
    blobs.emplace(transport::BlobArena::open(std::atoi(blob_fd)));
    loop.set_blobs(&*blobs);
  }

  switch (role) {
    case transport::Role::Listener: {
      GuestManagers hosted(loop, config, *plugins, guests, domains, titles, allowed_cpus);
      if (!hosted.start()) return kExitStartFailed;
      const char* unix_fd = std::getenv("EDRI_INTERNAL_UNIX_FD");
      const char* admin_fd = std::getenv("EDRI_INTERNAL_ADMIN_FD");
      listener::Listener l(loop, config, *plugins, static_cast<std::uint16_t>(index),
                           std::stoi(required_env("EDRI_INTERNAL_LISTEN_FD")), unix_fd ? std::atoi(unix_fd) : -1,
                           admin_fd ? std::atoi(admin_fd) : -1, allowed_cpus);
      l.set_placement(placement.describe(config), placement.spread, placement.spin);
      l.start();
      loop.run();
      hosted.stop();
      break;
    }
    case transport::Role::Broker: {
      std::optional<LoopPlacement> placed;
      if (broker_floats && home)
        placed.emplace(loop.events(), *home, allowed_cpus, loop.segment().header().cpu_holders,
                       static_cast<std::uint16_t>(slot));
      broker::Broker b(loop, config);
      loop.run();
      break;
    }
    case transport::Role::Router: {
      router::Router r(loop, config);
      loop.run();
      break;
    }
    case transport::Role::Manager: {
      manager::Manager m(loop, config, *plugins, domain, manager_title, allowed_cpus,
                         manager_floats ? home : std::nullopt);
      try {
        m.start();
      } catch (const manager::Manager::StartFailed& e) {
        spdlog::critical("{}", e.what());
        return kExitStartFailed;
      }
      loop.run();
      m.stop();
      break;
    }
    case transport::Role::Switch: {
      cluster::Switch s(loop, config, *plugins);
      loop.run();
      break;
    }
    case transport::Role::Supervisor: break;
  }
  spdlog::debug("stopped");
  return 0;
}

std::string join_domains(const plugin::PluginSet& plugins) {
  std::string out;
  for (const auto& d : plugins.domains()) out += (out.empty() ? "" : ", ") + d;
  return out;
}

// EDRI_LISTENER_WORKERS=auto becomes a count once, here, before the
// topology exists; the children read it from the topology.
void settle_listener_workers(Config& config, const plugin::PluginSet& plugins) {
  if (!config.listener_workers_auto) return;
  const auto managers = plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas).size();
  // The processes besides the listeners, as the topology counts them (not
  // the supervisor, which sleeps).
  const transport::Topology one_listener(1, static_cast<std::uint32_t>(managers), config.clustered());
  const auto others = one_listener.process_slots() - 1 - one_listener.listeners();
  config.listener_workers =
      auto_listener_workers(config, static_cast<std::uint32_t>(edri::allowed_cpus().size()), others);
}

// EDRI_LISTENER_DOMAINS: each a domain this instance runs once, and one
// listener to run them (auto chooses one).
void check_listener_domains(Config& config, const plugin::PluginSet& plugins) {
  if (config.listener_domains.empty()) return;
  const auto domains = plugins.manager_domains(config.manager_replicas, config.domains, config.domain_replicas);
  for (const auto& d : config.listener_domains) {
    if (plugins.domain_index(d) < 0)
      throw ConfigError("EDRI_LISTENER_DOMAINS names '" + d +
                        "', which no plugin has (domains: " + join_domains(plugins) + ")");
    const auto replicas = std::count(domains.begin(), domains.end(), d);
    if (replicas == 0) throw ConfigError("EDRI_LISTENER_DOMAINS names '" + d + "', which EDRI_DOMAINS leaves out");
    if (replicas > 1)
      throw ConfigError("EDRI_LISTENER_DOMAINS names '" + d + "', which has " + std::to_string(replicas) +
                        " replicas: a domain inside the listener runs once (see EDRI_DOMAIN_REPLICAS, "
                        "EDRI_MANAGER_REPLICAS and the plugin's replicas())");
  }
  if (config.listener_workers_auto) config.listener_workers = 1;
  if (config.listener_workers != 1)
    throw ConfigError("EDRI_LISTENER_DOMAINS needs one listener, and EDRI_LISTENER_WORKERS is " +
                      std::to_string(config.listener_workers));
}

// The plugins, loaded with the config file's sections put into the
// environment as each declared setting is read, then checked: a section
// or a key of it no plugin declares, a plugin's variable that is the
// server's own, an EDRI_ variable nobody declares all stop start-up.
plugin::PluginSet load_plugins(const Config& config, const std::optional<ConfigFile>& file,
                               const std::vector<std::string>& code = {}) {
  plugin::BeforeSetting before;
  if (file)
    before = [&file](const std::string& plugin, const SettingDecl& s) {
      file->export_plugin_setting(plugin, s.key, s.variable);
    };
  auto plugins = plugin::PluginSet::load(config.plugins, std::move(before), code);
  std::map<std::string, std::vector<std::string>> keys;
  for (const auto& name : plugins.names()) keys[name];
  std::vector<std::string> variables;
  const auto server_variables = setting_names();
  for (const auto& s : plugins.settings()) {
    if (std::find(server_variables.begin(), server_variables.end(), s.decl.variable) != server_variables.end())
      throw plugin::PluginError("plugin " + s.plugin + ": setting " + s.decl.variable + " is the server's own");
    keys[s.plugin].push_back(s.decl.key);
    variables.push_back(s.decl.variable);
  }
  if (file) file->check_plugin_sections(keys);
  check_unknown_variables(variables);
  return plugins;
}

// --print-config (NAME=value lines) or --print-config-toml (a config
// file): the server's settings, then each plugin's.
int print_config(const std::optional<ConfigFile>& file, bool as_toml) {
  const Config config = Config::from_env();
  std::string out = as_toml ? settings_toml(config) : config.describe();
  if (!config.plugins.empty()) {
    const auto plugins = load_plugins(config, file);
    std::string section;
    for (const auto& s : plugins.settings()) {
      const char* v = std::getenv(s.decl.variable.c_str());
      const std::string value = v && *v ? v : s.decl.default_value;
      if (!as_toml) {
        out += s.decl.variable + "=" + value + "\n";
        continue;
      }
      if (section != s.plugin) out += "\n[plugin." + (section = s.plugin) + "]\n";
      out += s.decl.key + " = " + toml_string(value) + "  # " + s.decl.variable + ": " + s.decl.meaning + "\n";
    }
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

// Every check start-up makes of the settings and the plugins together,
// once the plugins are loaded; the listener count settled.
void check_plan(Config& config, const plugin::PluginSet& plugins) {
  for (const auto& d : config.domains)
    if (plugins.domain_index(d) < 0)
      throw ConfigError("EDRI_DOMAINS names '" + d + "', which no plugin has (domains: " + join_domains(plugins) + ")");
  listener::HttpFront::check_routes(config, plugins);
  listener::AccessLog::check(config);
  plugins.check_databases(config.databases);
  try {
    // What protobuf checks of a typed gRPC service (its descriptors, its
    // methods unary and each sending an event) stops start-up here, as
    // the listeners would stop on it.
    const grpc::ServiceCatalog check(plugins.grpc_services());
  } catch (const grpc::CatalogError& e) {
    throw plugin::PluginError(std::string("gRPC service ") + e.what());
  }
  if (config.clustered()) {
    // A URL or certificate the NATS client refuses stops start-up here,
    // instead of making the switch fail and restart forever.
    try {
      cluster::NatsClient::check(cluster::nats_settings(config, "check"));
    } catch (const std::exception& e) {
      throw ConfigError(e.what());
    }
  }
  if (!config.ssl_certificate.empty()) {
    // Checked here once, so that a bad certificate stops start-up instead
    // of making the listener fail and restart forever.
    try {
      listener::TlsContext check(config.ssl_certificate, config.ssl_key);
    } catch (const std::exception& e) {
      throw ConfigError(e.what());
    }
  }
  settle_listener_workers(config, plugins);
  check_listener_domains(config, plugins);
}

// The environment, KEY=VALUE.
std::vector<std::string> environment_now() {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) out.emplace_back(*e);
  return out;
}

void restore_environment(const std::vector<std::string>& entries) {
  ::clearenv();
  for (const auto& e : entries) {
    const auto eq = e.find('=');
    if (eq != std::string::npos) ::setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
  }
}

// A folder of a generation's own for its copies of the plugins; removed
// by its owner, or here when planning fails.
class CodeDir {
 public:
  CodeDir() {
    path_ = plugin::plugin_copies_root() + "/edri-" + std::to_string(::getpid()) + "-plugins-XXXXXX";
    if (!::mkdtemp(path_.data()))
      throw std::runtime_error("cannot make a folder for the plugins' copies, " + path_ + ": " + std::strerror(errno));
  }
  ~CodeDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  CodeDir(const CodeDir&) = delete;
  CodeDir& operator=(const CodeDir&) = delete;
  const std::string& path() const { return path_; }
  std::string release() { return std::exchange(path_, std::string()); }

 private:
  std::string path_;
};

// Plans each generation the supervisor runs (supervisor/generation_plan.hpp):
// the environment edri-server started with, the command line over it and
// the config file, read again, under it; the plugins copied, loaded from
// the copies and checked with the settings as start-up checks them.
class Planner {
 public:
  explicit Planner(CommandLine line) : line_(std::move(line)), started_with_(environment_now()) {}

  supervisor::GenerationPlan operator()() {
    restore_environment(started_with_);
    const auto file = apply_command_line(line_);
    supervisor::GenerationPlan plan;
    plan.config = Config::from_env();
    Config& config = plan.config;
    if (!logging_) {
      init_logging("supervisor", config.log_level, config.log_format);
      logging_ = true;
    }
    if (config.plugins.empty()) throw ConfigError("EDRI_PLUGINS is empty: name at least one plugin (.so path)");
    // Here: the children inherit the supervisor's CPUs.
    config.check_cpus_allowed(edri::allowed_cpus());
    CodeDir dir;
    const auto code = plugin::copy_plugins(config.plugins, dir.path());
    plan.plugins = std::make_unique<plugin::PluginSet>(load_plugins(config, file, code));
    check_plan(config, *plan.plugins);
    std::string joined;
    for (const auto& c : code) joined += (joined.empty() ? "" : ":") + c;
    plan.environment = environment_now();
    plan.environment.push_back("EDRI_INTERNAL_PLUGIN_CODE=" + joined);
    plan.code_dir = dir.release();
    return plan;
  }

 private:
  CommandLine line_;
  std::vector<std::string> started_with_;
  bool logging_ = false;
};

int run_supervisor(const CommandLine& line) {
  Planner planner(line);
  supervisor::GenerationPlan first = planner();
  ::prctl(PR_SET_NAME, "edri-supervisor");
  ::signal(SIGPIPE, SIG_IGN);
  supervisor::Supervisor sup(std::move(first), std::ref(planner));
  return sup.run();
}

// --new NAME DIR: writes the project, says what next.
int new_project(const CommandLine& line) {
  try {
    for (const auto& path : write_new_project(line.new_name, line.new_dir, kVersion))
      std::printf("wrote %s\n", path.c_str());
  } catch (const NewProjectError& e) {
    std::fprintf(stderr, "edri-server: --new: %s\n", e.what());
    return 2;
  }
  std::printf("next: cd %s && cmake -S . -B build && cmake --build build && ctest --test-dir build\n",
              line.new_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2) {
      const std::string arg = argv[1];
      if (arg.rfind("--child=", 0) == 0) return run_child(static_cast<std::uint32_t>(std::stoul(arg.substr(8))));
      if (arg == "--worker") return manager::run_worker_process();
    }
    const CommandLine line = parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    using Action = CommandLine::Action;
    switch (line.action) {
      case Action::Help: std::fputs(kUsage, stdout); return 0;
      case Action::Version: std::printf("edri-server %s (plugin ABI %u)\n", kVersion, kPluginAbiVersion); return 0;
      case Action::PrintManpage: std::fputs(manpage(kVersion).c_str(), stdout); return 0;
      case Action::PrintConfigMarkdown: std::fputs(settings_markdown().c_str(), stdout); return 0;
      case Action::New: return new_project(line);
      default: break;
    }
    if (line.action == Action::Serve) return run_supervisor(line);
    const auto file = apply_command_line(line);
    return print_config(file, line.action == Action::PrintConfigToml);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "edri-server: configuration error: %s\n", e.what());
    return 2;
  } catch (const plugin::PluginError& e) {
    std::fprintf(stderr, "edri-server: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "edri-server: %s\n", e.what());
    return 1;
  }
}
