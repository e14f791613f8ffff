#include "plugin/plugin_set.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "envelope/envelope.hpp"

namespace edri::plugin {

int PluginSet::event_index(std::string_view name) const {
  for (std::size_t i = 0; i < events_.size(); ++i)
    if (events_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> PluginSet::manager_domains(std::uint32_t replicas) const {
  std::vector<std::string> out;
  for (const auto& d : domains_) {
    std::size_t n = 1;
    for (const auto& [domain, count] : replica_counts_)
      if (domain == d) n = count;
    if (replicas) n = replicas;
    out.insert(out.end(), n, d);
  }
  return out;
}

std::vector<std::string> manager_titles(const std::vector<std::string>& manager_domains) {
  std::vector<std::string> out;
  for (std::size_t j = 0; j < manager_domains.size(); ++j) {
    std::size_t replica = 1;
    for (std::size_t i = 0; i < j; ++i)
      if (manager_domains[i] == manager_domains[j]) ++replica;
    out.push_back(replica == 1 ? manager_domains[j] : manager_domains[j] + " " + std::to_string(replica));
  }
  return out;
}

std::optional<WorkerPoolDecl> PluginSet::worker_pool(const std::string& domain) const {
  std::optional<WorkerPoolDecl> out;
  for (const auto& w : worker_pools_)
    if (w.domain == domain) out = w;
  return out;
}

std::optional<WorkerProcessesDecl> PluginSet::worker_processes(const std::string& domain) const {
  std::optional<WorkerProcessesDecl> out;
  for (const auto& w : worker_process_pools_)
    if (w.domain == domain) out = w;
  return out;
}

std::vector<const TaskDecl*> PluginSet::tasks(const std::string& domain) const {
  std::vector<const TaskDecl*> out;
  for (const auto& t : tasks_)
    if (t.domain == domain) out.push_back(&t);
  return out;
}

int PluginSet::domain_index(const std::string& name) const {
  auto it = std::find(domains_.begin(), domains_.end(), name);
  return it == domains_.end() ? -1 : static_cast<int>(it - domains_.begin());
}

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

PluginSet PluginSet::load(const std::vector<std::string>& paths) {
  PluginSet set;
  std::unordered_map<std::string, std::size_t> event_by_name;
  std::unordered_map<std::uint64_t, std::string> name_by_id;
  std::vector<SubscriberDecl> pending_subscribers;  // resolved once every plugin declared its events

  for (const auto& path : paths) {
    const std::string where = "plugin " + path;
    check_plugin_file(path, where);
    // RTLD_LOCAL: plugins do not see each other's symbols.
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw PluginError(where + ": cannot load: " + ::dlerror());
    set.handles_.push_back(h);
    auto entry = reinterpret_cast<const PluginDescriptor* (*)()>(::dlsym(h, EDRI_PLUGIN_ENTRY_SYMBOL));
    if (!entry)
      throw PluginError(where + ": not an edri plugin (no " EDRI_PLUGIN_ENTRY_SYMBOL
                                " symbol; declare it with EDRI_PLUGIN)");
    const PluginDescriptor* d = entry();
    if (!d) throw PluginError(where + ": its entry point returned no descriptor");
    if (d->abi_version != kPluginAbiVersion)
      throw PluginError(where + ": plugin ABI version " + std::to_string(d->abi_version) + ", this edri-server has " +
                        std::to_string(kPluginAbiVersion) + "; rebuild the plugin against this edri");
    check_toolchain(*d, where);
    if (!d->name || !*d->name) throw PluginError(where + ": the plugin has no name");
    if (!d->register_plugin) throw PluginError(where + ": the plugin has no registration function");

    Registry reg;
    PluginBinding::start(reg, d->name);
    try {
      d->register_plugin(reg);
    } catch (const std::exception& e) {
      throw PluginError(where + ": registration failed: " + e.what());
    }
    auto& decls = PluginBinding::declarations(reg);

    const std::size_t plugin_index = set.paths_.size();
    set.paths_.push_back(path);
    for (auto& e : decls.events) {
      if (e.name.empty()) throw PluginError(where + ": an event has no name");
      if (e.domain.empty()) throw PluginError(where + ": event " + e.name + " has an empty domain");
      if (event_by_name.count(e.name)) throw PluginError(where + ": event " + e.name + " is declared twice");
      const auto id = envelope::event_type_id(e.name);
      if (auto it = name_by_id.find(id); it != name_by_id.end())
        throw PluginError(where + ": event " + e.name + " collides with " + it->second + " (same type id)");
      name_by_id.emplace(id, e.name);
      event_by_name.emplace(e.name, set.events_.size());
      if (set.domain_index(e.domain) < 0) set.domains_.push_back(e.domain);
      const bool notification =
          std::find(decls.notifications.begin(), decls.notifications.end(), e.name) != decls.notifications.end();
      set.events_.push_back(LoadedEvent{e.name, id, e.domain, std::move(e.fields), plugin_index, -1, notification});
    }
    for (auto& r : decls.routes) {
      auto it = event_by_name.find(r.event);
      if (it == event_by_name.end())
        throw PluginError(where + ": route " + std::string(method_name(r.method)) + " " + r.path +
                          " names undeclared event " + r.event);
      set.routes_.push_back(LoadedRoute{r.method, r.path, it->second});
    }
    for (auto& hd : decls.handlers) {
      auto it = event_by_name.find(hd.event);
      if (it == event_by_name.end()) throw PluginError(where + ": handler for undeclared event " + hd.event);
      auto& ev = set.events_[it->second];
      if (ev.plugin != plugin_index)
        throw PluginError(where + ": handler for event " + hd.event + " declared by another plugin");
      if (ev.handler >= 0) throw PluginError(where + ": two handlers for event " + hd.event);
      if (!hd.handler) throw PluginError(where + ": empty handler for event " + hd.event);
      ev.handler = static_cast<std::int32_t>(set.handlers_.size());
      set.handlers_.push_back(std::move(hd.handler));
    }
    // WebSocket command names share one namespace across plugins.
    auto claim_command = [&](const std::string& name) {
      if (name.empty()) throw PluginError(where + ": a WebSocket command has no name");
      for (const auto& c : set.commands_)
        if (c.command == name) throw PluginError(where + ": WebSocket command " + name + " is declared twice");
      for (const auto& p : set.pushes_)
        if (p.subscribe == name || p.unsubscribe == name)
          throw PluginError(where + ": WebSocket command " + name + " is declared twice");
    };
    for (auto& c : decls.commands) {
      auto it = event_by_name.find(c.event);
      if (it == event_by_name.end())
        throw PluginError(where + ": WebSocket command " + c.command + " names undeclared event " + c.event);
      if (set.events_[it->second].notification)
        throw PluginError(where + ": WebSocket command " + c.command + " names notification " + c.event +
                          " (a command sends a request; use push() for notifications)");
      claim_command(c.command);
      set.commands_.push_back(LoadedCommand{std::move(c.command), it->second});
    }
    for (auto& p : decls.pushes) {
      auto it = event_by_name.find(p.notification);
      if (it == event_by_name.end() || !set.events_[it->second].notification)
        throw PluginError(where + ": push of " + p.notification + ", which is not a declared notification");
      if (p.subscribe == p.unsubscribe)
        throw PluginError(where + ": push of " + p.notification + " has the same subscribe and unsubscribe command");
      claim_command(p.subscribe);
      claim_command(p.unsubscribe);
      set.pushes_.push_back(LoadedPush{it->second, std::move(p.subscribe), std::move(p.unsubscribe)});
    }
    for (const auto& name : decls.replayed) {
      auto it = event_by_name.find(name);
      if (it == event_by_name.end() || set.events_[it->second].plugin != plugin_index)
        throw PluginError(where + ": replay of " + name + ", which this plugin does not declare");
      if (set.events_[it->second].notification)
        throw PluginError(where + ": replay of notification " + name + " (only requests are replayed)");
      set.events_[it->second].replay = true;
    }
    for (auto& [domain, n] : decls.replica_counts) {
      if (n == 0 || n > 64)
        throw PluginError(where + ": replicas(" + std::to_string(n) + ") for domain " + domain + ": must be 1..64");
      set.replica_counts_.emplace_back(domain, n);
    }
    for (auto& w : decls.worker_pools) {
      if (w.threads == 0 || w.threads > 1024)
        throw PluginError(where + ": worker_threads(" + std::to_string(w.threads) + ") for domain " + w.domain +
                          ": must be 1..1024");
      set.worker_pools_.push_back(std::move(w));
    }
    for (auto& w : decls.worker_process_pools) {
      if (w.processes == 0 || w.processes > 256)
        throw PluginError(where + ": worker_processes(" + std::to_string(w.processes) + ") for domain " + w.domain +
                          ": must be 1..256");
      set.worker_process_pools_.push_back(std::move(w));
    }
    for (auto& t : decls.tasks) {
      if (t.name.empty() || t.name.size() > 255 || !t.task)
        throw PluginError(where + ": a task needs a name of 1..255 bytes and a function");
      for (const auto& other : set.tasks_)
        if (other.domain == t.domain && other.name == t.name)
          throw PluginError(where + ": task " + t.name + " is registered twice in domain " + t.domain);
      set.tasks_.push_back(std::move(t));
    }
    for (const auto& sd : decls.subscribers)
      if (set.domain_index(sd.domain) < 0) set.domains_.push_back(sd.domain);
    pending_subscribers.insert(pending_subscribers.end(), std::make_move_iterator(decls.subscribers.begin()),
                               std::make_move_iterator(decls.subscribers.end()));
    for (auto& [prefix, folder] : decls.asset_mounts) {
      std::string dir = folder;
      if (dir.empty() || dir.front() != '/') {
        const auto slash = path.rfind('/');
        dir = (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/" + dir;
      }
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw PluginError(where + ": assets folder " + dir + " is not a directory");
      set.asset_mounts_.emplace_back(prefix, dir);
    }
    for (auto& m : decls.middlewares) {
      if (!m.on_request && !m.on_response) throw PluginError(where + ": middleware " + m.name + " does nothing");
      set.middlewares_.push_back(std::move(m));
    }
  }
  std::stable_sort(set.middlewares_.begin(), set.middlewares_.end(),
                   [](const MiddlewareDecl& a, const MiddlewareDecl& b) { return a.order < b.order; });
  for (auto& sd : pending_subscribers) {
    auto it = event_by_name.find(sd.event);
    if (it == event_by_name.end())
      throw PluginError("a subscriber in domain " + sd.domain + " names undeclared event " + sd.event);
    if (!sd.subscriber) throw PluginError("empty subscriber for event " + sd.event);
    set.subscribers_.push_back(LoadedSubscriber{it->second, sd.domain, std::move(sd.subscriber)});
  }
  for (const auto& t : set.tasks_)
    if (set.domain_index(t.domain) < 0)
      throw PluginError("task " + t.name + " is in domain " + t.domain +
                        ", which has no handler to run it: register tasks in a domain with handlers");
  for (const auto& e : set.events_)
    if (e.handler < 0 && !e.notification)
      throw PluginError("plugin " + set.paths_[e.plugin] + ": event " + e.name + " has no handler");
  return set;
}

}  // namespace edri::plugin
