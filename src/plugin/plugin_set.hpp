// PluginSet: the plugins named in EDRI_PLUGINS, loaded and checked.
//
// Every process that needs plugins loads the same list in the same order,
// so domains, events and routes come out identical everywhere (the
// supervisor derives manager slots from domains(), listeners the route
// table from routes, managers their handlers from events).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <edri/plugin.hpp>

namespace edri::plugin {

// A plugin that cannot be used. what() names the file and the reason.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadedEvent {
  std::string name;
  std::uint64_t type_id;
  std::string domain;
  std::vector<FieldDecl> fields;
  std::size_t plugin;                    // index into paths()
  std::int32_t handler = -1;             // index into handlers(), -1 when none
  bool notification = false;             // published, not routed
  bool replay = false;                   // Registry::replay: handed to a dead manager's successor
  bool all_headers = false;              // Registry::all_headers: its handler sees every header
  bool closed = false;                   // Registry::refuse_unknown_fields: an undeclared field is a 422
  std::vector<AnswerDecl> answers = {};  // Registry::answers, for /openapi.json
};

struct LoadedSubscriber {
  std::size_t event;  // index into events()
  std::string domain;
  Subscriber subscriber;
};

struct LoadedRoute {
  Method method;
  std::string path;
  std::size_t event;  // index into events()
};

// A WebSocket command: its name and the event it sends.
struct LoadedCommand {
  std::string command;
  std::size_t event;  // index into events()
};

// A notification WebSocket clients may subscribe to.
struct LoadedPush {
  std::size_t notification;  // index into events()
  std::string subscribe;
  std::string unsubscribe;
};

// A setting a plugin declared (Registry::setting), with the plugin's name
// (its section in the config file).
struct LoadedSetting {
  std::string plugin;
  SettingDecl decl;
};

// Called before a plugin's setting is read: the supervisor puts a config
// file's value into the environment there.
using BeforeSetting = std::function<void(const std::string& plugin, const SettingDecl&)>;

class PluginSet {
 public:
  // Loads every path; throws PluginError on the first that fails.
  // `code`: where each plugin's code is loaded from, when not from its
  // path (the copy the supervisor took when the generation began:
  // plugin_code_paths()); the path still names it and anchors its assets.
  static PluginSet load(const std::vector<std::string>& paths, BeforeSetting before_setting = {},
                        const std::vector<std::string>& code = {});

  const std::vector<std::string>& paths() const { return paths_; }
  const std::vector<std::string>& names() const { return names_; }  // EDRI_PLUGIN's NAME, as paths()
  const std::vector<std::string>& domains() const { return domains_; }
  const std::vector<LoadedEvent>& events() const { return events_; }
  const std::vector<LoadedRoute>& routes() const { return routes_; }
  const std::vector<Handler>& handlers() const { return handlers_; }
  // Every plugin's middleware, sorted by order (stable: declaration order
  // within an order, plugins in EDRI_PLUGINS order).
  const std::vector<MiddlewareDecl>& middlewares() const { return middlewares_; }
  const std::vector<LoadedSubscriber>& subscribers() const { return subscribers_; }
  const std::vector<LoadedCommand>& commands() const { return commands_; }
  const std::vector<LoadedPush>& pushes() const { return pushes_; }
  // Typed gRPC services, their methods' events declared (Registry::grpc_service).
  const std::vector<GrpcServiceDecl>& grpc_services() const { return grpc_services_; }
  const std::vector<LoadedSetting>& settings() const { return settings_; }
  // Every plugin's own metrics (Registry::counter, gauge, histogram), checked.
  const std::vector<MetricRegistration>& metrics() const { return metrics_; }
  // The domain of each manager process, in slot order: every domain, each
  // repeated for its replicas (`replicas` when not 0, else what its plugin
  // asked for, else 1). Supervisor and children compute it alike. Where
  // `only` is not empty (EDRI_DOMAINS), just the domains it names.
  // The domain of each manager process, a domain once per replica: what
  // `per_domain` names (EDRI_DOMAIN_REPLICAS), else what its plugin
  // declared (Registry::replicas), else `replicas` (EDRI_MANAGER_REPLICAS),
  // else 1. `only`: these domains alone (EDRI_DOMAINS). Throws PluginError
  // for a domain in `per_domain` that no plugin declares.
  std::vector<std::string> manager_domains(
      std::uint32_t replicas = 0, const std::vector<std::string>& only = {},
      const std::vector<std::pair<std::string, std::uint32_t>>& per_domain = {}) const;
  // The worker pool a plugin asked for in `domain`, if any (the last one wins).
  std::optional<WorkerPoolDecl> worker_pool(const std::string& domain) const;
  // The start and stop hooks of `domain`, in declaration order.
  std::vector<const LifecycleDecl*> lifecycle(const std::string& domain) const;
  // The databases `domain` declared (Registry::database), each with its
  // URL: from `urls` (EDRI_DATABASES) where it names it, else the
  // declaration's.
  std::vector<DatabaseDecl> databases(const std::string& domain,
                                      const std::vector<std::pair<std::string, std::string>>& urls) const;
  // Throws PluginError for a name in `urls` no plugin declares, a database
  // left without a URL, or a URL neither postgresql:// nor sqlite:.
  void check_databases(const std::vector<std::pair<std::string, std::string>>& urls) const;
  // The worker process pool a plugin asked for in `domain`, if any (the last one wins).
  std::optional<WorkerProcessesDecl> worker_processes(const std::string& domain) const;
  // The tasks registered in `domain` (Registry::task), in registration order.
  std::vector<const TaskDecl*> tasks(const std::string& domain) const;
  // The event of that name, or -1.
  int event_index(std::string_view name) const;
  // (URL prefix, absolute folder) of every plugin's assets.
  const std::vector<std::pair<std::string, std::string>>& asset_mounts() const { return asset_mounts_; }
  // Paths of live streams as Server-Sent Events (Registry::stream_events).
  const std::vector<std::string>& stream_event_routes() const { return stream_event_routes_; }
  // Index of a domain, or -1.
  int domain_index(const std::string& name) const;

 private:
  class Builder;

  std::vector<std::string> paths_;
  std::vector<std::string> names_;
  std::vector<void*> handles_;
  std::vector<std::string> domains_;
  std::vector<LoadedEvent> events_;
  std::vector<LoadedRoute> routes_;
  std::vector<Handler> handlers_;
  std::vector<MiddlewareDecl> middlewares_;
  std::vector<LoadedSubscriber> subscribers_;
  std::vector<std::pair<std::string, std::string>> asset_mounts_;
  std::vector<std::string> stream_event_routes_;
  std::vector<LoadedCommand> commands_;
  std::vector<LoadedPush> pushes_;
  std::vector<GrpcServiceDecl> grpc_services_;
  std::vector<WorkerPoolDecl> worker_pools_;
  std::vector<LifecycleDecl> lifecycle_;
  std::vector<DatabaseDecl> databases_;
  std::vector<WorkerProcessesDecl> worker_process_pools_;
  std::vector<TaskDecl> tasks_;
  std::vector<std::pair<std::string, std::size_t>> replica_counts_;
  std::vector<LoadedSetting> settings_;
  std::vector<MetricRegistration> metrics_;
};

// EDRI_INTERNAL_PLUGIN_CODE: the copies of the plugins a generation of
// processes loads (':' separated, in EDRI_PLUGINS's order), so that a
// process restarted after a plugin file changed runs its generation's code.
// Empty when unset.
std::vector<std::string> plugin_code_paths();
// Copies each plugin file (checked as a plugin to load is) into `dir`,
// "<n>-<name>" in order; their paths, for EDRI_INTERNAL_PLUGIN_CODE.
std::vector<std::string> copy_plugins(const std::vector<std::string>& paths, const std::string& dir);
// Where the supervisor makes each generation's folder of copies
// ("edri-<pid>-plugins-XXXXXX"): TMPDIR, else /tmp.
std::string plugin_copies_root();
// Removes the folders of copies that supervisors no longer running left
// (one killed by SIGKILL cannot remove its own). Returns their paths.
std::vector<std::string> remove_stale_plugin_copies();

// How a manager is named (ps, logs, /health): its domain, then the replica
// number from the second replica on ("notes", "notes 2", ...).
std::vector<std::string> manager_titles(const std::vector<std::string>& manager_domains);
// The managers, as indices into `manager_domains`, whose domain is one of
// `listener_domains` (EDRI_LISTENER_DOMAINS): run inside the listener.
std::vector<std::uint32_t> listener_hosted_managers(const std::vector<std::string>& manager_domains,
                                                    const std::vector<std::string>& listener_domains);

}  // namespace edri::plugin
