// DirectRoutes: the manager a request goes to straight: a client's from
// its listener (docs/decisions/0027), a handler's from its manager (0028).
// No I/O: a table built once from the plugins and the managers' domains,
// the same subscriptions the managers give the router. An event goes
// straight where exactly one manager subscribes to it and that manager
// handles it, so that the router would have had no choice to make; every
// other event (replicas to balance, no manager, a replayed event) goes
// through the router.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugin/plugin_set.hpp"

namespace edri::plugin {

class DirectRoutes {
 public:
  DirectRoutes() = default;  // none: every request through the router
  // `manager_domains`: the domain of each manager, by index.
  DirectRoutes(const PluginSet& plugins, const std::vector<std::string>& manager_domains);

  // The manager (its index) that event `type` goes straight to, if it does.
  std::optional<std::uint32_t> manager_for(std::uint64_t type) const {
    const auto it = manager_of_.find(type);
    if (it == manager_of_.end()) return std::nullopt;
    return it->second;
  }
  std::size_t size() const { return manager_of_.size(); }

 private:
  std::unordered_map<std::uint64_t, std::uint32_t> manager_of_;
};

}  // namespace edri::plugin
