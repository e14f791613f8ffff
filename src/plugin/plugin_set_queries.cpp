// What a loaded plugin set answers: its events, domains and their
// managers, the declarations a domain's manager runs with, and the
// environment's choices among them. Loading is plugin_set.cpp's.
#include <algorithm>
#include <cstdlib>

#include "plugin/plugin_set.hpp"

namespace edri::plugin {
int PluginSet::event_index(std::string_view name) const {
  for (std::size_t i = 0; i < events_.size(); ++i)
    if (events_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> PluginSet::manager_domains(
    std::uint32_t replicas, const std::vector<std::string>& only,
    const std::vector<std::pair<std::string, std::uint32_t>>& per_domain) const {
  for (const auto& [domain, count] : per_domain)
    if (std::find(domains_.begin(), domains_.end(), domain) == domains_.end())
      throw PluginError("EDRI_DOMAIN_REPLICAS names " + domain + ", which no plugin declares");
  auto count_of = [&](const std::string& d) -> std::size_t {
    for (const auto& [domain, count] : per_domain)
      if (domain == d) return count;
    for (const auto& [domain, count] : replica_counts_)
      if (domain == d) return count;
    return replicas ? replicas : 1;
  };
  std::vector<std::string> out;
  for (const auto& d : domains_)
    if (only.empty() || std::find(only.begin(), only.end(), d) != only.end()) out.insert(out.end(), count_of(d), d);
  return out;
}

std::vector<std::string> plugin_code_paths() {
  std::vector<std::string> out;
  const char* v = std::getenv("EDRI_INTERNAL_PLUGIN_CODE");
  if (!v || !*v) return out;
  std::string all = v;
  for (std::size_t start = 0;;) {
    const auto colon = all.find(':', start);
    out.push_back(all.substr(start, colon - start));
    if (colon == std::string::npos) return out;
    start = colon + 1;
  }
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

std::vector<std::uint32_t> listener_hosted_managers(const std::vector<std::string>& manager_domains,
                                                    const std::vector<std::string>& listener_domains) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t j = 0; j < manager_domains.size(); ++j)
    if (std::find(listener_domains.begin(), listener_domains.end(), manager_domains[j]) != listener_domains.end())
      out.push_back(j);
  return out;
}

std::vector<const LifecycleDecl*> PluginSet::lifecycle(const std::string& domain) const {
  std::vector<const LifecycleDecl*> out;
  for (const auto& l : lifecycle_)
    if (l.domain == domain) out.push_back(&l);
  return out;
}

std::vector<DatabaseDecl> PluginSet::databases(const std::string& domain,
                                               const std::vector<std::pair<std::string, std::string>>& urls) const {
  std::vector<DatabaseDecl> out;
  for (const auto& d : databases_) {
    if (d.domain != domain) continue;
    if (std::any_of(out.begin(), out.end(), [&](const DatabaseDecl& o) { return o.name == d.name; })) continue;
    out.push_back(d);
    for (const auto& [name, url] : urls)
      if (name == d.name) out.back().url = url;
  }
  return out;
}

void PluginSet::check_databases(const std::vector<std::pair<std::string, std::string>>& urls) const {
  for (const auto& named : urls)
    if (std::none_of(databases_.begin(), databases_.end(),
                     [&](const DatabaseDecl& d) { return d.name == named.first; }))
      throw PluginError("EDRI_DATABASES names the database " + named.first + ", which no plugin declares");
  for (const auto& domain : domains_)
    for (const auto& d : databases(domain, urls)) {
      if (d.url.empty())
        throw PluginError("domain " + domain + " declares the database " + d.name +
                          " with no URL: name it in EDRI_DATABASES (" + d.name + "=postgresql://...)");
      if (!d.url.starts_with("postgresql://") && !d.url.starts_with("postgres://") && !d.url.starts_with("sqlite:"))
        throw PluginError("the database " + d.name + ": its URL must begin postgresql:// or sqlite:");
    }
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

}  // namespace edri::plugin
