#include "cluster/instance_directory.hpp"

#include <algorithm>

namespace edri::cluster {

InstanceDirectory::Heard InstanceDirectory::hear(Hello hello, Clock::time_point now) {
  if (hello.id == self_) return Heard::Self;
  if (hello.bye) return instances_.erase(hello.id) ? Heard::Left : Heard::Unknown;
  if (const auto it = instances_.find(hello.id); it != instances_.end()) {
    it->second.listed = hello.listed();  // before the domains move out of it
    it->second.domains = std::move(hello.domains);
    it->second.seen = now;
    ++it->second.hellos;
    return Heard::Again;
  }
  if (instances_.size() >= kMaxInstances && !make_room()) return Heard::Full;
  auto listed = hello.listed();
  instances_.emplace(std::move(hello.id), Instance{std::move(listed), std::move(hello.domains), now, 1});
  return Heard::Joined;
}

bool InstanceDirectory::make_room() {
  // A made-up instance is heard once; a real one every second. So the one
  // heard once that was heard longest ago goes, and the instances this one
  // works with stay whatever is made up.
  auto oldest = instances_.end();
  for (auto it = instances_.begin(); it != instances_.end(); ++it)
    if (it->second.hellos == 1 && (oldest == instances_.end() || it->second.seen < oldest->second.seen)) oldest = it;
  if (oldest == instances_.end()) return false;
  instances_.erase(oldest);
  return true;
}

bool InstanceDirectory::expire(Clock::time_point now) {
  return std::erase_if(instances_, [&](const auto& kv) { return now - kv.second.seen > kGone; }) > 0;
}

bool InstanceDirectory::runs(const std::string& domain) const {
  return std::any_of(instances_.begin(), instances_.end(), [&](const auto& kv) {
    const auto& domains = kv.second.domains;
    return std::find(domains.begin(), domains.end(), domain) != domains.end();
  });
}

}  // namespace edri::cluster
