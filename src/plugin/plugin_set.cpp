#include "plugin/plugin_set.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "envelope/envelope.hpp"
#include "plugin/field_rules.hpp"
#include "plugin/plugin_metrics.hpp"
#include "transport/stale_owner.hpp"

namespace edri::plugin {

namespace {

// Only the file the configuration names is loaded, and only if nobody but
// its owners could have changed it.
void check_plugin_file(const std::string& path, const std::string& where) {
  // dlopen() searches LD_LIBRARY_PATH and the system's library directories
  // for a name without a slash.
  if (path.find('/') == std::string::npos)
    throw PluginError(where + ": not a path; name the file (./" + path +
                      " or an absolute path), so that no other library of that name is loaded");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw PluginError(where + ": cannot load it: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw PluginError(where + ": not a regular file");
  if (st.st_mode & S_IWOTH) throw PluginError(where + ": anyone may write it (mode o+w); refusing to load it");
  const auto slash = path.rfind('/');
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IWOTH))
    throw PluginError(where + ": its folder " + dir + " may be written by anyone (mode o+w); refusing to load it");
}

// std::function, std::string and nlohmann::json cross dlopen inside
// edri's types: a plugin built by another compiler or against another
// standard library or JSON release may lay them out otherwise, and would
// fail in ways no message explains.
void check_toolchain(const PluginDescriptor& d, const std::string& where) {
  const std::string_view plugin_toolchain = d.toolchain ? d.toolchain : "an unknown toolchain";
  if (plugin_toolchain != EDRI_TOOLCHAIN)
    throw PluginError(where + ": built with " + std::string(plugin_toolchain) + ", this edri-server with " +
                      EDRI_TOOLCHAIN + "; rebuild the plugin with the same compiler and libraries");
}

}  // namespace

// Takes plugins into a set one by one, one kind of declaration at a time,
// checking each against what earlier plugins declared.
class PluginSet::Builder {
 public:
  explicit Builder(BeforeSetting before_setting) : before_setting_(std::move(before_setting)) {}
  void add(const std::string& path, const std::string& code);
  PluginSet finish();

 private:
  Registry register_plugin(const std::string& code);
  void take_events(RegistryDeclarations& d);
  // A declaration FieldRule refuses stops start-up: `what` + its reason.
  void check_rule(const FieldDecl& f, const std::string& what) const;
  void check_fields(const EventDecl& e) const;
  // The index of `name`, an event this plugin declares; else PluginError
  // naming `declaration`.
  std::size_t own_event(const std::string& name, const char* declaration) const;
  void take_routes(RegistryDeclarations& d);
  void take_handlers(RegistryDeclarations& d);
  void claim_command(const std::string& name) const;
  void take_commands(RegistryDeclarations& d);
  void take_pushes(RegistryDeclarations& d);
  void take_grpc_services(RegistryDeclarations& d);
  void take_replays(const RegistryDeclarations& d);
  void take_all_headers(const RegistryDeclarations& d);
  void take_closed_events(const RegistryDeclarations& d);
  void take_answers(RegistryDeclarations& d);
  void check_middleware_events() const;
  void take_pool_sizes(RegistryDeclarations& d);
  void take_tasks(RegistryDeclarations& d);
  void take_subscribers(RegistryDeclarations& d);
  void take_assets(const RegistryDeclarations& d);
  void take_middlewares(RegistryDeclarations& d);
  void take_settings(RegistryDeclarations& d, const std::string& plugin);
  void take_metrics(RegistryDeclarations& d);
  void resolve_subscribers();
  void check_complete() const;
  std::size_t declared_event(const std::string& name) const;  // its index, or npos

  PluginSet set_;
  std::unordered_map<std::string, std::size_t> event_by_name_;
  std::unordered_map<std::uint64_t, std::string> name_by_id_;
  std::vector<SubscriberDecl> pending_subscribers_;  // resolved once every plugin declared its events
  std::string path_;                                 // of the plugin being added
  std::string where_;                                // "plugin <path>", for messages
  std::size_t plugin_index_ = 0;
  BeforeSetting before_setting_;
  std::string plugin_name_;  // of the plugin being added (EDRI_PLUGIN's NAME)
};

PluginSet PluginSet::load(const std::vector<std::string>& paths, BeforeSetting before_setting,
                          const std::vector<std::string>& code) {
  if (!code.empty() && code.size() != paths.size())
    throw PluginError("EDRI_INTERNAL_PLUGIN_CODE names " + std::to_string(code.size()) + " files for " +
                      std::to_string(paths.size()) + " plugins");
  Builder b(std::move(before_setting));
  for (std::size_t i = 0; i < paths.size(); ++i) b.add(paths[i], code.empty() ? paths[i] : code[i]);
  return b.finish();
}

void PluginSet::Builder::add(const std::string& path, const std::string& code) {
  path_ = path;
  where_ = "plugin " + path;
  Registry reg = register_plugin(code);
  auto& d = PluginBinding::declarations(reg);
  plugin_index_ = set_.paths_.size();
  set_.paths_.push_back(path);
  set_.names_.push_back(plugin_name_);
  take_events(d);
  take_routes(d);
  take_handlers(d);
  take_commands(d);
  take_pushes(d);
  take_grpc_services(d);
  take_replays(d);
  take_all_headers(d);
  take_closed_events(d);
  take_answers(d);
  take_pool_sizes(d);
  take_tasks(d);
  take_subscribers(d);
  take_assets(d);
  take_middlewares(d);
  take_settings(d, plugin_name_);
  take_metrics(d);
}

PluginSet PluginSet::Builder::finish() {
  std::stable_sort(set_.middlewares_.begin(), set_.middlewares_.end(),
                   [](const MiddlewareDecl& a, const MiddlewareDecl& b) { return a.order < b.order; });
  resolve_subscribers();
  check_complete();
  check_middleware_events();
  return std::move(set_);
}

// Loads the file `code` (the plugin's path, or its generation's copy),
// checks its descriptor and runs its registration.
Registry PluginSet::Builder::register_plugin(const std::string& code) {
  check_plugin_file(code, where_);
  // RTLD_LOCAL: plugins do not see each other's symbols.
  void* h = ::dlopen(code.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw PluginError(where_ + ": cannot load: " + ::dlerror());
  set_.handles_.push_back(h);
  auto entry = reinterpret_cast<const PluginDescriptor* (*)()>(::dlsym(h, EDRI_PLUGIN_ENTRY_SYMBOL));
  if (!entry)
    throw PluginError(where_ + ": not an edri plugin (no " EDRI_PLUGIN_ENTRY_SYMBOL
                               " symbol; declare it with EDRI_PLUGIN)");
  const PluginDescriptor* d = entry();
  if (!d) throw PluginError(where_ + ": its entry point returned no descriptor");
  if (d->abi_version != kPluginAbiVersion)
    throw PluginError(where_ + ": plugin ABI version " + std::to_string(d->abi_version) + ", this edri-server has " +
                      std::to_string(kPluginAbiVersion) + "; rebuild the plugin against this edri");
  check_toolchain(*d, where_);
  if (!d->name || !*d->name) throw PluginError(where_ + ": the plugin has no name");
  if (!d->register_plugin) throw PluginError(where_ + ": the plugin has no registration function");
  Registry reg;
  plugin_name_ = d->name;
  std::function<void(const SettingDecl&)> before;
  if (before_setting_) before = [this](const SettingDecl& s) { before_setting_(plugin_name_, s); };
  PluginBinding::start(reg, d->name, std::move(before));
  try {
    d->register_plugin(reg);
  } catch (const std::exception& e) {
    throw PluginError(where_ + ": registration failed: " + e.what());
  }
  return reg;
}

std::size_t PluginSet::Builder::declared_event(const std::string& name) const {
  const auto it = event_by_name_.find(name);
  return it == event_by_name_.end() ? std::string::npos : it->second;
}

void PluginSet::Builder::take_events(RegistryDeclarations& d) {
  for (auto& e : d.events) {
    if (e.name.empty()) throw PluginError(where_ + ": an event has no name");
    if (e.domain.empty()) throw PluginError(where_ + ": event " + e.name + " has an empty domain");
    if (event_by_name_.count(e.name)) throw PluginError(where_ + ": event " + e.name + " is declared twice");
    check_fields(e);
    const auto id = envelope::event_type_id(e.name);
    if (auto it = name_by_id_.find(id); it != name_by_id_.end())
      throw PluginError(where_ + ": event " + e.name + " collides with " + it->second + " (same type id)");
    name_by_id_.emplace(id, e.name);
    event_by_name_.emplace(e.name, set_.events_.size());
    if (set_.domain_index(e.domain) < 0) set_.domains_.push_back(e.domain);
    const bool notification =
        std::find(d.notifications.begin(), d.notifications.end(), e.name) != d.notifications.end();
    set_.events_.push_back(LoadedEvent{e.name, id, e.domain, std::move(e.fields), plugin_index_, -1, notification});
  }
}

// Each field's rules are made once here, so that a declaration that
// cannot hold (a default its own rules refuse, a pattern that does not
// compile) stops start-up naming it, instead of failing every request.
void PluginSet::Builder::check_rule(const FieldDecl& f, const std::string& what) const {
  try {
    FieldRule rule(f);
  } catch (const FieldDeclError& error) {
    throw PluginError(where_ + ": " + what + error.what());
  }
}

void PluginSet::Builder::check_fields(const EventDecl& e) const {
  for (const auto& f : e.fields) check_rule(f, "event " + e.name + ": field ");
}

namespace {

bool is_setting_key(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_variable_name(const std::string& name) {
  return !name.empty() && !(name[0] >= '0' && name[0] <= '9') && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

// A setting's key and variable are names the file and the environment can
// hold, each declared once by its plugin; EDRI_INTERNAL_ is the server's.
void PluginSet::Builder::take_settings(RegistryDeclarations& d, const std::string& plugin) {
  for (auto& s : d.settings) {
    const std::string what = where_ + ": setting '" + s.key + "' (" + s.variable + ")";
    if (!is_setting_key(s.key)) throw PluginError(what + ": a key is lower case letters, digits and '_'");
    if (!is_variable_name(s.variable) || s.variable.rfind("EDRI_INTERNAL_", 0) == 0)
      throw PluginError(what + ": a variable is upper case letters, digits and '_', not EDRI_INTERNAL_*");
    for (const auto& known : set_.settings_) {
      if (known.plugin != plugin) continue;
      if (known.decl.key == s.key) throw PluginError(what + ": the key is declared twice");
      if (known.decl.variable == s.variable) throw PluginError(what + ": the variable is declared twice");
    }
    set_.settings_.push_back(LoadedSetting{plugin, std::move(s)});
  }
}

void PluginSet::Builder::take_metrics(RegistryDeclarations& d) {
  for (auto& m : d.metrics) {
    check_metric(m, where_);
    for (const auto& known : set_.metrics_)
      if (known.decl.name == m.decl.name) throw PluginError(where_ + ": metric " + m.decl.name + " is declared twice");
    set_.metrics_.push_back(std::move(m));
  }
}

void PluginSet::Builder::take_routes(RegistryDeclarations& d) {
  for (auto& r : d.routes) {
    const auto event = declared_event(r.event);
    if (event == std::string::npos)
      throw PluginError(where_ + ": route " + std::string(method_name(r.method)) + " " + r.path +
                        " names undeclared event " + r.event);
    set_.routes_.push_back(LoadedRoute{r.method, r.path, event});
  }
}

void PluginSet::Builder::take_handlers(RegistryDeclarations& d) {
  for (auto& hd : d.handlers) {
    const auto event = declared_event(hd.event);
    if (event == std::string::npos) throw PluginError(where_ + ": handler for undeclared event " + hd.event);
    auto& ev = set_.events_[event];
    if (ev.plugin != plugin_index_)
      throw PluginError(where_ + ": handler for event " + hd.event + " declared by another plugin");
    if (ev.handler >= 0) throw PluginError(where_ + ": two handlers for event " + hd.event);
    if (!hd.handler) throw PluginError(where_ + ": empty handler for event " + hd.event);
    ev.handler = static_cast<std::int32_t>(set_.handlers_.size());
    set_.handlers_.push_back(std::move(hd.handler));
  }
}

// WebSocket command names share one namespace across plugins.
void PluginSet::Builder::claim_command(const std::string& name) const {
  if (name.empty()) throw PluginError(where_ + ": a WebSocket command has no name");
  for (const auto& c : set_.commands_)
    if (c.command == name) throw PluginError(where_ + ": WebSocket command " + name + " is declared twice");
  for (const auto& p : set_.pushes_)
    if (p.subscribe == name || p.unsubscribe == name)
      throw PluginError(where_ + ": WebSocket command " + name + " is declared twice");
}

void PluginSet::Builder::take_commands(RegistryDeclarations& d) {
  for (auto& c : d.commands) {
    const auto event = declared_event(c.event);
    if (event == std::string::npos)
      throw PluginError(where_ + ": WebSocket command " + c.command + " names undeclared event " + c.event);
    if (set_.events_[event].notification)
      throw PluginError(where_ + ": WebSocket command " + c.command + " names notification " + c.event +
                        " (a command sends a request; use push() for notifications)");
    claim_command(c.command);
    set_.commands_.push_back(LoadedCommand{std::move(c.command), event});
  }
}

void PluginSet::Builder::take_pushes(RegistryDeclarations& d) {
  for (auto& p : d.pushes) {
    const auto event = declared_event(p.notification);
    if (event == std::string::npos || !set_.events_[event].notification)
      throw PluginError(where_ + ": push of " + p.notification + ", which is not a declared notification");
    if (p.subscribe == p.unsubscribe)
      throw PluginError(where_ + ": push of " + p.notification + " has the same subscribe and unsubscribe command");
    claim_command(p.subscribe);
    claim_command(p.unsubscribe);
    set_.pushes_.push_back(LoadedPush{event, std::move(p.subscribe), std::move(p.unsubscribe)});
  }
}

// What protobuf alone can check (the service, its methods, that each is
// unary) the listener's gRPC catalog checks; here, the names.
void PluginSet::Builder::take_grpc_services(RegistryDeclarations& d) {
  for (auto& g : d.grpc_services) {
    const std::string what = where_ + ": gRPC service " + g.service;
    if (g.service.empty()) throw PluginError(where_ + ": a gRPC service has no name");
    for (const auto& other : set_.grpc_services_)
      if (other.service == g.service) throw PluginError(what + " is declared twice");
    if (g.descriptor_set.empty()) throw PluginError(what + " has no descriptor set");
    for (const auto& m : g.methods) {
      const auto event = declared_event(m.event);
      if (event == std::string::npos)
        throw PluginError(what + ": method " + m.method + " names undeclared event " + m.event);
      if (set_.events_[event].notification)
        throw PluginError(what + ": method " + m.method + " names notification " + m.event +
                          " (a method sends a request)");
    }
    set_.grpc_services_.push_back(std::move(g));
  }
}

std::size_t PluginSet::Builder::own_event(const std::string& name, const char* declaration) const {
  const auto event = declared_event(name);
  if (event == std::string::npos || set_.events_[event].plugin != plugin_index_)
    throw PluginError(where_ + ": " + declaration + "(" + name + "), an event this plugin does not declare");
  return event;
}

void PluginSet::Builder::take_all_headers(const RegistryDeclarations& d) {
  for (const auto& name : d.all_headers) set_.events_[own_event(name, "all_headers")].all_headers = true;
}

void PluginSet::Builder::take_closed_events(const RegistryDeclarations& d) {
  for (const auto& name : d.closed_events) set_.events_[own_event(name, "refuse_unknown_fields")].closed = true;
}

void PluginSet::Builder::take_answers(RegistryDeclarations& d) {
  for (auto& a : d.answers) {
    const std::string what = "answers(" + a.event + ", " + std::to_string(a.status) + ")";
    auto& event = set_.events_[own_event(a.event, "answers")];
    if (a.status < 100 || a.status > 599) throw PluginError(where_ + ": " + what + ": a status is 100 to 599");
    if (a.body) check_rule(*a.body, what + ": ");
    event.answers.push_back(std::move(a));
  }
}

// A middleware attached to an event no plugin declares would guard
// nothing (a typo in a security rule): start-up stops instead.
void PluginSet::Builder::check_middleware_events() const {
  for (const auto& m : set_.middlewares_)
    for (const auto& e : m.events)
      if (e != "stream.subscribe" && declared_event(e) == std::string::npos)
        throw PluginError("middleware " + m.name + " names undeclared event " + e);
}

void PluginSet::Builder::take_replays(const RegistryDeclarations& d) {
  for (const auto& name : d.replayed) {
    const auto event = declared_event(name);
    if (event == std::string::npos || set_.events_[event].plugin != plugin_index_)
      throw PluginError(where_ + ": replay of " + name + ", which this plugin does not declare");
    if (set_.events_[event].notification)
      throw PluginError(where_ + ": replay of notification " + name + " (only requests are replayed)");
    set_.events_[event].replay = true;
  }
}

void PluginSet::Builder::take_pool_sizes(RegistryDeclarations& d) {
  for (auto& l : d.lifecycle) set_.lifecycle_.push_back(std::move(l));
  for (auto& db : d.databases) {
    if (db.name.empty() || db.name.find_first_of(" =") != std::string::npos)
      throw PluginError(where_ + ": database name \"" + db.name + "\" (empty, or with a space or '=')");
    set_.databases_.push_back(std::move(db));
  }
  for (auto& [domain, n] : d.replica_counts) {
    if (n == 0 || n > 64)
      throw PluginError(where_ + ": replicas(" + std::to_string(n) + ") for domain " + domain + ": must be 1..64");
    set_.replica_counts_.emplace_back(domain, n);
  }
  for (auto& w : d.worker_pools) {
    if (w.threads == 0 || w.threads > 1024)
      throw PluginError(where_ + ": worker_threads(" + std::to_string(w.threads) + ") for domain " + w.domain +
                        ": must be 1..1024");
    set_.worker_pools_.push_back(std::move(w));
  }
  for (auto& w : d.worker_process_pools) {
    if (w.processes == 0 || w.processes > 256)
      throw PluginError(where_ + ": worker_processes(" + std::to_string(w.processes) + ") for domain " + w.domain +
                        ": must be 1..256");
    set_.worker_process_pools_.push_back(std::move(w));
  }
}

void PluginSet::Builder::take_tasks(RegistryDeclarations& d) {
  for (auto& t : d.tasks) {
    if (t.name.empty() || t.name.size() > 255 || !t.task)
      throw PluginError(where_ + ": a task needs a name of 1..255 bytes and a function");
    for (const auto& other : set_.tasks_)
      if (other.domain == t.domain && other.name == t.name)
        throw PluginError(where_ + ": task " + t.name + " is registered twice in domain " + t.domain);
    set_.tasks_.push_back(std::move(t));
  }
}

void PluginSet::Builder::take_subscribers(RegistryDeclarations& d) {
  for (const auto& sd : d.subscribers)
    if (set_.domain_index(sd.domain) < 0) set_.domains_.push_back(sd.domain);
  pending_subscribers_.insert(pending_subscribers_.end(), std::make_move_iterator(d.subscribers.begin()),
                              std::make_move_iterator(d.subscribers.end()));
}

// A relative assets folder is relative to the plugin file's own directory.
void PluginSet::Builder::take_assets(const RegistryDeclarations& d) {
  for (const auto& path : d.stream_event_routes) {
    if (path.empty() || path.back() != '}')
      throw PluginError(where_ + ": stream_events path " + path + " must end in the stream's {parameter}");
    set_.stream_event_routes_.push_back(path);
  }
  for (const auto& [prefix, folder] : d.asset_mounts) {
    std::string dir = folder;
    if (dir.empty() || dir.front() != '/') {
      const auto slash = path_.rfind('/');
      dir = (slash == std::string::npos ? std::string(".") : path_.substr(0, slash)) + "/" + dir;
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw PluginError(where_ + ": assets folder " + dir + " is not a directory");
    set_.asset_mounts_.emplace_back(prefix, dir);
  }
}

void PluginSet::Builder::take_middlewares(RegistryDeclarations& d) {
  for (auto& m : d.middlewares) {
    if (!m.on_request && !m.on_response) throw PluginError(where_ + ": middleware " + m.name + " does nothing");
    set_.middlewares_.push_back(std::move(m));
  }
}

void PluginSet::Builder::resolve_subscribers() {
  for (auto& sd : pending_subscribers_) {
    const auto event = declared_event(sd.event);
    if (event == std::string::npos)
      throw PluginError("a subscriber in domain " + sd.domain + " names undeclared event " + sd.event);
    if (!sd.subscriber) throw PluginError("empty subscriber for event " + sd.event);
    set_.subscribers_.push_back(LoadedSubscriber{event, sd.domain, std::move(sd.subscriber)});
  }
}

// What only the whole set can tell: a task's domain has a manager, and
// every routed event has a handler.
void PluginSet::Builder::check_complete() const {
  for (const auto& t : set_.tasks_)
    if (set_.domain_index(t.domain) < 0)
      throw PluginError("task " + t.name + " is in domain " + t.domain +
                        ", which has no handler to run it: register tasks in a domain with handlers");
  for (const auto& e : set_.events_)
    if (e.handler < 0 && !e.notification)
      throw PluginError("plugin " + set_.paths_[e.plugin] + ": event " + e.name + " has no handler");
}

std::string plugin_copies_root() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

std::vector<std::string> remove_stale_plugin_copies() {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(plugin_copies_root(), ec)) {
    // edri-<pid>-plugins-XXXXXX: stale when that pid is gone.
    const auto name = entry.path().filename().string();
    const auto end = name.find("-plugins-");
    if (name.rfind("edri-", 0) != 0 || end == std::string::npos || !entry.is_directory(ec)) continue;
    const long pid = std::strtol(name.substr(5, end - 5).c_str(), nullptr, 10);
    if (!transport::owner_gone(pid)) continue;
    std::filesystem::remove_all(entry.path(), ec);
    if (!ec) removed.push_back(entry.path().string());
  }
  return removed;
}

std::vector<std::string> copy_plugins(const std::vector<std::string>& paths, const std::string& dir) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    check_plugin_file(paths[i], "plugin " + paths[i]);
    const auto name = std::filesystem::path(paths[i]).filename().string();
    out.push_back(dir + "/" + std::to_string(i) + "-" + name);
    std::error_code ec;
    std::filesystem::copy_file(paths[i], out.back(), ec);
    if (ec) throw PluginError("plugin " + paths[i] + ": cannot copy it to " + dir + ": " + ec.message());
  }
  return out;
}

}  // namespace edri::plugin
