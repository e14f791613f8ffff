#include "plugin/direct_routes.hpp"

#include <set>

namespace edri::plugin {

namespace {

// What manager `domain` subscribes to (Manager::subscribe): its handlers'
// events and its subscribers'.
std::set<std::uint64_t> subscriptions(const PluginSet& plugins, const std::string& domain) {
  std::set<std::uint64_t> ids;
  for (const auto& e : plugins.events())
    if (e.domain == domain && e.handler >= 0) ids.insert(e.type_id);
  for (const auto& s : plugins.subscribers())
    if (s.domain == domain) ids.insert(plugins.events()[s.event].type_id);
  return ids;
}

bool handled_straight(const LoadedEvent& e, const std::string& domain) {
  return e.domain == domain && e.handler >= 0 && !e.replay;
}

}  // namespace

DirectRoutes::DirectRoutes(const PluginSet& plugins, const std::vector<std::string>& manager_domains) {
  std::unordered_map<std::uint64_t, std::uint32_t> subscribed;  // managers per event
  for (const auto& d : manager_domains)
    for (const auto id : subscriptions(plugins, d)) ++subscribed[id];
  for (std::uint32_t j = 0; j < manager_domains.size(); ++j)
    for (const auto& e : plugins.events())
      if (handled_straight(e, manager_domains[j]) && subscribed[e.type_id] == 1) manager_of_.emplace(e.type_id, j);
}

}  // namespace edri::plugin
